"""The ``meta`` device's arrays: a shape and a dtype, no data.

A meta tensor's ``_data`` is an ndarray of its shape whose strides are all 0 over one read-only
element of a per-dtype sentinel buffer: NumPy's shape machinery (views, broadcasting, the
kernels run on them as stand-ins) works on it and it costs no memory. An array is meta when its
owning buffer is a sentinel. ``LIVE`` stays empty until the first meta array is made, so code
paths test one list before asking.
"""

from __future__ import annotations

import numpy as np

LIVE: list = []  # [True] once a meta array exists
ON_LIVE: list = []  # callables run when the first meta array is made (the op table's hooks)
_SENTINELS: dict = {}  # NumPy dtype -> its one-element read-only buffer
_IDS: set = set()  # id() of the sentinels


def meta_array(shape, npdt) -> np.ndarray:
    """Return a meta array of ``shape`` and NumPy dtype ``npdt`` (no memory behind it)."""
    npdt = np.dtype(npdt)
    base = _SENTINELS.get(npdt)
    if base is None:
        base = np.zeros(1, dtype=npdt)
        base.flags.writeable = False
        _SENTINELS[npdt] = base
        _IDS.add(id(base))
        if not LIVE:
            LIVE.append(True)
            for f in ON_LIVE:
                f()
    shape = tuple(int(s) for s in shape)
    return np.ndarray(shape, dtype=npdt, buffer=base, strides=(0,) * len(shape))


def is_meta(a) -> bool:
    """Return whether the ndarray ``a`` is a meta array."""
    if not LIVE or not isinstance(a, np.ndarray):
        return False
    while a.base is not None:
        a = a.base
        if not isinstance(a, np.ndarray):
            return False
    return id(a) in _IDS


def contiguous_strides(shape) -> tuple:
    """Return row-major strides, in elements, of ``shape`` (what a meta tensor reports)."""
    out, acc = [], 1
    for s in reversed(shape):
        out.append(acc)
        acc *= max(int(s), 1)
    return tuple(reversed(out))

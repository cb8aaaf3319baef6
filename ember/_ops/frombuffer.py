"""``torch.frombuffer`` (a tensor over a Python buffer's memory, no copy) and
``torch.is_storage``."""

from __future__ import annotations

import warnings

import numpy as np

from ember._core.tensor import Tensor, _wrap
from ember._ops.registry import publish

_READONLY_WARNING = (
    "The given buffer is not writable, and PyTorch does not support non-writable tensors. This "
    "means you can write to the underlying (supposedly non-writable) buffer using the tensor. "
    "You may want to copy the buffer to protect its data or make it writable before converting "
    "it to a tensor. This type of warning will be suppressed for the rest of this program."
)
_warned_readonly = [False]


def frombuffer(buffer, *, dtype=None, count: int = -1, offset: int = 0,
               requires_grad: bool = False) -> Tensor:  # fmt: skip
    """Return a 1-d tensor sharing memory with an object of the buffer protocol.

    ``count`` elements of ``dtype`` (all that follow ``offset`` bytes when -1) are read. A
    read-only buffer (``bytes``) gives a read-only tensor (torch would let you write into it).
    """

    if dtype is None:
        raise TypeError('frombuffer() missing 1 required positional arguments: "dtype"')
    try:
        view = memoryview(buffer)
    except TypeError:
        raise ValueError("object does not implement Python buffer protocol.") from None
    length, item = view.nbytes, dtype.itemsize
    if length == 0 or count == 0:
        raise ValueError(f"both buffer length ({length}) and count ({count}) must not be 0")
    if offset < 0 or offset >= length:
        raise ValueError(
            f"offset ({offset} bytes) must be non-negative and no greater than buffer length "
            f"({length} bytes) minus 1"
        )
    if count < 0:
        if (length - offset) % item:
            raise ValueError(
                f"buffer length ({length - offset} bytes) after offset ({offset} bytes) must be "
                f"a multiple of element size ({item})"
            )
        count = (length - offset) // item
    elif offset + count * item > length:
        raise ValueError(
            f"requested buffer length ({count} * {item} bytes) after offset ({offset} bytes) "
            f"must not be greater than actual buffer length ({length} bytes)"
        )
    if view.readonly and not _warned_readonly[0]:
        _warned_readonly[0] = True
        warnings.warn(_READONLY_WARNING, UserWarning, stacklevel=2)
    arr = np.frombuffer(view.cast("B"), dtype=dtype.np, count=count, offset=offset)
    t = _wrap(arr)
    return t.requires_grad_(True) if requires_grad else t


publish(None, frombuffer, method=False)


def is_storage(obj) -> bool:
    """Return True if ``obj`` is a storage (``UntypedStorage`` or ``TypedStorage``)."""
    from ember._core.storage import UntypedStorage
    from ember._ops.tensor_extras import TypedStorage

    return isinstance(obj, (UntypedStorage, TypedStorage))


publish(None, is_storage, method=False)

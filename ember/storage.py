"""``torch.storage``: the storage classes, and the function a pickled storage calls to load.

A storage pickles as ``_load_from_bytes(<its bytes in torch.save's legacy stream>)``, as in
torch, so a plain pickle of a tensor written by either loads in the other, and unpicklers that
intercept that call (to pass their own ``torch.load`` arguments) see it.
"""

from __future__ import annotations

import io

from ember._core.storage import TypedStorage, UntypedStorage

__all__ = ["TypedStorage", "UntypedStorage"]


def _load_from_bytes(b: bytes):
    """Return the object (a storage) that ``b``, a legacy ``save`` stream, holds."""
    from ember.serialization import load

    obj = load(io.BytesIO(b), weights_only=False)
    dtype = getattr(obj, "dtype", None) if isinstance(obj, UntypedStorage) else None
    return obj if dtype is None else TypedStorage._of(obj, dtype)  # (torch.FloatStorage...)


def _reduce(storage):
    from ember.serialization import save

    buf = io.BytesIO()
    save(storage, buf, _use_new_zipfile_serialization=False)
    return (_load_from_bytes, (buf.getvalue(),))


# the core's storage classes pickle through this module (the core imports nothing above it)
UntypedStorage.__reduce__ = TypedStorage.__reduce__ = _reduce

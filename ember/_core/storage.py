"""Storage: the bytes a tensor views. Derived from the NumPy array that owns the memory.

A tensor's storage is the whole owning array, its offset the distance from its start: a view's
storage is its base's, and a parameter the optimizer's fused path re-pointed at its group's flat
buffer (``ember/optim/_flat.py``) reports that buffer, with its offset in it, like torch
parameters flattened into one buffer.
"""

from __future__ import annotations

import numpy as np

from ember._core import dtype as D


def owner_of(a: np.ndarray) -> np.ndarray:
    """Return the ndarray that owns the memory ``a`` views (the end of its ``.base`` chain)."""
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a


def array_ptr(a: np.ndarray) -> int:
    """Return the address of ``a``'s first element (the one helper for it: ember compares
    and keys arrays by data pointer in views, sharing, pickling and serialization)."""
    return a.__array_interface__["data"][0]


class UntypedStorage:
    """The untyped bytes behind one or more tensors, as ``torch.UntypedStorage``."""

    __slots__ = ("_bytes",)

    def __init__(self, size: int = 0):
        self._bytes = np.zeros(size, dtype=np.uint8)

    @classmethod
    def _of(cls, owner: np.ndarray) -> UntypedStorage:
        s = object.__new__(cls)
        flat = owner.reshape(-1) if owner.flags.c_contiguous else owner.ravel(order="K")
        s._bytes = flat.view(np.uint8) if flat.size else np.zeros(0, dtype=np.uint8)
        return s

    @classmethod
    def from_file(cls, filename, shared: bool = False, nbytes: int = 0) -> UntypedStorage:
        """Return a storage of ``nbytes`` bytes backed by the memory-mapped file ``filename``.

        With ``shared=True`` changes are written to the file (which is created or grown to
        ``nbytes`` if needed); with ``shared=False`` they stay private to this storage and the
        file must hold at least ``nbytes`` bytes."""
        import os

        name = os.fspath(filename)
        mode = "r+b" if shared else "rb"
        try:
            if shared and (not os.path.exists(name) or os.path.getsize(name) < nbytes):
                with open(name, "ab") as f:
                    f.truncate(max(nbytes, f.seek(0, os.SEEK_END)))
            size = os.path.getsize(name)
            with open(name, mode):
                pass
        except OSError as e:
            how = "read-write" if shared else "read-only"
            raise RuntimeError(
                f"unable to open file <{name}> in {how} mode: {e.strerror} ({e.errno})"
            ) from None
        if size < nbytes:
            raise RuntimeError(
                f"file <{name}> size <{size}> is smaller than the required mapping size <{nbytes}>"
            )
        s = object.__new__(cls)
        if nbytes == 0:
            s._bytes = np.zeros(0, dtype=np.uint8)
        else:
            s._bytes = np.memmap(name, dtype=np.uint8, mode="r+" if shared else "c", shape=nbytes)
        return s

    def data_ptr(self) -> int:
        """Return the address of the first byte."""
        return array_ptr(self._bytes)

    def nbytes(self) -> int:
        """Return the size of the storage in bytes."""
        return self._bytes.size

    size = nbytes

    def __len__(self) -> int:
        return self._bytes.size

    def __sizeof__(self) -> int:
        # the bytes held count, as torch's storages do (sys.getsizeof: torchinfo's sizes)
        return object.__sizeof__(self) + self._bytes.size

    def element_size(self) -> int:
        """Return the size of one element in bytes (1 for an untyped storage)."""
        return 1

    @property
    def device(self):
        from ember._core.device import CPU

        return CPU

    def tolist(self) -> list:
        """Return the bytes of the storage as a list of ints."""
        return self._bytes.tolist()

    def __getitem__(self, i):
        return int(self._bytes[i]) if isinstance(i, int) else self._bytes[i].tolist()

    def untyped(self) -> UntypedStorage:
        """Return this storage (it is already untyped)."""
        return self

    def __setitem__(self, i, value) -> None:
        self._bytes[i] = value

    def __repr__(self) -> str:
        body = "\n".join(f" {v}" for v in self._bytes[:20].tolist())
        more = "\n ..." if self._bytes.size > 20 else ""
        return f"{body}{more}\n[torch.storage.UntypedStorage(device=cpu) of size {self.nbytes()}]"


class TypedStorage:
    """The elements of ``dtype`` behind a tensor, as torch's (deprecated) ``TypedStorage``:
    a typed window onto the same memory as :meth:`Tensor.untyped_storage`."""

    __slots__ = ("_untyped", "_values", "dtype")

    def __init__(self, tensor):
        self._untyped = tensor.untyped_storage()
        self.dtype = tensor.dtype
        self._values = self._untyped._bytes.view(np.dtype(tensor.dtype.np))

    @classmethod
    def _of(cls, untyped, dtype) -> TypedStorage:
        s = object.__new__(cls)
        s._untyped, s.dtype = untyped, dtype
        s._values = untyped._bytes.view(np.dtype(dtype.np))
        return s

    def size(self) -> int:
        """Return the number of elements."""
        return self._values.size

    __len__ = size

    def element_size(self) -> int:
        """Return the size of one element in bytes."""
        return self._values.itemsize

    def nbytes(self) -> int:
        """Return the size of the storage in bytes."""
        return self._values.nbytes

    def data_ptr(self) -> int:
        """Return the address of the first element."""
        return self._untyped.data_ptr()

    @property
    def device(self):
        return self._untyped.device

    def untyped(self):
        """Return the underlying untyped storage."""
        return self._untyped

    def tolist(self) -> list:
        """Return the elements as a list of Python numbers."""
        return self._values.tolist()

    def is_shared(self) -> bool:
        """Return False: this storage object is not in shared memory."""
        return False

    def is_pinned(self, device=None) -> bool:
        """Return False: ember memory is ordinary (pageable) host memory."""
        return False

    def type(self) -> str:
        """Return the legacy storage class name (``torch.FloatStorage``...)."""
        return f"torch.{D.scalar_type_name(self.dtype)}Storage"

    def __getitem__(self, i):
        if isinstance(i, slice):
            raise RuntimeError("slices are only supported in UntypedStorage.__getitem__")
        return self._values[i].tolist()

    def __setitem__(self, i, value) -> None:
        self._values[i] = value

    def __iter__(self):
        return iter(self.tolist())

    def __repr__(self) -> str:
        tail = f"[torch.storage.TypedStorage(dtype={self.dtype}, device=cpu) of size {len(self)}]"
        return " " + "\n ".join(str(v) for v in self.tolist()) + "\n" + tail

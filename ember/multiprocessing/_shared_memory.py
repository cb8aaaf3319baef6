"""Shared-memory buffers: what ``Tensor.share_memory_()`` moves a tensor's storage into.

A shared buffer is an ``mmap`` of an anonymous in-memory file (``memfd_create`` on Linux; an
already-unlinked file in ``/dev/shm`` or the temp dir elsewhere) that keeps its file descriptor,
so the tensor reductions can send the descriptor to another process
(``multiprocessing.reduction.DupFd``), which maps the same bytes. The memory is freed when the
last mapping and descriptor of it are gone, in every process: there is no name that a killed
process could leak (torch's "file_descriptor" sharing strategy).

A shared storage is a ``uint8`` array (the *owner*, the end of the tensor's ``.base`` chain)
whose ``.base`` is a :class:`SharedBuffer`. This module imports only NumPy and the standard
library: ``ember._core.tensor`` calls it lazily.
"""

from __future__ import annotations

import mmap
import os
import tempfile
import threading
import weakref

import numpy as np

from ember._core.storage import array_ptr as _ptr
from ember._core.tensor import ABOVE as _TENSOR_ABOVE

__all__ = [
    "SharedBuffer",
    "attach",
    "fd_id",
    "is_shared_array",
    "new_shared",
    "new_shared_array",
    "share_array",
    "share_views",
]


class SharedBuffer(mmap.mmap):
    """A shared mapping of an in-memory file; ``fd`` is the file's descriptor (closed with it)."""

    fd = -1

    def __del__(self, _close=os.close):
        fd, self.fd = self.fd, -1
        if fd >= 0:
            _close(fd)


def _owner_of(a: np.ndarray) -> np.ndarray:
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a


def _new_fd(nbytes: int) -> int:
    if hasattr(os, "memfd_create"):
        fd = os.memfd_create("ember-shm", os.MFD_CLOEXEC)
    else:  # pragma: no cover - not Linux
        where = "/dev/shm" if os.path.isdir("/dev/shm") else None
        fd, path = tempfile.mkstemp(prefix="ember-shm-", dir=where)
        os.unlink(path)
    try:
        os.ftruncate(fd, max(nbytes, 1))  # mmap refuses empty files
    except BaseException:
        os.close(fd)
        raise
    return fd


def attach(fd: int, nbytes: int) -> np.ndarray:
    """Return a ``uint8`` array of ``nbytes`` mapping the shared file ``fd`` (which it keeps)."""
    try:
        buf = SharedBuffer(fd, max(nbytes, 1))
    except BaseException:
        os.close(fd)
        raise
    buf.fd = fd
    return np.ndarray((nbytes,), np.uint8, buf)


def new_shared(nbytes: int) -> np.ndarray:
    """Return a fresh zero-filled shared ``uint8`` array of ``nbytes``."""
    return attach(_new_fd(nbytes), nbytes)


def new_shared_array(shape: tuple, dtype: np.dtype) -> np.ndarray:
    """Return an uninitialized C-contiguous ``shape``/``dtype`` array in a fresh shared buffer."""
    dtype = np.dtype(dtype)
    n = dtype.itemsize
    for s in shape:
        n *= s
    if not n:
        return np.ndarray(shape, dtype, new_shared(0), 0)
    return new_shared(n).view(dtype).reshape(shape)


def is_shared_array(a: np.ndarray) -> bool:
    """Return True if ``a`` views a shared buffer."""
    return type(_owner_of(a).base) is SharedBuffer


# id(old owner) -> (weakref to it, weakref to the shared copy it was moved to)
_moved: dict[int, tuple[weakref.ref, weakref.ref]] = {}


def _forget(key: int) -> None:
    _moved.pop(key, None)


def share_array(a: np.ndarray) -> np.ndarray:
    """Return ``a`` if it views shared memory, else the same view (shape, strides, dtype and byte
    offset in its storage) of a shared copy of its whole storage.

    A storage is copied once: while the shared copy lives, any other view of the old storage
    that is shared later re-attaches to that copy (views taken before the move read the old
    memory until then)."""
    owner = _owner_of(a)
    if type(owner.base) is SharedBuffer:
        return a
    if owner.flags.c_contiguous or owner.flags.f_contiguous:
        offset = _ptr(a) - _ptr(owner)
        moved = _moved.get(id(owner))
        if moved is not None and moved[0]() is owner:
            shm = moved[1]()
            if shm is not None:
                return np.ndarray(a.shape, a.dtype, shm, offset, a.strides)
        flat = owner.reshape(-1) if owner.flags.c_contiguous else owner.ravel(order="K")
        shm = new_shared(owner.nbytes)
        if owner.nbytes:
            np.copyto(shm, flat.view(np.uint8))
        key = id(owner)
        _moved[key] = (weakref.ref(owner, lambda _, key=key: _forget(key)), weakref.ref(shm))
        return np.ndarray(a.shape, a.dtype, shm, offset, a.strides)
    # an owner NumPy cannot hand out as one buffer (as_strided output): copy this view alone
    out = new_shared_array(a.shape, a.dtype)
    np.copyto(out, a)
    return out


def share_views(arrays: list) -> list:
    """Return ``arrays`` (a tensor's array and its bases') moved to shared memory: those viewing
    the storage of ``arrays[0]`` are re-made as the same views of one shared copy of it, so they
    keep aliasing each other; the others are returned unchanged."""
    first = arrays[0]
    owner = _owner_of(first)
    new = share_array(first)
    if new is first:
        return list(arrays)
    new_owner = _owner_of(new)
    if new_owner.nbytes != owner.nbytes:  # the fallback copied the view alone
        return [new] + list(arrays[1:])
    out = [new]
    for a in arrays[1:]:
        if _owner_of(a) is owner:
            a = np.ndarray(a.shape, a.dtype, new_owner, _ptr(a) - _ptr(owner), a.strides)
        out.append(a)
    return out


def fd_id(fd: int) -> tuple[int, int]:
    """Return a key naming the shared file behind ``fd`` in any process (inode, device)."""
    st = os.fstat(fd)
    return (st.st_ino, st.st_dev)


class _SharedCache:
    """Shared file key -> this process's owner array of it (weakly held), so one storage sent
    twice (two views of it, or a round trip) maps to one owner and its views alias again."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._refs: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
        if hasattr(os, "register_at_fork"):  # a lock held by another thread at fork stays held
            os.register_at_fork(after_in_child=self._after_fork)

    def _after_fork(self) -> None:
        self._lock = threading.Lock()

    def get(self, key):
        with self._lock:
            return self._refs.get(key)

    def put(self, key, owner: np.ndarray) -> None:
        with self._lock:
            self._refs[key] = owner


shared_cache = _SharedCache()


# Tensor.share_memory_ / is_shared (the core imports nothing above it)
_TENSOR_ABOVE.share_views, _TENSOR_ABOVE.is_shared_array = share_views, is_shared_array

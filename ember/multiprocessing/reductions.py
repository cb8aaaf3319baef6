"""Pickling tensors between processes through shared memory, as ``torch.multiprocessing``.

:func:`init_reductions` registers :func:`reduce_tensor` with ``multiprocessing``'s
``ForkingPickler``, the pickler behind ``Queue``, ``Pipe`` and process arguments. A tensor sent
that way is first moved to shared memory (``Tensor.share_memory_()``, a no-op when it already
is there); what travels is a duplicate of its shared file's descriptor and the view's metadata,
never the data. The receiver maps the same bytes, so writes on either side are seen by the
other. Plain ``pickle`` (``ember.save``, ``copy``) still copies the data.

The descriptor goes through ``multiprocessing``'s ``DupFd`` (the receiver fetches it from the
sender's ``resource_sharer`` thread), or, for a sender and receiver that made a channel with
:func:`fd_channel` (each DataLoader worker and the main process), over that channel's socket.
"""

from __future__ import annotations

import os
import socket
import struct
import threading
from multiprocessing import reduction

import numpy as np

from ember._core.storage import array_ptr as _ptr
from ember._core.tensor import Tensor, _rebuild
from ember.multiprocessing._shared_memory import attach, fd_id, shared_cache

__all__ = ["FdReceiver", "FdSender", "init_reductions", "rebuild_tensor", "reduce_tensor"]

_NON_LEAF_ERROR = (
    "Cowardly refusing to serialize non-leaf tensor which requires_grad, since autograd does "
    "not support crossing process boundaries.  If you just want to transfer the data, call "
    "detach() on the tensor before serializing (e.g., putting it on the queue)."
)


def _owner_of(a: np.ndarray) -> np.ndarray:
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a


def reduce_tensor(tensor: Tensor):
    """Return the ``(rebuild, args)`` pair that sends ``tensor`` through shared memory."""
    if tensor._requires_grad and tensor.grad_fn is not None:
        raise RuntimeError(_NON_LEAF_ERROR)
    tensor.share_memory_()
    a = tensor._data
    owner = _owner_of(a)
    buf = owner.base
    shared_cache.put(fd_id(buf.fd), owner)  # a round trip comes back to this very storage
    meta = (_ptr(a) - _ptr(owner), a.shape, a.strides, a.dtype, tensor._requires_grad)
    collector = getattr(_local, "collector", None)
    handle = reduction.DupFd(buf.fd) if collector is None else collector.add(buf.fd)
    return (rebuild_tensor, (type(tensor), handle, owner.nbytes, meta))


def rebuild_tensor(cls, df, nbytes: int, meta) -> Tensor:
    """Return the tensor that :func:`reduce_tensor` sent: a view of the shared file ``df``."""
    offset, shape, strides, dtype, requires_grad = meta
    fd = df.detach()
    key = fd_id(fd)
    owner = shared_cache.get(key)
    if owner is None:
        owner = attach(fd, nbytes)
        shared_cache.put(key, owner)
    else:  # already mapped here: views of one storage stay views of one storage
        os.close(fd)
    return _rebuild(np.ndarray(shape, dtype, owner, offset, strides), requires_grad, cls)


# ------------------------------------------------------------------------------ fd channels
# ``DupFd`` hands a descriptor over through the sender's ``resource_sharer`` thread: an
# authenticated connection per tensor, served by a thread that must win the sender's GIL (a
# DataLoader worker busy in Python code holds it for up to the switch interval, several times
# per handshake). A channel instead sends all the descriptors of one message at once over a
# socket pair made for one sender and one receiver, before the message itself is queued, so the
# receiver finds them waiting.

_local = threading.local()
_receivers: dict[str, FdReceiver] = {}
_MAX_FDS = 250  # below the kernel's SCM_MAX_FD (253) per message


class _ChannelFd:
    """Stands for descriptor ``index`` of message ``seq`` on channel ``key`` (``DupFd``'s
    interface: ``detach()`` returns a descriptor the caller owns)."""

    __slots__ = ("key", "seq", "index")

    def __init__(self, key: str, seq: int, index: int) -> None:
        self.key, self.seq, self.index = key, seq, index

    def __reduce__(self):
        return (_ChannelFd, (self.key, self.seq, self.index))

    def detach(self) -> int:
        receiver = _receivers.get(self.key)
        if receiver is None:
            raise RuntimeError(f"no descriptor channel {self.key!r} in this process")
        return receiver.take(self.seq, self.index)


class _Collector:
    def __init__(self, key: str, seq: int) -> None:
        self.key, self.seq = key, seq
        self.fds: list[int] = []
        self.handles: dict[int, _ChannelFd] = {}

    def add(self, fd: int) -> _ChannelFd:
        h = self.handles.get(fd)
        if h is None:
            h = self.handles[fd] = _ChannelFd(self.key, self.seq, len(self.fds))
            self.fds.append(fd)
        return h


def fd_channel(key: str) -> tuple[FdSender, FdReceiver] | None:
    """Return a connected (sender, receiver) pair named ``key``, or None where descriptors
    cannot be passed that way (then ``DupFd`` is used). Give the sender to the other process;
    the receiver is registered in this one until ``close()``."""
    if not hasattr(socket, "send_fds") or not hasattr(socket, "SOCK_SEQPACKET"):
        return None
    try:
        a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    except OSError:
        return None
    receiver = FdReceiver(a, key)
    _receivers[key] = receiver
    return FdSender(b, key), receiver


class FdSender:
    """The sending end of a descriptor channel (see :func:`fd_channel`)."""

    def __init__(self, sock: socket.socket, key: str) -> None:
        self.sock, self.key, self.seq = sock, key, 0

    def dumps(self, obj) -> bytes:
        """Pickle ``obj`` with ``ForkingPickler``, sending its tensors' descriptors through the
        channel now (the payload must reach the receiver after this call returns)."""
        self.seq += 1
        collector = _Collector(self.key, self.seq)
        _local.collector = collector
        try:
            payload = bytes(reduction.ForkingPickler.dumps(obj))
        finally:
            _local.collector = None
        if collector.fds:
            if len(collector.fds) > _MAX_FDS:  # too many for one message: the slow path
                return bytes(reduction.ForkingPickler.dumps(obj))
            socket.send_fds(self.sock, [struct.pack("<Q", self.seq)], collector.fds)
        return payload

    def close(self) -> None:
        self.sock.close()

    def __reduce__(self):  # to a spawned process: the socket travels as a descriptor
        return (FdSender, (self.sock, self.key))


class FdReceiver:
    """The receiving end of a descriptor channel, registered under its key in this process."""

    def __init__(self, sock: socket.socket, key: str) -> None:
        self.sock, self.key, self.seq = sock, key, 0
        self.fds: list[int] = []

    def take(self, seq: int, index: int) -> int:
        """Return a new descriptor for descriptor ``index`` of message ``seq``."""
        while self.seq < seq:
            self._drop()
            msg, fds, _, _ = socket.recv_fds(self.sock, 8, _MAX_FDS)
            if len(msg) != 8:
                for fd in fds:
                    os.close(fd)
                raise RuntimeError("descriptor channel closed by the sender")
            (self.seq,) = struct.unpack("<Q", msg)
            self.fds = fds
        if self.seq != seq or index >= len(self.fds):
            raise RuntimeError(f"descriptor channel out of step (message {seq}, at {self.seq})")
        # a copy: one storage may be rebuilt twice from the same message
        return os.dup(self.fds[index])

    def _drop(self) -> None:
        fds, self.fds = self.fds, []
        for fd in fds:
            os.close(fd)

    def close(self) -> None:
        """Close the channel and forget it."""
        _receivers.pop(self.key, None)
        self._drop()
        self.sock.close()


def _tensor_classes():
    todo, seen = [Tensor], []
    while todo:
        cls = todo.pop()
        if cls not in seen:
            seen.append(cls)
            todo.extend(cls.__subclasses__())
    return seen


def init_reductions() -> None:
    """Register :func:`reduce_tensor` for ``Tensor`` and its subclasses defined so far (the
    pickler matches exact types; later subclasses are registered on the next call)."""
    for cls in _tensor_classes():
        if reduction.ForkingPickler._extra_reducers.get(cls) is not reduce_tensor:
            reduction.register(cls, reduce_tensor)

"""The collectives and point-to-point operations of ``torch.distributed`` on ember tensors.

Every function checks its arguments as torch does, takes the group's next sequence number (the
key its messages travel under) and runs now, or on the background thread with
``async_op=True`` (returning a :class:`Work`). Reductions run on the group's first rank in rank
order, which then sends the result to the others, so every rank gets the same bits. Results are
written into the given tensors' arrays in place; as with torch's c10d, their version counters
do not change.
"""

from __future__ import annotations

import pickle
from concurrent.futures import Future
from datetime import timedelta

import numpy as np

from ember._core.dtype import scalar_type_name
from ember._core.tensor import Tensor, _wrap
from ember.distributed import _mpi
from ember.distributed.distributed_c10d import (
    GroupMember,
    ProcessGroup,
    ReduceOp,
    Work,
    _done,
    _group_or_default,
)

__all__ = [
    "P2POp",
    "all_gather",
    "all_gather_into_tensor",
    "all_gather_object",
    "all_gather_single",
    "all_reduce",
    "all_reduce_coalesced",
    "all_to_all",
    "all_to_all_single",
    "barrier",
    "batch_isend_irecv",
    "broadcast",
    "broadcast_object_list",
    "gather",
    "gather_object",
    "irecv",
    "isend",
    "monitored_barrier",
    "recv",
    "recv_object_list",
    "reduce",
    "reduce_scatter",
    "reduce_scatter_single",
    "reduce_scatter_tensor",
    "scatter",
    "scatter_object_list",
    "send",
    "send_object_list",
]

_UFUNC = {
    ReduceOp.SUM: np.add,
    ReduceOp.AVG: np.add,
    ReduceOp.PRODUCT: np.multiply,
    ReduceOp.MIN: np.minimum,
    ReduceOp.MAX: np.maximum,
    ReduceOp.BAND: np.bitwise_and,
    ReduceOp.BOR: np.bitwise_or,
    ReduceOp.BXOR: np.bitwise_xor,
}


# ------------------------------------------------------------------------------ checks
def _expect_tensors(**named) -> None:
    """Raise torch's TypeError for the first keyword argument that is not a Tensor (the
    keyword is the parameter's name in the message)."""
    for name, value in named.items():
        if not isinstance(value, Tensor):
            raise TypeError(
                f"Invalid function argument. Expected parameter `{name}` of type torch.Tensor\n"
                f"             but got {type(value)} instead."
            )


def _expect_tensor_lists(**named) -> None:
    """As :func:`_expect_tensors`, for arguments that must be lists of Tensors."""
    for name, value in named.items():
        expected = f"Invalid function argument. Expected parameter `{name}` of type "
        if not isinstance(value, list):
            raise TypeError(
                f"{expected}List[torch.Tensor]\n             but got {type(value)} instead."
            )
        kinds = [type(item) for item in value]
        if any(not issubclass(kind, Tensor) for kind in kinds):
            raise TypeError(
                f"{expected}List[torch.Tensor]\n             but got {type(value)} with "
                f"elements of type {kinds}."
            )


def _check_op(op, dtype) -> None:
    if op not in _UFUNC:
        raise TypeError(f"ember's gloo backend does not support ReduceOp.{op.name}")
    kind = "f" if dtype.is_floating_point else dtype.np.kind
    if op in (ReduceOp.BAND, ReduceOp.BOR, ReduceOp.BXOR) and kind not in "biu":
        raise RuntimeError(f"Cannot use ReduceOp.{op.name} with non-integral dtype")
    if op is ReduceOp.AVG and kind in "biu":
        raise RuntimeError(
            f"result type Float can't be cast to the desired output type {scalar_type_name(dtype)}"
        )


def _sizes(shape) -> str:
    return "(" + ", ".join(str(s) for s in shape) + ")"


def _group(group) -> ProcessGroup | None:
    """Return the group to run on (None for a process outside ``group``: nothing to do)."""
    if group is GroupMember.NON_GROUP_MEMBER:
        return None
    return _group_or_default(group)


def _group_rank(pg: ProcessGroup, rank, group_rank, what: str, required: bool = False) -> int:
    """Return the group rank meant by a global ``rank`` or a ``group_rank`` argument (rank 0
    when neither is given, unless ``required``)."""
    if rank is not None and group_rank is not None:
        raise ValueError("Can't specify both group_rank and global_rank")
    if group_rank is not None:
        r = group_rank
    elif rank is None:
        if required:
            raise ValueError("Must specify global_rank or group_rank")
        r = 0
    elif rank in pg._ranks:
        r = pg._ranks.index(rank)
    else:
        raise ValueError(
            f"Global rank {rank} is not part of group {pg}" if rank >= 0 else f"Invalid {what}"
        )
    if not 0 <= r < pg.size():
        raise ValueError(f"Group rank {r} is not part of group {pg}")
    return r


# ---------------------------------------------------------------------- array transfer
def _bytes(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).reshape(-1).view(np.uint8)


def _send(pg: ProcessGroup, group_rank: int, key, a: np.ndarray) -> None:
    pg._mesh.send(pg._ranks[group_rank], key, _bytes(a))


def _recv(pg: ProcessGroup, group_rank: int, key, like: np.ndarray, timeout=None) -> np.ndarray:
    """Return the array ``group_rank`` sent under ``key``, shaped and typed as ``like``."""
    _, payload = pg._mesh.recv((pg._ranks[group_rank],), key, timeout or pg._timeout)
    if len(payload) != like.nbytes:
        raise RuntimeError(
            f"rank {pg._ranks[group_rank]} sent {len(payload)} bytes where {like.nbytes} were "
            "expected: the tensors' shapes or dtypes differ between ranks"
        )
    return np.frombuffer(payload, like.dtype).reshape(like.shape)


def _write(t: Tensor, a: np.ndarray) -> None:
    t._data[...] = a


def _reduce_arrays(arrays: list, op, n: int) -> np.ndarray:
    f = _UFUNC[op]
    out = np.array(arrays[0], copy=True)
    for a in arrays[1:]:
        f(out, a, out=out)
    if op is ReduceOp.AVG:
        np.divide(out, n, out=out, casting="unsafe")
    return out


def _reduce_at(pg: ProcessGroup, key, root: int, a: np.ndarray, op) -> np.ndarray | None:
    """Reduce every rank's ``a`` on group rank ``root``; return the result there, else None."""
    if pg.rank() != root:
        _send(pg, root, key, a)
        return None
    arrays = [a if r == root else _recv(pg, r, key, a) for r in range(pg.size())]
    return _reduce_arrays(arrays, op, pg.size())


_RING_BYTES = 256 * 1024  # all-reduce at least this large goes round the ring


def _ring_all_reduce(pg: ProcessGroup, key, flat: np.ndarray, op) -> None:
    """All-reduce the contiguous 1-d ``flat`` in place round the ring of the group's ranks:
    ``n - 1`` steps of reduce-scatter (each rank ends with one reduced chunk), then ``n - 1``
    of all-gather, every rank sending to its right neighbour and receiving (straight into a
    preallocated buffer) from its left. Each link carries ``2 (n - 1) / n`` of the array."""
    n, me = pg.size(), pg.rank()
    mesh, right, left = pg._mesh, (me + 1) % n, pg._ranks[(me - 1) % n]
    cuts = [flat.size * i // n for i in range(n + 1)]
    chunks = [flat[cuts[i] : cuts[i + 1]] for i in range(n)]
    scratch = np.empty(max(c.size for c in chunks), flat.dtype)
    f = _UFUNC[op]
    for step in range(n - 1):
        _send(pg, right, key, chunks[(me - step) % n])
        into = chunks[(me - step - 1) % n]
        got = scratch[: into.size]
        mesh.recv_into(left, key, got.view(np.uint8), pg._timeout)
        f(into, got, out=into)
    for step in range(n - 1):
        _send(pg, right, key, chunks[(me + 1 - step) % n])
        mesh.recv_into(left, key, chunks[(me - step) % n].view(np.uint8), pg._timeout)


def _all_reduce_array(pg: ProcessGroup, key, t: Tensor, op) -> None:
    """All-reduce ``t``'s array in place: round the ring when large, else through rank 0."""
    a = t._data
    if a.nbytes >= _RING_BYTES and a.size >= pg.size() and a.flags.c_contiguous:
        flat = a.reshape(-1)
        _ring_all_reduce(pg, key, flat, op)
        if op is ReduceOp.AVG:
            np.divide(flat, pg.size(), out=flat, casting="unsafe")
        return
    out = _reduce_at(pg, key, 0, a, op)
    if out is None:
        _write(t, _recv(pg, 0, key, a))
    else:
        for r in range(1, pg.size()):
            _send(pg, r, key, out)
        _write(t, out)


def _run(pg: ProcessGroup, fn, async_op: bool, result: list | None = None):
    return pg._run(lambda key: (fn(key), result)[1], async_op)


# ---------------------------------------------------------------------------- collectives
def all_reduce(tensor: Tensor, op=ReduceOp.SUM, group=None, async_op: bool = False):
    """Reduce ``tensor`` across all ranks with ``op``; every rank gets the result in place."""
    _expect_tensors(tensor=tensor)
    pg = _group(group)
    if pg is None:
        return None
    _check_op(op, tensor.dtype)
    if pg._comm is not None:
        return _mpi.all_reduce(pg, tensor, op, async_op)

    def run(key):
        if op is ReduceOp.AVG:
            tensor._vc[0] += 1  # torch divides in place after the sum
        if pg.size() > 1:
            _all_reduce_array(pg, key, tensor, op)

    return _run(pg, run, async_op, [tensor])


def all_reduce_coalesced(tensors: list, op=ReduceOp.SUM, group=None, async_op: bool = False):
    """Reduce every tensor of ``tensors`` across all ranks with ``op``, in place."""
    _expect_tensor_lists(tensor=tensors)
    for t in tensors[1:]:
        if t.dtype != tensors[0].dtype:
            raise ValueError(
                "Invalid usage of tensors with different dtypesFound "
                f"{tensors[0].dtype} and  {t.dtype}"
            )
    pg = _group(group)
    if pg is None:
        return None
    for t in tensors:
        _check_op(op, t.dtype)
    if pg._comm is not None:
        works = [_mpi.all_reduce(pg, t, op, async_op) for t in tensors]
        return (
            None
            if not async_op
            else Work(
                _done(list(tensors)),
                lambda: [w.wait() for w in works] and 0,
                lambda: all(w.is_completed() for w in works),
                list(tensors),
            )
        )

    def run(key):
        for i, t in enumerate(tensors):
            if op is ReduceOp.AVG:
                t._vc[0] += 1
            if pg.size() == 1:
                continue
            _all_reduce_array(pg, key[:3] + (i,), t, op)

    return _run(pg, run, async_op, list(tensors))


def broadcast(
    tensor: Tensor, src: int | None = None, group=None, async_op: bool = False, group_src=None
):
    """Copy ``tensor`` of rank ``src`` into ``tensor`` on every other rank."""
    pg = _group(group)  # torch looks the group up first here
    _expect_tensors(tensor=tensor)
    if pg is None:
        return None
    if src is not None and group_src is None and src not in pg._ranks:
        raise RuntimeError(f"ProcessGroupGloo::broadcast: invalid root rank: {src}")
    root = _group_rank(pg, src, group_src, "src", required=True)
    if pg._comm is not None:
        return _mpi.broadcast(pg, tensor, root, async_op)

    def run(key):
        if pg.rank() == root:
            for r in range(pg.size()):
                if r != root:
                    _send(pg, r, key, tensor._data)
        else:
            _write(tensor, _recv(pg, root, key, tensor._data))

    return _run(pg, run, async_op, [tensor])


def reduce(
    tensor: Tensor,
    dst: int | None = None,
    op=ReduceOp.SUM,
    group=None,
    async_op: bool = False,
    group_dst=None,
):
    """Reduce ``tensor`` across all ranks with ``op`` into ``tensor`` of rank ``dst``."""
    pg = _group(group)  # torch looks the group up first here
    _expect_tensors(tensor=tensor)
    if pg is None:
        return None
    _check_op(op, tensor.dtype)
    root = _group_rank(pg, dst, group_dst, "dst", required=True)
    if pg._comm is not None:
        return _mpi.reduce(pg, tensor, root, op, async_op)

    def run(key):
        out = _reduce_at(pg, key, root, tensor._data, op)
        if out is not None:
            _write(tensor, out)

    return _run(pg, run, async_op, [tensor])


def _check_gathered(name: str, outs: list, like: Tensor, n: int) -> None:
    if len(outs) != n:
        raise RuntimeError(
            f"ProcessGroupGloo::{name}: invalid output tensor list at index 0 (expected length "
            f"{n}, got {len(outs)})"
        )
    for i, o in enumerate(outs):
        if o.shape != like.shape:
            raise RuntimeError(
                f"ProcessGroupGloo::{name}: invalid tensor size at index {i} (expected "
                f"{_sizes(like.shape)}, got {_sizes(o.shape)})"
            )
        if o.dtype != like.dtype:
            raise RuntimeError(
                f"ProcessGroupGloo::{name}: invalid tensor type at index {i} (expected "
                f"{scalar_type_name(like.dtype)}, got {scalar_type_name(o.dtype)})"
            )


def _exchange(pg: ProcessGroup, key, a: np.ndarray) -> list:
    """Return every rank's ``a`` (same shape and dtype on every rank), in group-rank order."""
    me = pg.rank()
    for r in range(pg.size()):
        if r != me:
            _send(pg, r, key, a)
    return [a if r == me else _recv(pg, r, key, a) for r in range(pg.size())]


def all_gather(tensor_list: list, tensor: Tensor, group=None, async_op: bool = False):
    """Gather ``tensor`` of every rank into ``tensor_list`` (one per rank) on every rank."""
    _expect_tensor_lists(tensor_list=tensor_list)
    _expect_tensors(tensor=tensor)
    pg = _group(group)
    if pg is None:
        return None
    _check_gathered("allgather", tensor_list, tensor, pg.size())
    if pg._comm is not None:
        recv, _ = _mpi.gathered(None, pg.size(), tensor._data)

        def finish():
            for out, part in zip(tensor_list, recv, strict=True):
                _mpi._put(out, part)

        return _mpi.all_gather_into(pg, recv, tensor._data, finish, async_op, tensor_list)

    def run(key):
        for out, a in zip(tensor_list, _exchange(pg, key, tensor._data), strict=True):
            _write(out, a)

    return _run(pg, run, async_op, tensor_list)


def _same_sizes(name: str, sizes: list[int]) -> None:
    """Raise on every rank when the ranks passed inputs of different sizes (MPI's collective
    would otherwise fail on one rank and leave garbage in another's output)."""
    if len(set(sizes)) > 1:
        each = ", ".join(f"rank {r}: {s}" for r, s in enumerate(sizes))
        raise RuntimeError(
            f"{name}: the ranks passed input tensors of different sizes ({each} elements); "
            "every rank must pass the same size. Is there a distributed collective mismatch "
            "in your code?"
        )


def all_gather_into_tensor(
    output_tensor: Tensor, input_tensor: Tensor, group=None, async_op: bool = False
):
    """Gather ``input_tensor`` of every rank into ``output_tensor``, concatenated along dim 0
    (or stacked, when ``output_tensor`` has one more dimension)."""
    _expect_tensors(input_tensor=input_tensor, output_tensor=output_tensor)
    pg = _group(group)
    if pg is None:
        return None
    n = pg.size()
    if output_tensor.numel() != n * input_tensor.numel():
        raise ValueError("Output tensor size must be equal to world_size times input tensor size")
    if output_tensor.dtype != input_tensor.dtype:
        raise ValueError("output tensor must have the same type as input tensor")
    if pg._comm is not None:
        _same_sizes("all_gather_into_tensor", _mpi.all_sizes(pg, input_tensor.numel()))
        recv, copy = _mpi.gathered(output_tensor, n, input_tensor._data)

        def finish():
            if copy:
                _mpi._put(output_tensor, recv.reshape(output_tensor.shape))

        return _mpi.all_gather_into(pg, recv, input_tensor._data, finish, async_op, [output_tensor])

    def run(key):
        parts = _exchange(pg, key, input_tensor._data)  # (raises when the sizes differ)
        output_tensor._data[...] = np.stack(parts).reshape(output_tensor.shape)

    return _run(pg, run, async_op, [output_tensor])


all_gather_single = all_gather_into_tensor


def gather(
    tensor: Tensor,
    gather_list: list | None = None,
    dst: int | None = None,
    group=None,
    async_op: bool = False,
    group_dst=None,
):
    """Gather ``tensor`` of every rank into ``gather_list`` of rank ``dst``."""
    _expect_tensors(tensor=tensor)
    if gather_list is not None:
        _expect_tensor_lists(gather_list=gather_list)
    pg = _group(group)
    if pg is None:
        return None
    root = _group_rank(pg, dst, group_dst, "dst")
    if pg.rank() == root:
        if not gather_list:
            raise ValueError("Argument ``gather_list`` must be specified on destination rank.")
        _check_gathered("gather", gather_list, tensor, pg.size())
    elif gather_list:
        raise ValueError("Argument ``gather_list`` must NOT be specified on non-destination ranks.")
    if pg._comm is not None:
        return _mpi.gather(pg, tensor, gather_list, root, async_op)

    def run(key):
        if pg.rank() != root:
            _send(pg, root, key, tensor._data)
            return
        for r, out in enumerate(gather_list):
            _write(out, tensor._data if r == root else _recv(pg, r, key, tensor._data))

    return _run(pg, run, async_op, gather_list or [])


def scatter(
    tensor: Tensor,
    scatter_list: list | None = None,
    src: int | None = None,
    group=None,
    async_op: bool = False,
    group_src=None,
):
    """Send ``scatter_list[i]`` of rank ``src`` into ``tensor`` of rank ``i``."""
    _expect_tensors(tensor=tensor)
    if scatter_list is not None:
        _expect_tensor_lists(scatter_list=scatter_list)
    pg = _group(group)
    if pg is None:
        return None
    root = _group_rank(pg, src, group_src, "src")
    if pg.rank() == root:
        if not scatter_list:
            raise ValueError("Argument ``scatter_list`` must be specified on source rank.")
        _check_gathered("scatter", scatter_list, tensor, pg.size())
    elif scatter_list:
        raise ValueError("Argument ``scatter_list`` must NOT be specified on non-source ranks.")
    if pg._comm is not None:
        return _mpi.scatter(pg, tensor, scatter_list, root, async_op)

    def run(key):
        if pg.rank() == root:
            for r, t in enumerate(scatter_list):
                if r != root:
                    _send(pg, r, key, t._data)
            _write(tensor, scatter_list[root]._data)
        else:
            _write(tensor, _recv(pg, root, key, tensor._data))

    return _run(pg, run, async_op, [tensor])


def _reduce_scatter_arrays(pg: ProcessGroup, key, parts: list, like: np.ndarray, op):
    me = pg.rank()
    for r, a in enumerate(parts):
        if r != me:
            _send(pg, r, key, a)
    arrays = [parts[me] if r == me else _recv(pg, r, key, like) for r in range(pg.size())]
    return _reduce_arrays(arrays, op, pg.size())


def reduce_scatter(
    output: Tensor, input_list: list, op=ReduceOp.SUM, group=None, async_op: bool = False
):
    """Reduce ``input_list[i]`` of every rank with ``op`` into ``output`` of rank ``i``."""
    _expect_tensors(output=output)
    _expect_tensor_lists(input_list=input_list)
    pg = _group(group)
    if pg is None:
        return None
    _check_op(op, output.dtype)
    _check_gathered("reduce_scatter", input_list, output, pg.size())
    if pg._comm is not None:
        stacked = np.stack([t._data for t in input_list])
        return _mpi.reduce_scatter(pg, output, stacked, op, async_op)

    def run(key):
        parts = [t._data for t in input_list]
        _write(output, _reduce_scatter_arrays(pg, key, parts, output._data, op))

    return _run(pg, run, async_op, [output])


def reduce_scatter_tensor(
    output: Tensor, input: Tensor, op=ReduceOp.SUM, group=None, async_op: bool = False
):
    """Reduce ``input`` (every rank's, split in ``world_size`` chunks along dim 0) with ``op``;
    rank ``i`` gets chunk ``i`` in ``output``."""
    _expect_tensors(output=output, input=input)
    pg = _group(group)
    if pg is None:
        return None
    _check_op(op, output.dtype)
    n = pg.size()
    if input.numel() != n * output.numel():
        raise ValueError("Input tensor size must be equal to world_size times output tensor size")
    if pg._comm is not None:
        return _mpi.reduce_scatter(pg, output, input._data, op, async_op)

    def run(key):
        parts = list(np.ascontiguousarray(input._data).reshape((n,) + tuple(output.shape)))
        _write(output, _reduce_scatter_arrays(pg, key, parts, output._data, op))

    return _run(pg, run, async_op, [output])


reduce_scatter_single = reduce_scatter_tensor


def all_to_all(
    output_tensor_list: list, input_tensor_list: list, group=None, async_op: bool = False
):
    """Send ``input_tensor_list[i]`` to rank ``i``, which receives it in its
    ``output_tensor_list[rank]``."""
    _expect_tensor_lists(output_tensor_list=output_tensor_list, input_tensor_list=input_tensor_list)
    pg = _group(group)
    if pg is None:
        return None
    if pg._comm is not None:
        send = np.concatenate([_mpi._raw(t._data).reshape(-1) for t in input_tensor_list])
        rcounts = [t.numel() for t in output_tensor_list]
        recv = np.empty(sum(rcounts), send.dtype)

        def finish():
            cut = np.cumsum([0] + rcounts)
            for i, out in enumerate(output_tensor_list):
                _mpi._put(out, recv[cut[i] : cut[i + 1]].reshape(out.shape))

        scounts = [t.numel() for t in input_tensor_list]
        work = _mpi.all_to_all_v(pg, send, scounts, recv, rcounts, finish, async_op)
        if work is not None:
            work._result = output_tensor_list
        return work

    def run(key):
        me = pg.rank()
        for r, t in enumerate(input_tensor_list):
            if r != me:
                _send(pg, r, key, t._data)
        for r, out in enumerate(output_tensor_list):
            src = input_tensor_list[me]._data if r == me else _recv(pg, r, key, out._data)
            _write(out, src)

    return _run(pg, run, async_op, output_tensor_list)


def all_to_all_single(
    output: Tensor,
    input: Tensor,
    output_split_sizes=None,
    input_split_sizes=None,
    group=None,
    async_op: bool = False,
):
    """Split ``input`` along dim 0 (evenly, or by ``input_split_sizes``) and send part ``i`` to
    rank ``i``; the parts received are concatenated into ``output``."""
    _expect_tensors(output=output, input=input)
    pg = _group(group)
    if pg is None:
        return None
    n = pg.size()

    def cuts(t, sizes):
        sizes = [t.shape[0] // n] * n if not sizes else list(sizes)
        return np.cumsum([0] + sizes)

    if pg._comm is not None:
        ic, oc = cuts(input, input_split_sizes), cuts(output, output_split_sizes)
        irow = int(np.prod(input.shape[1:], dtype=np.int64))
        orow = int(np.prod(output.shape[1:], dtype=np.int64))
        recv, copy = _mpi.gathered(output, 1, output._data)
        recv = recv.reshape(-1)

        def finish():
            if copy:
                _mpi._put(output, recv.reshape(output.shape))

        work = _mpi.all_to_all_v(
            pg,
            input._data.reshape(-1) if input._data.flags.c_contiguous else input._data.ravel(),
            (np.diff(ic) * irow).tolist(),
            recv,
            (np.diff(oc) * orow).tolist(),
            finish,
            async_op,
        )
        if work is not None:
            work._result = [output]
        return work

    def run(key):
        me = pg.rank()
        ic, oc = cuts(input, input_split_sizes), cuts(output, output_split_sizes)
        for r in range(n):
            if r != me:
                _send(pg, r, key, input._data[ic[r] : ic[r + 1]])
        for r in range(n):
            dest = output._data[oc[r] : oc[r + 1]]
            dest[...] = input._data[ic[me] : ic[me + 1]] if r == me else _recv(pg, r, key, dest)

    return _run(pg, run, async_op, [output])


def barrier(group=None, async_op: bool = False, device_ids=None, timeout: timedelta | None = None):
    """Wait until every rank of the group reaches the barrier (up to ``timeout``)."""
    pg = _group(group)
    if pg is None:
        return None
    seconds = None if timeout is None else timeout.total_seconds()
    if pg._comm is not None:
        return _mpi.barrier(pg, async_op)

    def run(key):
        token = np.zeros(1, np.uint8)
        if pg.rank() == 0:
            for r in range(1, pg.size()):
                _recv(pg, r, key, token, seconds)
            for r in range(1, pg.size()):
                _send(pg, r, key, token)
        else:
            _send(pg, 0, key, token)
            _recv(pg, 0, key, token, seconds)

    return _run(pg, run, async_op)


def monitored_barrier(group=None, timeout: timedelta | None = None, wait_all_ranks: bool = False):
    """A barrier that fails after ``timeout`` (default: the group's) when a rank is missing."""
    return barrier(group, timeout=timeout)


# ------------------------------------------------------------------------ point to point
def _peer(pg: ProcessGroup, rank, group_rank, any_source: bool) -> int | None:
    """Return the global rank of a send/recv peer (None: any source, for a receive)."""
    if rank is not None and group_rank is not None:
        raise ValueError("Can't specify both group_rank and global_rank")
    if group_rank is not None:
        if not 0 <= group_rank < pg.size():
            raise ValueError(f"Group rank {group_rank} is not part of group {pg}")
        return pg._ranks[group_rank]
    if rank is None:
        if any_source:
            return None
        raise ValueError("Must specify global_rank or group_rank")
    if rank not in pg._ranks:
        raise ValueError(f"Global rank {rank} is not part of group {pg}")
    return rank


def _p2p_key(pg: ProcessGroup, tag: int) -> tuple:
    return (2, pg._gid, int(tag), 0)


def isend(tensor: Tensor, dst: int | None = None, group=None, tag: int = 0, group_dst=None):
    """Send ``tensor`` to rank ``dst``; return a :class:`Work` (the data is on its way)."""
    pg = _group(group)  # torch looks the group up first here (irecv checks the tensor first)
    _expect_tensors(tensor=tensor)
    if pg is None:
        return None
    peer = _peer(pg, dst, group_dst, any_source=False)
    if peer == pg._global_rank:
        raise ValueError(
            "Invalid destination rank: destination rank should not be the same as the rank of "
            "the current process."
        )
    if pg._comm is not None:
        return _mpi.isend(pg, tensor, peer, int(tag))
    # sends never wait for the receiver (its receiving thread buffers the message)
    pg._mesh.send(peer, _p2p_key(pg, tag), _bytes(tensor._data))
    return Work(_done([tensor]))


def send(tensor: Tensor, dst: int | None = None, group=None, tag: int = 0, group_dst=None) -> None:
    """Send ``tensor`` to rank ``dst``."""
    isend(tensor, dst, group, tag, group_dst)


def irecv(tensor: Tensor, src: int | None = None, group=None, tag: int = 0, group_src=None):
    """Receive into ``tensor`` from rank ``src`` (any rank when None); return a :class:`Work`
    whose ``wait()`` completes the receive."""
    _expect_tensors(tensor=tensor)
    pg = _group(group)
    if pg is None:
        return None
    peer = _peer(pg, src, group_src, any_source=True)
    if peer == pg._global_rank:
        raise ValueError(
            "Invalid source rank: source rank should not be the same as the rank of the current "
            "process."
        )
    if pg._comm is not None:
        return _mpi.irecv(pg, tensor, peer, int(tag))
    peers = tuple(r for r in pg._ranks if r != pg._global_rank) if peer is None else (peer,)
    key = _p2p_key(pg, tag)
    mesh = pg._mesh

    def complete() -> int:
        sender, payload = mesh.recv(peers, key, pg._timeout)
        a = tensor._data
        if len(payload) != a.nbytes:
            raise RuntimeError(
                f"rank {sender} sent {len(payload)} bytes where {a.nbytes} were expected: the "
                "tensors' shapes or dtypes differ between ranks"
            )
        _write(tensor, np.frombuffer(payload, a.dtype).reshape(a.shape))
        return sender

    return Work(Future(), complete, lambda: mesh.poll(peers, key), [tensor])


def recv(tensor: Tensor, src: int | None = None, group=None, tag: int = 0, group_src=None) -> int:
    """Receive into ``tensor`` from rank ``src`` (any rank when None); return the sender's
    rank."""
    work = irecv(tensor, src, group, tag, group_src)
    if work is None:
        return -1
    return work.source_rank()


class P2POp:
    """One ``isend`` or ``irecv`` for :func:`batch_isend_irecv`."""

    def __init__(self, op, tensor: Tensor, peer=None, group=None, tag: int = 0, group_peer=None):
        if op not in (isend, irecv):
            raise ValueError(
                "Invalid ``op``. Expected ``op`` to be of type ``torch.distributed.isend`` or "
                "``torch.distributed.irecv``."
            )
        _expect_tensors(tensor=tensor)
        self.op, self.tensor, self.peer = op, tensor, peer
        self.group, self.tag, self.group_peer = group, tag, group_peer


def batch_isend_irecv(p2p_op_list: list) -> list:
    """Start every operation of ``p2p_op_list``; return their :class:`Work` handles."""
    if not all(isinstance(p, P2POp) for p in p2p_op_list):
        raise ValueError(
            "Invalid ``p2p_op_list``. Each op is expected to to be of type "
            "``torch.distributed.P2POp``."
        )
    return [p.op(p.tensor, p.peer, p.group, p.tag, p.group_peer) for p in p2p_op_list]


# ------------------------------------------------------------------------------- objects
def _object_array(obj) -> np.ndarray:
    return np.frombuffer(pickle.dumps(obj), np.uint8)


def _exchange_bytes(pg: ProcessGroup, key, data: np.ndarray, to: list, frm: list) -> dict:
    """Send ``data`` to the group ranks ``to``; return ``{rank: bytes}`` received from ``frm``."""
    for r in to:
        pg._mesh.send(pg._ranks[r], key, data)
    return {r: pg._mesh.recv((pg._ranks[r],), key, pg._timeout)[1] for r in frm}


def all_gather_object(object_list: list, obj, group=None) -> None:
    """Gather the picklable ``obj`` of every rank into ``object_list`` on every rank."""
    pg = _group(group)
    if pg is None:
        return None
    me, others = pg.rank(), [r for r in range(pg.size()) if r != pg.rank()]
    if len(object_list) < pg.size():
        raise IndexError("list assignment index out of range")
    if pg._comm is not None:
        object_list[: pg.size()] = _mpi.all_gather_object(pg, obj)
        return None
    got = _exchange_bytes(pg, pg._next_key(), _object_array(obj), others, others)
    for r in range(pg.size()):
        object_list[r] = obj if r == me else pickle.loads(got[r])


def broadcast_object_list(
    object_list: list, src: int | None = None, group=None, device=None, group_src=None
) -> None:
    """Replace ``object_list`` on every rank by rank ``src``'s (objects must be picklable)."""
    pg = _group(group)
    if pg is None:
        return None
    root = _group_rank(pg, src, group_src, "src")
    if pg._comm is not None:
        received = _mpi.broadcast_object(pg, list(object_list), root)
        object_list[: len(received)] = received
        return None
    key = pg._next_key()
    if pg.rank() == root:
        others = [r for r in range(pg.size()) if r != root]
        _exchange_bytes(pg, key, _object_array(list(object_list)), others, [])
    else:
        received = pickle.loads(_exchange_bytes(pg, key, None, [], [root])[root])
        object_list[: len(received)] = received


def gather_object(obj, object_gather_list=None, dst: int | None = None, group=None, group_dst=None):
    """Gather the picklable ``obj`` of every rank into ``object_gather_list`` of rank ``dst``."""
    pg = _group(group)
    if pg is None:
        return None
    root = _group_rank(pg, dst, group_dst, "dst")
    if pg.rank() == root:
        if not object_gather_list:
            raise ValueError("Argument ``gather_list`` must be specified on destination rank.")
    elif object_gather_list:
        raise ValueError("Argument ``gather_list`` must NOT be specified on non-destination ranks.")
    if pg._comm is not None:
        got = _mpi.gather_object(pg, obj, root)
        if pg.rank() == root:
            object_gather_list[: len(got)] = got
        return None
    key = pg._next_key()
    if pg.rank() != root:
        _exchange_bytes(pg, key, _object_array(obj), [root], [])
        return
    others = [r for r in range(pg.size()) if r != root]
    got = _exchange_bytes(pg, key, None, [], others)
    for r in range(pg.size()):
        object_gather_list[r] = obj if r == root else pickle.loads(got[r])


def send_object_list(
    object_list: list,
    dst: int | None = None,
    group=None,
    device=None,
    group_dst=None,
    use_batch: bool = False,
) -> None:
    """Send the picklable objects of ``object_list`` to rank ``dst`` (see
    :func:`recv_object_list`)."""
    pg = _group(group)
    if pg is None:
        return
    peer = _peer(pg, dst, group_dst, any_source=False)
    if peer == pg._global_rank:
        raise ValueError(
            "Invalid destination rank: destination rank should not be the same as the rank of "
            "the current process."
        )
    if pg._comm is not None:
        _mpi.send_object(pg, list(object_list), peer)
        return
    pg._mesh.send(peer, (3, pg._gid, 0, 0), _object_array(list(object_list)))


def recv_object_list(
    object_list: list,
    src: int | None = None,
    group=None,
    device=None,
    group_src=None,
    use_batch: bool = False,
) -> int:
    """Fill ``object_list`` with the objects rank ``src`` (any rank when None) sent with
    :func:`send_object_list`; return the sender's rank."""
    pg = _group(group)
    if pg is None:
        return -1
    peer = _peer(pg, src, group_src, any_source=True)
    if pg._comm is not None:
        received, sender = _mpi.recv_object(pg, peer)
        object_list[: len(received)] = received
        return sender
    peers = tuple(r for r in pg._ranks if r != pg._global_rank) if peer is None else (peer,)
    sender, payload = pg._mesh.recv(peers, (3, pg._gid, 0, 0), pg._timeout)
    received = pickle.loads(payload)
    object_list[: len(received)] = received
    return sender


def scatter_object_list(
    scatter_object_output_list: list,
    scatter_object_input_list=None,
    src: int | None = None,
    group=None,
    group_src=None,
) -> None:
    """Put ``scatter_object_input_list[i]`` of rank ``src`` into
    ``scatter_object_output_list[0]`` of rank ``i``."""
    if not isinstance(scatter_object_output_list, list) or len(scatter_object_output_list) < 1:
        raise ValueError(
            "Expected argument scatter_object_output_list to be a list of size at least 1."
        )
    pg = _group(group)
    if pg is None:
        return None
    root = _group_rank(pg, src, group_src, "src")
    if pg._comm is not None:
        objs = list(scatter_object_input_list) if pg.rank() == root else None
        scatter_object_output_list[0] = _mpi.scatter_object(pg, objs, root)
        return None
    key = pg._next_key()
    if pg.rank() == root:
        for r in range(pg.size()):
            if r != root:
                data = _object_array(scatter_object_input_list[r])
                pg._mesh.send(pg._ranks[r], key, data)
        scatter_object_output_list[0] = scatter_object_input_list[root]
    else:
        payload = pg._mesh.recv((pg._ranks[root],), key, pg._timeout)[1]
        scatter_object_output_list[0] = pickle.loads(payload)


def _broadcast_coalesced(process_group, tensors, buffer_size: int, src: int = 0) -> None:
    """Broadcast ``tensors`` in place from group rank ``src`` of ``process_group``, packed
    into one flat message per dtype (``buffer_size``, the bucket bound of torch's, is not
    needed: one message per dtype)."""
    groups: dict = {}
    for t in tensors:
        groups.setdefault(t.dtype, []).append(t)
    for ts in groups.values():
        flat = np.concatenate([t._data.reshape(-1) for t in ts])
        broadcast(_wrap(flat), group=process_group, group_src=src)
        offset = 0
        for t in ts:
            n = t._data.size
            t._data[...] = flat[offset : offset + n].reshape(t._data.shape)
            offset += n

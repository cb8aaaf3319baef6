"""The MPI backend: every collective and point-to-point operation on MPI's own, through mpi4py.

A group holds an MPI communicator (``COMM_WORLD`` duplicated for the default group, a
``Comm.Create`` of it for ``new_group``); group ranks are communicator ranks. Tensors travel
zero-copy: a C-contiguous tensor's NumPy array is the MPI buffer (``MPI.IN_PLACE`` for
``all_reduce`` and the root of ``reduce``); a non-contiguous one goes through a contiguous
copy. An ``async_op=True`` collective runs on the group's :class:`_Lane` (the blocking call
on a worker thread, GIL released throughout), behind
:class:`~ember.distributed.distributed_c10d.Work`, so DDP's bucket all-reduces run during
``backward``; ``isend``/``irecv`` are MPI requests, which a progress thread tests meanwhile
(MPICH advances them only inside MPI calls). A watchdog ends the job when a blocking call
outlives the group's ``timeout`` (MPI cannot interrupt it).

MPI has no bfloat16 or float16: ``all_reduce`` of bfloat16 runs a custom MPI operation doing
the arithmetic in NumPy on the 16-bit values (faster than widening, measured: see
:func:`_half_op`); float16 (whose NumPy arithmetic is slow) and the other reductions widen to
float32 and round back once. Booleans reduce as uint8. ``AVG`` is a sum
divided by the group size. The object collectives use mpi4py's pickle-based lowercase calls,
between the ranks of one MPI job.
"""

from __future__ import annotations

import collections
import os
import threading
import time
from concurrent.futures import Future

import numpy as np

from ember.distributed.distributed_c10d import ReduceOp, Work

# environment variables an MPI launcher sets (MPICH/hydra, Open MPI, Slurm's PMI, ours)
_LAUNCH_VARS = ("PMI_RANK", "PMI_SIZE", "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "EMBER_MPI_LAUNCH")


def is_available() -> bool:
    """Return whether mpi4py can be imported (without starting MPI)."""
    import importlib.util

    return importlib.util.find_spec("mpi4py") is not None


def launched() -> bool:
    """Return whether this process was started by ``mpiexec`` (or ember's launcher on MPI)."""
    return is_available() and any(v in os.environ for v in _LAUNCH_VARS)


def world_comm():
    """Return a duplicate of ``MPI.COMM_WORLD`` (initialising MPI on first use).

    From then on an uncaught exception aborts the whole MPI job after its traceback is
    printed, so the other ranks do not wait for this one forever (``python -m mpi4py``'s
    behaviour)."""
    import sys

    from mpi4py import MPI

    hook = sys.excepthook

    def abort(kind, value, tb):
        hook(kind, value, tb)
        sys.stderr.flush()
        MPI.COMM_WORLD.Abort(1)

    if getattr(hook, "__name__", "") != "abort":
        sys.excepthook = abort
    return MPI.COMM_WORLD.Dup()


_MPI = None


def _mpi():
    global _MPI
    if _MPI is None:
        from mpi4py import MPI

        _MPI = MPI
    return _MPI


_OPS: dict = {}


def _op(op):
    if not _OPS:
        MPI = _mpi()
        _OPS.update(
            {
                ReduceOp.SUM: MPI.SUM,
                ReduceOp.AVG: MPI.SUM,
                ReduceOp.PRODUCT: MPI.PROD,
                ReduceOp.MIN: MPI.MIN,
                ReduceOp.MAX: MPI.MAX,
                ReduceOp.BAND: MPI.BAND,
                ReduceOp.BOR: MPI.BOR,
                ReduceOp.BXOR: MPI.BXOR,
            }
        )
    return _OPS[op]


_WIDEN = {"bfloat16": np.float32, "float16": np.float32, "bool": np.uint8}
_HALF = ("bfloat16", "float16")
_NAMES: dict = {}


def _name(dtype: np.dtype) -> str:
    """``dtype.name``, cached (NumPy computes it in Python: ~30 us a call on a loaded machine,
    three calls were most of a small all-reduce's cost)."""
    name = _NAMES.get(dtype)
    if name is None:
        name = _NAMES[dtype] = dtype.name
    return name


def _buffer(t, reduce: bool = False) -> tuple[np.ndarray, bool]:
    """Return the array MPI reads/writes for tensor ``t`` and whether it must be copied
    back (a non-contiguous tensor, or a dtype MPI cannot reduce)."""
    a = t._data
    wide = _WIDEN.get(_name(a.dtype)) if reduce else None
    if wide is not None:
        return a.astype(wide), True
    if _name(a.dtype) in _HALF:
        a = a.view(np.uint16) if a.flags.c_contiguous else np.ascontiguousarray(a).view(np.uint16)
        return a, not t._data.flags.c_contiguous
    if a.flags.c_contiguous:
        return a, False
    return np.ascontiguousarray(a), True


def _raw(a: np.ndarray) -> np.ndarray:
    """A view MPI can type (16-bit floats travel as uint16: bits are bits)."""
    a = np.ascontiguousarray(a)
    return a.view(np.uint16) if _name(a.dtype) in _HALF else a


def _put(t, buf: np.ndarray) -> None:
    t._data[...] = buf.view(t._data.dtype) if buf.dtype == np.uint16 else buf


class _Request:
    """An MPI request that two threads may poll: the caller waiting for it and the progress
    thread (MPI forbids testing one request from two threads at once, hence the lock)."""

    __slots__ = ("request", "lock", "done", "source", "polled", "what", "timeout")

    def __init__(self, request, what: str = "a non-blocking operation", timeout=None) -> None:
        self.request = request
        self.what = what
        self.timeout = timeout
        self.lock = threading.Lock()
        self.done = False
        self.source = None
        self.polled = True  # whether the progress thread still tests it

    def test(self, block: bool = False) -> bool:
        """Advance the request (``block``: until it completes); return whether it did."""
        if block:
            self.polled = False  # the caller waits: the progress thread leaves it alone
        if not self.lock.acquire(blocking=block):
            return False  # the other thread is on it
        try:
            if not self.done:
                status = _mpi().Status()
                if block:
                    with _watch(self.what, self.timeout):
                        self.request.Wait(status)
                    self.done = True
                else:
                    self.done = self.request.Test(status)
                if self.done:
                    self.source = status.Get_source()
            return self.done
        finally:
            self.lock.release()


class _Progress:
    """A daemon thread that tests the outstanding non-blocking requests every ``interval``
    seconds while there are any.

    MPICH advances a non-blocking operation only inside MPI calls; each test drives MPI's
    whole progress engine. It serves ``isend`` and, with ``EMBER_MPI_ASYNC=requests``, the
    non-blocking collectives (each test needs the GIL: while the main thread computes, a test
    every 5 ms at best, too few for a large ``Iallreduce``: hence the lanes).
    ``EMBER_MPI_PROGRESS_US`` sets the interval in microseconds (default 200; 0 turns the
    thread off)."""

    def __init__(self, interval: float) -> None:
        self.interval = interval
        self.pending: list[_Request] = []
        self.wake = threading.Condition()
        self.thread: threading.Thread | None = None

    def add(self, req: _Request) -> None:
        with self.wake:
            self.pending.append(req)
            if self.thread is None:
                self.thread = threading.Thread(
                    target=self._run, name="ember-mpi-progress", daemon=True
                )
                self.thread.start()
            self.wake.notify()

    def _run(self) -> None:
        MPI = _mpi()
        while True:
            with self.wake:
                self.pending = [r for r in self.pending if r.polled and not r.done]
                while not self.pending:
                    self.wake.wait()
                todo = list(self.pending)
            if MPI.Is_finalized():
                return
            for r in todo:
                try:
                    r.test()
                except Exception:  # the waiting caller gets the error from its own Wait
                    r.polled = False
            time.sleep(self.interval)


_PROGRESS: _Progress | None = None


def _progress() -> _Progress | None:
    global _PROGRESS
    if _PROGRESS is None:
        interval = float(os.environ.get("EMBER_MPI_PROGRESS_US", "200")) * 1e-6
        if interval <= 0:
            return None
        _PROGRESS = _Progress(interval)
    return _PROGRESS


class _Watchdog:
    """Ends the MPI job when a blocking MPI call outlives its group's ``timeout``.

    MPI cannot interrupt a blocked call, and MPICH does not notice a peer that died or hangs
    (``mpiexec`` ends the job when a rank exits, but not when one is stuck or was started by
    other means): so, as torch's NCCL watchdog, a thread checks twice a second the deadlines
    of the calls in flight and, when one has passed, prints which operation timed out on which
    rank and aborts the job (``MPI_Abort``: every rank exits with status 1)."""

    def __init__(self) -> None:
        self.calls: dict = {}
        self.lock = threading.Lock()
        self.thread: threading.Thread | None = None

    def _start(self) -> None:
        self.thread = threading.Thread(target=self._run, name="ember-mpi-watchdog")
        self.thread.daemon = True
        self.thread.start()

    def _run(self) -> None:
        import sys

        MPI = _mpi()
        while True:
            time.sleep(0.5)
            now = time.monotonic()
            calls = self.calls.copy()  # (one call under the GIL: the callers add and remove)
            late = [(what, t) for deadline, what, t in calls.values() if deadline <= now]
            if late and not MPI.Is_finalized():
                what, t = late[0]
                rank = MPI.COMM_WORLD.Get_rank()
                sys.stderr.write(
                    f"[rank {rank}] {what} timed out after {t * 1000:.0f} ms (the process "
                    "group's timeout): another rank is missing from it (it died, hangs, or "
                    "runs a different collective). Aborting the MPI job.\n"
                )
                sys.stderr.flush()
                MPI.COMM_WORLD.Abort(1)


class _Watched:
    """The ``with`` block of one blocking call the watchdog keeps an eye on (a dict entry
    added and removed: single operations under the GIL, no lock on a collective's path)."""

    __slots__ = ("dog", "what", "timeout")

    def __init__(self, dog: _Watchdog, what: str, timeout: float | None) -> None:
        self.dog, self.what, self.timeout = dog, what, timeout

    def __enter__(self) -> None:
        timeout = self.timeout
        if timeout is not None and timeout > 0:
            dog = self.dog
            dog.calls[self] = (time.monotonic() + timeout, self.what, timeout)
            if dog.thread is None:
                with dog.lock:
                    if dog.thread is None:
                        dog._start()

    def __exit__(self, *exc) -> None:
        if self.timeout is not None and self.timeout > 0:
            self.dog.calls.pop(self, None)


_WATCHDOG = _Watchdog()


def _watch(what: str, timeout: float | None) -> _Watched:
    return _Watched(_WATCHDOG, what, timeout)


def _work(request, finish, result, what: str = "", timeout=None) -> Work:
    """A :class:`Work` over an MPI request; ``finish()`` runs once it completed. The
    progress thread keeps the request moving until someone waits for it."""
    req = _Request(request, what, timeout)

    def complete():
        req.test(block=True)
        finish()
        return req.source

    progress = _progress()
    if progress is not None:
        progress.add(req)
    return Work(Future(), complete, req.test, result)


class _Job:
    """One asynchronous collective of a lane: MPI's blocking call and what to do after it.
    ``span`` holds the ``time.perf_counter()`` at the call's start and end once it ran."""

    __slots__ = ("call", "args", "finish", "what", "timeout", "done", "error", "span")

    def __init__(self, call, args, finish, what: str, timeout) -> None:
        self.call, self.args, self.finish = call, args, finish
        self.what, self.timeout = what, timeout
        self.done = False
        self.error: BaseException | None = None
        self.span: tuple[float, float] | None = None

    def run(self) -> None:
        start = time.perf_counter()
        try:
            with _watch(self.what, self.timeout):
                self.call(*self.args)
            self.finish()
        except BaseException as e:  # raised again by the Work's wait
            self.error = e
        self.span = (start, time.perf_counter())
        self.done = True


class _Lane:
    """The asynchronous collectives of one group, run in call order as MPI's *blocking* calls
    on the group's second communicator (a ``Dup``, so they match among themselves whatever the
    main thread's blocking calls do meanwhile), by whichever thread comes first: the lane's
    worker thread, or a caller waiting for one of them.

    MPICH advances a non-blocking request (``Iallreduce``) only inside an MPI call: started
    from a gradient hook it sits untouched while ``backward`` computes, and a thread testing it
    needs the GIL for every test. The worker's blocking call holds no GIL from start to end,
    so DDP's bucket all-reduces run while ``backward`` goes on; and since a waiting caller runs
    the calls not started yet itself, the wait after ``backward`` never depends on the worker
    being woken (what costs most on a loaded machine)."""

    def __init__(self, comm, nice: int = 0) -> None:
        self.comm = comm
        self.nice = nice
        self.jobs: collections.deque = collections.deque()
        self.running = threading.Lock()  # held while a job's MPI call runs: one at a time
        self.wake = threading.Condition()
        self.closed = False
        self.thread = threading.Thread(target=self._work, name="ember-mpi-lane", daemon=True)
        self.thread.start()

    def submit(self, job: _Job) -> None:
        with self.wake:
            self.jobs.append(job)
            self.wake.notify()

    def _next(self) -> None:
        """Run the oldest job not started yet (if any)."""
        with self.running:
            with self.wake:
                job = self.jobs.popleft() if self.jobs else None
            if job is not None:
                job.run()

    def _work(self) -> None:
        if self.nice:  # (Linux: a thread is a task with its own nice value)
            try:
                os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), self.nice)
            except (AttributeError, OSError):
                pass
        while True:
            with self.wake:
                while not self.jobs and not self.closed:
                    self.wake.wait()
                if not self.jobs:
                    return
            self._next()

    def wait(self, job: _Job) -> None:
        """Return once ``job`` ran (running it and the jobs before it here if need be)."""
        while not job.done:
            self._next()  # (a job is taken off the queue only under ``running``)
        if job.error is not None:
            raise job.error

    def close(self) -> None:
        """Finish the jobs submitted and stop the worker; free the communicator."""
        with self.wake:
            self.closed = True
            self.wake.notify()
        self.thread.join()
        self.comm.Free()


_LANES: list[_Lane] = []


def _lane(pg) -> _Lane:
    """``pg``'s lane, made on its first asynchronous collective (``Comm.Dup`` is collective:
    every rank of the group makes it at the same call). ``EMBER_MPI_LANE_NICE`` (Linux) lowers
    the worker thread's priority by that many steps (benchmarks: the lane then runs on cycles
    ``backward`` leaves idle)."""
    lane = pg.__dict__.get("_lane")
    if lane is None:
        with _watch(f"MPI_Comm_dup on a group of {pg.size()}", pg._timeout):
            comm = pg._comm.Dup()
        lane = pg._lane = _Lane(comm, int(os.environ.get("EMBER_MPI_LANE_NICE", "0")))
        _LANES.append(lane)
    return lane


def close_lanes() -> None:
    """Stop every group's lane (``destroy_process_group``)."""
    while _LANES:
        _LANES.pop().close()


_WHAT: dict = {}


def _what(blocking: str, n: int) -> str:
    """The watchdog's name of a call (cached: built on every collective otherwise)."""
    what = _WHAT.get((blocking, n))
    if what is None:
        what = _WHAT[(blocking, n)] = f"MPI_{blocking} on a group of {n}"
    return what


def _call(pg, blocking, nonblocking, args, finish, async_op: bool, result):
    """Run MPI's ``blocking`` call now; with ``async_op``, return a :class:`Work` of it run
    on the group's :class:`_Lane` (``EMBER_MPI_ASYNC=requests``: MPI's ``nonblocking`` call
    tested by the progress thread, the previous design, kept for comparison)."""
    what = _what(blocking, pg.size())
    if not async_op:
        with _watch(what, pg._timeout):
            getattr(pg._comm, blocking)(*args)
        finish()
        return None
    if os.environ.get("EMBER_MPI_ASYNC") == "requests":
        return _work(getattr(pg._comm, nonblocking)(*args), finish, result, what, pg._timeout)
    lane = _lane(pg)
    job = _Job(getattr(lane.comm, blocking), args, finish, what, pg._timeout)
    lane.submit(job)
    work = Work(Future(), lambda: lane.wait(job), lambda: job.done, result)
    work._span = lambda: job.span  # (when the MPI call ran: DDP's overlap record)
    return work


_HALF_OPS: dict = {}
_HALF_UFUNCS = {
    ReduceOp.SUM: np.add,
    ReduceOp.AVG: np.add,
    ReduceOp.PRODUCT: np.multiply,
    ReduceOp.MIN: np.minimum,
    ReduceOp.MAX: np.maximum,
}


def _half_op(dtype: np.dtype, op):
    """An MPI reduction over 16-bit floats (sent as uint16) computed by NumPy, which halves the
    bytes on the wire. Measured against widening to float32 around a float32 ``Allreduce``
    (``benchmarks/bench_distributed.py``, 4M values on 2 ranks, load 5-8, four runs):
    bfloat16 1.20-1.30x faster, so ``all_reduce`` uses it; float16 0.87-1.11x (NumPy's float16
    arithmetic is slow), so float16 widens (a plain MPI reduction, no Python callback)."""
    key = (dtype.name, op)
    if key not in _HALF_OPS:
        ufunc = _HALF_UFUNCS[op]

        def reduce_half(inbuf, outbuf, datatype):
            out = np.frombuffer(outbuf, dtype)
            ufunc(np.frombuffer(inbuf, dtype), out, out=out)

        _HALF_OPS[key] = _mpi().Op.Create(reduce_half, commute=True)
    return _HALF_OPS[key]


def all_reduce(pg, tensor, op, async_op: bool):
    a = tensor._data
    name = _name(a.dtype)
    if not async_op and op is not ReduceOp.AVG and name not in _WIDEN and a.flags.c_contiguous:
        # the common case in few steps (it is most of a small all-reduce's cost)
        MPI = _mpi()
        with _Watched(_WATCHDOG, _what("Allreduce", pg.size()), pg._timeout):
            pg._comm.Allreduce(MPI.IN_PLACE, a, MPI.SUM if op is ReduceOp.SUM else _op(op))
        return None
    if name == "bfloat16" and op in _HALF_UFUNCS and a.flags.c_contiguous:
        raw = a.reshape(-1).view(np.uint16)
        n = pg.size()

        def finish_half():
            if op is ReduceOp.AVG:
                np.divide(a, n, out=a, casting="unsafe")
                tensor._vc[0] += 1

        args = (_mpi().IN_PLACE, [raw, _mpi().UINT16_T], _half_op(a.dtype, op))
        return _call(pg, "Allreduce", "Iallreduce", args, finish_half, async_op, [tensor])
    buf, copy = _buffer(tensor, reduce=True)
    n = pg.size()

    def finish():
        if op is ReduceOp.AVG:
            np.divide(buf, n, out=buf, casting="unsafe")
        if copy or op is ReduceOp.AVG:
            tensor._data[...] = buf
        if op is ReduceOp.AVG:
            tensor._vc[0] += 1

    args = (_mpi().IN_PLACE, buf, _op(op))
    return _call(pg, "Allreduce", "Iallreduce", args, finish, async_op, [tensor])


def broadcast(pg, tensor, root: int, async_op: bool):
    buf, copy = _buffer(tensor)

    def finish():
        if copy:
            _put(tensor, buf)

    return _call(pg, "Bcast", "Ibcast", (buf, root), finish, async_op, [tensor])


def reduce(pg, tensor, root: int, op, async_op: bool):
    buf, copy = _buffer(tensor, reduce=True)
    me, n = pg.rank(), pg.size()
    MPI = _mpi()
    args = (MPI.IN_PLACE, buf, _op(op), root) if me == root else (buf, None, _op(op), root)

    def finish():
        if me == root:
            if op is ReduceOp.AVG:
                np.divide(buf, n, out=buf, casting="unsafe")
            if copy or op is ReduceOp.AVG:
                tensor._data[...] = buf

    return _call(pg, "Reduce", "Ireduce", args, finish, async_op, [tensor])


def all_gather_into(pg, out: np.ndarray, inp: np.ndarray, finish, async_op: bool, result):
    """Gather every rank's ``inp`` into ``out`` (``n`` times as large, contiguous)."""
    return _call(pg, "Allgather", "Iallgather", (_raw(inp), out), finish, async_op, result)


def all_sizes(pg, size: int) -> list[int]:
    """Return every rank's ``size`` (one small blocking ``Allgather``)."""
    out = np.empty(pg.size(), np.int64)
    with _watch(f"MPI_Allgather on a group of {pg.size()}", pg._timeout):
        pg._comm.Allgather(np.array([size], np.int64), out)
    return out.tolist()


def gathered(out_tensor, n: int, like: np.ndarray) -> tuple[np.ndarray, bool]:
    """Return the contiguous receive array of an all-gather into ``out_tensor`` (or None)."""
    if out_tensor is not None and out_tensor._data.flags.c_contiguous:
        return _raw(out_tensor._data), False
    return np.empty((n, *like.shape), _raw(like).dtype), True


def reduce_scatter(pg, output, stacked: np.ndarray, op, async_op: bool):
    """Reduce ``stacked`` (``n`` blocks) across ranks; block ``rank`` lands in ``output``."""
    out, _ = _buffer(output, reduce=True)
    out = np.ascontiguousarray(out)
    wide = _WIDEN.get(_name(stacked.dtype))
    send = np.ascontiguousarray(stacked if wide is None else stacked.astype(wide))
    n = pg.size()

    def finish():
        if op is ReduceOp.AVG:
            np.divide(out, n, out=out, casting="unsafe")
        output._data[...] = out.reshape(output._data.shape)

    args = (send, out, _op(op))
    return _call(
        pg, "Reduce_scatter_block", "Ireduce_scatter_block", args, finish, async_op, [output]
    )


def all_to_all_v(pg, send: np.ndarray, scounts, recv: np.ndarray, rcounts, finish, async_op):
    """``Alltoallv`` of flat arrays with per-rank element counts."""
    sd = np.concatenate([[0], np.cumsum(scounts)[:-1]]).astype(int).tolist()
    rd = np.concatenate([[0], np.cumsum(rcounts)[:-1]]).astype(int).tolist()
    args = ([_raw(send), (list(scounts), sd)], [recv, (list(rcounts), rd)])
    return _call(pg, "Alltoallv", "Ialltoallv", args, finish, async_op, None)


def gather(pg, tensor, gather_list, root: int, async_op: bool):
    me, n = pg.rank(), pg.size()
    recv = np.empty((n, *tensor._data.shape), _raw(tensor._data).dtype) if me == root else None

    def finish():
        if me == root:
            for t, part in zip(gather_list, recv, strict=True):
                _put(t, part)

    args = (_raw(tensor._data), recv, root)
    return _call(pg, "Gather", "Igather", args, finish, async_op, gather_list or [])


def scatter(pg, tensor, scatter_list, root: int, async_op: bool):
    me = pg.rank()
    send = np.stack([_raw(t._data) for t in scatter_list]) if me == root else None
    buf, copy = _buffer(tensor)

    def finish():
        if copy:
            _put(tensor, buf)

    return _call(pg, "Scatter", "Iscatter", (send, buf, root), finish, async_op, [tensor])


def barrier(pg, async_op: bool):
    return _call(pg, "Barrier", "Ibarrier", (), lambda: None, async_op, None)


def isend(pg, tensor, peer: int, tag: int) -> Work:
    buf = _raw(tensor._data)
    request = pg._comm.Isend(buf, pg._ranks.index(peer), tag)
    return _work(request, lambda: None, [tensor], f"MPI_Isend to rank {peer}", pg._timeout)


def irecv(pg, tensor, peer: int | None, tag: int) -> Work:
    MPI = _mpi()
    buf, copy = _buffer(tensor)
    source = MPI.ANY_SOURCE if peer is None else pg._ranks.index(peer)
    req = _Request(pg._comm.Irecv(buf, source, tag), f"MPI_Irecv from rank {peer}", pg._timeout)

    def complete():
        req.test(block=True)
        if copy:
            _put(tensor, buf)
        return pg._ranks[req.source]

    return Work(Future(), complete, req.test, [tensor])


# ------------------------------------------------------------------------------- objects
def _objects(pg, what: str, call, *args):
    with _watch(f"{what} on a group of {pg.size()}", pg._timeout):
        return call(*args)


def all_gather_object(pg, obj) -> list:
    return _objects(pg, "MPI_Allgather (objects)", pg._comm.allgather, obj)


def broadcast_object(pg, obj, root: int):
    return _objects(pg, "MPI_Bcast (objects)", pg._comm.bcast, obj, root)


def gather_object(pg, obj, root: int):
    return _objects(pg, "MPI_Gather (objects)", pg._comm.gather, obj, root)


def scatter_object(pg, objs, root: int):
    return _objects(pg, "MPI_Scatter (objects)", pg._comm.scatter, objs, root)


def send_object(pg, obj, peer: int) -> None:
    with _watch(f"MPI_Send (object) to rank {peer}", pg._timeout):
        pg._comm.send(obj, pg._ranks.index(peer), tag=-7 & 0x7FFF)


def recv_object(pg, peer: int | None):
    MPI = _mpi()
    status = MPI.Status()
    source = MPI.ANY_SOURCE if peer is None else pg._ranks.index(peer)
    with _watch(f"MPI_Recv (object) from rank {peer}", pg._timeout):
        obj = pg._comm.recv(source=source, tag=-7 & 0x7FFF, status=status)
    return obj, pg._ranks[status.Get_source()]

"""Process groups, as ``torch.distributed.distributed_c10d``: initialisation and rendezvous
(``env://``, ``tcp://``, a given store), groups, ranks, :class:`ReduceOp`, :class:`Backend` and
:class:`Work`.

ember's one backend is answered to as ``"gloo"``: collectives between processes over TCP
(:mod:`ember.distributed._mesh`), with NumPy doing the reductions. The collectives themselves
are in :mod:`ember.distributed._collectives`.
"""

from __future__ import annotations

import enum
import os
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import timedelta
from urllib.parse import parse_qs, urlparse

from ember.distributed._mesh import Mesh
from ember.distributed.store import FileStore, PrefixStore, Store, TCPStore

__all__ = [
    "Backend",
    "GradBucket",
    "is_xccl_available",
    "is_backend_available",
    "get_pg_count",
    "get_default_backend_for_device",
    "get_backend_config",
    "GroupMember",
    "ProcessGroup",
    "ReduceOp",
    "Work",
    "default_pg_timeout",
    "destroy_process_group",
    "get_backend",
    "get_global_rank",
    "get_group_rank",
    "get_process_group_ranks",
    "get_rank",
    "get_world_size",
    "group",
    "init_process_group",
    "is_gloo_available",
    "is_initialized",
    "is_mpi_available",
    "is_nccl_available",
    "is_torchelastic_launched",
    "is_ucc_available",
    "new_group",
    "reduce_op",
]

from ember.distributed.constants import default_pg_timeout  # noqa: E402

_NOT_INITIALIZED = (
    "Default process group has not been initialized, please make sure to call init_process_group."
)


class Backend(str):
    """A backend name: ``Backend("GLOO") == "gloo"``; class attributes name the known ones."""

    UNDEFINED = "undefined"
    GLOO = "gloo"
    NCCL = "nccl"
    XCCL = "xccl"
    UCC = "ucc"
    MPI = "mpi"
    FAKE = "fake"
    backend_list = [UNDEFINED, GLOO, NCCL, XCCL, UCC, MPI, FAKE]
    # the backend each device type gets by default, and the device types each backend serves
    default_device_backend_map = {"cpu": GLOO, "cuda": NCCL, "xpu": XCCL, "mps": GLOO}
    backend_capability = {
        GLOO: ["cpu", "cuda"],
        NCCL: ["cuda"],
        XCCL: ["xpu"],
        UCC: ["cpu", "cuda"],
        MPI: ["cpu", "cuda"],
        FAKE: ["cpu", "cuda", "hpu", "xpu"],
    }

    def __new__(cls, name: str):
        if not isinstance(name, str):
            raise ValueError(f"Backend constructor parameter must be string-ish, got {name!r}")
        value = getattr(Backend, name.upper(), Backend.UNDEFINED)
        if value == Backend.UNDEFINED:
            value = name.lower()
        return super().__new__(cls, value)


class ReduceOp:
    """The reduction of ``all_reduce``, ``reduce`` and ``reduce_scatter``: ``ReduceOp.SUM``,
    ``PRODUCT``, ``MIN``, ``MAX``, ``AVG``, ``BAND``, ``BOR``, ``BXOR``."""

    class RedOpType(enum.Enum):
        SUM = 0
        AVG = 1
        PRODUCT = 2
        MIN = 3
        MAX = 4
        BAND = 5
        BOR = 6
        BXOR = 7
        PREMUL_SUM = 8
        UNUSED = 9

    SUM = RedOpType.SUM
    AVG = RedOpType.AVG
    PRODUCT = RedOpType.PRODUCT
    MIN = RedOpType.MIN
    MAX = RedOpType.MAX
    BAND = RedOpType.BAND
    BOR = RedOpType.BOR
    BXOR = RedOpType.BXOR
    PREMUL_SUM = RedOpType.PREMUL_SUM
    UNUSED = RedOpType.UNUSED


class reduce_op:  # noqa: N801 - torch's deprecated alias keeps its name
    """Deprecated alias of :class:`ReduceOp` (``SUM``, ``PRODUCT``, ``MIN``, ``MAX``)."""

    SUM = ReduceOp.SUM
    PRODUCT = ReduceOp.PRODUCT
    MIN = ReduceOp.MIN
    MAX = ReduceOp.MAX


class Work:
    """The handle of an asynchronous operation: :meth:`wait` blocks until it is done and
    re-raises its error.

    A collective runs on the background thread (``future``); a receive runs when waited for
    (``complete``, which returns the sender's rank), or as soon as ``ready()`` says its
    message arrived, so a pending receive never holds up the collectives queued after it.
    """

    def __init__(self, future: Future, complete=None, ready=None, result=None) -> None:
        self._future = future
        self._complete = complete
        self._ready = ready
        self._result = result
        self._source_rank = None
        self._lock = threading.Lock()

    def _finish(self) -> None:
        with self._lock:
            if self._future.done():
                return
            try:
                self._source_rank = self._complete()
            except BaseException as e:  # raised again by wait()
                self._future.set_exception(e)
            else:
                self._future.set_result(self._result)

    def wait(self, timeout: timedelta | None = None) -> bool:
        """Block until the operation is done; return True."""
        if self._complete is not None:
            self._finish()
        self._future.result(None if timeout is None else timeout.total_seconds())
        return True

    def synchronize(self) -> None:
        """Wait for the operation (CPU: the same as :meth:`wait`)."""
        self.wait()

    def is_completed(self) -> bool:
        """Return whether the operation finished (successfully or not)."""
        if not self._future.done() and self._ready is not None and self._ready():
            self._finish()
        return self._future.done()

    def is_success(self) -> bool:
        """Return whether the operation finished without error."""
        return self.is_completed() and self._future.exception() is None

    def exception(self):
        """Return the error of a finished operation, or None."""
        return self._future.exception() if self.is_completed() else None

    def source_rank(self) -> int:
        """Return the rank a receive got its message from (after waiting for it)."""
        self.wait()
        if self._source_rank is None:
            raise RuntimeError("source_rank() may only be called on a recv operation's work")
        return self._source_rank

    def get_future(self) -> _WorkFuture:
        """Return a future completed with the operation's tensors when it finishes."""
        return _WorkFuture(self)

    def result(self) -> list:
        """Return the tensors the operation wrote (after waiting for it)."""
        self.wait()
        r = self._future.result()
        return list(r) if isinstance(r, list) else []


class _WorkFuture:
    """The future of a :class:`Work` (``wait``, ``value``, ``done``, ``then``), as torch's."""

    def __init__(self, work: Work) -> None:
        self._work = work

    def done(self) -> bool:
        """Return whether the operation finished."""
        return self._work.is_completed()

    def wait(self) -> list:
        """Block until the operation finished; return its tensors."""
        return self._work.result()

    def value(self) -> list:
        """Return the tensors of the finished operation."""
        return self._work.result()

    def then(self, callback) -> _ThenFuture:
        """Return a future of ``callback(self)``, run once this one finished (when the new
        future is waited for or found done: the operation is not waited for here)."""
        return _ThenFuture(self, callback)


class _ThenFuture:
    """The future :meth:`_WorkFuture.then` returns: ``callback(parent)``, computed once."""

    def __init__(self, parent, callback) -> None:
        self._parent, self._callback = parent, callback
        self._ran, self._value, self._error = False, None, None

    def done(self) -> bool:
        """Return whether the parent finished (the callback runs in :meth:`wait`: it may run
        collectives, which must not start on some ranks only)."""
        return self._ran or self._parent.done()

    def _run(self) -> None:
        try:
            self._parent.wait()
            self._value = self._callback(self._parent)
        except BaseException as e:  # raised again by wait()
            self._error = e
        self._ran = True

    def wait(self):
        """Block until the parent finished; return the callback's value."""
        if not self._ran:
            self._run()
        if self._error is not None:
            raise self._error
        return self._value

    def value(self):
        """Return the callback's value (waiting for it)."""
        return self.wait()

    def then(self, callback) -> _ThenFuture:
        """Return a future of ``callback(self)``."""
        return _ThenFuture(self, callback)


class GradBucket:
    """The gradients of one DDP bucket as a communication hook sees them: ``buffer()`` (the
    flat tensor of the bucket's gradients), ``gradients()`` and ``parameters()`` (in the
    bucket's order), ``index()``, ``is_last()`` and ``set_buffer(tensor)``."""

    def __init__(self, index: int, last: bool, buffer, params: list, shapes: list) -> None:
        self._index, self._last, self._buffer = index, last, buffer
        self._params, self._shapes = params, shapes

    def index(self) -> int:
        """Return the bucket's index (0 is the first reduced)."""
        return self._index

    def is_last(self) -> bool:
        """Return whether this is the iteration's last bucket."""
        return self._last

    def buffer(self):
        """Return the flat tensor holding the bucket's gradients."""
        return self._buffer

    def set_buffer(self, tensor) -> None:
        """Replace the bucket's gradient values with ``tensor``'s (in place)."""
        self._buffer.copy_(tensor)

    def gradients(self) -> list:
        """Return the bucket's gradients: views of :meth:`buffer`, shaped as the parameters."""
        flat, out, start = self._buffer.view(-1), [], 0
        for shape in self._shapes:
            n = 1
            for d in shape:
                n *= d
            out.append(flat[start : start + n].view(shape))
            start += n
        return out

    def parameters(self) -> list:
        """Return the bucket's parameters, in the order of :meth:`gradients`."""
        return list(self._params)


def _done(value=None) -> Future:
    f: Future = Future()
    f.set_result(value)
    return f


class ProcessGroup:
    """A set of ranks running collectives together (the default group spans the world)."""

    def __init__(
        self,
        mesh: Mesh | None,
        ranks: list[int],
        gid: int,
        backend: str,
        timeout: float,
        comm=None,
        global_rank: int | None = None,
    ):
        self._mesh = mesh
        self._comm = comm  # an MPI communicator (the MPI backend), else None
        self._global_rank = mesh.rank if global_rank is None else global_rank
        self._ranks = ranks
        self._gid = gid
        self._seq = 0
        self._backend = backend
        self._timeout = timeout
        self._rank = ranks.index(self._global_rank)

    def rank(self) -> int:
        """Return this process's rank in the group."""
        return self._rank

    def size(self) -> int:
        """Return the number of ranks in the group."""
        return len(self._ranks)

    def name(self) -> str:
        """Return the backend's name."""
        return "gloo" if self._backend == Backend.UNDEFINED else str(self._backend)

    def __repr__(self) -> str:
        return f"<ember.distributed.ProcessGroup rank={self._rank} size={self.size()}>"

    def _next_key(self) -> tuple:
        self._seq += 1
        return (1, self._gid, self._seq, 0)

    def _run(self, fn, async_op: bool):
        """Run ``fn(key)`` now, or on the background thread returning a :class:`Work`."""
        key = self._next_key()
        if not async_op:
            fn(key)
            return None
        return Work(_executor(self).submit(fn, key))


class _WorldMeta(type):
    @property
    def WORLD(cls):  # noqa: N802 - torch's name
        return _world.default_pg


class group(metaclass=_WorldMeta):  # noqa: N801 - torch's name
    """``group.WORLD``: the default process group (None before ``init_process_group``)."""


class GroupMember(metaclass=_WorldMeta):
    """``GroupMember.WORLD`` and ``GroupMember.NON_GROUP_MEMBER``."""

    NON_GROUP_MEMBER = -100


class _World:
    def __init__(self) -> None:
        self.default_pg: ProcessGroup | None = None
        self.store: Store | None = None  # the store init_process_group made (closed at destroy)
        self.next_gid = 1
        self.pg_count = 0  # over the process's life, as torch's
        self.generation = 0
        self.executors: list[ThreadPoolExecutor] = []  # one per group that ran async work
        self.lock = threading.Lock()


_world = _World()


def _executor(pg: ProcessGroup) -> ThreadPoolExecutor:
    """The group's worker thread: its asynchronous operations run there one by one, in the
    order they were called (every group has its own, as torch's work queues)."""
    with _world.lock:
        pool = pg.__dict__.get("_pool")
        if pool is None:
            pool = pg._pool = ThreadPoolExecutor(1, thread_name_prefix="ember-dist")
            _world.executors.append(pool)
        return pool


# ----------------------------------------------------------------------------- queries
def is_gloo_available() -> bool:
    """Return True: ember's backend answers to "gloo"."""
    return True


def is_nccl_available() -> bool:
    """Return False: no NCCL on a CPU-only build."""
    return False


def is_mpi_available() -> bool:
    """Return whether the MPI backend can be used (mpi4py imports)."""
    from ember.distributed import _mpi

    return _mpi.is_available()


def is_ucc_available() -> bool:
    """Return False: no UCC backend."""
    return False


def is_xccl_available() -> bool:
    """Return False: no XCCL backend."""
    return False


def is_backend_available(backend: str) -> bool:
    """Return whether ``backend`` can be used here ("gloo", and "mpi" with mpi4py)."""
    name = str(backend).lower()
    return name == Backend.GLOO or (name == Backend.MPI and is_mpi_available())


_DEVICE_BACKENDS = {"cpu": "gloo", "cuda": "nccl", "xpu": "xccl", "mps": "gloo", "meta": "fake"}


def get_default_backend_for_device(device) -> str:
    """Return the backend torch uses by default for ``device`` ("gloo" for the CPU)."""
    kind = str(getattr(device, "type", device)).split(":")[0]
    if kind not in _DEVICE_BACKENDS:
        raise ValueError(f"Default backend not registered for device : {kind}")
    return _DEVICE_BACKENDS[kind]


def get_pg_count() -> int:
    """Return the number of process groups this process created (default ones included)."""
    return _world.pg_count


def is_torchelastic_launched() -> bool:
    """Return whether this process was started by ``torchrun`` (torchelastic)."""
    return os.getenv("TORCHELASTIC_RUN_ID") is not None


def is_initialized() -> bool:
    """Return whether the default process group has been initialized."""
    return _world.default_pg is not None


def _default_pg() -> ProcessGroup:
    pg = _world.default_pg
    if pg is None:
        raise ValueError(_NOT_INITIALIZED)
    return pg


def _group_or_default(group) -> ProcessGroup:
    return _default_pg() if group is None else group


def _get_default_group() -> ProcessGroup:
    """Return the default (world) process group; ValueError before ``init_process_group``."""
    return _default_pg()


def get_rank(group: ProcessGroup | None = None) -> int:
    """Return this process's rank in ``group`` (default: the world); -1 if not a member."""
    if group is GroupMember.NON_GROUP_MEMBER:
        return -1
    return _group_or_default(group).rank()


def get_world_size(group: ProcessGroup | None = None) -> int:
    """Return the number of processes in ``group`` (default: the world)."""
    if group is GroupMember.NON_GROUP_MEMBER:
        return -1
    return _group_or_default(group).size()


def get_backend(group: ProcessGroup | None = None) -> Backend:
    """Return the backend of ``group`` (default: the world's)."""
    return Backend(_group_or_default(group)._backend)


def get_backend_config(group: ProcessGroup | None = None) -> str:
    """Return the group's ``device:backend`` configuration (as torch's for gloo)."""
    pg = _group_or_default(group)
    return "cpu:gloo" if pg._backend == Backend.UNDEFINED else "cpu:gloo,cuda:gloo"


def get_process_group_ranks(group: ProcessGroup | None) -> list[int]:
    """Return the global ranks of ``group``'s members, in group-rank order."""
    return list(_group_or_default(group)._ranks)


def get_global_rank(group: ProcessGroup, group_rank: int) -> int:
    """Return the global rank of ``group_rank`` in ``group``."""
    ranks = _group_or_default(group)._ranks
    if not 0 <= group_rank < len(ranks):
        raise ValueError(f"Group rank {group_rank} is not part of group {group}")
    return ranks[group_rank]


def get_group_rank(group: ProcessGroup, global_rank: int) -> int:
    """Return the rank in ``group`` of the process with global rank ``global_rank``."""
    ranks = _group_or_default(group)._ranks
    if global_rank not in ranks:
        raise ValueError(f"Global rank {global_rank} is not part of group {group}")
    return ranks.index(global_rank)


def get_node_local_rank(fallback_rank: int | None = None) -> int:
    """Return ``LOCAL_RANK`` from the environment (set by ``torchrun``), else ``fallback_rank``."""
    if "LOCAL_RANK" in os.environ:
        return int(os.environ["LOCAL_RANK"])
    if fallback_rank is not None:
        return int(fallback_rank)
    raise RuntimeError(
        "LOCAL_RANK is not in the environment. Consider passing fallback_rank to allow "
        "`get_node_local_rank` to work, assuming you are not running in a multi-device context "
        "and want the code to run locally instead."
    )


# ---------------------------------------------------------------------- initialisation
def _check_backend(backend) -> str:
    if backend is None:
        return Backend.UNDEFINED
    name = str(backend).lower()
    if "," in name or ":" in name:  # "cpu:gloo,cuda:nccl"
        pairs = dict(p.split(":", 1) for p in name.split(",") if ":" in p)
        if pairs.get("cpu") != "gloo":
            raise ValueError(f"ember has no backend for {backend!r} (only 'cpu:gloo')")
        return Backend.GLOO
    if name not in Backend.backend_list:
        raise AssertionError(f"Unknown backend type {backend}")
    if name == Backend.NCCL:
        raise RuntimeError("Distributed package doesn't have NCCL built in")
    if name == Backend.MPI and not is_mpi_available():
        raise RuntimeError(
            "Distributed package doesn't have MPI built in. MPI is only included if you build "
            "PyTorch from source on a host that has MPI installed."
        )
    if name in (Backend.UCC, Backend.XCCL, Backend.FAKE):
        raise RuntimeError(f"Distributed package doesn't have {name.upper()} built in")
    return name


def _env(name: str, scheme: str) -> str:
    value = os.environ.get(name)
    if value is None:
        raise ValueError(
            f"Error initializing torch.distributed using {scheme} rendezvous: environment "
            f"variable {name} expected, but not set"
        )
    return value


def _rendezvous(init_method: str, rank: int, world_size: int, timeout: timedelta):
    """Return ``(store, rank, world_size)`` for ``init_method`` (``env://``, ``tcp://`` or
    ``file://``)."""
    url = urlparse(init_method)
    if url.scheme == "env":
        if rank == -1:
            rank = int(_env("RANK", "env://"))
        if world_size == -1:
            world_size = int(_env("WORLD_SIZE", "env://"))
        host = _env("MASTER_ADDR", "env://")
        port = int(_env("MASTER_PORT", "env://"))
    elif url.scheme == "tcp":
        query = {k: v[-1] for k, v in parse_qs(url.query).items()}
        if rank == -1 and "rank" in query:
            rank = int(query["rank"])
        if world_size == -1 and "world_size" in query:
            world_size = int(query["world_size"])
        if rank == -1:
            raise ValueError(
                "Error initializing torch.distributed using tcp:// rendezvous: rank parameter "
                "missing"
            )
        if world_size == -1:
            raise ValueError(
                "Error initializing torch.distributed using tcp:// rendezvous: world size "
                "parameter missing"
            )
        if not url.hostname or url.port is None:
            raise ValueError(f"port number missing: {init_method}")
        host, port = url.hostname, url.port
    elif url.scheme == "file":
        query = {k: v[-1] for k, v in parse_qs(url.query).items()}
        rank = int(query.get("rank", rank))
        world_size = int(query.get("world_size", world_size))
        for value, name in ((rank, "rank"), (world_size, "world size")):
            if value == -1:
                raise ValueError(
                    f"Error initializing torch.distributed using file:// rendezvous: {name} "
                    "parameter missing"
                )
        store = FileStore(url.path, world_size)
        store.set_timeout(timeout)
        return store, rank, world_size
    else:
        raise RuntimeError(f"No rendezvous handler for {url.scheme}://")
    store = TCPStore(host, port, world_size, rank == 0, timeout)
    return store, rank, world_size


def init_process_group(
    backend: str | None = None,
    init_method: str | None = None,
    timeout: timedelta | None = None,
    world_size: int = -1,
    rank: int = -1,
    store: Store | None = None,
    group_name: str = "",
    pg_options=None,
    device_id=None,
) -> None:
    """Initialize the default process group: rendezvous through ``init_method`` (default
    ``"env://"``: ``MASTER_ADDR``, ``MASTER_PORT``, ``RANK``, ``WORLD_SIZE``), ``"tcp://host:port"``
    ``"file:///path"`` or a given ``store``, then connect every pair of ranks."""
    if _world.default_pg is not None:
        raise ValueError("trying to initialize the default process group twice!")
    if timeout is not None and not isinstance(timeout, timedelta):
        raise TypeError(
            f"Expected timeout argument to be of type datetime.timedelta, got {timeout}"
        )
    if store is not None and init_method is not None:
        raise AssertionError("Cannot specify both init_method and store.")
    if str(backend).lower() == Backend.MPI:
        _check_backend(backend)  # MPI needs no rendezvous: torch fails before it
    timeout = default_pg_timeout if timeout is None else timeout
    if _use_mpi(backend, store, init_method):
        _init_mpi(_check_backend(backend), world_size, rank, timeout)
        return
    own_store = store is None
    if store is not None:
        if not world_size > 0:
            raise AssertionError("world_size must be positive if using store")
        if not rank >= 0:
            raise AssertionError("rank must be non-negative if using store")
    else:
        store, rank, world_size = _rendezvous(
            "env://" if init_method is None else init_method, rank, world_size, timeout
        )
    try:
        name = _check_backend(backend)  # after the rendezvous, as torch
    except Exception:
        if own_store:
            store.close()
        raise
    if not 0 <= rank < world_size:
        raise ValueError(f"Invalid rank {rank} for world size {world_size}")
    _world.generation += 1
    prefix = PrefixStore(f"ember_default_pg/{_world.generation}", store)
    if hasattr(store, "local_address"):
        prefix.local_address = store.local_address
    mesh = Mesh(prefix, rank, world_size, timeout.total_seconds())
    _world.store = store if own_store else None
    _world.next_gid = 1
    _world.pg_count += 1
    _world.default_pg = ProcessGroup(
        mesh, list(range(world_size)), 0, name, timeout.total_seconds()
    )


def _use_mpi(backend, store, init_method) -> bool:
    """Whether to run on MPI: ``backend="mpi"``, or "gloo"/default under an MPI launch
    (unless a store or a non-``env://`` init method asks for the local transport)."""
    from ember.distributed import _mpi

    name = Backend.UNDEFINED if backend is None else str(backend).lower()
    if name == Backend.MPI:
        return True
    return (
        name in (Backend.GLOO, Backend.UNDEFINED, "cpu:gloo")
        and store is None
        and init_method in (None, "env://")
        and _mpi.launched()
    )


def _init_mpi(name: str, world_size: int, rank: int, timeout: timedelta) -> None:
    import warnings

    from ember.distributed import _mpi

    comm = _mpi.world_comm()
    if name == Backend.MPI and (world_size != -1 or rank != -1):
        warnings.warn(
            f"For MPI backend, world_size ({world_size}) and rank ({rank}) are ignored since "
            "they are assigned by the MPI runtime.",
            stacklevel=3,
        )
    _world.generation += 1
    _world.next_gid = 1
    _world.pg_count += 1
    _world.default_pg = ProcessGroup(
        None, list(range(comm.size)), 0, name, timeout.total_seconds(), comm, comm.rank
    )


def new_group(
    ranks=None,
    timeout: timedelta | None = None,
    backend=None,
    pg_options=None,
    use_local_synchronization: bool = False,
    group_desc=None,
    device_id=None,
):
    """Return a process group of the global ``ranks`` (default: all); every process of the
    world must call it, in the same order. A process outside ``ranks`` gets
    ``GroupMember.NON_GROUP_MEMBER``."""
    world = _default_pg()
    gid = _world.next_gid
    _world.next_gid += 1
    _world.pg_count += 1
    ranks = list(range(world.size())) if ranks is None else sorted(int(r) for r in ranks)
    for r in ranks:
        if not 0 <= r < world.size():
            raise ValueError(
                "The new group's rank should be within the world_size set by init_process_group"
            )
    comm = None
    if world._comm is not None:  # collective over the world: MPI_COMM_NULL outside ``ranks``
        comm = world._comm.Create(world._comm.group.Incl(ranks))
    if world._global_rank not in ranks:
        return GroupMember.NON_GROUP_MEMBER
    seconds = world._timeout if timeout is None else timeout.total_seconds()
    backend_name = world._backend if backend is None else _check_backend(backend)
    return ProcessGroup(world._mesh, ranks, gid, backend_name, seconds, comm, world._global_rank)


def destroy_process_group(group: ProcessGroup | None = None) -> None:
    """Destroy ``group``; with None (or ``group.WORLD``) the default group and every other."""
    if _world.default_pg is None:
        raise AssertionError("Process group cannot be None")
    if group is not None and group is not _world.default_pg:
        return  # subgroups share the world's connections: nothing of their own to close
    pg = _world.default_pg
    for pool in _world.executors:
        pool.shutdown(wait=True)
    _world.executors = []
    if pg._mesh is not None:
        pg._mesh.close()
    if pg._comm is not None:
        from ember.distributed import _mpi

        _mpi.close_lanes()
        pg._comm.Free()
    _world.default_pg = None
    store, _world.store = _world.store, None
    if isinstance(store, (TCPStore, FileStore)):
        store.close()  # every rank read what it needed from it before the mesh was complete

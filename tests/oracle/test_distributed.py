"""``ember.distributed``, ``ember.multiprocessing.spawn`` and ``DistributedDataParallel``
against torch's (gloo on CPU), within one process: errors, a world of one, the stores, the
transport between threads, and spawn's error reports. The multi-process runs are in
``test_distributed_multiprocess.py``.
"""

from __future__ import annotations

import datetime
import importlib.util
import os
import pickle
import socket
import time

import numpy as np
import pytest

import ember
import ember.distributed as edist
import ember.multiprocessing as emp
from tests.oracle import test_distributed_workers as workers

torch = pytest.importorskip("torch")
tdist = pytest.importorskip("torch.distributed")
if not tdist.is_available() or not tdist.is_gloo_available():
    pytest.skip("torch.distributed with gloo is needed as the oracle", allow_module_level=True)


def free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


# ----------------------------------------------------------------------------- spawn
def test_spawn_runs_fn_in_new_interpreters(tmp_path):
    assert emp.spawn(workers.touch, args=(str(tmp_path), "hi"), nprocs=2) is None
    assert [(tmp_path / f"{r}.txt").read_text() for r in range(2)] == ["hi spawn"] * 2


def test_spawn_reports_a_raised_exception():
    with pytest.raises(emp.ProcessRaisedException) as info:
        emp.start_processes(workers.fail, args=(0,), nprocs=2, start_method="fork")
    err = info.value
    assert err.error_index == 1 and isinstance(err.error_pid, int)
    assert str(err).startswith("\n\n-- Process 1 terminated with the following error:\n")
    assert "ValueError: rank 1 failed on purpose" in str(err)


def test_spawn_reports_an_exit_code():
    with pytest.raises(emp.ProcessExitedException, match="process 1 terminated with exit code 3"):
        emp.start_processes(workers.fail, args=(3,), nprocs=2, start_method="fork")


def test_spawn_join_false_returns_context():
    ctx = emp.start_processes(workers.fail, args=(0,), nprocs=1, join=False, start_method="fork")
    assert isinstance(ctx, emp.ProcessContext) and len(ctx.pids()) == 1
    while not ctx.join():
        pass
    assert ctx.join() is True
    assert torch.multiprocessing.ProcessRaisedException.__mro__[1].__name__ == "ProcessException"
    assert emp.ProcessRaisedException.__mro__[1].__name__ == "ProcessException"


# ------------------------------------------------------------------- in one process
def same_error(fn_e, fn_t, message=True):
    with pytest.raises(Exception) as t:
        fn_t()
    with pytest.raises(Exception) as e:
        fn_e()
    assert type(e.value).__name__ == type(t.value).__name__, (e.value, t.value)
    if message:
        assert str(e.value) == str(t.value)


@pytest.mark.parametrize(
    "call",
    [
        lambda d, lib: d.all_reduce(lib.ones(2)),
        lambda d, lib: d.broadcast(lib.ones(2), src=0),
        lambda d, lib: d.get_rank(),
        lambda d, lib: d.get_world_size(),
        lambda d, lib: d.get_backend(),
        lambda d, lib: d.barrier(),
        lambda d, lib: d.new_group([0]),
        lambda d, lib: d.all_gather_object([None], 1),
        lambda d, lib: d.destroy_process_group(),
    ],
)
def test_errors_before_init(call):
    assert not edist.is_initialized()
    same_error(lambda: call(edist, ember), lambda: call(tdist, torch))


# argument types are checked before the process group is looked up: bad tensors and lists
@pytest.mark.parametrize(
    "call",
    [
        lambda d, lib: d.all_reduce("x"),
        lambda d, lib: d.all_reduce_coalesced([lib.ones(1), 2]),
        lambda d, lib: d.broadcast(3, src=0),
        lambda d, lib: d.reduce([lib.ones(1)], dst=0),
        lambda d, lib: d.all_gather([lib.ones(1), 3], lib.ones(1)),
        lambda d, lib: d.all_gather((lib.ones(1),), lib.ones(1)),
        lambda d, lib: d.all_gather([lib.ones(1)], None),
        lambda d, lib: d.all_gather_into_tensor(lib.ones(1), 2),
        lambda d, lib: d.all_gather_into_tensor(2, lib.ones(1)),
        lambda d, lib: d.gather(1.0),
        lambda d, lib: d.scatter(lib.ones(1), [1]),
        lambda d, lib: d.reduce_scatter(lib.ones(1), [lib.ones(1), "a"]),
        lambda d, lib: d.reduce_scatter_tensor(lib.ones(1), [1]),
        lambda d, lib: d.all_to_all([lib.ones(1)], [1]),
        lambda d, lib: d.all_to_all({}, [lib.ones(1)]),
        lambda d, lib: d.all_to_all_single(lib.ones(1), 5),
        lambda d, lib: d.isend(7, dst=0),
        lambda d, lib: d.send(7, dst=0),
        lambda d, lib: d.irecv([1], src=0),
        lambda d, lib: d.recv(7, src=0),
        lambda d, lib: d.P2POp(d.isend, 7, 0),
    ],
)
def test_argument_type_errors(call):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        with pytest.raises(Exception) as t:
            call(tdist, torch)
        with pytest.raises(Exception) as e:
            call(edist, ember)
    assert type(e.value).__name__ == type(t.value).__name__
    assert str(e.value).replace(repr(ember.Tensor), repr(torch.Tensor)) == str(t.value)


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(backend="gloo"),  # env:// without RANK
        dict(backend="foo", rank=0, world_size=1),
        dict(backend="nccl", rank=0, world_size=1),
        # (backend="mpi": ember has an MPI backend where torch's build has none, see
        # tests/test_distributed_mpi.py)
        dict(backend="gloo", init_method="tcp://127.0.0.1:1", world_size=1),
        dict(backend="gloo", store=object(), rank=0, world_size=0),
        dict(backend="gloo", timeout=5),
    ],
)
def test_init_errors(kwargs, monkeypatch):
    for var in ["RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"]:
        monkeypatch.delenv(var, raising=False)
    same_error(
        lambda: edist.init_process_group(**kwargs), lambda: tdist.init_process_group(**kwargs)
    )
    assert not edist.is_initialized()


def test_env_vars_missing_one_by_one(monkeypatch):
    monkeypatch.setenv("RANK", "0")
    for var, value in [("WORLD_SIZE", "1"), ("MASTER_ADDR", "127.0.0.1")]:
        same_error(
            lambda: edist.init_process_group("gloo"), lambda: tdist.init_process_group("gloo")
        )
        monkeypatch.setenv(var, value)
    same_error(lambda: edist.init_process_group("gloo"), lambda: tdist.init_process_group("gloo"))


def test_names_as_torch():
    assert edist.is_available() and edist.is_gloo_available()
    assert edist.is_nccl_available() == tdist.is_nccl_available()
    # ember's MPI backend runs on mpi4py (torch's build has no MPI): a deliberate difference
    assert edist.is_mpi_available() == (importlib.util.find_spec("mpi4py") is not None)
    for name in ["SUM", "AVG", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR", "PREMUL_SUM"]:
        e, t = getattr(edist.ReduceOp, name), getattr(tdist.ReduceOp, name)
        assert str(e) == str(t) and repr(e) == repr(t)
        assert e.value == t.value
    for name in ["GLOO", "Gloo", "nccl", "custom"]:
        assert edist.Backend(name) == tdist.Backend(name)
    assert edist.Backend.GLOO == "gloo" and edist.Backend.UNDEFINED == tdist.Backend.UNDEFINED
    assert edist.GroupMember.NON_GROUP_MEMBER == tdist.GroupMember.NON_GROUP_MEMBER
    assert edist.group.WORLD is None and edist.default_pg_timeout == tdist.default_pg_timeout
    for name in ["gloo", "GLOO", "nccl", "foo"]:
        assert edist.is_backend_available(name) == tdist.is_backend_available(name)
    assert edist.is_backend_available("mpi") == edist.is_mpi_available()
    assert edist.is_xccl_available() == tdist.is_xccl_available()
    for dev in ["cpu", "cuda", ember.device("cpu")]:
        t_dev = torch.device(str(dev)) if not isinstance(dev, str) else dev
        assert edist.get_default_backend_for_device(dev) == tdist.get_default_backend_for_device(
            t_dev
        )
    assert isinstance(edist.get_pg_count(), int)
    for cls in ["DistError", "DistBackendError", "DistNetworkError", "DistStoreError"]:
        e_mro = [c.__name__ for c in getattr(edist, cls).__mro__]
        t_mro = [c.__name__ for c in getattr(tdist, cls).__mro__]
        assert e_mro == t_mro


@pytest.fixture
def world_of_one():
    """A one-process default group in ember and in torch."""
    for d in (edist, tdist):
        d.init_process_group(
            "gloo", init_method=f"tcp://127.0.0.1:{free_port()}", rank=0, world_size=1
        )
    yield
    for d in (edist, tdist):
        d.destroy_process_group()


def test_world_of_one(world_of_one):
    for d in (edist, tdist):
        assert d.is_initialized() and d.get_rank() == 0 and d.get_world_size() == 1
        assert d.get_backend() == "gloo" and d.group.WORLD is d.GroupMember.WORLD
        assert d.get_process_group_ranks(d.group.WORLD) == [0]
        assert d.get_global_rank(d.group.WORLD, 0) == 0
        assert d.get_backend_config() == "cpu:gloo,cuda:gloo"
        n = d.get_pg_count()
        d.new_group([0])
        assert d.get_pg_count() == n + 1
        assert d.group.WORLD.rank() == 0 and d.group.WORLD.size() == 1
    for lib, d in ((ember, edist), (torch, tdist)):
        t = lib.arange(4.0)
        assert d.all_reduce(t) is None and t._version == 0
        assert d.all_reduce(t, op=d.ReduceOp.AVG) is None
        assert t.tolist() == [0.0, 1.0, 2.0, 3.0] and t._version == 1  # torch divides in place
        w = d.broadcast(t, src=0, async_op=True)
        assert w.wait() is True and w.is_completed() and w.is_success()
        lst = [lib.zeros(4)]
        d.all_gather(lst, t)
        assert lst[0].tolist() == t.tolist()
        objs = [None]
        d.all_gather_object(objs, {"k": (1, "v")})
        assert objs == [{"k": (1, "v")}]
        assert d.barrier() is None
    same_error(
        lambda: edist.init_process_group("gloo", rank=0, world_size=1),
        lambda: tdist.init_process_group("gloo", rank=0, world_size=1),
    )
    for call in [
        lambda d, lib: d.broadcast(lib.ones(2), src=3),
        lambda d, lib: d.send(lib.ones(2), dst=0),
        lambda d, lib: d.gather(lib.ones(2), None, dst=0),
        lambda d, lib: d.scatter(lib.ones(2), None, src=0),
        lambda d, lib: d.all_gather([lib.ones(2), lib.ones(2)], lib.ones(2)),
        lambda d, lib: d.all_gather([lib.ones(3)], lib.ones(2)),
        lambda d, lib: d.all_reduce(lib.ones(2), op=d.ReduceOp.BXOR),
        lambda d, lib: d.all_reduce(lib.ones(2, dtype=lib.int64), op=d.ReduceOp.AVG),
        lambda d, lib: d.all_reduce("x"),
        lambda d, lib: d.broadcast(lib.ones(2)),
        lambda d, lib: d.reduce(lib.ones(2)),
        lambda d, lib: d.send(lib.ones(2)),
        lambda d, lib: d.send(lib.ones(2), dst=0, group_dst=0),
        lambda d, lib: d.broadcast_object_list([1], src=0, group_src=0),
    ]:
        same_error(lambda call=call: call(edist, ember), lambda call=call: call(tdist, torch))
    same_error(
        lambda: edist.all_reduce(ember.ones(2), op=edist.ReduceOp.PREMUL_SUM),
        lambda: tdist.all_reduce(torch.ones(2), op=tdist.ReduceOp.PREMUL_SUM),
        message=False,
    )
    for d, lib in ((edist, ember), (tdist, torch)):  # gather and scatter default to rank 0
        d.gather(lib.ones(2), [lib.zeros(2)])
        objs = [None]
        d.broadcast_object_list(objs)
        assert objs == [None]


def test_ddp_and_data_parallel_in_one_process(world_of_one):
    for lib in (ember, torch):
        lib.manual_seed(0)
        model = lib.nn.Sequential(lib.nn.Linear(3, 2), lib.nn.BatchNorm1d(2))
        ddp = lib.nn.parallel.DistributedDataParallel(model)
        assert ddp.module is model
        assert list(ddp.state_dict()) == ["module." + k for k in model.state_dict()]
        dp = lib.nn.DataParallel(model)
        assert dp.module is model and list(dp.state_dict()) == list(ddp.state_dict())
        x = lib.ones(4, 3)
        assert lib.equal(ddp(x), model(x)) and lib.equal(dp(x), model(x))
        ddp(x).sum().backward()
        assert model[0].weight.grad is not None
        clone = pickle.loads(pickle.dumps(ddp))
        assert list(clone.state_dict()) == list(ddp.state_dict())
        clone(x).sum().backward()
        assert clone.module[0].weight.grad is not None
        lib.nn.parallel.DistributedDataParallel(lib.nn.Linear(2, 2), output_device=0)
    for make in [
        lambda lib: lib.nn.parallel.DistributedDataParallel(lib.nn.ReLU()),
        lambda lib: lib.nn.parallel.DistributedDataParallel(lib.nn.Linear(2, 2), device_ids=[0]),
        lambda lib: lib.nn.parallel.DistributedDataParallel(lib.nn.Linear(2, 2)).weight,
    ]:
        same_error(lambda make=make: make(ember), lambda make=make: make(torch))


# ------------------------------------------------------------------------ data loading
def test_sampler_uses_the_default_group(world_of_one):
    from ember.utils.data.distributed import DistributedSampler

    assert list(DistributedSampler(range(5), shuffle=False)) == list(range(5))
    assert os.environ.get("RANK") is None


# ------------------------------------------------- two ranks as threads of this process
def run_two_ranks(fn):
    """Run ``fn(rank, group)`` on two ranks (threads, each with its own connections and an
    explicit process group); return their results."""
    import threading

    from ember.distributed._mesh import Mesh
    from ember.distributed.distributed_c10d import ProcessGroup

    store = edist.HashStore()
    results, errors = [None, None], []

    def rank_main(rank):
        try:
            mesh = Mesh(store, rank, 2, 10.0)
            try:
                results[rank] = fn(rank, ProcessGroup(mesh, [0, 1], 99, "gloo", 10.0))
            finally:
                mesh.close()
        except BaseException as e:  # re-raised in the test
            errors.append(e)

    threads = [threading.Thread(target=rank_main, args=(r,), daemon=True) for r in range(2)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(30)
    assert not any(th.is_alive() for th in threads), "a rank hung"
    if errors:
        raise errors[0]
    return results


DTYPES = ["float32", "float64", "float16", "bfloat16", "int64", "int32", "uint8", "complex64"]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(), (0, 3), (2, 3)])
def test_collectives_over_dtypes_and_shapes(dtype, shape):
    dt = getattr(ember, dtype)

    def fn(rank, group):
        base = ember.arange(int(np.prod(shape)) or 0).reshape(shape) + 1
        t = (base * (rank + 1)).to(dt)
        edist.all_reduce(t, group=group)
        b = (base * (rank + 2)).to(dt)
        edist.broadcast(b, group=group, group_src=1)
        lst = [ember.zeros(shape, dtype=dt) for _ in range(2)]
        edist.all_gather(lst, (base + rank).to(dt), group=group)
        return t, b, lst

    (t0, b0, l0), (t1, b1, l1) = run_two_ranks(fn)
    base = ember.arange(int(np.prod(shape)) or 0).reshape(shape) + 1
    for t in (t0, t1):
        assert t.dtype == dt and t.shape == base.shape
        assert ember.equal(t, (base * 3).to(dt))
    for b in (b0, b1):
        assert ember.equal(b, (base * 3).to(dt))
    for lst in (l0, l1):
        assert ember.equal(lst[0], base.to(dt)) and ember.equal(lst[1], (base + 1).to(dt))


def test_mismatched_sizes_raise():
    def fn(rank, group):
        # the first rank, which reduces, sees the mismatch; the other sees it leave
        match = "shapes or dtypes differ between ranks" if rank == 0 else "Connection closed"
        with pytest.raises(RuntimeError, match=match):
            edist.all_reduce(ember.ones(2 + rank), group=group)
        return True

    assert run_two_ranks(fn) == [True, True]


def test_barrier_timeout_and_async_errors():
    def fn(rank, group):
        if rank == 0:
            with pytest.raises(RuntimeError, match="^Timed out waiting 100ms for recv operation"):
                edist.barrier(group=group, timeout=datetime.timedelta(seconds=0.1))
            work = edist.all_reduce(ember.ones(3), group=group, async_op=True)
            with pytest.raises(RuntimeError, match="shapes or dtypes differ"):
                work.wait()
            assert work.is_completed() and not work.is_success()
            assert isinstance(work.exception(), RuntimeError)
        else:
            time.sleep(0.3)  # late: rank 0 gave up; so does this rank, waiting for its answer
            with pytest.raises(RuntimeError, match="^Timed out waiting 200ms for recv operation"):
                edist.barrier(group=group, timeout=datetime.timedelta(seconds=0.2))
            with pytest.raises(RuntimeError):  # a mismatch with rank 0's all_reduce
                edist.all_reduce(ember.ones(4), group=group)
        return True

    assert run_two_ranks(fn) == [True, True]


def test_ddp_mixed_dtypes_equals_full_batch():
    """Parameters of two dtypes: one flat all_reduce each; DDP over two shards equals one
    process on the whole batch."""
    rng = np.random.default_rng(1)
    x_all = rng.standard_normal((6, 3))
    init = [rng.standard_normal(s) for s in [(4, 3), (4,), (2, 4), (2,)]]

    class Mixed(ember.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = ember.nn.Linear(3, 4).double()
            self.b = ember.nn.Linear(4, 2)

        def forward(self, x):
            return self.b(self.a(x).float())

    def make():
        m = Mixed()
        with ember.no_grad():
            for p, a in zip(m.parameters(), init, strict=True):
                p.copy_(ember.from_numpy(a))
        return m

    def loss(m, x):
        return m(x).pow(2).mean()

    def fn(rank, group):
        m = make()
        ddp = ember.nn.parallel.DistributedDataParallel(m, process_group=group)
        opt = ember.optim.SGD(ddp.parameters(), lr=0.1)
        for _ in range(2):
            opt.zero_grad()
            loss(ddp, ember.from_numpy(x_all[rank * 3 : rank * 3 + 3])).backward()
            opt.step()
        return [p.detach().numpy().copy() for p in m.parameters()]

    got = run_two_ranks(fn)
    ref = make()
    opt = ember.optim.SGD(ref.parameters(), lr=0.1)
    for _ in range(2):
        opt.zero_grad()
        loss(ref, ember.from_numpy(x_all)).backward()
        opt.step()
    for ps in got:
        for a, p in zip(ps, ref.parameters(), strict=True):
            assert a.dtype == p.detach().numpy().dtype
            np.testing.assert_allclose(a, p.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_default_backend_answers_as_torch():
    seen = []
    for d in (edist, tdist):
        d.init_process_group(init_method=f"tcp://127.0.0.1:{free_port()}", rank=0, world_size=1)
        try:
            seen.append((str(d.get_backend()), d.get_backend_config(), d.get_world_size()))
            t = (ember if d is edist else torch).ones(2)
            d.all_reduce(t)
        finally:
            d.destroy_process_group()
    assert seen[0] == seen[1]

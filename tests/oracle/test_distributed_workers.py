"""Worker processes for ``test_distributed.py``: the same program run with ``lib=torch`` and
``lib=ember`` in two spawned processes each; every rank pickles what it observed (arrays,
values, exceptions as ``(class name, message)``) for the parent to compare.

No test here (pytest collects nothing): the spawned children import this module, which
imports neither torch nor ember until told which one to use.
"""

from __future__ import annotations

import datetime
import importlib
import os
import pickle

import numpy as np


def _np(t):
    return t.detach().numpy().copy()


def _err(fn):
    try:
        fn()
    except Exception as e:  # recorded for the parent to compare
        return (type(e).__name__, str(e))
    return None


def collectives(rank: int, lib, dist, world: int) -> dict:
    """Every collective on small tensors; return {name: observed}."""
    out = {}
    for op in ["SUM", "PRODUCT", "MIN", "MAX", "AVG"]:
        t = lib.tensor([1.0, -2.0, 3.5]) * (rank + 1) + rank
        dist.all_reduce(t, op=getattr(dist.ReduceOp, op))
        out[f"all_reduce_{op}"] = _np(t)
    for op in ["SUM", "BAND", "BOR", "BXOR", "MAX"]:
        t = lib.tensor([6, 5, 12]) + rank * 3
        dist.all_reduce(t, op=getattr(dist.ReduceOp, op))
        out[f"all_reduce_int_{op}"] = _np(t)
    t = lib.arange(6.0).reshape(2, 3).t() * (rank + 1)  # non-contiguous
    v = t._version
    dist.all_reduce(t)
    out["all_reduce_noncontig"] = (_np(t), t._version - v, t.stride())
    t = lib.tensor([True, False]) if rank == 0 else lib.tensor([False, False])
    dist.all_reduce(t)
    out["all_reduce_bool"] = _np(t)
    t = lib.ones(2, 2, dtype=lib.float64) * (rank + 1)
    w = dist.all_reduce(t, async_op=True)
    out["async"] = (w.wait(), w.is_completed(), _np(t))
    out["err_avg_int"] = _err(lambda: dist.all_reduce(lib.tensor([1, 2]), op=dist.ReduceOp.AVG))
    out["err_band_float"] = _err(lambda: dist.all_reduce(lib.ones(2), op=dist.ReduceOp.BAND))
    out["err_not_tensor"] = _err(lambda: dist.all_reduce([1.0]))

    t = lib.tensor([rank * 10.0, 1.0])
    dist.broadcast(t, src=1)
    out["broadcast"] = _np(t)
    t = lib.tensor([rank + 1.0, 2.0])
    dist.reduce(t, dst=0, op=dist.ReduceOp.PRODUCT)
    out["reduce_dst0"] = _np(t) if rank == 0 else None
    lst = [lib.zeros(3) for _ in range(world)]
    dist.all_gather(lst, lib.arange(3.0) + rank)
    out["all_gather"] = [_np(x) for x in lst]
    out["err_all_gather_len"] = _err(lambda: dist.all_gather([lib.zeros(3)], lib.zeros(3)))
    out["err_all_gather_size"] = _err(
        lambda: dist.all_gather([lib.zeros(3), lib.zeros(2)], lib.zeros(3))
    )
    o = lib.zeros(world * 2)
    dist.all_gather_into_tensor(o, lib.tensor([rank, rank + 0.5]))
    out["all_gather_into_tensor"] = _np(o)
    g = [lib.zeros(2) for _ in range(world)] if rank == 0 else None
    dist.gather(lib.tensor([rank, -rank]).float(), g, dst=0)
    out["gather"] = [_np(x) for x in g] if rank == 0 else None
    bad = None if rank == 0 else [lib.zeros(2)]
    out["err_gather_list"] = _err(lambda: dist.gather(lib.zeros(2), bad, dst=0))
    t = lib.zeros(2)
    src_list = [lib.tensor([10.0 * r, 1.0]) for r in range(world)] if rank == 1 else None
    dist.scatter(t, src_list, src=1)
    out["scatter"] = _np(t)
    t = lib.zeros(2)
    dist.reduce_scatter(t, [lib.tensor([r + rank, 1.0]) for r in range(world)])
    out["reduce_scatter"] = _np(t)
    t = lib.zeros(2)
    dist.reduce_scatter_tensor(t, lib.arange(2.0 * world) * (rank + 1), op=dist.ReduceOp.MAX)
    out["reduce_scatter_tensor"] = _np(t)
    outs = [lib.zeros(2, dtype=lib.int64) for _ in range(world)]
    dist.all_to_all(outs, [lib.tensor([rank, r]) for r in range(world)])
    out["all_to_all"] = [_np(x) for x in outs]
    o = lib.zeros(world, dtype=lib.int64)
    dist.all_to_all_single(o, lib.arange(world) + 10 * rank)
    out["all_to_all_single"] = _np(o)
    out["barrier"] = dist.barrier()

    # point to point
    if rank == 0:
        dist.send(lib.arange(4.0), dst=1, tag=3)
        dist.send(lib.arange(4.0) * 2, dst=1)
        x = lib.zeros(2, dtype=lib.int32)
        w = dist.irecv(x, src=1)
        out["irecv"] = (w.wait(), _np(x))
        out["err_send_self"] = _err(lambda: dist.send(lib.ones(1), dst=0))
    else:
        y = lib.zeros(4)
        z = lib.zeros(4)
        dist.recv(y, src=0, tag=3)
        src = dist.recv(z)  # any source
        out["recv"] = (src, _np(y), _np(z))
        w = dist.isend(lib.tensor([7, 8], dtype=lib.int32), dst=0)
        out["isend"] = w.wait()

    # a pending receive does not hold up a later asynchronous collective
    t = lib.ones(2) * (rank + 1)
    if rank == 0:
        x = lib.zeros(3)
        w1 = dist.irecv(x, src=1, tag=5)
        w2 = dist.all_reduce(t, async_op=True)
        w2.wait()
        out["irecv_then_async"] = (w1.wait(), _np(x), _np(t))
    else:
        dist.all_reduce(t)
        dist.send(lib.arange(3.0), dst=0, tag=5)
        out["irecv_then_async"] = _np(t)
    o = lib.zeros(world)
    dist.all_gather_single(o, lib.tensor([rank * 1.5]))
    out["all_gather_single"] = _np(o)

    ts = [lib.ones(2) * (rank + 1), lib.tensor([rank, 3.0])]
    dist.all_reduce_coalesced(ts, op=dist.ReduceOp.MAX)
    out["all_reduce_coalesced"] = [_np(t) for t in ts]
    out["err_coalesced_dtypes"] = _err(
        lambda: dist.all_reduce_coalesced([lib.ones(2), lib.tensor([rank, 3])])
    )
    if rank == 0:
        dist.send_object_list([{"a": 1}, "b", 3], dst=1)
    else:
        got = [None, None, None]
        out["recv_object_list"] = (dist.recv_object_list(got, src=0), got)

    objs = [None] * world
    dist.all_gather_object(objs, {"rank": rank, "s": "x" * rank})
    out["all_gather_object"] = objs
    lst = ["a", rank] if rank == 0 else [None, None]
    dist.broadcast_object_list(lst, src=0)
    out["broadcast_object_list"] = lst
    got = [None] * world if rank == 0 else None
    dist.gather_object((rank, [rank] * 2), got, dst=0)
    out["gather_object"] = got
    one = [None]
    dist.scatter_object_list(one, [{"to": r} for r in range(world)] if rank == 0 else None, src=0)
    out["scatter_object_list"] = one

    sub = dist.new_group([1])
    t = lib.ones(1) * (rank + 1)
    out["subgroup"] = (
        dist.all_reduce(t, group=sub),  # rank 0 is not a member: nothing happens
        dist.get_rank(sub),
        dist.get_world_size(sub),
        _np(t),
        sub == dist.GroupMember.NON_GROUP_MEMBER,
    )

    # batched point-to-point: a ring
    send = lib.arange(3.0) + 10 * rank
    got = lib.zeros(3)
    ops = [
        dist.P2POp(dist.isend, send, (rank + 1) % world),
        dist.P2POp(dist.irecv, got, (rank - 1) % world),
    ]
    works = dist.batch_isend_irecv(ops)
    out["batch_isend_irecv"] = ([w.wait() for w in works], _np(got))
    out["err_p2pop"] = _err(lambda: dist.P2POp(dist.all_reduce, send, 0))
    out["monitored_barrier"] = dist.monitored_barrier(timeout=datetime.timedelta(seconds=10))
    out["world"] = (dist.get_rank(), dist.get_world_size(), str(dist.get_backend()))
    out["initialized"] = dist.is_initialized()
    return out


def _net(lib, nn):
    lib.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.Tanh(), nn.Linear(8, 2))


class _TwoHeads:
    """Builds a module with a head used only on rank 1 (for find_unused_parameters)."""

    @staticmethod
    def make(lib, nn):
        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.a = nn.Linear(3, 2)
                self.b = nn.Linear(3, 2)
                self.c = nn.Linear(3, 2)  # used by nobody

            def forward(self, x, use_b):
                return self.a(x) + (self.b(x) if use_b else 0)

        return M()


def _load(module, arrays, lib):
    with lib.no_grad():
        for p, a in zip(module.parameters(), arrays, strict=True):
            p.copy_(lib.from_numpy(a))


def ddp(rank: int, lib, dist, world: int) -> dict:
    """DDP training against single-process training on the full batch; return observations."""
    nn = lib.nn
    DDP = nn.parallel.DistributedDataParallel
    out = {}
    rng = np.random.default_rng(0)
    x_all = rng.standard_normal((8, 4)).astype(np.float32)
    y_all = rng.standard_normal((8, 2)).astype(np.float32)
    init = [rng.standard_normal(p.shape).astype(np.float32) for p in _net(lib, nn).parameters()]

    model = _net(lib, nn)
    _load(model, [a + rank for a in init], lib)  # rank 0's weights must win
    ddp_model = DDP(model)
    out["keys"] = list(ddp_model.state_dict())
    opt = lib.optim.SGD(ddp_model.parameters(), lr=0.1, momentum=0.9)
    ref = _net(lib, nn)
    _load(ref, init, lib)
    ref_opt = lib.optim.SGD(ref.parameters(), lr=0.1, momentum=0.9)
    shard = slice(rank * 8 // world, (rank + 1) * 8 // world)
    x, y = lib.from_numpy(x_all[shard]), lib.from_numpy(y_all[shard])
    for _ in range(3):
        opt.zero_grad()
        nn.functional.mse_loss(ddp_model(x), y).backward()
        opt.step()
        ref_opt.zero_grad()
        nn.functional.mse_loss(ref(lib.from_numpy(x_all)), lib.from_numpy(y_all)).backward()
        ref_opt.step()
    out["params"] = [_np(p) for p in model.parameters()]

    # without BatchNorm, DDP over the shards equals one process on the full batch
    lin, ref_lin = nn.Linear(4, 2), nn.Linear(4, 2)
    _load(lin, [init[0][:2], init[1][:2]], lib)
    _load(ref_lin, [init[0][:2], init[1][:2]], lib)
    d_lin = DDP(lin)
    opts = [lib.optim.Adam(m.parameters(), lr=0.05) for m in (d_lin, ref_lin)]
    for _ in range(3):
        for o in opts:
            o.zero_grad()
        nn.functional.mse_loss(d_lin(x), y).backward()
        nn.functional.mse_loss(ref_lin(lib.from_numpy(x_all)), lib.from_numpy(y_all)).backward()
        for o in opts:
            o.step()
    out["linear"] = ([_np(p) for p in lin.parameters()], [_np(p) for p in ref_lin.parameters()])
    out["ref_params"] = [_np(p) for p in ref.parameters()]
    out["buffers"] = [_np(b) for b in model.buffers()]

    # no_sync: two local backwards, then one synchronised; grads = mean of the accumulated sums
    m2 = nn.Linear(4, 2)
    _load(m2, [init[0][:2], init[1][:2]], lib)
    d2 = DDP(m2)
    with d2.no_sync():
        d2(x).sum().backward()
        out["no_sync_local"] = _np(m2.weight.grad)
    (d2(x) * 2).sum().backward()
    out["no_sync_after"] = _np(m2.weight.grad)

    # find_unused_parameters: head b used on rank 1 only, head c never
    m3 = _TwoHeads.make(lib, nn)
    _load(m3, [a[:2, :3] if a.ndim == 2 else a[:2] for a in init[:2]] * 3, lib)
    d3 = DDP(m3, find_unused_parameters=True)
    for _ in range(2):
        for p in m3.parameters():
            p.grad = None
        d3(lib.ones(2, 3) * (rank + 1), use_b=rank == 1).sum().backward()
    out["unused"] = [None if p.grad is None else _np(p.grad) for p in m3.parameters()]

    # static_graph: the parameters used (b on rank 1 only, c never) found in the first
    # iteration and taken as fixed; with and without find_unused_parameters
    for fu in (False, True):
        m8 = _TwoHeads.make(lib, nn)
        _load(m8, [a[:2, :3] if a.ndim == 2 else a[:2] for a in init[:2]] * 3, lib)
        d8 = DDP(m8, static_graph=True, find_unused_parameters=fu)
        grads = []
        for i in range(3):
            for p in m8.parameters():
                p.grad = None
            d8(lib.ones(2, 3) * (rank + 1 + i), use_b=rank == 1).sum().backward()
            grads.append([None if p.grad is None else _np(p.grad) for p in m8.parameters()])
        out[f"static_{fu}"] = grads

    # communication hooks: the default ones, and what a hook is given (rebuilt buckets)
    hooks = importlib.import_module(lib.__name__ + ".distributed.algorithms.ddp_comm_hooks")
    for name in ("allreduce_hook", "fp16_compress_hook", "bf16_compress_hook"):
        m9 = nn.Sequential(nn.Linear(4, 3), nn.Linear(3, 2))
        _load(m9, [init[0][:3], init[1][:3], init[0][:2, :3], init[1][:2]], lib)
        d9 = DDP(m9, bucket_cap_mb=0.00004)
        seen, chosen = [], getattr(hooks.default_hooks, name)

        def spy(state, bucket, hook=chosen, seen=seen):
            grads = [tuple(g.shape) for g in bucket.gradients()]
            seen.append((bucket.index(), bucket.is_last(), tuple(bucket.buffer().shape), grads))
            return hook(state, bucket)

        d9.register_comm_hook(None, spy)
        opt9 = lib.optim.SGD(d9.parameters(), lr=0.1)
        for i in range(3):
            opt9.zero_grad()
            nn.functional.mse_loss(d9(x * (i + 1)), y).backward()
            opt9.step()
        out[f"hook_{name}"] = ([_np(p) for p in m9.parameters()], seen[1:])

    # an unused parameter without find_unused_parameters: the next forward fails
    m4 = _TwoHeads.make(lib, nn)
    d4 = DDP(m4)
    d4(lib.ones(1, 3), use_b=True).sum().backward()
    out["no_unused_ok"] = _np(m4.a.weight.grad)
    err = _err(lambda: d4(lib.ones(1, 3), use_b=True))
    out["err_unfinished"] = None if err is None else (err[0], err[1][:120])

    # DDP over a subgroup (rank 1 alone): its first rank is the broadcast source
    sub = dist.new_group([1])
    out["ddp_subgroup"] = None
    if rank == 1:
        m5 = nn.Linear(2, 1)
        _load(m5, [init[0][:1, :2], init[1][:1]], lib)
        DDP(m5, process_group=sub)(lib.ones(3, 2)).sum().backward()
        out["ddp_subgroup"] = (_np(m5.weight), _np(m5.weight.grad))

    # uneven inputs: rank 0 has two batches, rank 1 three
    for divide in (True, False):
        m6 = nn.Sequential(nn.Linear(4, 3), nn.BatchNorm1d(3))
        _load(m6, [init[0][:3], init[1][:3], init[1][3:6] + 1, init[1][:3] * 0.5], lib)
        d6 = DDP(m6)
        opt6 = lib.optim.SGD(d6.parameters(), lr=0.1)
        with d6.join(divide_by_initial_world_size=divide):
            for i in range(2 + rank):
                opt6.zero_grad()
                nn.functional.mse_loss(d6(x * (i + 1))[:, :2], y).backward()
                opt6.step()
        out[f"join_{divide}"] = [_np(t) for t in list(m6.parameters()) + list(m6.buffers())]
    m7 = nn.Linear(4, 2)
    d7 = DDP(m7)
    errors = []
    try:
        with d7.join(throw_on_early_termination=True):
            for _ in range(1 + rank):
                d7(x).sum().backward()
    except RuntimeError as e:
        errors.append(str(e))
    out["join_throw"] = errors

    # DistributedSampler takes rank and world size from the default group
    sampler = lib.utils.data.distributed.DistributedSampler(range(10), shuffle=False)
    sampler.set_epoch(3)
    out["sampler"] = list(sampler)
    return out


def run(rank: int, libname: str, world: int, port: int, out_dir: str) -> None:
    """One rank: run the batteries and pickle ``{name: observed}`` to ``out_dir``."""
    lib = importlib.import_module(libname)
    dist = importlib.import_module(f"{libname}.distributed")
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group(
        "gloo", rank=rank, world_size=world, timeout=datetime.timedelta(seconds=20)
    )
    out = {"double_init": _err(lambda: dist.init_process_group("gloo", rank=rank, world_size=2))}
    out.update(collectives(rank, lib, dist, world))
    out.update(ddp(rank, lib, dist, world))
    dist.barrier()
    # last (a timeout breaks torch's pair): rank 0 waits for a message that never comes
    if rank == 0:
        err = _err(
            lambda: dist.recv(
                lib.zeros(1),
                src=1,
                tag=99,
                group=dist.new_group([0, 1], timeout=datetime.timedelta(seconds=0.2)),
            )
        )
    else:
        dist.new_group([0, 1], timeout=datetime.timedelta(seconds=0.2))
        err = None
    out["timeout"] = err
    if rank == 1:
        import time

        time.sleep(0.5)  # stay connected until rank 0 timed out
    dist.destroy_process_group()
    out["after_destroy"] = (dist.is_initialized(), _err(lambda: dist.get_rank()))
    with open(os.path.join(out_dir, f"{libname}_{rank}.pkl"), "wb") as fh:
        pickle.dump(out, fh)


def fail(rank: int, code: int) -> None:
    """Raise on rank 1 (``code == 0``) or exit with ``code``."""
    if rank == 1:
        if code:
            os._exit(code)
        raise ValueError("rank 1 failed on purpose")


def touch(rank: int, out_dir: str, text: str) -> None:
    """Write ``text`` and this process's start method to ``out_dir/<rank>.txt``."""
    import multiprocessing

    with open(os.path.join(out_dir, f"{rank}.txt"), "w") as fh:
        fh.write(f"{text} {multiprocessing.get_start_method()}")

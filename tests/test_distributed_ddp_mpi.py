"""DDP and ZeroRedundancyOptimizer on the MPI backend under ``mpiexec -n 2`` and ``-n 4``: the
parameters after k steps equal one process training on the joined batch (and ZeRO's equal
plain Adam's); the group's lane (or the progress thread) completes an asynchronous
all-reduce while the caller computes; mismatched all-gather sizes across ranks raise; a rank
that hangs outside a collective ends the job within the group's timeout. No torch needed."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
import time

import pytest

pytest.importorskip("mpi4py")
MPIEXEC = shutil.which(
    "mpiexec", path=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")
)
if MPIEXEC is None:
    pytest.skip("mpiexec is not installed (pip install mpich)", allow_module_level=True)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

WORKER = textwrap.dedent(
    """
    import os
    import time
    import numpy as np
    import ember
    import ember.distributed as dist
    from ember.distributed.optim import ZeroRedundancyOptimizer
    from ember.nn.parallel import DistributedDataParallel as DDP

    dist.init_process_group("mpi")
    r, n = dist.get_rank(), dist.get_world_size()
    X = np.random.default_rng(0).standard_normal((8, 16)).astype(np.float32)
    k = len(X) // n

    def model():
        ember.manual_seed(0)  # the same initial weights in every process and in the reference
        return ember.nn.Sequential(
            ember.nn.Linear(16, 64), ember.nn.Tanh(), ember.nn.Linear(64, 64),
            ember.nn.Linear(64, 1),
        )

    def train(m, opt, x, steps=3):
        for _ in range(steps):
            opt.zero_grad()
            m(ember.from_numpy(x)).pow(2).mean().backward()
            opt.step()
        return [p.detach().numpy().copy() for p in m.parameters()]

    ref = model()
    want = train(ref, ember.optim.SGD(ref.parameters(), lr=0.1), X)
    for view in (False, True):
        ddp = DDP(model(), bucket_cap_mb=0.01, gradient_as_bucket_view=view)
        got = train(ddp, ember.optim.SGD(ddp.parameters(), lr=0.1), X[r * k : r * k + k])
        assert len(ddp._buckets) > 1  # rebuilt after the first backward
        for a, b in zip(got, want):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)

    # ZeRO == plain Adam under the same DDP (Adam's first steps are sign-like, so the joined
    # batch's float32 rounding could flip near-zero gradients: compare with DDP + Adam)
    ddp = DDP(model())
    plain = train(ddp, ember.optim.Adam(ddp.parameters(), lr=1e-2), X[r * k : r * k + k])
    m = model()
    zero = ZeroRedundancyOptimizer(m.parameters(), ember.optim.Adam, lr=1e-2)
    got = train(DDP(m), zero, X[r * k : r * k + k])
    for a, b in zip(got, plain):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    held = sum(v.numel() for st in zero.optim.state.values() for v in st.values() if v.ndim)
    everyone = [None] * n
    dist.all_gather_object(everyone, held)
    assert sum(everyone) == 2 * sum(p.numel() for p in m.parameters())

    # ZeRO stepping inside backward (overlap_with_ddp): the first two iterations only reduce,
    # then each bucket's owner steps it: the same as DDP + Adam from the third iteration on
    from ember.distributed.algorithms.ddp_comm_hooks import ddp_zero_hook, default_hooks

    # shard_buckets: each bucket's parameters split across the ranks (one bucket here)
    for cap, shard in ((0.01, False), (25, True)):
        m, x = model(), X[r * k : r * k + k]
        ddp = DDP(m, bucket_cap_mb=cap)
        zero = ZeroRedundancyOptimizer(
            m.parameters(), ember.optim.Adam, overlap_with_ddp=True, lr=1e-2
        )
        hook = ddp_zero_hook.hook_with_zero_step(
            default_hooks.allreduce_hook, ddp, zero, shard_buckets=shard
        )
        ddp.register_comm_hook(None, hook)
        first = [p.detach().numpy().copy() for p in m.parameters()]
        for i in range(5):
            zero.zero_grad()
            ddp(ember.from_numpy(x * (i + 1))).pow(2).mean().backward()
            assert zero.step() is None
            if i == 1:
                assert all((a == p.detach().numpy()).all() for a, p in zip(first, m.parameters()))
        assert (len(ddp._buckets) == 1) == shard
        ref = DDP(model(), bucket_cap_mb=cap)
        adam = ember.optim.Adam(ref.parameters(), lr=1e-2)
        for i in range(2, 5):
            adam.zero_grad()
            ref(ember.from_numpy(x * (i + 1))).pow(2).mean().backward()
            adam.step()
        for a, b in zip(m.parameters(), ref.parameters()):
            np.testing.assert_allclose(
                a.detach().numpy(), b.detach().numpy(), rtol=1e-5, atol=1e-6
            )
        held = sum(
            v.numel() for o in zero._bucket_optims.values() for st in o.state.values()
            for v in st.values() if v.ndim
        )
        everyone = [None] * n
        dist.all_gather_object(everyone, held)
        assert sum(everyone) == 2 * sum(p.numel() for p in m.parameters()), everyone
        assert max(everyone) < sum(everyone), everyone  # (spread over the owners)

    # the group's lane (and, EMBER_MPI_ASYNC=requests, the progress thread) finishes an
    # all-reduce nobody waits for; blocking calls in between match among themselves
    for mode in ("lane", "requests"):
        os.environ["EMBER_MPI_ASYNC"] = mode
        big = ember.ones(1 << 20)
        w = dist.all_reduce(big, async_op=True)
        small = ember.full((3,), float(r))
        dist.all_reduce(small)
        assert small.tolist() == [n * (n - 1) / 2] * 3
        deadline = time.monotonic() + 20
        while not w.is_completed() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert w.is_completed(), mode
        w.wait()
        assert big[0].item() == n
        # many in flight, waited for last first: the caller runs those not started yet
        ts = [ember.full((1000 * (i + 1),), float(i + r)) for i in range(6)]
        works = [dist.all_reduce(t, async_op=True) for t in ts]
        for i in reversed(range(6)):
            works[i].wait()
            assert ts[i][0].item() == n * i + n * (n - 1) / 2
    os.environ.pop("EMBER_MPI_ASYNC")
    # EMBER_MPI_LANE_NICE: a group's lane made then runs its thread at that nice value
    os.environ["EMBER_MPI_LANE_NICE"] = "19"
    low = dist.new_group(list(range(n)))
    t = ember.ones(4)
    dist.all_reduce(t, group=low, async_op=True).wait()
    os.environ.pop("EMBER_MPI_LANE_NICE")
    assert t.tolist() == [float(n)] * 4
    if hasattr(os, "getpriority"):
        lane, deadline = low._lane, time.monotonic() + 10
        while lane.thread.native_id is None and time.monotonic() < deadline:
            time.sleep(0.01)  # (the waiting caller may have run the call before it started)
        while os.getpriority(os.PRIO_PROCESS, lane.thread.native_id) != 19:
            assert time.monotonic() < deadline, "the lane's thread kept its priority"
            time.sleep(0.01)

    # ranks passing different sizes to all_gather_into_tensor raise, on every rank
    size = 3 + r
    try:
        dist.all_gather_into_tensor(ember.zeros(n * size), ember.ones(size))
    except RuntimeError as e:
        assert "all_gather_into_tensor" in str(e) and "sizes" in str(e), e
    else:
        raise AssertionError("no error")
    dist.barrier()
    dist.destroy_process_group()
    print(f"ok {r}", flush=True)
    """
)


def mpirun(tmp_path, n: int, timeout: float = 240):
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    env = dict(os.environ, PYTHONPATH=ROOT)
    cmd = [MPIEXEC, "-n", str(n), sys.executable, str(script)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)


@pytest.mark.slow
@pytest.mark.parametrize("n", [2, 4])
def test_ddp_and_zero_on_mpi_equal_one_process(tmp_path, n):
    done = mpirun(tmp_path, n)
    assert done.returncode == 0, done.stdout + done.stderr
    for r in range(n):
        assert f"ok {r}" in done.stdout, done.stdout + done.stderr


HUNG = textwrap.dedent(
    """
    import datetime, time
    import ember
    import ember.distributed as dist

    dist.init_process_group("mpi", timeout=datetime.timedelta(seconds=2))
    t = ember.ones(1000)
    dist.all_reduce(t)
    if dist.get_rank() == 1:
        time.sleep(120)  # hangs outside the collective the others are in
    dist.all_reduce(t)
    """
)


@pytest.mark.slow
def test_a_hung_rank_ends_the_job_within_the_timeout(tmp_path):
    script = tmp_path / "hung.py"
    script.write_text(HUNG)
    env = dict(os.environ, PYTHONPATH=ROOT)
    start = time.monotonic()
    done = subprocess.run(
        [MPIEXEC, "-n", "2", sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=100,
        env=env,
    )
    took = time.monotonic() - start
    assert done.returncode != 0
    assert "[rank 0] MPI_Allreduce on a group of 2 timed out after 2000 ms" in done.stderr
    assert took < 60, took  # (the hung rank would sleep 120 s)


OVERLAP = textwrap.dedent(
    """
    import ember
    import ember.distributed as dist
    from ember.nn.parallel import DistributedDataParallel as DDP

    dist.init_process_group("mpi")
    rank = dist.get_rank()
    ember.set_num_threads(1)
    ember.manual_seed(0)
    # the last layer (whose gradients are ready first) is small; the backward of the wide
    # layers before it takes tens of milliseconds more
    layers = [ember.nn.Linear(512, 512) for _ in range(6)] + [ember.nn.Linear(512, 4)]
    ddp = DDP(ember.nn.Sequential(*layers), bucket_cap_mb=0.5)
    x = ember.randn(512, 512)
    early = []
    for i in range(6):
        ddp.zero_grad()
        ddp(x).sum().backward()
        if i < 2:
            continue  # (the buckets are rebuilt after the first backward)
        launched, span = ddp._comm_record[0]
        assert len(ddp._comm_record) == len(ddp._buckets) > 2
        assert launched < ddp._backward_done_at  # launched from the gradient hook
        assert span is not None and span[0] >= launched
        early.append(span[0] < ddp._backward_done_at)
    # the lane started the first bucket's MPI call while backward went on (in most
    # iterations: a loaded machine may wake the lane's thread late now and then)
    assert sum(early) >= 3, early
    dist.destroy_process_group()
    print(f"ok {rank}", flush=True)
    """
)


def test_ddp_starts_the_first_bucket_all_reduce_before_backward_ends(tmp_path):
    """The overlap mechanism, from recorded timestamps: DDP launches the first bucket's
    all-reduce from the gradient hooks and the group's lane starts its MPI call before
    backward has ended."""
    script = tmp_path / "overlap.py"
    script.write_text(OVERLAP)
    env = dict(os.environ, PYTHONPATH=ROOT)
    done = subprocess.run(
        [MPIEXEC, "-n", "2", sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "ok 0" in done.stdout and "ok 1" in done.stdout, done.stdout + done.stderr

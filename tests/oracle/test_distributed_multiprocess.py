"""``ember.distributed`` and ``DistributedDataParallel`` across processes, against torch's
(gloo on CPU).

One program (``test_distributed_workers.run``) runs in two spawned processes per library (both
libraries at once); the tests compare what every rank observed. DDP training is also compared
with single-process training on the full batch.
"""

from __future__ import annotations

import pickle
import socket
import time

import numpy as np
import pytest

import ember.multiprocessing as emp
from tests.oracle import test_distributed_workers as workers

torch = pytest.importorskip("torch")
tdist = pytest.importorskip("torch.distributed")
if not tdist.is_available() or not tdist.is_gloo_available():
    pytest.skip("torch.distributed with gloo is needed as the oracle", allow_module_level=True)

WORLD = 2
SPAWN_TIMEOUT = 90  # seconds: a hang fails the test instead of blocking CI


def free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def spawn_runs(libnames, out_dir) -> dict:
    """Run ``workers.run`` on two ranks for each library at once; return what each rank of
    each library observed."""
    # children fork from one server that imported both libraries (and the modules torch's
    # DDP loads on first use) once, instead of each importing them
    emp.set_forkserver_preload(["ember", "torch", "torch._dynamo", workers.__name__])
    contexts = {
        name: emp.start_processes(
            workers.run,
            args=(name, WORLD, free_port(), str(out_dir)),
            nprocs=WORLD,
            join=False,
            start_method="forkserver",
        )
        for name in libnames
    }
    deadline = time.monotonic() + SPAWN_TIMEOUT
    for name, ctx in contexts.items():
        while not ctx.join(max(0.0, deadline - time.monotonic())):
            if time.monotonic() >= deadline:
                for c in contexts.values():
                    for p in c.processes:
                        p.kill()
                pytest.fail(f"{name} workers did not finish in {SPAWN_TIMEOUT} s")
    results = {}
    for name in libnames:
        results[name] = []
        for rank in range(WORLD):
            with open(out_dir / f"{name}_{rank}.pkl", "rb") as fh:
                results[name].append(pickle.load(fh))
    return results


@pytest.fixture(scope="module")
def observed(tmp_path_factory):
    return spawn_runs(["ember", "torch"], tmp_path_factory.mktemp("dist"))


def same(a, b) -> bool:
    if isinstance(b, np.ndarray):
        return (
            isinstance(a, np.ndarray)
            and a.dtype == b.dtype
            and a.shape == b.shape
            and np.allclose(a, b, rtol=1e-5, atol=1e-6)
        )
    if isinstance(b, (list, tuple)):
        return (
            type(a) is type(b) and len(a) == len(b) and all(map(same, a, b))  # noqa: C417
        )
    if isinstance(b, dict):
        return isinstance(a, dict) and a.keys() == b.keys() and all(same(a[k], b[k]) for k in b)
    return a == b


COLLECTIVES = [
    *[f"all_reduce_{op}" for op in ["SUM", "PRODUCT", "MIN", "MAX", "AVG"]],
    *[f"all_reduce_int_{op}" for op in ["SUM", "BAND", "BOR", "BXOR", "MAX"]],
    "all_reduce_noncontig",
    "all_reduce_bool",
    "async",
    "broadcast",
    "reduce_dst0",
    "all_gather",
    "all_gather_into_tensor",
    "gather",
    "scatter",
    "reduce_scatter",
    "reduce_scatter_tensor",
    "all_to_all",
    "all_to_all_single",
    "barrier",
    "recv",
    "irecv",
    "irecv_then_async",
    "all_gather_single",
    "isend",
    "all_gather_object",
    "all_reduce_coalesced",
    "recv_object_list",
    "broadcast_object_list",
    "gather_object",
    "scatter_object_list",
    "subgroup",
    "batch_isend_irecv",
    "monitored_barrier",
    "world",
    "initialized",
    "after_destroy",
]
ERRORS = [
    "double_init",
    "err_avg_int",
    "err_band_float",
    "err_not_tensor",
    "err_all_gather_len",
    "err_all_gather_size",
    "err_gather_list",
    "err_send_self",
    "err_p2pop",
    "err_coalesced_dtypes",
]


@pytest.mark.parametrize("rank", range(WORLD))
def test_collectives_and_p2p_same_as_torch(observed, rank):
    e, t = observed["ember"][rank], observed["torch"][rank]
    assert set(COLLECTIVES + ERRORS) <= set(t) | set(observed["torch"][1 - rank])
    for key in set(COLLECTIVES + ERRORS) & set(t):
        assert same(e.get(key), t[key]), f"{key}: ember {e.get(key)!r}, torch {t[key]!r}"


def test_timeout_raises_as_torch(observed):
    e, t = observed["ember"][0]["timeout"], observed["torch"][0]["timeout"]
    assert e == ("RuntimeError", "Timed out waiting 200ms for recv operation to complete")
    assert t[0] == e[0] and t[1].endswith(e[1])


def test_ddp_training_same_as_full_batch_and_torch(observed):
    e, t = observed["ember"], observed["torch"]
    for rank in range(WORLD):
        assert e[rank]["keys"] == t[rank]["keys"]
        assert e[rank]["keys"][0].startswith("module.")
        # every replica holds the same parameters, and the same as torch's DDP; buffers are
        # rank 0's as of the last forward, then updated by the local batch (as torch's)
        assert same(e[rank]["params"], e[0]["params"])
        for name in ["params", "buffers"]:
            assert same(e[rank][name], t[rank][name]), name
        # DDP on shards == one process on the full batch (BatchNorm: per-shard statistics
        # differ, so only the Linear layers' relation is exact up to rounding)
        np.testing.assert_allclose(e[rank]["ref_params"][-1], t[rank]["ref_params"][-1], 1e-5)
        keys = ["no_sync_local", "no_sync_after", "unused", "no_unused_ok", "sampler"]
        keys += ["static_False", "static_True"]
        keys += [
            f"hook_{h}" for h in ("allreduce_hook", "fp16_compress_hook", "bf16_compress_hook")
        ]
        for key in keys + ["ddp_subgroup", "join_True", "join_False", "join_throw"]:
            assert same(e[rank][key], t[rank][key]), key
        assert e[rank]["err_unfinished"] == t[rank]["err_unfinished"]
    assert e[0]["unused"][4] is None and e[0]["unused"][2] is not None  # b: rank 1 only


def test_ddp_equals_single_process_on_linear_model(observed):
    """Without BatchNorm, DDP over the shards gives the full-batch parameters."""
    for lib in ("ember", "torch"):
        for rank in range(WORLD):
            ddp, ref = observed[lib][rank]["linear"]
            for a, b in zip(ddp, ref, strict=True):
                np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert same(observed["ember"][0]["linear"], observed["torch"][0]["linear"])

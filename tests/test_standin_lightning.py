"""The core behaviours pytorch-lightning's own test suite needed from ember's distributed
package (its DDP strategy in one process and under ``ddp_spawn``): the backend maps, the
default group, ``torch.distributed.utils._sync_module_states``, the post-local-SGD hook, DDP's
logging data, and store threads that ``threading.enumerate()`` does not list (as c10d's C++
threads in torch). Ranks run as threads on the local transport, as in test_distributed_ddp."""

from __future__ import annotations

import socket
import threading

import numpy as np
import pytest

import ember
import ember.distributed as dist
from ember.distributed.algorithms.ddp_comm_hooks.post_localSGD_hook import (
    PostLocalSGDState,
    post_localSGD_hook,
)
from ember.distributed.utils import _sync_module_states
from ember.nn.parallel import DistributedDataParallel as DDP
from tests.test_distributed_ddp import run_ranks


def test_backend_maps_match_torch():
    torch = pytest.importorskip("torch")
    tb = torch.distributed.Backend  # (other tests may register more backends in torch's maps)
    ours = dist.Backend.default_device_backend_map
    assert ours == {k: tb.default_device_backend_map[k] for k in ours}
    assert set(ours) == {"cpu", "cuda", "xpu", "mps"}
    for name, devices in dist.Backend.backend_capability.items():
        assert devices == tb.backend_capability[name][: len(devices)]


def test_get_default_group_before_init_raises_as_torch():
    torch = pytest.importorskip("torch")
    with pytest.raises(ValueError) as theirs:
        torch.distributed.distributed_c10d._get_default_group()
    with pytest.raises(ValueError) as ours:
        dist.distributed_c10d._get_default_group()
    assert str(ours.value) == str(theirs.value)


def _rank_linear(rank: int) -> ember.nn.Linear:
    layer = ember.nn.Linear(3, 2)
    with ember.no_grad():
        layer.weight.fill_(float(rank + 1))
        layer.bias.fill_(float(10 * (rank + 1)))
    layer.register_buffer("steps", ember.tensor([rank]))
    return layer


def test_sync_module_states_broadcasts_from_src_except_ignored():
    def fn(rank, group):
        layer = _rank_linear(rank)
        _sync_module_states(layer, group, 250 * 1024 * 1024, 1, {"bias"})
        return (
            layer.weight.detach().numpy().copy(),
            layer.bias.detach().numpy().copy(),
            int(layer.steps),
        )

    (w0, b0, s0), (w1, b1, s1) = run_ranks(fn)
    np.testing.assert_array_equal(w0, np.full((2, 3), 2.0, np.float32))  # rank 1's
    np.testing.assert_array_equal(w0, w1)
    assert (s0, s1) == (1, 1)  # buffers too
    assert b0[0] == 10.0 and b1[0] == 20.0  # ignored: each rank keeps its own


def test_broadcast_coalesced_is_in_place_per_dtype():
    def fn(rank, group):
        a = ember.full((2,), float(rank))
        b = ember.full((3,), rank, dtype=ember.int64)
        dist._broadcast_coalesced(group, [a, b], 0, 0)
        return a.tolist(), b.tolist()

    assert run_ranks(fn) == [([0.0, 0.0], [0, 0, 0])] * 2


def test_post_localSGD_hook_averages_then_goes_local():
    x = np.random.default_rng(1).standard_normal((2, 4, 3)).astype(np.float32)

    def fn(rank, group):
        layer = ember.nn.Linear(3, 1)
        with ember.no_grad():
            layer.weight.fill_(0.5)
            layer.bias.zero_()
        model = DDP(layer, process_group=group)
        state = PostLocalSGDState(
            group, None, start_localSGD_iter=1, post_local_gradient_allreduce=False
        )
        model.register_comm_hook(state, post_localSGD_hook)
        grads = []
        for _ in range(2):
            layer.zero_grad()
            model(ember.from_numpy(x[rank])).sum().backward()
            grads.append(layer.weight.grad.numpy().copy())
        return grads, state.iter

    (g0, it0), (g1, it1) = run_ranks(fn)
    assert it0 == it1 == 1  # the first backward's last bucket counted
    np.testing.assert_allclose(g0[0], g1[0])  # before start_localSGD_iter: averaged
    np.testing.assert_allclose(g0[0][0], x.sum(axis=1).mean(axis=0), rtol=1e-6)
    np.testing.assert_allclose(g0[1][0], x[0].sum(axis=0), rtol=1e-6)  # then each rank's own
    np.testing.assert_allclose(g1[1][0], x[1].sum(axis=0), rtol=1e-6)


def test_post_localSGD_state_defaults():
    state = PostLocalSGDState(None, None, start_localSGD_iter=5)
    assert (state.iter, state.post_local_gradient_allreduce, state.start_localSGD_iter) == (
        0,
        True,
        5,
    )
    with pytest.raises(AttributeError):
        state.other = 1  # __slots__, as torch's


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_ddp_logging_data_matches_torch():
    torch = pytest.importorskip("torch")
    store = torch.distributed.TCPStore("127.0.0.1", _free_port(), 1, True)
    torch.distributed.init_process_group("gloo", store=store, rank=0, world_size=1)
    try:
        theirs = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 3))
        expected = theirs._get_ddp_logging_data()
    finally:
        torch.distributed.destroy_process_group()

    def fn(rank, group):
        return DDP(ember.nn.Linear(4, 3), process_group=group)._get_ddp_logging_data()

    (ours,) = run_ranks(fn, n=1)
    assert ours == {k: expected[k] for k in ours}
    assert "can_set_static_graph" not in ours  # as torch's before any iteration


def test_store_threads_are_not_python_threads():
    before = set(threading.enumerate())
    master = dist.TCPStore("127.0.0.1", 0, 2, True, wait_for_workers=False)
    client = dist.TCPStore("127.0.0.1", master.port, 2, False)
    try:
        client.set("k", "v")
        assert master.get("k") == b"v"
        assert set(threading.enumerate()) == before
    finally:
        del client, master


def test_cuda_device_block_enters_and_its_factories_raise_as_torch():
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("torch here has CUDA")
    for lib in (torch, ember):  # Lightning's init_module() enters the strategy's root device
        with lib.device("cuda"):
            with pytest.raises(AssertionError):
                lib.empty(2)
            with pytest.raises(AssertionError):
                lib.nn.Linear(2, 2)
            with pytest.raises(AssertionError):
                lib.get_default_device()
        assert lib.empty(2).device.type == "cpu"  # the block is left

"""Kernels that split their rows over the intra-op thread (``parallel_rows``): large max
pooling and relu give torch's values, indices and gradients, with one thread or two."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember._core import threads

torch = pytest.importorskip("torch")

# (4, 8, 128, 130) = 532,480 elements: above PARALLEL_MIN, so the halves run on two threads
SHAPE = (4, 8, 128, 130)


@pytest.fixture(params=[1, 2], ids=["one-thread", "two-threads"])
def nthreads(request):
    before = ember.get_num_threads()
    ember.set_num_threads(request.param)
    yield request.param
    ember.set_num_threads(before)


def test_large_inputs_take_the_split_path():
    assert np.prod(SHAPE) >= threads.PARALLEL_MIN


@pytest.mark.parametrize("kw", [{"kernel_size": 2}, {"kernel_size": 3, "stride": 2, "padding": 1}])
def test_max_pool_and_relu_match_torch(nthreads, kw):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(SHAPE).astype(np.float32)
    x[0, 0, :4, :4] = 0.5  # ties: the first maximum wins, as in torch
    g = None
    res = {}
    for lib in (torch, ember):
        t = lib.tensor(x, requires_grad=True)
        y, idx = lib.nn.functional.max_pool2d(lib.relu(t), return_indices=True, **kw)
        if g is None:
            g = rng.standard_normal(tuple(y.shape)).astype(np.float32)
        y.backward(lib.tensor(g))
        res[lib.__name__] = (y.detach().numpy(), idx.numpy(), t.grad.numpy())
    (ty, ti, tg), (ey, ei, eg) = res["torch"], res["ember"]
    np.testing.assert_array_equal(ey, ty)
    np.testing.assert_array_equal(ei, ti)
    # overlapping windows sum several gradients into one input: torch adds in float32
    np.testing.assert_allclose(eg, tg, rtol=1e-6, atol=1e-6)


def test_split_work_runs_whole_on_the_worker_thread():
    # a split requested from the pool's own thread must not wait on its own queue
    seen = []

    def inner():
        threads.parallel_rows(lambda a, b: seen.append((a, b)), 4, threads.PARALLEL_MIN)

    before = ember.get_num_threads()
    ember.set_num_threads(2)
    try:
        threads.parallel_pair(inner, lambda: None)
    finally:
        ember.set_num_threads(before)
    assert seen == [(0, 4)]

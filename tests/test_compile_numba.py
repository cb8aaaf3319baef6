"""Fused pointwise kernels compiled by numba (``compile(mode="reduce-overhead")``): runs of
IEEE-exact ops become one loop, bit for bit eager's; ``mode="max-autotune"`` also fuses
transcendental ops (numba's libm: within a tolerance of eager, not bit-exact); without numba, or
in the default mode, the NumPy code runs."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember._inductor import numba_kernels as NK

pytest.importorskip("numba")


def _chain(x):
    for _ in range(3):
        x = x * 1.01
        x = x + 0.1
        x = x.sin()
        x = x - 0.05
    return x.sum()


def _mixed(x, y):
    a = x * y - x / y  # (division by zero, infinities and NaN in the inputs below)
    b = -a + 2.5
    c = (b * b - y) / 3.0
    return a, c.sqrt().abs() * x - 0.5


def _entry(c):
    return c._ember_compiled.entries[0]


def _same_bits(a, b):
    assert a.dtype == b.dtype and a.shape == b.shape
    assert np.ascontiguousarray(a).tobytes() == np.ascontiguousarray(b).tobytes()  # (-0.0, NaN)


def _train(fn, mode, *shape, dtype=ember.float32):
    ember.manual_seed(0)
    x = ember.randn(*shape, dtype=dtype, requires_grad=True)
    c = ember.compile(fn, mode=mode)
    outs = []
    for _ in range(2):  # (the first call, then a cached one)
        x.grad = None
        y = c(x)
        y.backward()
        outs.append((y.detach().numpy().copy(), x.grad.numpy().copy()))
    return outs, c


def test_exact_kernels_equal_eager_bit_for_bit():
    want, _ = _train(_chain, None, 16)
    got, c = _train(_chain, "reduce-overhead", 16)
    src = _entry(c).source
    assert "one numba loop" in src and "np_sin" in src  # (sin stays NumPy's)
    for (y0, g0), (y1, g1) in zip(want, got):
        _same_bits(y0, y1)
        _same_bits(g0, g1)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_exact_kernels_special_values_and_ranks(dtype):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 5)).astype(dtype)
    y = rng.standard_normal((4, 5)).astype(dtype)
    x[0, :4] = [0.0, -0.0, np.inf, np.nan]
    y[0, :4] = [0.0, 0.0, -np.inf, 1.0]
    y[1, 0] = -0.0
    xs, ys = ember.from_numpy(x), ember.from_numpy(y)
    want = _mixed(xs, ys)
    c = ember.compile(_mixed, mode="reduce-overhead")
    for _ in range(2):
        got = c(xs, ys)
        for a, b in zip(want, got):
            _same_bits(a.numpy(), b.numpy())
    assert "one numba loop" in _entry(c).source
    # a transposed (not row-major) input stays with NumPy's calls, equal too
    xt, yt = ember.from_numpy(x.T.copy()).t(), ember.from_numpy(y.T.copy()).t()
    for a, b in zip(_mixed(xt, yt), c(xt, yt)):
        _same_bits(a.numpy(), b.numpy())
    assert "one numba loop" not in c._ember_compiled.entries[1].source


def test_default_mode_and_no_numba_run_numpy_calls(monkeypatch):
    _, c = _train(_chain, None, 16)
    assert "numba" not in _entry(c).source
    monkeypatch.setitem(NK._STATE, "ok", False)  # (as without numba installed)
    want, _ = _train(_chain, None, 16)
    got, c = _train(_chain, "reduce-overhead", 16)
    assert "numba" not in _entry(c).source
    for (y0, g0), (y1, g1) in zip(want, got):
        _same_bits(y0, y1)
        _same_bits(g0, g1)


def test_max_autotune_fuses_transcendentals_within_tolerance():
    want, _ = _train(_chain, None, 16)
    got, c = _train(_chain, "max-autotune", 16)
    src = _entry(c).source
    assert "np_sin" not in src and src.count("one numba loop") == 1  # one loop, sin inside
    for (y0, g0), (y1, g1) in zip(want, got):
        np.testing.assert_allclose(y1, y0, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(g1, g0, rtol=1e-5, atol=1e-6)


def _two_inputs(x, w):
    y = (x * w).sin() * 3.0 - x * x  # (mul's backward for both inputs; x * x's shortcut)
    return (y / 2.0 + w).sum()


@pytest.mark.parametrize("mode", ["reduce-overhead", "max-autotune"])
def test_backward_formulas_fuse_equal_to_eager(mode):
    grads = {}
    for m in (None, mode):
        ember.manual_seed(1)
        x = ember.randn(3, 8, requires_grad=True)
        w = ember.randn(3, 8, requires_grad=True)
        c = ember.compile(_two_inputs, mode=m)
        for _ in range(2):
            x.grad = w.grad = None
            c(x, w).backward()
        grads[m] = (x.grad.numpy(), w.grad.numpy())
    if mode == "reduce-overhead":
        assert "one numba loop" in _entry(c).backward_source
        for a, b in zip(grads[None], grads[mode]):
            _same_bits(a, b)
    else:
        for a, b in zip(grads[None], grads[mode]):
            np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)


def test_backward_kernel_reads_a_broadcast_incoming_gradient():
    # the result's gradient arrives as a broadcast (sum's backward, outside the compiled code):
    # its layout is no guard's, so the kernel reads it row-major (a copy), never as if it were
    def f(x, y):
        return ((x * y + 1.0).sin() * x - y) / 2

    grads = {}
    for m in (None, "reduce-overhead"):
        ember.manual_seed(2)
        x = ember.randn(4, 4, requires_grad=True)
        y = ember.randn(4, 4, requires_grad=True)
        c = ember.compile(f, mode=m)
        for _ in range(2):
            x.grad = y.grad = None
            c(x, y).sum().backward()
        grads[m] = (x.grad.numpy(), y.grad.numpy())
    assert "np_contiguous(g0)" in _entry(c).backward_source
    for a, b in zip(grads[None], grads["reduce-overhead"]):
        _same_bits(a, b)


def test_a_run_changing_shape_splits_into_loops_of_one_shape():
    def f(x, b):
        return (-x * x) * 0.5 + (b * b - 1.0)  # (2, 3) ops, then (3,) ops, then a broadcast

    x, b = ember.randn(2, 3), ember.randn(3)
    c = ember.compile(f, mode="reduce-overhead")
    for _ in range(2):
        _same_bits(f(x, b).numpy(), c(x, b).numpy())
    assert _entry(c).failure is None and _entry(c).source.count("one numba loop") == 2

"""The batch-half split (``_core/threads.run_halves``): convolutions, max pooling and the
LSTM kernel computed as two halves on two threads agree with torch and with the serial run.

``SPLIT_MIN`` is lowered so that these small shapes take the split path; the serial run is the
same call with ``set_num_threads(1)`` (torch's semantics: everything serial).
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import ember  # noqa: E402
import ember._core.threads as threads  # noqa: E402


@pytest.fixture
def split(monkeypatch):
    monkeypatch.setattr(threads, "SPLIT_MIN", 0)
    monkeypatch.setattr(threads, "_SERIAL_ENV", False)
    before = ember.get_num_threads()
    ember.set_num_threads(2)
    calls = []
    real = threads.parallel_pair

    def counted(first, second):
        calls.append(1)
        return real(first, second)

    monkeypatch.setattr(threads, "parallel_pair", counted)
    yield calls
    ember.set_num_threads(before)


def _grads(lib, fn, arrays):
    ts = [lib.from_numpy(a.copy()).requires_grad_() for a in arrays]
    out = fn(lib, *ts)
    g = np.random.default_rng(1).standard_normal(tuple(out.shape)).astype(np.float32)
    out.backward(lib.from_numpy(g))
    return [out.detach().numpy()] + [t.grad.numpy() for t in ts]


def _serial(fn, arrays):
    ember.set_num_threads(1)
    try:
        return _grads(ember, fn, arrays)
    finally:
        ember.set_num_threads(2)


def _check(split, fn, arrays, atol=1e-4):
    got = _grads(ember, fn, arrays)
    assert split, "the split path was not taken"
    want = _grads(torch, fn, arrays)
    serial = _serial(fn, arrays)
    for g, w, s in zip(got, want, serial):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=atol)
        np.testing.assert_allclose(g, s, rtol=1e-5, atol=atol)


RNG = np.random.default_rng(0)


def _a(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize(
    "xs, ws, kw",
    [
        ((5, 16, 12, 12), (32, 16, 3, 3), {"padding": 1}),  # row shifts (odd batch)
        ((4, 16, 10, 10), (32, 16, 5, 5), {}),  # height-major rows, col2im input gradient
        ((6, 1, 14, 14), (8, 1, 5, 5), {"padding": 2}),  # one GEMM per sample
        ((4, 6, 9, 9), (8, 3, 3, 3), {"stride": 2, "groups": 2}),  # im2col
    ],
)
def test_conv2d_halves(split, xs, ws, kw):
    def fn(lib, x, w, b):
        return lib.nn.functional.conv2d(x, w, b, **kw)

    _check(split, fn, [_a(*xs), _a(*ws), _a(ws[0])], atol=1e-3)


def test_conv_transpose2d_halves(split):
    def fn(lib, x, w):
        return lib.nn.functional.conv_transpose2d(x, w, stride=2, padding=1)

    _check(split, fn, [_a(3, 8, 7, 7), _a(8, 4, 3, 3)], atol=1e-3)


def test_max_pool2d_halves(split):
    x = _a(5, 3, 12, 12)
    x[1, 2, 3, 3] = x[1, 2, 3, 4]  # a tie: the first offset wins in both

    def fn(lib, x):
        return lib.nn.functional.max_pool2d(x, 3, stride=2, padding=1)

    _check(split, fn, [x])
    with ember.no_grad():  # values only
        e = ember.nn.functional.max_pool2d(ember.from_numpy(x), 2)
    np.testing.assert_array_equal(
        e.numpy(), torch.nn.functional.max_pool2d(torch.from_numpy(x), 2).numpy()
    )


@pytest.mark.parametrize("bidirectional", [False, True])
def test_lstm_halves(split, bidirectional):
    t = torch.nn.LSTM(6, 8, num_layers=2, bidirectional=bidirectional)
    e = ember.nn.LSTM(6, 8, num_layers=2, bidirectional=bidirectional)
    e.load_state_dict({k: ember.from_numpy(v.detach().numpy()) for k, v in t.state_dict().items()})
    x, h0, c0 = (
        _a(7, 5, 6),
        _a(4 if bidirectional else 2, 5, 8),
        _a(4 if bidirectional else 2, 5, 8),
    )

    def fn(lib, x, h, c):
        m = e if lib is ember else t
        out, (hn, cn) = m(x, (h, c))
        return out.sum(-1) + hn.sum() + cn.sum()

    _check(split, fn, [x, h0, c0])
    e.zero_grad(set_to_none=True)
    t.zero_grad(set_to_none=True)
    _grads(ember, fn, [x, h0, c0])
    _grads(torch, fn, [x, h0, c0])
    grads = [p.grad.numpy() for p in e.parameters()]
    want = [p.grad.numpy() for p in t.parameters()]
    for g, w in zip(grads, want):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4)


def test_set_num_threads_one_is_serial(split):
    ember.set_num_threads(1)
    x = ember.randn(4, 16, 8, 8, requires_grad=True)
    ember.nn.functional.max_pool2d(ember.nn.functional.conv2d(x, ember.randn(32, 16, 3, 3)), 2)
    assert split == []
    ember.set_num_threads(2)
    ember.nn.functional.conv2d(x, ember.randn(32, 16, 3, 3))
    assert split


def test_nested_region_runs_whole(split):
    seen = []

    def inner(lo, hi):
        seen.append((lo, hi))

    def outer(lo, hi):
        threads.run_halves(inner, 4)  # a second region while one runs: whole

    threads.run_halves(outer, 2)
    assert sorted(seen) == [(0, 4), (0, 4)]

"""The fused recurrence kernel (nn/_functional/rnn.py) at realistic sizes and extreme values.

test_nn_rnn.py covers the layers' features on tiny shapes; this file exercises the kernel's
own paths: the exp-based gate activations (including exp overflow for large pre-activations),
the transposed per-step products at a batch and width where BLAS takes its blocked paths,
packed batches whose rows finish at different steps, projections and both directions.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import ember  # noqa: E402


def _pair(cls, *args, dtype="float32", **kw):
    t = getattr(torch.nn, cls)(*args, dtype=getattr(torch, dtype), **kw)
    e = getattr(ember.nn, cls)(*args, dtype=getattr(ember, dtype), **kw)
    e.load_state_dict(
        {k: ember.from_numpy(v.detach().numpy().copy()) for k, v in t.state_dict().items()}
    )
    return e, t


def _run(lib, m, x, h0, packed_lengths=None):
    xt = lib.from_numpy(x.copy()).requires_grad_()
    state = None
    if h0 is not None:
        state = tuple(lib.from_numpy(a.copy()).requires_grad_() for a in h0)
        state = state if len(state) == 2 else state[0]
    inp = xt
    if packed_lengths is not None:
        inp = lib.nn.utils.rnn.pack_padded_sequence(xt, packed_lengths, enforce_sorted=False)
    out, hn = m(inp, state)
    if packed_lengths is not None:
        out = lib.nn.utils.rnn.pad_packed_sequence(out)[0]
    hn = hn if isinstance(hn, tuple) else (hn,)
    loss = (out * out).sum() + sum((h * 1.5).sum() for h in hn)
    loss.backward()
    grads = {n: p.grad.numpy().copy() for n, p in m.named_parameters()}
    grads["input"] = xt.grad.numpy().copy()
    if state is not None:
        for i, s in enumerate(state if isinstance(state, tuple) else (state,)):
            grads[f"h0_{i}"] = s.grad.numpy().copy()
    return [out.detach().numpy()] + [h.detach().numpy() for h in hn], grads


def _compare(cls, x, h0=None, lengths=None, tol=2e-5, scale=1.0, **kw):
    e, t = _pair(cls, *kw.pop("sizes"), **kw)
    if scale != 1.0:
        with torch.no_grad():
            for p in t.parameters():
                p.mul_(scale)
        e.load_state_dict(
            {k: ember.from_numpy(v.detach().numpy().copy()) for k, v in t.state_dict().items()}
        )
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # exp overflow must stay silent
        eo, eg = _run(ember, e, x, h0, lengths)
    to, tg = _run(torch, t, x, h0, lengths)
    for a, b in zip(eo, to):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol)
    assert set(eg) == set(tg)
    for n in tg:
        ref = tg[n]
        np.testing.assert_allclose(
            eg[n], ref, rtol=tol, atol=tol * max(1.0, np.abs(ref).max()), err_msg=n
        )


RNG = np.random.default_rng(7)


@pytest.mark.parametrize("cls", ["LSTM", "GRU"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_kernel_at_blas_sizes(cls, dtype):
    x = RNG.standard_normal((12, 32, 24)).astype(dtype)
    _compare(cls, x, dtype=dtype, sizes=(24, 64), tol=2e-5 if dtype == "float32" else 1e-10)


@pytest.mark.parametrize("cls", ["LSTM", "GRU"])
def test_saturated_gates_overflow_exp_silently(cls):
    # weights x 30 drive pre-activations far past exp's float32 range (|a| > 88)
    x = (RNG.standard_normal((6, 5, 8)) * 4).astype("float32")
    _compare(cls, x, sizes=(8, 16), scale=30.0, tol=1e-4)


def test_lstm_tiny_activations_relative_error():
    # weights x 1e-4: gate pre-activations and states near 0, where tanh through exp
    # (2 sigmoid(2a) - 1) would carry an absolute error ~6e-8, a large relative one
    x = RNG.standard_normal((8, 16, 12)).astype("float32")
    e, t = _pair("LSTM", 12, 32)
    with torch.no_grad():
        for p in t.parameters():
            p.mul_(1e-4)
    e.load_state_dict({k: ember.from_numpy(v.numpy().copy()) for k, v in t.state_dict().items()})
    eo, _ = _run(ember, e, x, None)
    to, _ = _run(torch, t, x, None)
    for a, b in zip(eo, to):
        scale = np.abs(b).max()
        assert scale < 1e-3
        # relative to the outputs' scale: ~2e-7 with NumPy's tanh, ~2e-3 through exp
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-5 * scale)


def test_lstm_state_given_projection_bidirectional_layers():
    x = RNG.standard_normal((9, 20, 10)).astype("float32")
    h0 = RNG.standard_normal((4, 20, 6)).astype("float32")
    c0 = RNG.standard_normal((4, 20, 16)).astype("float32")
    _compare("LSTM", x, (h0, c0), sizes=(10, 16), num_layers=2, bidirectional=True, proj_size=6)


@pytest.mark.parametrize("cls,extra", [("LSTM", {}), ("LSTM", {"proj_size": 7}), ("GRU", {})])
def test_packed_batch_rows_finish_at_different_steps(cls, extra):
    lengths = [11, 3, 7, 1, 11, 5, 9, 2] * 3  # batch 24, unsorted
    x = RNG.standard_normal((11, len(lengths), 12)).astype("float32")
    _compare(cls, x, lengths=lengths, sizes=(12, 20), bidirectional=True, num_layers=2, **extra)


def test_lstm_double_backward_float64_at_kernel_size():
    m = ember.nn.LSTM(5, 8, dtype=ember.float64)
    x = ember.from_numpy(RNG.standard_normal((4, 6, 5))).requires_grad_()
    out, _ = m(x)
    (g,) = ember.autograd.grad(out.pow(2).sum(), x, create_graph=True)
    (gg,) = ember.autograd.grad(g.pow(2).sum(), x)
    tm = torch.nn.LSTM(5, 8, dtype=torch.float64)
    tm.load_state_dict({k: torch.from_numpy(v.numpy().copy()) for k, v in m.state_dict().items()})
    tx = torch.from_numpy(x.detach().numpy().copy()).requires_grad_()
    (tg,) = torch.autograd.grad(tm(tx)[0].pow(2).sum(), tx, create_graph=True)
    (tgg,) = torch.autograd.grad(tg.pow(2).sum(), tx)
    np.testing.assert_allclose(g.detach().numpy(), tg.detach().numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(gg.numpy(), tgg.numpy(), rtol=1e-9, atol=1e-11)


@pytest.mark.parametrize("cls", ["LSTM", "GRU", "RNN"])
@pytest.mark.parametrize("zero,grad", [(True, True), (False, False), (True, False)])
@pytest.mark.parametrize("packed", [False, True])
def test_initial_state_zero_or_not_with_or_without_grad(cls, zero, grad, packed):
    # the kernel skips the first step's product when h0 is all zero (forward, and its rows of
    # the W_hh gradient) and the last backward product when h0's gradient is not wanted
    lengths = [7, 2, 5, 7, 1, 4] if packed else None
    x = RNG.standard_normal((7, 6, 5)).astype("float32")
    shape = (2, 6, 9)
    states = [np.zeros(shape, "float32") if zero else RNG.standard_normal(shape).astype("float32")]
    if cls == "LSTM":
        states.append(RNG.standard_normal(shape).astype("float32"))
    e, t = _pair(cls, 5, 9, bidirectional=True)
    res = []
    for lib, m in ((ember, e), (torch, t)):
        xt = lib.from_numpy(x.copy()).requires_grad_()
        st = [lib.from_numpy(a.copy()).requires_grad_(grad) for a in states]
        inp = xt
        if packed:
            inp = lib.nn.utils.rnn.pack_padded_sequence(xt, lengths, enforce_sorted=False)
        out, hn = m(inp, tuple(st) if cls == "LSTM" else st[0])
        if packed:
            out = lib.nn.utils.rnn.pad_packed_sequence(out)[0]
        hn = hn if isinstance(hn, tuple) else (hn,)
        ((out * out).sum() + sum((h * 1.5).sum() for h in hn)).backward()
        got = [out.detach().numpy(), xt.grad.numpy()]
        got += [p.grad.numpy() for _, p in m.named_parameters()]
        got += [s.grad.numpy() if grad else np.zeros(1) for s in st]
        res.append(got)
    for a, b in zip(*res):
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-5 * max(1.0, np.abs(b).max()))


def test_zero_state_with_non_finite_weight_stays_nan_like_torch():
    # 0 * inf is nan: skipping the zero state's product must not hide a non-finite W_hh
    e, t = _pair("LSTM", 3, 4)
    with torch.no_grad():
        t.weight_hh_l0[0, 0] = float("inf")
    e.load_state_dict({k: ember.from_numpy(v.numpy().copy()) for k, v in t.state_dict().items()})
    x = RNG.standard_normal((3, 2, 3)).astype("float32")
    eo = e(ember.from_numpy(x))[0].detach().numpy()
    to = t(torch.from_numpy(x))[0].detach().numpy()
    np.testing.assert_array_equal(np.isnan(eo), np.isnan(to))
    assert np.isnan(to[0]).any()

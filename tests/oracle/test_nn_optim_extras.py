"""torch 2.13's rarer nn and optim pieces against torch: AdaptiveLogSoftmaxWithLoss, fractional
max pooling, CrossMapLRN2d, NLLLoss2d, Container, the ``*_with_indices`` functional names, and
the Adafactor, SparseAdam and Muon optimizers (trajectories, state dicts, errors)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

EF = ember.nn.functional
TF = torch.nn.functional


def _t(a, grad=False):
    t = torch.tensor(a)
    return t.requires_grad_(True) if grad else t


def _e(a, grad=False):
    t = ember.tensor(a)
    return t.requires_grad_(True) if grad else t


def _np(t):
    if t.dtype in (torch.bfloat16,) or str(t.dtype) == "torch.bfloat16":
        t = t.float()
    return t.detach().cpu().numpy() if isinstance(t, torch.Tensor) else np.asarray(t.detach())


def _raises(fn_t, fn_e):
    """Both raise: the same class and message."""
    with pytest.raises(Exception) as te:
        fn_t()
    with pytest.raises(Exception) as ee:
        fn_e()
    assert type(ee.value).__name__ == type(te.value).__name__, (ee.value, te.value)
    assert str(ee.value) == str(te.value)


# ---------------------------------------------------------------------------------------------
# fractional max pooling


def _frac_case(shape, k, out, nd, dtype=np.float64, ties=False, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(shape).astype(dtype)
    if ties:
        a = np.round(a)
    n = shape[0] if len(shape) == nd + 2 else 1
    u = rng.random((n, shape[-nd - 1], nd)).astype(dtype)
    return a, u


FRAC_CASES = [
    ((2, 3, 7, 9), 3, (5, 7), 2),
    ((2, 3, 17, 19), 2, (9, 12), 2),
    ((3, 17, 19), (2, 3), (10, 1), 2),
    ((1, 2, 6, 6), 2, (5, 5), 2),
    ((2, 3, 8, 8), 1, (8, 8), 2),
    ((2, 3, 5, 6, 7), 2, (3, 4, 5), 3),
    ((3, 9, 6, 11), (2, 3, 2), (4, 3, 7), 3),
    ((1, 1, 4, 4, 4), 2, (1, 1, 1), 3),
]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("ties", [False, True])
@pytest.mark.parametrize("shape,k,out,nd", FRAC_CASES)
def test_fractional_max_pool_matches_torch(shape, k, out, nd, dtype, ties):
    a, u = _frac_case(shape, k, out, nd, dtype, ties)
    name = f"fractional_max_pool{nd}d"
    tx, ex = _t(a, True), _e(a, True)
    ty, ti = getattr(TF, name)(tx, k, output_size=out, return_indices=True, _random_samples=_t(u))
    ey, ei = getattr(EF, name)(ex, k, output_size=out, return_indices=True, _random_samples=_e(u))
    assert np.array_equal(_np(ti), _np(ei)) and ei.dtype == ember.int64
    assert np.array_equal(_np(ty), _np(ey)) and ey.dtype == getattr(ember, str(ty.dtype)[6:])
    assert type(ey.grad_fn).__name__ == type(ty.grad_fn).__name__
    go = np.random.default_rng(1).standard_normal(ty.shape).astype(dtype)
    ty.backward(_t(go))
    ey.backward(_e(go))
    np.testing.assert_allclose(_np(ex.grad), _np(tx.grad), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize(
    "nd,kwargs",
    [(2, {}), (3, {}), (2, {"output_ratio": (0.5, 0.5, 0.5)}), (2, {"output_ratio": 0.5}),
     (3, {"output_ratio": 0.5}), (3, {"output_ratio": (0.5, 0.7, 0.9)}),
     (2, {"output_ratio": [0.5, 0.7]}), (2, {"output_size": 3, "output_ratio": 0.5}),
     (2, {"output_size": (6, 6)}), (2, {"output_size": (7, 5)}), (3, {"output_size": 5}),
     (3, {"output_size": 6}), (3, {"output_size": (3, 6, 4)}), (3, {"output_size": (5, 5, 6)})],
)  # fmt: skip
def test_fractional_max_pool_output_size_arguments(nd, kwargs):
    a = np.random.default_rng(4).standard_normal((1, 2) + (7,) * nd).astype(np.float32)
    shapes = []
    for lib, conv in ((torch, _t), (ember, _e)):
        fn = getattr(lib.nn.functional, f"fractional_max_pool{nd}d_with_indices")
        try:
            shapes.append(tuple(fn(conv(a), 2, **kwargs)[0].shape))
        except Exception as e:
            shapes.append((type(e).__name__, str(e)))
    assert shapes[0] == shapes[1]


@pytest.mark.parametrize("nd", [2, 3])
def test_fractional_max_pool_double_backward(nd):
    shape = (2, 2, 7, 8) if nd == 2 else (1, 2, 5, 6, 7)
    out = (4, 5) if nd == 2 else (3, 3, 4)
    a, u = _frac_case(shape, 2, out, nd)
    gg = np.random.default_rng(3).standard_normal(shape)
    res = []
    for lib, mk in ((torch, _t), (ember, _e)):
        x = mk(a, True)
        f = getattr(lib.nn.functional, f"fractional_max_pool{nd}d")
        y = f(x, 2, output_size=out, _random_samples=mk(u))
        go = mk(np.ones(y.shape), True)
        (g,) = lib.autograd.grad(y, x, go, create_graph=True)
        (h,) = lib.autograd.grad((g * mk(gg)).sum(), go)
        res.append((type(g.grad_fn).__name__, _np(g), _np(h)))
    assert res[0][0] == res[1][0]
    np.testing.assert_allclose(res[1][1], res[0][1])
    np.testing.assert_allclose(res[1][2], res[0][2])


def test_fractional_max_pool_output_ratio_and_seeded_samples():
    a = np.random.default_rng(5).standard_normal((2, 3, 11, 13)).astype(np.float32)
    torch.manual_seed(7)
    ember.manual_seed(7)
    ty = TF.fractional_max_pool2d(_t(a), 2, output_ratio=(0.5, 0.7))
    ey = EF.fractional_max_pool2d(_e(a), 2, output_ratio=(0.5, 0.7))
    assert tuple(ey.shape) == tuple(ty.shape)
    np.testing.assert_array_equal(_np(ey), _np(ty))  # torch.rand's stream: same windows
    b = np.random.default_rng(6).standard_normal((3, 6, 7, 8))
    ty = TF.fractional_max_pool3d(_t(b), (2, 1, 2), output_ratio=0.5)
    ey = EF.fractional_max_pool3d(_e(b), (2, 1, 2), output_ratio=0.5)
    np.testing.assert_array_equal(_np(ey), _np(ty))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_fractional_max_pool_low_precision(dtype):
    a = np.random.default_rng(8).standard_normal((2, 3, 9, 10)).astype(np.float32)
    u = np.random.default_rng(9).random((2, 3, 2)).astype(np.float32)
    tdt, edt = getattr(torch, dtype), getattr(ember, dtype)
    ty, ti = TF.fractional_max_pool2d(
        _t(a).to(tdt), 3, (6, 7), return_indices=True, _random_samples=_t(u).to(tdt)
    )
    ey, ei = EF.fractional_max_pool2d(
        _e(a).to(edt), 3, (6, 7), return_indices=True, _random_samples=_e(u).to(edt)
    )
    np.testing.assert_array_equal(_np(ei), _np(ti))
    np.testing.assert_array_equal(_np(ey.float()), _np(ty.float()))


def test_fractional_max_pool_nan_and_zero_kernel():
    a = np.random.default_rng(10).standard_normal((1, 2, 8, 8))
    a[0, 0, 1, 1] = a[0, 0, 2, 3] = a[0, 1, 5, 5] = np.nan
    u = np.random.default_rng(11).random((1, 2, 2))
    ty, ti = TF.fractional_max_pool2d(_t(a), 3, 5, return_indices=True, _random_samples=_t(u))
    ey, ei = EF.fractional_max_pool2d(_e(a), 3, 5, return_indices=True, _random_samples=_e(u))
    np.testing.assert_array_equal(_np(ei), _np(ti))
    np.testing.assert_array_equal(_np(ey), _np(ty))
    ty, ti = TF.fractional_max_pool2d(_t(a), (0, 2), 5, return_indices=True, _random_samples=_t(u))
    ey, ei = EF.fractional_max_pool2d(_e(a), (0, 2), 5, return_indices=True, _random_samples=_e(u))
    np.testing.assert_array_equal(_np(ei), _np(ti))
    np.testing.assert_array_equal(_np(ey), _np(ty))


def test_fractional_max_pool_empty_batch_and_zero_output():
    for shape, out in (((0, 3, 7, 9), 3), ((2, 3, 7, 9), (0, 5))):
        a = np.zeros(shape)
        u = np.random.default_rng(0).random((max(shape[0], 1), 3, 2))
        ty = TF.fractional_max_pool2d(_t(a), 3, out, _random_samples=_t(u))
        ey = EF.fractional_max_pool2d(_e(a), 3, out, _random_samples=_e(u))
        assert tuple(ey.shape) == tuple(ty.shape)


def _frac_errors(lib):
    F = lib.nn.functional
    x = lib.zeros(2, 3, 7, 9)
    x3 = lib.zeros(2, 3, 5, 6, 7)
    r = lib.rand
    return [
        lambda: F.fractional_max_pool2d(x, 3, output_size=(6, 8)),
        lambda: F.fractional_max_pool2d(x, 3, output_size=(5, 8)),
        lambda: F.fractional_max_pool2d(x, 3, output_ratio=0.5),
        lambda: F.fractional_max_pool2d(x, 3),
        lambda: F.fractional_max_pool2d(x, 3, output_ratio=(0.5, 0.5, 0.5)),
        lambda: F.fractional_max_pool2d(x[0, 0], 3, output_size=3),
        lambda: F.fractional_max_pool2d(x, 3, output_size=3, _random_samples=r(2, 3, 3)),
        lambda: F.fractional_max_pool2d(x, 3, output_size=3, _random_samples=r(1, 3, 2)),
        lambda: F.fractional_max_pool2d(x, 3, output_size=3, _random_samples=r(2, 4, 2)),
        lambda: F.fractional_max_pool2d(x, 3, output_size=3, _random_samples=r(2, 3)),
        lambda: F.fractional_max_pool2d(x, 3, 3, _random_samples=r(2, 3, 2).double()),
        lambda: F.fractional_max_pool2d(x[:, :, :0], 3, output_size=3),
        lambda: F.fractional_max_pool2d(x.long(), 3, 3, _random_samples=r(2, 3, 2)),
        lambda: F.fractional_max_pool2d(x.long(), 3, 3, _random_samples=r(2, 3, 2).long()),
        lambda: F.fractional_max_pool2d(x, (3, 3, 3), output_size=3),
        lambda: F.fractional_max_pool2d(x, 3, output_size=(3, 3, 3)),
        lambda: F.fractional_max_pool2d(lib.zeros(1, 2, 3, 4, 5), 3, output_size=3),
        lambda: F.fractional_max_pool2d(x, 3, output_size=(-1, 3)),
        lambda: F.fractional_max_pool3d(x3, 3, output_size=(4, 4, 5)),
        lambda: F.fractional_max_pool3d(x3, 2, output_size=(3, 6, 5)),
        lambda: F.fractional_max_pool3d(x3, 2, output_size=(3, 4, 7)),
        lambda: F.fractional_max_pool3d(x3, 2, output_size=3, _random_samples=r(2, 3, 2)),
        lambda: F.fractional_max_pool3d(x3, 2, output_size=3, _random_samples=r(1, 3, 3)),
        lambda: F.fractional_max_pool3d(x3[:, :, :0], 2, output_size=3),
        lambda: F.fractional_max_pool3d(x3[0, 0, 0], 2, output_size=3),
        lambda: F.fractional_max_pool3d(x3, (2, 2), output_size=3),
        lambda: F.fractional_max_pool3d(x3, 2),
        lambda: F.fractional_max_pool2d(x, 3, (6, 8), _random_samples=r(2, 3, 3)),
        lambda: F.fractional_max_pool2d(x, 3, (6, 8), _random_samples=r(2, 3, 2).double()),
        lambda: F.fractional_max_pool2d(x, 3, (-1, 3), _random_samples=r(1, 3, 2)),
        lambda: F.fractional_max_pool2d(x, 3, 3, _random_samples=r(2, 3).double()),
        lambda: F.fractional_max_pool2d(x, 3, 3, _random_samples=r(1, 4, 3)),
        lambda: F.fractional_max_pool2d(x, 3, 3, _random_samples=r(3, 4, 3)),
        lambda: F.fractional_max_pool2d(x, 3, 3, _random_samples=r(2, 3, 2, 1)),
        lambda: F.fractional_max_pool2d(x.long(), 3, 3, _random_samples=r(2, 3, 3).long()),
        lambda: F.fractional_max_pool3d(x3.long(), 2, 2, _random_samples=r(2, 3, 3).long()),
        lambda: F.fractional_max_pool3d(x3, 3, (6, 8, 3), _random_samples=r(2, 3, 2)),
        lambda: lib.nn.FractionalMaxPool3d(0, output_size=2),
        lambda: lib.nn.FractionalMaxPool2d(2, output_ratio=1.5),
        lambda: lib.nn.FractionalMaxPool3d(2, output_ratio=(0.5, 0.5, 1.0)),
        lambda: lib.nn.FractionalMaxPool2d(2),
        lambda: lib.nn.FractionalMaxPool3d(2, 3, 0.5),
    ]


@pytest.mark.parametrize("i", range(len(_frac_errors(torch))))
def test_fractional_max_pool_errors(i):
    _raises(_frac_errors(torch)[i], _frac_errors(ember)[i])


@pytest.mark.parametrize("nd", [2, 3])
def test_fractional_max_pool_modules(nd):
    shape = (2, 3, 9, 10) if nd == 2 else (2, 3, 6, 7, 8)
    a, u = _frac_case(shape, 2, (4,) * nd, nd)
    tm = getattr(torch.nn, f"FractionalMaxPool{nd}d")(2, 4, return_indices=True)
    em = getattr(ember.nn, f"FractionalMaxPool{nd}d")(2, 4, return_indices=True)
    assert repr(em) == repr(tm)
    assert list(em.state_dict()) == list(tm.state_dict()) == []
    tm = getattr(torch.nn, f"FractionalMaxPool{nd}d")(2, output_ratio=0.5, _random_samples=_t(u))
    em = getattr(ember.nn, f"FractionalMaxPool{nd}d")(2, output_ratio=0.5, _random_samples=_e(u))
    assert list(em.state_dict()) == list(tm.state_dict()) == ["_random_samples"]
    assert (em.kernel_size, em.output_size, em.output_ratio) == (
        tm.kernel_size,
        tm.output_size,
        tm.output_ratio,
    )
    np.testing.assert_array_equal(_np(em(_e(a))), _np(tm(_t(a))))


# ---------------------------------------------------------------------------------------------
# functional aliases


def test_with_indices_aliases():
    a = np.random.default_rng(0).standard_normal((2, 3, 6, 8, 8))
    cases = [
        ("max_pool1d_with_indices", (a[0, :, 0],), {"kernel_size": 2}),
        ("max_pool2d_with_indices", (a[0],), {"kernel_size": 3, "stride": 2, "padding": 1}),
        ("max_pool3d_with_indices", (a,), {"kernel_size": 2}),
        ("adaptive_max_pool1d_with_indices", (a[0, :, 0],), {"output_size": 3}),
        ("adaptive_max_pool2d_with_indices", (a[0],), {"output_size": (3, 5)}),
        ("adaptive_max_pool3d_with_indices", (a,), {"output_size": 2}),
    ]
    for name, args, kw in cases:
        tr = getattr(TF, name)(*(_t(x) for x in args), **kw)
        er = getattr(EF, name)(*(_e(x) for x in args), **kw)
        assert isinstance(er, tuple) and len(er) == 2, name
        for t, e in zip(tr, er):
            np.testing.assert_array_equal(_np(e), _np(t))
    u = np.random.default_rng(1).random((3, 6, 2))
    tr = TF.fractional_max_pool2d_with_indices(_t(a[0]), 2, 3, _random_samples=_t(u))
    er = EF.fractional_max_pool2d_with_indices(_e(a[0]), 2, 3, _random_samples=_e(u))
    assert isinstance(er, tuple)
    np.testing.assert_array_equal(_np(er[1]), _np(tr[1]))
    x = np.arange(2 * 6 * 2 * 2, dtype=np.float64).reshape(2, 6, 2, 2)
    np.testing.assert_array_equal(
        _np(EF.native_channel_shuffle(_e(x), 3)), _np(TF.native_channel_shuffle(_t(x), 3))
    )
    _raises(
        lambda: TF.native_channel_shuffle(_t(x), 4), lambda: EF.native_channel_shuffle(_e(x), 4)
    )


# ---------------------------------------------------------------------------------------------
# AdaptiveLogSoftmaxWithLoss


def _asm_pair(*args, **kw):
    torch.manual_seed(0)
    tm = torch.nn.AdaptiveLogSoftmaxWithLoss(*args, **kw).double()
    em = ember.nn.AdaptiveLogSoftmaxWithLoss(*args, **kw, dtype=ember.float64)
    em.load_state_dict({k: _e(v.numpy()) for k, v in tm.state_dict().items()})
    return tm, em


@pytest.mark.parametrize(
    "cfg",
    [
        ((16, 20, [4, 10, 15]), {"div_value": 2.0, "head_bias": True}),
        ((8, 10, [3]), {}),
        ((32, 50, (5, 20)), {"div_value": 4.0}),
    ],
)
def test_adaptive_log_softmax_matches_torch(cfg):
    args, kw = cfg
    tm, em = _asm_pair(*args, **kw)
    assert repr(em) == repr(tm)
    assert list(em.state_dict()) == list(tm.state_dict())
    assert [tuple(p.shape) for p in em.parameters()] == [tuple(p.shape) for p in tm.parameters()]
    rng = np.random.default_rng(0)
    n_classes = args[1]
    x = rng.standard_normal((9, args[0]))
    t = rng.integers(0, n_classes, 9)
    t[:2] = [0, n_classes - 1]
    tx, ex = _t(x, True), _e(x, True)
    to, eo = tm(tx, _t(t)), em(ex, _e(t))
    assert type(eo).__name__ == "_ASMoutput" and eo._fields == ("output", "loss")
    np.testing.assert_allclose(_np(eo.output), _np(to.output), rtol=1e-12)
    np.testing.assert_allclose(eo.loss.item(), to.loss.item(), rtol=1e-12)
    assert type(eo.loss.grad_fn).__name__ == type(to.loss.grad_fn).__name__
    to.loss.backward()
    eo.loss.backward()
    np.testing.assert_allclose(_np(ex.grad), _np(tx.grad), rtol=1e-10, atol=1e-12)
    for (n, p), (n2, q) in zip(tm.named_parameters(), em.named_parameters()):
        assert n == n2 and (p.grad is None) == (q.grad is None)  # unused clusters: None
        if p.grad is None:
            continue
        np.testing.assert_allclose(_np(q.grad), _np(p.grad), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(_np(em.log_prob(ex)), _np(tm.log_prob(tx)), rtol=1e-12)
    np.testing.assert_array_equal(_np(em.predict(ex)), _np(tm.predict(tx)))
    o1, o2 = tm(tx[0], _t(t[3])), em(ex[0], _e(t[3]))  # unbatched
    assert tuple(o2.output.shape) == tuple(o1.output.shape) == ()
    np.testing.assert_allclose(o2.output.item(), o1.output.item(), rtol=1e-12)


def test_adaptive_log_softmax_predict_mixed_and_init():
    tm, em = _asm_pair(6, 12, [2, 7], head_bias=True)
    with torch.no_grad():
        tm.head.bias.copy_(torch.tensor([0.0, 3.0, 3.0, 0.0]))
    em.head.bias.data.copy_(_e(np.array([0.0, 3.0, 3.0, 0.0])))
    x = np.random.default_rng(2).standard_normal((40, 6)) * 3
    np.testing.assert_array_equal(_np(em.predict(_e(x))), _np(tm.predict(_t(x))))
    # torch's default init: Linear's kaiming-uniform bounds; hidden sizes in // div_value ** i
    m = ember.nn.AdaptiveLogSoftmaxWithLoss(64, 100, [10, 50], div_value=4.0)
    assert [tuple(p.shape) for p in m.parameters()] == [
        (12, 64),
        (16, 64),
        (40, 16),
        (4, 64),
        (50, 4),
    ]
    assert float(m.head.weight.abs().max()) <= 1 / 8
    m.reset_parameters()


def _asm_errors(lib):
    A = lib.nn.AdaptiveLogSoftmaxWithLoss
    m = A(4, 10, [3, 6])
    z = lib.zeros
    return [
        lambda: A(4, 10, []),
        lambda: A(4, 10, [6, 3]),
        lambda: A(4, 10, [0, 3]),
        lambda: A(4, 10, [3, 10]),
        lambda: A(4, 10, [3, 3]),
        lambda: m(z(3, 4), lib.tensor([1, 2])),
        lambda: m(z(3, 4, 1), lib.tensor([1, 2, 3])),
        lambda: m(z(3, 4), lib.tensor(1)),
        lambda: m(z(3, 4), lib.zeros(3, 1, dtype=lib.long)),
        lambda: m(z(3, 4), lib.tensor([1, 2, 10])),
        lambda: m(z(3, 4), lib.tensor([-1, 2, 3])),
    ]


@pytest.mark.parametrize("i", range(len(_asm_errors(torch))))
def test_adaptive_log_softmax_errors(i):
    _raises(_asm_errors(torch)[i], _asm_errors(ember)[i])


# ---------------------------------------------------------------------------------------------
# CrossMapLRN2d, NLLLoss2d, Container


@pytest.mark.parametrize("size", [1, 2, 3, 4, 5, 7])
@pytest.mark.parametrize("channels", [1, 3, 6])
def test_cross_map_lrn2d_matches_torch(size, channels):
    rng = np.random.default_rng(size * 10 + channels)
    a = rng.standard_normal((2, channels, 3, 4))
    tm = torch.nn.CrossMapLRN2d(size, alpha=0.3, beta=0.6, k=1.5)
    em = ember.nn.CrossMapLRN2d(size, alpha=0.3, beta=0.6, k=1.5)
    assert repr(em) == repr(tm)
    tx, ex = _t(a, True), _e(a, True)
    ty, ey = tm(tx), em(ex)
    assert type(ey.grad_fn).__name__ == type(ty.grad_fn).__name__ == "CrossMapLRN2dBackward"
    np.testing.assert_allclose(_np(ey), _np(ty), rtol=1e-12, atol=1e-14)
    go = rng.standard_normal(ty.shape)
    if size == 1:  # torch's backward narrows past the end of its padded buffer
        _raises(lambda: ty.backward(_t(go)), lambda: ey.backward(_e(go)))
        return
    ty.backward(_t(go))
    ey.backward(_e(go))
    np.testing.assert_allclose(_np(ex.grad), _np(tx.grad), rtol=1e-10, atol=1e-12)
    a32 = a.astype(np.float32)
    np.testing.assert_allclose(_np(em(_e(a32))), _np(tm(_t(a32))), rtol=1e-5, atol=1e-6)


def test_cross_map_lrn2d_errors_and_defaults():
    assert repr(ember.nn.CrossMapLRN2d(3)) == repr(torch.nn.CrossMapLRN2d(3))
    _raises(
        lambda: torch.nn.CrossMapLRN2d(3)(torch.zeros(2, 3, 4)),
        lambda: ember.nn.CrossMapLRN2d(3)(ember.zeros(2, 3, 4)),
    )


def test_nllloss2d_and_container_warn_as_torch():
    for lib in (torch, ember):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            loss = lib.nn.NLLLoss2d(ignore_index=1, reduction="sum")
            c = lib.nn.Container(a=lib.nn.Linear(2, 3), b=lib.nn.ReLU())
        assert [x.category for x in w] == [FutureWarning, FutureWarning]
        assert all(x.filename == __file__ for x in w)
        assert isinstance(loss, lib.nn.NLLLoss) and isinstance(c, lib.nn.Module)
    tw = [str(x.message) for x in w]
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        tl, el = torch.nn.NLLLoss2d(), ember.nn.NLLLoss2d()
        tc, ec = (
            torch.nn.Container(a=torch.nn.Linear(2, 3)),
            ember.nn.Container(a=ember.nn.Linear(2, 3)),
        )
    msgs = [str(x.message) for x in w]
    assert msgs[0] == msgs[1] and msgs[2] == msgs[3] and set(msgs) == set(tw)
    assert repr(el) == repr(tl) and repr(ec) == repr(tc)
    assert list(ec.state_dict()) == list(tc.state_dict())
    a = np.random.default_rng(0).standard_normal((2, 4, 3, 3))
    t = np.random.default_rng(1).integers(0, 4, (2, 3, 3))
    np.testing.assert_allclose(el(_e(a), _e(t)).item(), tl(_t(a), _t(t)).item(), rtol=1e-12)


# ---------------------------------------------------------------------------------------------
# optimizers


SHAPES = [(4, 5), (3,), (2, 3, 4), (6, 2)]


def _params(lib, shapes, seed=0):
    rng = np.random.default_rng(seed)
    mk = _t if lib is torch else _e
    return [lib.nn.Parameter(mk(rng.standard_normal(s))) for s in shapes]


def _grads(step, shapes, seed=100):
    rng = np.random.default_rng(seed + step)
    return [rng.standard_normal(s) for s in shapes]


def _run(lib, opt, params, shapes, steps, start=0):
    mk = _t if lib is torch else _e
    for i in range(start, start + steps):
        for p, g in zip(params, _grads(i, shapes)):
            p.grad = mk(g)
        opt.step()


def _same(ep, tp, rtol=1e-12, atol=1e-13):
    for e, t in zip(ep, tp):
        np.testing.assert_allclose(_np(e), _np(t), rtol=rtol, atol=atol)


def _same_state(eo, to, rtol=1e-12, atol=1e-13):
    es, ts = eo.state_dict(), to.state_dict()
    assert es["param_groups"] == ts["param_groups"]
    assert list(es["state"]) == list(ts["state"])
    for k in ts["state"]:
        assert list(es["state"][k]) == list(ts["state"][k])
        for key, tv in ts["state"][k].items():
            ev = es["state"][k][key]
            if isinstance(tv, torch.Tensor):
                assert str(ev.dtype) == str(tv.dtype) and tuple(ev.shape) == tuple(tv.shape), key
                np.testing.assert_allclose(_np(ev), _np(tv), rtol=rtol, atol=atol)
            else:
                assert type(ev) is type(tv) and ev == tv, key


ADAFACTOR_CFGS = [
    {},
    {"lr": 0.05, "weight_decay": 0.1},
    {"maximize": True, "d": 2.0, "beta2_decay": -0.5},
    {"eps": (1e-30, 1e-4), "foreach": True},
    {"lr": 0.3, "foreach": False},
]


@pytest.mark.parametrize("cfg", ADAFACTOR_CFGS)
def test_adafactor_trajectory_and_state_dict(cfg, tmp_path):
    tp, ep = _params(torch, SHAPES), _params(ember, SHAPES)
    to, eo = torch.optim.Adafactor(tp, **cfg), ember.optim.Adafactor(ep, **cfg)
    _run(torch, to, tp, SHAPES, 20)
    _run(ember, eo, ep, SHAPES, 20)
    _same(ep, tp)
    _same_state(eo, to)
    assert sorted(eo.state[ep[0]]) == ["col_var", "row_var", "step"]
    assert sorted(eo.state[ep[1]]) == ["step", "variance"]
    # load torch's state dict into a fresh ember optimizer and continue: the same numbers
    torch.save(to.state_dict(), tmp_path / "t.pt")
    ep2 = [ember.nn.Parameter(_e(_np(p))) for p in tp]
    eo2 = ember.optim.Adafactor(ep2, **cfg)
    eo2.load_state_dict(ember.load(tmp_path / "t.pt"))
    _run(torch, to, tp, SHAPES, 5, start=20)
    _run(ember, eo2, ep2, SHAPES, 5, start=20)
    _same(ep2, tp)
    _same_state(eo2, to)


def test_adafactor_float32_and_errors():
    shapes = [(5, 3), (4,)]
    tp, ep = _params(torch, shapes), _params(ember, shapes)
    tp = [torch.nn.Parameter(p.detach().float()) for p in tp]
    ep = [ember.nn.Parameter(p.detach().float()) for p in ep]
    to, eo = torch.optim.Adafactor(tp), ember.optim.Adafactor(ep)
    for i in range(10):
        for p, q, g in zip(tp, ep, _grads(i, shapes)):
            p.grad, q.grad = _t(g.astype(np.float32)), _e(g.astype(np.float32))
        to.step()
        eo.step()
    _same(ep, tp, rtol=1e-5, atol=1e-6)
    for kw in (
        {"lr": -1.0},
        {"beta2_decay": 0.5},
        {"eps": (-1.0, 1e-3)},
        {"eps": (None, -1.0)},
        {"d": 0.5},
        {"weight_decay": -1.0},
    ):
        _raises(
            lambda kw=kw: torch.optim.Adafactor(_params(torch, shapes), **kw),
            lambda kw=kw: ember.optim.Adafactor(_params(ember, shapes), **kw),
        )
    assert repr(eo) == repr(to)


def _sparse_grad(lib, step, rows, cols):
    rng = np.random.default_rng(200 + step)
    idx = rng.integers(0, rows, (1, 5))  # repeated rows: coalesced (summed) first
    vals = rng.standard_normal((5, cols))
    if lib is torch:
        return torch.sparse_coo_tensor(torch.tensor(idx), torch.tensor(vals), (rows, cols))
    return ember.sparse_coo_tensor(ember.tensor(idx), ember.tensor(vals), (rows, cols))


@pytest.mark.parametrize("cfg", [{}, {"lr": 0.01, "betas": (0.8, 0.9)}, {"maximize": True}])
def test_sparse_adam_trajectory_and_state_dict(cfg, tmp_path):
    shapes = [(7, 3), (4, 2)]
    tp, ep = _params(torch, shapes), _params(ember, shapes)
    to, eo = torch.optim.SparseAdam(tp, **cfg), ember.optim.SparseAdam(ep, **cfg)

    def run(start, steps, eopt, eparams):
        for i in range(start, start + steps):
            for j, (p, q) in enumerate(zip(tp, eparams)):
                p.grad = _sparse_grad(torch, i * 2 + j, *p.shape)
                # ember's Tensor.grad setter compares dense shapes: set the slot directly
                q._grad = _sparse_grad(ember, i * 2 + j, *q.shape)
            to.step()
            eopt.step()

    run(0, 20, eo, ep)
    _same(ep, tp)
    _same_state(eo, to)
    torch.save(to.state_dict(), tmp_path / "t.pt")
    ep2 = [ember.nn.Parameter(_e(_np(p))) for p in tp]
    eo2 = ember.optim.SparseAdam(ep2, **cfg)
    eo2.load_state_dict(ember.load(tmp_path / "t.pt"))
    run(20, 5, eo2, ep2)
    _same(ep2, tp)
    _same_state(eo2, to)


def test_sparse_adam_errors():
    shapes = [(3, 2)]
    for kw in ({"lr": 0.0}, {"eps": 0.0}, {"betas": (1.0, 0.9)}, {"betas": (0.9, -0.1)}):
        _raises(
            lambda kw=kw: torch.optim.SparseAdam(_params(torch, shapes), **kw),
            lambda kw=kw: ember.optim.SparseAdam(_params(ember, shapes), **kw),
        )
    _raises(
        lambda: torch.optim.SparseAdam([torch.zeros(2, 2, dtype=torch.complex64)]),
        lambda: ember.optim.SparseAdam([ember.zeros(2, 2, dtype=ember.complex64)]),
    )

    def dense(lib):
        (p,) = _params(lib, shapes)
        opt = lib.optim.SparseAdam([p])
        p.grad = lib.ones(3, 2, dtype=lib.float64)
        opt.step()

    _raises(lambda: dense(torch), lambda: dense(ember))


MUON_CFGS = [
    {},
    {"lr": 0.02, "nesterov": False, "weight_decay": 0.0},
    {"adjust_lr_fn": "match_rms_adamw", "momentum": 0.9, "ns_steps": 3},
    {"adjust_lr_fn": "original", "lr": 0.01},
]
MUON_SHAPES = [(8, 5), (5, 8), (16, 16)]


@pytest.mark.parametrize("cfg", MUON_CFGS)
def test_muon_trajectory_and_state_dict(cfg, tmp_path):
    tp, ep = _params(torch, MUON_SHAPES), _params(ember, MUON_SHAPES)
    to, eo = torch.optim.Muon(tp, **cfg), ember.optim.Muon(ep, **cfg)
    _run(torch, to, tp, MUON_SHAPES, 20)
    _run(ember, eo, ep, MUON_SHAPES, 20)
    # the orthogonalisation runs in bfloat16 (float32 sums): a rounding can differ by one
    # bfloat16 ulp where torch's GEMM adds in another order, hence lr-scaled tolerances
    lr = cfg.get("lr", 1e-3)
    _same(ep, tp, rtol=0, atol=lr * 0.05)
    _same_state(eo, to)
    torch.save(to.state_dict(), tmp_path / "t.pt")
    ep2 = [ember.nn.Parameter(_e(_np(p))) for p in tp]
    eo2 = ember.optim.Muon(ep2, **cfg)
    eo2.load_state_dict(ember.load(tmp_path / "t.pt"))
    _run(torch, to, tp, MUON_SHAPES, 5, start=20)
    _run(ember, eo2, ep2, MUON_SHAPES, 5, start=20)
    _same(ep2, tp, rtol=0, atol=lr * 0.05)


def test_muon_newton_schulz_close_to_torch():
    from torch.optim._muon import _zeropower_via_newtonschulz as tns

    from ember.optim.muon import _zeropower_via_newtonschulz as ens

    coeffs = (3.4445, -4.7750, 2.0315)
    for shape in [(6, 9), (9, 6), (32, 48), (1, 5)]:
        a = np.random.default_rng(sum(shape)).standard_normal(shape).astype(np.float32)
        t, e = tns(_t(a), coeffs, 5, 1e-7), ens(_e(a), coeffs, 5, 1e-7)
        assert e.dtype == ember.bfloat16 and tuple(e.shape) == tuple(t.shape)
        tf, ef = _np(t), _np(e)
        if max(shape) < 10:  # one float32 sum order: every rounding is torch's
            np.testing.assert_array_equal(ef, tf)
        # larger sums round (rarely) otherwise by one bfloat16 ulp, which later steps amplify
        np.testing.assert_allclose(ef, tf, rtol=0, atol=2e-2)


def test_muon_errors():
    _raises(
        lambda: torch.optim.Muon(_params(torch, [(3, 4), (4,)])),
        lambda: ember.optim.Muon(_params(ember, [(3, 4), (4,)])),
    )
    for kw in ({"lr": -1.0}, {"momentum": -0.1}, {"weight_decay": -1.0}, {"adjust_lr_fn": "x"}):
        _raises(
            lambda kw=kw: torch.optim.Muon(_params(torch, [(3, 4)]), **kw),
            lambda kw=kw: ember.optim.Muon(_params(ember, [(3, 4)]), **kw),
        )

    def many_steps(lib):
        (p,) = _params(lib, [(3, 4)])
        opt = lib.optim.Muon([p], ns_steps=100)
        p.grad = lib.ones(3, 4, dtype=lib.float64)
        opt.step()

    _raises(lambda: many_steps(torch), lambda: many_steps(ember))
    tp, ep = _params(torch, [(3, 4)]), _params(ember, [(3, 4)])
    assert repr(ember.optim.Muon(ep)) == repr(torch.optim.Muon(tp))


def test_adafactor_state_dict_loads_into_torch(tmp_path):
    tp, ep = _params(torch, SHAPES), _params(ember, SHAPES)
    to, eo = torch.optim.Adafactor(tp, lr=0.05), ember.optim.Adafactor(ep, lr=0.05)
    _run(torch, to, tp, SHAPES, 6)
    _run(ember, eo, ep, SHAPES, 6)
    ember.save(eo.state_dict(), tmp_path / "e.pt")
    tp2 = [torch.nn.Parameter(_t(_np(p))) for p in ep]
    to2 = torch.optim.Adafactor(tp2, lr=0.05)
    to2.load_state_dict(torch.load(tmp_path / "e.pt"))
    _run(torch, to2, tp2, SHAPES, 4, start=6)
    _run(ember, eo, ep, SHAPES, 4, start=6)
    _same(ep, tp2)


# ---------------------------------------------------------------------------------------------
# nn.utils leftovers: NamedMemberAccessor (torch's module path), nn.utils.init


def _accessor_ops(lib):
    from importlib import import_module

    nma = import_module(f"{lib.__name__}.nn.utils._named_member_accessor")
    m = lib.nn.Sequential(lib.nn.Linear(2, 3), lib.nn.Sequential(lib.nn.BatchNorm1d(3)))
    a = nma.NamedMemberAccessor(m)
    out = [tuple(a.get_tensor("0.weight").shape), type(a.get_submodule("1.0")).__name__]
    out.append(a.check_keys(["0.weight", "1.0.running_mean", "nope"]))
    new = lib.zeros(3, 2)
    old = a.swap_tensor("0.weight", new)
    out.append((tuple(old.shape), a.get_tensor("0.weight") is new))
    a.set_tensors(["0.bias", "1.0.weight"], [lib.ones(3), lib.ones(3) * 2])
    out.append([float(t.sum()) for t in a.get_tensors(["0.bias", "1.0.weight"])])
    orig, missing = a.swap_tensors_dict({"0.bias": lib.zeros(3), "extra": lib.ones(1)}, True)
    out.append((sorted(orig), missing))
    a.del_tensors(["extra"])
    out.append([n for n, _ in a.named_tensors()])
    out.append([n for n, _ in a.named_modules()])
    for bad in (
        lambda: a.get_tensor("0.nope"),
        lambda: a.get_submodule("0.weight"),
        lambda: a.swap_tensor("0.nope", lib.ones(1)),
        lambda: a.swap_tensors_dict({"0.nope": lib.ones(1)}),
        lambda: a.set_tensor("0.weight", 3),
        lambda: a.set_tensors(["0.weight"], []),
        lambda: a.swap_submodule("1.x", lib.nn.ReLU()),
        lambda: nma.set_tensor(m, "a.b", lib.ones(1)),
        lambda: nma.swap_tensor(m, "", lib.ones(1)),
    ):
        try:
            bad()
            out.append(None)
        except Exception as e:  # noqa: BLE001 - compare the class and message
            out.append((type(e).__name__, str(e).replace("tensor(", "")[:40]))
    out.append(type(a.swap_submodule("1.0", lib.nn.ReLU())).__name__)
    return out


def test_named_member_accessor_matches_torch():
    t, e = _accessor_ops(torch), _accessor_ops(ember)
    assert e[:-10] == t[:-10]
    for x, y in zip(e[-10:], t[-10:]):
        if isinstance(y, tuple) and y[0] == "TypeError" and "is not an instance" in y[1]:
            assert x[0] == y[0]  # the message embeds the object's repr
        else:
            assert x == y


def test_nn_utils_init_module():
    import ember.nn.utils.init as einit

    m = einit.skip_init(ember.nn.Linear, 5, 1)
    assert tuple(m.weight.shape) == (1, 5)
    assert hasattr(torch.nn.utils.init, "skip_init") and einit.__all__ == ["skip_init"]

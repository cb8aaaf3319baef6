"""Containers (Sequential, ModuleList, ModuleDict, ParameterList, ParameterDict) and the
Identity / Linear / Bilinear / Flatten / Unflatten layers against torch."""

from __future__ import annotations

from collections import OrderedDict

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

_rng = np.random.default_rng(0)


def names(m):
    return [n for n, _ in m.named_modules()], [n for n, _ in m.named_parameters()]


def err(fn):
    try:
        fn()
    except Exception as ex:  # noqa: BLE001
        return type(ex).__name__, str(ex)
    return None


# ------------------------------------------------------------------------------ Sequential
def seq_ops(lib):
    nn = lib.nn
    out = []
    s = nn.Sequential(nn.Linear(1, 2), nn.Linear(2, 3), nn.Linear(3, 4))
    out.append(repr(s[1]))
    out.append(repr(s[-1]))
    out.append(repr(s[1:]))
    out.append(type(s[:2]).__name__)
    s.append(nn.Identity())
    s.insert(0, nn.Flatten())
    s.insert(-1, nn.Identity())
    s.extend(nn.Sequential(nn.Linear(4, 4)))
    out.append(repr(s))
    del s[1]
    out.append(repr(s))
    out.append(names(s))
    out.append(repr(s.pop(0)))
    s[0] = nn.Linear(2, 2)
    out.append(repr(s))
    out.append(len(s))
    out.append(err(lambda: s[10]))
    out.append(err(lambda: s.insert(20, nn.Identity())))
    out.append(err(lambda: s + 1))
    out.append(repr(s + nn.Sequential(nn.Identity())))
    out.append(repr(nn.Sequential(nn.Identity()) * 2))
    out.append(repr(nn.Sequential(OrderedDict([("x", nn.Linear(1, 1)), ("y", nn.Identity())]))))
    out.append([k for k in dir(s) if k.isdigit()])
    return out


def test_sequential_matches_torch():
    assert seq_ops(ember) == seq_ops(torch)


def test_sequential_forward_gradients():
    torch.manual_seed(0)
    t = torch.nn.Sequential(
        torch.nn.Linear(5, 4), torch.nn.Flatten(0), torch.nn.Unflatten(0, (2, 12))
    )
    e = ember.nn.Sequential(
        ember.nn.Linear(5, 4), ember.nn.Flatten(0), ember.nn.Unflatten(0, (2, 12))
    )
    e.load_state_dict({k: ember.from_numpy(v.numpy().copy()) for k, v in t.state_dict().items()})
    x = _rng.standard_normal((6, 5)).astype(np.float32)
    tx = torch.from_numpy(x.copy()).requires_grad_()
    ex = ember.from_numpy(x.copy()).requires_grad_()
    ty, ey = t(tx), e(ex)
    assert tuple(ey.shape) == tuple(ty.shape) == (2, 12)
    np.testing.assert_allclose(ey._data, ty.detach().numpy(), rtol=1e-5, atol=1e-6)
    ty.pow(2).sum().backward()
    ey.pow(2).sum().backward()
    np.testing.assert_allclose(ex.grad._data, tx.grad.numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(
        e[0].weight.grad._data, t[0].weight.grad.numpy(), rtol=1e-5, atol=1e-5
    )


# ------------------------------------------------------------------------------ ModuleList
def modulelist_ops(lib):
    nn = lib.nn
    out = []
    ml = nn.ModuleList([nn.Linear(2, 2) for _ in range(3)])
    ml.append(nn.Identity())
    ml.extend([nn.Flatten(), nn.Flatten()])
    ml.insert(1, nn.Linear(1, 1))
    out.append(repr(ml))
    out.append(repr(ml[2:4]))
    del ml[0]
    out.append(names(ml))
    del ml[::2]
    out.append(repr(ml))
    ml[-1] = nn.Linear(3, 3)
    out.append(repr(ml.pop(1)))
    out.append(len(ml))
    out.append(err(lambda: ml[7]))
    out.append(err(lambda: ml.extend(3)))
    out.append(repr(ml + nn.ModuleList([nn.Identity()])))
    grid = nn.ModuleList(
        [nn.ModuleList([nn.Linear(i + 1, j + 1) for j in range(2)]) for i in range(2)]
    )
    out.append(repr(grid[1][0]))
    out.append(names(grid))
    return out


def test_modulelist_matches_torch():
    assert modulelist_ops(ember) == modulelist_ops(torch)


def moduledict_ops(lib):
    nn = lib.nn
    out = []
    md = nn.ModuleDict({"b": nn.Linear(1, 1), "a": nn.Identity()})
    md["c"] = nn.Flatten()
    md.update([("d", nn.Linear(2, 2))])
    md.update(OrderedDict(e=nn.Identity()))
    out.append(repr(md))
    out.append(list(md.keys()))
    out.append("a" in md)
    out.append(repr(md.pop("a")))
    del md["b"]
    out.append(names(md))
    out.append(err(lambda: md.update(3)))
    out.append(err(lambda: md.update([("x",)])))
    out.append(err(lambda: md["zz"]))
    md.clear()
    out.append(len(md))
    return out


def test_moduledict_matches_torch():
    assert moduledict_ops(ember) == moduledict_ops(torch)


# ------------------------------------------------------------------------------ parameters
def paramlist_ops(lib):
    nn = lib.nn
    out = []
    pl = nn.ParameterList([nn.Parameter(lib.ones(2, 3)), lib.zeros(4)])
    pl.append(lib.ones(1, dtype=lib.float64))
    pl.extend([nn.Parameter(lib.ones(5))])
    out.append(repr(pl))
    out.append([type(p).__name__ for p in pl])
    out.append([n for n, _ in pl.named_parameters()])
    out.append(len(pl))
    out.append(err(lambda: pl[9]))
    out.append(err(lambda: pl()))
    pd = nn.ParameterDict({"w": nn.Parameter(lib.ones(2)), "b": lib.zeros(3)})
    pd["c"] = lib.ones(2, 2)
    pd.update([("d", nn.Parameter(lib.ones(1)))])
    out.append(repr(pd))
    out.append(list(pd.keys()))
    out.append([n for n, _ in pd.named_parameters()])
    out.append("w" in pd)
    out.append(repr(pd.pop("w").shape))
    out.append(pd.popitem()[0])
    out.append(list((pd | nn.ParameterDict({"z": lib.ones(1)})).keys()))
    out.append(err(lambda: pd[3]))
    out.append(err(lambda: pd(1)))
    m = nn.Module()
    m.pl = pl
    m.pd = pd
    out.append(list(m.state_dict().keys()))
    return out


def test_parameterlist_dict_match_torch():
    assert paramlist_ops(ember) == paramlist_ops(torch)


# ------------------------------------------------------------------------------ layers
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("shape", [(4, 5), (2, 3, 5), (5,)])
def test_linear_matches_torch(bias, shape):
    torch.manual_seed(1)
    t = torch.nn.Linear(5, 3, bias=bias).double()
    e = ember.nn.Linear(5, 3, bias=bias).double()
    e.load_state_dict({k: ember.from_numpy(v.numpy().copy()) for k, v in t.state_dict().items()})
    assert repr(e) == repr(t)
    x = _rng.standard_normal(shape)
    tx = torch.from_numpy(x.copy()).requires_grad_()
    ex = ember.from_numpy(x.copy()).requires_grad_()
    ty, ey = t(tx), e(ex)
    assert ey.grad_fn.name() == ty.grad_fn.name()
    np.testing.assert_allclose(ey._data, ty.detach().numpy(), rtol=1e-10, atol=1e-12)
    g = _rng.standard_normal(ty.shape)
    ty.backward(torch.from_numpy(g))
    ey.backward(ember.from_numpy(g))
    np.testing.assert_allclose(ex.grad._data, tx.grad.numpy(), rtol=1e-10, atol=1e-12)
    for tp, ep in zip(t.parameters(), e.parameters()):
        np.testing.assert_allclose(ep.grad._data, tp.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_linear_noncontiguous_input():
    t = torch.nn.Linear(4, 2).double()
    e = ember.nn.Linear(4, 2).double()
    e.load_state_dict({k: ember.from_numpy(v.numpy().copy()) for k, v in t.state_dict().items()})
    x = _rng.standard_normal((4, 3, 5))
    ty = t(torch.from_numpy(x.copy()).transpose(0, 2))
    ey = e(ember.from_numpy(x.copy()).transpose(0, 2))
    np.testing.assert_allclose(ey._data, ty.detach().numpy(), rtol=1e-10)


def test_linear_double_backward():
    t = torch.nn.Linear(3, 2).double()
    e = ember.nn.Linear(3, 2).double()
    e.load_state_dict({k: ember.from_numpy(v.numpy().copy()) for k, v in t.state_dict().items()})
    x = _rng.standard_normal((4, 3))
    res = []
    for lib, m in ((torch, t), (ember, e)):
        xx = lib.from_numpy(x.copy()).requires_grad_()
        y = m(xx).tanh().sum()
        (gx,) = lib.autograd.grad(y, xx, create_graph=True)
        (gw,) = lib.autograd.grad(gx.pow(2).sum(), m.weight)
        res.append(gw.detach().numpy() if lib is torch else gw._data)
    np.testing.assert_allclose(res[1], res[0], rtol=1e-9, atol=1e-12)


def test_bilinear_matches_torch():
    torch.manual_seed(2)
    t = torch.nn.Bilinear(3, 4, 2).double()
    e = ember.nn.Bilinear(3, 4, 2).double()
    e.load_state_dict({k: ember.from_numpy(v.numpy().copy()) for k, v in t.state_dict().items()})
    assert repr(e) == repr(t)
    x1, x2 = _rng.standard_normal((5, 3)), _rng.standard_normal((5, 4))
    tin = [torch.from_numpy(a.copy()).requires_grad_() for a in (x1, x2)]
    ein = [ember.from_numpy(a.copy()).requires_grad_() for a in (x1, x2)]
    ty, ey = t(*tin), e(*ein)
    np.testing.assert_allclose(ey._data, ty.detach().numpy(), rtol=1e-10)
    ty.sin().sum().backward()
    ey.sin().sum().backward()
    for a, b in zip(ein, tin):
        np.testing.assert_allclose(a.grad._data, b.grad.numpy(), rtol=1e-10)
    np.testing.assert_allclose(e.weight.grad._data, t.weight.grad.numpy(), rtol=1e-10)
    np.testing.assert_allclose(e.bias.grad._data, t.bias.grad.numpy(), rtol=1e-10)


def test_identity_flatten_unflatten():
    x = _rng.standard_normal((2, 3, 4, 5)).astype(np.float32)
    for build in (
        lambda nn: nn.Identity(3, foo=1),
        lambda nn: nn.Flatten(),
        lambda nn: nn.Flatten(0, 2),
        lambda nn: nn.Flatten(-2),
        lambda nn: nn.Unflatten(1, (3, 1)),
        lambda nn: nn.Unflatten(-1, [5, 1]),
    ):
        t, e = build(torch.nn), build(ember.nn)
        assert repr(e) == repr(t)
        ty, ey = t(torch.from_numpy(x.copy())), e(ember.from_numpy(x.copy()))
        assert tuple(ey.shape) == tuple(ty.shape)
        np.testing.assert_array_equal(ey._data, ty.numpy())
    for bad in ((1, 3), (1, (2, "a")), ("x", (2,))):
        assert err(lambda b=bad: ember.nn.Unflatten(*b)) == err(
            lambda b=bad: torch.nn.Unflatten(*b)
        )


def test_default_init_distribution():
    ember.manual_seed(0)
    lin = ember.nn.Linear(400, 300)
    w, b = lin.weight._data, lin.bias._data
    bound = 1 / np.sqrt(400)  # kaiming_uniform(a=sqrt(5)) gives 1/sqrt(fan_in) too
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.98 * bound
    assert abs(w.mean()) < 0.01 * bound * 10
    np.testing.assert_allclose(w.std(), bound / np.sqrt(3), rtol=0.02)
    assert np.abs(b).max() <= bound
    bil = ember.nn.Bilinear(50, 20, 30)
    bb = 1 / np.sqrt(50)
    assert np.abs(bil.weight._data).max() <= bb
    np.testing.assert_allclose(bil.weight._data.std(), bb / np.sqrt(3), rtol=0.05)
    assert lin.weight.dtype == ember.float32
    assert ember.nn.Linear(2, 2, dtype=ember.float64).weight.dtype == ember.float64

"""nn.utils.parametrize and parametrizations (weight_norm, spectral_norm) against torch."""

from __future__ import annotations

import copy
import pickle
from collections import OrderedDict

import numpy as np
import pytest

import ember
from ember.nn.utils import parametrizations as EP
from ember.nn.utils import parametrize as EPZ

torch = pytest.importorskip("torch")

_rng = np.random.default_rng(0)


def to_ember_sd(sd):
    return OrderedDict((k, ember.from_numpy(v.detach().numpy().copy())) for k, v in sd.items())


def np_of(t):
    return t.detach().numpy() if isinstance(t, torch.Tensor) else t.detach()._data


def symmetric(lib):
    class Symmetric(lib.nn.Module):
        def forward(self, X):
            return (X + X.mT) / 2

        def right_inverse(self, A):
            return A

    return Symmetric


def build_sym(lib):
    m = lib.nn.Linear(3, 3).double()
    lib.nn.utils.parametrize.register_parametrization(m, "weight", symmetric(lib)())
    return m


def test_register_parametrization_matches_torch():
    torch.manual_seed(0)
    t = build_sym(torch)
    e = build_sym(ember)
    assert repr(e) == repr(t)
    assert type(e).__name__ == "ParametrizedLinear"
    assert list(e.state_dict()) == list(t.state_dict())
    assert [n for n, _ in e.named_parameters()] == [n for n, _ in t.named_parameters()]
    e.load_state_dict(to_ember_sd(t.state_dict()))
    np.testing.assert_allclose(np_of(e.weight), np_of(t.weight))
    w = np_of(e.weight)
    np.testing.assert_array_equal(w, w.T)
    assert EPZ.is_parametrized(e) and EPZ.is_parametrized(e, "weight")
    assert not EPZ.is_parametrized(e, "bias")
    assert EPZ.type_before_parametrizations(e) is ember.nn.Linear
    # gradients flow to the original
    x = _rng.standard_normal((2, 3))
    t(torch.from_numpy(x.copy())).pow(2).sum().backward()
    e(ember.from_numpy(x.copy())).pow(2).sum().backward()
    go_t = t.parametrizations.weight.original.grad
    go_e = e.parametrizations.weight.original.grad
    np.testing.assert_allclose(np_of(go_e), np_of(go_t), rtol=1e-10)
    # assignment goes through right_inverse
    a = _rng.standard_normal((3, 3))
    a = a + a.T
    e.weight = ember.from_numpy(a.copy())
    np.testing.assert_allclose(np_of(e.weight), a, rtol=1e-12)
    with EPZ.cached():
        assert e.weight is e.weight
    assert e.weight is not e.weight
    e2 = copy.deepcopy(e)
    np.testing.assert_allclose(np_of(e2.weight), a, rtol=1e-12)
    with pytest.raises(RuntimeError, match="Serialization of parametrized modules"):
        pickle.dumps(e)


def test_remove_parametrizations():
    for leave in (True, False):
        res = []
        for lib in (torch, ember):
            torch.manual_seed(0)
            m = build_sym(lib)
            if lib is ember:
                m.load_state_dict(to_ember_sd(res[0][2]))
            sd = m.state_dict()
            orig = m.parametrizations.weight.original
            lib.nn.utils.parametrize.remove_parametrizations(m, "weight", leave_parametrized=leave)
            res.append((type(m).__name__, list(m.state_dict()), sd, np_of(m.weight)))
            assert m.weight is orig and type(m.weight) is lib.nn.Parameter
        assert res[0][:2] == res[1][:2]
        np.testing.assert_allclose(res[1][3], res[0][3])
    errs = []
    for lib in (torch, ember):
        with pytest.raises(ValueError) as exc:
            lib.nn.utils.parametrize.register_parametrization(
                lib.nn.Linear(2, 2), "nope", symmetric(lib)()
            )
        errs.append(str(exc.value))
    assert errs[0] == errs[1]


def test_register_shape_change_error():
    class Bad(ember.nn.Module):
        def forward(self, X):
            return X[0]

    with pytest.raises(ValueError, match="may not change the shape"):
        EPZ.register_parametrization(ember.nn.Linear(2, 2), "weight", Bad())


@pytest.mark.parametrize("dim", [0, 1, None])
def test_weight_norm_matches_torch(dim):
    torch.manual_seed(1)
    t = torch.nn.utils.parametrizations.weight_norm(torch.nn.Linear(4, 3).double(), dim=dim)
    e = EP.weight_norm(ember.nn.Linear(4, 3).double(), dim=dim)
    assert list(e.state_dict()) == list(t.state_dict())
    assert [tuple(v.shape) for v in e.state_dict().values()] == [
        tuple(v.shape) for v in t.state_dict().values()
    ]
    assert repr(e) == repr(t)
    e.load_state_dict(to_ember_sd(t.state_dict()))
    np.testing.assert_allclose(np_of(e.weight), np_of(t.weight), rtol=1e-12)
    x = _rng.standard_normal((5, 4))
    t(torch.from_numpy(x.copy())).sin().sum().backward()
    e(ember.from_numpy(x.copy())).sin().sum().backward()
    for name in ("original0", "original1"):
        gt = getattr(t.parametrizations.weight, name).grad
        ge = getattr(e.parametrizations.weight, name).grad
        np.testing.assert_allclose(np_of(ge), np_of(gt), rtol=1e-10, atol=1e-12)


def test_weight_norm_loads_old_keys():
    e = EP.weight_norm(ember.nn.Linear(2, 2))
    g = ember.ones(2, 1)
    v = ember.tensor([[3.0, 4.0], [0.0, 2.0]])
    e.load_state_dict({"weight_g": g, "weight_v": v, "bias": ember.zeros(2)})
    np.testing.assert_allclose(np_of(e.weight), [[0.6, 0.8], [0.0, 1.0]], rtol=1e-6)


@pytest.mark.parametrize("training", [True, False])
def test_spectral_norm_matches_torch(training):
    torch.manual_seed(2)
    t = torch.nn.utils.parametrizations.spectral_norm(torch.nn.Linear(5, 4).double())
    e = EP.spectral_norm(ember.nn.Linear(5, 4).double())
    assert list(e.state_dict()) == list(t.state_dict())
    assert repr(e) == repr(t)
    e.load_state_dict(to_ember_sd(t.state_dict()))
    t.train(training)
    e.train(training)
    x = _rng.standard_normal((3, 5))
    for _ in range(3):
        ty = t(torch.from_numpy(x.copy()))
        ey = e(ember.from_numpy(x.copy()))
        np.testing.assert_allclose(np_of(ey), np_of(ty), rtol=1e-9)
    ty.sum().backward()
    ey.sum().backward()
    gt = t.parametrizations.weight.original.grad
    ge = e.parametrizations.weight.original.grad
    np.testing.assert_allclose(np_of(ge), np_of(gt), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(
        np_of(e.parametrizations.weight[0]._u), np_of(t.parametrizations.weight[0]._u), rtol=1e-9
    )
    s = np.linalg.svd(np_of(e.weight), compute_uv=False)
    assert abs(s[0] - 1) < 0.1


def test_spectral_norm_errors():
    for args, exc in (((ember.nn.Linear(2, 2), "nope"), ValueError),):
        with pytest.raises(exc, match="has no parameter or buffer with name 'nope'"):
            EP.spectral_norm(*args)
    with pytest.raises(ValueError, match="Expected n_power_iterations to be positive"):
        EP.spectral_norm(ember.nn.Linear(2, 2), n_power_iterations=0)


def test_legacy_weight_norm_matches_torch():
    torch.manual_seed(3)
    with pytest.warns(FutureWarning, match="is deprecated"):
        t = torch.nn.utils.weight_norm(torch.nn.Linear(4, 3).double())
    with pytest.warns(FutureWarning, match="is deprecated"):
        e = ember.nn.utils.weight_norm(ember.nn.Linear(4, 3).double())
    assert list(e.state_dict()) == list(t.state_dict()) == ["bias", "weight_g", "weight_v"]
    e.load_state_dict(to_ember_sd(t.state_dict()))
    x = _rng.standard_normal((5, 4))
    ty, ey = t(torch.from_numpy(x.copy())), e(ember.from_numpy(x.copy()))
    np.testing.assert_allclose(np_of(ey), np_of(ty), rtol=1e-12)
    ty.sum().backward()
    ey.sum().backward()
    np.testing.assert_allclose(np_of(e.weight_g.grad), np_of(t.weight_g.grad), rtol=1e-10)
    np.testing.assert_allclose(np_of(e.weight_v.grad), np_of(t.weight_v.grad), rtol=1e-10)
    msgs = []
    for lib, m in ((torch, t), (ember, e)):
        with pytest.warns(FutureWarning), pytest.raises(RuntimeError) as exc:
            lib.nn.utils.weight_norm(m)
        msgs.append(str(exc.value))
        lib.nn.utils.remove_weight_norm(m)
        assert type(m.weight) is lib.nn.Parameter and list(m.state_dict()) == ["bias", "weight"]
        with pytest.raises(ValueError) as exc:
            lib.nn.utils.remove_weight_norm(m)
        msgs.append(str(exc.value))
    assert msgs[:2] == msgs[2:]
    np.testing.assert_allclose(np_of(e.weight), np_of(t.weight), rtol=1e-12)


ORTH_CASES = [
    (shape, mp, triv)
    for shape in ((4, 4), (3, 5), (5, 3))
    for mp in (None, "matrix_exp", "cayley", "householder")
    for triv in (True, False)
]


@pytest.mark.parametrize("shape,mp,triv", ORTH_CASES)
def test_orthogonal_matches_torch(shape, mp, triv):
    w = np.random.default_rng(1).standard_normal(shape)
    res = []
    for lib in (torch, ember):
        m = lib.nn.Linear(shape[1], shape[0]).double()
        with lib.no_grad():
            m.weight.copy_(lib.from_numpy(w.copy()))
            m.bias.zero_()
        lib.nn.utils.parametrizations.orthogonal(m, orthogonal_map=mp, use_trivialization=triv)
        res.append(m)
    t, e = res
    assert repr(e) == repr(t)
    assert list(e.state_dict()) == list(t.state_dict())
    np.testing.assert_allclose(np_of(e.weight), np_of(t.weight), atol=1e-10)
    orig_t = t.parametrizations.weight.original
    orig_e = e.parametrizations.weight.original
    np.testing.assert_allclose(np_of(orig_e), np_of(orig_t), atol=1e-10)
    # gradients through the map, from the same state
    e.load_state_dict(to_ember_sd(t.state_dict()))
    x = _rng.standard_normal((2, shape[1]))
    t(torch.from_numpy(x.copy())).sin().sum().backward()
    e(ember.from_numpy(x.copy())).sin().sum().backward()
    np.testing.assert_allclose(np_of(orig_e.grad), np_of(orig_t.grad), atol=1e-10)
    q = np_of(e.weight)
    gram = q @ q.T if shape[0] <= shape[1] else q.T @ q
    np.testing.assert_allclose(gram, np.eye(min(shape)), atol=1e-10)


def test_orthogonal_errors():
    for args, kw in (
        ((lambda lib: lib.nn.Linear(2, 2), "nope"), {}),
        ((lambda lib: lib.nn.Linear(2, 2), "bias"), {}),
        ((lambda lib: lib.nn.Linear(2, 2), "weight"), {"orthogonal_map": "foo"}),
    ):
        msgs = []
        for lib in (torch, ember):
            with pytest.raises(ValueError) as exc:
                lib.nn.utils.parametrizations.orthogonal(args[0](lib), args[1], **kw)
            msgs.append(str(exc.value).split("'")[0])
        assert msgs[0] == msgs[1]
    e = EP.orthogonal(ember.nn.Linear(3, 3), use_trivialization=False)
    with pytest.raises(NotImplementedError, match="not possible to assign"):
        e.weight = ember.eye(3)

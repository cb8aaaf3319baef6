"""torch's functional optimizer API (``torch.optim.adam.adam``, ``torch.optim.sgd.sgd``): the
same signatures, updates in place of the caller's parameters and state, torch's errors; the
modules also re-export ``Optimizer`` as torch's do."""

from __future__ import annotations

import importlib
import inspect

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def _mod(lib, name):
    # (torch.optim deletes its submodules' names: reach them by import)
    return importlib.import_module(f"{lib.__name__}.optim.{name}")


SHAPES = [(4, 3), (5,)]


def _tensors(lib, seed):
    rng = np.random.default_rng(seed)
    return [lib.tensor(rng.standard_normal(s).astype(np.float32)) for s in SHAPES]


def _sig(fn) -> list:
    return [(p.name, p.kind, p.default) for p in inspect.signature(fn).parameters.values()]


@pytest.mark.parametrize("name", ["adam", "sgd"])
def test_signature_and_exports(name):
    emod, tmod = _mod(ember, name), _mod(torch, name)
    assert _sig(getattr(emod, name)) == _sig(getattr(tmod, name))
    assert emod.__all__ == tmod.__all__
    assert emod.Optimizer is ember.optim.Optimizer


def _adam(lib, kw, steps=3):
    ps, ms, vs = _tensors(lib, 0), _tensors(lib, 9), [t.abs() for t in _tensors(lib, 8)]
    mx = [v.clone() for v in vs]
    st = [lib.tensor(float(k)) for k in range(len(ps))]
    for k in range(steps):
        gs = _tensors(lib, k + 1)
        with lib.no_grad():
            _mod(lib, "adam").adam(ps, gs, ms, vs, mx, st, **kw)
    return ps + ms + vs + (mx if kw["amsgrad"] else []) + st, [p._version for p in ps]


@pytest.mark.parametrize(
    "extra",
    [
        {},
        {"amsgrad": True, "weight_decay": 0.1, "maximize": True},
        {"weight_decay": 0.1, "decoupled_weight_decay": True},
    ],
)
def test_adam_matches_torch(extra):
    kw = dict(amsgrad=False, beta1=0.9, beta2=0.99, lr=0.01, weight_decay=0.0, eps=1e-8)
    kw.update({"maximize": False, **extra})
    got, gv = _adam(ember, kw)
    want, wv = _adam(torch, kw)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-6, atol=1e-7)
        assert str(a.dtype) == str(b.dtype) and a.shape == b.shape
    assert gv == wv


def _sgd(lib, kw, steps=3):
    ps, bufs = _tensors(lib, 0), [None, None]
    for k in range(steps):
        with lib.no_grad():
            _mod(lib, "sgd").sgd(ps, _tensors(lib, k + 1), bufs, **kw)
    return ps, bufs, [p._version for p in ps]


@pytest.mark.parametrize(
    "extra",
    [
        {"momentum": 0.0},
        {"momentum": 0.9, "nesterov": True, "weight_decay": 0.1},
        {"momentum": 0.9, "dampening": 0.1, "maximize": True},
    ],
)
def test_sgd_matches_torch(extra):
    kw = dict(weight_decay=0.0, lr=0.1, dampening=0.0, nesterov=False, maximize=False)
    kw.update(extra)
    (gp, gb, gv), (wp, wb, wv) = _sgd(ember, kw), _sgd(torch, kw)
    for a, b in zip(gp, wp):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-6, atol=1e-7)
    assert [b is None for b in gb] == [b is None for b in wb]
    for a, b in zip(gb, wb):
        if b is not None:
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-6, atol=1e-7)
    assert gv == wv


def test_errors_match_torch():
    kw = dict(amsgrad=False, beta1=0.9, beta2=0.99, lr=0.1, weight_decay=0, eps=1e-8)
    kw["maximize"] = False
    for lib in (ember, torch):
        p = lib.ones(3, requires_grad=True)
        args = ([p], [lib.ones(3)], [lib.zeros(3)], [lib.zeros(3)], [])
        with pytest.raises(RuntimeError, match="state_steps"):
            _mod(lib, "adam").adam(*args, [1], **kw)
        with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
            _mod(lib, "adam").adam(*args, [lib.tensor(0.0)], **kw)

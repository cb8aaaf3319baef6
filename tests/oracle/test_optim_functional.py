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


FUNCTIONAL = [
    "adadelta", "adagrad", "adam", "adamax", "adamw", "asgd", "nadam", "radam", "rmsprop",
    "rprop", "sgd",
]  # fmt: skip


def test_every_functional_torch_exports():
    # the algorithms whose torch module exports a function named after it
    exported = [
        m
        for m in ["adadelta", "adagrad", "adam", "adamax", "adamw", "asgd", "lbfgs", "nadam",
                  "radam", "rmsprop", "rprop", "sgd", "sparse_adam"]
        if callable(getattr(_mod(torch, m), m, None))
    ]  # fmt: skip
    assert exported == FUNCTIONAL


@pytest.mark.parametrize("name", FUNCTIONAL)
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


def _zeros(lib):
    return [lib.zeros(s) for s in SHAPES]


def _full(lib, v):
    return [lib.full(s, v) for s in SHAPES]


def _scalars(lib, v):
    return [lib.tensor(v) for _ in SHAPES]


def _steps(lib):
    return _scalars(lib, 0.0)


# name -> (the state lists after params and grads, keyword arguments)
CASES = {
    "adadelta": (
        lambda lib: [_zeros(lib), _zeros(lib), _steps(lib)],
        dict(lr=1.0, rho=0.9, eps=1e-6, weight_decay=0.1, maximize=False),
    ),
    "adagrad": (
        lambda lib: [_full(lib, 0.1), _steps(lib)],
        dict(lr=0.1, weight_decay=0.1, lr_decay=0.01, eps=1e-10, maximize=True),
    ),
    "adamax": (
        lambda lib: [_zeros(lib), _zeros(lib), _steps(lib)],
        dict(eps=1e-8, beta1=0.9, beta2=0.99, lr=0.01, weight_decay=0.1),
    ),
    "adamw": (
        lambda lib: [_zeros(lib), _zeros(lib), _zeros(lib), _steps(lib)],
        dict(
            amsgrad=True, beta1=0.9, beta2=0.99, lr=0.01, weight_decay=0.1, eps=1e-8, maximize=False
        ),
    ),  # fmt: skip
    "asgd": (
        lambda lib: [_zeros(lib), _scalars(lib, 1.0), _scalars(lib, 0.01), _steps(lib)],
        dict(lambd=1e-4, lr=0.01, t0=1.0, alpha=0.75, weight_decay=0.1),
    ),
    "nadam": (
        lambda lib: [_zeros(lib), _zeros(lib), _scalars(lib, 1.0), _steps(lib)],
        dict(beta1=0.9, beta2=0.99, lr=0.01, weight_decay=0.1, momentum_decay=4e-3, eps=1e-8),
    ),
    "radam": (
        lambda lib: [_zeros(lib), _zeros(lib), _steps(lib)],
        dict(beta1=0.9, beta2=0.99, lr=0.01, weight_decay=0.1, eps=1e-8),
    ),
    "rmsprop": (
        lambda lib: [_zeros(lib), _zeros(lib), _zeros(lib), _steps(lib)],
        dict(lr=0.01, alpha=0.99, eps=1e-8, weight_decay=0.1, momentum=0.9, centered=True),
    ),
    "rprop": (
        lambda lib: [_zeros(lib), _full(lib, 0.01), _steps(lib)],
        dict(step_size_min=1e-6, step_size_max=50, etaminus=0.5, etaplus=1.2),
    ),
}
# further options of each (positional flags of torch's signature passed by keyword)
EXTRA = {
    "adadelta": {"maximize": True},
    "adagrad": {"weight_decay": 0.0, "lr_decay": 0.0},
    "adamax": {"maximize": True},
    "adamw": {"amsgrad": False, "maximize": True},
    "asgd": {"maximize": True, "t0": 1e6},
    "nadam": {"decoupled_weight_decay": True, "maximize": True},
    "radam": {"decoupled_weight_decay": True, "maximize": True},
    "rmsprop": {"momentum": 0.0, "centered": False, "maximize": True},
    "rprop": {"maximize": True},
}


def _run(lib, name, kw, steps=4):
    make, _ = CASES[name]
    ps, state = _tensors(lib, 0), make(lib)
    fn = getattr(_mod(lib, name), name)
    for k in range(steps):
        with lib.no_grad():
            fn(ps, _tensors(lib, k + 1), *state, **kw)
    flat = ps + [t for lst in state for t in lst]
    return flat, [t._version for t in flat]


@pytest.mark.parametrize("extra", [False, True])
@pytest.mark.parametrize("name", sorted(CASES))
def test_functional_matches_torch(name, extra):
    kw = {**CASES[name][1], **(EXTRA[name] if extra else {})}
    (got, gv), (want, wv) = _run(ember, name, kw), _run(torch, name, kw)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=2e-6, atol=1e-7)
        assert str(a.dtype) == str(b.dtype) and a.shape == b.shape
    assert gv == wv  # every parameter's and state tensor's version, as torch's in-place ops


@pytest.mark.parametrize("name", sorted(set(CASES) - {"asgd"}))
def test_functional_state_steps_error(name):
    for lib in (ember, torch):
        make, kw = CASES[name]
        state = make(lib)
        state[-1] = [1, 2]
        with pytest.raises(RuntimeError, match="singleton tensors"):
            getattr(_mod(lib, name), name)(_tensors(lib, 0), _tensors(lib, 1), *state, **kw)


@pytest.mark.filterwarnings("ignore:Sparse invariant checks")
def test_functional_adagrad_sparse_matches_torch():
    out = []
    for lib in (ember, torch):
        p, s, st = lib.ones(4, 2), lib.full((4, 2), 0.1), [lib.tensor(0.0)]
        g = lib.sparse_coo_tensor([[0, 2, 0]], lib.ones(3, 2), (4, 2))
        kw = dict(lr=0.1, weight_decay=0.0, lr_decay=0.0, eps=1e-10, maximize=False)
        _mod(lib, "adagrad").adagrad([p], [g], [s], st, has_sparse_grad=True, **kw)
        out.append((p.numpy().copy(), s.numpy().copy(), st[0].item()))
    for a, b in zip(*out):
        np.testing.assert_allclose(a, b, rtol=1e-6)


@pytest.mark.parametrize("name", ["adam", "adamax", "rmsprop", "radam", "nadam", "adadelta"])
def test_class_state_versions_match_torch(name):
    # the optimizer classes bump each state tensor once per in-place op of torch's update, on
    # the flat path and per parameter alike
    cls = {"adam": "Adam", "adamax": "Adamax", "rmsprop": "RMSprop", "radam": "RAdam",
           "nadam": "NAdam", "adadelta": "Adadelta"}[name]  # fmt: skip
    seen = []
    for lib in (ember, torch):
        for foreach in (None, False):
            ps = [lib.nn.Parameter(t) for t in _tensors(lib, 0)]
            opt = getattr(lib.optim, cls)(ps, foreach=foreach)
            for k in range(2):
                for p, g in zip(ps, _tensors(lib, k + 1)):
                    p.grad = g
                opt.step()
            seen.append([(k, t._version) for p in ps for k, t in opt.state[p].items()])
    assert seen[0] == seen[1] == seen[2] == seen[3]

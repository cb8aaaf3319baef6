"""The fused (flat-buffer) path of Adagrad, RMSprop, Adamax, NAdam, RAdam, Adadelta, ASGD and
Rprop: 20 steps equal the per-parameter path and torch's, with fresh or persistent gradients and
with parameters at different step counts."""

from __future__ import annotations

import copy

import numpy as np
import pytest

import ember
import ember.optim as eoptim
from tests.oracle.test_optim import GROUPS, _assert_params, _groups, _np, _params
from tests.oracle.test_optim_algorithms import CASES, IDS, _sign_stable_data

torch = pytest.importorskip("torch")


def _make(lib, name, params, kw, group_kw, **extra):
    mod = eoptim if lib is ember else torch.optim
    return getattr(mod, name)(_groups(params, group_kw), **kw, **extra)


def _run_persistent(opt, params, lib, grads):
    """Gradients kept across steps and overwritten in place (``zero_grad(set_to_none=False)``
    followed by a backward that accumulates into them)."""
    for p, g in zip(params, grads[0]):
        p.grad = lib.tensor(g)
    for step in grads:
        with ember.no_grad() if lib is ember else torch.no_grad():
            for p, g in zip(params, step):
                p.grad.copy_(lib.tensor(g))
        opt.step()


def _run_staggered(opt, params, lib, grads):
    """The last two parameters get gradients from step 5 on: step counts differ per parameter."""
    for i, step in enumerate(grads):
        n = 2 if i < 5 else len(params)
        for p in params:
            p.grad = None
        for p, g in zip(params[:n], step[:n]):
            p.grad = lib.tensor(g)
        opt.step()


def _fresh(opt, params, lib, grads):
    for step in grads:
        for p, g in zip(params, step):
            p.grad = lib.tensor(g)
        opt.step()


RUNS = {"fresh": _fresh, "persistent": _run_persistent, "staggered": _run_staggered}


def _assert_state(eo, ep, to, tp):
    for e, t in zip(ep, tp):
        es, ts = eo.state[e], to.state[t]
        assert list(es) == list(ts)
        for k in ts:
            assert str(es[k].dtype) == str(ts[k].dtype) and tuple(es[k].shape) == tuple(ts[k].shape)
            np.testing.assert_allclose(_np(es[k]), _np(ts[k]), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("run", list(RUNS))
@pytest.mark.parametrize("name,kw", CASES, ids=IDS)
def test_fused_equals_per_parameter_path_and_torch(name, kw, run):
    ws, gs = _sign_stable_data(20)
    fused, single, tp = _params(ember, ws), _params(ember, ws), _params(torch, ws)
    group_kw = GROUPS[1] if run == "fresh" else None
    of = _make(ember, name, fused, kw, group_kw, foreach=True)
    os_ = _make(ember, name, single, kw, group_kw, foreach=False)
    to = _make(torch, name, tp, kw, group_kw)
    for opt, ps, lib in ((of, fused, ember), (os_, single, ember), (to, tp, torch)):
        RUNS[run](opt, ps, lib, gs)
    assert of._flat and not os_._flat  # the fused path ran (and only where asked)
    assert all(fg.unbound == [] for fg in of._flat.values())
    _assert_params(fused, single)
    _assert_params(fused, tp)
    _assert_state(of, fused, to, tp)
    if run == "persistent":  # the gradients became views of the flat gradient, unchanged
        fg = of._flat[0]
        assert all(p.grad._data is v for p, v in zip(fused, fg.g_bound))
        for p, g in zip(fused, gs[-1]):
            np.testing.assert_array_equal(p.grad.numpy(), g)


@pytest.mark.parametrize("name,kw", CASES[1::2], ids=IDS[1::2])
def test_fused_state_dict_resumes_on_the_per_parameter_path(name, kw):
    ws, gs = _sign_stable_data(21)
    a, b = _params(ember, ws), _params(ember, ws)
    oa = getattr(eoptim, name)(a, foreach=True, **kw)
    _fresh(oa, a, ember, gs[:10])
    ob = getattr(eoptim, name)(b, foreach=False, **kw)
    with ember.no_grad():
        for x, y in zip(a, b):
            y.copy_(x)
    ob.load_state_dict(copy.deepcopy(oa.state_dict()))  # (torch's shares state tensors too)
    _fresh(oa, a, ember, gs[10:])
    _fresh(ob, b, ember, gs[10:])
    _assert_params(a, b)


@pytest.mark.parametrize("share_after_steps", [False, True])
def test_adagrad_shared_state_stays_shared(share_after_steps):
    ws, gs = _sign_stable_data(22)
    a, b = _params(ember, ws), _params(ember, ws)
    oa, ob = eoptim.Adagrad(a, lr=0.1), eoptim.Adagrad(b, lr=0.1, foreach=False)
    if share_after_steps:
        _fresh(oa, a, ember, gs[:3])
        _fresh(ob, b, ember, gs[:3])
    oa.share_memory()
    _fresh(oa, a, ember, gs[3:])
    _fresh(ob, b, ember, gs[3:])
    assert all(oa.state[p]["sum"].is_shared() for p in a)
    _assert_params(a, b)
    for p, q in zip(a, b):
        np.testing.assert_allclose(_np(oa.state[p]["sum"]), _np(ob.state[q]["sum"]), rtol=1e-6)


def test_state_arriving_in_shared_memory_keeps_the_per_parameter_path():
    ws, gs = _sign_stable_data(23)
    a = _params(ember, ws)
    oa = eoptim.Adagrad(a, lr=0.1)
    for p in a:
        oa.state[p]["sum"].share_memory_()  # as after unpickling in another process
    _fresh(oa, a, ember, gs[:3])
    assert not oa._flat and all(oa.state[p]["sum"].is_shared() for p in a)

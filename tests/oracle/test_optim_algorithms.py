"""The per-parameter optimizers (Adagrad, RMSprop, Adamax, NAdam, RAdam, Adadelta, ASGD, Rprop)
against torch.optim: 20 steps, state, state dicts and resume."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.optim as eoptim
from tests.oracle.test_optim import GROUPS, _assert_params, _data, _groups, _np, _params, _run

torch = pytest.importorskip("torch")

CASES = [
    ("Adagrad", dict()),
    ("Adagrad", dict(lr=0.1, lr_decay=0.01, weight_decay=0.1, initial_accumulator_value=0.2)),
    ("RMSprop", dict()),
    ("RMSprop", dict(lr=0.01, alpha=0.9, centered=True, momentum=0.5, weight_decay=0.1)),
    ("RMSprop", dict(lr=0.01, momentum=0.9, maximize=True)),
    ("Adamax", dict()),
    ("Adamax", dict(lr=0.01, betas=(0.8, 0.9), weight_decay=0.1, maximize=True)),
    ("NAdam", dict()),
    ("NAdam", dict(lr=0.01, momentum_decay=0.01, weight_decay=0.1)),
    ("NAdam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True)),
    ("RAdam", dict()),
    ("RAdam", dict(lr=0.01, weight_decay=0.1)),
    ("RAdam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True, maximize=True)),
    ("Adadelta", dict()),
    ("Adadelta", dict(lr=0.5, rho=0.8, weight_decay=0.1)),
    ("ASGD", dict()),
    ("ASGD", dict(lr=0.05, lambd=1e-3, alpha=0.5, t0=5, weight_decay=0.1)),
    ("Rprop", dict()),
    ("Rprop", dict(lr=0.05, etas=(0.3, 1.5), step_sizes=(1e-3, 0.1), maximize=True)),
]
IDS = [f"{n}-{i}" for i, (n, _) in enumerate(CASES)]


def _sign_stable_data(seed):
    # Rprop reacts to gradient signs: keep |g| away from 0 so float rounding can never flip one
    ws, gs = _data(seed)
    gs = [[np.where(np.abs(g) < 0.1, 0.1, g).astype(np.float32) for g in step] for step in gs]
    return ws, gs


@pytest.mark.parametrize("group_kw", GROUPS, ids=["one_group", "two_groups"])
@pytest.mark.parametrize("name,kw", CASES, ids=IDS)
def test_steps_match_torch(name, kw, group_kw):
    ws, gs = _sign_stable_data(10)
    ep, tp = _params(ember, ws), _params(torch, ws)
    eo = getattr(eoptim, name)(_groups(ep, group_kw), **kw)
    to = getattr(torch.optim, name)(_groups(tp, group_kw), **kw)
    _run(eo, ep, ember, gs)
    _run(to, tp, torch, gs)
    _assert_params(ep, tp)
    for e, t in zip(ep, tp):
        es, ts = eo.state[e], to.state[t]
        assert list(es) == list(ts)
        for k in ts:
            assert str(es[k].dtype) == str(ts[k].dtype) and tuple(es[k].shape) == tuple(ts[k].shape)
            np.testing.assert_allclose(_np(es[k]), _np(ts[k]), rtol=1e-5, atol=1e-6)
    esd, tsd = eo.state_dict(), to.state_dict()
    assert esd["param_groups"] == tsd["param_groups"]
    assert list(esd["state"]) == list(tsd["state"])


@pytest.mark.parametrize("name,kw", CASES[1::2], ids=IDS[1::2])
def test_saved_state_dict_resumes_in_torch(tmp_path, name, kw):
    ws, gs = _sign_stable_data(11)
    ep, tp = _params(ember, ws), _params(torch, ws)
    eo = getattr(eoptim, name)(ep, **kw)
    to = getattr(torch.optim, name)(tp, **kw)
    _run(eo, ep, ember, gs[:8])
    _run(to, tp, torch, gs[:8])
    ember.save(eo.state_dict(), tmp_path / "e.pt")
    torch.save(to.state_dict(), tmp_path / "t.pt")
    tp2 = _params(torch, [_np(p) for p in ep])
    to2 = getattr(torch.optim, name)(tp2, **kw)
    to2.load_state_dict(torch.load(tmp_path / "e.pt"))
    ep2 = _params(ember, [_np(p) for p in tp])
    eo2 = getattr(eoptim, name)(ep2, **kw)
    eo2.load_state_dict(ember.load(tmp_path / "t.pt"))
    for o, ps, lib in ((eo, ep, ember), (to2, tp2, torch), (to, tp, torch), (eo2, ep2, ember)):
        _run(o, ps, lib, gs[8:])
    _assert_params(ep, tp2)
    _assert_params(ep2, tp)


def test_adagrad_creates_state_for_every_parameter():
    ws, _ = _data(steps=0)
    eo = eoptim.Adagrad(_params(ember, ws), initial_accumulator_value=0.5)
    to = torch.optim.Adagrad(_params(torch, ws), initial_accumulator_value=0.5)
    assert list(eo.state_dict()["state"]) == list(to.state_dict()["state"]) == [0, 1, 2, 3]


@pytest.mark.parametrize(
    "make",
    [
        lambda m, p: m.Adagrad([p], lr_decay=-1),
        lambda m, p: m.Adagrad([p], initial_accumulator_value=-1),
        lambda m, p: m.RMSprop([p], alpha=-1),
        lambda m, p: m.RMSprop([p], momentum=-1),
        lambda m, p: m.Adamax([p], betas=(0.9, 1.0)),
        lambda m, p: m.NAdam([p], momentum_decay=-1),
        lambda m, p: m.RAdam([p], eps=-1),
        lambda m, p: m.Adadelta([p], rho=1.5),
        lambda m, p: m.ASGD([p], weight_decay=-1),
        lambda m, p: m.Rprop([p], etas=(1.1, 1.2)),
    ],
)
def test_errors_match_torch(make):
    got = []
    for lib, mod in ((torch, torch.optim), (ember, eoptim)):
        with pytest.raises(Exception) as info:
            make(mod, lib.zeros(2, requires_grad=True))
        got.append((type(info.value), str(info.value)))
    assert got[0] == got[1]

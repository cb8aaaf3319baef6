"""Every lr scheduler against torch over a few hundred steps, resumed from a state dict
half-way; the closed forms (``step(epoch)``); ReduceLROnPlateau in each comparison mode;
the argument checks of the cyclic schedules; where the ordering warnings point."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember
import ember.optim as eoptim
from tests.oracle.test_lr_scheduler import SCHEDULERS, _opt

torch = pytest.importorskip("torch")

STEPS, RESUME_AT = 300, 150
LONG = dict(SCHEDULERS)
LONG["OneCycleLR"] = lambda m, o: m.OneCycleLR(o, max_lr=0.5, total_steps=STEPS + 1)
LONG["OneCycleLR_3phase_linear"] = lambda m, o: m.OneCycleLR(
    o, max_lr=[0.5, 0.2], epochs=10, steps_per_epoch=31, three_phase=True,
    anneal_strategy="linear",
)  # fmt: skip
LONG["MultiStepLR_late"] = lambda m, o: m.MultiStepLR(o, [5, 120, 120, 250], gamma=0.5)
LONG["PolynomialLR_long"] = lambda m, o: m.PolynomialLR(o, total_iters=200, power=0.5)


def _run(lib, mod, make, kind):
    opt = _opt(lib, mod, kind)
    sched = make(mod.lr_scheduler, opt)
    lrs = []
    for i in range(STEPS):
        if i == RESUME_AT:  # a fresh optimizer and scheduler resumed from the state dicts
            osd, ssd = opt.state_dict(), sched.state_dict()
            opt = _opt(lib, mod, kind)
            opt.load_state_dict(osd)
            sched = make(mod.lr_scheduler, opt)
            sched.load_state_dict(ssd)
        opt.step()
        sched.step()
        moms = [g.get("momentum", g.get("betas")) for g in opt.param_groups]
        lrs.append((list(sched.get_last_lr()), moms))
    return lrs


@pytest.mark.parametrize("kind", ["SGD", "Adam"])
@pytest.mark.parametrize("name", sorted(LONG))
def test_long_sequence_with_resume(name, kind):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours = _run(ember, eoptim, LONG[name], kind)
        theirs = _run(torch, torch.optim, LONG[name], kind)
    for (elr, emom), (tlr, tmom) in zip(ours, theirs):
        np.testing.assert_allclose(elr, tlr, rtol=1e-12, atol=0)
        assert emom == tmom


CLOSED = ["StepLR", "MultiStepLR", "ConstantLR", "LinearLR", "ExponentialLR", "PolynomialLR",
          "CosineAnnealingLR", "CosineAnnealingWarmRestarts"]  # fmt: skip


@pytest.mark.parametrize("name", CLOSED)
def test_closed_forms(name):
    epochs = [3, 7, 0, 14, 30, 29, 61, 100, 45, 5]

    def run(lib, mod):
        opt = _opt(lib, mod)
        sched = SCHEDULERS[name](mod.lr_scheduler, opt)
        out = []
        for e in epochs:
            opt.step()
            sched.step(e)
            out.append(list(sched.get_last_lr()))
        return out

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        np.testing.assert_allclose(run(ember, eoptim), run(torch, torch.optim), rtol=1e-12)


@pytest.mark.parametrize("mode", ["min", "max"])
@pytest.mark.parametrize("threshold_mode", ["rel", "abs"])
@pytest.mark.parametrize("min_lr", [0.0, [0.02, 0.001]])
def test_plateau(mode, threshold_mode, min_lr):
    rng = np.random.default_rng(5)
    metrics = np.cumsum(rng.normal(0, 1, 200)) * 0.01 + 1.0

    def run(lib, mod):
        opt = _opt(lib, mod)
        sched = mod.lr_scheduler.ReduceLROnPlateau(
            opt, mode=mode, threshold_mode=threshold_mode, patience=3, cooldown=2,
            factor=0.5, threshold=1e-3, min_lr=min_lr,
        )  # fmt: skip
        out = []
        for i, m in enumerate(metrics):
            if i == 100:
                sd = sched.state_dict()
                sched = mod.lr_scheduler.ReduceLROnPlateau(opt)
                sched.load_state_dict(sd)
            opt.step()
            sched.step(float(m))
            out.append((list(sched.get_last_lr()), sched.num_bad_epochs, sched.best))
        return out

    assert run(ember, eoptim) == run(torch, torch.optim)


BAD = [
    ("CosineAnnealingWarmRestarts", dict(T_0=0)),
    ("CosineAnnealingWarmRestarts", dict(T_0=2.5)),
    ("CosineAnnealingWarmRestarts", dict(T_0=None)),
    ("CosineAnnealingWarmRestarts", dict(T_0=3, T_mult=0)),
    ("CosineAnnealingWarmRestarts", dict(T_0=3, T_mult=1.5)),
    ("CosineAnnealingWarmRestarts", dict(T_0=3, T_mult="a")),
    ("CosineAnnealingWarmRestarts", dict(T_0=3, eta_min="a")),
    ("OneCycleLR", dict(max_lr=0.1, total_steps=0)),
    ("OneCycleLR", dict(max_lr=0.1, total_steps="a")),
    ("OneCycleLR", dict(max_lr=0.1, epochs="a", steps_per_epoch=3)),
    ("OneCycleLR", dict(max_lr=0.1, epochs=0, steps_per_epoch=3)),
    ("OneCycleLR", dict(max_lr=0.1, epochs=2, steps_per_epoch=None)),
    ("OneCycleLR", dict(max_lr=0.1, epochs=2, steps_per_epoch=2.0)),
    ("OneCycleLR", dict(max_lr=0.1, total_steps=10, pct_start=1)),
    ("OneCycleLR", dict(max_lr=0.1, total_steps=10, anneal_strategy="x")),
    ("OneCycleLR", dict(max_lr=[0.1], total_steps=10)),
    ("CyclicLR", dict(base_lr=0.1, max_lr=0.2, mode="x")),
    ("LambdaLR", dict(lr_lambda=[lambda e: 1.0])),
    ("ReduceLROnPlateau", dict(min_lr=[0.1])),
    ("ReduceLROnPlateau", dict(mode="x")),
    ("ReduceLROnPlateau", dict(threshold_mode="x")),
]


@pytest.mark.parametrize("name,kw", BAD)
def test_argument_errors(name, kw):
    failures = []
    for lib, mod in ((torch, torch.optim), (ember, eoptim)):
        with pytest.raises(Exception) as info:
            getattr(mod.lr_scheduler, name)(_opt(lib, mod), **kw)
        failures.append((type(info.value).__name__, str(info.value)))
    assert failures[0] == failures[1]


@pytest.mark.parametrize("case", ["before_optimizer", "epoch_argument", "overridden"])
def test_warnings_point_at_the_caller(case):
    for lib, mod in ((torch, torch.optim), (ember, eoptim)):
        opt = _opt(lib, mod)
        sched = mod.lr_scheduler.StepLR(opt, 3)
        if case == "overridden":
            opt.step = lambda *a, **k: None
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            if case == "epoch_argument":
                opt.step()
                sched.step(1)
            else:
                sched.step()
        assert [w.filename for w in seen] == [__file__], (lib.__name__, seen)

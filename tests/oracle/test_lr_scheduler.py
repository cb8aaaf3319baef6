"""ember.optim.lr_scheduler against torch's: lr (and momentum) sequences, state dicts, warnings."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import ember
import ember.optim as eoptim

torch = pytest.importorskip("torch")

STEPS = 100


def _opt(lib, mod, kind="SGD"):
    a = lib.zeros(2, requires_grad=True)
    b = lib.zeros(3, requires_grad=True)
    groups = [{"params": [a]}, {"params": [b], "lr": 0.05}]
    if kind == "SGD":
        return mod.SGD(groups, lr=0.1, momentum=0.9)
    return mod.Adam(groups, lr=0.1)


def _lam(e):
    return 0.95**e


def _mul(e):
    return 0.97


SCHEDULERS = {
    "LambdaLR": lambda m, o: m.LambdaLR(o, _lam),
    "LambdaLR_per_group": lambda m, o: m.LambdaLR(o, [_lam, lambda e: 1 / (e + 1)]),
    "MultiplicativeLR": lambda m, o: m.MultiplicativeLR(o, _mul),
    "StepLR": lambda m, o: m.StepLR(o, 7, gamma=0.5),
    "MultiStepLR": lambda m, o: m.MultiStepLR(o, [10, 30, 30, 75], gamma=0.3),
    "ConstantLR": lambda m, o: m.ConstantLR(o, factor=0.25, total_iters=13),
    "LinearLR": lambda m, o: m.LinearLR(o, start_factor=0.1, end_factor=0.9, total_iters=40),
    "ExponentialLR": lambda m, o: m.ExponentialLR(o, 0.96),
    "PolynomialLR": lambda m, o: m.PolynomialLR(o, total_iters=60, power=2.0),
    "CosineAnnealingLR": lambda m, o: m.CosineAnnealingLR(o, T_max=25, eta_min=1e-3),
    "SequentialLR": lambda m, o: m.SequentialLR(
        o,
        [m.LinearLR(o, start_factor=0.1, total_iters=10), m.CosineAnnealingLR(o, T_max=50)],
        milestones=[10],
    ),
    "ChainedScheduler": lambda m, o: m.ChainedScheduler(
        [m.ConstantLR(o, factor=0.5, total_iters=20), m.ExponentialLR(o, 0.98)]
    ),
    "CyclicLR": lambda m, o: m.CyclicLR(o, 0.01, 0.1, step_size_up=9, step_size_down=5),
    "CyclicLR_tri2": lambda m, o: m.CyclicLR(o, [0.01, 0.02], 0.2, 6, mode="triangular2"),
    "CyclicLR_exp": lambda m, o: m.CyclicLR(o, 0.01, 0.1, 8, mode="exp_range", gamma=0.99),
    "OneCycleLR": lambda m, o: m.OneCycleLR(o, max_lr=0.5, total_steps=STEPS + 1),
    "OneCycleLR_3phase_linear": lambda m, o: m.OneCycleLR(
        o,
        max_lr=[0.5, 0.2],
        epochs=5,
        steps_per_epoch=21,
        three_phase=True,
        anneal_strategy="linear",
    ),
    "CosineAnnealingWarmRestarts": lambda m, o: m.CosineAnnealingWarmRestarts(o, 7, 2, 1e-4),
}


def _trace(lib, mod, make, kind="SGD", steps=STEPS):
    opt = _opt(lib, mod, kind)
    sched = make(mod.lr_scheduler, opt)
    out = []
    for _ in range(steps):
        opt.step()
        sched.step()
        g = opt.param_groups
        out.append((list(sched.get_last_lr()), [x.get("momentum", x.get("betas")) for x in g]))
    return out, opt, sched


# the optimizer kind only matters to schedulers that cycle momentum (SGD) or beta1 (Adam)
_PAIRS = [(n, "SGD") for n in SCHEDULERS] + [
    (n, "Adam") for n in SCHEDULERS if n.startswith(("CyclicLR", "OneCycleLR", "StepLR"))
]


@pytest.mark.parametrize("name,kind", _PAIRS)
def test_lr_sequence_matches_torch(name, kind):
    make = SCHEDULERS[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        e, _, _ = _trace(ember, eoptim, make, kind)
        t, _, _ = _trace(torch, torch.optim, make, kind)
    for (elr, emom), (tlr, tmom) in zip(e, t):
        np.testing.assert_allclose(elr, tlr, rtol=1e-13, atol=0)
        assert emom == tmom


@pytest.mark.parametrize("name", [n for n in SCHEDULERS if n != "ChainedScheduler"])
def test_state_dict_round_trip_resumes(name):
    make = SCHEDULERS[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        full, _, _ = _trace(ember, eoptim, make, steps=60)
        _, opt, sched = _trace(ember, eoptim, make, steps=25)
        osd, ssd = opt.state_dict(), sched.state_dict()
        keys = set(ssd)  # load_state_dict may pop entries (as torch's does)
        opt2 = _opt(ember, eoptim)
        sched2 = make(eoptim.lr_scheduler, opt2)
        opt2.load_state_dict(osd)
        sched2.load_state_dict(ssd)
        for i in range(25, 60):
            opt2.step()
            sched2.step()
            assert sched2.get_last_lr() == full[i][0]
        # torch's state dict has the same keys
        topt = _opt(torch, torch.optim)
        tsched = make(torch.optim.lr_scheduler, topt)
    tkeys = set(tsched.state_dict())
    assert keys == tkeys


def test_resume_with_last_epoch():
    for lib, mod in ((ember, eoptim), (torch, torch.optim)):
        opt = _opt(lib, mod)
        with pytest.raises(KeyError, match="initial_lr"):
            mod.lr_scheduler.StepLR(opt, 3, last_epoch=5)
    res = []
    for lib, mod in ((ember, eoptim), (torch, torch.optim)):
        opt = _opt(lib, mod)
        for g in opt.param_groups:
            g["initial_lr"] = g["lr"]
        s = mod.lr_scheduler.CosineAnnealingLR(opt, T_max=20, last_epoch=7)
        seq = [s.get_last_lr()]
        for _ in range(10):
            opt.step()
            s.step()
            seq.append(s.get_last_lr())
        res.append(seq)
    np.testing.assert_allclose(res[0], res[1], rtol=1e-13)


def test_reduce_lr_on_plateau_matches_torch():
    metrics = [1.0, 0.9, 0.9, 0.9, 0.95, 0.9, 0.85, 0.85, 0.85, 0.85, 0.85] * 6
    out = []
    for lib, mod in ((ember, eoptim), (torch, torch.optim)):
        opt = _opt(lib, mod)
        seqs = []
        for kw in (
            dict(patience=2),
            dict(mode="max", patience=1, factor=0.5, cooldown=2, min_lr=[0.01, 0.02]),
            dict(threshold_mode="abs", threshold=0.04, patience=0, min_lr=1e-3),
        ):
            s = mod.lr_scheduler.ReduceLROnPlateau(opt, **kw)
            for m in metrics:
                opt.step()
                s.step(m)
                seqs.append((s.get_last_lr(), s.num_bad_epochs, s.cooldown_counter, s.best))
            seqs.append(sorted(s.state_dict()))
        out.append(seqs)
    assert out[0] == out[1]


def test_step_before_optimizer_step_warns_like_torch():
    msgs = []
    for lib, mod in ((ember, eoptim), (torch, torch.optim)):
        opt = _opt(lib, mod)
        s = mod.lr_scheduler.StepLR(opt, 3)
        with pytest.warns(UserWarning) as rec:
            s.step()
        msgs.append([str(w.message) for w in rec])
        opt = _opt(lib, mod)
        s = mod.lr_scheduler.StepLR(opt, 3)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            opt.step()
            s.step()  # the right order: no warning
        with pytest.warns(UserWarning) as rec:
            s.get_lr()
        msgs.append([str(w.message) for w in rec])
        with pytest.warns(UserWarning) as rec:
            s.step(5)
        msgs.append([str(w.message) for w in rec] + [s.get_last_lr()])
    assert msgs[:3] == msgs[3:]
    assert "before `optimizer.step()`" in msgs[0][0]


def test_errors_match_torch():
    def both(fn):
        got = []
        for mod in (eoptim, torch.optim):
            lib = ember if mod is eoptim else torch
            with pytest.raises(Exception) as info:
                fn(mod.lr_scheduler, _opt(lib, mod))
            got.append((type(info.value), str(info.value)))
        assert got[0] == got[1]

    both(lambda m, o: m.StepLR(object(), 3))
    both(lambda m, o: m.ConstantLR(o, factor=2))
    both(lambda m, o: m.LinearLR(o, start_factor=0))
    both(lambda m, o: m.LambdaLR(o, [_lam]))
    both(lambda m, o: m.ReduceLROnPlateau(o, factor=1.0))
    both(lambda m, o: m.ReduceLROnPlateau(o, mode="avg"))
    both(lambda m, o: m.CyclicLR(o, 0.1, [1.0]))
    both(lambda m, o: m.OneCycleLR(o, 0.1))
    both(lambda m, o: m.OneCycleLR(o, 0.1, total_steps=5, anneal_strategy="exp"))
    both(lambda m, o: m.CosineAnnealingWarmRestarts(o, 0))
    both(lambda m, o: m.SequentialLR(o, [m.StepLR(o, 2)], milestones=[3]))

    def too_many(m, o):
        s = m.OneCycleLR(o, 0.1, total_steps=3)
        for _ in range(4):
            s.step()

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        both(too_many)


def test_closed_form_with_epoch_matches_torch():
    out = []
    for lib, mod in ((ember, eoptim), (torch, torch.optim)):
        opt = _opt(lib, mod)
        seq = []
        for make in (SCHEDULERS["StepLR"], SCHEDULERS["CosineAnnealingLR"], SCHEDULERS["LinearLR"]):
            s = make(mod.lr_scheduler, opt)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                for e in (3, 17, 4, 50):
                    s.step(e)
                    seq.append(s.get_last_lr())
        warm = mod.lr_scheduler.CosineAnnealingWarmRestarts(opt, 5, 2)
        for e in (0, 3.5, 6, 40):
            warm.step(e)
            seq.append(warm.get_last_lr())
        out.append(seq)
    np.testing.assert_allclose(out[0], out[1], rtol=1e-13)
    assert not math.isnan(out[0][0][0])

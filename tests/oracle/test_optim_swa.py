"""swa_utils against torch's: AveragedModel (SWA, EMA, buffers), SWALR, update_bn."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember
import ember.optim as eoptim

torch = pytest.importorskip("torch")
enn = pytest.importorskip("ember.nn", exc_type=ImportError)
swa = pytest.importorskip("ember.optim.swa_utils", exc_type=ImportError)

RNG = np.random.default_rng(0)
XS = [RNG.standard_normal((6, 3)).astype(np.float32) for _ in range(6)]


def _model(lib):
    nn = lib.nn
    return nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.ReLU(), nn.Linear(4, 1))


def _pair():
    torch.manual_seed(0)
    tm = _model(torch)
    em = _model(ember)
    em.load_state_dict({k: ember.tensor(v.numpy()) for k, v in tm.state_dict().items()})
    return em, tm


def _train_and_average(lib, optim_mod, swa_mod, model, **avg_kw):
    avg = swa_mod.AveragedModel(model, **avg_kw)
    opt = optim_mod.SGD(model.parameters(), lr=0.1, momentum=0.5)
    for x in XS:
        opt.zero_grad()
        model(lib.tensor(x)).pow(2).mean().backward()
        opt.step()
        avg.update_parameters(model)
    return avg


def _state(m):
    return {k: v.detach().numpy() for k, v in m.state_dict().items()}


@pytest.mark.parametrize(
    "kind", ["swa", "ema_multi", "ema_avg_fn", "ema_multi_buffers", "custom_avg_fn"]
)
def test_averaged_model_matches_torch(kind):
    em, tm = _pair()
    kws = []
    for mod in (swa, torch.optim.swa_utils):
        kw = {
            "swa": {},
            "ema_multi": {"multi_avg_fn": mod.get_ema_multi_avg_fn(0.9)},
            "ema_avg_fn": {"avg_fn": mod.get_ema_avg_fn(0.8)},
            "swa_multi_buffers": {"multi_avg_fn": mod.get_swa_multi_avg_fn(), "use_buffers": True},
            "ema_multi_buffers": {"multi_avg_fn": mod.get_ema_multi_avg_fn(), "use_buffers": True},
            "custom_avg_fn": {"avg_fn": lambda a, p, n: 0.5 * a + 0.5 * p},
        }[kind]
        kws.append(kw)
    ea = _train_and_average(ember, eoptim, swa, em, **kws[0])
    ta = _train_and_average(torch, torch.optim, torch.optim.swa_utils, tm, **kws[1])
    es, ts = _state(ea), _state(ta)
    assert list(es) == list(ts)
    for k in ts:
        assert es[k].dtype == ts[k].dtype, k
        np.testing.assert_allclose(es[k], ts[k], rtol=1e-5, atol=1e-6, err_msg=k)
    x = XS[0]
    ea.eval()
    ta.eval()
    np.testing.assert_allclose(
        ea(ember.tensor(x)).detach().numpy(),
        ta(torch.tensor(x)).detach().numpy(),
        rtol=1e-5,
        atol=1e-6,
    )


def test_update_bn_matches_torch():
    em, tm = _pair()
    for m in (em, tm):
        m.eval()
    loader_e = [(ember.tensor(x), 0) for x in XS]
    loader_t = [(torch.tensor(x), 0) for x in XS]
    swa.update_bn(loader_e, em)
    torch.optim.swa_utils.update_bn(loader_t, tm)
    es, ts = _state(em), _state(tm)
    for k in ts:
        np.testing.assert_allclose(es[k], ts[k], rtol=1e-5, atol=1e-6, err_msg=k)
    assert not em.training and em[1].momentum == tm[1].momentum == 0.1


@pytest.mark.parametrize(
    "kw",
    [
        dict(swa_lr=0.05),
        dict(swa_lr=[0.01, 0.2], anneal_epochs=7, anneal_strategy="linear"),
        dict(swa_lr=0.3, anneal_epochs=0),
    ],
)
def test_swalr_matches_torch(kw):
    seqs = []
    for lib, mod in ((ember, eoptim), (torch, torch.optim)):
        a, b = lib.zeros(2, requires_grad=True), lib.zeros(2, requires_grad=True)
        opt = mod.SGD([{"params": [a]}, {"params": [b], "lr": 0.5}], lr=0.1)
        sched = mod.swa_utils.SWALR(opt, **kw)
        seq = [sched.get_last_lr()]
        for _ in range(15):
            opt.step()
            sched.step()
            seq.append(sched.get_last_lr())
        seqs.append(seq)
        assert set(sched.state_dict()) >= {"anneal_epochs", "_anneal_strategy", "base_lrs"}
    np.testing.assert_allclose(seqs[0], seqs[1], rtol=1e-13)


def test_swa_errors_match_torch():
    for make in (
        lambda m, o: m.swa_utils.SWALR(o, 0.1, anneal_strategy="exp"),
        lambda m, o: m.swa_utils.SWALR(o, 0.1, anneal_epochs=-1),
        lambda m, o: m.swa_utils.get_ema_multi_avg_fn(1.5),
    ):
        got = []
        for lib, mod in ((ember, eoptim), (torch, torch.optim)):
            opt = mod.SGD([lib.zeros(1, requires_grad=True)], lr=0.1)
            with pytest.raises(Exception) as info, warnings.catch_warnings():
                warnings.simplefilter("ignore")
                make(mod, opt)
            got.append((type(info.value), str(info.value)))
        assert got[0] == got[1]


def test_swa_multi_avg_fn_on_integer_buffers_raises_like_torch():
    """torch's SWA multi_avg_fn cannot average BatchNorm's int64 num_batches_tracked."""
    em, tm = _pair()
    got = []
    for lib, optim_mod, mod, m in (
        (ember, eoptim, swa, em),
        (torch, torch.optim, torch.optim.swa_utils, tm),
    ):
        with pytest.raises(RuntimeError) as info:
            kw = {"multi_avg_fn": mod.get_swa_multi_avg_fn(), "use_buffers": True}
            _train_and_average(lib, optim_mod, mod, m, **kw)
        got.append(str(info.value).split(",")[0])
    assert got[0] == got[1]

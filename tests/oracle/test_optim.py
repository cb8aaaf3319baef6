"""ember.optim against torch.optim: step-for-step parameters, state dicts, errors and hooks."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ember
import ember.optim as eoptim

torch = pytest.importorskip("torch")

SHAPES = [(3, 4), (5,), (2, 3, 2), ()]
STEPS = 20


def _data(seed=0, steps=STEPS, shapes=SHAPES):
    rng = np.random.default_rng(seed)
    ws = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    gs = [[rng.standard_normal(s).astype(np.float32) for s in shapes] for _ in range(steps)]
    return ws, gs


def _params(lib, ws):
    return [lib.tensor(w, requires_grad=True) for w in ws]


def _set_grads(lib, params, grads):
    for p, g in zip(params, grads):
        p.grad = lib.tensor(g)


def _np(t):
    return t.detach().numpy() if hasattr(t, "detach") else np.asarray(t)


def _assert_params(eps, tps, rtol=1e-5, atol=1e-6):
    for e, t in zip(eps, tps):
        np.testing.assert_allclose(_np(e), _np(t), rtol=rtol, atol=atol)


def _groups(params, group_kw):
    if group_kw is None:
        return params
    return [{"params": params[:2], **group_kw[0]}, {"params": params[2:], **group_kw[1]}]


CASES = [
    ("SGD", dict(lr=0.1)),
    ("SGD", dict(lr=0.1, momentum=0.9)),
    ("SGD", dict(lr=0.05, momentum=0.9, dampening=0.3, weight_decay=0.1)),
    ("SGD", dict(lr=0.05, momentum=0.8, nesterov=True, weight_decay=0.01, maximize=True)),
    ("Adam", dict()),
    ("Adam", dict(lr=0.01, betas=(0.8, 0.99), eps=1e-6)),
    ("Adam", dict(lr=0.01, amsgrad=True, weight_decay=0.1)),
    ("Adam", dict(lr=0.01, maximize=True, weight_decay=0.1, decoupled_weight_decay=True)),
    ("AdamW", dict(lr=0.01)),
    ("AdamW", dict(lr=0.01, amsgrad=True, weight_decay=0.3, maximize=True)),
]
GROUPS = [None, ({"lr": 0.02, "weight_decay": 0.0}, {"weight_decay": 0.2})]


@pytest.mark.parametrize("foreach", [False, None])
@pytest.mark.parametrize("group_kw", GROUPS, ids=["one_group", "two_groups"])
@pytest.mark.parametrize("name,kw", CASES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CASES)])
def test_steps_match_torch(name, kw, group_kw, foreach):
    ws, gs = _data()
    ep, tp = _params(ember, ws), _params(torch, ws)
    eo = getattr(eoptim, name)(_groups(ep, group_kw), foreach=foreach, **kw)
    to = getattr(torch.optim, name)(_groups(tp, group_kw), **kw)
    for g in gs:
        _set_grads(ember, ep, g)
        _set_grads(torch, tp, g)
        eo.step()
        to.step()
    _assert_params(ep, tp)
    for e, t in zip(ep, tp):
        es, ts = eo.state[e], to.state[t]
        assert sorted(es) == sorted(ts)
        for k in ts:
            np.testing.assert_allclose(_np(es[k]), _np(ts[k]), rtol=1e-5, atol=1e-6)
            assert str(es[k].dtype) == str(ts[k].dtype) and tuple(es[k].shape) == tuple(ts[k].shape)


@pytest.mark.parametrize("name,kw", CASES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CASES)])
def test_flat_path_equals_per_parameter_path(name, kw):
    ws, gs = _data(1)
    a, b = _params(ember, ws), _params(ember, ws)
    oa = getattr(eoptim, name)(a, foreach=False, **kw)
    ob = getattr(eoptim, name)(b, foreach=True, **kw)
    for g in gs:
        _set_grads(ember, a, g)
        _set_grads(ember, b, g)
        oa.step()
        ob.step()
    _assert_params(a, b)


def test_params_without_grad_are_skipped_and_join_later():
    ws, gs = _data(2)
    ep, tp = _params(ember, ws), _params(torch, ws)
    eo, to = eoptim.Adam(ep, lr=0.1), torch.optim.Adam(tp, lr=0.1)
    for i, g in enumerate(gs):
        n = 2 if i < 5 else len(ws)  # the last parameters get gradients from step 5 on
        for lib, ps in ((ember, ep), (torch, tp)):
            for p in ps:
                p.grad = None
            _set_grads(lib, ps[:n], g[:n])
        eo.step()
        to.step()
    _assert_params(ep, tp)
    assert [float(eo.state[p]["step"]) for p in ep] == [float(to.state[p]["step"]) for p in tp]


def test_sgd_l2_weight_decay_differs_from_adamw_decoupled_decay():
    """SGD/Adam fold weight decay into the gradient; AdamW shrinks the weights directly."""
    w = np.array([10.0, -10.0, 0.5], np.float32)
    g = np.array([1e-3, 1e-3, 1e-3], np.float32)
    results = {}
    for lib, opt_mod in ((ember, eoptim), (torch, torch.optim)):
        for name, kw in [("SGD", {}), ("Adam", {}), ("AdamW", {})]:
            p = lib.tensor(w, requires_grad=True)
            opt = getattr(opt_mod, name)([p], lr=0.1, weight_decay=0.1, **kw)
            p.grad = lib.tensor(g)
            opt.step()
            results[lib.__name__, name] = _np(p)
    for name in ("SGD", "Adam", "AdamW"):
        np.testing.assert_allclose(results["ember", name], results["torch", name], rtol=1e-6)
    # SGD: p - lr * (g + wd * p)
    np.testing.assert_allclose(results["ember", "SGD"], w - 0.1 * (g + 0.1 * w), rtol=1e-6)
    # Adam's L2 term is normalised away by the adaptive denominator: every weight moves by ~lr
    np.testing.assert_allclose(np.abs(results["ember", "Adam"] - w), 0.1, rtol=1e-4)
    # AdamW: the decay is not normalised: the large weights shrink by lr * wd * p on top
    np.testing.assert_allclose(results["ember", "AdamW"], w * (1 - 0.01) - 0.1, rtol=1e-5)
    assert not np.allclose(results["ember", "Adam"], results["ember", "AdamW"])


def _run(opt, params, lib, grads):
    for g in grads:
        _set_grads(lib, params, g)
        opt.step()


@pytest.mark.parametrize(
    "name,kw", [("SGD", dict(lr=0.1, momentum=0.9)), ("Adam", dict(lr=0.01, amsgrad=True))]
)
def test_state_dict_structure_matches_torch(name, kw):
    ws, gs = _data(3, steps=3)
    ep, tp = _params(ember, ws), _params(torch, ws)
    eo = getattr(eoptim, name)([{"params": ep[:1]}, {"params": ep[1:], "lr": 0.5}], **kw)
    to = getattr(torch.optim, name)([{"params": tp[:1]}, {"params": tp[1:], "lr": 0.5}], **kw)
    _run(eo, ep, ember, gs)
    _run(to, tp, torch, gs)
    esd, tsd = eo.state_dict(), to.state_dict()
    assert esd["param_groups"] == tsd["param_groups"]
    assert list(esd["state"]) == list(tsd["state"])
    for i in tsd["state"]:
        assert list(esd["state"][i]) == list(tsd["state"][i])
        for k, tv in tsd["state"][i].items():
            ev = esd["state"][i][k]
            assert str(ev.dtype) == str(tv.dtype) and tuple(ev.shape) == tuple(tv.shape)
            np.testing.assert_allclose(_np(ev), _np(tv), rtol=1e-5, atol=1e-7)


def test_named_params_give_param_names():
    ws, _ = _data(steps=0)
    ep, tp = _params(ember, ws), _params(torch, ws)
    eo = eoptim.SGD([(f"p{i}", p) for i, p in enumerate(ep)], lr=0.1)
    to = torch.optim.SGD([(f"p{i}", p) for i, p in enumerate(tp)], lr=0.1)
    assert eo.state_dict()["param_groups"] == to.state_dict()["param_groups"]
    assert eo.param_groups[0]["param_names"] == ["p0", "p1", "p2", "p3"]


@pytest.mark.parametrize("name,kw", CASES[1:4] + CASES[6:])
def test_resume_from_state_dict_continues_identically(name, kw):
    ws, gs = _data(4)
    ep, tp = _params(ember, ws), _params(torch, ws)
    eo = getattr(eoptim, name)(ep, **kw)
    to = getattr(torch.optim, name)(tp, **kw)
    _run(eo, ep, ember, gs[:10])
    _run(to, tp, torch, gs[:10])
    # a fresh ember optimizer resumes from a torch state dict (tensors converted), and the reverse
    ep2 = _params(ember, [_np(p) for p in ep])
    eo2 = getattr(eoptim, name)(ep2, **kw)
    tsd = to.state_dict()
    conv = {
        "state": {
            i: {k: ember.tensor(v.numpy()) for k, v in s.items()} for i, s in tsd["state"].items()
        },
        "param_groups": tsd["param_groups"],
    }
    eo2.load_state_dict(conv)
    tp2 = _params(torch, [_np(p) for p in tp])
    to2 = getattr(torch.optim, name)(tp2, **kw)
    esd = eo.state_dict()
    to2.load_state_dict(
        {
            "state": {
                i: {k: torch.tensor(_np(v)) for k, v in s.items()} for i, s in esd["state"].items()
            },
            "param_groups": esd["param_groups"],
        }
    )
    _run(eo2, ep2, ember, gs[10:])
    _run(to, tp, torch, gs[10:])
    _run(to2, tp2, torch, gs[10:])
    _assert_params(ep2, tp)
    _assert_params(tp2, tp)


@pytest.mark.parametrize("name,kw", [CASES[2], CASES[6], CASES[9]])
def test_saved_state_dict_crosses_between_ember_and_torch(tmp_path, name, kw):
    ws, gs = _data(5)
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
    _run(eo, ep, ember, gs[8:])
    _run(to2, tp2, torch, gs[8:])
    _run(to, tp, torch, gs[8:])
    _run(eo2, ep2, ember, gs[8:])
    _assert_params(ep, tp2)
    _assert_params(ep2, tp)


def test_gradient_accumulation_equals_one_big_batch():
    rng = np.random.default_rng(6)
    x = rng.standard_normal((8, 3)).astype(np.float32)
    y = rng.standard_normal((8, 1)).astype(np.float32)
    w0 = rng.standard_normal((3, 1)).astype(np.float32)
    wa, wb = ember.tensor(w0, requires_grad=True), ember.tensor(w0, requires_grad=True)
    oa, ob = eoptim.SGD([wa], lr=0.1, momentum=0.9), eoptim.SGD([wb], lr=0.1, momentum=0.9)
    for _ in range(3):
        oa.zero_grad()
        for k in range(4):  # 4 micro-batches, each loss scaled by 1/4
            xb, yb = ember.tensor(x[2 * k : 2 * k + 2]), ember.tensor(y[2 * k : 2 * k + 2])
            (((xb @ wa - yb) ** 2).mean() / 4).backward()
        oa.step()
        ob.zero_grad()
        ((ember.tensor(x) @ wb - ember.tensor(y)) ** 2).mean().backward()
        ob.step()
    np.testing.assert_allclose(_np(wa), _np(wb), rtol=1e-5)


def test_closure_and_zero_grad():
    ws, _ = _data(steps=0)
    ep, tp = _params(ember, ws), _params(torch, ws)
    for ps, mod in ((ep, eoptim), (tp, torch.optim)):
        opt = mod.SGD(ps, lr=0.1)

        def closure(ps=ps, opt=opt):
            opt.zero_grad()
            loss = sum((p * p).sum() for p in ps)
            loss.backward()
            return loss

        loss = opt.step(closure)
        assert abs(float(loss.detach()) - sum(float((w * w).sum()) for w in ws)) < 1e-3
        opt.zero_grad(set_to_none=False)
        assert all(p.grad is not None and float(p.grad.abs().sum()) == 0 for p in ps)
        opt.zero_grad()
        assert all(p.grad is None for p in ps)
    _assert_params(ep, tp)


def _raises(fn):
    outcomes = []
    for lib, mod in ((torch, torch.optim), (ember, eoptim)):
        with pytest.raises(Exception) as info:
            fn(lib, mod)
        outcomes.append((type(info.value), str(info.value)))
    assert outcomes[0] == outcomes[1]


def test_errors_match_torch():
    def p(lib):
        return lib.zeros(2, requires_grad=True)

    _raises(lambda lib, m: m.SGD(p(lib), lr=0.1))
    _raises(lambda lib, m: m.SGD([], lr=0.1))
    _raises(lambda lib, m: m.SGD([p(lib)], lr=0.1).add_param_group({"params": {p(lib)}}))
    _raises(lambda lib, m: m.SGD([p(lib) * 2], lr=0.1))
    _raises(lambda lib, m: m.SGD([p(lib)], lr=-1))
    _raises(lambda lib, m: m.SGD([p(lib)], lr=0.1, momentum=-1))
    _raises(lambda lib, m: m.SGD([p(lib)], lr=0.1, nesterov=True))
    _raises(lambda lib, m: m.Adam([p(lib)], betas=(1.0, 0.9)))
    _raises(lambda lib, m: m.Adam([p(lib)], eps=-1.0))
    _raises(lambda lib, m: m.SGD([p(lib), 3], lr=0.1))
    _raises(lambda lib, m: m.SGD([("a", p(lib)), p(lib)], lr=0.1))

    def two_groups(lib, m):
        q = p(lib)
        return m.SGD([{"params": [q]}, {"params": [q]}], lr=0.1)

    _raises(two_groups)

    def mismatched(lib, m):
        opt = m.SGD([p(lib), p(lib)], lr=0.1)
        opt.load_state_dict({"state": {}, "param_groups": [{"params": [0], "lr": 0.1}]})

    _raises(mismatched)

    def group_count(lib, m):
        opt = m.SGD([p(lib)], lr=0.1)
        opt.load_state_dict({"state": {}, "param_groups": []})

    _raises(group_count)

    def add_not_dict(lib, m):
        m.SGD([p(lib)], lr=0.1).add_param_group([p(lib)])

    _raises(add_not_dict)

    def names_mixed(lib, m):
        opt = m.SGD([("a", p(lib))], lr=0.1)
        opt.add_param_group({"params": [p(lib)]})

    _raises(names_mixed)


def test_required_lr_in_group_and_repr():
    class MyOpt(eoptim.Optimizer):
        def __init__(self, params):
            super().__init__(params, {"lr": eoptim.optimizer.required, "k": 1})

        def step(self, closure=None):
            return None

    with pytest.raises(ValueError, match="required optimization parameter lr"):
        MyOpt([ember.zeros(1, requires_grad=True)])
    opt = MyOpt([{"params": [ember.zeros(1, requires_grad=True)], "lr": 2}])
    assert repr(opt) == "MyOpt (\nParameter Group 0\n    k: 1\n    lr: 2\n)"
    tp = torch.zeros(2, requires_grad=True)
    assert repr(eoptim.Adam([ember.zeros(2, requires_grad=True)])) == repr(torch.optim.Adam([tp]))


def test_add_param_group_and_duplicate_warning():
    a, b = ember.zeros(2, requires_grad=True), ember.zeros(3, requires_grad=True)
    opt = eoptim.SGD([a], lr=0.1, momentum=0.5)
    opt.add_param_group({"params": b, "lr": 0.2})
    assert opt.param_groups[1]["momentum"] == 0.5 and opt.param_groups[1]["params"] == [b]
    with pytest.warns(UserWarning, match="duplicate parameters"):
        eoptim.SGD([a, a], lr=0.1)


def test_step_and_state_dict_hooks():
    a = ember.ones(2, requires_grad=True)
    opt = eoptim.SGD([a], lr=0.5)
    calls = []
    h1 = opt.register_step_pre_hook(lambda o, args, kw: calls.append(("pre", float(a[0]))))
    opt.register_step_post_hook(lambda o, args, kw: calls.append(("post", float(a[0]))))
    g = eoptim.optimizer.register_optimizer_step_pre_hook(lambda o, a_, k: calls.append("global"))
    a.grad = ember.ones(2)
    opt.step()
    assert calls == ["global", ("pre", 1.0), ("post", 0.5)]
    h1.remove()
    g.remove()
    opt.step()
    assert calls[-1] == ("post", 0.0) and len(calls) == 4

    opt.register_state_dict_pre_hook(lambda o: calls.append("sd_pre"))
    opt.register_state_dict_post_hook(lambda o, sd: {**sd, "extra": 1})
    assert opt.state_dict()["extra"] == 1 and calls[-1] == "sd_pre"
    opt.register_load_state_dict_pre_hook(
        lambda o, sd: {k: v for k, v in sd.items() if k != "extra"}
    )
    opt.register_load_state_dict_post_hook(lambda o: calls.append("load_post"))
    opt.load_state_dict(opt.state_dict())
    assert calls[-1] == "load_post"


def test_step_runs_without_grad_and_bumps_versions():
    a = ember.ones(2, requires_grad=True)
    opt = eoptim.Adam([a])
    a.grad = ember.ones(2)
    v = a._version
    opt.step()
    assert a._version > v and a.grad_fn is None and a.requires_grad


def test_nn_parameter_if_available():
    nn = pytest.importorskip("ember.nn", exc_type=ImportError)
    if not hasattr(nn, "Parameter"):
        pytest.skip("ember.nn.Parameter not available yet")
    ws, gs = _data(7, steps=5)
    ep = [nn.Parameter(ember.tensor(w)) for w in ws]
    tp = [torch.nn.Parameter(torch.tensor(w)) for w in ws]
    eo, to = eoptim.AdamW(ep, lr=0.1), torch.optim.AdamW(tp, lr=0.1)
    _run(eo, ep, ember, gs)
    _run(to, tp, torch, gs)
    _assert_params(ep, tp)


@pytest.mark.parametrize("opt_name,kw", [("SGD", dict(lr=0.1, momentum=0.9)), ("AdamW", {})])
def test_tutorial_loop_with_clipping_and_scheduler(opt_name, kw):
    """zero_grad / backward / clip_grad_norm_ / step / scheduler.step, biases without decay."""
    nn = pytest.importorskip("ember.nn", exc_type=ImportError)
    clip = pytest.importorskip("ember.nn.utils", exc_type=ImportError).clip_grad_norm_
    rng = np.random.default_rng(8)
    xs = [rng.standard_normal((5, 4)).astype(np.float32) for _ in range(12)]
    tm = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
    em = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
    em.load_state_dict({k: ember.tensor(v.numpy()) for k, v in tm.state_dict().items()})
    out = []
    for lib, model, mod, clip_fn in (
        (ember, em, eoptim, clip),
        (torch, tm, torch.optim, torch.nn.utils.clip_grad_norm_),
    ):
        decay = [p for n, p in model.named_parameters() if n.endswith("weight")]
        no_decay = [p for n, p in model.named_parameters() if n.endswith("bias")]
        opt = getattr(mod, opt_name)(
            [{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
            **kw,
        )
        sched = mod.lr_scheduler.OneCycleLR(opt, max_lr=0.05, total_steps=len(xs))
        for x in xs:
            opt.zero_grad()
            loss = model(lib.tensor(x)).pow(2).mean()
            loss.backward()
            clip_fn(model.parameters(), 0.05)
            opt.step()
            sched.step()
        out.append({k: v.detach().numpy() for k, v in model.state_dict().items()})
    for k in out[1]:
        np.testing.assert_allclose(out[0][k], out[1][k], rtol=1e-5, atol=1e-6, err_msg=k)


def test_mixed_dtypes_take_the_per_parameter_path():
    ws, gs = _data(9)
    ws = [w.astype(np.float64) if i % 2 else w for i, w in enumerate(ws)]
    gs = [[g.astype(w.dtype) for g, w in zip(step, ws)] for step in gs]
    ep, tp = _params(ember, ws), _params(torch, ws)
    eo, to = eoptim.Adam(ep, lr=0.05), torch.optim.Adam(tp, lr=0.05)
    _run(eo, ep, ember, gs)
    _run(to, tp, torch, gs)
    _assert_params(ep, tp)
    assert [str(p.dtype) for p in ep] == [str(p.dtype) for p in tp]


def test_complex_parameters_are_refused_not_silently_wrong():
    p = ember.zeros(2, dtype=ember.complex64, requires_grad=True)
    p.grad = ember.ones(2, dtype=ember.complex64)
    for opt in (eoptim.Adam([p]), eoptim.RMSprop([p])):
        with pytest.raises(NotImplementedError, match="complex"):
            opt.step()


@settings(max_examples=25, deadline=None)
@given(
    name=st.sampled_from(["SGD", "Adam", "AdamW"]),
    lr=st.floats(1e-4, 0.5),
    wd=st.sampled_from([0.0, 1e-3, 0.1]),
    momentum=st.sampled_from([0.0, 0.5, 0.95]),
    flag=st.booleans(),
    maximize=st.booleans(),
    foreach=st.sampled_from([None, False]),
    seed=st.integers(0, 2**16),
)
def test_random_hyperparameters_match_torch(name, lr, wd, momentum, flag, maximize, foreach, seed):
    if name == "SGD":
        kw = dict(momentum=momentum, nesterov=flag and momentum > 0)
    else:
        kw = dict(amsgrad=flag, betas=(momentum if momentum else 0.9, 0.999))
    kw.update(lr=lr, weight_decay=wd, maximize=maximize)
    ws, gs = _data(seed, steps=10)
    ep, tp = _params(ember, ws), _params(torch, ws)
    eo = getattr(eoptim, name)(ep, foreach=foreach, **kw)
    to = getattr(torch.optim, name)(tp, **kw)
    _run(eo, ep, ember, gs)
    _run(to, tp, torch, gs)
    _assert_params(ep, tp, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    "name", ["SGD", "LBFGS", "Adafactor", "Muon", "SparseAdam", "Adam", "AdamW", "RMSprop"]
)
def test_tensor_lr_of_several_elements_raises_as_torch(name):
    def build(lib):
        params = [lib.nn.Parameter(lib.ones(2, 2))]
        return getattr(lib.optim, name)(params, lr=lib.tensor([0.1, 0.2]))

    with pytest.raises(ValueError) as want:
        build(torch)
    with pytest.raises(ValueError) as got:
        build(ember)
    assert str(got.value) == str(want.value)

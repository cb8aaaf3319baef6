"""Oracle tests for ``nn.utils.prune`` against torch."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ember
from ember.nn.utils import prune as eprune

torch = pytest.importorskip("torch")
tprune = pytest.importorskip("torch.nn.utils.prune")

_rng = np.random.default_rng(0)


def _pair(kind="linear"):
    """Return (ember module, torch module) with identical float32 weights (distinct
    magnitudes with probability 1, so topk ties do not arise)."""
    if kind == "linear":
        e, t = ember.nn.Linear(5, 4), torch.nn.Linear(5, 4)
    else:
        e, t = ember.nn.Conv2d(3, 4, 2), torch.nn.Conv2d(3, 4, 2)
    for name, p in t.named_parameters():
        a = _rng.standard_normal(tuple(p.shape)).astype(np.float32)
        with torch.no_grad():
            p.copy_(torch.from_numpy(a))
        getattr(e, name).data = ember.tensor(a)
    return e, t


def _same_state(e, t):
    es, ts = e.state_dict(), t.state_dict()
    assert list(es) == list(ts)
    for k in ts:
        np.testing.assert_array_equal(es[k].numpy(), ts[k].numpy())
    assert [n for n, _ in e.named_parameters()] == [n for n, _ in t.named_parameters()]
    assert [n for n, _ in e.named_buffers()] == [n for n, _ in t.named_buffers()]


@pytest.mark.parametrize("amount", [0, 3, 0.0, 0.3, 0.5, 1.0, 20])
def test_l1_unstructured(amount):
    e, t = _pair()
    eprune.l1_unstructured(e, "weight", amount=amount)
    tprune.l1_unstructured(t, "weight", amount=amount)
    _same_state(e, t)
    np.testing.assert_array_equal(e.weight.detach().numpy(), t.weight.detach().numpy())
    assert type(e.weight).__name__ == type(t.weight).__name__ == "Tensor"
    assert e.weight_mask.dtype == ember.float32
    assert eprune.is_pruned(e) and tprune.is_pruned(t)


@pytest.mark.parametrize("bad", [-1, 1.5, -0.1])
def test_amount_value_errors(bad):
    with pytest.raises(ValueError) as te:
        tprune.L1Unstructured(bad)
    with pytest.raises(ValueError) as ee:
        eprune.L1Unstructured(bad)
    assert str(ee.value) == str(te.value)


def test_amount_type_error_and_too_large():
    with pytest.raises(TypeError) as te:
        tprune.RandomUnstructured("a")
    with pytest.raises(TypeError) as ee:
        eprune.RandomUnstructured("a")
    assert str(ee.value) == str(te.value)
    e, t = _pair()
    with pytest.raises(ValueError) as te:
        tprune.l1_unstructured(t, "weight", amount=21)
    with pytest.raises(ValueError) as ee:
        eprune.l1_unstructured(e, "weight", amount=21)
    assert str(ee.value) == str(te.value)
    # the failed pruning was rolled back (torch re-registers weight after bias)
    assert list(e.state_dict()) == list(t.state_dict()) == ["bias", "weight"]


@pytest.mark.parametrize("n,dim,amount", [(1, 0, 2), (2, 0, 0.5), (2, 1, 1), (np.inf, -1, 2)])
def test_ln_structured(n, dim, amount):
    e, t = _pair("conv")
    eprune.ln_structured(e, "weight", amount=amount, n=n, dim=dim)
    tprune.ln_structured(t, "weight", amount=amount, n=n, dim=dim)
    _same_state(e, t)


def test_structured_errors():
    e, t = _pair()
    for pr, m in ((tprune, t), (eprune, e)):
        with pytest.raises(ValueError, match="Structured pruning can only"):
            pr.ln_structured(m, "bias", amount=1, n=2, dim=0)
        with pytest.raises(IndexError, match="Invalid index 2"):
            pr.ln_structured(m, "weight", amount=1, n=2, dim=2)


def test_iterative_pruning_container():
    e, t = _pair("conv")
    for pr, m in ((eprune, e), (tprune, t)):
        pr.l1_unstructured(m, "weight", amount=0.3)
        pr.ln_structured(m, "weight", amount=1, n=2, dim=0)
        pr.l1_unstructured(m, "weight", amount=5)
        pr.custom_from_mask(m, "bias", mask=(torch if pr is tprune else ember).tensor([1, 0, 1, 1]))
    _same_state(e, t)
    (eh,) = [h for h in e._forward_pre_hooks.values() if h._tensor_name == "weight"]
    (th,) = [h for h in t._forward_pre_hooks.values() if h._tensor_name == "weight"]
    assert type(eh).__name__ == type(th).__name__ == "PruningContainer"
    assert [type(m).__name__ for m in eh] == [type(m).__name__ for m in th]
    assert len(eh) == len(th) == 3


def test_forward_hook_and_gradients():
    e, t = _pair()
    eprune.l1_unstructured(e, "weight", amount=8)
    tprune.l1_unstructured(t, "weight", amount=8)
    x = _rng.standard_normal((3, 5)).astype(np.float32)
    # change the original weights: the pre-hook recomputes weight at the next call
    with torch.no_grad():
        t.weight_orig.mul_(2)
    with ember.no_grad():
        e.weight_orig.mul_(2)
    eo, to = e(ember.tensor(x)), t(torch.from_numpy(x))
    np.testing.assert_allclose(eo.detach().numpy(), to.detach().numpy(), rtol=1e-5, atol=1e-6)
    eo.sum().backward()
    to.sum().backward()
    np.testing.assert_allclose(e.weight_orig.grad.numpy(), t.weight_orig.grad.numpy(), rtol=1e-5)
    assert (e.weight_orig.grad.numpy()[e.weight_mask.numpy() == 0] == 0).all()
    assert e.weight_mask.grad is None


def test_remove():
    e, t = _pair()
    for pr, m in ((eprune, e), (tprune, t)):
        pr.l1_unstructured(m, "weight", amount=0.4)
        pr.remove(m, "weight")
    _same_state(e, t)
    assert isinstance(e.weight, ember.nn.Parameter)
    assert not eprune.is_pruned(e)
    with pytest.raises(ValueError) as te:
        tprune.remove(t, "weight")
    with pytest.raises(ValueError) as ee:
        eprune.remove(e, "weight")
    assert str(ee.value).split(" of module")[0] == str(te.value).split(" of module")[0]


def test_global_unstructured():
    (e1, t1), (e2, t2) = _pair(), _pair("conv")
    eprune.global_unstructured(
        [(e1, "weight"), (e2, "weight"), (e2, "bias")], eprune.L1Unstructured, amount=0.4
    )
    tprune.global_unstructured(
        [(t1, "weight"), (t2, "weight"), (t2, "bias")], tprune.L1Unstructured, amount=0.4
    )
    _same_state(e1, t1)
    _same_state(e2, t2)
    with pytest.raises(TypeError, match='Only "unstructured"'):
        eprune.global_unstructured([(e1, "bias")], eprune.RandomStructured, amount=1)


def test_importance_scores_and_prune_method():
    e, t = _pair()
    s = _rng.standard_normal((4, 5)).astype(np.float32)
    eprune.l1_unstructured(e, "weight", amount=6, importance_scores=ember.tensor(s))
    tprune.l1_unstructured(t, "weight", amount=6, importance_scores=torch.from_numpy(s))
    _same_state(e, t)
    w = _rng.standard_normal((4, 6)).astype(np.float32)
    ep = eprune.LnStructured(2, n=1, dim=1).prune(ember.tensor(w))
    tp = tprune.LnStructured(2, n=1, dim=1).prune(torch.from_numpy(w))
    np.testing.assert_array_equal(ep.numpy(), tp.numpy())


def test_random_methods_mask_counts():
    e, _ = _pair("conv")
    eprune.random_unstructured(e, "weight", amount=0.25)
    assert int((e.weight_mask == 0).sum()) == round(0.25 * 48)
    eprune.random_structured(e, "weight", amount=2, dim=0)
    ch = e.weight_mask.numpy().reshape(4, -1).sum(1)
    assert (ch == 0).sum() >= 2
    assert int((e.weight_mask == 0).sum()) >= 24
    eprune.identity(e, "bias")
    np.testing.assert_array_equal(e.bias_mask.numpy(), np.ones(4, np.float32))


def test_container_errors_and_grad_fn():
    e, t = _pair()
    for pr, m in ((eprune, e), (tprune, t)):
        pr.l1_unstructured(m, "weight", amount=2)
    assert e.weight.grad_fn.name() == t.weight.grad_fn.name()
    assert e.weight_mask.requires_grad is t.weight_mask.requires_grad is False
    (eh,) = e._forward_pre_hooks.values()
    (th,) = t._forward_pre_hooks.values()
    ec, tc = eprune.PruningContainer(eh), tprune.PruningContainer(th)
    em, tm = eprune.L1Unstructured(1), tprune.L1Unstructured(1)
    em._tensor_name = tm._tensor_name = "bias"
    _same = [(ec.add_pruning_method, em, tc.add_pruning_method, tm, ValueError)]
    _same.append((ec.add_pruning_method, 3, tc.add_pruning_method, 3, TypeError))
    for fe, ae, ft, at, exc in _same:
        with pytest.raises(exc) as te:
            ft(at)
        with pytest.raises(exc) as ee:
            fe(ae)
        assert (
            str(ee.value).split(" to PruningContainer")[0]
            == str(te.value).split(" to PruningContainer")[0]
        )


def test_load_pruned_state_dict():
    e, t = _pair("conv")
    eprune.random_unstructured(e, "weight", amount=0.5)
    tprune.random_unstructured(t, "weight", amount=0.5)
    tprune.ln_structured(t, "weight", amount=1, n=1, dim=0)
    eprune.ln_structured(e, "weight", amount=1, n=1, dim=0)
    e.load_state_dict({k: ember.tensor(v.numpy().copy()) for k, v in t.state_dict().items()})
    _same_state(e, t)
    x = _rng.standard_normal((1, 3, 3, 3)).astype(np.float32)
    np.testing.assert_allclose(
        e(ember.tensor(x)).detach().numpy(), t(torch.from_numpy(x)).detach().numpy(), rtol=1e-5
    )


@settings(max_examples=25, deadline=None)
@given(
    shape=st.lists(st.integers(1, 4), min_size=1, max_size=3),
    frac=st.floats(0, 1),
    as_int=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_l1_unstructured_hypothesis(shape, frac, as_int, seed):
    a = np.random.default_rng(seed).standard_normal(shape)
    n = a.size
    amount = int(round(frac * n)) if as_int else frac
    ew, tw = ember.tensor(a), torch.from_numpy(a)
    em = eprune.L1Unstructured(amount).compute_mask(ew, ember.ones_like(ew))
    tm = tprune.L1Unstructured(amount).compute_mask(tw, torch.ones_like(tw))
    np.testing.assert_array_equal(em.numpy(), tm.numpy())
    assert em.dtype == ember.float64


def test_global_unstructured_iterative_with_scores():
    (e1, t1), (e2, t2) = _pair(), _pair()
    s = _rng.standard_normal((4, 5)).astype(np.float32)
    eprune.l1_unstructured(e1, "weight", amount=5)
    tprune.l1_unstructured(t1, "weight", amount=5)
    eprune.global_unstructured(
        [(e1, "weight"), (e2, "weight")],
        eprune.L1Unstructured,
        importance_scores={(e2, "weight"): ember.tensor(s)},
        amount=10,
    )
    tprune.global_unstructured(
        [(t1, "weight"), (t2, "weight")],
        tprune.L1Unstructured,
        importance_scores={(t2, "weight"): torch.from_numpy(s)},
        amount=10,
    )
    _same_state(e1, t1)
    _same_state(e2, t2)
    assert [type(m).__name__ for m in next(iter(e1._forward_pre_hooks.values()))] == [
        type(m).__name__ for m in next(iter(t1._forward_pre_hooks.values()))
    ]
    with pytest.raises(TypeError, match="importance_scores must be of type dict"):
        eprune.global_unstructured([(e1, "bias")], eprune.L1Unstructured, [], amount=1)

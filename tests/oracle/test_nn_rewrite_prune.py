"""``nn.utils.prune`` rewritten in ember's terms (issue 21): every method's mask, hook and
names against torch, including the random methods under the same seed and iterated pruning
through a PruningContainer."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.nn.utils import prune as eprune

torch = pytest.importorskip("torch")
tprune = pytest.importorskip("torch.nn.utils.prune")


def _lib(lib):
    return (ember, eprune) if lib == "ember" else (torch, tprune)


def _conv(lib):
    L, _ = _lib(lib)
    L.manual_seed(3)
    return L.nn.Conv2d(3, 6, 2)


# (name, call) pairs: each prunes the conv's weight in one way; the random ones draw from the
# seeded generator, whose stream ember shares with torch
METHODS = {
    "identity": lambda P, L, m: P.identity(m, "weight"),
    "random_unstructured": lambda P, L, m: P.random_unstructured(m, "weight", amount=0.4),
    "random_unstructured_int": lambda P, L, m: P.random_unstructured(m, "weight", amount=7),
    "l1_unstructured": lambda P, L, m: P.l1_unstructured(m, "weight", amount=0.3),
    "l1_scores": lambda P, L, m: P.l1_unstructured(
        m, "weight", amount=10, importance_scores=L.arange(72.0).reshape(6, 3, 2, 2).flip(0)
    ),
    "random_structured_0": lambda P, L, m: P.random_structured(m, "weight", amount=2, dim=0),
    "random_structured_neg": lambda P, L, m: P.random_structured(m, "weight", 0.5, dim=-1),
    "ln_structured_l2": lambda P, L, m: P.ln_structured(m, "weight", amount=0.5, n=2, dim=0),
    "ln_structured_l1_d1": lambda P, L, m: P.ln_structured(m, "weight", amount=1, n=1, dim=1),
    "ln_structured_inf": lambda P, L, m: P.ln_structured(
        m, "weight", amount=2, n=float("inf"), dim=-4
    ),
    "ln_structured_zero": lambda P, L, m: P.ln_structured(m, "weight", amount=0, n=2, dim=0),
    "custom_from_mask": lambda P, L, m: P.custom_from_mask(
        m, "weight", mask=(L.arange(72).reshape(6, 3, 2, 2) % 3 != 0)
    ),
}


def _state(lib, steps):
    """Prune the conv with each step in turn, run forward/backward, return what is visible."""
    L, P = _lib(lib)
    m = _conv(lib)
    L.manual_seed(11)
    for step in steps:
        METHODS[step](P, L, m)
    x = L.ones(1, 3, 4, 4)
    m(x).sum().backward()
    hooks = list(m._forward_pre_hooks.values())
    hook_kinds = [type(h).__name__ for h in hooks]
    inner = [type(h).__name__ for h in hooks[0]] if hook_kinds == ["PruningContainer"] else []
    return {
        "params": [n for n, _ in m.named_parameters()],
        "buffers": [n for n, _ in m.named_buffers()],
        "state": list(m.state_dict()),
        "hooks": hook_kinds,
        "inner": inner,
        "mask": m.weight_mask.detach().numpy().copy(),
        "mask_dtype": str(m.weight_mask.dtype).split(".")[-1],
        "weight": m.weight.detach().numpy().copy(),
        "grad": m.weight_orig.grad.numpy().copy(),
        "tensor_name": hooks[0]._tensor_name,
        "pruned": P.is_pruned(m),
    }


def _compare(steps):
    e, t = _state("ember", steps), _state("torch", steps)
    for key in t:
        if isinstance(t[key], np.ndarray):
            np.testing.assert_allclose(e[key], t[key], rtol=1e-6, atol=1e-6, err_msg=key)
        else:
            assert e[key] == t[key], key


@pytest.mark.parametrize("method", sorted(METHODS))
def test_each_method_matches_torch(method):
    _compare([method])


@pytest.mark.parametrize(
    "steps",
    [
        ["l1_unstructured", "random_unstructured"],
        ["random_structured_0", "l1_unstructured", "ln_structured_l1_d1"],
        ["ln_structured_l2", "ln_structured_l2"],
        ["custom_from_mask", "random_structured_neg", "random_unstructured_int"],
        ["identity", "l1_scores"],
        ["ln_structured_zero", "random_structured_0"],
    ],
)
def test_iterated_pruning_matches_torch(steps):
    _compare(steps)


@pytest.mark.parametrize("method", ["random_unstructured", "l1_unstructured"])
def test_global_unstructured_matches_torch(method):
    def run(lib):
        L, P = _lib(lib)
        L.manual_seed(5)
        a, b = L.nn.Linear(4, 3), L.nn.Linear(3, 2)
        P.l1_unstructured(a, "weight", amount=2)
        L.manual_seed(6)
        cls = P.RandomUnstructured if method == "random_unstructured" else P.L1Unstructured
        pairs = ((a, "weight"), (b, "weight"), (b, "bias"))
        P.global_unstructured(pairs, pruning_method=cls, amount=0.5)
        hooks = [type(h).__name__ for m in (a, b) for h in m._forward_pre_hooks.values()]
        masks = [getattr(m, f"{n}_mask").numpy().copy() for m, n in pairs]
        return hooks, masks

    (eh, em), (th, tm) = run("ember"), run("torch")
    assert eh == th
    for x, y in zip(em, tm):
        np.testing.assert_array_equal(x, y)


def test_global_unstructured_accepts_a_generator():
    # torch walks `parameters` three times, so a generator loses its pairs after the first;
    # ember reads it once
    m = ember.nn.Linear(4, 3)
    eprune.global_unstructured(
        ((m, n) for n in ("weight", "bias")), pruning_method=eprune.L1Unstructured, amount=5
    )
    assert int((m.weight_mask == 0).sum() + (m.bias_mask == 0).sum()) == 5


def test_remove_after_iterated_pruning_matches_torch():
    def run(lib):
        L, P = _lib(lib)
        m = _conv(lib)
        P.l1_unstructured(m, "weight", 0.5)
        P.ln_structured(m, "weight", 1, 2, dim=0)
        P.remove(m, "weight")
        return [n for n, _ in m.named_parameters()], m.weight.detach().numpy(), P.is_pruned(m)

    (en, ew, ep), (tn, tw, tp) = run("ember"), run("torch")
    assert en == tn and ep == tp is False
    np.testing.assert_array_equal(ew, tw)


def test_failed_reprune_keeps_the_earlier_pruning():
    # torch drops the earlier hook before validating the new method, leaving `weight` stale;
    # ember validates first, so the module stays pruned as it was
    m = ember.nn.Linear(4, 3)
    eprune.l1_unstructured(m, "weight", 0.5)
    before = m.weight_mask.clone()
    with pytest.raises(ValueError):
        eprune.l1_unstructured(m, "weight", -1)
    with pytest.raises(IndexError):
        eprune.ln_structured(m, "weight", 1, 2, dim=5)
    hooks = list(m._forward_pre_hooks.values())
    assert len(hooks) == 1 and type(hooks[0]).__name__ == "L1Unstructured"
    np.testing.assert_array_equal(m.weight_mask.numpy(), before.numpy())
    eprune.ln_structured(m, "weight", 1, 2, dim=0)
    container = next(iter(m._forward_pre_hooks.values()))
    assert [type(h).__name__ for h in container] == ["L1Unstructured", "LnStructured"]
    # a failure inside an existing container's compute_mask leaves the container as it was
    with pytest.raises(IndexError):
        eprune.random_structured(m, "weight", 1, dim=-7)
    assert len(container) == 2 and list(m._forward_pre_hooks.values()) == [container]


def _message(fn):
    try:
        fn()
    except Exception as exc:  # noqa: BLE001 - the class and text are what is compared
        return type(exc).__name__, str(exc).replace("torch.Size", "Size")
    return None


@pytest.mark.parametrize(
    "call",
    [
        lambda L, P: P.random_structured(L.nn.Linear(2, 2), "bias", 1, 0),
        lambda L, P: P.random_structured(L.nn.Linear(2, 2), "weight", 1, 3),
        lambda L, P: P.random_structured(L.nn.Linear(2, 2), "weight", 5, 0),
        lambda L, P: P.random_structured(L.nn.Linear(2, 2), "weight", 1.5, 0),
        lambda L, P: P.random_structured(L.nn.Linear(2, 2), "weight", "a", 0),
        lambda L, P: P.l1_unstructured(L.nn.Linear(2, 2), "weight", 1, importance_scores=L.ones(3)),
        lambda L, P: P.custom_from_mask(L.nn.Linear(2, 2), "weight", L.ones(3)),
        lambda L, P: P.L1Unstructured(1).prune(L.ones(3), importance_scores=L.ones(2)),
        lambda L, P: P.global_unstructured(3, P.L1Unstructured, amount=1),
        lambda L, P: P.remove(L.nn.Linear(2, 2), "weight"),
    ],
)
def test_error_messages_match_torch(call):
    ours = _message(lambda: call(ember, eprune))
    theirs = _message(lambda: call(torch, tprune))
    assert ours == theirs and theirs is not None

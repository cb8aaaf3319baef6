"""Each elementwise optimizer has one update body (``_update``) that runs over a group's flat
buffers or per parameter: both paths give torch's values and version counts, take a Tensor lr,
and SGD updates complex parameters as torch does."""

from __future__ import annotations

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

CASES = [
    ("Adam", {}),
    ("Adam", {"amsgrad": True, "weight_decay": 0.1, "maximize": True}),
    ("Adam", {"weight_decay": 0.1, "decoupled_weight_decay": True}),
    ("AdamW", {}),
    ("AdamW", {"weight_decay": 0}),
    ("SGD", {}),
    ("SGD", {"momentum": 0.9, "nesterov": True, "weight_decay": 0.1}),
    ("SGD", {"momentum": 0.9, "dampening": 0.1, "maximize": True}),
    ("NAdam", {}),
    ("NAdam", {"weight_decay": 0.1, "decoupled_weight_decay": True}),
    ("RAdam", {"weight_decay": 0.1, "decoupled_weight_decay": True}),
    ("ASGD", {"t0": 2}),
    ("RMSprop", {"centered": True, "momentum": 0.5}),
    ("Rprop", {}),
    ("Adagrad", {"lr_decay": 0.1}),
    ("Adadelta", {}),
    ("Adamax", {}),
]


def _run(lib, name, kw, shared):
    rng = np.random.default_rng(0)
    ws = [rng.standard_normal((4, 3)).astype(np.float32), rng.standard_normal(5).astype(np.float32)]
    ps = [lib.tensor(w, requires_grad=True) for w in ws]
    held = [p.detach() for p in ps] if shared else None  # parameters that are not sole holders
    opt = getattr(lib.optim, name)(ps, **kw)
    for _ in range(4):
        for p in ps:
            p.grad = lib.tensor(rng.standard_normal(tuple(p.shape)).astype(np.float32))
        opt.step()
    del held
    return [p.detach().numpy().copy() for p in ps], [p._version for p in ps]


@pytest.mark.parametrize("shared", [False, True], ids=["sole", "viewed"])
@pytest.mark.parametrize("foreach", [False, None], ids=["per_param", "flat"])
@pytest.mark.parametrize("name,kw", CASES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CASES)])
def test_both_paths_match_torch(name, kw, foreach, shared):
    ev, ever = _run(ember, name, dict(kw, foreach=foreach), shared)
    tv, tver = _run(torch, name, dict(kw, foreach=foreach), shared)
    for e, t in zip(ev, tv):
        np.testing.assert_allclose(e, t, rtol=1e-6, atol=1e-6)
    assert ever == tver


@pytest.mark.parametrize("foreach", [False, None])
@pytest.mark.parametrize("name", ["Adam", "SGD", "RMSprop", "Adagrad"])
def test_tensor_lr(name, foreach):
    out = []
    for lib in (ember, torch):
        p = lib.tensor([1.0, 2.0], requires_grad=True)
        opt = getattr(lib.optim, name)([p], lr=lib.tensor(0.1), foreach=foreach)
        for _ in range(2):
            p.grad = lib.tensor([0.5, -0.5])
            opt.step()
        out.append(p.detach().numpy())
    np.testing.assert_allclose(out[0], out[1], rtol=1e-6)


@pytest.mark.parametrize("foreach", [False, None])
def test_sgd_complex(foreach):
    out = []
    for lib in (ember, torch):
        p = lib.tensor([1 + 2j, 3 - 1j], requires_grad=True)
        opt = lib.optim.SGD([p], lr=0.1, momentum=0.9, foreach=foreach)
        for _ in range(2):
            p.grad = lib.tensor([0.5 + 1j, -0.5j])
            opt.step()
        out.append(p.detach().numpy())
    np.testing.assert_allclose(out[0], out[1], rtol=1e-6)


def test_one_update_body():
    # the per-parameter path has no second copy of the algorithm
    from ember.optim._single import ElementwiseOptimizer

    for cls in (ember.optim.Adam, ember.optim.SGD, ember.optim.RMSprop, ember.optim.NAdam):
        assert issubclass(cls, ElementwiseOptimizer)
        assert not hasattr(cls, "_single_step") and not hasattr(cls, "_flat_step")


@pytest.mark.parametrize("layout", ["dup_in_group", "dup_across_groups", "two_groups"])
def test_state_dict_numbers_duplicates_as_torch(layout):
    import warnings

    out = []
    for lib in (ember, torch):
        p, q = lib.zeros(2, requires_grad=True), lib.zeros(3, requires_grad=True)
        if layout == "dup_in_group":
            groups = [{"params": [p, q, p]}]
        elif layout == "two_groups":
            groups = [{"params": [p]}, {"params": [q], "lr": 0.5}]
        else:
            groups = [{"params": [p, q]}, {"params": [q], "lr": 0.5}]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                opt = lib.optim.SGD(groups, lr=0.1)
            except ValueError as e:
                out.append(str(e))
                continue
        out.append(([g["params"] for g in opt.state_dict()["param_groups"]], repr(opt)))
    assert out[0] == out[1]

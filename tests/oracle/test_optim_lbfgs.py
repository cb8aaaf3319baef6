"""LBFGS against torch.optim.LBFGS, with and without the strong-Wolfe line search."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.optim as eoptim

torch = pytest.importorskip("torch")


def _problem(seed=0):
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((8, 5)).astype(np.float32)
    b = rng.standard_normal(8).astype(np.float32)
    w0 = rng.standard_normal(5).astype(np.float32)
    v0 = rng.standard_normal((2, 1)).astype(np.float32)
    return A, b, w0, v0


def _run(lib, mod, steps, **kw):
    A, b, w0, v0 = _problem()
    w, v = lib.tensor(w0, requires_grad=True), lib.tensor(v0, requires_grad=True)
    A_, b_ = lib.tensor(A), lib.tensor(b)
    opt = mod.LBFGS([w, v], **kw)

    def closure():
        opt.zero_grad()
        r = A_ @ w - b_ + v.sum()
        loss = (r * r).sum() + 0.1 * (w**4).sum() + (v * v).sum()
        loss.backward()
        return loss

    losses = [float(opt.step(closure).detach()) for _ in range(steps)]
    return opt, [w, v], losses


@pytest.mark.parametrize(
    "kw",
    [
        dict(max_iter=4),
        dict(max_iter=3, lr=0.5, history_size=2),
        dict(max_iter=4, line_search_fn="strong_wolfe"),
        dict(max_iter=6, history_size=3, line_search_fn="strong_wolfe"),
    ],
)
def test_lbfgs_matches_torch(kw):
    eo, ep, el = _run(ember, eoptim, 3, **kw)
    to, tp, tl = _run(torch, torch.optim, 3, **kw)
    np.testing.assert_allclose(el, tl, rtol=1e-4)
    for e, t in zip(ep, tp):
        np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=1e-4, atol=1e-5)
    es, ts = eo.state[ep[0]], to.state[tp[0]]
    assert sorted(es) == sorted(ts)
    assert es["n_iter"] == ts["n_iter"] and es["func_evals"] == ts["func_evals"]
    assert len(es["old_dirs"]) == len(ts["old_dirs"])
    assert eo.state_dict()["param_groups"] == to.state_dict()["param_groups"]


def test_lbfgs_errors_match_torch():
    for make in (
        lambda m, lib: m.LBFGS(
            [{"params": [lib.zeros(1, requires_grad=True)]}, {"params": [lib.zeros(1)]}]
        ),
        lambda m, lib: m.LBFGS([lib.zeros(1, requires_grad=True)], lr=-1),
    ):
        got = []
        for lib, mod in ((torch, torch.optim), (ember, eoptim)):
            with pytest.raises(Exception) as info:
                make(mod, lib)
            got.append((type(info.value), str(info.value)))
        assert got[0] == got[1]

    got = []
    for lib, mod in ((torch, torch.optim), (ember, eoptim)):
        w = lib.ones(2, requires_grad=True)
        opt = mod.LBFGS([w], line_search_fn="backtracking")

        def closure(w=w, opt=opt):
            opt.zero_grad()
            loss = (w * w).sum()
            loss.backward()
            return loss

        with pytest.raises(RuntimeError) as info:
            opt.step(closure)
        got.append(str(info.value))
    assert got[0] == got[1]

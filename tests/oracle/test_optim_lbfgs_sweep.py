"""LBFGS against torch in float64 on problems that exercise the line search's bracketing,
zoom and safeguard, the history's forgetting and the stopping rules: losses, parameters and
the whole optimizer state after every step, plus the cubic interpolation itself."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.optim as eoptim

torch = pytest.importorskip("torch")


def _rosenbrock(lib, w):
    return (100 * (w[1:] - w[:-1] ** 2) ** 2 + (1 - w[:-1]) ** 2).sum()


def _quartic(lib, w):
    return (w**4).sum() - 3 * (w**2).sum() + w.sum() * 0.5


def _logistic(lib, w):
    rng = np.random.default_rng(1)
    X = lib.tensor(rng.standard_normal((30, w.shape[0])))
    y = lib.tensor((rng.random(30) > 0.5).astype(np.float64))
    z = X @ w
    return (lib.nn.functional.softplus(z) - y * z).mean() + 1e-3 * (w * w).sum()


PROBLEMS = {"rosenbrock": _rosenbrock, "quartic": _quartic, "logistic": _logistic}
CONFIGS = [
    dict(),
    dict(max_iter=5, history_size=2),
    dict(max_iter=7, lr=0.3),
    dict(max_iter=50, max_eval=12),
    dict(line_search_fn="strong_wolfe"),
    dict(line_search_fn="strong_wolfe", max_iter=5, history_size=2),
    dict(line_search_fn="strong_wolfe", max_iter=30, max_eval=40, lr=2.0),
    dict(line_search_fn="strong_wolfe", tolerance_change=1e-4, tolerance_grad=1e-3),
]


def _run(lib, mod, problem, kw, steps=6):
    w0 = np.linspace(-1.2, 1.1, 6)
    w = lib.tensor(w0, requires_grad=True)
    opt = mod.LBFGS([w], **kw)

    def closure():
        opt.zero_grad()
        loss = PROBLEMS[problem](lib, w)
        loss.backward()
        return loss

    trace = []
    for _ in range(steps):
        loss = float(opt.step(closure))
        st = opt.state[w]
        trace.append(
            (loss, w.detach().numpy().copy(), st["func_evals"], st["n_iter"], len(st["old_dirs"]),
             float(st["t"]), st["prev_loss"], sorted(st))
        )  # fmt: skip
    return trace


@pytest.mark.parametrize("kw", CONFIGS, ids=[str(sorted(c.items())) for c in CONFIGS])
@pytest.mark.parametrize("problem", sorted(PROBLEMS))
def test_lbfgs_trace(problem, kw):
    ours, theirs = _run(ember, eoptim, problem, kw), _run(torch, torch.optim, problem, kw)
    # Rosenbrock's valley amplifies last-bit differences of the reductions (ember's dot and
    # sum are NumPy's, not ATen's): the same path (every count equal), looser values
    rtol = 1e-5 if problem == "rosenbrock" else 1e-8
    for e, t in zip(ours, theirs):
        assert e[2:5] == t[2:5] and e[7] == t[7]
        np.testing.assert_allclose(e[0], t[0], rtol=rtol, atol=1e-12)
        np.testing.assert_allclose(e[1], t[1], rtol=rtol, atol=1e-10)
        np.testing.assert_allclose(e[5], t[5], rtol=rtol)
        np.testing.assert_allclose(e[6], t[6], rtol=rtol, atol=1e-12)


CUBIC = [
    (0.0, 1.0, -2.0, 1.0, 0.5, 1.0, None),
    (1.0, 0.5, 1.0, 0.0, 1.0, -2.0, None),
    (0.0, 1.0, -1.0, 2.0, 3.0, 0.5, (0.1, 5.0)),
    (0.0, 1.0, 1.0, 1.0, 1.0, 1.0, None),  # no real minimiser: the midpoint
    (0.0, 1.0, -1.0, 1.0, 0.0, -3.0, (1.01, 10.0)),
    (2.0, 0.0, 3.0, 2.5, 1.0, -1.0, None),
]


@pytest.mark.parametrize("case", CUBIC)
def test_cubic_interpolate(case):
    from torch.optim.lbfgs import _cubic_interpolate as theirs

    from ember.optim.lbfgs import _cubic_interpolate as ours

    *args, bounds = case

    def as_lib(lib):
        x1, f1, g1, x2, f2, g2 = args
        t = lambda v: lib.tensor(v, dtype=lib.float64)  # noqa: E731
        return ours if lib is ember else theirs, (x1, f1, t(g1), x2, f2, t(g2))

    fe, ae = as_lib(ember)
    ft, at = as_lib(torch)
    np.testing.assert_allclose(float(fe(*ae, bounds=bounds)), float(ft(*at, bounds=bounds)))

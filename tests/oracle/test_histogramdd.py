"""Oracle tests: torch.histogramdd and the top-level GradScaler alias."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from tests.oracle.helper import check, check_raises

torch = pytest.importorskip("torch")

_rng = np.random.default_rng(5)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(
    "kw",
    [
        {"bins": 3},
        {"bins": [2, 5]},
        {"bins": (4, 3), "range": [-1.0, 1.0, 0.0, 2.0]},
        {"bins": 3, "density": True},
        {"bins": [2, 3], "weight": True},
        {"bins": [2, 3], "weight": True, "density": True},
    ],
)
def test_histogramdd(kw, dtype):
    x = _rng.standard_normal((40, 2)).astype(dtype)
    x[0] = [np.nan, 0.1]
    kw = dict(kw)
    w = _rng.uniform(0, 2, 40).astype(dtype) if kw.pop("weight", False) else None

    def f(lib, x, w):
        return lib.histogramdd(x, weight=w, **kw)

    check(f, [x[1:], None if w is None else w[1:]], grad=False)
    if "range" in kw:
        check(f, [x, None if w is None else w], grad=False)


def test_histogramdd_shapes_edges_and_errors():
    f = lambda lib, x: lib.histogramdd(x, bins=3)  # noqa: E731
    check(f, [_rng.standard_normal((2, 5, 3))], grad=False)
    check(f, [np.zeros((0, 2))], grad=False)
    check(f, [np.array([[2.0, 1.0]])], grad=False)
    check(f, [_rng.standard_normal((6, 1))], grad=False)

    def g(lib, x):
        edges = [lib.tensor([0.0, 1.0]), lib.tensor([-1.0, 0.0, 0.5, 1.0])]
        return lib.histogramdd(x, bins=edges)

    check(g, [_rng.uniform(-1, 1, (30, 2)).astype(np.float32)], grad=False)
    x = _rng.standard_normal((5, 2)).astype(np.float32)
    for h in (
        lambda lib, x: lib.histogramdd(x, bins=[2]),
        lambda lib, x: lib.histogramdd(x, bins=2, range=[0.0, 1.0]),
        lambda lib, x: lib.histogramdd(x, bins=2, range=[1.0, 0.0, 0.0, 1.0]),
        lambda lib, x: lib.histogramdd(x.long(), bins=2),
        lambda lib, x: lib.histogramdd(x[:, 0], bins=2),
        lambda lib, x: lib.histogramdd(x, bins=0),
        lambda lib, x: lib.histogramdd(x, bins=2, weight=lib.ones(4)),
        lambda lib, x: lib.histogramdd(x, bins=2, weight=lib.ones(5, dtype=lib.float64)),
        lambda lib, x: lib.histogramdd(x * float("nan"), bins=2),
    ):
        check_raises(h, [x], match_message=True)
    r = ember.histogramdd(ember.tensor(x, requires_grad=True), bins=2)
    assert type(r).__name__ == "histogramdd" and isinstance(r.bin_edges, tuple)
    assert type(r.hist.grad_fn).__name__ == "NotImplemented"


def test_grad_scaler_alias():
    assert ember.GradScaler is ember.amp.GradScaler
    assert torch.GradScaler is torch.amp.GradScaler

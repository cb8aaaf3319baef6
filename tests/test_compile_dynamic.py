"""Dynamic shapes: automatic dynamic (a second size recompiles once, dynamic in the sizes that
changed), ``dynamic=True``, ``dynamic=False``, ``mark_dynamic``; compile counts compared with
torch's through a counting custom backend; compiled equals eager (values and gradients)."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember._dynamo

# how many times torch 2.13 calls a custom backend for each program below (re-measured by the
# slow test: torch.compile's start-up costs ~15 s)
RUNS = {
    "automatic": ({}, False, (4, 8, 16), 2),
    "dynamic_true": ({"dynamic": True}, False, (4, 8, 16), 1),
    "dynamic_false": ({"dynamic": False}, False, (4, 8, 16), 3),
    "mark_dynamic": ({}, True, (4, 8, 16), 1),
    "one_specialised": ({}, False, (1, 2, 3, 5), 2),
    "back_to_one": ({}, False, (4, 8, 1, 16), 3),
}


def _count(lib, kwargs, mark, sizes):
    lib._dynamo.reset()
    n = [0]

    def backend(gm, example_inputs):
        n[0] += 1
        return gm.forward

    def f(x, w):
        return (x @ w).relu().sum(1) * 2

    g = lib.compile(f, backend=backend, **kwargs)
    w = lib.ones(3, 2)
    for b in sizes:
        x = lib.arange(b * 3.0).reshape(b, 3) - b
        if mark:
            lib._dynamo.mark_dynamic(x, 0)
        assert np.array_equal(g(x, w).numpy(), f(x, w).numpy())
    return n[0]


@pytest.mark.parametrize("case", RUNS)
def test_compile_counts_as_torch(case):
    kwargs, mark, sizes, want = RUNS[case]
    assert _count(ember, kwargs, mark, sizes) == want


@pytest.mark.slow
@pytest.mark.parametrize("case", RUNS)
def test_compile_counts_equal_torch(case):
    torch = pytest.importorskip("torch")
    kwargs, mark, sizes, want = RUNS[case]
    assert _count(torch, kwargs, mark, sizes) == want


def test_dynamic_entry_values_and_gradients_equal_eager():
    ember.manual_seed(0)
    m = ember.nn.Sequential(ember.nn.Linear(3, 4), ember.nn.ReLU(), ember.nn.Linear(4, 2))
    c = ember.compile(m)
    for b in (4, 8, 16, 5):
        x = ember.randn(b, 3, requires_grad=True)
        x2 = x.detach().clone().requires_grad_()
        y1, y2 = m(x), c(x2)
        y1.sum().backward()
        y2.sum().backward()
        assert np.array_equal(y1.detach().numpy(), y2.detach().numpy())
        assert np.array_equal(x.grad.numpy(), x2.grad.numpy())
    params = [p.grad.numpy() for p in m.parameters()]
    assert all(np.isfinite(g).all() for g in params)
    entries = c.forward.entries
    assert [e.dims for e in entries] == [None, frozenset({(0, 0)})]
    assert "aten::addmm" in entries[1].source  # the IR, run at any batch size


def _view_by_size(x):
    return x.view(x.size(0), -1) * 2  # the user's code reads a size: Python may depend on it


def _flatten_all(x):
    return x.flatten(0) * 2  # a parameter computed from the size: the traces differ


@pytest.mark.parametrize("fn", [_view_by_size, _flatten_all])
def test_size_dependent_programs_stay_static(fn):
    g = ember.compile(fn)
    for b in (4, 8, 16):
        x = ember.arange(b * 6.0).reshape(b, 2, 3)
        assert np.array_equal(g(x).numpy(), fn(x).numpy())
    assert [e.dims for e in g._ember_compiled.entries] == [None] * 3


def test_mark_dynamic_stores_indices_as_torch():
    torch = pytest.importorskip("torch")
    for lib in (torch, ember):
        t = lib.ones(2, 3)
        lib._dynamo.mark_dynamic(t, 3)
        lib._dynamo.mark_dynamic(t, [-1])
        assert t._dynamo_dynamic_indices == {3, -1}

"""The first call of a compiled function returns the compiled code's result, as torch's does:
its autograd node is ``CompiledFunctionBackward``, double backward is refused, the capture's
random draws are replayed (dropout equals eager's for the same seed) and Python side effects
run once per call."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember._dynamo

_DOUBLE = "torch.compile with aot_autograd does not currently support double backward"


def _program(lib):
    w = lib.linspace(-1.0, 1.0, 12).reshape(4, 3).requires_grad_()

    def f(x):
        return (x @ w).tanh().sum()

    return f, w


@pytest.mark.parametrize("fresh_shape", [False, True])
def test_first_call_grad_fn_is_compiled_as_torch(fresh_shape):
    torch = pytest.importorskip("torch")
    names = {}
    for lib in (ember, torch):
        if lib is torch:
            torch._dynamo.reset()
        f, _ = _program(lib)
        cf = lib.compile(f)
        x = lib.ones(2, 4)
        names[lib.__name__] = [type(cf(x).grad_fn).__name__ for _ in range(2)]
    assert names["ember"] == names["torch"] == ["CompiledFunctionBackward"] * 2


def test_first_call_refuses_double_backward_as_torch():
    torch = pytest.importorskip("torch")
    errors = {}
    for lib in (ember, torch):
        if lib is torch:
            torch._dynamo.reset()
        x = lib.linspace(0.5, 1.5, 5).requires_grad_()
        y = lib.compile(lambda x: (x * x).sin().sum())(x)  # the first call
        (g,) = lib.autograd.grad(y, x, create_graph=True)
        assert type(g.grad_fn).__name__ == "CompiledFunctionBackwardBackward"
        with pytest.raises(RuntimeError) as e:
            lib.autograd.grad(g.sum(), x)
        errors[lib.__name__] = str(e.value)
    assert errors["ember"] == errors["torch"] == _DOUBLE


def test_first_call_gradients_equal_eager():
    f, w = _program(ember)
    x = ember.ones(2, 4)
    f(x).backward()
    want = w.grad.numpy().copy()
    w.grad = None
    ember.compile(f)(x).backward()
    assert np.array_equal(w.grad.numpy(), want)


def test_first_call_dropout_and_rng_equal_eager():
    drop = ember.nn.Dropout(0.5)

    def f(x):
        return drop(x * 3).exp()

    x = ember.ones(64)
    ember.manual_seed(7)
    want, want_next = f(x), ember.rand(4)
    ember.manual_seed(7)
    got = ember.compile(f)(x)  # the capture draws, then the compiled run replays the draws
    got_next = ember.rand(4)
    assert np.array_equal(got.numpy(), want.numpy())
    assert np.array_equal(got_next.numpy(), want_next.numpy())  # the generator advanced once
    assert (got.numpy() == 1).any() and (got.numpy() != 1).any()


def test_first_call_batchnorm_statistics_update_once():
    bn = ember.nn.BatchNorm1d(3)
    x = ember.linspace(0.0, 1.0, 12).reshape(4, 3)
    ref = ember.nn.BatchNorm1d(3)
    want = ref(x)
    got = ember.compile(bn)(x)
    assert np.array_equal(got.detach().numpy(), want.detach().numpy())
    assert np.array_equal(bn.running_mean.numpy(), ref.running_mean.numpy())
    assert int(bn.num_batches_tracked) == 1


def _counted(lib, counter):
    def f(x):
        y = x * 2
        counter.append(1)  # a side effect on a Python list: a graph break
        return y.sin()

    return f


def test_side_effects_run_once_per_compiled_call_as_torch():
    torch = pytest.importorskip("torch")
    counts = {}
    for lib in (ember, torch):
        if lib is torch:
            torch._dynamo.reset()
        seen: list = []
        cf = lib.compile(_counted(lib, seen))
        per_call = []
        for _ in range(3):
            cf(lib.ones(3))
            per_call.append(len(seen))
        counts[lib.__name__] = per_call
    assert counts["ember"] == counts["torch"] == [1, 2, 3]


def test_explain_without_break_runs_side_effect_free_program_as_torch():
    torch = pytest.importorskip("torch")
    out = {}
    for lib in (ember, torch):
        if lib is torch:
            torch._dynamo.reset()
        e = lib._dynamo.explain(lambda x: (x * 2).sin())(lib.ones(3))
        out[lib.__name__] = (e.graph_count, e.graph_break_count)
    assert out["ember"] == out["torch"] == (1, 0)


def test_explain_runs_side_effects_once_as_torch():
    torch = pytest.importorskip("torch")
    counts = {}
    for lib in (ember, torch):
        if lib is torch:
            torch._dynamo.reset()
        seen: list = []
        lib._dynamo.explain(_counted(lib, seen))(lib.ones(3))
        counts[lib.__name__] = len(seen)
    assert counts["ember"] == counts["torch"] == 1

"""autograd.grad(..., is_grads_batched=True): a batch of vector-Jacobian products, as torch."""

import numpy as np
import pytest

import ember
from tests.oracle.helper import torch

pytestmark = pytest.mark.skipif(torch is None, reason="torch is not installed")


def _both(fn, *arrays, requires_grad=True):
    out = []
    for lib in (ember, torch):
        ts = [lib.tensor(a, requires_grad=requires_grad) for a in arrays]
        out.append(fn(lib, *ts))
    return out


def _close(e, t):
    assert (e is None) == (t is None)
    if e is not None:
        assert tuple(e.shape) == tuple(t.shape)
        np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=1e-10)


def test_jacobian_rows_of_a_vector_function():
    x = np.random.default_rng(0).standard_normal(4)

    def fn(lib, a):
        y = lib.sin(a) * a.sum()
        return lib.autograd.grad(y, a, lib.eye(4, dtype=lib.float64), is_grads_batched=True)

    e, t = _both(fn, x)
    _close(e[0], t[0])


def test_several_outputs_and_inputs_unused_and_create_graph():
    rng = np.random.default_rng(1)
    a, b, c = rng.standard_normal((2, 3)), rng.standard_normal(3), rng.standard_normal(2)
    v1, v2 = rng.standard_normal((5, 2)), rng.standard_normal((5, 3))

    def fn(lib, a, b, c):
        y1 = (a * a) @ b
        y2 = (a * b).sum(0)
        gs = lib.autograd.grad(
            (y1, y2),
            (a, b, c),
            (lib.tensor(v1), lib.tensor(v2)),
            is_grads_batched=True,
            allow_unused=True,
            create_graph=True,
        )
        # the batched gradients are differentiable: a second-order gradient through them
        (gg,) = lib.autograd.grad((gs[0] ** 2).sum(), b)
        return gs + (gg,)

    e, t = _both(fn, a, b, c)
    for ei, ti in zip(e, t):
        _close(ei, ti)
    assert e[2] is None and e[0].shape == (5, 2, 3) and e[0].requires_grad


def test_graph_is_kept_between_rows_and_freed_after():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    y = x.exp()
    (g,) = ember.autograd.grad(y, x, ember.eye(2), is_grads_batched=True)
    np.testing.assert_allclose(g.numpy(), np.diag(np.exp([1.0, 2.0])))
    with pytest.raises(RuntimeError, match="second time"):
        ember.autograd.grad(y, x, ember.eye(2), is_grads_batched=True)


def test_errors():
    for lib in (ember, torch):
        x = lib.randn(3, requires_grad=True)
        with pytest.raises(RuntimeError, match="first dimension of each grad_output"):
            lib.autograd.grad(x * x, x, lib.ones(2, 4), is_grads_batched=True)
        with pytest.raises(ValueError):
            lib.autograd.grad((x * x).sum(), x, None, is_grads_batched=True)

"""Oracle tests: the NumPy fast paths of pointwise backward formulas (``array_backward``).

They run when backward records no graph; with ``create_graph=True`` the ember-op formulas
run instead. Both must give torch's gradients, for every layout a gradient arrives in: dense,
broadcast from one value (``sum``'s backward), non-contiguous, 0-d.
"""

import numpy as np
import pytest

import ember
from tests.oracle.helper import check, check_double_backward, rand, torch

pytestmark = pytest.mark.filterwarnings("ignore:Using backward.. with create_graph=True")

UNARY = ["sin", "cos", "tanh", "sigmoid"]
SHAPES = [(), (5,), (3, 4)]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("name", UNARY)
def test_unary_fast_backward(name, shape, dtype):
    check(lambda lib, x: getattr(lib, name)(x), [rand(*shape, dtype=dtype)])
    # the gradient sum hands back: one value broadcast to the input's shape
    check(lambda lib, x: getattr(lib, name)(x).sum(), [rand(*shape, dtype=dtype)])


@pytest.mark.parametrize("name", UNARY)
def test_unary_fast_backward_transposed(name):
    check(lambda lib, x: getattr(lib, name)(x.t()) * 3.0, [rand(4, 3, dtype="float64")])


@pytest.mark.parametrize("name", UNARY)
def test_unary_create_graph_uses_differentiable_formula(name):
    check_double_backward(lambda lib, x: getattr(lib, name)(x), [rand(3, 2, dtype="float64")])


@pytest.mark.parametrize(
    "fn",
    [
        lambda lib, x, y: x * y,
        lambda lib, x, y: (x * y).sum(),
        lambda lib, x, y: x * y[0],  # broadcast: the engine sums y's gradient back
        lambda lib, x, y: x * 2.5,
        lambda lib, x, y: x * x,
        lambda lib, x, y: (x * x).sum(),
        lambda lib, x, y: (y.tanh() * y.tanh()).sum(),
        lambda lib, x, y: x * x.detach(),  # same values, only one input requires grad
        lambda lib, x, y: x[0] * x[0],
        lambda lib, x, y: x[0] * x[1],
    ],
)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_mul_fast_backward(fn, dtype):
    check(fn, [rand(3, 4, dtype=dtype), rand(3, 4, dtype=dtype)])


def test_mul_mixed_dtypes_take_the_ember_formula():
    check(lambda lib, x, y: x * y, [rand(3, 4, dtype="float32"), rand(3, 4, dtype="float64")])
    check(lambda lib, x, y: (x * y).sum(), [rand(3, dtype="float32"), rand(3, dtype="float16")])


def test_square_via_mul_double_backward():
    check_double_backward(lambda lib, x: x * x, [rand(3, 2, dtype="float64")])
    check_double_backward(lambda lib, x, y: x * y, [rand(3, 2, dtype="float64")] * 2)


def test_square_via_mul_hooks_see_the_summed_gradient():
    # a hook on the squared tensor sees the gradient of both factors together, as in torch
    for lib in (ember, torch):
        seen = []
        a = lib.tensor([1.0, -2.0, 3.0], requires_grad=True)
        t = a.tanh()
        t.register_hook(lambda g, seen=seen: seen.append(g.detach().clone()))
        t.retain_grad()
        (t * t).sum().backward()
        if lib is ember:
            e_seen, e_grad, e_tgrad = seen[0], a.grad, t.grad
        else:
            np.testing.assert_allclose(e_seen.numpy(), seen[0].numpy(), rtol=1e-5)
            np.testing.assert_allclose(e_grad.numpy(), a.grad.numpy(), rtol=1e-5)
            np.testing.assert_allclose(e_tgrad.numpy(), t.grad.numpy(), rtol=1e-5)


def test_square_via_mul_node_post_hook_sees_both_gradients():
    # with a post hook on MulBackward0 the node returns one gradient per input, as torch's
    for lib in (ember, torch):
        a = lib.tensor([1.0, -2.0, 3.0], requires_grad=True)
        p = a * a
        seen = []
        p.grad_fn.register_hook(lambda gi, go, seen=seen: seen.append(gi))
        p.sum().backward()
        assert len(seen[0]) == 2 and all(g is not None for g in seen[0])
        np.testing.assert_allclose(a.grad.numpy(), [2.0, -4.0, 6.0])


def test_fast_backward_leaves_saved_tensors_unchanged():
    a = ember.tensor(rand(6, dtype="float32"), requires_grad=True)
    t = a.tanh()
    before = t.detach().clone()
    (t * t).sum().backward(retain_graph=True)
    first = a.grad.clone()
    np.testing.assert_array_equal(t.detach().numpy(), before.numpy())
    a.grad = None
    (t * t).sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), first.numpy())

"""Oracle tests: in-place variants of ops are built by the registry and lose nothing.

``Op.variant`` / ``Op.into`` copy every declared field of an op (saves, ``save_if``, promotion,
...) and its backward and array backward. Before, the in-place ``add_/sub_/mul_/div_`` copies
dropped ``save_if`` (a full snapshot of the input was saved, never read) and the array
backward (the slow backward ran).
"""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember._core.node import SavedTensor
from ember._ops.registry import OPS
from tests.oracle.helper import check, rand

torch = pytest.importorskip("torch")

_VARIANTS = [o for o in OPS if o.variant_of is not None]


def test_variants_exist():
    names = {o.name for o in _VARIANTS}
    assert {"add", "sub", "mul", "div", "reciprocal", "clamp", "sin", "leaky_relu_"} <= names


@pytest.mark.parametrize("v", _VARIANTS, ids=lambda o: f"{o.name}-{o.where.rsplit('/', 1)[-1]}")
def test_variant_copies_every_field(v):
    base = v.variant_of
    changed = {k for k in base.declared if base.declared[k] != v.declared[k]}
    assert changed <= {"grad_fn", "save"}
    for slot in ("promote", "view", "differentiable", "nondiff_outputs", "save_if", "args"):
        assert getattr(v, slot) == getattr(base, slot), slot
    assert (v.backward_fn is None) == (base.backward_fn is None)
    assert (v.array_backward_fn is None) == (base.array_backward_fn is None)
    if not changed:
        assert v.node_cls is base.node_cls and v.save_spec == base.save_spec


@pytest.mark.parametrize("name", ["add_", "sub_", "mul_", "div_"])
def test_inplace_arithmetic_takes_the_array_backward(name):
    x = ember.randn(4, 3, requires_grad=True)
    h = x * 1.0
    getattr(h, name)(1.5)
    fn = h.grad_fn
    base = fn.op.variant_of
    assert base is not None and base.name == name[:-1]
    # the fast backward of the out-of-place op, where it has one (mul: add/sub pass the
    # gradient on, div has none)
    assert (fn.op.array_backward_fn is not None) == (base.array_backward_fn is not None)
    if name == "mul_":
        assert fn.op.array_backward_fn is not None
    # nothing saved that backward does not read: no snapshot of ``h`` for a number operand
    assert all(s is None or not isinstance(s, SavedTensor) for s in (fn._saved or ()))


@pytest.mark.parametrize("name", ["add_", "sub_", "mul_", "div_"])
@pytest.mark.parametrize("other_grad", [False, True])
def test_inplace_arithmetic_matches_torch(name, other_grad):
    def f(lib, x, y):
        h = x * 1.0
        getattr(h, name)(y if other_grad else y.detach())
        return h

    check(f, [rand(4, 3), rand(3, low=1, high=2)])


@pytest.mark.parametrize("name", ["mul_", "div_"])
def test_inplace_saved_self_as_torch(name):
    for other_grad in (False, True):
        seen = []
        for lib in (torch, ember):
            x = lib.ones(3, requires_grad=True)
            y = lib.full((3,), 2.0, requires_grad=other_grad)
            h = x * 1.0
            getattr(h, name)(y)
            s = h.grad_fn._saved_self
            seen.append(None if s is None else s.detach().numpy().tolist())
        assert seen[0] == seen[1]


def test_inplace_double_backward_matches_torch():
    grads = []
    for lib in (torch, ember):
        x = lib.tensor([0.5, 1.5, -2.0], dtype=lib.float64, requires_grad=True)
        h = x * x
        h.mul_(x)  # x ** 3
        (g,) = lib.autograd.grad(h.sum(), x, create_graph=True)
        (gg,) = lib.autograd.grad(g.sum(), x)
        grads.append((g.detach().numpy(), gg.numpy()))
    np.testing.assert_allclose(grads[0][0], grads[1][0])
    np.testing.assert_allclose(grads[0][1], grads[1][1])


def test_variant_follows_backwards_declared_later():
    from ember._ops.registry import op

    @op("_probe_sq", grad_fn="PowBackward0", save=("self",))
    def _sq(x):
        return x * x

    into = _sq.into(lambda x, out: np.multiply(x, x, out=out))
    renamed = _sq.variant(name="_probe_sq_", grad_fn="PowBackward1")
    assert into.node_cls is _sq.node_cls and renamed.node_cls is not _sq.node_cls

    @_sq.backward
    def _(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 2 * x

    _sq.array_backward(lambda ctx, g: g * 2 * ctx.saved_arrays[0])
    assert renamed.backward_fn is _sq.backward_fn
    assert into.backward_fn is not None and into.array_backward_fn is not None
    x = ember.tensor([1.0, -2.0, 3.0], requires_grad=True)
    for variant in (into, renamed):
        h = x * 1.0
        ember._ops.registry.dispatch_inplace(
            variant, h, (h,), {"out": h._data} if variant is into else {}
        )
        (g,) = ember.autograd.grad(h.sum(), x)
        t = torch.tensor([1.0, -2.0, 3.0], requires_grad=True)
        (tg,) = torch.autograd.grad((t * 1.0).pow_(2).sum(), t)
        np.testing.assert_allclose(g.numpy(), tg.numpy())
    OPS.remove(_sq)
    OPS.remove(into)
    OPS.remove(renamed)

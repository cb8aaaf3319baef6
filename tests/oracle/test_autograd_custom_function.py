"""Oracle tests: custom ``autograd.Function`` compared with torch.

Each case is a function of ``lib`` (``torch`` or ``ember``) that defines its Function subclass
on ``lib.autograd.Function`` and returns what it observed; ``same`` runs it through both and
compares results, or exception class and message.
"""

import numpy as np
import pytest

import ember
from tests.oracle.helper import torch
from tests.oracle.test_autograd_oracle import X34, case, leaf, name, same

once = {}


def once_differentiable(lib):
    if lib not in once:
        mod = __import__(lib.__name__ + ".autograd.function", fromlist=["once_differentiable"])
        once[lib] = mod.once_differentiable
    return once[lib]


CASES: list = []

W24 = np.random.default_rng(3).uniform(-1, 1, (2, 4))
B2 = np.array([0.5, -0.25])


def linear_cls(lib):
    """The tutorial's ``LinearFunction`` (``ctx.save_for_backward``, ``needs_input_grad``)."""

    class LinearFunction(lib.autograd.Function):
        @staticmethod
        def forward(ctx, input, weight, bias=None):
            ctx.save_for_backward(input, weight, bias)
            output = input.mm(weight.t())
            if bias is not None:
                output += bias.unsqueeze(0).expand_as(output)
            return output

        @staticmethod
        def backward(ctx, grad_output):
            input, weight, bias = ctx.saved_tensors
            grad_input = grad_weight = grad_bias = None
            if ctx.needs_input_grad[0]:
                grad_input = grad_output.mm(weight)
            if ctx.needs_input_grad[1]:
                grad_weight = grad_output.t().mm(input)
            if bias is not None and ctx.needs_input_grad[2]:
                grad_bias = grad_output.sum(0)
            return grad_input, grad_weight, grad_bias

    return LinearFunction


@case(CASES)
def _tutorial_linear(lib):
    Linear = linear_cls(lib)
    x, w, b = leaf(lib, X34), leaf(lib, W24), leaf(lib, B2)
    y = Linear.apply(x, w, b)
    seen = (name(y.grad_fn), y.grad_fn.name(), y.requires_grad, y.is_leaf)
    (y * y).sum().backward()
    return seen, y, x.grad, w.grad, b.grad


@case(CASES)
def _linear_no_bias_partial_needs(lib):
    Linear = linear_cls(lib)
    x, w = leaf(lib, X34, requires_grad=False), leaf(lib, W24)
    y = Linear.apply(x, w)
    (gw,) = lib.autograd.grad(y.sum(), w)
    edges = [(name(n), nr) for n, nr in y.grad_fn.next_functions]
    return gw, edges


@case(CASES)
def _linear_double_backward(lib):
    # a backward written with differentiable ops supports create_graph
    Linear = linear_cls(lib)
    x, w, b = leaf(lib, X34), leaf(lib, W24), leaf(lib, B2)
    y = Linear.apply(x, w, b).tanh()
    gx, gw = lib.autograd.grad(y.sum(), (x, w), create_graph=True)
    (gw * gw).sum().backward()
    return gx, gw, x.grad, w.grad, b.grad, name(gx.grad_fn)


def mul_cls(lib):
    class MulConst(lib.autograd.Function):
        @staticmethod
        def forward(ctx, tensor, constant):
            ctx.constant = constant
            return tensor * constant

        @staticmethod
        def backward(ctx, grad_output):
            return grad_output * ctx.constant, None

    return MulConst


@case(CASES)
def _non_tensor_argument(lib):
    MulConst = mul_cls(lib)
    x = leaf(lib, X34)
    y = MulConst.apply(x, 5.5)
    y.backward(lib.ones_like(y))
    return y, x.grad, len(y.grad_fn.next_functions), y.grad_fn.needs_input_grad


@case(CASES)
def _setup_context_style(lib):
    class Scale(lib.autograd.Function):
        @staticmethod
        def forward(x, k, offset=1.0):
            return x * k + offset

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.k = inputs[1]
            ctx.seen = (len(inputs), output.requires_grad, output.grad_fn is None)

        @staticmethod
        def backward(ctx, g):
            return g * ctx.k, None, None

    x = leaf(lib, X34)
    y = Scale.apply(x, 3.0)
    z = Scale.apply(x, k=2.0, offset=0.5)
    (y.sum() + z.sum()).backward()
    return y, z, x.grad, y.grad_fn.seen, y.grad_fn.needs_input_grad, name(y.grad_fn)


@case(CASES)
def _keyword_input_counts(lib):
    class KW(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, y=None):
            ctx.needs = ctx.needs_input_grad
            return x * (y if y is not None else 1)

        @staticmethod
        def backward(ctx, g):
            return g, None

    x = leaf(lib, X34)
    r = KW.apply(x, y=x)
    return r.grad_fn.needs, len(r.grad_fn.next_functions)


@case(CASES)
def _needs_input_grad_in_forward(lib):
    class Probe(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            Probe.seen.append(ctx.needs_input_grad)
            return x + y

        @staticmethod
        def backward(ctx, g):
            return g, g

    Probe.seen = []
    x, y = leaf(lib, X34), leaf(lib, X34, requires_grad=False)
    Probe.apply(x, y)
    with lib.no_grad():
        r = Probe.apply(x, y)
    Probe.apply(x.detach(), y)
    return Probe.seen, r.requires_grad, r.grad_fn is None


def _multi_cls(lib, materialize):
    class Multi(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(materialize)
            return x * 2, x.exp(), "tag"

        @staticmethod
        def backward(ctx, g1, g2, g3):
            Multi.seen.append(
                (g1 is None, g2 is None, g3 is None, None if g2 is None else g2.sum().item())
            )
            out = None
            if g1 is not None:
                out = g1 * 2
            if g2 is not None:
                e = g2 * 3
                out = e if out is None else out + e
            return out

    Multi.seen = []
    return Multi


@case(CASES)
def _multiple_outputs_materialized(lib):
    Multi = _multi_cls(lib, True)
    x = leaf(lib, X34)
    a, b, tag = Multi.apply(x)
    a.sum().backward()
    info = (a.output_nr, b.output_nr, a.grad_fn is b.grad_fn, tag)
    return info, Multi.seen, x.grad


@case(CASES)
def _multiple_outputs_not_materialized(lib):
    Multi = _multi_cls(lib, False)
    x = leaf(lib, X34)
    a, b, _ = Multi.apply(x)
    (gb,) = lib.autograd.grad(b.sum(), x)
    return Multi.seen, gb


@case(CASES)
def _mark_non_differentiable(lib):
    class ArgMax(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            idx = x.argmax(1)
            val = x * 1
            ctx.mark_non_differentiable(idx)
            ctx.save_for_backward(idx)
            return val, idx

        @staticmethod
        def backward(ctx, g, g_idx):
            ArgMax.seen = (str(g_idx.dtype), tuple(g_idx.shape), bool((g_idx == 0).all()))
            return g * 1

    x = leaf(lib, X34)
    val, idx = ArgMax.apply(x)
    val.sum().backward()
    return val.requires_grad, idx.requires_grad, idx.grad_fn is None, idx, ArgMax.seen, x.grad


@case(CASES)
def _mark_non_differentiable_float_output(lib):
    class Half(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            a, b = x * 2, x * 3
            ctx.mark_non_differentiable(b)
            return a, b

        @staticmethod
        def backward(ctx, ga, gb):
            return ga * 2 + gb

    x = leaf(lib, X34)
    a, b = Half.apply(x)
    a.sum().backward()
    return b.requires_grad, x.grad


@case(CASES)
def _mark_dirty(lib):
    class AddOne(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x.add_(1)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 3

    x = leaf(lib, X34)
    y = x * 2
    v0 = y._version
    r = AddOne.apply(y)
    info = (r is y, name(y.grad_fn), y._version - v0)
    (y * y).sum().backward()
    return info, y, x.grad


@case(CASES)
def _mark_dirty_view(lib):
    class AddOne(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x.add_(1)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 3

    x = leaf(lib, X34)
    base = x * 2
    view = base[1:]
    r = AddOne.apply(view)
    info = (r is view, name(base.grad_fn))
    (base * base).sum().backward()
    return info, base, x.grad


@case(CASES)
def _mark_dirty_leaf(lib):
    class AddOne(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x.add_(1)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g

    AddOne.apply(leaf(lib, X34))


@case(CASES)
def _mark_dirty_not_returned(lib):
    class AddOne(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x.add_(1)
            ctx.mark_dirty(x)
            return x * 1

        @staticmethod
        def backward(ctx, g):
            return g

    AddOne.apply(leaf(lib, X34) * 1)


@case(CASES)
def _input_returned_as_is(lib):
    class Ident(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 10

    x = leaf(lib, X34)
    r = Ident.apply(x)
    info = (r is x, r._is_view(), r._base is x, r.is_leaf, name(r.grad_fn))
    r.sum().backward()
    with lib.no_grad():
        r2 = Ident.apply(x)
    r3 = Ident.apply(x.detach())
    return info, x.grad, (r2 is x, r2.requires_grad), (r3.requires_grad, r3._is_view())


@case(CASES)
def _saved_output_version_check(lib):
    class Exp(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, g):
            (y,) = ctx.saved_tensors
            return g * y

    x = leaf(lib, X34)
    y = Exp.apply(x)
    with lib.no_grad():
        y.mul_(2)
    y.sum().backward()


@case(CASES)
def _saved_input_version_check(lib):
    class Sq(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * x * g

    x = leaf(lib, X34)
    h = x * 1
    y = Sq.apply(h)
    h.add_(1)
    y.sum().backward()


@case(CASES)
def _saved_tensors_identity(lib):
    class Exp(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(x, y, None)
            return y

        @staticmethod
        def backward(ctx, g):
            x, y, none = ctx.saved_tensors
            Exp.seen = (x is Exp.x, y is Exp.out, name(y.grad_fn) == "ExpBackward", none)
            return g * y

    x = leaf(lib, X34)
    Exp.x = x
    Exp.out = y = Exp.apply(x)
    y.sum().backward()
    return Exp.seen


@case(CASES)
def _saved_freed_after_backward(lib):
    class Sq(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * x * g

    x = leaf(lib, X34)
    y = Sq.apply(x)
    y.sum().backward()
    _ = y.grad_fn.saved_tensors


@case(CASES)
def _backward_twice(lib):
    class Sq(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * x * g

    x = leaf(lib, X34)
    y = Sq.apply(x).sum()
    y.backward(retain_graph=True)
    y.backward()
    first = x.grad.clone()
    y.backward()
    return first


@case(CASES)
def _nothing_saved(lib):
    class Double(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            Double.seen = ctx.saved_tensors
            return g * 2

    x = leaf(lib, X34)
    Double.apply(x).sum().backward()
    return Double.seen, x.grad


def _once_cls(lib):
    class Cube(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x**3

        @staticmethod
        @once_differentiable(lib)
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            Cube.grad_mode = lib.is_grad_enabled()
            return 3 * x**2 * g

    return Cube


@case(CASES)
def _once_differentiable_first_order(lib):
    Cube = _once_cls(lib)
    x = leaf(lib, X34)
    (g,) = lib.autograd.grad(Cube.apply(x).sum(), x, create_graph=True)
    return g, g.requires_grad, Cube.grad_mode


@case(CASES)
def _once_differentiable_twice(lib):
    Cube = _once_cls(lib)
    x = leaf(lib, X34)
    v = lib.ones(3, 4, dtype=lib.float64, requires_grad=True)
    (g,) = lib.autograd.grad(Cube.apply(x), x, v, create_graph=True)
    assert g.requires_grad and name(g.grad_fn) == "Error"
    g.sum().backward()


@case(CASES)
def _hooks_on_function_node(lib):
    Cube = _once_cls(lib)
    x = leaf(lib, X34[0])
    y = Cube.apply(x)
    seen = []
    y.grad_fn.register_prehook(lambda go: seen.append(("pre", go[0].sum().item())))
    y.grad_fn.register_hook(lambda gi, go: seen.append(("post", gi[0].sum().item())))
    y.register_hook(lambda g: g * 2)
    y.sum().backward()
    return seen, x.grad


@case(CASES)
def _int_tensor_input(lib):
    class Gather(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, idx):
            ctx.save_for_backward(idx)
            ctx.n = x.shape[0]
            return x[idx]

        @staticmethod
        def backward(ctx, g):
            (idx,) = ctx.saved_tensors
            out = lib.zeros(ctx.n, 4, dtype=g.dtype)
            out[idx] = g
            return out, None

    x = leaf(lib, X34)
    idx = lib.tensor([2, 0])
    r = Gather.apply(x, idx)
    r.sum().backward()
    edges = [name(n) for n, _ in r.grad_fn.next_functions]
    return r, x.grad, edges, r.grad_fn.needs_input_grad


@case(CASES)
def _int_output_gets_zero_grad(lib):
    class Split(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return (x > 0).long(), x * 2

        @staticmethod
        def backward(ctx, g_int, g):
            Split.seen = (str(g_int.dtype), bool((g_int == 0).all()))
            return g * 2

    x = leaf(lib, X34)
    a, b = Split.apply(x)
    b.sum().backward()
    return a.requires_grad, a.grad_fn is None, Split.seen, x.grad


@case(CASES)
def _called_with_undefined_grads(lib):
    # torch runs a custom backward even when no gradient reached it (zeros, or None)
    def make(materialize):
        class Inner(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.set_materialize_grads(materialize)
                return x * 2

            @staticmethod
            def backward(ctx, g):
                Inner.seen.append(None if g is None else g.sum().item())
                return g if g is not None else lib.ones(3, 4, dtype=lib.float64)

        Inner.seen = []
        return Inner

    class Outer(lib.autograd.Function):
        @staticmethod
        def forward(ctx, y):
            return y * 3

        @staticmethod
        def backward(ctx, g):
            return None

    results = []
    for materialize in (True, False):
        Inner = make(materialize)
        x = leaf(lib, X34)
        Outer.apply(Inner.apply(x)).sum().backward()
        results.append((Inner.seen, x.grad))
    return results


def _sinh_tutorial(lib, return_intermediates):
    """The double-backward tutorial's Sinh: intermediate results saved for backward must be
    returned as outputs for double backward to see through them."""

    class Sinh(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            expx = lib.exp(x)
            expnegx = lib.exp(-x)
            ctx.save_for_backward(expx, expnegx)
            return (expx - expnegx) / 2, expx, expnegx

        @staticmethod
        def backward(ctx, grad_out, _grad_out_exp, _grad_out_negexp):
            expx, expnegx = ctx.saved_tensors
            grad_input = grad_out * (expx + expnegx) / 2
            if return_intermediates:
                grad_input += _grad_out_exp * expx
                grad_input -= _grad_out_negexp * expnegx
            return grad_input

    def sinh(x):
        return Sinh.apply(x)[0]

    x = leaf(lib, X34[:2, :2])
    first = lib.autograd.gradcheck(sinh, x)
    try:
        second = lib.autograd.gradgradcheck(sinh, x)
    except RuntimeError as e:  # GradcheckError
        second = str(e).split(",")[0]
    return first, second


@case(CASES)
def _double_backward_tutorial_sinh(lib):
    return _sinh_tutorial(lib, True)


@case(CASES)
def _double_backward_tutorial_sinh_broken(lib):
    return _sinh_tutorial(lib, False)


@case(CASES)
def _ctx_attributes_and_counts(lib):
    class Scale(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, factor, label):
            ctx.factor = factor
            ctx.label = label
            return x * factor

        @staticmethod
        def backward(ctx, g):
            Scale.seen = (ctx.factor, ctx.label)
            return g * ctx.factor, None, None

    x = leaf(lib, X34)
    Scale.apply(x, 0.5, "half").sum().backward()
    return Scale.seen, x.grad


@case(CASES)
def _function_inside_graph(lib):
    Linear = linear_cls(lib)
    x, w = leaf(lib, X34), leaf(lib, W24)
    h = (x * 2).tanh()
    y = Linear.apply(h, w).relu()
    z = Linear.apply(y, w.t()[:2, :2].contiguous())
    z.pow(2).sum().backward()
    return z, x.grad, w.grad


@case(CASES)
def _function_repr_and_classes(lib):
    Linear = linear_cls(lib)
    y = Linear.apply(leaf(lib, X34), leaf(lib, W24))
    return (
        repr(y).splitlines()[-1].split("grad_fn=")[1],
        type(y.grad_fn).__name__,
        isinstance(y.grad_fn, lib.autograd.graph.Node),
        Linear._backward_cls.__name__,
        isinstance(y.grad_fn, lib.autograd.function.BackwardCFunction),
    )


@case(CASES)
def _function_under_no_grad_saves_nothing(lib):
    Linear = linear_cls(lib)
    with lib.no_grad():
        y = Linear.apply(leaf(lib, X34), leaf(lib, W24))
    return y.requires_grad, y.grad_fn is None


@pytest.mark.parametrize("fn", CASES, ids=lambda f: f.__name__.strip("_"))
def test_custom_function(fn):
    same(fn)


def test_ctx_hasattr_of_a_missing_attribute():
    # hasattr on a custom Function's ctx is False for an unset name (it recursed before)
    seen = []
    for lib in (torch, ember):

        class Double(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                seen.append((hasattr(ctx, "foo"), hasattr(ctx, "_saved_self")))
                ctx.foo = 1
                seen.append(hasattr(ctx, "foo"))
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return g * 2

        Double.apply(lib.ones(2, requires_grad=True)).sum().backward()
    assert seen[:2] == seen[2:]

"""Oracle tests: autograd behaviour compared with torch.

Each case is a function of ``lib`` (``torch`` or ``ember``) run through both libraries by
``same``: results are compared value by value (tensors by value, dtype and shape), and when torch
raises, ember must raise the same exception class with the same message.
"""

import threading

import numpy as np
import pytest

import ember
from tests.oracle.helper import assert_same, torch

# ------------------------------------------------------------------------------ the comparator


def _call(fn, lib):
    try:
        return fn(lib), None
    except Exception as exc:  # noqa: BLE001 - the exception is the result under test
        return None, exc


def _compare(e, t, what="result"):
    if isinstance(t, torch.Tensor):
        assert_same(e, t, what=what, strides=False)
        assert e.requires_grad == t.requires_grad, f"{what}: requires_grad"
    elif isinstance(t, (list, tuple)):
        assert isinstance(e, (list, tuple)) and len(e) == len(t), f"{what}: {e!r} vs {t!r}"
        assert type(e) is type(t), f"{what}: {type(e).__name__} vs {type(t).__name__}"
        for i, (a, b) in enumerate(zip(e, t)):
            _compare(a, b, f"{what}[{i}]")
    elif isinstance(t, dict):
        assert isinstance(e, dict) and list(e) == list(t), f"{what}: keys {list(e)} vs {list(t)}"
        for k in t:
            _compare(e[k], t[k], f"{what}[{k!r}]")
    else:
        assert e == t, f"{what}: {e!r} != {t!r}"


def same(fn, *, message=True):
    """Run ``fn(lib)`` with torch and ember; compare results, or exception class and message."""
    t_res, t_exc = _call(fn, torch)
    e_res, e_exc = _call(fn, ember)
    if t_exc is not None:
        assert e_exc is not None, f"torch raised {type(t_exc).__name__}({t_exc}); ember did not"
        assert isinstance(e_exc, type(t_exc)), (
            f"ember raised {type(e_exc).__name__}({e_exc}), torch {type(t_exc).__name__}({t_exc})"
        )
        if message:
            assert str(e_exc) == str(t_exc)
        return
    if e_exc is not None:
        raise AssertionError(f"ember raised {type(e_exc).__name__}: {e_exc}") from e_exc
    _compare(e_res, t_res)


def name(node):
    return None if node is None else type(node).__name__


def case(group: list):
    """Add the decorated case to ``group`` (a list run by one parametrized test)."""

    def deco(fn):
        group.append(fn)
        return fn

    return deco


BACKWARD: list = []
GRAD: list = []
MODES: list = []
VERSIONS: list = []
HOOKS: list = []


def leaf(lib, a, requires_grad=True):
    t = lib.tensor(np.asarray(a, dtype=np.float64), dtype=lib.float64)
    return t.requires_grad_(requires_grad)


# torch (and ember) warn once a process about backward(create_graph=True)
pytestmark = pytest.mark.filterwarnings("ignore:Using backward.. with create_graph=True")

_rng = np.random.default_rng(7)
X34 = _rng.uniform(-2, 2, (3, 4))
W34 = _rng.uniform(-2, 2, (3, 4))
W42 = _rng.uniform(-2, 2, (4, 2))
U34 = _rng.standard_normal((3, 4))
V34 = _rng.standard_normal((3, 4))
V42 = _rng.standard_normal((4, 2))


# ------------------------------------------------------------------------------ leaves and grad


def _nonleaf_requires_grad_false(lib):
    (leaf(lib, [1.0]) * 2).requires_grad = False


def _int_requires_grad_(lib):
    lib.ones(3, dtype=lib.int64).requires_grad_()


def _grad_wrong_size(lib):
    lib.ones(3).grad = lib.ones(2)


def _grad_wrong_dtype(lib):
    lib.ones(3).grad = lib.ones(3, dtype=lib.float64)


def _grad_not_tensor(lib):
    lib.ones(3).grad = 3


def _leafness(lib):
    x = leaf(lib, [1.0, 2.0])
    y = x * 2
    z = lib.ones(2)
    y.requires_grad_(True)  # allowed on a non-leaf that requires grad
    d = y.detach()
    return [t.is_leaf for t in (x, y, z, d)] + [t.requires_grad for t in (x, y, z, d)]


def _grad_set_and_delete(lib):
    x = leaf(lib, [1.0, 2.0])
    x.grad = lib.tensor([3.0, 4.0], dtype=lib.float64)
    (x * x).sum().backward()
    before = x.grad.clone()
    del x.grad
    return before, x.grad


@pytest.mark.parametrize(
    "fn",
    [
        _nonleaf_requires_grad_false,
        _grad_wrong_size,
        _grad_not_tensor,
        _leafness,
        _grad_set_and_delete,
    ],
)
def test_leaf_state(fn):
    same(fn)


def test_int_requires_grad_message():
    same(_int_requires_grad_)


def test_int_requires_grad_class():
    same(_int_requires_grad_, message=False)


def test_grad_wrong_dtype_message():
    same(_grad_wrong_dtype)


def test_grad_wrong_dtype_class():
    same(_grad_wrong_dtype, message=False)


def test_factory_int_requires_grad_message():
    same(lambda lib: lib.ones(3, dtype=lib.int64, requires_grad=True))


# ------------------------------------------------------------------------------ grad_fn graph


def _graph_names(lib):
    x = leaf(lib, X34)
    w = leaf(lib, W42)
    outs = [
        x + 1,
        1 + x,
        x - 1,
        1 - x,
        x * x,
        x / 2,
        2 / x,
        x**2,
        x.abs() ** leaf(lib, X34),
        2**x,
        x.exp(),
        x.abs().log(),
        x.abs().sqrt(),
        x.tanh(),
        x.sigmoid(),
        x.relu(),
        x.abs(),
        -x,
        x.sum(),
        x.sum(0),
        x.mean(),
        x.mean(1),
        x @ w,
        x.t(),
        x.view(12),
        x.reshape(4, 3),
        x[0],
        x[:, 1:],
        x[None],
        x[[0, 2]],
        x.unsqueeze(0),
        x.transpose(0, 1),
        x.permute(1, 0),
        x.expand(2, 3, 4),
        lib.where(x > 0, x, 0.0),
        x.clone(),
        x.float(),
    ]
    return [name(o.grad_fn) for o in outs]


def _next_functions(lib):
    x = leaf(lib, X34)
    c = leaf(lib, X34, requires_grad=False)
    a = x * 2
    b = x.exp()
    y = a + b * c
    acc = a.grad_fn.next_functions[0][0]
    return (
        [(name(n), nr) for n, nr in y.grad_fn.next_functions],
        [(name(n), nr) for n, nr in a.grad_fn.next_functions],
        [(name(n), nr) for n, nr in (b * c).grad_fn.next_functions],
        acc is b.grad_fn.next_functions[0][0],
        acc.variable is x,
        acc.next_functions,
        name(x.grad_fn),
        y.grad_fn.name(),
    )


def _split_output_nr(lib):
    x = leaf(lib, X34)
    parts = (x * 1).split([1, 2])
    return [(p.output_nr, name(p.grad_fn)) for p in parts] + [
        [(name(n), nr) for n, nr in (parts[0] + parts[1][:1]).grad_fn.next_functions]
    ]


@pytest.mark.parametrize("fn", [_graph_names, _next_functions, _split_output_nr])
def test_graph_structure(fn):
    same(fn)


# ------------------------------------------------------------------------------ backward


@case(BACKWARD)
def _nonscalar_backward(lib):
    (leaf(lib, X34) * 2).backward()


@case(BACKWARD)
def _int_scalar_backward(lib):
    leaf(lib, X34).sum().backward(lib.ones((), dtype=lib.float64))
    return True


@case(BACKWARD)
def _accumulates(lib):
    x = leaf(lib, X34)
    (x * x).sum().backward()
    first = x.grad.clone()
    (x * 3).sum().backward()
    return first, x.grad


@case(BACKWARD)
def _freed_graph(lib):
    x = leaf(lib, X34)
    y = x.exp().sum()
    y.backward()
    y.backward()


@case(BACKWARD)
def _freed_graph_mul(lib):
    x = leaf(lib, X34)
    y = (x * x).sum()
    y.backward()
    y.backward()


@case(BACKWARD)
def _no_saved_twice(lib):
    x = leaf(lib, X34)
    y = (x + 1).sum()
    y.backward()
    y.backward()
    return x.grad


@case(BACKWARD)
def _retain_graph(lib):
    x = leaf(lib, X34)
    y = (x.exp() * x).sum()
    y.backward(retain_graph=True)
    y.backward()
    return x.grad


@case(BACKWARD)
def _backward_gradient(lib):
    x = leaf(lib, X34)
    g = lib.tensor(U34, dtype=lib.float64)
    (x * x).backward(g)
    return x.grad, g


@case(BACKWARD)
def _backward_gradient_shape(lib):
    (leaf(lib, X34) * 2).backward(lib.ones(4, dtype=lib.float64))


@case(BACKWARD)
def _backward_not_requiring(lib):
    lib.ones(3).sum().backward()


@case(BACKWARD)
def _inputs_leaf(lib):
    x = leaf(lib, X34)
    w = leaf(lib, W34)
    (x * w).sum().backward(inputs=[x])
    return x.grad, w.grad


@case(BACKWARD)
def _inputs_nonleaf(lib):
    x = leaf(lib, X34)
    h = x * 3
    (h * h).sum().backward(inputs=[h])
    return x.grad, h.grad, h.retains_grad


@case(BACKWARD)
def _inputs_single_tensor(lib):
    x = leaf(lib, X34)
    w = leaf(lib, W34)
    (x * w).sum().backward(inputs=w)
    return x.grad, w.grad


@case(BACKWARD)
def _inputs_unreached(lib):
    x = leaf(lib, X34)
    w = leaf(lib, W34)
    (x * x).sum().backward(inputs=[w])
    return x.grad, w.grad


@case(BACKWARD)
def _inputs_empty(lib):
    (leaf(lib, X34) * 2).sum().backward(inputs=[])


@case(BACKWARD)
def _inputs_not_requiring(lib):
    (leaf(lib, X34) * 2).sum().backward(inputs=[lib.ones(3)])


@case(BACKWARD)
def _inputs_nonleaf_frees(lib):
    x = leaf(lib, X34)
    h = x.exp()
    h.sum().backward(inputs=[h])
    h.sum().backward()


@case(BACKWARD)
def _retain_grad(lib):
    x = leaf(lib, X34)
    h = x * 3
    h.retain_grad()
    h.retain_grad()
    y = (h * h).sum()
    y.backward(retain_graph=True)
    y.backward()
    return x.grad, h.grad, h.retains_grad, x.retains_grad


def _nonleaf_grad_none(lib):
    x = leaf(lib, X34)
    h = x * 3
    (h * h).sum().backward()
    with pytest.warns(UserWarning) if lib is torch else _nothing():
        return h.grad


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


@case(BACKWARD)
def _functional_backward(lib):
    x = leaf(lib, X34)
    w = leaf(lib, W34)
    a, b = x * w, (x - w).exp()
    lib.autograd.backward([a, b], [lib.tensor(U34), lib.tensor(V34)])
    return x.grad, w.grad


@case(BACKWARD)
def _functional_backward_missing_grad(lib):
    x = leaf(lib, X34)
    lib.autograd.backward([x * 2, x * 3], [lib.tensor(U34)])


@case(BACKWARD)
def _backward_leaf_itself(lib):
    x = leaf(lib, X34)
    g = lib.tensor(U34)
    x.backward(g)
    return x.grad


@case(BACKWARD)
def _diamond(lib):
    x = leaf(lib, X34)
    a = x * 2
    b = a.exp()
    c = a.tanh()
    d = b * c + a
    d.backward(lib.tensor(U34))
    return x.grad


@case(BACKWARD)
def _shared_passthrough(lib):
    # x + w sends the same gradient to both leaves: accumulating twice must not alias them
    x = leaf(lib, X34)
    w = leaf(lib, W34)
    (x + w).backward(lib.ones(3, 4, dtype=lib.float64))
    (x + w).backward(lib.ones(3, 4, dtype=lib.float64))
    return x.grad, w.grad


@case(BACKWARD)
def _user_gradient_untouched(lib):
    x = leaf(lib, X34)
    g = lib.tensor(U34)
    (x + 1).backward(g)
    (x + 1).backward(g)
    return x.grad, g


@case(BACKWARD)
def _split_partial(lib):
    x = leaf(lib, np.arange(12.0))
    a, b, c = (x * 1).split(4)
    (b * lib.tensor(U34[0])).sum().backward()
    return x.grad


@case(BACKWARD)
def _unbind_partial(lib):
    x = leaf(lib, X34)
    rows = (x * 2).unbind()
    (rows[2] * rows[0]).sum().backward()
    return x.grad


@case(BACKWARD)
def _broadcast_grads(lib):
    x = leaf(lib, X34[:, :1])
    w = leaf(lib, W34[0])
    s = leaf(lib, 1.5)
    (x * w / s).backward(lib.tensor(U34))
    return x.grad, w.grad, s.grad


@case(BACKWARD)
def _dtype_grads(lib):
    x = lib.tensor(X34, dtype=lib.float32, requires_grad=True)
    w = leaf(lib, W34)
    (x * w).backward(lib.tensor(U34))
    return x.grad, w.grad


@case(BACKWARD)
def _shared_subgraph_freed(lib):
    x = leaf(lib, X34)
    y1 = x.exp()
    z = (y1 * 2).sum()
    w = (y1 * 3).sum()
    z.backward()
    w.backward()


@case(BACKWARD)
def _root_twice(lib):
    x = leaf(lib, X34)
    y = x * x
    lib.autograd.backward([y, y], [lib.tensor(U34), lib.tensor(V34)])
    return x.grad


@case(BACKWARD)
def _backward_inputs_root(lib):
    x = leaf(lib, X34)
    y = (x * x).sum()
    y.backward(inputs=[y])
    return y.grad, x.grad, y.retains_grad


@case(BACKWARD)
def _backward_inputs_dict(lib):
    x = leaf(lib, X34)
    (x * 2).sum().backward(inputs={"x": x})
    return x.grad


@case(BACKWARD)
def _grad_variables(lib):
    x = leaf(lib, X34)
    with pytest.warns(FutureWarning):
        lib.autograd.backward([x * 2], grad_variables=[lib.tensor(U34)])
    return x.grad


@case(BACKWARD)
def _reentrant_backward(lib):
    x = leaf(lib, X34)
    w = leaf(lib, W34)
    h = x * 2

    def hook(g):
        (w * w).sum().backward()
        return g

    h.register_hook(hook)
    (h * h).sum().backward()
    return x.grad, w.grad


@case(BACKWARD)
def _zero_size(lib):
    x = lib.ones(0, 3, dtype=lib.float64, requires_grad=True)
    (x * 2).sum().backward()
    return x.grad


@case(BACKWARD)
def _scalar_leaf(lib):
    x = leaf(lib, 2.0)
    (x * x).backward()
    x.backward()
    return x.grad


@case(BACKWARD)
def _retain_grad_on_leaf(lib):
    x = leaf(lib, X34)
    x.retain_grad()
    (x * 2).sum().backward()
    return x.retains_grad, x.grad


@case(BACKWARD)
def _inplace_views_double_backward(lib):
    x = leaf(lib, X34)
    w = leaf(lib, W34)
    h = x.clone()
    h[0].mul_(w[0])
    h.t()[1].add_(x[:, 0].exp())
    h[2] = w[1] * w[2]
    y = (h * h).sum()
    gx, gw = lib.autograd.grad(y, (x, w), create_graph=True)
    s = (gx * gx).sum() + (gw * lib.tensor(U34)).sum()
    return gx, gw, lib.autograd.grad(s, (x, w))


@case(BACKWARD)
def _copyslices_base_layout(lib):
    # the in-place view is replayed on the gradient: it must have the base's (F-order) strides
    d = leaf(lib, X34).detach().t().contiguous().t().requires_grad_()
    h = d * 1
    h.as_strided((2, 2), (1, 3), 1).mul_(lib.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=lib.float64))
    h[1:, ::2].mul_(lib.tensor([[5.0, 6.0], [7.0, 8.0]], dtype=lib.float64))
    (h * lib.tensor(U34)).sum().backward()
    return h.stride(), d.grad


@case(BACKWARD)
def _copyslices_graph(lib):
    x = leaf(lib, X34)
    w = leaf(lib, W34[0])
    h = x * 1
    h[0] = w * 2
    log = []
    h.grad_fn.register_prehook(lambda g: log.append("pre"))
    h.grad_fn.register_hook(lambda gi, go: log.append(("post", gi)))
    h.register_hook(lambda g: log.append("tensor hook"))
    (h * lib.tensor(U34)).sum().backward()
    return name(h.grad_fn), [name(n) for n, _ in h.grad_fn.next_functions], log, x.grad, w.grad


@pytest.mark.parametrize("fn", BACKWARD, ids=[f.__name__ for f in BACKWARD])
def test_backward(fn):
    same(fn)


def test_nonleaf_grad_warns():
    x = ember.ones(3, requires_grad=True) * 2
    with pytest.warns(UserWarning, match="is not a leaf Tensor is being accessed"):
        assert x.grad is None


def test_nonleaf_grad_none():
    same(_nonleaf_grad_none)


# ------------------------------------------------------------------------------ autograd.grad


@case(GRAD)
def _grad_basic(lib):
    x = leaf(lib, X34)
    w = leaf(lib, W34)
    y = (x * w).exp().sum()
    gx, gw = lib.autograd.grad(y, (x, w))
    return gx, gw, x.grad, w.grad


@case(GRAD)
def _grad_single_input(lib):
    x = leaf(lib, X34)
    return lib.autograd.grad((x * x).sum(), x)


@case(GRAD)
def _grad_unused(lib):
    x = leaf(lib, X34)
    w = leaf(lib, W34)
    lib.autograd.grad((x * 2).sum(), [x, w])


@case(GRAD)
def _grad_allow_unused(lib):
    x = leaf(lib, X34)
    w = leaf(lib, W34)
    return lib.autograd.grad((x * 2).sum(), [x, w], allow_unused=True)


@case(GRAD)
def _grad_materialize(lib):
    x = leaf(lib, X34)
    w = leaf(lib, W34)
    return lib.autograd.grad((x * 2).sum(), [x, w], materialize_grads=True)


@case(GRAD)
def _grad_materialize_conflict(lib):
    x = leaf(lib, X34)
    lib.autograd.grad((x * 2).sum(), [x], materialize_grads=True, allow_unused=False)


@case(GRAD)
def _grad_not_requiring(lib):
    x = leaf(lib, X34)
    lib.autograd.grad((x * 2).sum(), [x, lib.ones(3)])


@case(GRAD)
def _grad_output_not_requiring(lib):
    x = leaf(lib, X34)
    lib.autograd.grad(lib.ones(()), [x])


@case(GRAD)
def _grad_empty_inputs(lib):
    lib.autograd.grad((leaf(lib, X34) * 2).sum(), [])


@case(GRAD)
def _grad_nonleaf_input(lib):
    x = leaf(lib, X34)
    h = x.tanh()
    return lib.autograd.grad((h * h).sum(), [h, x])


@case(GRAD)
def _grad_dict_inputs(lib):
    x = leaf(lib, X34)
    w = leaf(lib, W34)
    return lib.autograd.grad((x * w).sum(), {"w": w, "x": x})


@case(GRAD)
def _grad_outputs(lib):
    x = leaf(lib, X34)
    return lib.autograd.grad([x * 2, x.exp()], x, [lib.tensor(U34), lib.tensor(V34)])


@case(GRAD)
def _grad_outputs_count(lib):
    x = leaf(lib, X34)
    lib.autograd.grad([x * 2, x * 3], x, [lib.tensor(U34)])


@case(GRAD)
def _grad_outputs_shape(lib):
    x = leaf(lib, X34)
    lib.autograd.grad(x * 2, x, lib.ones(4, dtype=lib.float64))


@case(GRAD)
def _grad_frees_graph(lib):
    x = leaf(lib, X34)
    y = x.exp().sum()
    lib.autograd.grad(y, x)
    lib.autograd.grad(y, x)


@case(GRAD)
def _grad_retain(lib):
    x = leaf(lib, X34)
    y = x.exp().sum()
    a = lib.autograd.grad(y, x, retain_graph=True)
    return a, lib.autograd.grad(y, x)


@case(GRAD)
def _grad_of_itself(lib):
    x = leaf(lib, X34)
    h = x.exp()
    r = lib.autograd.grad(h, h, lib.tensor(U34))
    h.sum().backward()  # grad(h, h) ran nothing: the graph is intact
    return r, x.grad


@case(GRAD)
def _grad_hooks_capture(lib):
    # a captured node that must also run: the capture is taken before the tensor hooks
    x = leaf(lib, X34)
    h = x * 2
    h.register_hook(lambda g: g * 10)
    return lib.autograd.grad((h * h).sum(), [h, x]), lib.autograd.grad((h * h).sum(), [h])


@case(GRAD)
def _grad_fills_retained(lib):
    x = leaf(lib, X34)
    h = x * 2
    h.retain_grad()
    lib.autograd.grad((h * h).sum(), [x])
    return h.grad, x.grad


@case(GRAD)
def _grad_input_is_output(lib):
    x = leaf(lib, X34)
    y = x * x
    return lib.autograd.grad([y], [y, x], [lib.tensor(U34)])


@case(GRAD)
def _grad_outputs_none(lib):
    x = leaf(lib, X34)
    return lib.autograd.grad([x * 2, (x * 3).sum()], x, [lib.tensor(U34), None])


@case(GRAD)
def _grad_outputs_none_nonscalar(lib):
    x = leaf(lib, X34)
    return lib.autograd.grad([x * 2], x, [None])


@case(GRAD)
def _grad_integer_output(lib):
    x = leaf(lib, X34)
    return lib.autograd.grad([(x * 2).sum().long()], x)


@case(GRAD)
def _grad_same_input_twice(lib):
    x = leaf(lib, X34)
    return lib.autograd.grad((x * x).sum(), [x, x])


@case(GRAD)
def _grad_hook_replaces_none(lib):
    x = leaf(lib, X34)
    a, b, c = (x * 1).unbind()
    b.register_hook(lambda g: lib.ones(4, dtype=lib.float64))
    a.sum().backward()


@pytest.mark.parametrize("fn", GRAD, ids=[f.__name__ for f in GRAD])
def test_autograd_grad(fn):
    same(fn)


# ------------------------------------------------------------------------------ higher order

CHAINS = {
    "add_sub": lambda lib, x, w: ((x + w) * (x - 2 * w) - (1 - x) * x).sum(),
    "mul_div": lambda lib, x, w: (x * w / (w * w + 1) + 2 / (x * x + 1)).sum(),
    "pow_scalar": lambda lib, x, w: (x**3 + w**2 * x + x**-2).sum(),
    "pow_tensor": lambda lib, x, w: ((x.abs() + 0.5) ** w).sum(),
    "pow_rscalar": lambda lib, x, w: (2**x * w).sum(),
    "exp_log": lambda lib, x, w: (x.exp() * (w.abs() + 1).log()).sum(),
    "sqrt": lambda lib, x, w: ((x * x + 1).sqrt() * w).sum(),
    "tanh_sigmoid": lambda lib, x, w: (x.tanh() * w.sigmoid() + (x * w).sigmoid()).sum(),
    "relu_abs": lambda lib, x, w: (x.relu() * w.abs() * x + (x - w).abs() ** 3).sum(),
    "mean": lambda lib, x, w: (x * w).mean() ** 2 + (x.mean(0) * w.mean(0)).sum(),
    "matmul": lambda lib, x, w: ((x @ w).tanh() ** 2).sum(),
    "views": lambda lib, x, w: (
        (x.t().reshape(2, 6) ** 2).sum(0) * w.view(12)[::2]
        + x[1:, None, ::2].expand(2, 3, 2)[0].flatten().exp()
    ).sum(),
    "where": lambda lib, x, w: lib.where(x > 0, x * x * w, w.exp() * x).sum(),
    "indexing": lambda lib, x, w: (x[[0, 2, 0]] ** 2 * w[1] + x[1, 2] * w[:, 1:].sum()).sum(),
    "sum_dims": lambda lib, x, w: ((x * w).sum(1) ** 2).sum() + (x.sum(0, keepdim=True) ** 3).sum(),
}


def _second_order(lib, chain):
    x = leaf(lib, X34)
    w = leaf(lib, W42 if chain == "matmul" else W34)
    y = CHAINS[chain](lib, x, w)
    gx, gw = lib.autograd.grad(y, (x, w), create_graph=True)
    u, v = lib.tensor(U34), lib.tensor(V42 if chain == "matmul" else V34)
    s = (gx * u).sum() + (gw * v).sum()
    hx, hw = lib.autograd.grad(s, (x, w), retain_graph=True, allow_unused=True)
    pen = (gx * gx).sum() + (gw * gw).sum()
    pen.backward()
    return gx, gw, hx, hw, x.grad, w.grad


@pytest.mark.parametrize("chain", list(CHAINS))
def test_double_backward(chain):
    e = _second_order(ember, chain)
    t = _second_order(torch, chain)
    for i, (a, b) in enumerate(zip(e, t)):
        what = ["grad x", "grad w", "hvp x", "hvp w", "penalty x", "penalty w"][i]
        if b is None or a is None:
            zero = lambda r: r is None or not np.any(r.detach().numpy())  # noqa: E731
            assert zero(a) and zero(b), f"{what}: {a} vs {b}"
            continue
        assert_same(a, b, what=what, strides=False)
    assert e[0].requires_grad and e[0].grad_fn is not None


def _third_order(lib):
    x = leaf(lib, X34[0])
    y = (x.tanh() * x.exp()).sum()
    (g,) = lib.autograd.grad(y, x, create_graph=True)
    (gg,) = lib.autograd.grad(g.sum(), x, create_graph=True)
    (ggg,) = lib.autograd.grad(gg.sum(), x)
    return g, gg, ggg


def _backward_create_graph(lib):
    x = leaf(lib, X34)
    (x**3).sum().backward(create_graph=True)
    g = x.grad
    first = (name(g.grad_fn), g.requires_grad)
    (x**3).sum().backward(create_graph=True)
    second = (name(x.grad.grad_fn), x.grad is g)
    x.grad.sum().backward(inputs=[x])  # differentiate the accumulated gradient
    return first, second, x.grad


def _create_graph_then_plain(lib):
    x = leaf(lib, X34)
    (x**2).sum().backward(create_graph=True)
    g = x.grad
    (x**2).sum().backward()
    return x.grad is g, x.grad, name(x.grad.grad_fn), x.grad._version


def _plain_then_create_graph(lib):
    x = leaf(lib, X34)
    (x**2).sum().backward()
    g = x.grad
    (x**2).sum().backward(create_graph=True)
    return x.grad is g, x.grad, name(x.grad.grad_fn), g


def _create_graph_constant_grad(lib):
    x = leaf(lib, X34)
    x.sum().backward(create_graph=True)
    return x.grad, name(x.grad.grad_fn)


@pytest.mark.parametrize(
    "fn",
    [
        _third_order,
        _backward_create_graph,
        _create_graph_then_plain,
        _plain_then_create_graph,
        _create_graph_constant_grad,
    ],
)
def test_higher_order(fn):
    same(fn)


# ------------------------------------------------------------------------------ grad modes


@case(MODES)
def _mode_states(lib):
    out = []
    x = leaf(lib, [1.0])
    with lib.no_grad():
        out.append(((x * 2).requires_grad, lib.is_grad_enabled()))
        with lib.enable_grad():
            out.append(((x * 2).requires_grad, lib.is_grad_enabled()))
            with lib.set_grad_enabled(False):
                out.append(lib.is_grad_enabled())
            out.append(lib.is_grad_enabled())
        out.append(lib.is_grad_enabled())
    out.append(lib.is_grad_enabled())
    lib.set_grad_enabled(False)
    out.append(((x * 2).requires_grad, lib.is_grad_enabled()))
    lib.set_grad_enabled(True)
    out.append(lib.is_grad_enabled())
    with lib.inference_mode():
        out.append((lib.is_grad_enabled(), lib.is_inference_mode_enabled(), (x * 2).requires_grad))
        with lib.inference_mode(False):
            out.append((lib.is_grad_enabled(), lib.is_inference_mode_enabled()))
        out.append((lib.is_grad_enabled(), lib.is_inference_mode_enabled()))
    out.append((lib.is_grad_enabled(), lib.is_inference_mode_enabled()))
    return out


@case(MODES)
def _mode_decorators(lib):
    x = leaf(lib, [1.0])

    def probe():
        return ((x * 2).requires_grad, lib.is_grad_enabled(), lib.is_inference_mode_enabled())

    out = [
        lib.no_grad()(probe)(),
        lib.no_grad(probe)(),
        lib.inference_mode()(probe)(),
        lib.inference_mode(probe)(),
        lib.inference_mode(False)(probe)(),
        lib.set_grad_enabled(False)(probe)(),
        lib.is_grad_enabled(),
    ]
    with lib.no_grad():
        out.append(lib.enable_grad()(probe)())
        out.append(lib.enable_grad(probe)())
        out.append(lib.set_grad_enabled(True)(probe)())
        out.append(lib.is_grad_enabled())
    return out, lib.no_grad(probe).__name__


@case(MODES)
def _mode_generator(lib):
    @lib.no_grad()
    def gen():
        yield lib.is_grad_enabled()
        yield lib.is_grad_enabled()

    it = gen()
    return next(it), lib.is_grad_enabled(), next(it), lib.is_grad_enabled()


@case(MODES)
def _mode_exception_restores(lib):
    try:
        with lib.no_grad():
            raise KeyError
    except KeyError:
        pass
    return lib.is_grad_enabled()


@case(MODES)
def _mode_threads(lib):
    seen = {}

    def run():
        seen["grad"] = lib.is_grad_enabled()
        seen["inference"] = lib.is_inference_mode_enabled()

    with lib.no_grad(), lib.inference_mode():
        th = threading.Thread(target=run)
        th.start()
        th.join()
        return seen, lib.is_grad_enabled()


def _mode_enter_returns(lib):
    return [type(c.__enter__()).__name__ for c in (lib.no_grad(), lib.enable_grad())] + [
        lib.is_grad_enabled()
    ]


@case(MODES)
def _set_grad_enabled_kw(lib):
    with lib.set_grad_enabled(mode=False):
        inside = lib.is_grad_enabled()
    return inside, lib.is_grad_enabled()


@case(MODES)
def _autograd_namespace(lib):
    a = lib.autograd
    return (
        a.no_grad is lib.no_grad,
        a.enable_grad is lib.enable_grad,
        a.set_grad_enabled is lib.set_grad_enabled,
        a.inference_mode is lib.inference_mode,
        a.grad_mode.no_grad is lib.no_grad,
    )


@pytest.mark.parametrize("fn", MODES, ids=[f.__name__ for f in MODES])
def test_grad_modes(fn):
    same(fn)
    assert ember.is_grad_enabled() and not ember.is_inference_mode_enabled()


# ------------------------------------------------------------------------------ detach, versions


@case(VERSIONS)
def _data_mutation_unseen(lib):
    x = leaf(lib, X34)
    y = (x * x).sum()
    x.data *= 100
    y.backward()
    return x.grad, x._version, x.data._version


@case(VERSIONS)
def _detach_shares_version(lib):
    x = leaf(lib, X34)
    y = x.exp()
    d = y.detach()
    d.add_(1)
    return y._version, d._version, d.requires_grad, d.is_leaf, d._is_view()


@case(VERSIONS)
def _detach_inplace_breaks_backward(lib):
    x = leaf(lib, X34)
    y = x.exp()
    y.detach().add_(1)
    y.sum().backward()


@case(VERSIONS)
def _data_inplace_not_caught(lib):
    x = leaf(lib, X34)
    y = x.exp()
    y.data.add_(1)
    y.sum().backward()
    return y._version, x.grad


@case(VERSIONS)
def _detach_in_place(lib):
    x = leaf(lib, X34)
    y = x * 1
    y.detach_()
    return y.requires_grad, y.is_leaf, name(y.grad_fn)


@case(VERSIONS)
def _detach_in_place_view(lib):
    x = leaf(lib, X34)
    (x * 1)[0].detach_()


@case(VERSIONS)
def _version_counts(lib):
    x = lib.zeros(3, 4)
    v = x[1]
    out = [x._version]
    x.add_(1)
    out.append((x._version, v._version))
    v.mul_(2)
    out.append((x._version, v._version))
    x[0] = 3
    out.append((x._version, v._version))
    x.zero_()
    out.append(x._version)
    return out


@case(VERSIONS)
def _saved_modified_output(lib):
    x = leaf(lib, X34)
    y = x.exp()
    y.add_(1)
    y.sum().backward()


@case(VERSIONS)
def _saved_modified_input(lib):
    x = leaf(lib, X34)
    y = x * 2
    z = y * y
    y.mul_(2)
    z.sum().backward()


@case(VERSIONS)
def _saved_modified_leaf(lib):
    x = leaf(lib, X34)
    y = x * x
    with lib.no_grad():
        x.add_(1)
    y.sum().backward()


@case(VERSIONS)
def _saved_modified_constant(lib):
    x = leaf(lib, X34)
    w = lib.ones(3, 4, dtype=lib.float64)
    y = x * w
    w.add_(1)
    y.sum().backward()


@case(VERSIONS)
def _saved_modified_through_view(lib):
    x = leaf(lib, X34)
    z = (x * 2).sigmoid()
    z.t().mul_(2)
    z.sum().backward()


@case(VERSIONS)
def _saved_modified_copyslices(lib):
    x = leaf(lib, X34)
    h = x * 1
    y = h * h
    h[0].mul_(2)
    y.sum().backward()


@case(VERSIONS)
def _saved_modified_0d(lib):
    x = leaf(lib, 2.0)
    y = x.tanh()
    y.mul_(2)
    y.backward()


def _saved_view_base_modified(lib):
    x = leaf(lib, X34)
    w = leaf(lib, W34)
    h = x.clone()
    h[:, 1] = h[:, 2] * w[:, 0]
    lib.autograd.grad((h * h).sum(), (x, w))


def test_saved_view_base_modified_class():
    same(_saved_view_base_modified, message=False)


def test_saved_view_base_modified_message():
    same(_saved_view_base_modified)


@case(VERSIONS)
def _leaf_inplace(lib):
    leaf(lib, X34).add_(1)


@case(VERSIONS)
def _leaf_view_inplace(lib):
    leaf(lib, X34)[0].add_(1)


@case(VERSIONS)
def _leaf_inplace_no_grad(lib):
    x = leaf(lib, X34)
    with lib.no_grad():
        x.add_(1)
        x[0] = 5
        x.mul_(2)
    return x, x._version, x.is_leaf, name(x.grad_fn)


@case(VERSIONS)
def _inplace_nonleaf_ok(lib):
    x = leaf(lib, X34)
    h = x * 2
    h.mul_(3)
    h[1] = 0
    h.sum().backward()
    return x.grad, h._version, name(h.grad_fn)


@pytest.mark.parametrize("fn", VERSIONS, ids=[f.__name__ for f in VERSIONS])
def test_versions(fn):
    same(fn)


# ------------------------------------------------------------------------------ hooks


@case(HOOKS)
def _hook_replaces(lib):
    x = leaf(lib, X34)
    h = x * 2
    h.register_hook(lambda g: g * 10)
    x.register_hook(lambda g: g + 1)
    (h * h).sum().backward()
    return x.grad


@case(HOOKS)
def _hook_remove(lib):
    x = leaf(lib, X34)
    h = x * 2
    handle = h.register_hook(lambda g: g * 10)
    handle.remove()
    handle.remove()
    (h * h).sum().backward()
    return x.grad


@case(HOOKS)
def _hook_chain_order(lib):
    x = leaf(lib, X34)
    h = x * 2
    log = []
    h.register_hook(lambda g: log.append(1) or g * 2)
    h.register_hook(lambda g: log.append(2) or g + 1)
    x.register_hook(lambda g: log.append(3))
    (h * 3).sum().backward()
    return log, x.grad


@case(HOOKS)
def _hook_retain_order(lib):
    x = leaf(lib, X34)
    h = x * 2
    h.retain_grad()
    h.register_hook(lambda g: g * 2)  # registered after retain_grad, still seen by .grad
    (h * 3).sum().backward()
    return h.grad, x.grad


@case(HOOKS)
def _hook_leaf_grad(lib):
    x = leaf(lib, X34)
    seen = []
    x.register_hook(lambda g: seen.append(g.clone()))
    (x * 3).sum().backward()
    return seen, x.grad


@case(HOOKS)
def _hook_not_requiring(lib):
    lib.ones(3).register_hook(lambda g: g)


@case(HOOKS)
def _hook_bad_size(lib):
    x = leaf(lib, X34)
    h = x * 2
    h.register_hook(lambda g: g[:2])
    (h * h).sum().backward()


@case(HOOKS)
def _hook_bad_dtype(lib):
    x = leaf(lib, X34)
    h = x * 2
    h.register_hook(lambda g: g.float())
    (h * h).sum().backward()


@case(HOOKS)
def _hook_bad_type(lib):
    x = leaf(lib, X34)
    h = x * 2
    h.register_hook(lambda g: 3)
    (h * h).sum().backward()


@case(HOOKS)
def _hook_unused_output(lib):
    x = leaf(lib, X34)
    a, b, c = (x * 1).unbind()
    log = []
    b.register_hook(lambda g: log.append(("b", g)))
    a.register_hook(lambda g: log.append(("a", g)))
    (a * 2).sum().backward()
    return log


@case(HOOKS)
def _node_hooks(lib):
    x = leaf(lib, X34)
    h = x * 2
    log = []
    h.grad_fn.register_prehook(lambda go: log.append(("pre", go)) or (go[0] * 3,))

    def post(gi, go):
        log.append(("post", gi, go))
        return (gi[0] + 1, gi[1])

    handle = h.grad_fn.register_hook(post)
    (h * h).sum().backward(retain_graph=True)
    first = x.grad.clone()
    handle.remove()
    x.grad = None
    (h * h).sum().backward()
    return log, first, x.grad


@case(HOOKS)
def _node_prehook_count(lib):
    x = leaf(lib, X34)
    h = x * 2
    h.grad_fn.register_prehook(lambda go: (go[0], go[0]))
    (h * h).sum().backward()


@case(HOOKS)
def _node_posthook_count(lib):
    x = leaf(lib, X34)
    h = x * 2
    h.grad_fn.register_hook(lambda gi, go: (gi[0],))
    (h * h).sum().backward()


@case(HOOKS)
def _hook_on_accumulate_node(lib):
    x = leaf(lib, X34)
    y = x * 2
    acc = y.grad_fn.next_functions[0][0]
    log = []
    acc.register_prehook(lambda go: log.append(go))
    acc.register_hook(lambda gi, go: log.append((gi, go)))
    y.sum().backward()
    return log, x.grad


@case(HOOKS)
def _hook_inplace_rebase(lib):
    x = leaf(lib, X34)
    h = x * 2
    log = []
    h.register_hook(lambda g: log.append(("before", g)))
    h.mul_(3)
    h.register_hook(lambda g: log.append(("after", g)))
    (h * h).sum().backward()
    return log, x.grad


@pytest.mark.parametrize("fn", HOOKS, ids=[f.__name__ for f in HOOKS])
def test_hooks(fn):
    same(fn)


def _retain_grad_then_inplace(lib):
    x = leaf(lib, X34)
    h = x * 2
    h.retain_grad()
    h.mul_(3)
    (h * h).sum().backward()
    return h.grad, x.grad


def _retain_grad_then_inplace_view(lib):
    x = leaf(lib, X34)
    h = x * 2
    h.retain_grad()
    h[:2].mul_(3)
    (h * h).sum().backward()
    return h.grad, x.grad


@pytest.mark.parametrize("fn", [_retain_grad_then_inplace, _retain_grad_then_inplace_view])
def test_retain_grad_follows_inplace(fn):
    same(fn)


def _retain_grad_create_graph(lib):
    x = leaf(lib, X34)
    h = x * x
    h.retain_grad()
    (h * h).sum().backward(create_graph=True)
    return name(h.grad.grad_fn), h.grad.requires_grad


def test_retain_grad_create_graph_clones():
    same(_retain_grad_create_graph)


# ------------------------------------------------------------------------------ execution order


def _order_two_branches(lib):
    log = []
    x = leaf(lib, X34)
    w = leaf(lib, W34)
    a = x * w
    b = w.exp()
    c = (a + 1) * b
    d = a.tanh()
    e = c + d * 2
    for label, t in [("a", a), ("b", b), ("c", c), ("d", d), ("x", x), ("w", w)]:
        t.register_hook(lambda g, label=label: log.append(label))
    for label, t in [("a", a), ("b", b), ("c", c), ("d", d), ("e", e)]:
        t.grad_fn.register_prehook(lambda g, label=label: log.append("pre_" + label))
    e.sum().backward()
    return log


def _order_leaves_first(lib):
    # AccumulateGrad nodes run as soon as they are ready, before older interior nodes
    log = []
    x = leaf(lib, X34)
    w = leaf(lib, W34)
    a = x.exp()
    b = (a * w).sum() + (x * 2).sum()
    x.register_hook(lambda g: log.append("x"))
    w.register_hook(lambda g: log.append("w"))
    a.register_hook(lambda g: log.append("a"))
    b.backward()
    return log


def _order_multiple_roots(lib):
    log = []
    x = leaf(lib, X34)
    a = x * 2
    b = a.exp()
    c = a * 3
    for label, t in [("a", a), ("b", b), ("c", c)]:
        t.register_hook(lambda g, label=label: log.append(label))
    lib.autograd.backward([c.sum(), b.sum()])
    return log, x.grad


@pytest.mark.parametrize("fn", [_order_two_branches, _order_leaves_first, _order_multiple_roots])
def test_execution_order(fn):
    same(fn)


# ------------------------------------------------------------------------------ anomaly mode


def _anomaly_nan(lib):
    x = lib.tensor([0.0, 1.0], requires_grad=True)
    with lib.autograd.detect_anomaly():
        (x.sqrt() * 0).sum().backward()


def _anomaly_nan_unchecked(lib):
    x = lib.tensor([0.0, 1.0], requires_grad=True)
    with lib.autograd.detect_anomaly(check_nan=False):
        (x.sqrt() * 0).sum().backward()
    return x.grad


def _anomaly_version_hint(lib):
    with lib.autograd.set_detect_anomaly(True):
        x = lib.ones(3, requires_grad=True)
        y = x.exp()
        y.add_(1)
        y.sum().backward()


def _anomaly_restored(lib):
    with lib.autograd.set_detect_anomaly(True, check_nan=False):
        pass
    x = lib.ones(3, requires_grad=True)
    y = x.exp()
    y.add_(1)
    y.sum().backward()


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # 0/0 in SqrtBackward0, as torch
@pytest.mark.filterwarnings("ignore:Anomaly Detection has been enabled")
@pytest.mark.filterwarnings("ignore:Error detected in")
@pytest.mark.parametrize(
    "fn", [_anomaly_nan, _anomaly_nan_unchecked, _anomaly_version_hint, _anomaly_restored]
)
def test_anomaly_mode(fn):
    same(fn)

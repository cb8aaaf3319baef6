"""Oracle tests: in-place ops on views in a graph, saved-tensor and post-accumulate hooks,
anomaly mode's NaN checks and tracebacks, and what keeps a graph alive.

Cases run through torch and ember with ``same`` (values, exception class and message).
"""

import warnings

import numpy as np
import pytest

from tests.oracle.test_autograd_oracle import X34, case, leaf, name, same

pytestmark = [
    pytest.mark.filterwarnings("ignore:Anomaly Detection has been enabled"),
    pytest.mark.filterwarnings("ignore:Error detected in"),
    pytest.mark.filterwarnings("ignore::RuntimeWarning"),
]

X33 = np.random.default_rng(11).uniform(-2, 2, (3, 3))

# ------------------------------------------------------------------------------ in-place on views

VIEWS: list = []


@case(VIEWS)
def _issue_snippet(lib):
    x = leaf(lib, X33)
    y = x * 2
    y[0] += 1
    names = [name(y.grad_fn)]
    y[:, 1].mul_(3)
    names.append(name(y.grad_fn))
    y.relu_()
    names.append(name(y.grad_fn))
    (y * y).sum().backward()
    return names, y, x.grad


@case(VIEWS)
def _view_of_view_chain(lib):
    x = leaf(lib, X34)
    y = x.exp()
    y.t()[1:].mul_(2)
    y.view(-1)[::3].add_(1)
    y.unsqueeze(0)[0, 1].zero_()
    y[2, 1:3].div_(4)
    (y * lib.tensor(X34)).sum().backward()
    return y, x.grad, name(y.grad_fn)


@case(VIEWS)
def _modified_view_used_after(lib):
    x = leaf(lib, X34)
    y = x * 1.5
    v = y[:, :2]
    v.exp_()
    (v.sum() * 2 + (y * y).sum()).backward()
    return y, v, x.grad


@case(VIEWS)
def _inplace_with_other_tensor(lib):
    x, w = leaf(lib, X34), leaf(lib, X34[:, :2] * 0.5)
    y = x * 1
    y[:, 1:3].mul_(w)
    y[0].add_(w[:, 0].sum())
    y.sum().backward()
    return y, x.grad, w.grad


@case(VIEWS)
def _setitem_from_graph(lib):
    x, w = leaf(lib, X34), leaf(lib, X34[0])
    y = x.tanh()
    y[1] = w * 3
    y[:, 0] = 0.0
    (y * y).sum().backward()
    return y, x.grad, w.grad, name(y.grad_fn)


@case(VIEWS)
def _view_inplace_double_backward(lib):
    x = leaf(lib, X34)
    y = x * x
    y[1:].mul_(x[1:])
    (g,) = lib.autograd.grad(y.sum(), x, create_graph=True)
    (g * g).sum().backward()
    return g, x.grad


@case(VIEWS)
def _base_modified_then_view_used(lib):
    x = leaf(lib, X34)
    y = x * 2
    v = y[0]
    y.mul_(3)
    (v * v).sum().backward()
    return v, x.grad


@case(VIEWS)
def _view_of_leaf_inplace(lib):
    leaf(lib, X34)[:, 1].mul_(2)


@case(VIEWS)
def _view_of_leaf_inplace_no_grad(lib):
    x = leaf(lib, X34)
    with lib.no_grad():
        x[:, 1].mul_(2)
    (x * x).sum().backward()
    return x, x.grad


@case(VIEWS)
def _unbind_output_inplace(lib):
    a, b, c = (leaf(lib, X34[:3, :3]) * 2).unbind(0)
    a.mul_(2)


@case(VIEWS)
def _split_output_inplace(lib):
    a, b = (leaf(lib, X34) * 2).split(2, dim=1)
    b.add_(1)


@case(VIEWS)
def _chunk_output_inplace_no_grad_ok(lib):
    y = leaf(lib, X34) * 2
    with lib.no_grad():
        a, b = y.chunk(2, dim=1)
        a.add_(1)
    return y


@case(VIEWS)
def _view_grad_fn_name(lib):
    x = leaf(lib, X33)
    y = x * 2
    w = y[1]
    w.add_(1)
    return name(w.grad_fn), name(y.grad_fn)


@case(VIEWS)
def _view_grad_fn_values(lib):
    x = leaf(lib, X33)
    y = x * 2
    w = y[1]
    w.add_(1)
    (w * w).sum().backward()
    return w, y, x.grad


@case(VIEWS)
def _no_grad_view_modified(lib):
    x = leaf(lib, X34)
    y = x * 2
    with lib.no_grad():
        v = y[0]
    v.mul_(2)


@case(VIEWS)
def _no_grad_view_of_leaf_modified(lib):
    x = leaf(lib, X34)
    with lib.no_grad():
        v = x[0]
    v.mul_(2)


@pytest.mark.parametrize("fn", VIEWS, ids=lambda f: f.__name__.strip("_"))
def test_inplace_on_views(fn):
    same(fn)


def _no_grad_view_requires_grad(lib):
    y = leaf(lib, X34) * 2
    with lib.no_grad():
        v = y[0]
    return v.requires_grad, v.grad_fn is None


def test_view_created_in_no_grad_requires_grad():
    # torch: such a view reports requires_grad True but has no history and no accumulator
    same(_no_grad_view_requires_grad)


def _no_grad_view_used_in_grad_mode(lib):
    x = leaf(lib, X34)
    with lib.no_grad():
        v = x[1:]
    y = (v * 2).sum()
    y.backward()
    return y.requires_grad, v.grad is None, x.grad is None, v.is_leaf


def test_no_grad_view_used_in_grad_mode_stops_gradients():
    same(_no_grad_view_used_in_grad_mode)


def _custom_function_view_modified(lib):
    class Ident(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, g):
            return g

    r = Ident.apply(leaf(lib, X34) * 1)
    r.mul_(2)


def test_custom_function_view_modified_in_place():
    same(_custom_function_view_modified)


# ------------------------------------------------------------------------------ saved tensor hooks

HOOKS: list = []


def _logging_hooks(lib, log):
    def pack(t):
        log.append(("pack", tuple(t.shape), t.requires_grad, t.grad_fn is None))
        return ("packed", t.detach())

    def unpack(p):
        log.append(("unpack",))
        return p[1]

    return lib.autograd.graph.saved_tensors_hooks(pack, unpack)


@case(HOOKS)
def _pack_unpack_counts(lib):
    log = []
    x, w = leaf(lib, X34), leaf(lib, X34[::-1].copy())
    with _logging_hooks(lib, log):
        y = (x * w).exp()
        z = (y * x).sum()
    packs = sorted(log)
    log.clear()
    z.backward(retain_graph=True)
    unpacks = list(log)
    g1 = x.grad.clone()
    z.backward()
    return packs, unpacks, g1, x.grad, w.grad


@case(HOOKS)
def _hooks_backward_twice_frees(lib):
    x = leaf(lib, X34)
    with lib.autograd.graph.saved_tensors_hooks(lambda t: t.detach(), lambda t: t):
        z = (x * x).sum()
    z.backward()
    z.backward()


@case(HOOKS)
def _hooks_skip_version_check(lib):
    x, w = leaf(lib, X34), leaf(lib, X34)
    with lib.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
        y = x * w
    with lib.no_grad():
        w.add_(1)
    y.sum().backward()
    return x.grad


@case(HOOKS)
def _unpack_returns_non_tensor(lib):
    x = leaf(lib, X34)
    with lib.autograd.graph.saved_tensors_hooks(lambda t: t.detach(), lambda t: 3):
        y = x * x
    y.sum().backward()


@case(HOOKS)
def _hooks_replace_saved_values(lib):
    # whatever unpack returns is what backward uses
    x = leaf(lib, X34)
    with lib.autograd.graph.saved_tensors_hooks(lambda t: t.detach() * 2, lambda t: t):
        y = (x * x).sum()
    y.backward()
    return x.grad


@case(HOOKS)
def _hooks_custom_function(lib):
    class Exp(lib.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            out = a.exp()
            ctx.save_for_backward(a, out)
            return out

        @staticmethod
        def backward(ctx, g):
            a, out = ctx.saved_tensors
            Exp.seen = (name(out.grad_fn), out.requires_grad, a.grad_fn is None, a.requires_grad)
            return g * out

    log = []
    x = leaf(lib, X34)
    with _logging_hooks(lib, log):
        r = Exp.apply(x)
    r.sum().backward()
    return log, Exp.seen, x.grad


@case(HOOKS)
def _hooks_create_graph(lib):
    log = []
    x, w = leaf(lib, X34), leaf(lib, X34 * 0.5)
    with _logging_hooks(lib, log):
        r = (x * x * w).tanh().sum()
    (g,) = lib.autograd.grad(r, x, create_graph=True)
    (gw,) = lib.autograd.grad(g.sum(), w)
    return g, gw, len(log)


@case(HOOKS)
def _save_on_cpu(lib):
    x, w = leaf(lib, X34), leaf(lib, X34 * 0.5)
    with lib.autograd.graph.save_on_cpu():
        y = (x * w).exp().sum()
    y.backward()
    return x.grad, w.grad


@case(HOOKS)
def _no_pack_without_recording(lib):
    log = []
    x, w = leaf(lib, X34), leaf(lib, X34)
    with _logging_hooks(lib, log):
        with lib.no_grad():
            x * w
        x.detach() * w.detach()
    return log


@case(HOOKS)
def _nested_hooks_inner_wins(lib):
    log = []
    x, w = leaf(lib, X34), leaf(lib, X34)
    outer = lib.autograd.graph.saved_tensors_hooks(
        lambda t: log.append("outer") or t.detach(), lambda t: t
    )
    inner = lib.autograd.graph.saved_tensors_hooks(
        lambda t: log.append("inner") or t.detach(), lambda t: t
    )
    with outer:
        with inner:
            y = x * w
        z = y.exp()
    (z.sum()).backward()
    return log, x.grad


@case(HOOKS)
def _disabled_hooks(lib):
    with lib.autograd.graph.disable_saved_tensors_hooks("no hooks here"):
        with lib.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
            pass


@case(HOOKS)
def _post_accumulate_grad_hook(lib):
    x = leaf(lib, X34)
    log = []
    handle = x.register_post_accumulate_grad_hook(lambda t: log.append(t.grad.sum().item()))
    (x * 2).sum().backward()
    (x * 3).sum().backward()
    handle.remove()
    (x * 4).sum().backward()
    lib.autograd.grad((x * 5).sum(), x)
    return log, x.grad


@case(HOOKS)
def _post_accumulate_grad_hook_can_step(lib):
    # the pattern of optimizer-in-backward: update the leaf and drop its grad in the hook
    x = leaf(lib, X34)

    def step(p):
        with lib.no_grad():
            p.sub_(0.1 * p.grad)
        p.grad = None

    x.register_post_accumulate_grad_hook(step)
    (x * x).sum().backward()
    return x, x.grad


@case(HOOKS)
def _post_accumulate_grad_hook_non_leaf(lib):
    (leaf(lib, X34) * 2).register_post_accumulate_grad_hook(lambda t: None)


@case(HOOKS)
def _post_accumulate_grad_hook_no_grad(lib):
    leaf(lib, X34, requires_grad=False).register_post_accumulate_grad_hook(lambda t: None)


@case(HOOKS)
def _post_accumulate_grad_hook_returns(lib):
    x = leaf(lib, X34)
    x.register_post_accumulate_grad_hook(lambda t: 5)
    (x * 2).sum().backward()


@case(HOOKS)
def _gradient_edge(lib):
    x = leaf(lib, X34)
    y = x * 2
    e_leaf = lib.autograd.graph.get_gradient_edge(x)
    e_y = lib.autograd.graph.get_gradient_edge(y)
    return name(e_leaf.node), e_leaf.output_nr, e_y.node is y.grad_fn, e_y.output_nr


@case(HOOKS)
def _increment_version(lib):
    x = leaf(lib, X34)
    y = x.exp()
    lib.autograd.graph.increment_version(y)
    y.sum().backward()


@pytest.mark.parametrize("fn", HOOKS, ids=lambda f: f.__name__.strip("_"))
def test_hooks(fn):
    same(fn)


# ------------------------------------------------------------------------------ anomaly mode

ANOMALY: list = []


@case(ANOMALY)
def _sqrt_at_zero_inf(lib):
    x = lib.tensor([0.0, 4.0], dtype=lib.float64, requires_grad=True)
    with lib.autograd.detect_anomaly():
        x.sqrt().sum().backward()
    return x.grad


@case(ANOMALY)
def _sqrt_negative_nan(lib):
    x = lib.tensor([-1.0, 4.0], dtype=lib.float64, requires_grad=True)
    with lib.autograd.detect_anomaly():
        x.sqrt().sum().backward()


@case(ANOMALY)
def _nan_from_later_node(lib):
    # inf * 0 appears in MulBackward0, not in SqrtBackward0
    x = lib.zeros(2, 3, dtype=lib.float64, requires_grad=True)
    with lib.autograd.detect_anomaly():
        (x * x).sum(1).sqrt().sum().backward()


@case(ANOMALY)
def _nan_unchecked_passes(lib):
    x = lib.zeros(2, 3, dtype=lib.float64, requires_grad=True)
    with lib.autograd.detect_anomaly(check_nan=False):
        (x * x).sum(1).sqrt().sum().backward()
    return x.grad


@case(ANOMALY)
def _norm_at_zero(lib):
    x = lib.zeros(2, 3, dtype=lib.float64, requires_grad=True)
    with lib.autograd.detect_anomaly():
        (x * 1).norm().backward()
    return x.grad


@case(ANOMALY)
def _norm_dim_at_zero(lib):
    x = lib.zeros(2, 3, dtype=lib.float64, requires_grad=True)
    with lib.autograd.detect_anomaly():
        (x * 1).norm(2, dim=1).sum().backward()
    return x.grad


@case(ANOMALY)
def _set_detect_anomaly_function(lib):
    prev = lib.is_anomaly_enabled()
    lib.autograd.set_detect_anomaly(True)
    now = lib.is_anomaly_enabled()
    lib.autograd.set_detect_anomaly(False)
    return prev, now, lib.is_anomaly_enabled()


@case(ANOMALY)
def _custom_function_nan(lib):
    class Bad(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * float("nan")

    x = leaf(lib, X34)
    with lib.autograd.detect_anomaly():
        Bad.apply(x).sum().backward()


@pytest.mark.parametrize("fn", ANOMALY, ids=lambda f: f.__name__.strip("_"))
def test_anomaly(fn):
    same(fn)


def _failing_backward_warning(lib, make):
    """Run a failing backward under detect_anomaly; return the 'Error detected' warning."""
    x = lib.tensor([-1.0, 4.0], dtype=lib.float64, requires_grad=True)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        with lib.autograd.detect_anomaly():
            y = make(lib, x)  # the forward line the traceback must show
            with pytest.raises((RuntimeError, ValueError)):
                y.sum().backward()
    (msg,) = [str(w.message) for w in seen if "Error detected in" in str(w.message)]
    return msg


def _failing_function(lib, x):
    class Fail(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            raise ValueError("boom")

    return Fail.apply(x)


def _failing_op(lib, x):
    return x.sqrt()


def _check_traceback(make, node):
    import ember
    from tests.oracle.helper import torch

    for lib in (torch, ember):
        msg = _failing_backward_warning(lib, make)
        head = f"Error detected in {node}. Traceback of forward call that caused the error:\n"
        assert msg.startswith(head), msg
        assert "y = make(lib, x)  # the forward line the traceback must show" in msg, msg
        assert "test_autograd_views_hooks.py" in msg


def test_anomaly_traceback_custom_function():
    _check_traceback(_failing_function, "FailBackward")


def test_anomaly_traceback_op():
    _check_traceback(_failing_op, "SqrtBackward0")


# ------------------------------------------------------------------------------ graph lifetime


def _running_loss(lib, use_item):
    w = leaf(lib, X34[0])
    total = 0
    for i in range(3):
        loss = ((w * (i + 1)).tanh() ** 2).sum()
        loss.backward()
        total += loss.item() if use_item else loss
    return total


def test_accumulated_loss_keeps_graph():
    import ember
    from tests.oracle.helper import torch

    e, t = _running_loss(ember, False), _running_loss(torch, False)
    assert e.requires_grad and t.requires_grad
    assert name(e.grad_fn) == name(t.grad_fn) == "AddBackward0"
    assert abs(e.item() - t.item()) < 1e-12
    e, t = _running_loss(ember, True), _running_loss(torch, True)
    assert type(e) is type(t) is float and abs(e - t) < 1e-12

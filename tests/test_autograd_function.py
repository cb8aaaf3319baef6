"""Autograd extensions that need no torch: custom Functions, gradcheck, functional, saved
tensor hooks, checkpointing, and what the graph keeps alive.

The same features are compared with torch in ``tests/oracle/test_autograd_*.py``; here they are
pinned with exact values, plus what the oracle cannot show: memory being released (weakrefs),
deep graphs of custom Functions, recomputation counts.
"""

import gc
import weakref

import numpy as np
import pytest

import ember
import ember.utils.checkpoint as cp
from ember.autograd import Function, gradcheck, gradgradcheck
from ember.autograd.function import once_differentiable
from ember.autograd.gradcheck import GradcheckError


def leaf(values):
    return ember.tensor(np.asarray(values, dtype=np.float64), requires_grad=True)


_rng = np.random.default_rng(0)
A34 = _rng.uniform(-1, 1, (3, 4))
A42 = _rng.uniform(-1, 1, (4, 2))


class Exp(Function):
    @staticmethod
    def forward(ctx, x):
        y = x.exp()
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return g * y


class LinearFunction(Function):
    @staticmethod
    def forward(ctx, x, w, b=None):
        ctx.save_for_backward(x, w, b)
        out = x.mm(w)
        return out if b is None else out + b

    @staticmethod
    def backward(ctx, g):
        x, w, b = ctx.saved_tensors
        gx = g.mm(w.t()) if ctx.needs_input_grad[0] else None
        gw = x.t().mm(g) if ctx.needs_input_grad[1] else None
        gb = g.sum(0) if b is not None and ctx.needs_input_grad[2] else None
        return gx, gw, gb


# ------------------------------------------------------------------------------ Function


def test_function_node_is_ctx_and_named_after_class():
    x = leaf(A34)
    y = Exp.apply(x)
    assert y.grad_fn.name() == "ExpBackward" and type(y.grad_fn) is Exp._backward_cls
    assert isinstance(y.grad_fn, ember.autograd.graph.Node)
    assert y.grad_fn.next_functions[0][0].name() == "torch::autograd::AccumulateGrad"
    assert "grad_fn=<ExpBackward>" in repr(y)
    y.grad_fn.anything = 3  # ctx takes arbitrary attributes
    assert y.grad_fn.anything == 3


def test_function_gradients_and_gradcheck():
    x, w, b = leaf(A34), leaf(A42), leaf([0.5, -1.0])
    assert gradcheck(LinearFunction.apply, (x, w, b))
    assert gradgradcheck(LinearFunction.apply, (x, w, b))
    assert gradcheck(Exp.apply, (x,)) and gradgradcheck(Exp.apply, (x,))
    y = LinearFunction.apply(x, w, b)
    y.sum().backward()
    np.testing.assert_allclose(b.grad.numpy(), [3.0, 3.0])
    np.testing.assert_allclose(x.grad.numpy(), np.ones((3, 2)) @ A42.T)


def test_saved_tensors_freed_after_backward():
    x = leaf(A34)
    y = Exp.apply(x)
    y.sum().backward()
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        _ = y.grad_fn.saved_tensors
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        y.sum().backward()


def test_deep_chain_of_functions():
    x = leaf([1.0, 2.0])
    y = x
    for _ in range(5000):
        y = Exp.apply(y * 0.0)  # exp(0) = 1: a long graph of Function nodes
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 0.0])


def test_once_differentiable_runs_without_grad():
    seen = []

    class Sq(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        @once_differentiable
        def backward(ctx, g):
            seen.append(ember.is_grad_enabled())
            (x,) = ctx.saved_tensors
            return 2 * x * g

    x = leaf(A34)
    v = ember.ones(3, 4, dtype=ember.float64, requires_grad=True)
    (g,) = ember.autograd.grad(Sq.apply(x), x, v, create_graph=True)
    assert seen == [False] and g.grad_fn.name() == "Error"
    with pytest.raises(RuntimeError, match="marked with @once_differentiable"):
        g.sum().backward()


def test_anomaly_mode_records_function_traceback():
    x = leaf(A34)
    with pytest.warns(UserWarning, match="Anomaly Detection"):
        mode = ember.autograd.detect_anomaly()
    with mode:
        y = Exp.apply(x)  # this line is in the recorded traceback
    trace = "".join(y.grad_fn.metadata["traceback_"])
    assert "y = Exp.apply(x)  # this line is in the recorded traceback" in trace
    assert "traceback_" not in Exp.apply(x).grad_fn.metadata


# ------------------------------------------------------------------------------ gradcheck


def test_gradcheck_reports_jacobians():
    class Wrong(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2.5

    with pytest.raises(GradcheckError) as info:
        gradcheck(Wrong.apply, (leaf([1.0, 2.0]),))
    msg = str(info.value)
    assert isinstance(info.value, RuntimeError)
    assert msg.startswith("Jacobian mismatch for output 0 with respect to input 0,\nnumerical:")
    assert "tensor([[2.0000, 0.0000],\n        [0.0000, 2.0000]], dtype=torch.float64)" in msg
    assert "analytical:tensor([[2.5000, 0.0000],\n        [0.0000, 2.5000]]" in msg
    assert gradcheck(Wrong.apply, (leaf([1.0, 2.0]),), raise_exception=False) is False


def test_gradcheck_leaves_inputs_unchanged():
    x = leaf(A34)
    before = x.detach().numpy().copy()
    gradcheck(lambda a: a.tanh(), (x,))
    gradcheck(lambda a: a.tanh(), (x,), fast_mode=True)
    np.testing.assert_array_equal(x.detach().numpy(), before)
    assert x._version == 0


def test_gradcheck_warns_on_float32():
    x = ember.tensor(A34, dtype=ember.float32, requires_grad=True)
    with pytest.warns(UserWarning, match="Input #0 requires gradient and is not a double"):
        assert gradcheck(lambda a: a * 3, (x,), eps=1e-3, atol=1e-3)


# ------------------------------------------------------------------------------ functional


def test_functional_jacobian_hessian_values():
    F = ember.autograd.functional
    x = leaf(A34[0])
    jac = F.jacobian(lambda t: t**3, x)
    np.testing.assert_allclose(jac.numpy(), np.diag(3 * A34[0] ** 2))
    hess = F.hessian(lambda t: (t**3).sum(), x)
    np.testing.assert_allclose(hess.numpy(), np.diag(6 * A34[0]))
    v = ember.ones(4, dtype=ember.float64)
    _, hv = F.hvp(lambda t: (t**3).sum(), x, v)
    _, vh = F.vhp(lambda t: (t**3).sum(), x, v)
    np.testing.assert_allclose(hv.numpy(), 6 * A34[0])
    np.testing.assert_allclose(vh.numpy(), 6 * A34[0])
    _, jv = F.jvp(lambda t: t.exp(), x, v)
    np.testing.assert_allclose(jv.numpy(), np.exp(A34[0]))
    assert not jv.requires_grad and x.grad is None


# ------------------------------------------------------------------------------ hooks


def test_saved_tensors_hooks_store_what_pack_returns():
    store = {}

    def pack(t):
        key = len(store)
        store[key] = t.detach().numpy().copy()  # e.g. an offload to another store
        return key

    def unpack(key):
        return ember.from_numpy(store.pop(key))

    x = leaf(A34)
    with ember.autograd.graph.saved_tensors_hooks(pack, unpack):
        y = (x.exp() * x).sum()
    assert len(store) == 3  # exp's result, and both operands of the product
    y.backward()
    assert store == {}
    np.testing.assert_allclose(x.grad.numpy(), np.exp(A34) * (1 + A34))


def test_post_accumulate_grad_hook_sees_accumulated_grad():
    x = leaf(A34)
    seen = []
    x.register_post_accumulate_grad_hook(lambda t: seen.append(t.grad.numpy().copy()))
    (x * 2).sum().backward()
    (x * 2).sum().backward()
    np.testing.assert_array_equal(seen[1], np.full((3, 4), 4.0))


# ------------------------------------------------------------------------------ memory


def _graph_with_weak_intermediate():
    """Return (loss, weakref to the array saved by tanh); the graph holds that array only."""
    x = leaf(A34)
    w = leaf(A42)
    h = (x @ w).tanh()
    ref = weakref.ref(h._data)
    loss = (h * h).sum()
    return x, w, loss, ref


def test_backward_releases_saved_tensors():
    x, w, loss, ref = _graph_with_weak_intermediate()
    gc.collect()
    assert ref() is not None  # held by the graph (TanhBackward0 and MulBackward0 saved it)
    loss.backward()
    gc.collect()
    assert ref() is None  # released although ``loss`` (and its grad_fn) are still alive
    assert loss.grad_fn is not None


def test_retain_graph_keeps_saved_tensors():
    x, w, loss, ref = _graph_with_weak_intermediate()
    loss.backward(retain_graph=True)
    gc.collect()
    assert ref() is not None
    loss.backward()
    gc.collect()
    assert ref() is None


def test_running_loss_keeps_graphs_alive():
    """``total += loss`` chains every iteration's graph to ``total``; ``loss.item()`` does not."""

    def run(use_item):
        total, refs = 0, []
        for _ in range(3):
            x, w, loss, ref = _graph_with_weak_intermediate()
            refs.append(ref)
            total += loss.item() if use_item else loss
        del x, w, loss, ref  # only ``total`` may keep a graph alive
        gc.collect()
        return total, [r() is not None for r in refs]

    total, alive = run(use_item=False)
    assert alive == [True, True, True] and total.grad_fn.name() == "AddBackward0"
    total, alive = run(use_item=True)
    assert alive == [False, False, False] and isinstance(total, float)


# ------------------------------------------------------------------------------ checkpoint


def _mlp_params(depth=4, width=8, seed=0):
    rng = np.random.default_rng(seed)
    return [leaf(rng.uniform(-1, 1, (width, width)) / np.sqrt(width)) for _ in range(depth)]


def _layer(w):
    def f(h):
        mask = (ember.rand(h.shape, dtype=h.dtype) > 0.2).to(h.dtype)  # dropout
        return (h @ w).tanh() * mask

    return f


@pytest.mark.parametrize("reentrant", [False, True])
def test_checkpoint_matches_plain_run_with_dropout(reentrant):
    ws = _mlp_params()
    x0 = np.random.default_rng(1).uniform(-1, 1, (5, 8))
    grads = []
    for checkpointed in (False, True):
        ember.manual_seed(3)
        x = leaf(x0)
        h = x
        for w in ws:
            h = (
                cp.checkpoint(_layer(w), h, use_reentrant=reentrant)
                if checkpointed
                else _layer(w)(h)
            )
        h.pow(2).sum().backward()
        grads.append([x.grad.numpy().copy()] + [w.grad.numpy().copy() for w in ws])
        for w in ws:
            w.grad = None
    for a, b in zip(*grads):
        np.testing.assert_allclose(a, b, rtol=1e-12)


def test_checkpoint_holds_only_its_inputs():
    w1, w2, w3 = _mlp_params(3)
    x = leaf(np.ones((2, 8)))
    calls = []

    def f(t):
        calls.append(1)
        return ((t @ w1).tanh() @ w2).sigmoid()

    packed = []
    with ember.autograd.graph.saved_tensors_hooks(lambda t: packed.append(t) or t, lambda t: t):
        y = cp.checkpoint(f, x, use_reentrant=False)
        loss = (y @ w3).sum()
    # inside the checkpoint the graph keeps placeholders: only the last matmul saves tensors
    assert [tuple(t.shape) for t in packed] == [(2, 8), (8, 8)]
    assert len(calls) == 1
    loss.backward()
    assert len(calls) == 2  # recomputed once, in backward


def test_checkpoint_sequential_segments():
    ws = _mlp_params(6)

    def layer(w):
        return lambda t: (t @ w).tanh()

    fns = [layer(w) for w in ws]
    x = leaf(np.random.default_rng(2).uniform(-1, 1, (3, 8)))
    out = cp.checkpoint_sequential(fns, 3, x, use_reentrant=False)
    ref = x
    for f in fns:
        ref = f(ref)
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy())
    out.sum().backward()
    g = x.grad.numpy().copy()
    x.grad = None
    ref.sum().backward()
    np.testing.assert_allclose(g, x.grad.numpy(), rtol=1e-12)

"""Autograd behaviour that needs no torch: the engine, graph nodes, hooks, grad modes, versions.

The same behaviours are compared with torch in ``tests/oracle/test_autograd_oracle.py``; here
they are pinned with exact values and messages, plus what the oracle cannot show: deep graphs,
gradient buffers not aliasing, finite-difference checks of second derivatives.
"""

import gc
import sys
import threading
import weakref

import numpy as np
import pytest

import ember
from ember._core.node import AccumulateGrad, Node
from ember.autograd.engine import sum_to


def leaf(values, dtype=ember.float64):
    return ember.tensor(np.asarray(values, dtype=np.float64), dtype=dtype, requires_grad=True)


def arr(t):
    return t.detach().numpy()


FREED = (
    "Trying to backward through the graph a second time (or directly access saved tensors after "
    "they have already been freed). Saved intermediate values of the graph are freed when you "
    "call .backward() or autograd.grad(). Specify retain_graph=True if you need to backward "
    "through the graph a second time or if you need to access saved tensors after calling "
    "backward."
)


# ------------------------------------------------------------------------------ leaves


def test_requires_grad_only_on_leaves():
    y = leaf([1.0, 2.0]) * 2
    with pytest.raises(RuntimeError, match="you can only change requires_grad flags of leaf"):
        y.requires_grad = False
    assert y.requires_grad_() is y and y.requires_grad
    x = ember.ones(2)
    assert x.requires_grad_() is x and x.requires_grad and x.is_leaf
    x.requires_grad = False
    assert not x.requires_grad


@pytest.mark.parametrize("dtype", [ember.int64, ember.int32, ember.uint8, ember.bool])
def test_integer_tensors_cannot_require_grad(dtype):
    with pytest.raises(RuntimeError, match="can require gradients"):
        ember.zeros(3, dtype=dtype).requires_grad_()
    # ops on float tensors that produce integers or bools are not differentiable
    x = leaf([1.0, -2.0])
    assert not (x > 0).requires_grad and (x > 0).grad_fn is None


def test_is_leaf():
    x = leaf([1.0])
    assert x.is_leaf and (x * 2).is_leaf is False
    assert ember.ones(2).is_leaf and (ember.ones(2) * 2).is_leaf
    assert (x * 2).detach().is_leaf
    with ember.no_grad():
        assert (x * 2).is_leaf


def test_grad_setter_checks():
    x = ember.ones(3)
    with pytest.raises(RuntimeError, match=r"attempting to assign a gradient of size '\[2\]'"):
        x.grad = ember.ones(2)
    with pytest.raises(RuntimeError):
        x.grad = ember.ones(3, dtype=ember.float64)
    with pytest.raises(TypeError, match="but got grad of type int"):
        x.grad = 3
    g = ember.full((3,), 2.0)
    x.grad = g
    assert x.grad is g
    x.grad = None
    assert x.grad is None


# ------------------------------------------------------------------------------ graph structure


def test_next_functions_and_accumulate_grad():
    x = leaf([1.0, 2.0])
    c = ember.ones(2, dtype=ember.float64)
    a, b = x * 2, x.exp() * c
    acc = a.grad_fn.next_functions[0][0]
    assert isinstance(acc, AccumulateGrad) and acc.variable is x
    assert a.grad_fn.next_functions[1] == (None, 0)
    assert b.grad_fn.next_functions[0][0] is b.grad_fn.next_functions[0][0]
    assert b.grad_fn.next_functions[0][0].next_functions[0][0] is acc
    assert b.grad_fn.next_functions[1] == (None, 0)
    assert acc.next_functions == () and acc.name() == "torch::autograd::AccumulateGrad"
    assert a.grad_fn.name() == "MulBackward0" and isinstance(a.grad_fn, Node)
    assert isinstance(acc, ember.autograd.graph.Node)
    # the AccumulateGrad node lives as long as a graph uses it, and no longer
    ref = weakref.ref(acc)
    del a, b, acc
    gc.collect()
    assert ref() is None
    assert (x * 1).grad_fn.next_functions[0][0].variable is x


def test_sequence_numbers_increase():
    x = leaf([1.0])
    a = x * 2
    b = a * 2
    assert b.grad_fn._sequence_nr() > a.grad_fn._sequence_nr()
    assert b.grad_fn.metadata == {} and b.grad_fn.metadata is b.grad_fn.metadata


def test_sum_to():
    g = ember.ones(2, 3, 4)
    assert arr(sum_to(g, (3, 1))).tolist() == [[8.0]] * 3
    assert sum_to(g, (4,)).shape == (4,)
    assert sum_to(g, ()).item() == 24.0
    assert sum_to(g, (2, 3, 4)) is g
    with pytest.raises(RuntimeError, match="expected shape compatible with"):
        sum_to(g, (5,))


# ------------------------------------------------------------------------------ backward


def test_backward_errors():
    x = leaf([1.0, 2.0])
    with pytest.raises(RuntimeError, match="^grad can be implicitly created only for scalar"):
        (x * 2).backward()
    with pytest.raises(RuntimeError, match="element 0 of tensors does not require grad"):
        ember.ones(()).backward()
    with pytest.raises(RuntimeError, match=r"Mismatch in shape: grad_output\[0\]"):
        (x * 2).backward(ember.ones(3))
    with pytest.raises(RuntimeError, match="`inputs` argument to `backward\\(\\)` cannot be"):
        (x * 2).sum().backward(inputs=[])
    with pytest.raises(TypeError, match="gradients can be either Tensors or None"):
        ember.autograd.backward([x * 2], [3.0])


def test_second_backward_raises_torch_message():
    x = leaf([1.0, 2.0])
    y = (x * x).sum()
    y.backward()
    with pytest.raises(RuntimeError) as info:
        y.backward()
    assert str(info.value) == FREED
    assert arr(x.grad).tolist() == [2.0, 4.0]


def test_retain_graph_and_accumulation():
    x = leaf([1.0, 2.0])
    y = (x * x).sum()
    y.backward(retain_graph=True)
    g = x.grad
    y.backward()
    assert x.grad is g  # accumulated in place
    assert arr(x.grad).tolist() == [4.0, 8.0] and x.grad._version == 1


def test_inputs_restricts_accumulation():
    x, w = leaf([1.0, 2.0]), leaf([3.0, 4.0])
    h = x * w
    (h * h).sum().backward(inputs=[w, h])
    assert x.grad is None
    assert arr(w.grad).tolist() == [6.0, 32.0]
    assert h.retains_grad and arr(h.grad).tolist() == [6.0, 16.0]


def test_retain_grad_and_nonleaf_grad():
    x = leaf([1.0, 2.0])
    h, k = x * 3, x * 4
    h.retain_grad()
    (h * k).sum().backward()
    assert h.retains_grad and not k.retains_grad
    assert arr(h.grad).tolist() == [4.0, 8.0] and k.grad is None
    with pytest.raises(RuntimeError, match="can't retain_grad on Tensor that has requires_grad"):
        ember.ones(2).retain_grad()


def test_gradients_do_not_alias():
    # x + w hands the same gradient tensor to both leaves
    x, w = leaf([1.0, 2.0]), leaf([3.0, 4.0])
    g = ember.ones(2, dtype=ember.float64)
    (x + w).backward(g)
    assert not np.shares_memory(arr(x.grad), arr(w.grad))
    assert not np.shares_memory(arr(x.grad), arr(g))
    (x + w).backward(g)
    assert arr(x.grad).tolist() == [2.0, 2.0] and arr(w.grad).tolist() == [2.0, 2.0]
    assert arr(g).tolist() == [1.0, 1.0]
    # a hook that keeps the gradient it returns keeps it out of .grad
    kept = []
    z = leaf([1.0, 2.0])
    z.register_hook(lambda grad: kept.append(grad * 1) or kept[-1])
    (z * 3).sum().backward()
    assert not np.shares_memory(arr(z.grad), arr(kept[0]))


def test_fresh_gradient_is_stolen_not_copied():
    x = leaf([1.0, 2.0, 3.0])
    seen = []
    x.register_hook(lambda g: seen.append(g.data_ptr()))
    (x * ember.arange(3.0, dtype=ember.float64)).sum().backward()
    assert seen == [x.grad.data_ptr()]


def test_grad_follows_leaf_layout():
    x = ember.ones(4, 3, dtype=ember.float64).t().requires_grad_()
    (x * 2).sum().backward()
    assert x.grad.stride() == x.stride() == (1, 3)
    y = ember.ones(4, 3, dtype=ember.float64).requires_grad_()
    (y.t() * 2).sum().backward()
    assert y.grad.is_contiguous()


def test_leaf_that_stopped_requiring_grad_gets_nothing():
    x = leaf([1.0])
    y = (x * 2).sum()
    x.requires_grad_(False)
    y.backward()
    assert x.grad is None


def test_diamond_sums_both_paths():
    x = leaf([1.0, 2.0])
    a = x * 2
    b, c = a * 3, a * 4
    (b + c).sum().backward()
    assert arr(x.grad).tolist() == [14.0, 14.0]
    x.grad = None
    (x * x + x).sum().backward()  # x used three times by two nodes
    assert arr(x.grad).tolist() == [3.0, 5.0]


def test_multi_output_nodes_partially_used():
    x = leaf(np.arange(6.0))
    a, b, c = (x * 1).split(2)
    (b * 3).sum().backward()
    assert arr(x.grad).tolist() == [0, 0, 3, 3, 0, 0]
    y = leaf(np.ones((3, 2)))
    r0, r1, r2 = (y * 2).unbind()
    (r2 * r0).sum().backward()
    assert arr(y.grad).tolist() == [[4, 4], [0, 0], [4, 4]]


# 100,000 nodes once (the C stack when the graph is freed); 10,000 is already 50 times the
# recursion limit the backward runs under
@pytest.mark.parametrize(("step", "n"), [("mul", 100_000), ("add", 10_000)])
def test_long_chain_is_iterative(step, n):
    x = leaf([1.0, 2.0])
    y = x
    for _ in range(n):
        y = y * 1.0001 if step == "mul" else y + 1
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(200)  # the engine and freeing the graph must not recurse
    try:
        y.sum().backward()
    finally:
        sys.setrecursionlimit(limit)
    want = 1.0001**n if step == "mul" else 1.0
    np.testing.assert_allclose(arr(x.grad), [want, want], rtol=1e-9)
    del y  # freeing a 100,000-node graph must not overflow the C stack either
    gc.collect()


def test_unused_deep_graph_frees():
    x = leaf([1.0])
    y = x
    for _ in range(100_000):
        y = y * 1.0001  # every node keeps its saved tensors: nothing was released
    del y
    gc.collect()


def test_long_chain_retained_graph_freed():
    x = leaf([1.0])
    y = x
    for _ in range(50_000):
        y = y.exp().log()
    s = y.sum()
    del y
    s.backward(retain_graph=True)
    np.testing.assert_allclose(arr(x.grad), [1.0])
    del s
    gc.collect()


# ------------------------------------------------------------------------------ autograd.grad


def test_grad_returns_tuple_and_leaves_grad_alone():
    x, w = leaf([1.0, 2.0]), leaf([3.0, 4.0])
    y = (x * w).sum()
    gx, gw = ember.autograd.grad(y, [x, w])
    assert arr(gx).tolist() == [3.0, 4.0] and arr(gw).tolist() == [1.0, 2.0]
    assert x.grad is None and w.grad is None
    assert isinstance(ember.autograd.grad((x * 2).sum(), x), tuple)


def test_grad_errors():
    x, w = leaf([1.0, 2.0]), leaf([3.0, 4.0])
    with pytest.raises(RuntimeError, match="The differentiated Tensor at index 1 appears to not"):
        ember.autograd.grad((x * 2).sum(), [x, w])
    with pytest.raises(RuntimeError, match="One of the differentiated Tensors does not require"):
        ember.autograd.grad((x * 2).sum(), [x, ember.ones(2)])
    with pytest.raises(ValueError, match="Expected allow_unused to be True"):
        ember.autograd.grad((x * 2).sum(), [x], materialize_grads=True, allow_unused=False)
    assert ember.autograd.grad((x * 2).sum(), [x, w], allow_unused=True)[1] is None
    gx, gw = ember.autograd.grad((x * 2).sum(), [x, w], materialize_grads=True)
    assert arr(gw).tolist() == [0.0, 0.0]


# ------------------------------------------------------------------------------ higher order


def _numeric_jacobian(f, x, eps=1e-6):
    """Central differences of ``f`` (array -> array) at ``x``: shape (f.size, x.size)."""
    x = np.array(x, dtype=np.float64)
    cols = []
    for i in range(x.size):
        d = np.zeros_like(x)
        d.flat[i] = eps
        cols.append((f(x + d) - f(x - d)).ravel() / (2 * eps))
    return np.stack(cols, axis=1)


SECOND_ORDER = {
    "poly": lambda x: (x**3 * 2 - x * x).sum(),
    "exp_log": lambda x: (x.exp() * (x * x + 1).log()).sum(),
    "tanh_sigmoid": lambda x: (x.tanh() * x.sigmoid() / (x.abs() + 1)).sum(),
    "sqrt_pow": lambda x: ((x * x + 1).sqrt() ** 1.5 + 2**x).sum(),
    "matmul": lambda x: ((x.view(2, 3) @ x.view(3, 2)).tanh() ** 2).sum(),
    "where_index": lambda x: (ember.where(x > 0, x * x, x.exp()) * x[[1, 0, 2, 3, 5, 4]]).mean(),
}


@pytest.mark.parametrize("name", list(SECOND_ORDER))
def test_double_backward_matches_finite_differences(name):
    f = SECOND_ORDER[name]
    x0 = np.array([0.3, -1.2, 0.8, 1.5, -0.4, 0.9])

    def first(a):
        x = leaf(a)
        (g,) = ember.autograd.grad(f(x), x)
        return arr(g)

    x = leaf(x0)
    (g,) = ember.autograd.grad(f(x), x, create_graph=True)
    assert g.requires_grad
    rows = [arr(ember.autograd.grad(g[i], x, retain_graph=True)[0]) for i in range(x0.size)]
    np.testing.assert_allclose(np.stack(rows), _numeric_jacobian(first, x0), atol=1e-6)


def test_gradient_penalty():
    w = leaf([0.5, -1.0, 2.0])
    x = ember.tensor([1.0, 2.0, 3.0], dtype=ember.float64)
    y = ((x * w).tanh() * 3).sum()
    (g,) = ember.autograd.grad(y, w, create_graph=True)
    penalty = (g * g).sum()
    penalty.backward()

    def pen(a):
        t = np.tanh(x.numpy() * a)
        g = 3 * (1 - t * t) * x.numpy()
        return np.array([(g * g).sum()])

    np.testing.assert_allclose(arr(w.grad), _numeric_jacobian(pen, arr(w))[0], atol=1e-7)


def test_create_graph_backward_builds_differentiable_grad(monkeypatch):
    monkeypatch.setattr(ember.autograd.engine, "_warned_create_graph", False)  # once a process
    x = leaf([1.0, 2.0])
    with pytest.warns(UserWarning, match="create_graph=True"):
        (x**3).sum().backward(create_graph=True)
    assert x.grad.requires_grad and x.grad.grad_fn.name() == "CopyBackwards"
    (gg,) = ember.autograd.grad(x.grad.sum(), x)
    assert arr(gg).tolist() == [6.0, 12.0]


# ------------------------------------------------------------------------------ grad modes


def test_grad_mode_context_managers_nest():
    x = leaf([1.0])
    with ember.no_grad():
        assert not (x * 2).requires_grad
        with ember.enable_grad():
            assert (x * 2).requires_grad
            with ember.set_grad_enabled(False):
                assert not ember.is_grad_enabled()
            assert ember.is_grad_enabled()
        assert not ember.is_grad_enabled()
    assert ember.is_grad_enabled()


def test_set_grad_enabled_as_function():
    ember.set_grad_enabled(False)
    try:
        assert not ember.is_grad_enabled()
    finally:
        ember.set_grad_enabled(True)
    assert ember.is_grad_enabled()
    assert str(ember.set_grad_enabled(True)).endswith("set_grad_enabled(mode=True)")


def test_grad_mode_decorators():
    @ember.no_grad
    def bare():
        return ember.is_grad_enabled()

    @ember.no_grad()
    def called():
        return ember.is_grad_enabled()

    @ember.inference_mode
    def inference():
        return ember.is_grad_enabled(), ember.is_inference_mode_enabled()

    @ember.set_grad_enabled(False)
    def off():
        return ember.is_grad_enabled()

    assert ember.is_grad_enabled()  # decorating with set_grad_enabled does not switch it off
    assert bare() is False and called() is False and off() is False
    assert inference() == (False, True)
    assert ember.is_grad_enabled() and not ember.is_inference_mode_enabled()
    with ember.no_grad():
        assert ember.enable_grad(lambda: ember.is_grad_enabled())()
    assert called.__name__ == "called"
    with pytest.raises(RuntimeError, match="Cannot decorate classes"):
        from ember._core.grad_mode import _context_decorator

        _context_decorator(ember.no_grad, type("C", (), {}))


def test_grad_mode_generators():
    @ember.no_grad()
    def gen():
        got = yield ember.is_grad_enabled()
        yield got, ember.is_grad_enabled()

    it = gen()
    assert next(it) is False
    assert ember.is_grad_enabled()
    assert it.send("x") == ("x", False)
    assert ember.is_grad_enabled()


def test_inference_mode_nested_false():
    with ember.inference_mode():
        assert not ember.is_grad_enabled() and ember.is_inference_mode_enabled()
        with ember.inference_mode(False):
            assert ember.is_grad_enabled() and not ember.is_inference_mode_enabled()
        assert not ember.is_grad_enabled()
    assert ember.is_grad_enabled() and not ember.is_inference_mode_enabled()


def test_grad_mode_is_thread_local():
    seen = {}

    def worker():
        seen["start"] = (ember.is_grad_enabled(), ember.is_inference_mode_enabled())
        with ember.no_grad():
            barrier.wait()
            barrier.wait()

    barrier = threading.Barrier(2)
    with ember.inference_mode():
        th = threading.Thread(target=worker)
        th.start()
    barrier.wait()  # the worker is inside no_grad; this thread is not
    assert ember.is_grad_enabled()
    barrier.wait()
    th.join()
    assert seen["start"] == (True, False)


def test_mode_restored_after_exception():
    with pytest.raises(KeyError):
        with ember.no_grad():
            raise KeyError
    assert ember.is_grad_enabled()
    x = leaf([1.0])
    y = (x * 2).sum()
    ember.set_grad_enabled(True)

    def bad_hook(g):
        raise ValueError("in backward")

    x.register_hook(bad_hook)
    with pytest.raises(ValueError, match="in backward"):
        y.backward(create_graph=False)
    assert ember.is_grad_enabled()


def test_backward_runs_without_grad_unless_create_graph():
    x = leaf([1.0, 2.0])
    modes = []
    h = x * x
    h.register_hook(lambda g: modes.append(ember.is_grad_enabled()))
    h.sum().backward(retain_graph=True)
    ember.autograd.grad(h.sum(), x, create_graph=True)
    assert modes == [False, True]


# ------------------------------------------------------------------------------ detach, versions


def test_detach_and_data():
    x = leaf([1.0, 2.0])
    y = x.exp()
    d = y.detach()
    assert not d.requires_grad and d.is_leaf and d.grad_fn is None
    assert np.shares_memory(arr(d), arr(y))
    d.add_(1)
    assert y._version == 1  # detach shares the version counter
    data = x.data
    data.add_(1)
    assert x._version == 0 and data._version == 1  # .data has a fresh one
    z = (x * 1).detach_()
    assert not z.requires_grad and z.is_leaf


def test_version_error_message():
    x = leaf([1.0, 2.0, 3.0], dtype=ember.float32)
    y = x.exp()
    y.add_(1)
    with pytest.raises(RuntimeError) as info:
        y.sum().backward()
    assert str(info.value) == (
        "one of the variables needed for gradient computation has been modified by an inplace "
        "operation: [torch.FloatTensor [3]], which is output 0 of Exp, is at version 1; expected "
        "version 0 instead. Hint: enable anomaly detection to find the operation that failed to "
        "compute its gradient, with torch.autograd.set_detect_anomaly(True, check_nan=False)."
    )
    w = leaf(np.ones((2, 3)))
    v = w * w
    with ember.no_grad():
        w.mul_(2)  # a saved leaf: no "which is output" part
    with pytest.raises(RuntimeError, match=r"\[torch.DoubleTensor \[2, 3\]\] is at version 1"):
        v.sum().backward()


def test_inplace_rules():
    x = leaf([1.0, 2.0])
    with pytest.raises(RuntimeError, match="^a leaf Variable that requires grad is being used"):
        x.add_(1)
    with pytest.raises(RuntimeError, match="^a view of a leaf Variable that requires grad"):
        x[0].add_(1)
    with ember.no_grad():
        x.add_(1)
        x[0] = 7
    assert arr(x).tolist() == [7.0, 3.0] and x.is_leaf and x._version == 2
    h = x * 2
    h.mul_(3)
    assert h.grad_fn.name() == "MulBackward0" and h._version == 1
    h.sum().backward()
    assert arr(x.grad).tolist() == [6.0, 6.0]


# ------------------------------------------------------------------------------ hooks


def test_tensor_hooks():
    x = leaf([1.0, 2.0])
    h = x * 2
    log = []
    h1 = h.register_hook(lambda g: log.append("h1") or g * 10)
    h.register_hook(lambda g: log.append("h2"))
    x.register_hook(lambda g: log.append("x") or g + 1)
    (h * 3).sum().backward(retain_graph=True)
    assert log == ["h1", "h2", "x"] and arr(x.grad).tolist() == [61.0, 61.0]
    h1.remove()
    log.clear()
    x.grad = None
    (h * 3).sum().backward()
    assert log == ["h2", "x"] and arr(x.grad).tolist() == [7.0, 7.0]
    with pytest.raises(RuntimeError, match="cannot register a hook on a tensor that doesn't"):
        ember.ones(2).register_hook(lambda g: g)


def test_hook_result_checks():
    for bad, err, msg in [
        (lambda g: g[:1], RuntimeError, "hook '<lambda>' has changed the size of value"),
        (lambda g: g.float(), RuntimeError, "hook '<lambda>' has changed the type of value"),
        (lambda g: 1, TypeError, "expected Variable, but hook returned 'int'"),
    ]:
        x = leaf([1.0, 2.0])
        h = x * 2
        h.register_hook(bad)
        with pytest.raises(err, match=msg):
            h.sum().backward()


def test_retain_grad_runs_after_hooks():
    x = leaf([1.0, 2.0])
    h = x * 2
    h.retain_grad()
    h.register_hook(lambda g: g * 5)
    h.sum().backward()
    assert arr(h.grad).tolist() == [5.0, 5.0] and arr(x.grad).tolist() == [10.0, 10.0]


def test_node_hooks():
    x = leaf([1.0, 2.0])
    h = x * 2
    log = []
    pre = h.grad_fn.register_prehook(lambda go: log.append("pre") or (go[0] * 3,))
    h.grad_fn.register_hook(lambda gi, go: log.append(("post", arr(gi[0]).tolist())))
    h.sum().backward(retain_graph=True)
    assert log == ["pre", ("post", [6.0, 6.0])] and arr(x.grad).tolist() == [6.0, 6.0]
    pre.remove()
    with h.grad_fn.register_prehook(lambda go: (go[0], go[0])):
        with pytest.raises(RuntimeError, match="has returned an incorrect number of values"):
            h.sum().backward()


def test_execution_order_newest_first():
    x = leaf([1.0])
    log = []
    a = x * 2  # oldest
    b = x * 3
    c = a * b  # newest
    for label, t in [("a", a), ("b", b), ("c", c), ("x", x)]:
        t.register_hook(lambda g, label=label: log.append(label))
    c.backward()
    assert log == ["c", "b", "a", "x"]


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # 0/0 in SqrtBackward0, as torch
def test_anomaly_mode_names_the_failing_node():
    x = leaf([0.0, 1.0])
    with pytest.warns(UserWarning, match="Anomaly Detection has been enabled"):
        ctx = ember.autograd.detect_anomaly()
    with ctx, pytest.warns(UserWarning, match="Error detected in SqrtBackward0"):
        with pytest.raises(RuntimeError, match="Function 'SqrtBackward0' returned nan values"):
            (x.sqrt() * 0).sum().backward()
    assert not ember.autograd.anomaly_mode.is_anomaly_enabled()


def test_array_backward_with_parameters_saved():
    # ops with an array backward read saved Parameters (a Tensor subclass) as arrays too
    w = ember.nn.Parameter(ember.randn(4, 3))
    x = ember.randn(2, 4, requires_grad=True)
    (x @ w).sum().backward()
    assert arr(w.grad).tolist() == arr(x.detach().sum(0)).reshape(4, 1).repeat(3, 1).tolist()
    ln = ember.nn.LayerNorm(3)
    ln(ember.randn(2, 3)).sum().backward()
    assert ln.weight.grad.shape == (3,) and ln.bias.grad.tolist() == [2.0, 2.0, 2.0]

"""ember.compile: a compiled program returns what eager returns (values, dtypes, shapes,
gradients), over a corpus of small programs; guards, recompiles, graph breaks, backends."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember
import ember._dynamo
from ember._dynamo.exc import Unsupported

nn = ember.nn
F = ember.nn.functional


def _leaves(x):
    if isinstance(x, ember.Tensor):
        return [x]
    if isinstance(x, (tuple, list)):
        return [t for e in x for t in _leaves(e)]
    if isinstance(x, dict):
        return [t for e in x.values() for t in _leaves(e)]
    return []


def _same(a, b):
    la, lb = _leaves(a), _leaves(b)
    assert type(a) is type(b)
    assert len(la) == len(lb)
    for x, y in zip(la, lb):
        assert x.dtype == y.dtype and x.shape == y.shape
        assert x.requires_grad == y.requires_grad
        assert np.array_equal(x.detach().numpy(), y.detach().numpy(), equal_nan=True)
    if not la:
        assert a == b


_OFFSET = [0]  # each call of a corpus program gets new data


def _x(*shape, grad=False, dtype=None, seed=0):
    rng = np.random.default_rng(seed + 100 * _OFFSET[0])
    t = ember.from_numpy(rng.standard_normal(shape).astype(dtype or np.float32))
    return t.requires_grad_(grad)


# (name, fn, inputs maker, compiles): every program runs eagerly and compiled (3 calls)
CORPUS = [
    ("add_mul", lambda x, y: x * y + x, lambda: (_x(3, 4), _x(3, 4, seed=1)), True),
    ("scalar_ops", lambda x: (x * 2.5 - 1) / 3, lambda: (_x(5),), True),
    ("broadcast", lambda x, y: x + y, lambda: (_x(3, 4), _x(4, seed=1)), True),
    ("unary_chain", lambda x: x.sin().cos().tanh().exp(), lambda: (_x(6),), True),
    ("reductions", lambda x: (x.sum(), x.mean(0), x.amax(1)), lambda: (_x(3, 4),), True),
    ("matmul", lambda a, b: a @ b, lambda: (_x(3, 4), _x(4, 2, seed=1)), True),
    ("int_promote", lambda x, i: x + i, lambda: (_x(3), ember.arange(3)), True),
    ("int_only", lambda i: i * 3 + 1, lambda: (ember.arange(5),), True),
    ("float64", lambda x: x.exp() * 2, lambda: (_x(4, dtype=np.float64),), True),
    ("compare", lambda x: (x > 0).float() * x, lambda: (_x(8),), True),
    ("where", lambda x: ember.where(x > 0, x, -x), lambda: (_x(8),), True),
    ("view_reshape", lambda x: x.reshape(4, 3).t() * 2, lambda: (_x(3, 4),), True),
    ("view_returned", lambda x: x.view(-1), lambda: (_x(3, 4),), True),
    ("transpose_matmul", lambda x: x.transpose(0, 1) @ x, lambda: (_x(3, 4),), True),
    ("slicing", lambda x: x[1:, ::2] + 1, lambda: (_x(4, 6),), True),
    ("cat_stack", lambda x, y: ember.cat([x, y]).sum(0), lambda: (_x(2, 3), _x(2, 3)), True),
    ("softmax", lambda x: F.softmax(x, dim=-1), lambda: (_x(4, 5),), True),
    ("log_softmax", lambda x: F.log_softmax(x, 1), lambda: (_x(4, 5),), True),
    ("relu_gelu", lambda x: F.gelu(F.relu(x)), lambda: (_x(10),), True),
    ("tuple_out", lambda x: (x, x + 1, [x * 2]), lambda: (_x(3),), True),
    ("dict_out", lambda x: {"a": x.sum(), "b": 3}, lambda: (_x(3),), True),
    ("none_arg", lambda x, y=None: x if y is None else x + y, lambda: (_x(3), None), True),
    ("python_scalar_arg", lambda x, k: x * k, lambda: (_x(3), 4), True),
    ("returns_input", lambda x: x, lambda: (_x(3),), True),
    ("inplace_input", lambda x: x.add_(1), lambda: (_x(3),), True),
    ("inplace_inner", lambda x: (x * 1).mul_(2).add_(x), lambda: (_x(3),), True),
    ("inplace_view", lambda x: x[0].zero_(), lambda: (_x(2, 3),), True),
    ("setitem", lambda x: _setitem(x), lambda: (_x(4),), True),
    ("no_grad_region", lambda x: _no_grad(x), lambda: (_x(3, grad=True),), True),
    ("branch_on_value", lambda x: x * 2 if x.sum() > 0 else x - 1, lambda: (_x(4),), True),
    ("item_read", lambda x: x * x.max().item(), lambda: (_x(4),), False),  # torch breaks
    ("int_read", lambda x: x[: int(x.argmax())], lambda: (_x(6),), True),
    ("grad_mlp", lambda x, w: (x @ w).relu().sum(), lambda: (_x(3, 4), _x(4, 2, grad=True)), True),
    (
        "grad_both",
        lambda x, y: (x * y).sin().mean(),
        lambda: (_x(4, grad=True), _x(4, grad=True)),
        True,
    ),  # fmt: skip
    ("grad_reuse", lambda x: (x * x + x.exp()).sum(), lambda: (_x(5, grad=True),), True),
    (
        "grad_broadcast",
        lambda x, b: (x + b).pow(2).sum(),
        lambda: (_x(3, 4), _x(4, grad=True)),
        True,
    ),  # fmt: skip
    ("grad_two_outputs", lambda x: (x.sin(), x.cos() * 2), lambda: (_x(3, grad=True),), True),
    (
        "grad_softmax_ce",
        lambda x, y: F.cross_entropy(x, y),
        lambda: (_x(4, 5, grad=True), ember.tensor([0, 1, 4, 2])),
        True,
    ),  # fmt: skip
    ("grad_view", lambda x: x.t().reshape(-1).sum(), lambda: (_x(3, 2, grad=True),), True),
    ("grad_nonleaf", lambda h: (h * 3).sum(), lambda: ((_x(3, grad=True) * 2),), True),
    ("print_break", lambda x: _prints(x), lambda: (_x(3),), False),
    ("global_side_effect", lambda x: _appends(x), lambda: (_x(3),), False),
    ("numpy_read", lambda x: ember.tensor(x.numpy() * 2), lambda: (_x(3),), False),
    ("dropout_rng", lambda x: F.dropout(x, 0.5), lambda: (_x(8),), True),
    ("dropout_grad", lambda x: F.dropout(x * 2, 0.3).sum(), lambda: (_x(8, grad=True),), True),
    ("alpha_dropout", lambda x: F.alpha_dropout(x, 0.2, True), lambda: (_x(8),), True),
    (
        "maxpool_dropout",
        lambda x: F.dropout(F.max_pool2d(x, 2), 0.1).sum(),
        lambda: (_x(2, 1, 4, 4, grad=True),),
        True,
    ),  # fmt: skip
    ("randn_inside", lambda x: x + ember.randn(3), lambda: (_x(3),), False),
]

LOG: list = []


def _setitem(x):
    y = x.clone()
    y[1] = 5.0
    return y


def _no_grad(x):
    with ember.no_grad():
        y = x * 2
    return y + 1


def _prints(x):
    print("side effect")
    return x + 1


def _prints_between(x):
    y = x * 2
    print("side effect")
    return y + 1


def _appends(x):
    LOG.append(1)
    return x + 1


def _clone_inputs(xs):
    out = []
    for x in xs:
        if isinstance(x, ember.Tensor):
            c = x.detach().clone().requires_grad_(x.requires_grad)
            if x.grad_fn is not None:  # keep a non-leaf a non-leaf
                c = c * 1
            out.append(c)
        else:
            out.append(x)
    return out


@pytest.mark.parametrize("name,fn,make,compiles", CORPUS, ids=[c[0] for c in CORPUS])
def test_compiled_equals_eager(name, fn, make, compiles, capsys):
    cf = ember.compile(fn)
    for i in range(3):
        _OFFSET[0] = i
        xs = make()
        a_in, b_in = _clone_inputs(xs), _clone_inputs(xs)
        ember.manual_seed(1)
        want = fn(*a_in)
        state = ember.get_rng_state()
        ember.manual_seed(1)
        got = cf(*b_in)
        _same(got, want)
        assert ember.equal(ember.get_rng_state(), state)  # the same numbers drawn
        for p, q in zip(a_in, b_in):  # in-place writes to inputs happen too
            if isinstance(p, ember.Tensor):
                assert np.array_equal(p.detach().numpy(), q.detach().numpy())
                assert p._version == q._version
        outs = [t for t in _leaves(want) if t.requires_grad]
        if outs:
            gots = [t for t in _leaves(got) if t.requires_grad]
            sum(o.sum() for o in outs).backward()
            sum(o.sum() for o in gots).backward()
            for p, q in zip(a_in, b_in):
                if isinstance(p, ember.Tensor) and p.is_leaf and p.requires_grad:
                    assert np.array_equal(p.grad.numpy(), q.grad.numpy())
    entries = cf._ember_compiled.entries
    assert all(e.failure is None for e in entries) is compiles, [e.failure for e in entries]
    if name == "print_break":
        assert capsys.readouterr().out.count("side effect") == 6


def test_generated_code_runs_and_backward_is_compiled():
    w = _x(4, 3, grad=True)
    f = ember.compile(lambda x: (x @ w).tanh().sum())
    x = _x(2, 4)
    for _ in range(2):
        w.grad = None
        loss = f(x)  # the first call captures, then returns the compiled code's result
        assert loss.grad_fn.name() == "CompiledFunctionBackward"
        loss.backward()
    w2 = w.detach().clone().requires_grad_()
    (x @ w2).tanh().sum().backward()
    assert np.array_equal(w.grad.numpy(), w2.grad.numpy())
    entry = f._ember_compiled.entries[0]
    assert "def forward" in entry.source and "def backward" in entry.backward_source


def test_guard_flip_on_bool_read():
    calls = []

    def f(x):
        calls.append(0)  # a closure list: a side effect, but this one is the test's probe
        return x * 2 if x.sum() > 0 else x - 1

    g = ember.compile(lambda x: x * 2 if x.sum() > 0 else x - 1)
    pos, neg = ember.ones(3), -ember.ones(3)
    assert g(pos).tolist() == [2.0] * 3
    assert g(pos).tolist() == [2.0] * 3
    assert g(neg).tolist() == [-2.0] * 3  # the guard fails: a second entry
    assert g(pos).tolist() == [2.0] * 3 and g(neg).tolist() == [-2.0] * 3
    assert len(g._ember_compiled.entries) == 2


def test_shape_change_recompiles_then_cache_limit_warns():
    g = ember.compile(lambda x: x + 1, dynamic=False)
    old = ember._dynamo.config.cache_size_limit
    ember._dynamo.config.cache_size_limit = 2
    try:
        for n in (1, 2):
            assert g(ember.zeros(n)).tolist() == [1.0] * n
        with pytest.warns(UserWarning, match="recompile_limit"):
            assert g(ember.zeros(3)).tolist() == [1.0] * 3
        assert len(g._ember_compiled.entries) == 2
    finally:
        ember._dynamo.config.cache_size_limit = old


def test_grad_mode_and_training_flags_are_guards():
    m = nn.Sequential(nn.Linear(3, 2), nn.Dropout(0.0))
    c = ember.compile(m)
    x = _x(4, 3)
    y1 = c(x)
    with ember.no_grad():
        y2 = c(x)
    assert y1.requires_grad and not y2.requires_grad
    c.eval()
    c(x)
    assert len(c.forward.entries) == 3
    assert np.array_equal(c(x).detach().numpy(), m(x).detach().numpy())


def test_mlp_train_steps_match_eager():
    def make():
        ember.manual_seed(0)
        return nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 3))

    m1, m2 = make(), make()
    c = ember.compile(m2)
    o1 = ember.optim.SGD(m1.parameters(), lr=0.1)
    o2 = ember.optim.SGD(m2.parameters(), lr=0.1)
    x, y = _x(5, 6), ember.tensor([0, 1, 2, 1, 0])
    for _ in range(4):
        for m, o in ((m1, o1), (c, o2)):
            o.zero_grad()
            F.cross_entropy(m(x), y).backward()
            o.step()
    for p, q in zip(m1.parameters(), m2.parameters()):
        assert np.array_equal(p.detach().numpy(), q.detach().numpy())
    assert c.forward.entries[0].failure is None


def test_fullgraph_raises_on_break():
    def f(x):
        print("hi")
        return x

    with pytest.raises(Unsupported, match="print"):
        ember.compile(f, fullgraph=True)(ember.ones(1))


def test_explain_counts_graphs_and_breaks():
    out = ember._dynamo.explain(lambda x: x.sin() + 1)(ember.ones(2))
    assert out.graph_count == 1 and out.graph_break_count == 0 and out.op_count == 2
    # a break with no graph before it reports no reason (torch 2.13: 1 graph, 0 reasons)
    out = ember._dynamo.explain(_prints)(ember.ones(2))
    assert (out.graph_count, out.graph_break_count, len(out.break_reasons)) == (1, 0, 0)
    out = ember._dynamo.explain(_prints_between)(ember.ones(2))
    assert len(out.break_reasons) == 1 and "print" in out.break_reasons[0].reason


def test_is_compiling_and_reset():
    seen = []

    def f(x):
        seen.append(ember.compiler.is_compiling())
        return x + 1

    g = ember.compile(f)
    g(ember.ones(1))
    assert seen == [True] and not ember.compiler.is_compiling()
    ember._dynamo.reset()
    assert g._ember_compiled.entries == []
    assert "inductor" in ember._dynamo.list_backends()


def test_trace_enabled_prints_the_generated_function(capsys):
    f = ember.compile(lambda x: x * 2 + 1, options={"trace.enabled": True})
    f(ember.ones(3))
    out = capsys.readouterr().out
    assert out.startswith("def fused_mul_add_0(") and "\ndef forward(" in out


def test_module_compile_in_place_and_api_forms():
    m = nn.Linear(3, 2)
    x = _x(2, 3)
    want = m(x)
    m.compile()
    _same(m(x), want)
    _same(m(x), want)

    @ember.compile(mode="reduce-overhead")
    def h(x):
        return x + 2

    assert h(ember.tensor(1)).item() == 3
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert ember.compile(m, disable=True) is m


def test_custom_backend_receives_an_fx_graph_module():
    seen = []

    def backend(gm, example_inputs):
        seen.append((type(gm).__name__, len(example_inputs)))
        return gm.forward

    f = ember.compile(lambda x, y: (x * y).sin() + 1, backend=backend)
    x, y = _x(3), _x(3, seed=1)
    for _ in range(2):
        _same(f(x, y), (x * y).sin() + 1)
    assert seen == [("GraphModule", 2)]
    assert isinstance(seen and f._ember_compiled.entries[0].source, str)


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_eager_backends_run_the_ir(backend):
    w = _x(3, 2, grad=True)
    f = ember.compile(lambda x: (x @ w).relu().sum(), backend=backend)
    x = _x(4, 3)
    for _ in range(2):
        w.grad = None
        loss = f(x)
        loss.backward()
    w2 = w.detach().clone().requires_grad_()
    want = (x @ w2).relu().sum()
    want.backward()
    _same(loss, want)
    assert np.array_equal(w.grad.numpy(), w2.grad.numpy())
    entry = f._ember_compiled.entries[0]
    assert entry.failure is None and "aten::matmul" in entry.source or "aten::mm" in entry.source


def test_batchnorm_training_updates_running_stats_as_eager():
    def make():
        ember.manual_seed(0)
        return nn.Sequential(nn.Linear(4, 6), nn.BatchNorm1d(6), nn.ReLU(), nn.Linear(6, 2))

    m1, m2 = make(), make()
    c = ember.compile(m2)
    x = _x(8, 4)
    for _ in range(3):
        for m in (m1, c):
            m.zero_grad()
            m(x).pow(2).sum().backward()
    for (n, a), (_, b) in zip(m1.state_dict().items(), m2.state_dict().items()):
        assert np.array_equal(a.numpy(), b.numpy()), n
    for p, q in zip(m1.parameters(), m2.parameters()):
        assert np.array_equal(p.grad.numpy(), q.grad.numpy())
    # batch_norm's statistics are one recorded kernel: the whole step compiles
    assert c.forward.entries[0].failure is None


def test_steady_state_memory_does_not_grow():
    import tracemalloc

    ember.manual_seed(0)
    m = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 2))
    c = ember.compile(m)
    opt = ember.optim.SGD(m.parameters(), lr=0.01)
    x = _x(32, 64)  # one step's activations are ~32 KB: a leak of them would show

    def step():
        opt.zero_grad()
        c(x).sum().backward()
        opt.step()

    for _ in range(5):
        step()
    tracemalloc.start()
    step()
    first = tracemalloc.get_traced_memory()[0]
    for _ in range(30):
        step()
    grown = tracemalloc.get_traced_memory()[0] - first
    tracemalloc.stop()
    assert grown < 40_000, grown


def test_data_computed_outside_the_op_table_is_never_frozen():
    def f(x):
        return x + ember.from_numpy(x._data * 2)  # NumPy on the data: invisible to capture

    g = ember.compile(f)
    for seed in range(3):
        x = _x(3, seed=seed)
        _same(g(x), f(x))
    assert "outside the op table" in g._ember_compiled.entries[0].failure


def test_backward_only_dependence_on_outside_data_is_caught():
    from ember.autograd import Function

    class Sign(Function):  # a custom Function: its node is no op-table node
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            return g

    f = ember.compile(lambda x: Sign.apply(x).sum())
    for seed in range(3):
        x = _x(3, grad=True, seed=seed)
        f(x).backward()
    assert f._ember_compiled.entries[0].failure is not None


# --- one IR: the generated code is emitted from the jit IR graph, after its passes


def test_codegen_consumes_the_jit_ir_after_dce_and_cse():
    from ember.jit import ir

    w = _x(4, 3, grad=True)

    def f(x):
        dead = x.exp()  # noqa: F841 (unused: DCE removes it)
        y = (x @ w).tanh()
        z = (x @ w).tanh()  # the same computation: CSE merges it
        return (y * z).sum() if x.sum() > 0 else y.sum()

    g = ember.compile(f)
    x = ember.from_numpy(np.abs(np.random.default_rng(0).standard_normal((2, 4))).astype("f"))
    for _ in range(2):
        w.grad = None
        got = g(x)
        got.backward()
    w2 = w.detach().clone().requires_grad_()
    y = (x @ w2).tanh()
    want = (y * y).sum()
    want.backward()
    _same(got, want)
    assert np.array_equal(w.grad.numpy(), w2.grad.numpy())
    e = g._ember_compiled.entries[0]
    assert isinstance(e.graph, ir.Graph) and isinstance(e.backward_graph, ir.Graph)
    kinds = [n.kind() for n in e.graph.nodes()]
    assert kinds.count("aten::matmul") == 1 and kinds.count("aten::tanh") == 1
    assert "aten::exp" not in kinds and "prim::Guard" in kinds
    assert "def forward" in e.source and "tanh" in e.source
    e.graph.lint()


def test_results_merged_by_cse_stay_distinct_arrays():
    g = ember.compile(lambda x: (x + 1, x + 1, (x + 1).t(), x * 2 + x * 2))
    x = _x(2, 3)
    for _ in range(2):
        a, b, c, d = g(x)
    assert np.array_equal(a.numpy(), b.numpy()) and not np.shares_memory(a.numpy(), b.numpy())
    a.add_(1)  # writing one result leaves the other as eager leaves it
    assert np.array_equal(b.numpy(), (x + 1).numpy())
    _same(c, (x + 1).t())
    _same(d, x * 2 + x * 2)
    kinds = [n.kind() for n in g._ember_compiled.entries[0].graph.nodes()]
    assert kinds.count("aten::add") == 4 and kinds.count("aten::mul") == 1  # x * 2 is merged


# --- max-pool indices and training batch norm: recorded kernels, one graph


def _train_pair(make, x, y, steps=3, loss=F.cross_entropy):
    m1, m2 = make(), make()
    c = ember.compile(m2)
    o1 = ember.optim.SGD(m1.parameters(), lr=0.05, momentum=0.9)
    o2 = ember.optim.SGD(m2.parameters(), lr=0.05, momentum=0.9)
    for step in range(steps):
        for m, o in ((m1, o1), (c, o2)):
            ember.manual_seed(step)  # the same dropout masks on both sides
            o.zero_grad()
            out = m(x)
            loss(out, y).backward()
            o.step()
        for p, q in zip(m1.parameters(), m2.parameters()):
            assert np.array_equal(p.grad.numpy(), q.grad.numpy())
    for (n, a), (_, b) in zip(m1.state_dict().items(), m2.state_dict().items()):
        assert np.array_equal(a.numpy(), b.numpy()), n
    return m1, m2, c


def _lenet():
    ember.manual_seed(0)
    return nn.Sequential(
        nn.Conv2d(1, 4, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(4, 6, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
        nn.Linear(6 * 5 * 5, 16), nn.ReLU(), nn.Dropout(0.2), nn.Linear(16, 10),
    )  # fmt: skip


class _Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 4, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(4)
        self.conv2 = nn.Conv2d(4, 4, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(4)
        self.short = nn.Conv2d(3, 4, 1, bias=False)
        self.head = nn.Linear(4, 5)

    def forward(self, x):
        h = F.relu(self.bn1(self.conv1(x)))
        h = F.relu(self.bn2(self.conv2(h)) + self.short(x))
        h = F.max_pool2d(h, 2)
        return self.head(F.adaptive_avg_pool2d(h, 1).flatten(1))


def _resnet():
    ember.manual_seed(0)
    return _Block()


def test_lenet_training_compiles_in_one_graph_bit_equal():
    x, y = _x(4, 1, 28, 28), ember.tensor([1, 7, 3, 0])
    _m1, _m2, c = _train_pair(_lenet, x, y)
    (e,) = c.forward.entries
    assert e.failure is None and e.backward_source
    assert any("max_indices" in n.kind() for n in e.graph.nodes())


def test_resnet_block_training_batchnorm_bit_equal_and_stats_as_eager():
    x, y = _x(4, 3, 8, 8), ember.tensor([0, 1, 4, 2])
    m1, m2, c = _train_pair(_resnet, x, y)
    (e,) = c.forward.entries
    assert e.failure is None
    assert m2.bn1.num_batches_tracked.item() == 3
    for a, b in ((m1.bn1, m2.bn1), (m1.bn2, m2.bn2)):  # versions as eager's (no bump: torch's)
        assert a.running_var._version == b.running_var._version
        assert a.num_batches_tracked._version == b.num_batches_tracked._version
    # eval mode: a second entry (training flags are guards), running statistics read, values
    m1.eval()
    c.eval()
    for _ in range(2):
        with ember.no_grad():
            _same(c(x), m1(x))
    assert len(c.forward.entries) == 2 and c.forward.entries[1].failure is None


def test_batchnorm_eval_buffers_read_afresh():
    ember.manual_seed(0)
    m = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4)).eval()
    c = ember.compile(m)
    x = _x(5, 3)
    with ember.no_grad():
        for _ in range(2):
            c(x)
        m[1].running_var.mul_(3.0)  # a buffer written between calls: no stale statistics
        m[1].running_mean.add_(1.0)
        _same(c(x), m(x))
    assert c.forward.entries[0].failure is None


def test_batchnorm_cumulative_average_stays_eager_correct():
    def make():
        ember.manual_seed(0)
        return nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4, momentum=None))

    x, y = _x(6, 3), ember.tensor([0, 1, 2, 3, 0, 1])
    _train_pair(make, x, y, steps=4)  # factor 1/n is read from a tensor: a guard per step


def test_max_pool_indices_returned_and_adaptive_max_pool():
    def f(x):
        v, i = F.max_pool2d(x, 2, return_indices=True)
        a, j = F.adaptive_max_pool2d(x, (3, 2), return_indices=True)
        return v * 2, i, a.sum(), j

    g = ember.compile(f)
    for seed in range(3):
        x = _x(2, 3, 6, 6, grad=True, seed=seed)
        x2 = x.detach().clone().requires_grad_()
        got, want = g(x), f(x2)
        _same(got, want)
        (got[0].sum() + got[2]).backward()
        (want[0].sum() + want[2]).backward()
        assert np.array_equal(x.grad.numpy(), x2.grad.numpy())
    assert g._ember_compiled.entries[0].failure is None


def test_compiled_batchnorm_running_stats_match_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    xs = [rng.standard_normal((8, 3, 4, 4)).astype("f") for _ in range(3)]
    ember.manual_seed(0)
    bn = nn.BatchNorm2d(3)
    c = ember.compile(bn)
    tb = torch.nn.BatchNorm2d(3)
    for a in xs:
        y = c(ember.from_numpy(a))
        ty = tb(torch.from_numpy(a))
        np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(bn.running_mean.numpy(), tb.running_mean.numpy(), rtol=1e-6)
    np.testing.assert_allclose(bn.running_var.numpy(), tb.running_var.numpy(), rtol=1e-6)
    assert bn.num_batches_tracked.item() == tb.num_batches_tracked.item() == 3
    assert c.forward.entries[0].failure is None


def test_functional_batch_norm_updates_running_stats_once_per_call():
    rm, rv = ember.zeros(3), ember.ones(3)
    rm2, rv2 = ember.zeros(3), ember.ones(3)
    f = ember.compile(lambda x, m, v: F.batch_norm(x, m, v, training=True, momentum=0.3))
    for seed in range(3):
        x = _x(5, 3, seed=seed)
        _same(f(x, rm, rv), F.batch_norm(x, rm2, rv2, training=True, momentum=0.3))
        assert np.array_equal(rm.numpy(), rm2.numpy()) and np.array_equal(rv.numpy(), rv2.numpy())
    assert f._ember_compiled.entries[0].failure is None


# --- inlined kernels (kernels.py): the NumPy calls the ops' kernels make, bit-equal


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_inlined_linear_relu_kernels_bit_equal(dtype):
    ember.manual_seed(0)
    m = nn.Sequential(nn.Linear(7, 9), nn.ReLU(), nn.Linear(9, 3))
    m = m.to(ember.float64 if dtype is np.float64 else ember.float32)
    c = ember.compile(m)
    for seed in range(3):
        x = _x(4, 7, dtype=dtype, seed=seed)
        m.zero_grad()
        got = c(x)
        got.pow(2).sum().backward()
        gw = [p.grad.numpy().copy() for p in m.parameters()]
        m.zero_grad()
        want = m(x)
        want.pow(2).sum().backward()
        _same(got, want)
        for a, p in zip(gw, m.parameters()):
            assert np.array_equal(a, p.grad.numpy())
        with ember.no_grad():
            _same(c(x[:1]), m(x[:1]))
    src = c.forward.entries[0].source
    assert "np.matmul(" in src and "np.maximum(" in src and ".T" in src


@pytest.mark.parametrize(
    "fn",
    [
        lambda x, w: x.sin().sum(),  # the gradient of sum: one value broadcast
        lambda x, w: (x.sin() * w).sum(),  # a full gradient array
        lambda x, w: (x * w).sin().mean(),  # both sides of mul need a gradient
        lambda x, w: (x * x).sin().sum(),  # x * x: the shortcut (generic path)
        lambda x, w: (x * 1.5 + 2).sin().sum(),  # a scalar factor
    ],
)
def test_inlined_backward_kernels_bit_equal(fn):
    g = ember.compile(fn)
    for seed in range(3):
        x, w = _x(5, 3, grad=True, seed=seed), _x(5, 3, grad=True, seed=seed + 7)
        x2 = x.detach().clone().requires_grad_()
        w2 = w.detach().clone().requires_grad_()
        got, want = g(x, w), fn(x2, w2)
        _same(got, want)
        got.backward()
        want.backward()
        for a, b in ((x, x2), (w, w2)):
            assert (a.grad is None) == (b.grad is None)
            if a.grad is not None:
                assert np.array_equal(a.grad.numpy(), b.grad.numpy())
    e = g._ember_compiled.entries[0]
    assert e.failure is None and "np.cos(" in e.backward_source


def test_entry_runner_rebuilds_structures_views_and_versions():
    def f(x, k, d):
        x.mul_(2)
        return {"v": x.view(-1), "n": k, 3: [x.t(), None]}, d["a"] + 1

    g = ember.compile(f)
    for seed in range(3):
        a, b = _x(2, 3, seed=seed), _x(2, 3, seed=seed)
        d = {"a": _x(2, seed=seed + 1)}
        got, want = g(a, 7, d), f(b, 7, d)
        _same(got, want)
        assert a._version == b._version
        assert got[0]["v"]._base is a and got[0][3][0]._base is a
        got[0]["v"][0] = 100.0  # a view of the input, as in eager
        assert a[0, 0].item() == 100.0
    assert g._ember_compiled.entries[0].failure is None


# --- graph breaks split a module: its own code eager, its children compiled


class _Breaks(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Sequential(nn.Linear(4, 8), nn.ReLU())
        self.b = nn.Linear(8, 3)
        self.seen = []

    def forward(self, x):
        h = self.a(x)
        self.seen.append(float(h.sum()))  # a side effect on a Python object: a break
        return self.b(h).tanh()


def test_graph_break_splits_module_into_compiled_children():
    def make():
        ember.manual_seed(0)
        return _Breaks()

    m1, m2 = make(), make()
    c = ember.compile(m2)
    for seed in range(4):
        x = _x(5, 4, seed=seed)
        for m in (m1, m2):
            m.zero_grad()
        want = m1(x)
        got = c(x)
        _same(got, want)
        want.sum().backward()
        got.sum().backward()
        for p, q in zip(m1.parameters(), m2.parameters()):
            assert np.array_equal(p.grad.numpy(), q.grad.numpy())
    assert m1.seen == m2.seen[: len(m1.seen)] and len(m2.seen) == len(m1.seen)
    (e,) = c.forward.entries
    assert "list.append" in e.failure and e.split is not None
    kids = c.forward.children
    assert len(kids) == 2 and all(k.entries[0].failure is None for k in kids.values())
    assert "forward" not in m2.a.__dict__  # the children are left as they were
    out = ember._dynamo.explain(make())(_x(5, 4))
    assert out.graph_break_count == 1 and out.graph_count == 2


def test_fullgraph_module_break_still_raises():
    with pytest.raises(Unsupported, match="list.append"):
        ember.compile(_Breaks(), fullgraph=True)(_x(2, 4))


class _Prints(nn.Module):
    def forward(self, x):
        print("inside")
        return x * 2


def test_graph_break_in_a_child_keeps_its_siblings_compiled(capsys):
    ember.manual_seed(0)
    m = nn.Sequential(nn.Linear(3, 4), _Prints(), nn.Sequential(nn.Linear(4, 2), nn.Tanh()))
    c = ember.compile(m)
    for seed in range(4):
        x = _x(2, 3, seed=seed)
        _same(c(x), m(x))
    assert capsys.readouterr().out.count("inside") == 8  # once per call, as eager
    kids = list(c.forward.children.values())
    assert [k.entries[0].failure is None for k in kids] == [True, False, True]
    assert "print" in kids[1].entries[0].failure


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_python_numbers_as_0d_constants_bit_equal(dtype):
    def f(x):
        y = (x * 16777217 + 0.1) / 3 - 2**60  # numbers NumPy rounds to the array's dtype
        return (y * 1.0000001).sin() * 7

    g = ember.compile(f)
    for seed in range(3):
        x = _x(6, dtype=dtype, seed=seed)
        _same(g(x), f(x))
    e = g._ember_compiled.entries[0]
    assert e.failure is None and "_z0" in e.source


def test_reads_around_a_kernel_writing_running_stats_are_not_merged():
    rm, rv = ember.zeros(3), ember.ones(3)

    def f(x):
        a = rm * 2
        y = F.batch_norm(x, rm, rv, training=True)
        return y, a - rm * 2  # the statistics moved in between: not zero

    g = ember.compile(f)
    for seed in range(3):
        before = rm.detach().clone()
        y, d = g(_x(4, 3, seed=seed))
        assert np.array_equal(d.numpy(), (before * 2 - rm * 2).numpy()) and d.abs().sum() > 0
    assert g._ember_compiled.entries[0].failure is None

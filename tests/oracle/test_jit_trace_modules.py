"""Traced modules as torch prints them: ``prim::CallMethod`` per submodule call (value numbers
and names included), each called submodule's own graph, ``inlined_graph``; and traces that
record arguments as given (``aten::size``, ``view`` sizes, ``softmax`` dims, ``flatten``)."""

import re
import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def _text(g) -> str:
    """Printed graph without source ranges (torch's name its library files) and without the
    ``___torch_mangle_N.`` a class gets when traced twice in one process."""
    return re.sub(r"___torch_mangle_\d+\.", "", re.sub(r" # [^\n]*", "", str(g)))


def _trace(lib, m, *arrays):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return lib.jit.trace(m, tuple(lib.tensor(a) for a in arrays))


def _subgraphs(t, prefix="") -> dict:
    out = {}
    for name, sub in t.named_children():
        try:
            out[prefix + name] = _text(sub.graph)
        except RuntimeError:
            continue  # a submodule never called has no forward (as torch's)
        out.update(_subgraphs(sub, prefix + name + "."))
    return out


def _mlp(nn, F):
    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(4, 8)
            self.fc2 = nn.Linear(8, 2)

        def forward(self, x):
            return self.fc2(F.relu(self.fc1(x)))

    return MLP()


def _cnn(nn, F):
    class CNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(1, 4, 3)
            self.bn = nn.BatchNorm2d(4)
            self.pool = nn.MaxPool2d(2)
            self.fc = nn.Linear(36, 3)

        def forward(self, x):
            x = self.pool(F.relu(self.bn(self.conv(x))))
            return self.fc(x.flatten(1))

    return CNN().eval()


def _nested(nn, F):
    return nn.Sequential(nn.Linear(4, 4), nn.Sequential(nn.ReLU(), nn.Linear(4, 2)))


def _nested3(nn, F):
    inner = nn.Sequential(nn.Tanh(), nn.Linear(4, 2))
    return nn.Sequential(nn.Linear(4, 4), nn.Sequential(nn.ReLU(), inner))


def _twice(nn, F):
    class Twice(nn.Module):
        def __init__(self):
            super().__init__()
            self.act = nn.ReLU()

        def forward(self, x):
            return self.act(self.act(x) - 1)

    return Twice()


def _pairs(nn, F):
    class Add(nn.Module):
        def forward(self, x, y):
            return x + y

    class Split(nn.Module):
        def forward(self, x):
            return x.relu(), x.tanh()

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.add = Add()
            self.split = Split()
            self.w = nn.Parameter(F.relu(nn.Linear(4, 4).weight[0]))

        def forward(self, x, y):
            a, b = self.split(self.add(x * self.w, y))
            return a * b

    return Net()


def _tied(nn, F):
    class Tied(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Linear(4, 4)
            self.head = nn.ReLU()

        def forward(self, x):
            return self.head(F.linear(x, self.emb.weight))  # a child's weight, read here

    return Tied()


def _passthrough(nn, F):
    class Through(nn.Module):
        def __init__(self):
            super().__init__()
            self.same = nn.Identity()
            self.drop = nn.Dropout(0.5)
            self.fc = nn.Linear(4, 4)

        def forward(self, x):
            return self.fc(self.drop(self.same(x))) + x

    return Through().eval()


def _keywords(nn, F):
    class Scale(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(F.relu(nn.Linear(4, 4).weight[1]))

        def forward(self, x, k: int):
            return x * self.w * k

    class Outer(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)
            self.scale = Scale()

        def forward(self, x):
            return self.scale(self.fc(input=x), 3)

    return Outer()


def _resnet(nn, F):
    class Block(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.conv1 = nn.Conv2d(c, c, 3, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(c)
            self.conv2 = nn.Conv2d(c, c, 3, padding=1, bias=False)
            self.bn2 = nn.BatchNorm2d(c)

        def forward(self, x):
            h = F.relu(self.bn1(self.conv1(x)))
            return F.relu(self.bn2(self.conv2(h)) + x)

    return nn.Sequential(
        nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), Block(4),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(4, 3),
    ).eval()  # fmt: skip


def _train_bn(nn, F):
    return nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2), nn.ReLU()).train()


def _none_outputs(nn, F):
    class One(nn.Module):
        def forward(self, x):
            return (x * 2,)

    class WithNone(nn.Module):
        def forward(self, x):
            return (x * 2, None)

    class NoneBetween(nn.Module):
        def forward(self, x):
            return (x * 2, None, x + 1)

    class Outer(nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b, self.c = One(), WithNone(), NoneBetween()

        def forward(self, x):
            z, _ = self.b(self.a(x)[0])
            p, _, q = self.c(z)
            return p + q

    return Outer()


_MODELS = {
    "mlp": (_mlp, [(3, 4)]),
    "cnn": (_cnn, [(2, 1, 8, 8)]),
    "nested_sequential": (_nested, [(3, 4)]),
    "three_levels": (_nested3, [(3, 4)]),
    "called_twice": (_twice, [(3, 4)]),
    "two_inputs_tuple_output_param": (_pairs, [(3, 4), (3, 4)]),
    "tied_weight": (_tied, [(3, 4)]),
    "identity_and_eval_dropout": (_passthrough, [(3, 4)]),
    "keyword_and_number_arguments": (_keywords, [(3, 4)]),
    "resnet_block": (_resnet, [(2, 1, 6, 6)]),
    "batchnorm_in_training": (_train_bn, [(2, 1, 5, 5)]),
    "child_tuples_with_none": (_none_outputs, [(3, 4)]),
}


def _both(name):
    make, shapes = _MODELS[name]
    tm = make(torch.nn, torch.nn.functional)
    em = make(ember.nn, ember.nn.functional)
    state = {k: ember.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()}
    em.load_state_dict(state)
    rng = np.random.default_rng(1)
    arrays = [rng.normal(size=s).astype(np.float32) for s in shapes]
    return em, tm, arrays


@pytest.mark.parametrize("name", list(_MODELS))
def test_module_graph_with_call_methods_matches_torch(name):
    em, tm, arrays = _both(name)
    te, tt = _trace(ember, em, *arrays), _trace(torch, tm, *arrays)
    assert _text(te.graph) == _text(tt.graph)
    assert te.graph.findNode("prim::CallMethod") is not None
    te.graph.lint()


@pytest.mark.parametrize("name", list(_MODELS))
def test_each_called_submodule_has_its_graph_as_torch(name):
    em, tm, arrays = _both(name)
    te, tt = _trace(ember, em, *arrays), _trace(torch, tm, *arrays)
    mine, theirs = _subgraphs(te), _subgraphs(tt)
    assert set(mine) == set(theirs)
    assert mine == theirs


@pytest.mark.parametrize("name", list(_MODELS))
def test_inlined_graph_matches_torch(name):
    em, tm, arrays = _both(name)
    te, tt = _trace(ember, em, *arrays), _trace(torch, tm, *arrays)
    assert _text(te.inlined_graph) == _text(tt.inlined_graph)


@pytest.mark.parametrize("name", list(_MODELS))
def test_traced_module_and_its_children_run_their_graphs(name):
    em, tm, arrays = _both(name)
    te, tt = _trace(ember, em, *arrays), _trace(torch, tm, *arrays)
    rng = np.random.default_rng(2)
    new = [rng.normal(size=a.shape).astype(np.float32) for a in arrays]
    got = te(*[ember.tensor(a) for a in new])
    assert ember.equal(got, em(*[ember.tensor(a) for a in new]))  # same kernels as eager
    want = tt(*[torch.tensor(a) for a in new])
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-5, atol=1e-6)


def _codes(t, prefix="") -> dict:
    out = {}
    for name, sub in t.named_children():
        try:
            out[prefix + name] = sub.code
        except (RuntimeError, AttributeError):
            continue  # never called: no forward (as torch's)
        out.update(_codes(sub, prefix + name + "."))
    return out


@pytest.mark.parametrize("name", list(_MODELS))
def test_traced_module_code_calls_children_as_torch(name):
    em, tm, arrays = _both(name)
    te, tt = _trace(ember, em, *arrays), _trace(torch, tm, *arrays)
    assert te.code == tt.code  # byte for byte: ``(child).forward(x, )``, ``forward1``
    assert "forward(" in te.code
    # each called child's own code, where torch's printer and ember's agree on every line
    # (torch writes an eval dropout into its return; ember gives it a statement)
    mine, theirs = _codes(te), _codes(tt)
    for k, text in theirs.items():
        if "dropout" not in text and k in mine:
            assert mine[k] == text, k


def test_submodule_graph_runs_and_cnn_freezes():
    em, tm, arrays = _both("cnn")
    te = _trace(ember, em, *arrays)
    x = ember.tensor(arrays[0])
    assert ember.equal(te.conv(x), em.conv(x))  # the child runs its own graph
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        frozen = ember.jit.freeze(te)
    text = str(frozen.graph)
    assert "prim::CallMethod" not in text and "prim::GetAttr" not in text
    assert "aten::batch_norm" not in text
    np.testing.assert_allclose(frozen(x).numpy(), em(x).detach().numpy(), rtol=1e-4, atol=1e-5)


def test_repeat_call_is_forward1_as_torch():
    em, tm, arrays = _both("called_twice")
    te = _trace(ember, em, *arrays)
    names = [n.s("name") for n in te.graph.findAllNodes("prim::CallMethod")]
    assert names == ["forward", "forward1"]


# --- traces record what torch records


def f_view_size(x):
    return x.view(x.size(0), -1)


def f_flatten(x):
    return ember_or_torch(x).flatten(x, 1)


def f_reshape(x):
    return x.reshape(-1, 4)


def f_softmax(x):
    return x.softmax(-1) + x.log_softmax(dim=1)


def f_flatten_method(x):
    return x.flatten()


def f_shape_locals(x):
    b, c = x.shape[0], x.shape[1]
    return x.view(b, c, -1).sum(-1)


def f_view_minus_one(x):
    return x.view(-1).mean(0, keepdim=True)


def f_size_arithmetic(x):
    b = x.size(0)
    return x.view(b * 2, -1) + x.size(1) // 2


def f_shape_arithmetic(x):
    n, c, k = x.shape
    return x.reshape(n * c * k) * (c - 1) + (2 * n)


def ember_or_torch(x):
    return torch if isinstance(x, torch.Tensor) else ember


_FUNCS = [
    f_view_size,
    f_flatten,
    f_reshape,
    f_softmax,
    f_flatten_method,
    f_shape_locals,
    f_view_minus_one,
    f_size_arithmetic,
    f_shape_arithmetic,
]


@pytest.mark.parametrize("fn", _FUNCS, ids=[f.__name__ for f in _FUNCS])
def test_trace_records_arguments_as_given(fn):
    x = np.random.default_rng(3).normal(size=(2, 4, 2)).astype(np.float32)
    te, tt = _trace(ember, fn, x), _trace(torch, fn, x)
    assert _text(te.graph) == _text(tt.graph)


@pytest.mark.parametrize("fn", [f_view_size, f_size_arithmetic, f_shape_arithmetic])
def test_traced_size_follows_the_input_as_torch(fn):
    x = np.ones((2, 4, 2), np.float32)
    te, tt = _trace(ember, fn, x), _trace(torch, fn, x)
    y = np.arange(48, dtype=np.float32).reshape(6, 4, 2)
    got, want = te(ember.tensor(y)), tt(torch.tensor(y))
    assert tuple(got.shape) == tuple(want.shape)
    assert got.dtype == ember.float32
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_traced_child_is_one_call_as_torch():
    def make(lib):
        nn = lib.nn
        x = lib.ones(2, 4)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            inner = lib.jit.trace(nn.Sequential(nn.Linear(4, 4), nn.ReLU()), x)

        class Outer(nn.Module):
            def __init__(self):
                super().__init__()
                self.sub = inner

            def forward(self, x):
                return self.sub(x) * 2

        return Outer()

    te = _trace(ember, make(ember), np.ones((2, 4), np.float32))
    tt = _trace(torch, make(torch), np.ones((2, 4), np.float32))

    def shape(g):
        return [(n.kind(), n.s("name") if n.kind() == "prim::CallMethod" else None)
                for n in g.nodes()]  # fmt: skip

    assert shape(te.graph) == shape(tt.graph)
    types = [str(n.output().type()) for n in te.graph.findAllNodes("prim::GetAttr")]
    assert _text(types[0]) == "__torch__.torch.nn.modules.container.Sequential"
    x = ember.randn(2, 4)
    assert ember.equal(te(x), te.sub(x) * 2)


def test_scripted_child_keeps_its_control_flow_in_a_trace_as_torch():
    def make(lib):
        nn = lib.nn

        class Gate(nn.Module):
            def forward(self, x):
                if x.sum() > 0:
                    return x
                else:
                    return -x

        class Cell(nn.Module):
            def __init__(self):
                super().__init__()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    self.dg = lib.jit.script(Gate())
                self.linear = nn.Linear(4, 4)

            def forward(self, x, h):
                return lib.tanh(self.dg(self.linear(x)) + h)

        return Cell()

    tm, em = make(torch), make(ember)
    em.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    x, h = np.full((3, 4), 5.0, np.float32), np.zeros((3, 4), np.float32)
    te, tt = _trace(ember, em, x, h), _trace(torch, tm, x, h)
    for sign in (1.0, -1.0):
        got = te(ember.tensor(sign * x), ember.tensor(h))
        want = tt(torch.tensor(sign * x), torch.tensor(h))
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-5)


def test_traced_training_batchnorm_counts_batches_as_torch():
    em, tm, arrays = _both("batchnorm_in_training")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        te = ember.jit.trace(em, ember.tensor(arrays[0]), check_trace=False)
        tt = torch.jit.trace(tm, torch.tensor(arrays[0]), check_trace=False)
    for _ in range(2):  # the graph counts batches too (torch records the add_)
        te(ember.tensor(arrays[0]))
        tt(torch.tensor(arrays[0]))
    assert int(em[1].num_batches_tracked) == int(tm[1].num_batches_tracked) == 3
    np.testing.assert_allclose(
        em[1].running_mean.numpy(), tm[1].running_mean.numpy(), rtol=1e-5, atol=1e-6
    )


def test_transformer_layer_child_calls_take_what_their_graphs_take():
    # MultiheadAttention returns ``(out, None)``: torch's tracer drops the None, so the call is
    # one Tensor and the layer's graph takes only ``x`` (ember's used to take a dangling input)
    def make(lib):
        lib.manual_seed(0)
        return lib.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0).eval()

    tm = make(torch)
    em = make(ember)
    em.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    x = np.random.default_rng(0).normal(size=(3, 2, 8)).astype(np.float32)
    wrap_t = torch.nn.Sequential(tm)
    wrap_e = ember.nn.Sequential(em)
    te, tt = _trace(ember, wrap_e, x), _trace(torch, wrap_t, x)

    # (the call's number counts the attention's ops, which ember records differently)
    def numbered(g):
        return re.sub(r"%\d+", "%N", _text(g))

    assert numbered(te.graph) == numbered(tt.graph)
    assert (
        len(list(getattr(te, "0").graph.inputs()))
        == len(list(getattr(tt, "0").graph.inputs()))
        == 2
    )
    kinds = [
        (n.kind(), n.output().type().kind())
        for n in getattr(te, "0").graph.findAllNodes("prim::CallMethod")
    ]
    assert kinds == [
        (n.kind(), n.output().type().kind())
        for n in getattr(tt, "0").graph.findAllNodes("prim::CallMethod")
    ]
    for node in getattr(te, "0").graph.findAllNodes("prim::CallMethod"):
        name = node.inputs()[0].node().s("name")
        callee = getattr(getattr(te, "0"), name).graph
        assert len(list(node.inputs())) == len(list(callee.inputs())), name
    # another shape: the attention's size reads are graph values, as torch's
    x2 = np.random.default_rng(1).normal(size=(5, 3, 8)).astype(np.float32)
    got = te(ember.tensor(x2))
    np.testing.assert_allclose(
        got.detach().numpy(), tt(torch.tensor(x2)).detach().numpy(), rtol=1e-5, atol=1e-5
    )


def test_layer_class_types_name_torchs_files():
    # ember keeps MultiheadAttention in attention.py, torch in activation.py: the class type
    # is torch's (``__torch__.torch.nn.modules.activation.MultiheadAttention``)
    def make(lib):
        lib.manual_seed(0)
        return lib.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0).eval()

    x = np.random.default_rng(0).normal(size=(3, 2, 8)).astype(np.float32)
    te, tt = _trace(ember, make(ember), x), _trace(torch, make(torch), x)

    def types(m):
        return [repr(n.output().type()) for n in m.graph.findAllNodes("prim::GetAttr")]

    want = [re.sub(r"___torch_mangle_\d+\.", "", t) for t in types(tt)]
    assert [re.sub(r"___torch_mangle_\d+\.", "", t) for t in types(te)] == want
    assert "__torch__.torch.nn.modules.activation.MultiheadAttention" in want
    assert ember.jit._names.torch_module(ember.nn.LazyLinear) == "torch.nn.modules.linear"

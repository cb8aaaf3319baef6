"""Traced graphs against torch's: printed IR (value names included), node kinds, outputs and
gradients; the traced object runs its graph."""

import re
import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

_RNG = np.random.default_rng(0)


def _strip(g) -> str:
    """The graph's text without source ranges (torch's name library files ember has not)."""
    return re.sub(r" # [^\n]*", "", str(g))


def _unmangle(text: str) -> str:
    """Drop torch's ``___torch_mangle_N.`` (a class traced twice in one process gets one)."""
    return re.sub(r"___torch_mangle_\d+\.", "", text)


def _trace(lib, fn, *arrays):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return lib.jit.trace(fn, tuple(lib.tensor(a) for a in arrays))


def f_arith(x, y):
    z = x * 2 + y
    return z.relu(), z.sum()


def f_chain(x):
    h = x * 2
    a = h.relu()
    b = ember_or_torch(x).tanh(a)
    c = b.view(3, 2)
    return c + 1


def f_reduce(x):
    return x[0] + x.sum(1, keepdim=True).mean() - 1


def f_mix(x, y):
    a = x * 2.5
    c = (a / y).sigmoid()
    return c.t().matmul(y)


def f_softmax_cat(x, y):
    return (x.softmax(1) - y).exp()  # a negative dim is normalised in ember's graph


def ember_or_torch(x):
    return torch if isinstance(x, torch.Tensor) else ember


_CORPUS = [
    (f_arith, [(2, 3), (2, 3)]),
    (f_chain, [(2, 3)]),
    (f_reduce, [(2, 3)]),
    (f_mix, [(2, 3), (2, 3)]),
    (f_softmax_cat, [(2, 3), (2, 3)]),
]


@pytest.mark.parametrize("fn,shapes", _CORPUS, ids=[f.__name__ for f, _ in _CORPUS])
def test_traced_function_graph_matches_torch(fn, shapes):
    arrays = [_RNG.normal(size=s).astype(np.float32) for s in shapes]
    te, tt = _trace(ember, fn, *arrays), _trace(torch, fn, *arrays)
    assert _strip(te.graph) == _strip(tt.graph)
    te.graph.lint()
    # source ranges name the user's lines, as torch's do
    mine = re.findall(r"# (\S+)", str(te.graph))
    theirs = re.findall(r"# (\S+)", str(tt.graph))
    assert mine == theirs
    # the traced function runs its graph: same values as eager ember, bit for bit
    fresh = [_RNG.normal(size=s).astype(np.float32) for s in shapes]
    out = te(*(ember.tensor(a) for a in fresh))
    eager = fn(*(ember.tensor(a) for a in fresh))
    for a, b in zip(
        out if isinstance(out, tuple) else [out], eager if isinstance(eager, tuple) else [eager]
    ):
        assert np.array_equal(a.numpy(), b.numpy())
    ref = tt(*(torch.tensor(a) for a in fresh))
    for a, b in zip(
        out if isinstance(out, tuple) else [out], ref if isinstance(ref, tuple) else [ref]
    ):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6)


def test_trace_freezes_control_flow_as_torch():
    def f(x):
        return x * 2 if x.sum() > 0 else x - 1

    def traced(lib):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            t = lib.jit.trace(f, lib.ones(3))
        return t, [str(m.message) for m in w if type(m.message).__name__ == "TracerWarning"]

    (te, we), (tt, wt) = traced(ember), traced(torch)
    assert we == wt and len(we) == 2 and "Python boolean" in we[0]  # trace + check
    neg = -np.ones(3, np.float32)
    assert te(ember.tensor(neg)).tolist() == tt(torch.tensor(neg)).tolist() == [-2.0] * 3
    assert _strip(te.graph) == _strip(tt.graph)


def _net(lib):
    nn = lib.nn
    return nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.ReLU(), nn.Linear(4, 2))


def test_traced_module_runs_graph_and_trains():
    tm = _net(torch)
    em = _net(ember)
    em.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    x = _RNG.normal(size=(5, 3)).astype(np.float32)
    te, tt = _trace(ember, em.eval(), x), _trace(torch, tm.eval(), x)
    skip = ("prim::Constant", "prim::GetAttr")
    kinds = [n.kind() for n in te.inlined_graph.nodes() if n.kind() not in skip]
    tkinds = [n.kind() for n in tt.inlined_graph.nodes() if n.kind() not in skip]
    assert sorted(kinds) == sorted(tkinds)
    assert te.inlined_graph.findNode("aten::batch_norm") is not None
    assert te.inlined_graph.findNode("aten::addmm") is None  # linear stays one node
    te.train()
    xe = ember.tensor(x)
    te(xe).pow(2).sum().backward()
    tt.train()
    tt(torch.tensor(x)).pow(2).sum().backward()
    np.testing.assert_allclose(
        em[0].weight.grad.numpy(), tm[0].weight.grad.numpy(), rtol=1e-4, atol=1e-5
    )
    assert set(te.state_dict()) == set(tt.state_dict())


def test_traced_module_graph_header_as_torch():
    class Net(ember.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = ember.nn.Linear(3, 4)

        def forward(self, x):
            return self.fc(x).relu()

    t = _trace(ember, Net(), np.ones((2, 3), np.float32))
    text = _unmangle(str(t.graph))
    assert text.startswith("graph(%self.1 : __torch__.")
    assert (
        '%fc : __torch__.torch.nn.modules.linear.Linear = prim::GetAttr[name="fc"](%self.1)' in text
    )
    assert 'prim::CallMethod[name="forward"](%fc, %x)' in text
    assert "aten::linear(%x, %weight, %bias), scope: __module.fc" in str(t.fc.graph)


def test_trace_rejects_non_tensor_inputs():
    with pytest.raises(RuntimeError, match="Type 'str' cannot be traced"):
        ember.jit.trace(lambda x: x, ("a",))


def test_trace_records_in_place_writes_and_tuple_inputs():
    def f(pair):
        a, b = pair
        y = a.clone()
        y.add_(b)
        y[0] = 1.0
        return [y, a.exp()]

    xs = (ember.randn(3), ember.randn(3))
    te = ember.jit.trace(f, (xs,))
    kinds = [n.kind() for n in te.graph.nodes()]
    assert "prim::TupleUnpack" in kinds and "aten::add_" in kinds and "aten::copy_" in kinds
    ys = (ember.randn(3), ember.randn(3))
    assert all(ember.equal(a, b) for a, b in zip(te(ys), f(ys)))


def test_traced_layers_with_composites_run_their_graph():
    nn = ember.nn
    m = nn.Sequential(
        nn.Conv2d(1, 2, 3), nn.MaxPool2d(2), nn.BatchNorm2d(2), nn.ReLU(inplace=True),
        nn.Flatten(), nn.Linear(18, 4), nn.LayerNorm(4), nn.GELU(), nn.Dropout(0.1),
    ).eval()  # fmt: skip
    x = ember.randn(2, 1, 8, 8)
    t = _trace(ember, m, x.numpy())
    kinds = [n.kind() for n in t.inlined_graph.nodes() if n.kind().startswith("aten::")]
    assert kinds == [
        "aten::_convolution", "aten::max_pool2d", "aten::batch_norm", "aten::relu_",
        "aten::flatten" if "aten::flatten" in kinds else "aten::view", "aten::linear",
        "aten::layer_norm", "aten::gelu", "aten::dropout",
    ]  # fmt: skip
    y = ember.randn(2, 1, 8, 8)
    assert ember.equal(t(y), m(y))


def _dict_out(x):
    return {"a": x * 2, "b": x}


@pytest.mark.parametrize("strict", [True, False])
def test_dict_output_needs_strict_false_as_torch(strict):
    x = np.arange(3, dtype=np.float32)
    results = []
    for lib in (ember, torch):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                t = lib.jit.trace(_dict_out, (lib.tensor(x),), strict=strict)
        except RuntimeError as e:
            results.append(("error", str(e)))
            continue
        out = t(lib.tensor(x + 1))
        node = t.graph.findNode("prim::DictConstruct")
        results.append((str(node.output().type()), {k: v.tolist() for k, v in out.items()}))
    assert results[0] == results[1]
    assert (results[0][0] == "error") == strict


def test_non_tensor_output_error_as_torch():
    def f(x):
        return "a"

    msgs = []
    for lib in (ember, torch):
        with pytest.raises(RuntimeError) as info:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                lib.jit.trace(f, (lib.ones(2),))
        msgs.append(str(info.value))
    assert msgs[0] == msgs[1]

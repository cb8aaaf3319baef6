"""The IR passes, each alone on small graphs, and freezing of traced modules."""

import warnings

import numpy as np
import pytest

import ember
from ember import _C
from ember.jit import ir, passes
from ember.jit.executor import run

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def _graph():
    g = ir.Graph()
    return g, g.addInput("x")


def test_dce_keeps_effects_and_removes_dead_nodes():
    g, x = _graph()
    g.insertNode(g.create("aten::relu", [x]))  # dead
    g.insertNode(g.create("aten::add_", [x, x, g.insertConstant(1)]))  # in place: kept
    live = g.insertNode(g.create("aten::neg", [x]))
    g.registerOutput(live.output())
    _C._jit_pass_dce(g)
    assert [n.kind() for n in g.nodes()] == ["prim::Constant", "aten::add_", "aten::neg"]
    g.lint()


def test_cse_merges_equal_nodes_only():
    g, x = _graph()
    a = g.insertNode(g.create("aten::relu", [x])).output()
    b = g.insertNode(g.create("aten::relu", [x])).output()
    c = g.insertNode(g.create("aten::neg", [x])).output()
    d1 = g.insertNode(g.create("aten::dropout", [x, g.insertConstant(0.5), g.insertConstant(True)]))
    s = g.insertNode(g.create("aten::add", [a, b, g.insertConstant(1)]))
    g.registerOutput(s.output())
    g.registerOutput(c)
    g.registerOutput(d1.output())
    assert _C._jit_pass_cse(g) is True
    assert len(g.findAllNodes("aten::relu")) == 1
    assert s.inputs()[0] is s.inputs()[1]
    g.lint()
    assert _C._jit_pass_cse(g) is False


def test_constant_propagation_folds_values_and_if():
    g, x = _graph()
    two = g.insertConstant(ember.tensor([1.0, 2.0]))
    sq = g.insertNode(g.create("aten::mul", [two, two])).output()
    cond = g.insertNode(g.create("aten::gt", [g.insertConstant(3), g.insertConstant(2)]))
    cond.output().setType(ir.BoolType())
    n = g.insertNode(g.create("prim::If", [cond.output()]))
    for kind in ("aten::neg", "aten::relu"):
        b = n.addBlock()
        with g.insert_point_guard(b):
            b.registerOutput(g.insertNode(g.create(kind, [x])).output())
    out = g.insertNode(g.create("aten::add", [n.output(), sq, g.insertConstant(1)]))
    g.registerOutput(out.output())
    _C._jit_pass_constant_propagation(g)
    kinds = [m.kind() for m in g.nodes()]
    assert "prim::If" not in kinds and "aten::mul" not in kinds and "aten::relu" not in kinds
    assert kinds.count("aten::neg") == 1
    g.lint()
    (y,) = run(g, [ember.tensor([1.0, -1.0])])
    assert y.tolist() == [0.0, 5.0]


def test_peephole_identities_and_sizes():
    g = ir.Graph()
    t = ir.TensorType("torch.float32", (2, 3), (3, 1), False, "cpu")
    x = g.addInput("x", t)
    a = g.insertNode(g.create("aten::add", [x, g.insertConstant(0), g.insertConstant(1)]))
    a.output().setType(t)
    m = g.insertNode(g.create("aten::mul", [a.output(), g.insertConstant(1)]))
    m.output().setType(t)
    c = g.insertNode(g.create("aten::contiguous", [m.output()]))
    c.output().setType(t)
    s = g.insertNode(g.create("aten::size", [c.output(), g.insertConstant(1)]))
    s.output().setType(ir.IntType())
    g.registerOutput(c.output())
    g.registerOutput(s.output())
    assert _C._jit_pass_peephole(g) is None
    assert g.outputs()[0] is x
    assert g.outputs()[1].toIValue() == 3
    assert g.findNode("aten::add") is None and g.findNode("aten::contiguous") is None


def test_peephole_keeps_promoting_identities():
    g = ir.Graph()
    x = g.addInput("x", ir.TensorType("torch.int64", (2,), (1,), False, "cpu"))
    d = g.insertNode(g.create("aten::div", [x, g.insertConstant(1)]))
    d.output().setType(ir.TensorType("torch.float32", (2,), (1,), False, "cpu"))
    g.registerOutput(d.output())
    passes.peephole(g)
    assert g.findNode("aten::div") is not None


def test_inline_call_function():
    callee = ir.Graph()
    a = callee.addInput("a")
    callee.registerOutput(callee.insertNode(callee.create("aten::neg", [a])).output())
    g, x = _graph()
    call = g.insertNode(g.create("prim::CallMethod", [x]))
    call.s_("name", "forward")
    from ember.jit.passes.inline import set_callee

    set_callee(call, callee)
    g.registerOutput(call.output())
    _C._jit_pass_inline(g)
    assert [n.kind() for n in g.nodes()] == ["aten::neg"]
    assert g.findNode("aten::neg").inputs()[0] is x
    g.lint()


def test_remove_dropout():
    g, x = _graph()
    d = g.insertNode(g.create("aten::dropout", [x, g.insertConstant(0.5), g.insertConstant(False)]))
    g.registerOutput(d.output())
    passes.remove_dropout(g)
    passes.dce(g)
    assert g.outputs()[0] is x and g.findNode("aten::dropout") is None


def _cnn():
    nn = ember.nn
    return nn.Sequential(
        nn.Conv2d(2, 4, 3),
        nn.BatchNorm2d(4),
        nn.ReLU(),
        nn.Dropout(0.3),
        nn.Flatten(),
        nn.Linear(4 * 4 * 4, 3),
        nn.BatchNorm1d(3),
    )


def _trained_stats(m):
    for b in m.modules():
        if isinstance(b, ember.nn.modules.batchnorm._BatchNorm):
            b.running_mean.copy_(ember.randn(b.running_mean.shape))
            b.running_var.copy_(ember.rand(b.running_var.shape) + 0.5)
            b.weight.data.copy_(ember.randn(b.weight.shape))
    return m.eval()


def test_freeze_folds_conv_bn_and_drops_getattr():
    ember.manual_seed(0)
    m = _trained_stats(_cnn())
    x = ember.randn(2, 2, 6, 6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        traced = ember.jit.trace(m, x)
        frozen = ember.jit.freeze(traced)
    text = str(frozen.graph)
    assert "prim::GetAttr" not in text and "aten::batch_norm" not in text
    assert "aten::dropout" not in text
    frozen.graph.lint()
    np.testing.assert_allclose(frozen(x).numpy(), m(x).detach().numpy(), rtol=1e-4, atol=1e-5)
    # the original keeps its graph
    assert traced.inlined_graph.findNode("aten::batch_norm") is not None
    opt = ember.jit.optimize_for_inference(traced)
    assert opt.graph.findNode("aten::batch_norm") is None


def test_freeze_preserved_attrs_and_training_error():
    m = _trained_stats(_cnn())
    x = ember.randn(1, 2, 6, 6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        traced = ember.jit.trace(m, x)
        frozen = ember.jit.freeze(traced, preserved_attrs=["5"])
        assert frozen.graph.findNode("prim::GetAttr") is not None
        with pytest.raises(RuntimeError, match="eval mode"):
            ember.jit.freeze(
                ember.jit.trace(_cnn().train(), x.repeat(2, 1, 1, 1), check_trace=False)
            )


def test_unroll_constant_trip_loop():
    def f(x):
        y = x
        for i in range(3):
            y = y * 2 + i
        return y

    s = ember.jit.script(f)
    g = s.graph.copy()
    # the trip count becomes constant once the range is known
    loop = g.findNode("prim::Loop")
    assert loop is not None
    assert passes.unroll(g) is True
    assert g.findNode("prim::Loop") is None
    g.lint()
    assert len(g.findAllNodes("aten::mul")) == 3
    x = ember.randn(4)
    (y,) = run(g, [x])
    assert ember.equal(y, f(x))

    # a loop over a runtime count stays
    def h(x, n: int):
        for _ in range(n):
            x = x + 1
        return x

    g2 = ember.jit.script(h).graph.copy()
    assert passes.unroll(g2) is False and g2.findNode("prim::Loop") is not None

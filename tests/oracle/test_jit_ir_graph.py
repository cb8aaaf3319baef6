"""The IR built by hand prints as torch's ``torch._C.Graph`` built the same way."""

import pytest

import ember
from ember.jit.ir import Graph

torch = pytest.importorskip("torch")

_CONSTANTS = [
    lambda lib: 1.0,
    lambda lib: 0.5,
    lambda lib: 1e-5,
    lambda lib: 0.1,
    lambda lib: -0.0,
    lambda lib: 1e20,
    lambda lib: 3,
    lambda lib: True,
    lambda lib: "hi",
    lambda lib: None,
    lambda lib: [1, 2],
    lambda lib: [1.0, 2.5],
    lambda lib: [True, False],
    lambda lib: (1, 2),
    lambda lib: lib.tensor(2),
    lambda lib: lib.tensor(2.5),
    lambda lib: lib.tensor(1e-5),
    lambda lib: lib.tensor(True),
    lambda lib: lib.ones(3),
    lambda lib: lib.tensor([1.5, 2.0]),
    lambda lib: lib.device("cpu"),
    lambda lib: lib.float32,
    lambda lib: lib.int64,
]


def _build(lib, graph_cls):
    g = graph_cls()
    x = g.addInput()
    x.setDebugName("x")
    y = g.addInput()
    for make in _CONSTANTS:
        g.insertConstant(make(lib))
    for name in ("x", "x", "x.1", "x.5", "x"):
        g.addInput().setDebugName(name)
    g.insertNode(g.create("aten::mul", [x, y]))
    g.appendNode(g.create("prim::TupleConstruct", [x, y], 2))
    m = g.create("prim::If", [x], 1)
    g.insertNode(m)
    b0, b1 = m.addBlock(), m.addBlock()
    b0.registerOutput(x)
    b1.registerOutput(y)
    g.registerOutput(m.output())
    g.registerOutput(x)
    return g


def test_printed_graph_matches_torch():
    assert str(_build(ember, Graph)) == str(_build(torch, torch._C.Graph))


def test_names_match_torch():
    mine, theirs = _build(ember, Graph), _build(torch, torch._C.Graph)
    assert [v.debugName() for v in mine.inputs()] == [v.debugName() for v in theirs.inputs()]
    assert [n.kind() for n in mine.nodes()] == [n.kind() for n in theirs.nodes()]

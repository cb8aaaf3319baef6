"""The graph IR alone: building, editing, naming, printing and linting graphs."""

import pytest

from ember.jit import ir
from ember.jit.ir import Graph


def _mul_graph():
    g = Graph()
    x, y = g.addInput("x"), g.addInput("y")
    two = g.insertConstant(2)
    n = g.insertNode(g.create("aten::mul", [x, two]))
    add = g.insertNode(g.create("aten::add", [n.output(), y, g.insertConstant(1)]))
    g.registerOutput(add.output())
    return g, x, y, n, add


def test_print_and_structure():
    g, x, y, n, add = _mul_graph()
    assert str(g) == (
        "graph(%x : Tensor,\n      %y : Tensor):\n"
        "  %2 : int = prim::Constant[value=2]()\n"
        "  %3 : Tensor = aten::mul(%x, %2)\n"
        "  %4 : int = prim::Constant[value=1]()\n"
        "  %5 : Tensor = aten::add(%3, %y, %4)\n"
        "  return (%5)\n"
    )
    assert [m.kind() for m in g.nodes()] == [
        "prim::Constant",
        "aten::mul",
        "prim::Constant",
        "aten::add",
    ]
    assert g.findNode("aten::mul") is n
    assert len(g.findAllNodes("prim::Constant")) == 2
    assert [(u.user.kind(), u.offset) for u in x.uses()] == [("aten::mul", 0)]
    assert n.output().node() is n and n.output().offset() == 0
    assert n.prev().kind() == "prim::Constant" and n.next() is add.prev()
    assert g.outputs()[0] is add.output()
    assert n.inputs()[1].toIValue() == 2
    assert n.owningGraph() is g and n.owningBlock() is g.block()
    g.lint()


def test_names_follow_torch_rules():
    g = Graph()
    a, b, c = g.addInput(), g.addInput(), g.addInput()
    a.setDebugName("x")
    b.setDebugName("x")
    assert (a.debugName(), b.debugName()) == ("x.1", "x")
    c.setDebugName("x")
    assert (a.debugName(), b.debugName(), c.debugName()) == ("x.1", "x.3", "x")
    d = g.addInput("x.1")
    assert a.debugName() == "x.5" and d.debugName() == "x.1"
    with pytest.raises(RuntimeError, match="Invalid name: '12'"):
        a.setDebugName("12")


def test_attributes():
    g = Graph()
    n = g.insertNode(g.create("prim::Foo", [], 0))
    n.i_("a", 3).f_("b", 1.5).s_("c", "hi").is_("d", [1, 2]).fs_("e", [1.0])
    assert n.attributeNames() == ["a", "b", "c", "d", "e"]
    assert [n.kindOf(k) for k in n.attributeNames()] == ["i", "f", "s", "is", "fs"]
    assert n.i("a") == 3 and n.f("b") == 1.5 and n.s("c") == "hi"
    assert n.hasAttribute("a") and not n.hasAttribute("z")
    assert str(n) == ' = prim::Foo[a=3, b=1.5, c="hi", d=[1, 2], e=[1.]]()\n'
    with pytest.raises(RuntimeError, match="required keyword attribute 'z' is undefined"):
        n.i("z")


def test_blocks_print_and_lint():
    g = Graph()
    c = g.addInput("c", ir.BoolType())
    x = g.addInput("x")
    n = g.insertNode(g.create("prim::If", [c]))
    for name in ("aten::neg", "aten::relu"):
        b = n.addBlock()
        with g.insert_point_guard(b):
            m = g.insertNode(g.create(name, [x]))
        b.registerOutput(m.output())
    n.output().setDebugName("y")
    g.registerOutput(n.output())
    assert str(g) == (
        "graph(%c : bool,\n      %x : Tensor):\n"
        "  %y : Tensor = prim::If(%c)\n"
        "    block0():\n"
        "      %3 : Tensor = aten::neg(%x)\n"
        "      -> (%3)\n"
        "    block1():\n"
        "      %4 : Tensor = aten::relu(%x)\n"
        "      -> (%4)\n"
        "  return (%y)\n"
    )
    g.lint()
    assert len(g.findAllNodes("aten::relu")) == 1
    assert g.findAllNodes("aten::relu", recurse=False) == []


def test_lint_catches_use_before_def():
    g, x, y, n, add = _mul_graph()
    n.moveAfter(add)  # the add now reads %3 before the mul defines it
    with pytest.raises(RuntimeError, match="%3 is used by '%5 : Tensor = aten::add"):
        g.lint()


def test_lint_catches_value_from_inner_block():
    g = Graph()
    c = g.addInput("c")
    n = g.insertNode(g.create("prim::If", [c], 0))
    b = n.addBlock()
    n.addBlock()
    with g.insert_point_guard(b):
        inner = g.insertNode(g.create("aten::neg", [c])).output()
    g.insertNode(g.create("aten::relu", [inner]))
    with pytest.raises(RuntimeError, match="before it is defined"):
        g.lint()


def test_rewiring_and_destroy():
    g, x, y, n, add = _mul_graph()
    n.output().replaceAllUsesWith(x)
    assert add.inputs()[0] is x and not n.output().uses()
    n.destroy()
    assert g.findNode("aten::mul") is None
    g.lint()
    with pytest.raises(RuntimeError, match="still used by"):
        add.inputs()[2].node().destroy()
    add.removeInput(1)
    assert [u.offset for u in add.inputs()[1].uses()] == [1]
    g.lint()


def test_move_and_insert_point():
    g, x, y, n, add = _mul_graph()
    const = add.inputs()[2].node()
    const.moveBefore(n)
    assert [m.kind() for m in g.nodes()][:3] == ["prim::Constant", "prim::Constant", "aten::mul"]
    assert const.isBefore(n) and add.isAfter(const)
    g.setInsertPoint(n)
    k = g.insertConstant(7.0)
    assert k.node().next() is n
    g.lint()


def test_copy_and_insert_graph():
    g, *_ = _mul_graph()
    h = g.copy()
    assert str(h) == str(g) and h.findNode("aten::mul") is not g.findNode("aten::mul")
    h.lint()
    outer = Graph()
    a, b = outer.addInput("a"), outer.addInput("b")
    (out,) = outer.insertGraph(g, [a, b])
    outer.registerOutput(out)
    assert "aten::mul(%a, " in str(outer)
    outer.lint()


def test_types_print():
    t = ir.TensorType
    assert str(t()) == "Tensor"
    assert str(ir.ListType(ir.IntType())) == "List[int]"
    assert ir.ListType(ir.IntType()).ir_str() == "int[]"
    assert ir.OptionalType(t()).ir_str() == "Tensor?"
    assert str(ir.OptionalType(t())) == "Optional[Tensor]"
    assert ir.TupleType([t(), ir.IntType()]).ir_str() == "(Tensor, int)"
    assert str(ir.DictType(ir.StringType(), t())) == "Dict[str, Tensor]"
    assert ir.DictType(ir.StringType(), t()).ir_str() == "Dict(str, Tensor)"
    assert str(ir.FutureType(t())) == "Future[Tensor]"
    assert str(ir.ClassType("__torch__.Net")) == "__torch__.Net"
    assert str(t("torch.float32", (2, 3), (3, 1), False, "cpu")) == (
        "Float(2, 3, strides=[3, 1], requires_grad=0, device=cpu)"
    )
    assert str(t("torch.int64", (), (), False, "cpu")) == "Long(requires_grad=0, device=cpu)"
    assert ir.IntType().isSubtypeOf(ir.OptionalType(ir.IntType()))
    assert ir.NoneType().isSubtypeOf(ir.OptionalType(ir.IntType()))
    assert not ir.FloatType().isSubtypeOf(ir.IntType())


def test_copy_keeps_what_frontends_attach():
    g, x, *_ = _mul_graph()
    n = g.findNode("aten::mul")
    n._payload = print
    h = g.copy()
    assert h.findNode("aten::mul")._payload is print

"""``Graph``: owns the root block, numbers values, inserts nodes, checks itself."""

from __future__ import annotations

import contextlib

from ember.jit.ir import types as T
from ember.jit.ir.block import Block
from ember.jit.ir.node import Node
from ember.jit.ir.value import Value

__all__ = ["Graph", "constant_type", "DTYPE_CODES"]

# torch's ScalarType numbers: a dtype argument is an ``int`` constant in the IR
DTYPE_CODES = {
    "torch.uint8": 0,
    "torch.int8": 1,
    "torch.int16": 2,
    "torch.int32": 3,
    "torch.int64": 4,
    "torch.float16": 5,
    "torch.float32": 6,
    "torch.float64": 7,
    "torch.complex64": 9,
    "torch.complex128": 10,
    "torch.bool": 11,
    "torch.bfloat16": 15,
}


def _is_tensor(v) -> bool:
    return hasattr(v, "_data") and hasattr(v, "shape") and hasattr(v, "stride")


def _is_dtype(v) -> bool:
    return type(v).__name__ == "dtype" and str(v) in DTYPE_CODES


def _is_device(v) -> bool:
    return type(v).__name__ == "device"


def constant_type(value) -> T.Type:
    """Return the type of a constant as ``insertConstant`` gives it."""
    if value is None:
        return T.NoneType()
    if isinstance(value, bool):
        return T.BoolType()
    if isinstance(value, int) or _is_dtype(value):
        return T.IntType()
    if isinstance(value, float):
        return T.FloatType()
    if isinstance(value, str):
        return T.StringType()
    if _is_device(value):
        return T.DeviceObjType()
    if _is_tensor(value):
        return T.TensorType(
            value.dtype, tuple(value.shape), tuple(value.stride()), False, str(value.device)
        )
    if isinstance(value, tuple):
        return T.TupleType([constant_type(e) for e in value])
    if isinstance(value, list):
        elems = {constant_type(e) for e in value}
        if len(elems) == 1:
            elem = elems.pop()
            return T.ListType(T.TensorType() if isinstance(elem, T.TensorType) else elem)
        if not value:
            return T.ListType(T.IntType())
    raise RuntimeError(f"Unsupported value kind: {type(value).__name__}")


_NODE_FIELDS = frozenset(vars(Node(None, "prim::Constant")))


class Graph:
    """A TorchScript graph: the root ``block()``'s inputs, nodes and outputs."""

    def __init__(self):
        self._unique = 0
        self._names: dict[str, Value] = {}
        self._name_suffixes: dict[str, int] = {}
        self._block = Block(self)
        self._insert_at: Node = self._block.return_node()

    def _new_unique(self) -> int:
        u = self._unique
        self._unique += 1
        return u

    # --- structure
    def block(self) -> Block:
        return self._block

    def nodes(self):
        return self._block.nodes()

    def inputs(self) -> list[Value]:
        return self._block.inputs()

    def outputs(self) -> list[Value]:
        return self._block.outputs()

    def param_node(self) -> Node:
        return self._block.param_node()

    def return_node(self) -> Node:
        return self._block.return_node()

    def addInput(self, name: str | None = None, type_: T.Type | None = None) -> Value:
        return self._block.addInput(name, type_)

    def insertInput(self, i: int, name: str | None = None) -> Value:
        v = self._block.insertInput(i)
        if name:
            v.setDebugName(name)
        return v

    def eraseInput(self, i: int) -> None:
        self._block.eraseInput(i)

    def registerOutput(self, v: Value) -> int:
        return self._block.registerOutput(v)

    def eraseOutput(self, i: int) -> None:
        self._block.eraseOutput(i)

    # --- making and inserting nodes
    def create(self, kind: str, inputs=(), num_outputs: int = 1) -> Node:
        """Return a new node (not yet inserted) of ``kind`` with these inputs and
        ``num_outputs`` outputs of type ``Tensor``."""
        n = Node(self, kind)
        for v in inputs:
            n.addInput(v)
        for _ in range(num_outputs):
            n.addOutput()
        return n

    def insertPoint(self) -> Node:
        return self._insert_at

    def setInsertPoint(self, where) -> None:
        """Insert new nodes before node ``where``, or at the end of block ``where``."""
        self._insert_at = where.return_node() if isinstance(where, Block) else where

    @contextlib.contextmanager
    def insert_point_guard(self, where):
        saved = self._insert_at
        self.setInsertPoint(where)
        try:
            yield
        finally:
            self._insert_at = saved

    def insertNode(self, n: Node) -> Node:
        return n.insertBefore(self._insert_at)

    def insert(self, kind: str, inputs=(), num_outputs: int = 1) -> Node:
        """Create a node and insert it at the insertion point; plain Python values among
        ``inputs`` become constants."""
        vals = [v if isinstance(v, Value) else self.insertConstant(v) for v in inputs]
        return self.insertNode(self.create(kind, vals, num_outputs))

    def appendNode(self, n: Node) -> Node:
        return self._block.appendNode(n)

    def prependNode(self, n: Node) -> Node:
        return self._block.prependNode(n)

    def createConstant(self, value) -> Node:
        n = Node(self, "prim::Constant")
        n.addOutput(constant_type(value))
        if value is None:
            return n
        if isinstance(value, bool):
            n._set("i", "value", value)
        elif _is_dtype(value):
            n._set("i", "value", DTYPE_CODES[str(value)])
        elif isinstance(value, int):
            n._set("i", "value", value)
        elif isinstance(value, float):
            n._set("f", "value", value)
        elif isinstance(value, str):
            n._set("s", "value", value)
        elif _is_device(value):
            n._set("s", "value", str(value))
        elif _is_tensor(value):
            n._set("t", "value", value)
        else:
            n._set("ival", "value", value)
        return n

    def insertConstant(self, value, name: str | None = None) -> Value:
        """Insert a ``prim::Constant`` holding ``value``; return its output."""
        v = self.insertNode(self.createConstant(value)).output()
        if name:
            v.setDebugName(name)
        return v

    def createClone(self, n: Node, value_map) -> Node:
        """Copy node ``n`` (and its blocks) into this graph; ``value_map(v)`` gives the
        new value for each input of the old graph."""
        c = Node(self, n.kind())
        c._attrs = dict(n._attrs)
        c._source, c._scope = n._source, n._scope
        # what frontends attach to a node for its backend (a callee graph, the function a
        # call runs) travels with the copy
        for k, v in n.__dict__.items():
            if k not in _NODE_FIELDS:
                setattr(c, k, v)
        for v in n._inputs:
            c.addInput(value_map(v))
        local = {}
        for o in n._outputs:
            new = c.addOutput(o.type())
            if o.hasDebugName():
                new.setDebugName(o.debugName())
            local[o] = new
        for b in n._blocks:
            nb = c.addBlock()
            inner = {}
            for v in b.inputs():
                inner[v] = nb.addInput(v.debugName() if v.hasDebugName() else None, v.type())

            def sub_map(v, inner=inner):
                return inner[v] if v in inner else value_map(v)

            for m in b.nodes():
                mc = nb.appendNode(self.createClone(m, sub_map))
                for a, b2 in zip(m._outputs, mc._outputs):
                    inner[a] = b2
            for v in b.outputs():
                nb.registerOutput(sub_map(v))
        return c

    def insertGraph(self, callee: Graph, inputs) -> list[Value]:
        """Insert a copy of ``callee``'s nodes at the insertion point, its inputs bound to
        ``inputs``; return the copies of its outputs."""
        env = dict(zip(callee.inputs(), inputs))
        for n in callee.nodes():
            c = self.insertNode(self.createClone(n, env.__getitem__))
            env.update(zip(n._outputs, c._outputs))
        return [env[v] for v in callee.outputs()]

    def copy(self) -> Graph:
        g = Graph()
        env = {}
        for v in self.inputs():
            env[v] = g.addInput(v.debugName() if v.hasDebugName() else None, v.type())
        g.setInsertPoint(g.block())
        outs = g.insertGraph(self, [env[v] for v in self.inputs()])
        for v in outs:
            g.registerOutput(v)
        return g

    # --- queries
    def findNode(self, kind: str, recurse: bool = True) -> Node | None:
        return self._block.findNode(kind, recurse)

    def findAllNodes(self, kind: str, recurse: bool = True) -> list[Node]:
        return self._block.findAllNodes(kind, recurse)

    def lint(self) -> None:
        """Check the graph's invariants (definitions before uses, use lists, list links);
        raise RuntimeError naming the offending node."""
        _lint_block(self._block, set())
        for name, v in self._names.items():
            if v._name != name:
                raise RuntimeError(f"graph lint: the name '{name}' is registered to another value")

    # --- printing
    def str(self, print_source_ranges: bool = True) -> str:
        from ember.jit.ir.printer import print_graph

        return print_graph(self, print_source_ranges)

    def __str__(self) -> str:
        return self.str(True)

    def __repr__(self) -> str:
        return self.str(True)


def _lint_node_uses(n: Node) -> None:
    for i, v in enumerate(n._inputs):
        if not any(u.user is n and u.offset == i for u in v._uses):
            raise RuntimeError(
                f"graph lint: input {i} (%{v.debugName()}) of node '{n._line().strip()}' has "
                "no matching entry in its value's uses"
            )
    for o in n._outputs:
        for u in o._uses:
            ins = u.user._inputs
            if u.offset >= len(ins) or ins[u.offset] is not o:
                raise RuntimeError(
                    f"graph lint: %{o.debugName()} (output of '{n._line().strip()}') lists a "
                    f"dangling use by {u.user.kind()} at input {u.offset}"
                )
            if u.user._block is None:
                raise RuntimeError(
                    f"graph lint: %{o.debugName()} (output of '{n._line().strip()}') is used "
                    f"by a {u.user.kind()} node that is not in the graph"
                )


def _lint_block(b: Block, scope: set) -> None:
    scope = set(scope)
    _lint_node_uses(b.param_node())
    scope.update(b.inputs())
    prev = b.return_node()
    for n in b.nodes():
        if n._block is not b or n._prev is not prev:
            raise RuntimeError(f"graph lint: node '{n._line().strip()}' is badly linked")
        for v in n._inputs:
            if v not in scope:
                raise RuntimeError(
                    f"graph lint: %{v.debugName()} is used by '{n._line().strip()}' before it "
                    "is defined (or outside the block defining it)"
                )
        _lint_node_uses(n)
        for sub in n._blocks:
            _lint_block(sub, scope)
        scope.update(n._outputs)
        prev = n
    for v in b.return_node()._inputs:
        if v not in scope:
            raise RuntimeError(
                f"graph lint: %{v.debugName()} is returned before it is defined "
                "(or outside the block defining it)"
            )
    _lint_node_uses(b.return_node())

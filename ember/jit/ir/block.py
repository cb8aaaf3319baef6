"""``Block``: a topologically ordered list of nodes between a Param and a Return node."""

from __future__ import annotations

from ember.jit.ir.node import Node
from ember.jit.ir.types import Type
from ember.jit.ir.value import Value

__all__ = ["Block"]


class Block:
    """A list of nodes: ``param_node()``'s outputs are the block's inputs and
    ``return_node()`` (the list's sentinel) takes its outputs. ``owningNode()`` is the
    ``prim::If``/``prim::Loop`` it belongs to (None for a graph's root block)."""

    def __init__(self, graph, owner: Node | None = None):
        self._graph, self._owner = graph, owner
        self._param = Node(graph, "prim::Param")
        self._return = Node(graph, "prim::Return")
        self._param._block = self._return._block = self
        # circular: return <-> first ... last <-> return; the param node stands outside
        self._return._next = self._return._prev = self._return
        self._param._next = self._return
        self._return._topo = float("inf")
        self._param._topo = float("-inf")

    def owningNode(self) -> Node | None:
        return self._owner

    def owningGraph(self):
        return self._graph

    def param_node(self) -> Node:
        return self._param

    paramNode = param_node

    def return_node(self) -> Node:
        return self._return

    returnNode = return_node

    def inputs(self) -> list[Value]:
        return self._param.outputs()

    def outputs(self) -> list[Value]:
        return self._return.inputs()

    def addInput(self, name: str | None = None, type_: Type | None = None) -> Value:
        v = self._param.addOutput(type_)
        if name:
            v.setDebugName(name)
        return v

    addInputToBlock = addInput

    def insertInput(self, i: int, type_: Type | None = None) -> Value:
        v = Value(self._param, i, type_)
        self._param._outputs.insert(i, v)
        for j, o in enumerate(self._param._outputs):
            o._offset = j
        return v

    def eraseInput(self, i: int) -> None:
        self._param.eraseOutput(i)

    def registerOutput(self, v: Value) -> int:
        self._return.addInput(v)
        return len(self._return._inputs) - 1

    def eraseOutput(self, i: int) -> None:
        self._return.removeInput(i)

    def nodes(self):
        """Iterate the nodes in order (safe against destroying the current node)."""
        n = self._return._next
        while n is not self._return:
            nxt = n._next
            yield n
            n = nxt

    def appendNode(self, n: Node) -> Node:
        self._link(n, self._return._prev, self._return)
        return n

    def prependNode(self, n: Node) -> Node:
        self._link(n, self._return, self._return._next)
        return n

    def _link(self, n: Node, before: Node, after: Node) -> None:
        if n._block is not None:
            raise RuntimeError(f"{n.kind()} is already in a block")
        n._block = self
        n._prev, n._next = before, after
        before._next = n
        after._prev = n
        lo = before._topo if before is not self._return else float("-inf")
        hi = after._topo if after is not self._return else float("inf")
        if lo == float("-inf") and hi == float("inf"):
            n._topo = 0.0
        elif lo == float("-inf"):
            n._topo = hi - 1024.0
        elif hi == float("inf"):
            n._topo = lo + 1024.0
        else:
            n._topo = (lo + hi) / 2
            if n._topo in (lo, hi):
                self._renumber()

    def _renumber(self) -> None:
        for k, m in enumerate(self.nodes()):
            m._topo = float(k) * 1024.0

    def findNode(self, kind: str, recurse: bool = True) -> Node | None:
        for n in self.findAllNodes(kind, recurse):
            return n
        return None

    def findAllNodes(self, kind: str, recurse: bool = True) -> list[Node]:
        found = []
        for n in self.nodes():
            if n.kind() == kind:
                found.append(n)
            if recurse:
                for b in n._blocks:
                    found += b.findAllNodes(kind, True)
        return found

    def _destroy(self) -> None:
        self._return.removeAllInputs()
        for n in reversed(list(self.nodes())):
            for o in n._outputs:
                o._uses = [u for u in o._uses if u.user._block is not self]
            n.destroy()

    def __str__(self) -> str:
        from ember.jit.ir.printer import print_block

        return print_block(self, 0, 0)

"""``Node``: one operation of a graph, in its block's doubly linked list."""

from __future__ import annotations

from ember.jit.ir.types import Type
from ember.jit.ir.value import Use, Value

__all__ = ["Node"]

# attribute kind chars, as torch's ``node.kindOf(name)`` names them
_KINDS = ("i", "f", "s", "t", "is", "fs", "ss", "ts", "ival", "ty", "tys", "g", "gs", "c")


class Node:
    """An operation ``kind()`` (``"aten::mul"``, ``"prim::If"``) with inputs, outputs,
    attributes and sub-blocks. Create nodes with ``graph.create``."""

    def __init__(self, graph, kind: str):
        self._graph = graph
        self._kind = kind
        self._inputs: list[Value] = []
        self._outputs: list[Value] = []
        self._blocks: list = []
        self._attrs: dict = {}  # name -> (kind char, value)
        self._block = None  # owning block, once inserted
        self._prev: Node | None = None
        self._next: Node | None = None
        self._source: str | None = None  # "file:line:col", printed after " # "
        self._scope: str = ""
        self._topo = 0.0  # order key within the block (isBefore/isAfter)

    # --- identity
    def kind(self) -> str:
        return self._kind

    def owningGraph(self):
        return self._graph

    def owningBlock(self):
        return self._block

    def sourceRange(self) -> str | None:
        return self._source

    def setSourceRange(self, source: str | None) -> Node:
        self._source = source
        return self

    def scopeName(self) -> str:
        return self._scope

    def setScope(self, scope: str) -> Node:
        self._scope = scope
        return self

    # --- inputs
    def inputs(self) -> list[Value]:
        return list(self._inputs)

    def input(self, i: int = 0) -> Value:
        if i == 0 and len(self._inputs) != 1:
            raise RuntimeError(f"{self._kind} has {len(self._inputs)} inputs, not 1")
        return self._inputs[i]

    def inputsAt(self, i: int) -> Value:
        return self._inputs[i]

    def inputsSize(self) -> int:
        return len(self._inputs)

    def addInput(self, v: Value) -> Value:
        v._uses.append(Use(self, len(self._inputs)))
        self._inputs.append(v)
        return v

    def insertInput(self, i: int, v: Value) -> Value:
        for use in self._uses_from(i):
            use.offset += 1
        self._inputs.insert(i, v)
        v._uses.append(Use(self, i))
        return v

    def _uses_from(self, i: int) -> list[Use]:
        found = []
        for j in range(i, len(self._inputs)):
            for use in self._inputs[j]._uses:
                if use.user is self and use.offset == j:
                    found.append(use)
        return found

    def _drop_use(self, i: int) -> None:
        v = self._inputs[i]
        for k, use in enumerate(v._uses):
            if use.user is self and use.offset == i:
                del v._uses[k]
                return
        raise RuntimeError(f"use of %{v.debugName()} by {self._kind} is missing")

    def replaceInput(self, i: int, v: Value) -> Value:
        old = self._inputs[i]
        self._drop_use(i)
        self._inputs[i] = v
        v._uses.append(Use(self, i))
        return old

    def replaceInputWith(self, old: Value, new: Value) -> None:
        for i, v in enumerate(self._inputs):
            if v is old:
                self.replaceInput(i, new)

    def removeInput(self, i: int) -> None:
        later = self._uses_from(i + 1)
        self._drop_use(i)
        del self._inputs[i]
        for use in later:
            use.offset -= 1

    def removeAllInputs(self) -> None:
        for i in range(len(self._inputs)):
            self._drop_use(i)
        self._inputs = []

    # --- outputs
    def outputs(self) -> list[Value]:
        return list(self._outputs)

    def output(self, i: int = 0) -> Value:
        if i == 0 and len(self._outputs) != 1:
            raise RuntimeError(f"{self._kind} has {len(self._outputs)} outputs, not 1")
        return self._outputs[i]

    def outputsAt(self, i: int) -> Value:
        return self._outputs[i]

    def outputsSize(self) -> int:
        return len(self._outputs)

    def hasMultipleOutputs(self) -> bool:
        return len(self._outputs) > 1

    def hasUses(self) -> bool:
        return any(o._uses for o in self._outputs)

    def addOutput(self, type_: Type | None = None) -> Value:
        v = Value(self, len(self._outputs), type_)
        self._outputs.append(v)
        return v

    def eraseOutput(self, i: int) -> None:
        v = self._outputs[i]
        if v._uses:
            raise RuntimeError(f"cannot erase output %{v.debugName()} of {self._kind}: it has uses")
        v.setDebugName(None)
        del self._outputs[i]
        for j in range(i, len(self._outputs)):
            self._outputs[j]._offset = j

    def replaceAllUsesWith(self, other: Node) -> None:
        for a, b in zip(self._outputs, other._outputs):
            a.replaceAllUsesWith(b)

    # --- blocks
    def blocks(self) -> list:
        return list(self._blocks)

    def addBlock(self):
        from ember.jit.ir.block import Block

        b = Block(self._graph, self)
        self._blocks.append(b)
        return b

    def eraseBlock(self, i: int) -> None:
        self._blocks.pop(i)._destroy()

    # --- attributes
    def attributeNames(self) -> list[str]:
        return list(self._attrs)

    def hasAttribute(self, name: str) -> bool:
        return name in self._attrs

    def hasAttributes(self) -> bool:
        return bool(self._attrs)

    def kindOf(self, name: str) -> str:
        return self._get(name)[0]

    def removeAttribute(self, name: str) -> Node:
        self._get(name)
        del self._attrs[name]
        return self

    def copyAttributes(self, other: Node) -> Node:
        self._attrs = dict(other._attrs)
        return self

    def _get(self, name: str):
        if name not in self._attrs:
            raise RuntimeError(f"required keyword attribute '{name}' is undefined")
        return self._attrs[name]

    def _set(self, kind: str, name: str, value) -> Node:
        self._attrs[name] = (kind, value)
        return self

    def __getattr__(self, name: str):
        # i/f/s/t/is/... getters and i_/f_/... setters, as torch's Node has
        if name.endswith("_") and name[:-1] in _KINDS:
            kind = name[:-1]
            return lambda attr, value: self._set(kind, attr, value)
        if name in _KINDS:
            return lambda attr: self._typed(name, attr)
        raise AttributeError(f"'Node' object has no attribute '{name}'")

    def _typed(self, kind: str, name: str):
        k, value = self._get(name)
        if k != kind:
            raise RuntimeError(f"attribute '{name}' of {self._kind} is of kind {k}, not {kind}")
        return value

    # --- list position
    def prev(self) -> Node | None:
        return self._prev

    def next(self) -> Node | None:
        return self._next

    def isBefore(self, other: Node) -> bool:
        a, b = self._common(other)
        return a._topo < b._topo

    def isAfter(self, other: Node) -> bool:
        a, b = self._common(other)
        return a._topo > b._topo

    def _common(self, other: Node):
        # lift both nodes to ancestors in the same block
        def chain(n):
            out = [n]
            while n._block is not None and n._block._owner is not None:
                n = n._block._owner
                out.append(n)
            return out

        mine, theirs = chain(self), chain(other)
        for a in mine:
            for b in theirs:
                if a._block is b._block:
                    return a, b
        raise RuntimeError("nodes are not in the same graph")

    def insertBefore(self, n: Node) -> Node:
        if self._block is not None:
            raise RuntimeError(f"{self._kind} is already in a block")
        n._block._link(self, n._prev, n)
        return self

    def insertAfter(self, n: Node) -> Node:
        if self._block is not None:
            raise RuntimeError(f"{self._kind} is already in a block")
        n._block._link(self, n, n._next)
        return self

    def moveBefore(self, n: Node) -> None:
        self._unlink()
        self.insertBefore(n)

    def moveAfter(self, n: Node) -> None:
        self._unlink()
        self.insertAfter(n)

    def _unlink(self) -> None:
        if self._block is None:
            return
        self._prev._next = self._next
        self._next._prev = self._prev
        self._prev = self._next = None
        self._block = None

    def destroy(self) -> None:
        """Remove this node from its block and drop its uses of its inputs; its outputs
        must have no uses left."""
        for o in self._outputs:
            if o._uses:
                users = ", ".join(u.user.kind() for u in o._uses)
                raise RuntimeError(
                    f"cannot destroy {self._kind}: its output %{o.debugName()} is still used by "
                    f"{users}"
                )
        for b in self._blocks:
            b._destroy()
        self.removeAllInputs()
        for o in self._outputs:
            o.setDebugName(None)
        self._unlink()

    # --- printing
    def _line(self, indent: int = 0) -> str:
        from ember.jit.ir.printer import print_node

        return print_node(self, indent)

    def __str__(self) -> str:
        return self._line()

    def __repr__(self) -> str:
        return self._line()

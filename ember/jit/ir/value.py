"""``Value``: one SSA value of a graph, defined by one node, used by many."""

from __future__ import annotations

from ember.jit.ir.types import TensorType, Type

__all__ = ["Use", "Value"]


class Use:
    """One use of a value: input ``offset`` of node ``user``."""

    __slots__ = ("user", "offset")

    def __init__(self, user, offset: int):
        self.user, self.offset = user, offset

    def __eq__(self, other) -> bool:
        return isinstance(other, Use) and self.user is other.user and self.offset == other.offset

    def __hash__(self) -> int:
        return hash((id(self.user), self.offset))

    def __repr__(self) -> str:
        return f"Use({self.user.kind()}, {self.offset})"


def _split_suffix(name: str) -> tuple[str, int]:
    """``x.3`` -> ("x", 3); names without a numeric suffix count from 1."""
    base, dot, tail = name.rpartition(".")
    if dot and tail.isdigit():
        return base, int(tail)
    return name, 1


class Value:
    """An SSA value: ``node()`` defines it as its ``offset()``-th output."""

    __slots__ = ("_node", "_offset", "_type", "_name", "_unique", "_uses")

    def __init__(self, node, offset: int, type_: Type | None = None):
        self._node, self._offset = node, offset
        self._type = type_ if type_ is not None else TensorType()
        self._name: str | None = None
        self._uses: list[Use] = []
        self._unique = node.owningGraph()._new_unique()

    # --- structure
    def node(self):
        return self._node

    def offset(self) -> int:
        return self._offset

    def unique(self) -> int:
        return self._unique

    def owningGraph(self):
        return self._node.owningGraph()

    def uses(self) -> list[Use]:
        return list(self._uses)

    def hasUses(self) -> bool:
        return bool(self._uses)

    def type(self) -> Type:
        return self._type

    def setType(self, t: Type) -> Value:
        self._type = t
        return self

    def isCompleteTensor(self) -> bool:
        return isinstance(self._type, TensorType) and self._type.isComplete()

    def requires_grad(self) -> bool:
        return isinstance(self._type, TensorType) and bool(self._type.requires_grad())

    requiresGrad = requires_grad

    # --- names (torch's rules: a name taken by another value moves that one to ``name.N``)
    def hasDebugName(self) -> bool:
        return self._name is not None

    def debugName(self) -> str:
        return self._name if self._name is not None else str(self._unique)

    def setDebugName(self, name: str | None) -> Value:
        if name is not None and name.isdigit():
            raise RuntimeError(f"Invalid name: '{name}'")
        graph = self.owningGraph()
        names = graph._names
        if self._name is not None:
            names.pop(self._name, None)
        self._name = None
        if not name:
            return self
        holder = names.get(name)
        if holder is not None and holder is not self:
            base, suffix = _split_suffix(name)
            last = graph._name_suffixes.get(base)
            if last is not None:
                suffix = max(suffix, last + 1)
            while f"{base}.{suffix}" in names:
                suffix += 1
            graph._name_suffixes[base] = suffix + 1
            holder.setDebugName(f"{base}.{suffix}")
        names[name] = self
        self._name = name
        return self

    # --- rewiring
    def replaceAllUsesWith(self, other: Value) -> None:
        """Make every user of this value use ``other`` instead."""
        for use in list(self._uses):
            use.user.replaceInput(use.offset, other)

    def replaceAllUsesAfterNodeWith(self, node, other: Value) -> None:
        for use in list(self._uses):
            if use.user.isAfter(node):
                use.user.replaceInput(use.offset, other)

    def toIValue(self):
        """Return the constant this value stands for (None when it is not a constant)."""
        n = self._node
        if n.kind() != "prim::Constant":
            return None
        return n._attrs["value"][1] if "value" in n._attrs else None

    def __repr__(self) -> str:
        return f"{self.debugName()} defined in ({self._node._line().rstrip()})"

    def __str__(self) -> str:
        return repr(self)

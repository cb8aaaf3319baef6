"""Dead code elimination: remove nodes whose outputs nobody uses and that have no effect."""

from __future__ import annotations

__all__ = ["eliminate_dead_code", "has_side_effects"]

_EFFECTS = {
    "prim::SetAttr",
    "prim::RaiseException",
    "prim::Print",
    "aten::warn",
    "prim::Return",
    "prim::Param",
    "aten::wait",
    "prim::CallMethod",  # a call may change its module (torch keeps unused calls)
    "prim::CallFunction",
}


def has_side_effects(n) -> bool:
    """True for nodes DCE keeps even unused: in-place ops (``aten::add_``), attribute writes,
    raises, prints, and control flow containing such nodes."""
    k = n.kind()
    if k in _EFFECTS:
        return True
    if k.startswith("aten::") and k.endswith("_") and not k.endswith("__"):
        return True
    return any(has_side_effects(m) for b in n.blocks() for m in b.nodes())


def _sweep(block) -> None:
    for n in reversed(list(block.nodes())):
        for b in n.blocks():
            _sweep(b)
        if not n.hasUses() and not has_side_effects(n):
            n.destroy()


def eliminate_dead_code(graph) -> None:
    """Remove dead nodes from ``graph`` (in place), inner blocks included."""
    _sweep(graph.block())

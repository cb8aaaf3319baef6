"""Common subexpression elimination: one node for equal computations on the same values."""

from __future__ import annotations

from ember.jit.passes.dce import has_side_effects

__all__ = ["eliminate_common_subexpression", "NONDETERMINISTIC"]

NONDETERMINISTIC = {
    "aten::dropout",
    "aten::rand",
    "aten::randn",
    "aten::rand_like",
    "aten::randn_like",
    "aten::bernoulli",
    "aten::normal",
    "aten::randint",
    "aten::multinomial",
    "aten::uniform",
}


def _attr_key(kind, value):
    if kind == "t" or not isinstance(value, (int, float, str, bool, tuple, list, type(None))):
        return (kind, id(value))
    return (kind, type(value).__name__, repr(value))


def _key(n):
    if n.blocks() or has_side_effects(n) or n.kind() in NONDETERMINISTIC:
        return None
    if getattr(n, "_payload", None) is not None:
        return None  # an op ember carries without a schema: identity unknown
    attrs = tuple((k, _attr_key(*v)) for k, v in n._attrs.items())
    return (n.kind(), tuple(id(v) for v in n.inputs()), attrs, getattr(n, "_wrapped", False))


def _block(block, seen: dict) -> bool:
    seen = dict(seen)
    changed = False
    for n in block.nodes():
        for b in n.blocks():
            changed |= _block(b, seen)
        k = _key(n)
        if k is None:
            continue
        old = seen.get(k)
        if old is None:
            seen[k] = n
            continue
        for a, b in zip(n.outputs(), old.outputs()):
            if a.hasDebugName() and not b.hasDebugName():
                b.setDebugName(a.debugName())
            a.replaceAllUsesWith(b)
        n.destroy()
        changed = True
    return changed


def eliminate_common_subexpression(graph) -> bool:
    """Merge nodes of the same kind, attributes and inputs; return True if any merged."""
    return _block(graph.block(), {})

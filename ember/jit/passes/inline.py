"""Inlining: replace ``prim::CallMethod``/``prim::CallFunction`` nodes that know their callee's
graph by a copy of its nodes."""

from __future__ import annotations

__all__ = ["inline_calls", "set_callee"]


def set_callee(node, graph) -> None:
    """Record ``graph`` as the body a call node runs (frontends do this when they emit it)."""
    node._callee = graph


def _callee(n):
    g = getattr(n, "_callee", None)
    if g is not None:
        return g
    if n.kind() == "prim::CallFunction":
        fn = n.inputs()[0].toIValue()
        return getattr(fn, "graph", None)
    return None


def _inlined(callee, cache: dict):
    """``callee`` with its own calls inlined (torch inserts a callee's inlined graph)."""
    got = cache.get(id(callee))
    if got is None:
        if callee.findNode("prim::CallMethod") or callee.findNode("prim::CallFunction"):
            got = callee.copy()
            inline_calls(got)
        else:
            got = callee
        cache[id(callee)] = got
    return got


def _block(block, g, cache=None) -> bool:
    cache = {} if cache is None else cache
    changed = False
    for n in list(block.nodes()):
        for b in n.blocks():
            changed |= _block(b, g, cache)
        if n.kind() not in ("prim::CallMethod", "prim::CallFunction"):
            continue
        callee = _callee(n)
        if callee is None:
            continue
        callee = _inlined(callee, cache)
        ins = n.inputs()
        args = ins if n.kind() == "prim::CallMethod" else ins[1:]
        with g.insert_point_guard(n):
            outs = g.insertGraph(callee, args)
        for o, r in zip(n.outputs(), outs):
            o.replaceAllUsesWith(r)
        n.destroy()
        changed = True
    return changed


def inline_calls(graph) -> bool:
    """Inline every call whose callee graph is known (recursively); True if any was."""
    changed = False
    while _block(graph.block(), graph):
        changed = True
    return changed

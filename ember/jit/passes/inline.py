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


def _constant_key(n):
    if "value" not in n._attrs:
        return ("None", str(n.output().type()))
    kind, value = n._attrs["value"]
    if kind == "t" or not isinstance(value, (bool, int, float, str)):
        return ("object", id(value))  # tensors and other objects: moved, merged only if same
    return (kind, type(value).__name__, value, str(n.output().type()))


def pool_constants(graph) -> None:
    """Merge equal ``prim::Constant`` nodes and move them to the start of the graph (each
    newly seen one goes first, so they end in reverse order of first use), as torch's
    constant pooling does to a callee's graph before it is inlined."""
    seen: dict = {}

    def visit(block):
        for n in list(block.nodes()):
            for b in n.blocks():
                visit(b)
            if n.kind() != "prim::Constant":
                continue
            key = _constant_key(n)
            if key is None:
                continue
            if key in seen:
                n.output().replaceAllUsesWith(seen[key].output())
                n.destroy()
                continue
            seen[key] = n
            first = graph.block().nodes()
            head = next(iter(first), None)
            if head is not None and head is not n:
                n.moveBefore(head)

    visit(graph.block())


def _inlined(callee, cache: dict):
    """``callee`` as torch inlines it: its own calls inlined and its constants pooled."""
    got = cache.get(id(callee))
    if got is None:
        got = callee.copy()
        inline_calls(got)
        pool_constants(got)
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

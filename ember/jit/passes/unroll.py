"""Loop unrolling: a ``prim::Loop`` with a constant trip count, a constant true condition and
a body that keeps it true becomes copies of its body (up to ``max_trips``)."""

from __future__ import annotations

__all__ = ["unroll_loops"]


def _true(v) -> bool:
    return v.node().kind() == "prim::Constant" and v.toIValue() in (True, 1)


def _unroll(n, g, max_trips: int) -> bool:
    ins = n.inputs()
    trip = ins[0].toIValue() if ins[0].node().kind() == "prim::Constant" else None
    body = n.blocks()[0]
    if not isinstance(trip, int) or trip > max_trips or not _true(ins[1]):
        return False
    if not _true(body.outputs()[0]) or body.outputs()[0].node().owningBlock() is body:
        return False
    carried = list(ins[2:])
    with g.insert_point_guard(n):
        for i in range(trip):
            env = {body.inputs()[0]: g.insertConstant(i)}
            env.update(zip(body.inputs()[1:], carried))

            def value(v, env=env):
                return env.get(v, v)

            for m in body.nodes():
                c = g.insertNode(g.createClone(m, value))
                env.update(zip(m.outputs(), c.outputs()))
            carried = [value(v) for v in body.outputs()[1:]]
    for o, r in zip(n.outputs(), carried):
        o.replaceAllUsesWith(r)
    n.destroy()
    return True


def unroll_loops(graph, max_trips: int = 16) -> bool:
    """Unroll the constant-trip loops of ``graph`` in place; True if any was."""
    changed = False
    for n in graph.findAllNodes("prim::Loop"):
        if n.owningBlock() is not None:
            changed |= _unroll(n, graph, max_trips)
    return changed

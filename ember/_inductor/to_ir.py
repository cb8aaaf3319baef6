"""A captured forward as the project's graph IR (``ember.jit.ir.Graph``), and as a
``torch.fx.GraphModule`` for user backends.

Op calls become ``aten::<name>`` nodes whose inputs are the call's values and constants (its
keyword params follow as constants, in name order); each node carries a payload running the
op through the op table, so the IR executor (``ember.jit.executor``) runs the graph: that is
the ``"eager"`` backend. Tensors read by reference (parameters, globals) are constants.
"""

from __future__ import annotations

import itertools

from ember._dynamo.capture import Call, Read, Value
from ember._ops import registry as R

_COUNT = itertools.count()


def _payload(call: Call):
    op, params = call.op, call.params
    if call.target is not None:
        return lambda *a: R.dispatch_inplace(op, a[0], a, params)
    return lambda *a: R.dispatch(op, a, params)


def to_graph(inputs: list, calls: list, outputs: list):
    """Return the IR graph of ``calls`` (op calls only; None if a helper kernel is in it)."""
    from ember.jit import ir

    g = ir.Graph()
    env: dict = {}
    for v in inputs:
        env[v.id] = g.addInput(f"x{v.id}")

    def val(a):
        if type(a) is Value:
            got = env.get(a.id)
            if got is None:  # a reference: the tensor itself, as a constant
                got = env[a.id] = g.insertConstant(a.tensor)
            return got
        return g.insertConstant(a)

    for c in calls:
        if type(c) is Read:
            continue
        if c.op is None:
            return None
        ins = [val(a) for a in c.args] + [g.insertConstant(c.params[k]) for k in sorted(c.params)]
        kind = f"aten::{c.op.name}" + ("_" if c.target is not None else "")
        n = g.insertNode(g.create(kind, ins, len(c.outs)))
        n._payload = _payload(c) if len(c.outs) == 1 else _payload(c)
        for o, v in zip(c.outs, n.outputs()):
            env[o.id] = v
    for v in outputs:
        g.registerOutput(val(v))
    return g


def to_fx(inputs: list, calls: list, outputs: list):
    """Return a ``GraphModule`` whose nodes call the op table (for ``backend=callable``)."""
    from ember.fx import Graph, GraphModule
    from ember.nn.modules.module import Module

    g = Graph()
    env: dict = {}
    for v in inputs:
        env[v.id] = g.placeholder(f"l_x{v.id}_")

    def val(a):
        if type(a) is Value:
            return env[a.id] if a.id in env else a.tensor
        return a

    for c in calls:
        if type(c) is Read or c.op is None:
            continue
        fn = _payload(c)
        # generated fx code reaches a target by its dotted name: publish it in this module
        name = f"{c.op.name}{'_' if c.target is not None else ''}_{next(_COUNT)}"
        fn.__name__ = fn.__qualname__ = name
        fn.__module__ = __name__
        globals()[name] = fn
        node = g.call_function(fn, tuple(val(a) for a in c.args))
        if c.multi:
            import operator

            for i, o in enumerate(c.outs):
                env[o.id] = g.call_function(operator.getitem, (node, i))
        else:
            env[c.outs[0].id] = node
    g.output(tuple(val(v) for v in outputs))
    return GraphModule(Module(), g)

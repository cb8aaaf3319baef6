"""A captured trace as the project's graph IR (``ember.jit.ir.Graph``), and as a
``torch.fx.GraphModule`` for user backends.

This is the one IR every backend consumes: the code generator (``codegen``), the executor of
the ``"eager"`` backends, the printer. The lowering:

- each op call becomes an ``aten::<name>`` node (``aten::<name>_`` when it writes into its
  first input) whose inputs are the call's values and constants; its keyword params are node
  attributes (``aten::sum[dim=(0,), keepdim=False]``), the dtypes its inputs are promoted to
  the attribute ``casts``; the op-table entry rides on the node as ``_op``;
- a helper kernel (a random draw, an array-level backward, a sum to shape) becomes an
  ``ember::<label>`` node carrying its function as ``_payload`` (so CSE never merges it);
- a Python value read from a tensor becomes a ``prim::Guard[read=..., expect=...]`` node;
- tensors read by reference (parameters, buffers, globals) are tensor constants: the
  generated code reads their data afresh on every run.

Guards and random draws are effects: their outputs are registered as graph outputs after the
program's own (``Lowered.n_outputs`` of them), so dead code elimination keeps them.
"""

from __future__ import annotations

import itertools

from ember._dynamo.capture import Read, Value
from ember._ops import registry as R

_COUNT = itertools.count()
_KIND_OF: dict = {}  # id(Op) -> node kind (op names are not unique: overloads get ".k")
_NAMES_SEEN: dict = {}  # op name -> number of distinct ops seen with it


def _kind(op) -> str:
    k = _KIND_OF.get(id(op))
    if k is None:
        n = _NAMES_SEEN.get(op.name, 0)
        _NAMES_SEEN[op.name] = n + 1
        k = _KIND_OF[id(op)] = f"aten::{op.name}" + (f".{n}" if n else "")
        _KEEP.append(op)
    return k


_KEEP: list = []  # the ops named above stay alive, so their ids stay theirs


def _payload(op, params, inplace: bool, extra: bool = False):
    if extra:
        return lambda *a: R.dispatch_inplace(op, a[0], a[1:], params)
    if inplace:
        return lambda *a: R.dispatch_inplace(op, a[0], a, params)
    return lambda *a: R.dispatch(op, a, params)


class Lowered:
    """A lowered trace: ``graph``; ``meta`` maps each tensor IR value to its capture Value
    (shape, dtype, storage root, name); the first ``n_outputs`` graph outputs are the
    program's, the rest keep effects alive."""

    __slots__ = ("graph", "meta", "n_outputs")

    def __init__(self, graph, meta, n_outputs):
        self.graph = graph
        self.meta = meta
        self.n_outputs = n_outputs


def _tensor_type(v: Value):
    from ember._core import dtype as D
    from ember.jit import ir

    try:
        dt = D.FROM_NP[v.dtype]
    except Exception:
        dt = None
    return ir.TensorType(dt, v.shape, tuple(s // v.dtype.itemsize for s in v.strides), None, "cpu")


def _constant(g, value):
    """A constant node for ``value``: IR scalars as torch prints them; any other object (a
    NumPy scalar the kernel sees, a dtype) kept as-is in an ``ival`` attribute."""
    from ember.jit import ir

    if value is None or type(value) in (bool, int, float, str):
        return g.insertConstant(value)
    n = g.create("prim::Constant", (), 0)
    n.addOutput(ir.AnyType())
    n.ival_("value", value)
    return g.insertNode(n).output()


def to_graph(params: list, calls: list, outputs: list, payloads: bool = False) -> Lowered:
    """Return the IR of ``calls`` with ``params`` as the graph's inputs and ``outputs``
    (Values or None) as its outputs. ``payloads``: every op node also carries a function
    running it through the op table (for the IR executor)."""
    from ember.jit import ir

    g = ir.Graph()
    env: dict = {}  # capture value id -> IR value
    meta: dict = {}
    for v in params:
        iv = g.addInput(v.name, _tensor_type(v))
        env[v.id] = iv
        meta[iv] = v

    def val(a):
        if type(a) is Value:
            got = env.get(a.id)
            if got is None:
                if a.kind != "ref":
                    raise RuntimeError(f"lowering: {a.name} is used before it is defined")
                got = env[a.id] = g.insertConstant(a.tensor)
                meta[got] = a
            return got
        return _constant(g, a)

    effects = []
    for c in calls:
        if type(c) is Read:
            n = g.create("prim::Guard", [val(c.value)], 0)
            n.addOutput(ir.BoolType())
            n.s_("read", c.kind)
            n.ival_("expect", c.result)
            g.insertNode(n)
            effects.append(n.output())
            continue
        ins = [val(a) for a in c.args]
        if c.op is None:
            n = g.create(f"ember::{c.label}", ins, len(c.outs))
            n._payload = c.fn
            n._multi = c.multi
            if getattr(c.fn, "draws", False) or getattr(c.fn, "effects", False):
                effects.extend(n.outputs())
        else:
            inplace = c.target is not None
            extra = inplace and not (c.args and c.args[0] is c.target)
            if extra:  # the written tensor comes first, as torch prints ``self``
                ins = [val(c.target), *ins]
            if inplace:  # (CSE never runs beside a write: an overload needs no number)
                kind = f"aten::{c.op.name}" + ("" if c.op.name.endswith("_") else "_")
            else:
                kind = _kind(c.op)
            n = g.create(kind, ins, len(c.outs))
            n._op = c.op
            n._inplace = 2 if extra else int(inplace)  # 2: input 0 is the target only
            keyed = [k for k in sorted(c.params) if type(c.params[k]) is Value]
            for k in keyed:  # a param holding a recorded value: an input after the args
                n.addInput(val(c.params[k]))
            if keyed:
                n.ss_("tensor_params", tuple(keyed))
            for k in sorted(c.params):
                if type(c.params[k]) is not Value:
                    n.ival_(k, c.params[k])
            if c.casts is not None and any(x is not None for x in c.casts):
                n.ival_("casts", tuple(c.casts))
            n._multi = c.multi
            if payloads:
                n._payload = _payload(c.op, c.params, inplace, extra)
        g.insertNode(n)
        for o, iv in zip(c.outs, n.outputs()):
            if o.id >= 0:  # (not a throwaway slot of an array backward)
                env[o.id] = iv
                meta[iv] = o
                iv.setType(_tensor_type(o))
                iv.setDebugName(o.name)
    for v in outputs:
        if v is None:
            g.registerOutput(g.insertConstant(None))
        else:
            g.registerOutput(val(v))
    for e in effects:
        g.registerOutput(e)
    return Lowered(g, meta, len(outputs))


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
        inplace = c.target is not None
        extra = inplace and not (c.args and c.args[0] is c.target)
        fn = _payload(c.op, c.params, inplace, extra)
        # generated fx code reaches a target by its dotted name: publish it in this module
        name = f"{c.op.name}{'_' if c.target is not None else ''}_{next(_COUNT)}"
        fn.__name__ = fn.__qualname__ = name
        fn.__module__ = __name__
        globals()[name] = fn
        args = [c.target, *c.args] if extra else c.args
        node = g.call_function(fn, tuple(val(a) for a in args))
        if c.multi:
            import operator

            for i, o in enumerate(c.outs):
                env[o.id] = g.call_function(operator.getitem, (node, i))
        else:
            env[c.outs[0].id] = node
    g.output(tuple(val(v) for v in outputs))
    return GraphModule(Module(), g)

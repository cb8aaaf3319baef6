"""Peephole rewrites, as torch's: ``x + 0``, ``x - 0``, ``x * 1``, ``x / 1`` become ``x`` when
the result has ``x``'s type; a ``contiguous`` of a contiguous tensor goes; ``aten::size`` and
``aten::dim`` of tensors of known shape become constants."""

from __future__ import annotations

from ember.jit.ir.types import TensorType
from ember.jit.passes.dce import eliminate_dead_code

__all__ = ["peephole"]


def _number(v):
    """The Python number a constant value stands for (a 0-d tensor constant too), or None."""
    n = v.node()
    if n.kind() != "prim::Constant" or "value" not in n._attrs:
        return None
    kind, x = n._attrs["value"]
    if kind == "t":
        return x._data.item() if x._data.ndim == 0 and x._data.dtype.kind in "iub" else None
    return x if kind == "i" and not isinstance(x, bool) else None


def _same_type(x, out) -> bool:
    tx, to = x.type(), out.type()
    if not isinstance(tx, TensorType):
        return False
    return tx == to or (not to.isComplete() and not tx.isComplete())


def _contiguous(t: TensorType) -> bool:
    if not t.isComplete():
        return False
    expect, step = [], 1
    for s in reversed(t.sizes()):
        expect.append(step)
        step *= max(s, 1)
    return list(reversed(expect)) == t.strides() or 0 in t.sizes()


def _rewrite(n, g):
    k = n.kind()
    ins = n.inputs()
    if k in ("aten::add", "aten::sub") and len(ins) == 3:
        if _number(ins[1]) == 0 and _number(ins[2]) == 1 and _same_type(ins[0], n.output()):
            return ins[0]
    if k in ("aten::mul", "aten::div") and len(ins) == 2:
        if _number(ins[1]) == 1 and _same_type(ins[0], n.output()):
            return ins[0]
    if k == "aten::mul" and len(ins) == 2:
        if _number(ins[0]) == 1 and _same_type(ins[1], n.output()):
            return ins[1]
    if k == "aten::contiguous" and _contiguous(ins[0].type()):
        return ins[0]
    t = ins[0].type() if ins else None
    if k == "aten::size" and isinstance(t, TensorType) and t.sizes() is not None:
        with g.insert_point_guard(n):
            if len(ins) == 1:
                return g.insertConstant(t.sizes())
            d = ins[1].toIValue()
            if isinstance(d, int):
                return g.insertConstant(t.sizes()[d])
    if k == "aten::dim" and isinstance(t, TensorType) and t.dim() is not None:
        with g.insert_point_guard(n):
            return g.insertConstant(t.dim())
    return None


def _block(block, g) -> bool:
    changed = False
    for n in list(block.nodes()):
        for b in n.blocks():
            changed |= _block(b, g)
        if len(n.outputs()) != 1:
            continue
        new = _rewrite(n, g)
        if new is not None:
            n.output().replaceAllUsesWith(new)
            n.destroy()
            changed = True
    return changed


def peephole(graph) -> bool:
    """Apply the rewrites to ``graph`` in place; return True if any applied."""
    changed = _block(graph.block(), graph)
    eliminate_dead_code(graph)
    return changed

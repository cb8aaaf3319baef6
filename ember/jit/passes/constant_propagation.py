"""Constant propagation: run nodes whose inputs are all constants; fold ``prim::If`` on a
constant condition."""

from __future__ import annotations

from ember.jit.ir.graph import constant_type
from ember.jit.passes.cse import NONDETERMINISTIC
from ember.jit.passes.dce import eliminate_dead_code, has_side_effects

__all__ = ["propagate_constants"]

_SKIP = {"prim::Constant", "prim::GetAttr", "prim::CallMethod", "prim::CallFunction"}
_SKIP |= {"prim::fork", "aten::wait", "prim::RaiseException", "prim::Uninitialized"}


def _representable(x) -> bool:
    try:
        constant_type(x)
    except RuntimeError:
        return False
    return True


def _fold_if(n, g) -> None:
    cond = n.inputs()[0].toIValue()
    block = n.blocks()[0] if cond else n.blocks()[1]
    for m in list(block.nodes()):
        m._unlink()
        m.insertBefore(n)
    for o, r in zip(n.outputs(), block.outputs()):
        o.replaceAllUsesWith(r)
    block.return_node().removeAllInputs()
    n._blocks = []
    n.destroy()


def _block(block, g) -> None:
    from ember.jit.executor import _call, _constant

    for n in list(block.nodes()):
        if n.owningBlock() is None:
            continue
        if n.kind() == "prim::If" and n.inputs()[0].node().kind() == "prim::Constant":
            _fold_if(n, g)
            continue
        for b in n.blocks():
            _block(b, g)
        if (
            n.kind() in _SKIP
            or n.blocks()
            or has_side_effects(n)
            or n.kind() in NONDETERMINISTIC
            or not all(v.node().kind() == "prim::Constant" for v in n.inputs())
        ):
            continue
        args = [_constant(v.node()) for v in n.inputs()]
        try:
            result = _call(n, n.kind(), args)
        except Exception:
            continue  # it fails at run time as it would have
        results = [result] if len(n.outputs()) == 1 else list(result or ())
        if len(results) != len(n.outputs()) or not all(_representable(r) for r in results):
            continue
        with g.insert_point_guard(n):
            for o, r in zip(n.outputs(), results):
                if hasattr(r, "_data") and r.requires_grad:
                    r = r.detach()
                c = g.insertConstant(r)
                c.node().setSourceRange(n.sourceRange())
                o.replaceAllUsesWith(c)
        n.destroy()


def propagate_constants(graph) -> None:
    """Fold every computation on constants in ``graph`` (in place), then remove dead code."""
    _block(graph.block(), graph)
    eliminate_dead_code(graph)

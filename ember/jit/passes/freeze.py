"""Freezing: a module's attributes read through ``prim::GetAttr`` from ``%self`` become
constants, then the inference passes run (dropout removed, constants folded, Conv-BN folded,
common subexpressions merged, dead code removed)."""

from __future__ import annotations

__all__ = ["freeze_graph", "optimize_frozen"]


def _tensor_constant(t):
    from ember._core.tensor import _wrap

    return _wrap(t._data.copy())


def _all_nodes(block) -> list:
    """The nodes of ``block`` and of its nodes' blocks, in program order."""
    out = []
    for n in block.nodes():
        out.append(n)
        for b in n.blocks():
            out.extend(_all_nodes(b))
    return out


def freeze_graph(graph, module, preserved_attrs=()) -> None:
    """Turn the GetAttr chains from ``graph``'s first input (``module``) into constants,
    except attributes named in ``preserved_attrs``; in place."""
    from ember.jit.passes.dce import eliminate_dead_code
    from ember.jit.passes.inline import inline_calls

    inline_calls(graph)  # a traced module's submodule calls (torch's freeze inlines first)
    self_value = graph.inputs()[0]
    preserved = set(preserved_attrs or ())
    objects = {self_value: module}
    for n in _all_nodes(graph.block()):
        if n.kind() != "prim::GetAttr" or n.inputs()[0] not in objects:
            continue
        name = n.s("name")
        if name in preserved:
            continue
        obj = getattr(objects[n.inputs()[0]], name)
        if hasattr(obj, "_data"):
            with graph.insert_point_guard(n):
                c = graph.insertConstant(_tensor_constant(obj))
            n.output().replaceAllUsesWith(c)
            n.destroy()
        elif isinstance(obj, (int, float, bool, str)) or obj is None:
            with graph.insert_point_guard(n):
                c = graph.insertConstant(obj)
            n.output().replaceAllUsesWith(c)
            n.destroy()
        else:
            objects[n.output()] = obj
    eliminate_dead_code(graph)


def optimize_frozen(graph) -> None:
    """The passes freezing runs after inlining the attributes."""
    from ember.jit.passes.constant_propagation import propagate_constants
    from ember.jit.passes.cse import eliminate_common_subexpression
    from ember.jit.passes.dce import eliminate_dead_code
    from ember.jit.passes.fold_conv_bn import fold_conv_bn
    from ember.jit.passes.inline import inline_calls
    from ember.jit.passes.peephole import peephole
    from ember.jit.passes.remove_dropout import remove_dropout

    inline_calls(graph)
    remove_dropout(graph)
    propagate_constants(graph)
    fold_conv_bn(graph)
    peephole(graph)
    eliminate_common_subexpression(graph)
    eliminate_dead_code(graph)

"""Remove dropout: ``aten::dropout(x, p, train)`` with ``train`` False (or any, for a module
in eval mode) is ``x``."""

from __future__ import annotations

__all__ = ["remove_dropout"]

_KINDS = ("aten::dropout", "aten::feature_dropout", "aten::alpha_dropout")


def remove_dropout(graph, eval_mode: bool = False) -> None:
    """Remove the dropout nodes of ``graph`` whose ``train`` is constant False (all of them
    when ``eval_mode``), in place."""
    for kind in _KINDS:
        for n in graph.findAllNodes(kind):
            train = n.inputs()[2].toIValue() if n.inputsSize() > 2 else None
            if train is False or train == 0 or eval_mode:
                n.output().replaceAllUsesWith(n.inputs()[0])
                n.destroy()

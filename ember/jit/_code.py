"""``.code``: the TorchScript source of a graph, as ``jit.save`` writes it into an archive
(``ember.jit._save``'s printer, which writes torch's text for scripted and traced functions)."""

from __future__ import annotations

__all__ = ["graph_to_code"]


def graph_to_code(
    graph, name: str = "forward", method: bool = True, module=None, inline: bool = True
) -> str:
    """Return the source of ``graph`` as a function ``name`` (a method when ``method``: the
    graph's first input is ``self``, the module ``module`` if given: its plain attributes,
    such as flags, are written as constants, as torch writes its ``Final`` attributes)."""
    from ember.jit._save import FunctionPrinter
    from ember.jit._save._archive import prepare

    printer = FunctionPrinter([], root=module)
    head, body = printer.function(prepare(graph) if inline else graph.copy(), name, None, method)
    return "\n".join([*head, *body]) + "\n"

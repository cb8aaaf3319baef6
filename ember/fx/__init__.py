"""ember.fx: symbolic tracing, graphs and graph transformations, as ``torch.fx``.

``symbolic_trace(model)`` runs ``forward`` on :class:`Proxy` values and records a
:class:`Graph` of nodes (placeholder, get_attr, call_function, call_method, call_module,
output); :class:`GraphModule` runs the graph's generated code. :class:`Interpreter` and
:class:`Transformer` execute or rewrite a graph node by node, ``replace_pattern`` rewrites
subgraphs. The submodules load on first use (``import ember`` stays as fast).
"""

import importlib

__all__ = [
    "PH",
    "Graph",
    "GraphModule",
    "Interpreter",
    "Node",
    "Proxy",
    "Tracer",
    "Transformer",
    "has_side_effect",
    "map_arg",
    "replace_pattern",
    "symbolic_trace",
    "wrap",
]

_LAZY = {
    "PH": "_symbolic_trace",
    "Tracer": "_symbolic_trace",
    "symbolic_trace": "_symbolic_trace",
    "wrap": "_symbolic_trace",
    "Graph": "graph",
    "GraphModule": "graph_module",
    "Interpreter": "interpreter",
    "Transformer": "interpreter",
    "Node": "node",
    "has_side_effect": "node",
    "map_arg": "node",
    "Proxy": "proxy",
    "replace_pattern": "subgraph_rewriter",
}
_SUBMODULES = {
    "_symbolic_trace",
    "graph",
    "graph_module",
    "interpreter",
    "node",
    "passes",
    "proxy",
    "subgraph_rewriter",
}


def __getattr__(name: str):
    if name in _LAZY:
        value = getattr(importlib.import_module(f"ember.fx.{_LAZY[name]}"), name)
        globals()[name] = value
        return value
    if name in _SUBMODULES:
        return importlib.import_module(f"ember.fx.{name}")
    raise AttributeError(f"module 'ember.fx' has no attribute '{name}'")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))

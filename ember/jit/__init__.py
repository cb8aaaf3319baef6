"""ember.jit: TorchScript on ember (see docs/guide/torchscript.md).

- ``ir``: the graph IR (Graph, Block, Node, Value, types), printed in torch's text format.
- ``trace`` records the IR through the op table's observers and the result runs the recorded
  graph (control flow frozen, as torch's); ``script`` compiles Python source to the IR for a
  useful subset and runs the graph (beyond the subset it keeps the eager Python).
- ``passes`` (dce, cse, constant propagation, peephole, inline, remove dropout, Conv-BN
  folding) and ``freeze``/``optimize_for_inference`` rewrite graphs.
- ``fork``/``wait`` run tasks on the inter-op thread pool.
- ``save`` writes TorchScript archives real ``torch.jit.load`` runs (``_save``).
"""

from typing import Final  # noqa: F401  (torch.jit.Final is typing.Final)

from ember.jit._api import (
    Future,
    TracerWarning,
    TracingCheckError,
    annotate,
    export,
    fork,
    ignore,
    is_scripting,
    script,
    trace,
    trace_module,
    unused,
    wait,
)
from ember.jit._extras import (
    Attribute,
    Error,
    enable_onednn_fusion,
    export_opnames,
    fuser,
    interface,
    isinstance,
    onednn_fusion_enabled,
    optimized_execution,
    script_if_tracing,
    script_method,
    set_fusion_strategy,
    set_module,
    strict_fusion,
)
from ember.jit._script import (
    RecursiveScriptModule,
    ScriptFunction,
    ScriptModule,
    TopLevelTracedModule,
    TracedModule,
    freeze,
    load,
    optimize_for_inference,
    save,
)
from ember.jit._tracer import is_tracing

__all__ = [
    "Attribute",
    "Error",
    "enable_onednn_fusion",
    "export_opnames",
    "fuser",
    "interface",
    "isinstance",
    "onednn_fusion_enabled",
    "optimized_execution",
    "script_if_tracing",
    "script_method",
    "set_fusion_strategy",
    "set_module",
    "strict_fusion",
    "Final",
    "Future",
    "RecursiveScriptModule",
    "ScriptFunction",
    "ScriptModule",
    "TopLevelTracedModule",
    "TracedModule",
    "TracerWarning",
    "TracingCheckError",
    "annotate",
    "export",
    "fork",
    "freeze",
    "ignore",
    "is_scripting",
    "is_tracing",
    "load",
    "optimize_for_inference",
    "save",
    "script",
    "trace",
    "trace_module",
    "unused",
    "wait",
]

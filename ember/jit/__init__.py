"""ember.jit: torch.jit's API on an eager framework.

- ``trace`` runs the function or module once on example inputs and records the ops it calls
  (``_trace.py``, built on the op table's observers); the result runs the original code
  eagerly (torch's replays the recorded graph, so Python control flow is frozen there and not
  here) and shows the recorded ``graph`` and a Python-like listing of it as ``code``.
- ``script`` cannot compile TorchScript: it returns an object with the script-module surface
  (``forward``, ``state_dict``, ``save``...) running the eager code.
- ``save``/``load`` round-trip within ember, in ember's own format (torch cannot read it, and
  TorchScript archives from torch are refused with an explanation).
- ``fork`` runs the call at once (the returned Future is already done); ``freeze`` and
  ``optimize_for_inference`` return the module; ``ignore``/``unused``/``export`` mark and return
  the function.
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
from ember.jit._trace import is_tracing

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

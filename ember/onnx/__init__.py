"""ember.onnx: export models to ONNX, as ``torch.onnx``.

``export`` reads ``ember.jit``'s IR (the graph ``jit.trace`` records on the example inputs,
or a scripted module's own graph) and writes a graph that ONNX Runtime runs; see
``_graph.py`` and ``_export.py``. Needs the ``onnx`` package
(``pip install ember[onnx]``). The exporter and its translation tables load on first use.
"""

from ember.onnx import errors
from ember.onnx._state import TrainingMode, is_in_onnx_export
from ember.onnx.errors import OnnxExporterError

__all__ = [
    "ONNXProgram",
    "OnnxExporterError",
    "TrainingMode",
    "errors",
    "export",
    "is_in_onnx_export",
]


def __getattr__(name: str):
    if name == "export":
        from ember.onnx._export import export

        return export
    if name == "ONNXProgram":
        from ember.onnx._program import ONNXProgram

        return ONNXProgram
    raise AttributeError(f"module 'ember.onnx' has no attribute '{name}'")

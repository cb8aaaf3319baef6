"""``ONNXProgram``: what ``export`` returns (as torch's dynamo exporter does)."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence


def _session(model: str | bytes):
    import onnxruntime as ort

    return ort.InferenceSession(model, providers=["CPUExecutionProvider"])


class ONNXProgram:
    """An exported ONNX model: ``model_proto``, ``save``, and ``__call__`` running it in
    onnxruntime. ember holds an ``onnx.ModelProto`` (torch holds an ``onnx_ir`` model and the
    ``torch.export`` program it came from; ``exported_program`` is None here)."""

    def __init__(self, model, exported_program=None) -> None:
        self._proto = model
        self.exported_program = exported_program
        self._inference_session = None

    @property
    def model_proto(self):
        """The ``onnx.ModelProto``."""
        return self._proto

    def __repr__(self) -> str:
        import onnx

        return f"ONNXProgram(\n    model=\n{onnx.printer.to_text(self._proto)}\n)"

    def optimize(self) -> None:
        """Nothing to do: ember's graph is already folded and pruned when it is made."""

    def save(
        self,
        destination: str | os.PathLike,
        *,
        include_initializers: bool = True,
        keep_initializers_as_inputs: bool = False,
        external_data: bool | None = None,
    ) -> None:
        """Write the model to ``destination`` (weights inside the file; ``external_data=True``
        writes them to ``<destination>.data`` beside it)."""
        import onnx

        proto = onnx.ModelProto()
        proto.CopyFrom(self._proto)
        if not include_initializers:
            del proto.graph.initializer[:]
        elif keep_initializers_as_inputs:
            names = {i.name for i in proto.graph.input}
            for init in proto.graph.initializer:
                if init.name not in names:
                    proto.graph.input.append(
                        onnx.helper.make_tensor_value_info(init.name, init.data_type, init.dims)
                    )
        if external_data:
            location = os.path.basename(os.fspath(destination)) + ".data"
            onnx.save_model(
                proto,
                os.fspath(destination),
                save_as_external_data=True,
                all_tensors_to_one_file=True,
                location=location,
                size_threshold=0,
            )
        else:
            onnx.save_model(proto, os.fspath(destination))

    def initialize_inference_session(self, initializer: Callable = _session) -> None:
        """Create the onnxruntime session ``__call__`` uses."""
        self._inference_session = initializer(self._proto.SerializeToString())

    def release(self) -> None:
        """Drop the inference session."""
        self._inference_session = None

    def __call__(self, *args, **kwargs) -> Sequence:
        """Run the model in onnxruntime on tensors; return a tuple of ember tensors."""
        import numpy as np

        from ember._core.tensor import Tensor
        from ember._ops.creation import tensor as as_tensor
        from ember.onnx._graph import flatten as _flatten

        flat = [a for a in _flatten(list(args) + list(kwargs.values())) if isinstance(a, Tensor)]
        if self._inference_session is None:
            self.initialize_inference_session()
        names = [i.name for i in self._inference_session.get_inputs()]
        feeds = {n: np.ascontiguousarray(t.detach().numpy()) for n, t in zip(names, flat)}
        return tuple(as_tensor(o) for o in self._inference_session.run(None, feeds))

"""Inference tensors: what ``inference_mode`` makes, as torch marks them.

While an ``inference_mode(True)`` block runs (in any thread), an op-table observer marks the
result of every out-of-place, non-view op made in inference mode (``Tensor.is_inference()``);
views share their base's mark and factories mark what they make (``creation._finish``).
Setting ``requires_grad=True`` on an inference tensor outside inference mode is torch's error.
Outside inference mode nothing is observed: the op path pays nothing.
"""

from __future__ import annotations

import threading

from ember._core import grad_mode
from ember._core.tensor import Tensor
from ember._ops import registry


class InferenceMarker:
    """Marks the tensors ops make in inference mode; observes ops only while a block runs."""

    def __init__(self) -> None:
        self._depth = 0
        self._lock = threading.Lock()

    # inference_mode(True) blocks starting and ending (nested, or in several threads)
    def start(self) -> None:
        with self._lock:
            self._depth += 1
            if self._depth == 1:
                registry.add_observer(self)

    def stop(self) -> None:
        with self._lock:
            self._depth -= 1
            if self._depth == 0:
                registry.remove_observer(self)

    # the op-table observer protocol
    def enter(self, op, inputs, params, self_tensor) -> bool:
        # an in-place op keeps its tensor's kind; a view shares its base's mark
        return self_tensor is None and not op.view and grad_mode.STATE.inference

    def exit(self, mark: bool, result) -> None:
        if not mark or result is None:
            return
        if isinstance(result, Tensor):
            result._inference = True
        elif isinstance(result, (tuple, list)):
            for r in result:
                if isinstance(r, Tensor):
                    r._inference = True


MARKER = InferenceMarker()
grad_mode.INFERENCE_HOOK[:] = [MARKER]

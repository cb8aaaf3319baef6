"""What ``ember.onnx`` shows before the exporter is loaded: the training modes, the flag."""

from __future__ import annotations

import enum

EXPORTING = [False]


class TrainingMode(enum.IntEnum):
    """The mode the model is exported in, as ``torch.onnx.TrainingMode``."""

    EVAL = 0
    PRESERVE = 1
    TRAINING = 2


def is_in_onnx_export() -> bool:
    """Return True while ``export`` is running."""
    return EXPORTING[0]

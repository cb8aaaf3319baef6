"""``ts.utils.util``: label mapping, class discovery and PredictionException."""

from __future__ import annotations

import inspect
import json
import os

__all__ = ["PredictionException", "list_classes_from_module", "load_label_mapping"]


class PredictionException(Exception):
    """A failed prediction answered with ``error_code`` and ``message`` (e.g. 400 bad input)."""

    def __init__(self, message: str, error_code: int = 500):
        self.message = message
        self.error_code = error_code
        super().__init__(message)

    def __str__(self) -> str:
        return f"{self.message} : {self.error_code}"


def list_classes_from_module(module, parent_class=None) -> list:
    """The classes defined in ``module`` itself (optionally subclasses of ``parent_class``)."""
    classes = [
        cls
        for _, cls in inspect.getmembers(module, inspect.isclass)
        if cls.__module__ == module.__name__
    ]
    if parent_class is not None:
        classes = [c for c in classes if issubclass(c, parent_class)]
    return classes


def load_label_mapping(mapping_file_path):
    """The ``index_to_name.json`` mapping (keys are class indices as strings), or None."""
    if not os.path.isfile(mapping_file_path):
        return None
    with open(mapping_file_path, encoding="utf-8") as f:
        mapping = json.load(f)
    if not isinstance(mapping, dict):
        raise Exception('index->name JSON mapping should be in "class": "label" format.')
    # TorchServe accepts {"0": ["n01440764", "tench"]} too: the last item is the name
    return {k: (v[-1] if isinstance(v, list) else v) for k, v in mapping.items()}


def map_class_to_label(probs, mapping=None, lbl_classes=None) -> list[dict]:
    """``[{label: probability, ...}, ...]`` per row of top-k probabilities and class indices."""
    if not isinstance(probs, list):
        raise Exception("Convert classes to list before doing mapping")
    if mapping is not None and not isinstance(mapping, dict):
        raise Exception("Mapping must be a dict")
    if lbl_classes is None:
        lbl_classes = [list(range(len(p))) for p in probs]
    return [
        {(mapping[str(c)] if mapping is not None else str(c)): p for p, c in zip(row_p, row_c)}
        for row_p, row_c in zip(probs, lbl_classes)
    ]

"""``tensor_handler``: JSON in, JSON out. Each request's body is one example (a nested list,
or ``{"data": [...]}``); the answer is the model's output row as a list."""

from __future__ import annotations

import ember as torch
from ember.serve.ts.torch_handler.base_handler import BaseHandler
from ember.serve.ts.utils.util import PredictionException

__all__ = ["TensorHandler"]


class TensorHandler(BaseHandler):
    """Stacks the JSON examples of a batch into one float32 tensor."""

    def preprocess(self, data):
        rows = []
        for i, row in enumerate(data):
            value = row.get("data", row.get("body")) if isinstance(row, dict) else row
            if isinstance(value, dict) and "data" in value:
                value = value["data"]
            if value is None or isinstance(value, (bytes, bytearray, str)):
                raise PredictionException(
                    f"request {i}: expected a JSON list of numbers (Content-Type: "
                    "application/json)",
                    400,
                )
            rows.append(value)
        try:
            return torch.tensor(rows, dtype=torch.float32)
        except (TypeError, ValueError) as exc:
            raise PredictionException(f"inputs are not same-shaped numbers: {exc}", 400) from None

"""``ts.torch_handler.text_classifier``: a class per text, for models taking token ids.

Text is lower-cased and split on whitespace; ``vocab.json`` in the archive (token -> id,
``"<unk>"`` for unknown words) maps tokens to ids. The answer is ``{label: probability}``.
"""

from __future__ import annotations

import json
import os

import ember as torch
import ember.nn.functional as F
from ember.serve.ts.torch_handler.base_handler import BaseHandler
from ember.serve.ts.utils.util import PredictionException, map_class_to_label

__all__ = ["TextClassifier"]


class TextClassifier(BaseHandler):
    """Tokenises each text, pads the batch with 0 and classifies it."""

    def initialize(self, context):
        super().initialize(context)
        path = os.path.join(context.system_properties["model_dir"], "vocab.json")
        self.vocab = {}
        if os.path.isfile(path):
            with open(path, encoding="utf-8") as f:
                self.vocab = json.load(f)

    def preprocess(self, data):
        rows = []
        for i, row in enumerate(data):
            text = row.get("data") or row.get("body") if isinstance(row, dict) else row
            if isinstance(text, (bytes, bytearray)):
                try:
                    text = text.decode("utf-8")
                except UnicodeDecodeError:
                    raise PredictionException(f"request {i}: text is not UTF-8", 400) from None
            if not isinstance(text, str):
                raise PredictionException(f"request {i}: expected text", 400)
            unk = self.vocab.get("<unk>", 0)
            rows.append([self.vocab.get(t, unk) for t in text.lower().split()] or [unk])
        width = max(len(r) for r in rows)
        return torch.tensor([r + [0] * (width - len(r)) for r in rows], dtype=torch.int64)

    def postprocess(self, data):
        ps = F.softmax(data, dim=1)
        return map_class_to_label(ps.tolist(), self.mapping)

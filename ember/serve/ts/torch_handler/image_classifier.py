"""``ts.torch_handler.image_classifier``: top-k classes of an image, named by
``index_to_name.json`` when the archive has one."""

from __future__ import annotations

import ember.nn.functional as F
from ember.serve.ts.torch_handler.vision_handler import VisionHandler
from ember.serve.ts.utils.util import map_class_to_label

__all__ = ["ImageClassifier"]


class ImageClassifier(VisionHandler):
    """Answers ``{label: probability}`` for the ``topk`` most likely classes."""

    topk = 5

    def set_max_result_classes(self, topk):
        self.topk = topk

    def get_max_result_classes(self):
        return self.topk

    def postprocess(self, data):
        ps = F.softmax(data, dim=1)
        k = min(self.topk, ps.shape[1])
        probs, classes = ps.topk(k, dim=1)
        return map_class_to_label(probs.tolist(), self.mapping, classes.tolist())

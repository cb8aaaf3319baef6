"""``ts.torch_handler.vision_handler``: images (raw bytes or base64) to a batch tensor."""

from __future__ import annotations

import base64
import binascii
import io

import numpy as np

import ember as torch
from ember.serve.ts.torch_handler.base_handler import BaseHandler
from ember.serve.ts.utils.util import PredictionException

__all__ = ["VisionHandler", "image_to_tensor"]

_MEAN = np.array([0.485, 0.456, 0.406], dtype=np.float32)
_STD = np.array([0.229, 0.224, 0.225], dtype=np.float32)


def image_to_tensor(image, size: int = 256, crop: int = 224, mean=_MEAN, std=_STD):
    """torchvision's Resize(size), CenterCrop(crop), ToTensor, Normalize(mean, std) on PIL."""
    image = image.convert("RGB")
    w, h = image.size
    scale = size / min(w, h)
    image = image.resize((max(1, round(w * scale)), max(1, round(h * scale))), 2)  # bilinear
    w, h = image.size
    left, top = int(round((w - crop) / 2.0)), int(round((h - crop) / 2.0))
    image = image.crop((left, top, left + crop, top + crop))
    arr = np.asarray(image, dtype=np.float32) / 255.0
    arr = (arr - mean) / std
    return torch.from_numpy(np.ascontiguousarray(arr.transpose(2, 0, 1)))


def open_image(value, index: int = 0):
    """A PIL image from a request's bytes (or base64 text); PredictionException(400) if not."""
    from PIL import Image, UnidentifiedImageError

    if isinstance(value, str):
        try:
            value = base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            raise PredictionException(f"request {index}: text input is not base64", 400) from None
    if not isinstance(value, (bytes, bytearray)):
        raise PredictionException(f"request {index}: expected an image", 400)
    try:
        image = Image.open(io.BytesIO(value))
        image.load()
    except (UnidentifiedImageError, OSError, ValueError) as exc:
        raise PredictionException(f"request {index}: not a valid image ({exc})", 400) from None
    return image


class VisionHandler(BaseHandler):
    """Decodes each request's image and stacks them; ``image_processing`` maps PIL -> tensor."""

    image_processing = staticmethod(image_to_tensor)

    def preprocess(self, data):
        images = []
        for i, row in enumerate(data):
            value = row.get("data") or row.get("body") if isinstance(row, dict) else row
            images.append(self.image_processing(open_image(value, i)))
        return torch.stack(images)

"""A TorchServe handler for MNIST digits: a grey 28x28 image in, the digit out.

Written for TorchServe (``import torch``, ``from ts...``); ember-serve runs it unchanged.
"""

import numpy as np
import torch
from ts.torch_handler.image_classifier import ImageClassifier


class MNISTDigitClassifier(ImageClassifier):
    """Answers the most likely digit (an int) for each image."""

    @staticmethod
    def image_processing(image):
        image = image.convert("L").resize((28, 28))
        pixels = np.asarray(image, dtype=np.float32) / 255.0
        pixels = (pixels - 0.1307) / 0.3081  # the normalisation examples/mnist.py trains with
        return torch.from_numpy(pixels[None])

    def postprocess(self, data):
        return data.argmax(1).tolist()

"""``ts.torch_handler.base_handler``: load an eager model from its archive and run batches.

``initialize(context)`` imports the archive's model file (one class), builds it, loads the
serialized state dict with ``weights_only=True`` and puts it in eval mode; ``handle`` runs
``preprocess`` -> ``inference`` -> ``postprocess`` on the batch (a list, one item per request).
"""

from __future__ import annotations

import importlib
import os
import sys
import time

import ember as torch
from ember.serve.ts.utils.util import list_classes_from_module, load_label_mapping

__all__ = ["BaseHandler"]


class BaseHandler:
    """The base of TorchServe's handlers: model loading and the handle pipeline."""

    def __init__(self):
        self.model = None
        self.mapping = None
        self.device = None
        self.initialized = False
        self.context = None
        self.model_pt_path = None
        self.manifest = None
        self.map_location = None
        self.explain = False
        self.target = 0

    def initialize(self, context):
        """Load the model named by the manifest from ``context``'s model folder."""
        properties = context.system_properties
        self.map_location = "cpu"
        self.device = torch.device("cpu")
        self.manifest = context.manifest
        model_dir = properties.get("model_dir")
        model = self.manifest["model"]
        self.model_pt_path = None
        if "serializedFile" in model:
            self.model_pt_path = os.path.join(model_dir, model["serializedFile"])
        model_file = model.get("modelFile", "")
        if model_file:
            self.model = self._load_pickled_model(model_dir, model_file, self.model_pt_path)
        elif self.model_pt_path and self.model_pt_path.endswith(".pt"):
            self.model = self._load_torchscript_model(self.model_pt_path)
        else:
            raise RuntimeError(
                "the archive has no model file (--model-file) and no TorchScript .pt file"
            )
        self.model.eval()
        self.mapping = load_label_mapping(os.path.join(model_dir, "index_to_name.json"))
        self.initialized = True

    def _load_torchscript_model(self, model_pt_path):
        return torch.jit.load(model_pt_path, map_location=self.device)

    def _load_pickled_model(self, model_dir, model_file, model_pt_path):
        """Build the one class of ``model_file`` and load the state dict (weights only)."""
        if not os.path.isfile(os.path.join(model_dir, model_file)):
            raise RuntimeError("Missing the model.py file")
        if model_dir not in sys.path:
            sys.path.insert(0, model_dir)
        module = importlib.import_module(model_file.split(".")[0])
        classes = list_classes_from_module(module)
        if len(classes) != 1:
            raise ValueError(f"Expected only one class as model definition. {classes}")
        model = classes[0]()
        if model_pt_path:
            # the safe loader: tensors and containers only, never arbitrary pickled objects
            state_dict = torch.load(model_pt_path, map_location=self.device, weights_only=True)
            model.load_state_dict(state_dict)
        return model

    def preprocess(self, data):
        """Turn the batch's inputs into a tensor."""
        return torch.as_tensor(data, device=self.device)

    def inference(self, data, *args, **kwargs):
        """Run the model on the preprocessed batch, without autograd."""
        with torch.inference_mode():
            return self.model(data.to(self.device), *args, **kwargs)

    def postprocess(self, data):
        """Turn the model's output into a list with one entry per request."""
        return data.tolist()

    def handle(self, data, context):
        """Answer a batch: ``postprocess(inference(preprocess(data)))``."""
        start = time.time()
        self.context = context
        output = self.postprocess(self.inference(self.preprocess(data)))
        if context is not None and context.metrics is not None:
            context.metrics.add_time("HandlerTime", round((time.time() - start) * 1000, 2))
        return output

    def explain_handle(self, data_preprocess, raw_data):
        raise NotImplementedError("explanations are not available for this handler")

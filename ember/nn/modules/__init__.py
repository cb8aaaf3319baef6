"""ember.nn.modules: the layer classes (torch.nn.modules)."""

from __future__ import annotations

import importlib as _importlib

from ember.nn.modules.container import (
    ModuleDict,
    ModuleList,
    ParameterDict,
    ParameterList,
    Sequential,
)
from ember.nn.modules.flatten import Flatten, Unflatten
from ember.nn.modules.linear import Bilinear, Identity, Linear
from ember.nn.modules.module import Module

__all__ = [
    "Module",
    "Sequential",
    "ModuleList",
    "ModuleDict",
    "ParameterList",
    "ParameterDict",
    "Identity",
    "Linear",
    "Bilinear",
    "Flatten",
    "Unflatten",
]

# the layer files publish their classes through their ``__all__``
_LAYER_FILES = (
    "activation",
    "loss",
    "dropout",
    "normalization",
    "batchnorm",
    "instancenorm",
    "sparse",
    "padding",
    "conv",
    "pooling",
    "upsampling",
    "pixelshuffle",
    "fold",
    "distance",
    "channelshuffle",
    "lazy",
    "rnn",
    "attention",
    "transformer",
    "adaptive",
    "fractional",
    "legacy",
)
for _name in _LAYER_FILES:
    _mod = _importlib.import_module(f"ember.nn.modules.{_name}")
    for _cls in _mod.__all__:
        globals()[_cls] = getattr(_mod, _cls)
        __all__.append(_cls)
del _importlib, _LAYER_FILES, _name, _mod

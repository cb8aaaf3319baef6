"""``nn.utils`` helpers that lay convolution weights out channels-last, and ``skip_init``."""

from __future__ import annotations

import inspect

import ember
from ember.nn.modules.module import Module

__all__ = [
    "convert_conv2d_weight_memory_format",
    "convert_conv3d_weight_memory_format",
    "skip_init",
]


def _convert_conv_weights(module: Module, memory_format, conv_types: tuple) -> Module:
    if isinstance(module, conv_types):
        w = module.weight.detach().clone(memory_format=memory_format)
        module.weight.data = w.view(w.size())  # a view of the relaid copy keeps its strides
    for child in module.children():
        _convert_conv_weights(child, memory_format, conv_types)
    return module


def convert_conv2d_weight_memory_format(module: Module, memory_format) -> Module:
    """Return ``module`` with the weights of its ``Conv2d``/``ConvTranspose2d`` layers laid out
    in ``memory_format`` (``torch.channels_last``), recursively."""
    nn = ember.nn
    return _convert_conv_weights(module, memory_format, (nn.Conv2d, nn.ConvTranspose2d))


def convert_conv3d_weight_memory_format(module: Module, memory_format) -> Module:
    """Return ``module`` with the weights of its ``Conv3d``/``ConvTranspose3d`` layers laid out
    in ``memory_format`` (``torch.channels_last_3d``), recursively."""
    nn = ember.nn
    return _convert_conv_weights(module, memory_format, (nn.Conv3d, nn.ConvTranspose3d))


def skip_init(module_cls, *args, **kwargs) -> Module:
    """Return ``module_cls(*args, **kwargs)`` whose parameters and buffers are left
    uninitialized (their values are arbitrary), as torch's."""
    if not issubclass(module_cls, Module):
        raise RuntimeError(f"Expected a Module; got {module_cls}")
    if "device" not in inspect.signature(module_cls).parameters:
        raise RuntimeError("Module must support a 'device' arg to skip initialization")
    module = module_cls(*args, **kwargs)
    with ember.no_grad():
        for t in list(module.parameters()) + list(module.buffers()):
            t.copy_(ember.empty_like(t))
    return module

"""``DataParallel`` on a machine without GPUs, as torch's: the wrapped module runs as is."""

from __future__ import annotations

from ember.nn.modules.module import Module

__all__ = ["DataParallel", "data_parallel"]


class DataParallel(Module):
    """Wrap ``module``; without GPUs (ember has none) ``forward`` calls it directly, as torch's
    ``DataParallel`` does when no CUDA device is available."""

    def __init__(self, module: Module, device_ids=None, output_device=None, dim: int = 0):
        super().__init__()
        self.module = module
        self.device_ids: list = []
        self.dim = dim
        self.output_device = None
        self.src_device_obj = None

    def forward(self, *inputs, **kwargs):
        return self.module(*inputs, **kwargs)


def data_parallel(module, inputs, device_ids=None, output_device=None, dim=0, module_kwargs=None):
    """Return ``module(*inputs, **module_kwargs)`` (no GPUs: nothing to scatter)."""
    if not isinstance(inputs, tuple):
        inputs = (inputs,) if inputs is not None else ()
    return module(*inputs, **(module_kwargs or {}))

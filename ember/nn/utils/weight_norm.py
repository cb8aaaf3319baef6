"""The deprecated hook-based ``nn.utils.weight_norm`` (parameters ``weight_g`` and
``weight_v``; the weight is recomputed by a forward pre-hook)."""

from __future__ import annotations

import warnings

from ember._core.tensor import Tensor
from ember.nn.modules.module import Module
from ember.nn.parameter import Parameter
from ember.nn.utils._reparam_hooks import check_materialized, check_unclaimed, hook_key
from ember.nn.utils.parametrizations import _norm_except_dim

__all__ = ["WeightNorm", "weight_norm", "remove_weight_norm"]


class WeightNorm:
    """The forward pre-hook that recomputes ``module.<name>`` from ``<name>_g``, ``<name>_v``:
    ``w = g * v / ||v||`` with the norm over every dimension but ``dim`` (all of them when
    ``dim`` is None, stored as -1)."""

    name: str
    dim: int

    def __init__(self, name: str, dim: int) -> None:
        self.name = name
        self.dim = -1 if dim is None else dim

    def compute_weight(self, module: Module) -> Tensor:
        magnitude = getattr(module, f"{self.name}_g")
        direction = getattr(module, f"{self.name}_v")
        return direction * (magnitude / _norm_except_dim(direction, self.dim))

    @staticmethod
    def apply(module: Module, name: str, dim: int) -> WeightNorm:
        warnings.warn(
            "`torch.nn.utils.weight_norm` is deprecated "
            "in favor of `torch.nn.utils.parametrizations.weight_norm`.",
            FutureWarning,
            stacklevel=3,
        )
        check_unclaimed(module, WeightNorm, name, "weight_norm")
        fn = WeightNorm(name, dim)
        weight = getattr(module, name)
        check_materialized(weight, WeightNorm, "weight_norm")
        # the Parameter splits into magnitude g and direction v (initially the weight itself)
        del module._parameters[name]
        magnitude = _norm_except_dim(weight, fn.dim).data
        module.register_parameter(f"{name}_g", Parameter(magnitude))
        module.register_parameter(f"{name}_v", Parameter(weight.data))
        # a plain attribute from now on, refreshed by the hook before every forward (and now)
        fn(module, ())
        module.register_forward_pre_hook(fn)
        return fn

    def remove(self, module: Module) -> None:
        final = self.compute_weight(module)
        delattr(module, self.name)
        for suffix in ("_g", "_v"):
            del module._parameters[self.name + suffix]
        setattr(module, self.name, Parameter(final.data))

    def __call__(self, module: Module, inputs) -> None:
        setattr(module, self.name, self.compute_weight(module))


def weight_norm(module: Module, name: str = "weight", dim: int | None = 0) -> Module:
    """Deprecated: split ``module.<name>`` into magnitude ``<name>_g`` and direction
    ``<name>_v``; use ``parametrizations.weight_norm``. Return ``module``."""
    WeightNorm.apply(module, name, dim)
    return module


def remove_weight_norm(module: Module, name: str = "weight") -> Module:
    """Undo :func:`weight_norm`: ``module.<name>`` becomes a Parameter again."""
    key = hook_key(module._forward_pre_hooks, WeightNorm, name)
    if key is None:
        raise ValueError(f"weight_norm of '{name}' not found in {module}")
    module._forward_pre_hooks.pop(key).remove(module)
    return module

"""``ember.autograd``: the engine's public face. ``profiler``, ``gradcheck``, ``functional``
and ``forward_ad`` are imported on first access."""

import importlib as _importlib

from ember._core.grad_mode import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    no_grad,
    set_grad_enabled,
)
from ember.autograd import anomaly_mode, function, grad_mode, graph
from ember.autograd.anomaly_mode import detect_anomaly, set_detect_anomaly
from ember.autograd.engine import _is_checkpoint_valid as _is_checkpoint_valid
from ember.autograd.engine import backward, grad
from ember.autograd.function import Function
from ember.autograd.node import Node
from ember.autograd.variable import Variable

__all__ = [
    "backward",
    "forward_ad",
    "grad",
    "Function",
    "function",
    "functional",
    "gradcheck",
    "gradgradcheck",
    "grad_mode",
    "graph",
    "anomaly_mode",
    "detect_anomaly",
    "set_detect_anomaly",
    "Node",
    "profiler",
    "Variable",
    "no_grad",
    "enable_grad",
    "set_grad_enabled",
    "inference_mode",
    "is_grad_enabled",
]

_LAZY_MODULES = frozenset({"forward_ad", "functional", "gradcheck", "profiler", "profiler_util"})
_LAZY_NAMES = {"gradcheck": "gradcheck", "gradgradcheck": "gradcheck"}


def __getattr__(name: str):
    owner = _LAZY_NAMES.get(name)
    if owner is not None:
        value = getattr(_importlib.import_module(f"{__name__}.{owner}"), name)
        globals()[name] = value  # (the function, not the submodule of the same name)
        return value
    if name in _LAZY_MODULES:
        return _importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list:
    return sorted(set(globals()) | _LAZY_MODULES | set(_LAZY_NAMES))

"""``ember.autograd``: the engine's public face. ``profiler``, ``functional`` and
``forward_ad`` are imported on first access (``gradcheck`` is not: the submodule, once
imported by anyone, would take the function's place as the package attribute)."""

import importlib as _importlib

from ember._core.grad_mode import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    no_grad,
    set_grad_enabled,
)
from ember._core.node import Node
from ember.autograd import anomaly_mode, function, grad_mode, graph
from ember.autograd.anomaly_mode import detect_anomaly, set_detect_anomaly
from ember.autograd.engine import _is_checkpoint_valid as _is_checkpoint_valid
from ember.autograd.engine import backward, grad
from ember.autograd.function import Function
from ember.autograd.gradcheck import gradcheck, gradgradcheck
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

_LAZY_MODULES = frozenset({"forward_ad", "functional", "profiler", "profiler_util"})


def __getattr__(name: str):
    if name in _LAZY_MODULES:
        return _importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list:
    return sorted(set(globals()) | _LAZY_MODULES)

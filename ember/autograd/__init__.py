"""``ember.autograd``: the engine's public face."""

from ember._core.grad_mode import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    no_grad,
    set_grad_enabled,
)
from ember.autograd import (
    anomaly_mode,
    forward_ad,
    function,
    functional,
    grad_mode,
    graph,
    profiler,
)
from ember.autograd.anomaly_mode import detect_anomaly, set_detect_anomaly
from ember.autograd.engine import _is_checkpoint_valid as _is_checkpoint_valid
from ember.autograd.engine import backward, grad
from ember.autograd.function import Function
from ember.autograd.gradcheck import gradcheck, gradgradcheck
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

"""``ember.autograd``: the engine's public face."""

from ember._core.grad_mode import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    no_grad,
    set_grad_enabled,
)
from ember.autograd import anomaly_mode, grad_mode, graph
from ember.autograd.anomaly_mode import detect_anomaly, set_detect_anomaly
from ember.autograd.engine import backward, grad
from ember.autograd.node import Node

__all__ = [
    "backward",
    "grad",
    "grad_mode",
    "graph",
    "anomaly_mode",
    "detect_anomaly",
    "set_detect_anomaly",
    "Node",
    "no_grad",
    "enable_grad",
    "set_grad_enabled",
    "inference_mode",
    "is_grad_enabled",
]

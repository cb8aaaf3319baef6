"""``ember.autograd``: the engine's public face."""

from ember._core.grad_mode import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    no_grad,
    set_grad_enabled,
)
from ember.autograd.engine import backward, grad
from ember.autograd.node import Node

__all__ = [
    "backward",
    "grad",
    "Node",
    "no_grad",
    "enable_grad",
    "set_grad_enabled",
    "inference_mode",
    "is_grad_enabled",
]

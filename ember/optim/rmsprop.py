"""RMSprop: divide the gradient by a running root-mean-square (optionally centered)."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from ember._core.tensor import Tensor
from ember.optim._flat import lerp_
from ember.optim._single import ElementwiseOptimizer, _zeros_like, check, check_common, scalar
from ember.optim._single import functional as _functional
from ember.optim.optimizer import Optimizer  # noqa: F401  (torch.optim.rmsprop.Optimizer)

__all__ = ["RMSprop", "rmsprop"]


class RMSprop(ElementwiseOptimizer):
    """Implements RMSprop, as ``torch.optim.RMSprop`` (alpha, centered, momentum)."""

    _sparse_error = "RMSprop does not support sparse gradients"

    _group_defaults = {
        "momentum": 0,
        "centered": False,
        "foreach": None,
        "maximize": False,
        "differentiable": False,
        "capturable": False,
    }
    _flat_keys = ("square_avg",)  # see _flat_state_keys
    _state_writes = {"square_avg": 2, "momentum_buffer": 2}  # (mul_, then add into it)

    def __init__(
        self,
        params: Iterable,
        lr: float = 1e-2,
        alpha: float = 0.99,
        eps: float = 1e-8,
        weight_decay: float = 0,
        momentum: float = 0,
        centered: bool = False,
        capturable: bool = False,
        foreach: bool | None = None,
        maximize: bool = False,
        differentiable: bool = False,
    ) -> None:
        check_common(lr, eps=eps)
        check(0.0 <= momentum, f"Invalid momentum value: {momentum}")
        check(0.0 <= weight_decay, f"Invalid weight_decay value: {weight_decay}")
        check(0.0 <= alpha, f"Invalid alpha value: {alpha}")
        check_common(lr, differentiable=differentiable)
        defaults = dict(
            lr=lr,
            momentum=momentum,
            alpha=alpha,
            eps=eps,
            centered=centered,
            weight_decay=weight_decay,
            capturable=capturable,
            foreach=foreach,
            maximize=maximize,
            differentiable=differentiable,
        )
        super().__init__(params, defaults)

    def _init_state(self, group, p, state) -> None:
        state["step"] = scalar(0.0)
        state["square_avg"] = _zeros_like(p)
        if group["momentum"] > 0:
            state["momentum_buffer"] = _zeros_like(p)
        if group["centered"]:
            state["grad_avg"] = _zeros_like(p)

    def _flat_state_keys(self, group) -> tuple[str, ...]:
        keys = ("square_avg",)
        if group["momentum"] > 0:
            keys += ("momentum_buffer",)
        if group["centered"]:
            keys += ("grad_avg",)
        return keys

    def _update(self, group, fg) -> None:
        alpha, lr = group["alpha"], group["lr"]
        fg.steps += 1
        g = fg.prepared_grad(group["maximize"], group["weight_decay"])
        p, tmp, avg = fg.p, fg.tmp, fg.scratch(0)
        square_avg = fg.bufs["square_avg"]
        square_avg *= alpha
        np.multiply(g, g, out=tmp)
        tmp *= 1 - alpha
        square_avg += tmp
        if group["centered"]:
            grad_avg = fg.bufs["grad_avg"]
            lerp_(grad_avg, g, 1 - alpha, tmp)
            np.multiply(grad_avg, grad_avg, out=tmp)
            np.subtract(square_avg, tmp, out=avg)
            np.sqrt(avg, out=avg)
        else:
            np.sqrt(square_avg, out=avg)
        avg += group["eps"]
        if group["momentum"] > 0:
            buf = fg.bufs["momentum_buffer"]
            buf *= group["momentum"]
            np.divide(g, avg, out=tmp)
            buf += tmp
            np.multiply(buf, lr, out=tmp)
        else:
            np.divide(g, avg, out=tmp)
            tmp *= lr
        p -= tmp


def rmsprop(
    params: list[Tensor],
    grads: list[Tensor],
    square_avgs: list[Tensor],
    grad_avgs: list[Tensor],
    momentum_buffer_list: list[Tensor],
    state_steps: list[Tensor],
    foreach: bool | None = None,
    maximize: bool = False,
    differentiable: bool = False,
    capturable: bool = False,
    has_complex: bool = False,
    *,
    lr: float,
    alpha: float,
    eps: float,
    weight_decay: float,
    momentum: float,
    centered: bool,
) -> None:
    """Functional API that performs RMSprop algorithm computation (see :class:`RMSprop`):
    updates ``params``, ``square_avgs``, ``grad_avgs`` (``centered``), ``momentum_buffer_list``
    (``momentum > 0``) and ``state_steps`` in place."""
    group = dict(lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay, momentum=momentum)
    group.update(centered=centered, maximize=maximize)
    state = {"step": state_steps, "square_avg": square_avgs}
    if momentum > 0:
        state["momentum_buffer"] = momentum_buffer_list
    if centered:
        state["grad_avg"] = grad_avgs
    _functional(RMSprop, params, grads, state, group)

"""Adamax: Adam with the infinity norm in place of the second moment."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from ember._core.tensor import Tensor
from ember.optim._flat import lerp_
from ember.optim._single import (
    ElementwiseOptimizer,
    _zeros_like,
    check_common,
    scalar,
)
from ember.optim._single import functional as _functional
from ember.optim.optimizer import Optimizer  # noqa: F401  (torch.optim.adamax.Optimizer)

__all__ = ["Adamax", "adamax"]


class Adamax(ElementwiseOptimizer):
    """Implements Adamax, as ``torch.optim.Adamax``."""

    _sparse_error = "Adamax does not support sparse gradients"

    _group_defaults = {
        "foreach": None,
        "maximize": False,
        "differentiable": False,
        "capturable": False,
    }
    _flat_keys = ("exp_avg", "exp_inf")
    _state_writes = {"exp_inf": 2}  # (mul_, then maximum into it)

    def __init__(
        self,
        params: Iterable,
        lr: float = 2e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        foreach: bool | None = None,
        *,
        maximize: bool = False,
        differentiable: bool = False,
        capturable: bool = False,
    ) -> None:
        check_common(lr, eps, betas, weight_decay, differentiable)
        defaults = dict(
            lr=lr,
            betas=betas,
            eps=eps,
            weight_decay=weight_decay,
            foreach=foreach,
            maximize=maximize,
            differentiable=differentiable,
            capturable=capturable,
        )
        super().__init__(params, defaults)

    def _init_state(self, group, p, state) -> None:
        state["step"] = scalar(0.0)
        state["exp_avg"] = _zeros_like(p)
        state["exp_inf"] = _zeros_like(p)

    def _update(self, group, fg) -> None:
        beta1, beta2 = group["betas"]
        fg.steps += 1
        g = fg.prepared_grad(group["maximize"], group["weight_decay"])
        p, tmp = fg.p, fg.tmp
        exp_avg, exp_inf = fg.bufs["exp_avg"], fg.bufs["exp_inf"]
        lerp_(exp_avg, g, 1 - beta1, tmp)
        exp_inf *= beta2
        np.abs(g, out=tmp)
        tmp += group["eps"]
        np.maximum(exp_inf, tmp, out=exp_inf)
        clr = fg.per_element(group["lr"] / (1 - beta1 ** fg.steps.astype(np.float64)))
        np.divide(exp_avg, exp_inf, out=tmp)
        tmp *= clr
        p -= tmp


def adamax(
    params: list[Tensor],
    grads: list[Tensor],
    exp_avgs: list[Tensor],
    exp_infs: list[Tensor],
    state_steps: list[Tensor],
    foreach: bool | None = None,
    maximize: bool = False,
    differentiable: bool = False,
    capturable: bool = False,
    has_complex: bool = False,
    *,
    eps: float,
    beta1: float,
    beta2: float,
    lr: float,
    weight_decay: float,
) -> None:
    """Functional API that performs Adamax algorithm computation (see :class:`Adamax`): updates
    ``params``, ``exp_avgs``, ``exp_infs`` and ``state_steps`` in place."""
    group = dict(lr=lr, betas=(beta1, beta2), eps=eps, weight_decay=weight_decay)
    group["maximize"] = maximize
    state = {"step": state_steps, "exp_avg": exp_avgs, "exp_inf": exp_infs}
    _functional(Adamax, params, grads, state, group)

"""NAdam: Adam with Nesterov momentum and a momentum-decay schedule."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from ember._core.tensor import Tensor
from ember.optim._flat import lerp_
from ember.optim._single import ElementwiseOptimizer, _zeros_like, check, check_common, scalar
from ember.optim._single import functional as _functional
from ember.optim.optimizer import Optimizer  # noqa: F401  (torch.optim.nadam.Optimizer)

__all__ = ["NAdam", "nadam"]


class NAdam(ElementwiseOptimizer):
    """Implements NAdam, as ``torch.optim.NAdam`` (momentum_decay, decoupled_weight_decay)."""

    _sparse_error = "NAdam does not support sparse gradients"

    _group_defaults = {
        "maximize": False,
        "foreach": None,
        "capturable": False,
        "differentiable": False,
        "decoupled_weight_decay": False,
    }
    _flat_keys = ("exp_avg", "exp_avg_sq")
    _state_writes = {"exp_avg_sq": 2}  # (mul_, addcmul_)

    def __init__(
        self,
        params: Iterable,
        lr: float = 2e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        momentum_decay: float = 4e-3,
        decoupled_weight_decay: bool = False,
        *,
        foreach: bool | None = None,
        maximize: bool = False,
        capturable: bool = False,
        differentiable: bool = False,
    ) -> None:
        check_common(lr, eps, betas, weight_decay, differentiable)
        check(0.0 <= momentum_decay, f"Invalid momentum_decay value: {momentum_decay}")
        defaults = dict(
            lr=lr,
            betas=betas,
            eps=eps,
            weight_decay=weight_decay,
            momentum_decay=momentum_decay,
            decoupled_weight_decay=decoupled_weight_decay,
            maximize=maximize,
            foreach=foreach,
            capturable=capturable,
            differentiable=differentiable,
        )
        super().__init__(params, defaults)

    _writes = 2

    def _init_state(self, group, p, state) -> None:
        state["step"] = scalar(0.0)
        state["mu_product"] = scalar(1.0)
        state["exp_avg"] = _zeros_like(p)
        state["exp_avg_sq"] = _zeros_like(p)

    _flat_scalars = ("step", "mu_product")

    def _update(self, group, fg) -> None:
        lr, wd, md = group["lr"], group["weight_decay"], group["momentum_decay"]
        beta1, beta2 = group["betas"]
        decoupled = group["decoupled_weight_decay"]
        fg.steps += 1
        step = fg.steps.astype(np.float64)
        if wd != 0 and decoupled:
            fg.p *= 1 - lr * wd
        g = fg.prepared_grad(group["maximize"], 0 if decoupled else wd)
        p, tmp, denom = fg.p, fg.tmp, fg.scratch(0)
        mu = beta1 * (1.0 - 0.5 * (0.96 ** (step * md)))
        mu_next = beta1 * (1.0 - 0.5 * (0.96 ** ((step + 1) * md)))
        mu_product = fg.scalars["mu_product"]
        mu_product *= mu.astype(np.float32)  # float32 state, as torch's mu_product.mul_(mu)
        mu_prod = mu_product.astype(np.float64)
        exp_avg, exp_avg_sq = fg.bufs["exp_avg"], fg.bufs["exp_avg_sq"]
        lerp_(exp_avg, g, 1 - beta1, tmp)
        exp_avg_sq *= beta2
        np.multiply(g, g, out=tmp)
        tmp *= 1 - beta2
        exp_avg_sq += tmp
        np.divide(exp_avg_sq, fg.per_element(1 - beta2**step), out=denom)
        np.sqrt(denom, out=denom)
        denom += group["eps"]
        np.divide(g, denom, out=tmp)
        tmp *= fg.per_element(-lr * (1.0 - mu) / (1.0 - mu_prod))
        p += tmp
        np.divide(exp_avg, denom, out=tmp)
        tmp *= fg.per_element((-lr * mu_next) / (1.0 - mu_prod * mu_next))
        p += tmp


def nadam(
    params: list[Tensor],
    grads: list[Tensor],
    exp_avgs: list[Tensor],
    exp_avg_sqs: list[Tensor],
    mu_products: list[Tensor],
    state_steps: list[Tensor],
    decoupled_weight_decay: bool = False,
    foreach: bool | None = None,
    capturable: bool = False,
    differentiable: bool = False,
    has_complex: bool = False,
    maximize: bool = False,
    *,
    beta1: float,
    beta2: float,
    lr: float,
    weight_decay: float,
    momentum_decay: float,
    eps: float,
) -> None:
    """Functional API that performs NAdam algorithm computation (see :class:`NAdam`): updates
    ``params``, ``exp_avgs``, ``exp_avg_sqs``, ``mu_products`` and ``state_steps`` in place."""
    group = dict(lr=lr, betas=(beta1, beta2), eps=eps, weight_decay=weight_decay)
    group.update(momentum_decay=momentum_decay, maximize=maximize)
    group["decoupled_weight_decay"] = decoupled_weight_decay
    state = {"step": state_steps, "mu_product": mu_products}
    state.update(exp_avg=exp_avgs, exp_avg_sq=exp_avg_sqs)
    _functional(NAdam, params, grads, state, group)

"""RAdam: Adam with the variance of the adaptive lr rectified in early steps."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from ember._core.tensor import Tensor
from ember.optim._flat import lerp_
from ember.optim._single import ElementwiseOptimizer, _zeros_like, check_common, scalar
from ember.optim._single import functional as _functional
from ember.optim.optimizer import Optimizer  # noqa: F401  (torch.optim.radam.Optimizer)

__all__ = ["RAdam", "radam"]


class RAdam(ElementwiseOptimizer):
    """Implements RAdam, as ``torch.optim.RAdam``."""

    _sparse_error = "RAdam does not support sparse gradients"

    _group_defaults = {
        "foreach": None,
        "maximize": False,
        "differentiable": False,
        "capturable": False,
        "decoupled_weight_decay": False,
    }
    _flat_keys = ("exp_avg", "exp_avg_sq")
    _state_writes = {"exp_avg_sq": 2}  # (mul_, addcmul_)

    def __init__(
        self,
        params: Iterable,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        decoupled_weight_decay: bool = False,
        *,
        foreach: bool | None = None,
        maximize: bool = False,
        capturable: bool = False,
        differentiable: bool = False,
    ) -> None:
        check_common(lr, eps, betas, weight_decay, differentiable)
        defaults = dict(
            lr=lr,
            betas=betas,
            eps=eps,
            weight_decay=weight_decay,
            maximize=maximize,
            foreach=foreach,
            capturable=capturable,
            decoupled_weight_decay=decoupled_weight_decay,
            differentiable=differentiable,
        )
        super().__init__(params, defaults)

    def _init_state(self, group, p, state) -> None:
        state["step"] = scalar(0.0)
        state["exp_avg"] = _zeros_like(p)
        state["exp_avg_sq"] = _zeros_like(p)

    def _update(self, group, fg) -> None:
        lr, wd, eps = group["lr"], group["weight_decay"], group["eps"]
        beta1, beta2 = group["betas"]
        decoupled = group["decoupled_weight_decay"]
        fg.steps += 1
        step = fg.steps.astype(np.float64)
        if wd != 0 and decoupled:
            fg.p *= 1 - lr * wd
        g = fg.prepared_grad(group["maximize"], 0 if decoupled else wd)
        p, tmp, tmp2 = fg.p, fg.tmp, fg.scratch(0)
        exp_avg, exp_avg_sq = fg.bufs["exp_avg"], fg.bufs["exp_avg_sq"]
        lerp_(exp_avg, g, 1 - beta1, tmp)
        exp_avg_sq *= beta2
        np.multiply(g, g, out=tmp)
        tmp *= 1 - beta2
        exp_avg_sq += tmp
        bias_correction1 = 1 - beta1**step
        bias_correction2 = 1 - beta2**step
        rho_inf = 2 / (1 - beta2) - 1
        rho_t = rho_inf - 2 * step * (beta2**step) / bias_correction2
        rectified = rho_t > 5.0
        np.divide(exp_avg, fg.per_element(bias_correction1), out=tmp)  # bias-corrected exp_avg
        tmp *= lr
        if rectified.any():
            rt = np.where(rectified, rho_t, rho_inf)  # (unused where not rectified)
            rect = ((rt - 4) * (rt - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rt)) ** 0.5
            np.sqrt(exp_avg_sq, out=tmp2)
            tmp2 += eps
            np.divide(fg.per_element(bias_correction2**0.5), tmp2, out=tmp2)  # adaptive lr
            tmp2 *= tmp
            tmp2 *= fg.per_element(rect)
            if rectified.all():
                tmp, tmp2 = tmp2, tmp
            else:
                np.copyto(tmp, tmp2, where=np.repeat(rectified, fg.sizes))
        p -= tmp


def radam(
    params: list[Tensor],
    grads: list[Tensor],
    exp_avgs: list[Tensor],
    exp_avg_sqs: list[Tensor],
    state_steps: list[Tensor],
    decoupled_weight_decay: bool = False,
    foreach: bool | None = None,
    differentiable: bool = False,
    capturable: bool = False,
    has_complex: bool = False,
    maximize: bool = False,
    *,
    beta1: float,
    beta2: float,
    lr: float,
    weight_decay: float,
    eps: float,
) -> None:
    """Functional API that performs RAdam algorithm computation (see :class:`RAdam`): updates
    ``params``, ``exp_avgs``, ``exp_avg_sqs`` and ``state_steps`` in place."""
    group = dict(lr=lr, betas=(beta1, beta2), eps=eps, weight_decay=weight_decay)
    group.update(maximize=maximize, decoupled_weight_decay=decoupled_weight_decay)
    state = {"step": state_steps, "exp_avg": exp_avgs, "exp_avg_sq": exp_avg_sqs}
    _functional(RAdam, params, grads, state, group)

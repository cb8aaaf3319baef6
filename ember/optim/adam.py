"""Adam, with amsgrad, maximize, and L2 or decoupled (AdamW) weight decay."""

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
from ember.optim.optimizer import Optimizer  # noqa: F401  (torch.optim.adam.Optimizer)

__all__ = ["Adam", "adam"]


class Adam(ElementwiseOptimizer):
    """Implements the Adam algorithm, as ``torch.optim.Adam``.

    ``weight_decay`` adds ``weight_decay * param`` to the gradient (L2) unless
    ``decoupled_weight_decay=True``, which shrinks the parameter by ``lr * weight_decay``
    directly (AdamW).
    """

    def __init__(
        self,
        params: Iterable,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        amsgrad: bool = False,
        *,
        foreach: bool | None = None,
        maximize: bool = False,
        capturable: bool = False,
        differentiable: bool = False,
        fused: bool | None = None,
        decoupled_weight_decay: bool = False,
    ) -> None:
        check_common(lr, eps, betas, weight_decay, differentiable)
        if fused and foreach:
            raise RuntimeError("`fused` and `foreach` cannot be `True` together.")
        defaults = dict(
            lr=lr,
            betas=betas,
            eps=eps,
            weight_decay=weight_decay,
            amsgrad=amsgrad,
            maximize=maximize,
            foreach=foreach,
            capturable=capturable,
            differentiable=differentiable,
            fused=fused,
            decoupled_weight_decay=decoupled_weight_decay,
        )
        super().__init__(params, defaults)

    _group_defaults = {
        "amsgrad": False,
        "maximize": False,
        "foreach": None,
        "capturable": False,
        "differentiable": False,
        "fused": None,
        "decoupled_weight_decay": False,
    }
    _sparse_error = "Adam does not support sparse gradients, please consider SparseAdam instead"

    _blockwise = True
    _state_writes = {"exp_avg_sq": 2}  # (mul_, addcmul_)

    def _init_state(self, group, p, state) -> None:
        state["step"] = scalar(0.0)
        state["exp_avg"] = _zeros_like(p)
        state["exp_avg_sq"] = _zeros_like(p)
        if group["amsgrad"]:
            state["max_exp_avg_sq"] = _zeros_like(p)

    def _flat_state_keys(self, group) -> tuple[str, ...]:
        return ("exp_avg", "exp_avg_sq") + (("max_exp_avg_sq",) if group["amsgrad"] else ())

    def _update(self, group, fg) -> None:
        lr, eps, wd, amsgrad = group["lr"], group["eps"], group["weight_decay"], group["amsgrad"]
        beta1, beta2 = group["betas"]
        l2 = wd != 0 and not group["decoupled_weight_decay"]
        maximize, decoupled = group["maximize"], group["decoupled_weight_decay"]
        fg.steps += 1
        steps = fg.steps.astype(np.float64)
        step_size = fg.per_element(lr / (1 - beta1**steps))
        bias_correction2_sqrt = fg.per_element((1 - beta2**steps) ** 0.5)

        def update(g, p, tmp, m, v, mx, step_size, bias_correction2_sqrt):
            if maximize:
                np.negative(g, out=g)
            if wd != 0:
                if decoupled:
                    p *= 1 - lr * wd
                else:
                    np.multiply(p, wd, out=tmp)
                    g += tmp
            lerp_(m, g, 1 - beta1, tmp)
            v *= beta2
            np.multiply(g, g, out=tmp)
            tmp *= 1 - beta2
            v += tmp
            if amsgrad:
                np.maximum(mx, v, out=mx)
                np.sqrt(mx, out=tmp)
            else:
                np.sqrt(v, out=tmp)
            tmp /= bias_correction2_sqrt
            tmp += eps
            np.divide(m, tmp, out=tmp)
            tmp *= step_size
            p -= tmp

        fg.run_blocks(
            update,
            fg.p,
            fg.tmp,
            fg.bufs["exp_avg"],
            fg.bufs["exp_avg_sq"],
            fg.bufs["max_exp_avg_sq"] if amsgrad else None,
            step_size,
            bias_correction2_sqrt,
            writable=maximize or l2,
        )


def adam(
    params: list[Tensor],
    grads: list[Tensor],
    exp_avgs: list[Tensor],
    exp_avg_sqs: list[Tensor],
    max_exp_avg_sqs: list[Tensor],
    state_steps: list[Tensor],
    foreach: bool | None = None,
    capturable: bool = False,
    differentiable: bool = False,
    fused: bool | None = None,
    grad_scale: Tensor | None = None,
    found_inf: Tensor | None = None,
    has_complex: bool = False,
    decoupled_weight_decay: bool = False,
    *,
    amsgrad: bool,
    beta1: float,
    beta2: float,
    lr: float,
    weight_decay: float,
    eps: float,
    maximize: bool,
) -> None:
    """Functional API that performs Adam algorithm computation (see :class:`Adam`): updates
    ``params``, ``exp_avgs``, ``exp_avg_sqs``, ``max_exp_avg_sqs`` and ``state_steps`` in place."""
    group = {
        "lr": lr,
        "betas": (beta1, beta2),
        "eps": eps,
        "weight_decay": weight_decay,
        "amsgrad": amsgrad,
        "maximize": maximize,
        "decoupled_weight_decay": decoupled_weight_decay,
    }
    state = {"step": state_steps, "exp_avg": exp_avgs, "exp_avg_sq": exp_avg_sqs}
    if amsgrad:
        state["max_exp_avg_sq"] = max_exp_avg_sqs
    _functional(Adam, params, grads, state, group, grad_scale, found_inf)

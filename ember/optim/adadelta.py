"""Adadelta: unit-corrected adaptive steps from running averages of squared grads and updates."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from ember._core.tensor import Tensor
from ember.optim._single import ElementwiseOptimizer, _zeros_like, check, check_common, scalar
from ember.optim._single import functional as _functional
from ember.optim.optimizer import Optimizer  # noqa: F401  (torch.optim.adadelta.Optimizer)

__all__ = ["Adadelta", "adadelta"]


class Adadelta(ElementwiseOptimizer):
    """Implements Adadelta, as ``torch.optim.Adadelta``."""

    _sparse_error = "Adadelta does not support sparse gradients"

    _group_defaults = {
        "foreach": None,
        "maximize": False,
        "differentiable": False,
        "capturable": False,
    }
    _flat_keys = ("square_avg", "acc_delta")
    _state_writes = {"square_avg": 2, "acc_delta": 2}  # (mul_, addcmul_)

    def __init__(
        self,
        params: Iterable,
        lr: float = 1.0,
        rho: float = 0.9,
        eps: float = 1e-6,
        weight_decay: float = 0,
        foreach: bool | None = None,
        *,
        capturable: bool = False,
        maximize: bool = False,
        differentiable: bool = False,
    ) -> None:
        check_common(lr)
        check(0.0 <= rho <= 1.0, f"Invalid rho value: {rho}")
        check_common(lr, eps=eps, weight_decay=weight_decay, differentiable=differentiable)
        defaults = dict(
            lr=lr,
            rho=rho,
            eps=eps,
            weight_decay=weight_decay,
            maximize=maximize,
            capturable=capturable,
            foreach=foreach,
            differentiable=differentiable,
        )
        super().__init__(params, defaults)

    def _init_state(self, group, p, state) -> None:
        state["step"] = scalar(0.0)
        state["square_avg"] = _zeros_like(p)
        state["acc_delta"] = _zeros_like(p)

    def _update(self, group, fg) -> None:
        rho, eps = group["rho"], group["eps"]
        fg.steps += 1
        g = fg.prepared_grad(group["maximize"], group["weight_decay"])
        p, tmp, delta = fg.p, fg.tmp, fg.scratch(0)
        square_avg, acc_delta = fg.bufs["square_avg"], fg.bufs["acc_delta"]
        square_avg *= rho
        np.multiply(g, g, out=tmp)
        tmp *= 1 - rho
        square_avg += tmp
        np.add(square_avg, eps, out=tmp)
        np.sqrt(tmp, out=tmp)  # std
        np.add(acc_delta, eps, out=delta)
        np.sqrt(delta, out=delta)
        delta /= tmp
        delta *= g
        acc_delta *= rho
        np.multiply(delta, delta, out=tmp)
        tmp *= 1 - rho
        acc_delta += tmp
        delta *= group["lr"]
        p -= delta


def adadelta(
    params: list[Tensor],
    grads: list[Tensor],
    square_avgs: list[Tensor],
    acc_deltas: list[Tensor],
    state_steps: list[Tensor],
    capturable: bool = False,
    foreach: bool | None = None,
    differentiable: bool = False,
    has_complex: bool = False,
    *,
    lr: float,
    rho: float,
    eps: float,
    weight_decay: float,
    maximize: bool,
) -> None:
    """Functional API that performs Adadelta algorithm computation (see :class:`Adadelta`):
    updates ``params``, ``square_avgs``, ``acc_deltas`` and ``state_steps`` in place."""
    group = dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize)
    state = {"step": state_steps, "square_avg": square_avgs, "acc_delta": acc_deltas}
    _functional(Adadelta, params, grads, state, group)

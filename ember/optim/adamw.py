"""AdamW: Adam with decoupled weight decay (default 1e-2)."""

from __future__ import annotations

from collections.abc import Iterable

from ember._core.tensor import Tensor
from ember.optim.adam import Adam, adam
from ember.optim.optimizer import Optimizer  # noqa: F401  (torch.optim.adamw.Optimizer)

__all__ = ["AdamW", "adamw"]


class AdamW(Adam):
    """Implements AdamW, as ``torch.optim.AdamW``: the parameter shrinks by ``lr * weight_decay``
    each step, independently of the adaptive gradient scaling."""

    def __init__(
        self,
        params: Iterable,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 1e-2,
        amsgrad: bool = False,
        *,
        maximize: bool = False,
        foreach: bool | None = None,
        capturable: bool = False,
        differentiable: bool = False,
        fused: bool | None = None,
    ) -> None:
        super().__init__(
            params,
            lr,
            betas,
            eps,
            weight_decay,
            amsgrad,
            foreach=foreach,
            maximize=maximize,
            capturable=capturable,
            differentiable=differentiable,
            fused=fused,
            decoupled_weight_decay=True,
        )

    def __setstate__(self, state) -> None:
        super().__setstate__(state)
        for group in self.param_groups:
            group["decoupled_weight_decay"] = True


def adamw(
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
    *,
    amsgrad: bool,
    beta1: float,
    beta2: float,
    lr: float,
    weight_decay: float,
    eps: float,
    maximize: bool,
) -> None:
    """Functional API that performs AdamW algorithm computation: :func:`adam` with decoupled
    weight decay (see :class:`AdamW`)."""
    adam(
        params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, foreach, capturable,
        differentiable, fused, grad_scale, found_inf, has_complex, True, amsgrad=amsgrad,
        beta1=beta1, beta2=beta2, lr=lr, weight_decay=weight_decay, eps=eps, maximize=maximize,
    )  # fmt: skip

"""AdamW: Adam with decoupled weight decay (default 1e-2)."""

from __future__ import annotations

from collections.abc import Iterable

from ember.optim.adam import Adam

__all__ = ["AdamW"]


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

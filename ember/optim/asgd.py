"""ASGD: averaged stochastic gradient descent."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from ember._core.tensor import Tensor
from ember.optim._single import ElementwiseOptimizer, _zeros_like, check_common, scalar
from ember.optim._single import functional as _functional
from ember.optim.optimizer import Optimizer  # noqa: F401  (torch.optim.asgd.Optimizer)

__all__ = ["ASGD", "asgd"]


class ASGD(ElementwiseOptimizer):
    """Implements averaged SGD, as ``torch.optim.ASGD`` (the average is ``state["ax"]``)."""

    _sparse_error = "ASGD does not support sparse gradients"

    _group_defaults = {
        "foreach": None,
        "maximize": False,
        "differentiable": False,
        "capturable": False,
    }
    _flat_keys = ("ax",)

    def __init__(
        self,
        params: Iterable,
        lr: float = 1e-2,
        lambd: float = 1e-4,
        alpha: float = 0.75,
        t0: float = 1e6,
        weight_decay: float = 0,
        foreach: bool | None = None,
        maximize: bool = False,
        differentiable: bool = False,
        capturable: bool = False,
    ) -> None:
        check_common(lr, weight_decay=weight_decay, differentiable=differentiable)
        defaults = dict(
            lr=lr,
            lambd=lambd,
            alpha=alpha,
            t0=t0,
            weight_decay=weight_decay,
            foreach=foreach,
            maximize=maximize,
            differentiable=differentiable,
            capturable=capturable,
        )
        super().__init__(params, defaults)

    _writes = 2  # (mul_ then add_)

    def _init_state(self, group, p, state) -> None:
        state["step"] = scalar(0.0)
        state["eta"] = scalar(float(group["lr"]))
        state["mu"] = scalar(1.0)
        state["ax"] = _zeros_like(p)

    _flat_scalars = ("step", "eta", "mu")

    def _update(self, group, fg) -> None:
        lr, lambd = group["lr"], group["lambd"]
        fg.steps += 1
        g = fg.prepared_grad(group["maximize"], group["weight_decay"])
        p, tmp, ax = fg.p, fg.tmp, fg.bufs["ax"]
        eta_value = fg.scalars["eta"].astype(np.float64)
        mu = fg.scalars["mu"]
        p *= fg.per_element(1 - lambd * eta_value)
        np.multiply(g, fg.per_element(eta_value), out=tmp)
        p -= tmp
        one = mu == 1
        if one.all():
            np.copyto(ax, p)
        else:
            np.subtract(p, ax, out=tmp)
            tmp *= fg.per_element(mu.astype(np.float64))
            ax += tmp
            if one.any():
                np.copyto(ax, p, where=np.repeat(one, fg.sizes))
        step = fg.steps.astype(np.float64)
        fg.scalars["eta"][:] = lr / ((1 + lambd * lr * step) ** group["alpha"])
        fg.scalars["mu"][:] = 1 / np.maximum(1, step - group["t0"])


def asgd(
    params: list[Tensor],
    grads: list[Tensor],
    axs: list[Tensor],
    mus: list[Tensor],
    etas: list[Tensor],
    state_steps: list[Tensor],
    foreach: bool | None = None,
    maximize: bool = False,
    differentiable: bool = False,
    capturable: bool = False,
    has_complex: bool = False,
    *,
    lambd: float,
    lr: float,
    t0: float,
    alpha: float,
    weight_decay: float,
) -> None:
    """Functional API that performs ASGD algorithm computation (see :class:`ASGD`): updates
    ``params``, ``axs``, ``mus``, ``etas`` and ``state_steps`` in place."""
    group = dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0, weight_decay=weight_decay)
    group["maximize"] = maximize
    state = {"step": state_steps, "eta": etas, "mu": mus, "ax": axs}
    _functional(ASGD, params, grads, state, group, checked=False)  # (torch checks no steps)

"""Rprop: resilient backpropagation, steps by the sign of the gradient with adaptive sizes."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from ember._core.tensor import Tensor
from ember.optim._single import (
    ElementwiseOptimizer,
    _full_like,
    _zeros_like,
    check_common,
    scalar,
)
from ember.optim._single import functional as _functional
from ember.optim.optimizer import Optimizer  # noqa: F401  (torch.optim.rprop.Optimizer)

__all__ = ["Rprop", "rprop"]


class Rprop(ElementwiseOptimizer):
    """Implements Rprop, as ``torch.optim.Rprop``."""

    _sparse_error = "Rprop does not support sparse gradients"

    _group_defaults = {
        "foreach": None,
        "maximize": False,
        "differentiable": False,
        "capturable": False,
    }
    _flat_keys = ("prev", "step_size")
    _state_writes = {"step_size": 2}  # (mul_, clamp_)

    def __init__(
        self,
        params: Iterable,
        lr: float = 1e-2,
        etas: tuple[float, float] = (0.5, 1.2),
        step_sizes: tuple[float, float] = (1e-6, 50),
        *,
        capturable: bool = False,
        foreach: bool | None = None,
        maximize: bool = False,
        differentiable: bool = False,
    ) -> None:
        check_common(lr, differentiable=differentiable)
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        defaults = dict(
            lr=lr,
            etas=etas,
            step_sizes=step_sizes,
            foreach=foreach,
            maximize=maximize,
            differentiable=differentiable,
            capturable=capturable,
        )
        super().__init__(params, defaults)

    def _init_state(self, group, p, state) -> None:
        state["step"] = scalar(0.0)
        state["prev"] = _zeros_like(p)
        state["step_size"] = _full_like(p.grad, float(group["lr"]))

    def _update(self, group, fg) -> None:
        etaminus, etaplus = group["etas"]
        step_size_min, step_size_max = group["step_sizes"]
        fg.steps += 1
        g = fg.prepared_grad(group["maximize"])
        dt = fg.p.dtype.type
        p, sign, upd = fg.p, fg.tmp, fg.scratch(0)
        prev, step_size = fg.bufs["prev"], fg.bufs["step_size"]
        np.multiply(g, prev, out=sign)
        np.sign(sign, out=sign)
        factor = np.where(sign > 0, dt(etaplus), np.where(sign < 0, dt(etaminus), dt(1)))
        step_size *= factor
        np.maximum(step_size, step_size_min, out=step_size)
        np.minimum(step_size, step_size_max, out=step_size)
        np.copyto(prev, g)
        prev[sign < 0] = 0
        np.sign(prev, out=upd)
        upd *= step_size
        p -= upd


def rprop(
    params: list[Tensor],
    grads: list[Tensor],
    prevs: list[Tensor],
    step_sizes: list[Tensor],
    state_steps: list[Tensor],
    foreach: bool | None = None,
    capturable: bool = False,
    maximize: bool = False,
    differentiable: bool = False,
    has_complex: bool = False,
    *,
    step_size_min: float,
    step_size_max: float,
    etaminus: float,
    etaplus: float,
) -> None:
    """Functional API that performs Rprop algorithm computation (see :class:`Rprop`): updates
    ``params``, ``prevs``, ``step_sizes`` and ``state_steps`` in place."""
    group = dict(etas=(etaminus, etaplus), step_sizes=(step_size_min, step_size_max))
    group.update(lr=0.0, maximize=maximize)  # (lr only seeds the step sizes, given here)
    state = {"step": state_steps, "prev": prevs, "step_size": step_sizes}
    _functional(Rprop, params, grads, state, group)

"""Adagrad: per-element learning rates from the sum of squared gradients."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from ember._core.tensor import Tensor
from ember.optim._single import ElementwiseOptimizer, _full_like, check, check_common, scalar
from ember.optim._single import check_steps as _check_steps
from ember.optim._single import functional as _functional
from ember.optim.optimizer import Optimizer  # noqa: F401  (torch.optim.adagrad.Optimizer)

__all__ = ["Adagrad", "adagrad"]


class Adagrad(ElementwiseOptimizer):
    """Implements Adagrad, as ``torch.optim.Adagrad`` (state is created for every parameter)."""

    _group_defaults = {"foreach": None, "maximize": False, "differentiable": False, "fused": None}
    _flat_keys = ("sum",)

    def __init__(
        self,
        params: Iterable,
        lr: float = 1e-2,
        lr_decay: float = 0,
        weight_decay: float = 0,
        initial_accumulator_value: float = 0,
        eps: float = 1e-10,
        foreach: bool | None = None,
        *,
        maximize: bool = False,
        differentiable: bool = False,
        fused: bool | None = None,
    ) -> None:
        check_common(lr)
        check(0.0 <= lr_decay, f"Invalid lr_decay value: {lr_decay}")
        check(0.0 <= weight_decay, f"Invalid weight_decay value: {weight_decay}")
        check(
            0.0 <= initial_accumulator_value,
            f"Invalid initial_accumulator_value value: {initial_accumulator_value}",
        )
        check_common(lr, eps=eps, differentiable=differentiable)
        defaults = dict(
            lr=lr,
            lr_decay=lr_decay,
            eps=eps,
            weight_decay=weight_decay,
            initial_accumulator_value=initial_accumulator_value,
            foreach=foreach,
            maximize=maximize,
            differentiable=differentiable,
            fused=fused,
        )
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                self._init_state(group, p, self.state[p])

    def _init_state(self, group, p, state) -> None:
        state["step"] = scalar(0.0)
        state["sum"] = _full_like(p, self.defaults["initial_accumulator_value"])

    def share_memory(self) -> None:
        """Move the ``sum`` state to shared memory (the optimizer then keeps the per-parameter
        path, so that the updates stay in the shared memory)."""
        self._shared_state = True
        for group in self.param_groups:
            for p in group["params"]:
                self.state[p]["sum"].share_memory_()

    def _check_sparse(self, group) -> None:
        if group["fused"]:
            raise RuntimeError("`fused` does not support sparse grad or complex param")
        if group["weight_decay"] != 0:
            raise RuntimeError("weight_decay option is not compatible with sparse gradients")

    def _sparse_update(self, group, p, grad, state) -> None:
        # torch's sparse Adagrad: only the rows the (coalesced) gradient touches change
        if len(state) == 0:
            self._init_state(group, p, state)
        step_t = state["step"]
        step_t.add_(1)
        clr = group["lr"] / (1 + (step_t.item() - 1) * group["lr_decay"])
        grad = grad.coalesce()  # the update is non-linear: indices must be unique
        values = grad._values()
        if values.numel() == 0:
            return
        where = tuple(grad._indices().unbind(0))
        state_sum = state["sum"]
        state_sum.index_put_(where, values.pow(2), accumulate=True)
        std_values = state_sum[where].sqrt_().add_(group["eps"])
        p.index_put_(where, (values / std_values).mul_(-clr), accumulate=True)

    def _update(self, group, fg) -> None:
        fg.steps += 1
        g = fg.prepared_grad(group["maximize"], group["weight_decay"])
        p, tmp = fg.p, fg.tmp
        step = fg.steps.astype(np.float64)
        clr = fg.per_element(group["lr"] / (1 + (step - 1) * group["lr_decay"]))
        state_sum = fg.bufs["sum"]
        np.multiply(g, g, out=tmp)
        state_sum += tmp
        np.sqrt(state_sum, out=tmp)
        tmp += group["eps"]
        np.divide(g, tmp, out=tmp)
        tmp *= clr
        p -= tmp


def adagrad(
    params: list[Tensor],
    grads: list[Tensor],
    state_sums: list[Tensor],
    state_steps: list[Tensor],
    fused: bool | None = None,
    grad_scale: Tensor | None = None,
    found_inf: Tensor | None = None,
    has_sparse_grad: bool = False,
    foreach: bool | None = None,
    differentiable: bool = False,
    has_complex: bool = False,
    *,
    lr: float,
    weight_decay: float,
    lr_decay: float,
    eps: float,
    maximize: bool,
) -> None:
    """Functional API that performs Adagrad algorithm computation (see :class:`Adagrad`):
    updates ``params``, ``state_sums`` and ``state_steps`` in place (a sparse gradient updates
    only the rows it touches)."""
    group = dict(lr=lr, weight_decay=weight_decay, lr_decay=lr_decay, eps=eps, maximize=maximize)
    group["fused"] = fused
    dense = [i for i, g in enumerate(grads) if not g.is_sparse]
    for i in sorted(set(range(len(grads))) - set(dense)):
        _check_steps(state_steps)
        Adagrad._check_sparse(None, group)
        grad = -grads[i] if maximize else grads[i]
        state = {"step": state_steps[i], "sum": state_sums[i]}
        Adagrad._sparse_update(None, group, params[i], grad, state)
    pick = [[lst[i] for i in dense] for lst in (params, grads, state_steps, state_sums)]
    state = {"step": pick[2], "sum": pick[3]}
    _functional(Adagrad, pick[0], pick[1], state, group, grad_scale, found_inf)

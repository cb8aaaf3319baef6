"""SGD: stochastic gradient descent with momentum, dampening, Nesterov and L2 weight decay."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from ember._core.tensor import Tensor
from ember.optim._single import ElementwiseOptimizer, _zeros_like, check_lr_size
from ember.optim._single import functional_step as _functional_step
from ember.optim.optimizer import Optimizer  # noqa: F401  (torch.optim.sgd.Optimizer)

__all__ = ["SGD", "sgd"]

_FRESH, _LATER = ((), (0,)), ((), (2,))  # the momentum buffer's bumps (none, or one buffer)


def _check_lr(lr) -> None:
    check_lr_size(lr)
    if not 0.0 <= lr:
        raise ValueError(f"Invalid learning rate: {lr}")


class SGD(ElementwiseOptimizer):
    """Implements stochastic gradient descent (optionally with momentum), as ``torch.optim.SGD``.

    Weight decay is L2 regularisation folded into the gradient (``grad + weight_decay * param``)
    before momentum, unlike :class:`AdamW`'s decoupled decay.
    """

    def __init__(
        self,
        params: Iterable,
        lr: float = 1e-3,
        momentum: float = 0,
        dampening: float = 0,
        weight_decay: float = 0,
        nesterov: bool = False,
        *,
        maximize: bool = False,
        foreach: bool | None = None,
        differentiable: bool = False,
        fused: bool | None = None,
    ) -> None:
        _check_lr(lr)
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if differentiable:
            raise NotImplementedError("ember.optim: differentiable=True is not supported")
        if fused and foreach:
            raise RuntimeError("`fused` and `foreach` cannot be `True` together.")
        defaults = dict(
            lr=lr,
            momentum=momentum,
            dampening=dampening,
            weight_decay=weight_decay,
            nesterov=nesterov,
            maximize=maximize,
            foreach=foreach,
            differentiable=differentiable,
            fused=fused,
        )
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, defaults)

    _group_defaults = {
        "nesterov": False,
        "maximize": False,
        "foreach": None,
        "differentiable": False,
        "fused": False,
    }
    _flat_scalars = ()
    _complex_ok = True  # (the update is linear: complex numbers update as they are)

    _blockwise = True

    @classmethod
    def _state_bumps(cls, names, flags) -> tuple[int, ...]:
        # a new momentum buffer is the gradient's clone (version 0); then mul_ and add_
        return _FRESH[len(names)] if flags.get("fresh") else _LATER[len(names)]

    def _check_sparse(self, group) -> None:
        if group["fused"]:
            raise RuntimeError("`_fused_sgd` does not support sparse gradients")

    def _init_state(self, group, p, state) -> None:
        if group["momentum"] != 0:  # (the first step writes the gradient into it)
            state["momentum_buffer"] = _zeros_like(p)

    def _flat_state_keys(self, group) -> tuple[str, ...]:
        return ("momentum_buffer",) if group["momentum"] != 0 else ()

    def _flags(self, group, params) -> dict | None:
        # the first step of a momentum buffer copies the gradient: all or none of a group's
        if group["momentum"] == 0:
            return {"fresh": False}
        fresh = [self.state[p].get("momentum_buffer") is None for p in params]
        return None if any(fresh) and not all(fresh) else {"fresh": fresh[0]}

    def _update(self, group, fg, fresh: bool) -> None:
        lr, wd, momentum = group["lr"], group["weight_decay"], group["momentum"]
        dampening = group["dampening"]
        writable = group["maximize"] or wd != 0 or (momentum != 0 and group["nesterov"])
        maximize, nesterov = group["maximize"], group["nesterov"]
        buf = fg.bufs["momentum_buffer"] if momentum != 0 else None

        def update(g, p, tmp, buf):
            if maximize:
                np.negative(g, out=g)
            if wd != 0:
                np.multiply(p, wd, out=tmp)
                g += tmp
            if momentum != 0:
                if fresh:
                    buf[...] = g
                else:
                    buf *= momentum
                    if dampening:
                        np.multiply(g, 1 - dampening, out=tmp)
                        buf += tmp
                    else:
                        buf += g
                if nesterov:
                    np.multiply(buf, momentum, out=tmp)
                    g += tmp
                else:
                    g = buf
            np.multiply(g, lr, out=tmp)
            p -= tmp

        fg.run_blocks(update, fg.p, fg.tmp, buf, writable=writable)

    def _sparse_update(self, group, p, grad, state) -> None:
        # a sparse gradient has no array: the same steps in sparse tensor ops (torch's sparse
        # momentum buffer is the sparse gradient itself, then sums of sparse tensors)
        lr, wd, momentum = group["lr"], group["weight_decay"], group["momentum"]
        if wd != 0:
            grad = grad.add(p, alpha=wd)
        if momentum != 0:
            buf = state.get("momentum_buffer")
            if buf is None:
                buf = state["momentum_buffer"] = grad.clone().detach()
            else:
                buf.mul_(momentum).add_(grad, alpha=1 - group["dampening"])
            grad = grad.add(buf, alpha=momentum) if group["nesterov"] else buf
        p.add_(grad, alpha=-lr)


def sgd(
    params: list[Tensor],
    d_p_list: list[Tensor],
    momentum_buffer_list: list[Tensor | None],
    has_sparse_grad: bool = False,
    foreach: bool | None = None,
    fused: bool | None = None,
    grad_scale: Tensor | None = None,
    found_inf: Tensor | None = None,
    *,
    weight_decay: float,
    momentum: float,
    lr: float,
    dampening: float,
    nesterov: bool,
    maximize: bool,
) -> None:
    """Functional API that performs SGD algorithm computation (see :class:`SGD`): updates
    ``params`` in place; with ``momentum``, a None entry of ``momentum_buffer_list`` becomes
    the new buffer (the gradient's copy) and the others are updated in place."""
    group = {
        "lr": lr,
        "momentum": momentum,
        "dampening": dampening,
        "weight_decay": weight_decay,
        "nesterov": nesterov,
        "maximize": maximize,
    }
    keys = ("momentum_buffer",) if momentum != 0 else ()
    for i, (p, g) in enumerate(zip(params, d_p_list)):
        state = {"momentum_buffer": momentum_buffer_list[i]} if momentum != 0 else {}
        if g.is_sparse:
            SGD._sparse_update(None, group, p, -g if maximize else g, state)
            if momentum != 0:
                momentum_buffer_list[i] = state["momentum_buffer"]
            continue
        fresh = momentum != 0 and state["momentum_buffer"] is None
        if fresh:
            state["momentum_buffer"] = momentum_buffer_list[i] = _zeros_like(g)
        _functional_step(
            SGD, group, [p], [g], keys, [state], {"fresh": fresh}, grad_scale, found_inf
        )

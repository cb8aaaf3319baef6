"""SGD: stochastic gradient descent with momentum, dampening, Nesterov and L2 weight decay."""

from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np

from ember._core.grad_mode import enable_grad
from ember.optim._flat import can_fuse, flat_group
from ember.optim.optimizer import Optimizer, _no_grad_step

__all__ = ["SGD"]


def _check_lr(lr) -> None:
    if hasattr(lr, "numel") and lr.numel() != 1:
        raise ValueError("Tensor lr must be 1-element")
    if not 0.0 <= lr:
        raise ValueError(f"Invalid learning rate: {lr}")


class SGD(Optimizer):
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

    def __setstate__(self, state) -> None:
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("nesterov", False)
            group.setdefault("maximize", False)
            group.setdefault("foreach", None)
            group.setdefault("differentiable", False)
            group.setdefault("fused", False)

    @_no_grad_step
    def step(self, closure: Callable[[], float] | None = None) -> float | None:
        """Perform one optimization step; ``closure`` re-evaluates the model, returns the loss."""
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        for index, group in enumerate(self.param_groups):
            params = [p for p in group["params"] if p.grad is not None]
            if not params:
                continue
            momentum = group["momentum"]
            fresh = [self.state[p].get("momentum_buffer") is None for p in params]
            mixed = momentum != 0 and any(fresh) and not all(fresh)
            if group["fused"] and any(p.grad.is_sparse for p in params):
                raise RuntimeError("`_fused_sgd` does not support sparse gradients")
            use_flat = group["foreach"] is not False or group["fused"]
            if use_flat and not mixed and can_fuse(params, True):
                self._flat_step(index, group, params, fresh[0])
            else:
                self._single_step(group, params)
        return loss

    def _single_step(self, group, params) -> None:
        lr, wd, momentum = group["lr"], group["weight_decay"], group["momentum"]
        dampening, nesterov = group["dampening"], group["nesterov"]
        for p in params:
            grad = p.grad if not group["maximize"] else -p.grad
            if wd != 0:
                grad = grad.add(p, alpha=wd)
            if momentum != 0:
                state = self.state[p]
                buf = state.get("momentum_buffer")
                if buf is None:
                    buf = grad.clone().detach()
                    state["momentum_buffer"] = buf
                else:
                    buf.mul_(momentum).add_(grad, alpha=1 - dampening)
                grad = grad.add(buf, alpha=momentum) if nesterov else buf
            p.add_(grad, alpha=-lr)

    def _flat_step(self, index, group, params, fresh: bool) -> None:
        lr, wd, momentum = group["lr"], group["weight_decay"], group["momentum"]
        dampening = group["dampening"]
        keys = ("momentum_buffer",) if momentum != 0 else ()
        fg = flat_group(self, index, params, keys, with_step=False)
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
        fg.scatter()

"""Adam, with amsgrad, maximize, and L2 or decoupled (AdamW) weight decay."""

from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np

from ember._core.dtype import float32
from ember._core.grad_mode import enable_grad
from ember._ops import API
from ember.optim._flat import can_fuse, flat_group
from ember.optim._single import _COMPLEX
from ember.optim.optimizer import Optimizer, _no_grad_step
from ember.optim.sgd import _check_lr

__all__ = ["Adam"]

_zeros_like = API["zeros_like"]
_tensor = API["tensor"]
_maximum = API["maximum"]


class Adam(Optimizer):
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
        _check_lr(lr)
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if differentiable:
            raise NotImplementedError("ember.optim: differentiable=True is not supported")
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

    def __setstate__(self, state) -> None:
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("amsgrad", False)
            group.setdefault("maximize", False)
            group.setdefault("foreach", None)
            group.setdefault("capturable", False)
            group.setdefault("differentiable", False)
            group.setdefault("fused", None)
            group.setdefault("decoupled_weight_decay", False)

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
            if any(p.grad.is_sparse for p in params):  # (AdamW too: torch's words)
                raise RuntimeError(
                    "Adam does not support sparse gradients, please consider SparseAdam instead"
                )
            use_flat = group["foreach"] is not False or group["fused"]
            if use_flat and can_fuse(params, True):
                self._flat_step(index, group, params)
            else:
                self._single_step(group, params)
        return loss

    def _init_state(self, p, amsgrad: bool) -> dict:
        state = self.state[p]
        if len(state) == 0:
            state["step"] = _tensor(0.0, dtype=float32)
            state["exp_avg"] = _zeros_like(p)
            state["exp_avg_sq"] = _zeros_like(p)
            if amsgrad:
                state["max_exp_avg_sq"] = _zeros_like(p)
        return state

    def _single_step(self, group, params) -> None:
        lr, eps, wd, amsgrad = group["lr"], group["eps"], group["weight_decay"], group["amsgrad"]
        beta1, beta2 = group["betas"]
        for p in params:
            if p.is_complex():
                raise NotImplementedError(_COMPLEX)
            state = self._init_state(p, amsgrad)
            grad = p.grad if not group["maximize"] else -p.grad
            step_t = state["step"]
            step_t.add_(1)
            if wd != 0:
                if group["decoupled_weight_decay"]:
                    p.mul_(1 - lr * wd)
                else:
                    grad = grad.add(p, alpha=wd)
            exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
            exp_avg.lerp_(grad, 1 - beta1)
            exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
            step = step_t.item()
            bias_correction1 = 1 - beta1**step
            bias_correction2_sqrt = (1 - beta2**step) ** 0.5
            step_size = lr / bias_correction1
            if amsgrad:
                mx = state["max_exp_avg_sq"]
                mx.copy_(_maximum(mx, exp_avg_sq))
                denom = (mx.sqrt() / bias_correction2_sqrt).add_(eps)
            else:
                denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps)
            p.addcdiv_(exp_avg, denom, value=-step_size)

    def _flat_step(self, index, group, params) -> None:
        lr, eps, wd, amsgrad = group["lr"], group["eps"], group["weight_decay"], group["amsgrad"]
        beta1, beta2 = group["betas"]
        keys = ("exp_avg", "exp_avg_sq") + (("max_exp_avg_sq",) if amsgrad else ())
        fg = flat_group(  # new parameters get torch's zero state before the buffers are built
            self,
            index,
            params,
            keys,
            with_step=True,
            init=lambda p, st: self._init_state(p, amsgrad),
        )
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
            # exp_avg.lerp_(grad, 1 - beta1) == exp_avg + (1 - beta1) * (grad - exp_avg)
            np.subtract(g, m, out=tmp)
            tmp *= 1 - beta1
            m += tmp
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
        fg.scatter()

"""Adafactor: Adam-like steps with a factored (row x column) second moment (torch 2.13's)."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from ember._core.dtype import finfo
from ember._core.grad_mode import enable_grad
from ember._core.tensor import Tensor
from ember._ops import API
from ember.optim._single import check_lr_size, scalar
from ember.optim.optimizer import Optimizer, _no_grad_step

__all__ = ["Adafactor"]

_zeros_like = API["zeros_like"]
_norm = API["norm"]


def _eps(dtype) -> float:
    return finfo(dtype).eps


def _rms(t: Tensor, scale: float = 1) -> float:
    """The root mean square of ``t``'s entries, divided by ``scale``."""
    return t.norm(2).item() / ((t.numel() ** 0.5) * scale)


def _factored_moment(state: dict, grad: Tensor, weight: float, eps1: float) -> Tensor:
    """Update the row/column means of grad**2 and return their rank-1 estimate of the
    second moment: rows (x) columns / (the rows' mean, at least eps1)."""
    rows, cols = state["row_var"], state["col_var"]
    for kept, dim in ((rows, -1), (cols, -2)):
        mean_square = _norm(grad, dim=dim, keepdim=True).square_().div_(grad.size(dim))
        kept.lerp_(mean_square, weight)
    scale = rows.mean(dim=-2, keepdim=True).clamp_(min=eps1)
    return (rows @ cols).div_(scale)


class Adafactor(Optimizer):
    """Implements Adafactor, as ``torch.optim.Adafactor``.

    A parameter with two or more dims keeps a row factor ``row_var`` and a column factor
    ``col_var`` of its second moment (over its last two dims); a vector keeps ``variance``.
    ``foreach`` is accepted; the update is computed per parameter either way.
    """

    def __init__(
        self,
        params: Iterable,
        lr: float | Tensor = 1e-2,
        beta2_decay: float = -0.8,
        eps: tuple[float | None, float] = (None, 1e-3),
        d: float = 1.0,
        weight_decay: float = 0.0,
        *,
        foreach: bool | None = None,
        maximize: bool = False,
    ) -> None:
        check_lr_size(lr)
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 >= beta2_decay:
            raise ValueError(f"beta2_decay should be <= 0 but is: {beta2_decay}")
        if eps[0] is not None and not 0.0 <= eps[0]:
            raise ValueError(f"epsilon1 should be >= 0 but is: {eps[0]}")
        if not 0.0 <= eps[1]:
            raise ValueError(f"epsilon2 should be >= 0 but is: {eps[1]}")
        if not 1.0 <= d:
            raise ValueError(f"Clipping threshold d should be >= 1 but is: {d}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight_decay should be >= 0 but is: {weight_decay}")
        defaults = {
            "lr": lr,
            "beta2_decay": beta2_decay,
            "eps": eps,
            "d": d,
            "weight_decay": weight_decay,
            "foreach": foreach,
            "maximize": maximize,
        }
        super().__init__(params, defaults)

    def __setstate__(self, state) -> None:
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("foreach", None)
            for p in group["params"]:
                p_state = self.state.get(p, [])
                if len(p_state) != 0 and not isinstance(p_state["step"], Tensor):
                    p_state["step"] = scalar(float(p_state["step"]))

    def _init_group(self, group: dict) -> list:
        params = []
        for p in group["params"]:
            if p.grad is None:
                continue
            if p.is_complex():
                raise RuntimeError("Adafactor does not support complex parameters")
            if p.grad.is_sparse:
                raise RuntimeError("Adafactor does not support sparse gradients")
            params.append(p)
            state = self.state[p]
            if len(state) == 0:
                state["step"] = scalar(0.0)
                if p.grad.dim() > 1:
                    # factored second moment: a mean over the last dim (rows) and over the
                    # one before it (columns), each kept with that dim as size 1
                    *lead, rows, cols = p.grad.shape
                    state["row_var"] = p.grad.new_zeros((*lead, rows, 1))
                    state["col_var"] = p.grad.new_zeros((*lead, 1, cols))
                else:
                    state["variance"] = _zeros_like(p.grad)
        return params

    @_no_grad_step
    def step(self, closure: Callable[[], float] | None = None) -> float | None:
        """Perform one optimization step; ``closure`` re-evaluates the model, returns the loss."""
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        for group in self.param_groups:
            params = self._init_group(group)
            eps1, eps2 = group["eps"]
            lr = group["lr"]
            lr = lr.item() if isinstance(lr, Tensor) else lr
            d, beta2_decay, weight_decay = group["d"], group["beta2_decay"], group["weight_decay"]
            for param in params:
                grad = param.grad if not group["maximize"] else -param.grad
                state = self.state[param]
                if eps1 is None:  # torch takes the first parameter's dtype for the group
                    eps1 = _eps(param.dtype)
                step_t = state["step"]
                step_t += 1
                step_float = step_t.item()
                one_minus_beta2_t = step_float**beta2_decay
                rho_t = min(lr, 1 / (step_float**0.5))
                # the step is relative to the parameter's RMS (at least eps2)
                alpha = max(eps2, _rms(param)) * rho_t
                if weight_decay != 0:
                    param.mul_(1 - lr * weight_decay)
                if grad.dim() > 1:
                    second = _factored_moment(state, grad, one_minus_beta2_t, eps1)
                else:
                    state["variance"].lerp_(grad * grad, one_minus_beta2_t)
                    second = state["variance"].clone()
                floor = eps1 * eps1
                update = second.clamp_(min=floor).rsqrt_().mul_(grad)
                # clip the update's RMS at d
                denom = max(1.0, _rms(update, d))
                param.add_(update, alpha=-alpha / denom)
        return loss

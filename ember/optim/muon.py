"""Muon: momentum whose update is orthogonalised by a Newton-Schulz iteration (2-D params)."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable

import numpy as np

from ember._core.dtype import bfloat16
from ember._core.grad_mode import enable_grad
from ember._core.tensor import Tensor, _wrap
from ember._ops import API
from ember.optim._single import check_lr_size
from ember.optim.optimizer import Optimizer, _no_grad_step

__all__ = ["Muon"]

EPS = 1e-7
DEFAULT_A = 3.4445
DEFAULT_B = -4.7750
DEFAULT_C = 2.0315
DEFAULT_NS_STEPS = 5

_zeros_like = API["zeros_like"]


def _bf16(a: np.ndarray) -> np.ndarray:
    """Round float32 values to bfloat16 and back: torch's bfloat16 results, held as float32."""
    return a.astype(bfloat16.np).astype(np.float32)


def _zeropower_via_newtonschulz(
    grad: Tensor, ns_coefficients: tuple[float, float, float], ns_steps: int, eps: float
) -> Tensor:
    """Return ``grad`` orthogonalised by ``ns_steps`` quintic Newton-Schulz steps, in bfloat16.

    As torch: the matrix is cast to bfloat16, each product accumulates in float32 and
    ``addmm``'s ``beta * C + alpha * (A @ B)`` is rounded once to bfloat16.
    """
    if ns_steps >= 100:
        raise ValueError("Number of steps must be less than 100 for computational efficiency")
    if len(grad.shape) != 2:
        raise ValueError("Input tensor gradient must be a 2D matrix")
    if len(ns_coefficients) != 3:
        raise ValueError("Coefficients must be a tuple of exactly 3 values")
    a, b, c = (np.float32(v) for v in ns_coefficients)
    x = _bf16(grad._data.astype(np.float32))
    tall = grad.size(0) > grad.size(1)
    if tall:
        x = x.T
    norm = _bf16(np.asarray(np.sqrt(np.sum(x * x, dtype=np.float32)), dtype=np.float32))
    norm = max(norm, _bf16(np.asarray(eps, dtype=np.float32)))
    x = _bf16(x / norm)
    for _ in range(ns_steps):
        gram = _bf16(x @ x.T)
        gram_update = _bf16(b * gram + c * (gram @ gram))
        x = _bf16(a * x + gram_update @ x)
    if tall:
        x = x.T
    return _wrap(np.ascontiguousarray(x).astype(bfloat16.np))


def _adjust_lr(lr: float, adjust_lr_fn: str | None, param_shape) -> float:
    """Return Muon's learning rate for a matrix of ``param_shape``."""
    A, B = param_shape[:2]
    if adjust_lr_fn is None or adjust_lr_fn == "original":
        adjusted_ratio = math.sqrt(max(1, A / B))
    elif adjust_lr_fn == "match_rms_adamw":
        adjusted_ratio = 0.2 * math.sqrt(max(A, B))
    else:
        adjusted_ratio = 1.0
    return lr * adjusted_ratio


class Muon(Optimizer):
    """Implements Muon, as ``torch.optim.Muon``: only 2-D parameters (hidden-layer matrices).

    The momentum (Nesterov by default) is orthogonalised by a Newton-Schulz iteration in
    bfloat16, then applied with decoupled weight decay and a shape-adjusted learning rate.
    """

    def __init__(
        self,
        params: Iterable,
        lr: float = 1e-3,
        weight_decay: float = 0.1,
        momentum: float = 0.95,
        nesterov: bool = True,
        ns_coefficients: tuple[float, float, float] = (DEFAULT_A, DEFAULT_B, DEFAULT_C),
        eps: float = EPS,
        ns_steps: int = DEFAULT_NS_STEPS,
        adjust_lr_fn: str | None = None,
    ) -> None:
        check_lr_size(lr)
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 <= momentum:
            raise ValueError(f"momentum should be >= 0 but is: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight decay should be >= 0 but is: {weight_decay}")
        if adjust_lr_fn is not None and adjust_lr_fn not in ["original", "match_rms_adamw"]:
            raise ValueError(f"Adjust learning rate function {adjust_lr_fn} is not supported")
        defaults = {
            "lr": lr,
            "weight_decay": weight_decay,
            "momentum": momentum,
            "nesterov": nesterov,
            "ns_coefficients": ns_coefficients,
            "eps": eps,
            "ns_steps": ns_steps,
            "adjust_lr_fn": adjust_lr_fn,
        }
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                if p.ndim != 2:
                    raise ValueError(
                        "Muon only supports 2D parameters whereas we found a parameter with "
                        f"size: {p.size()}"
                    )

    @_no_grad_step
    def step(self, closure: Callable[[], float] | None = None) -> float | None:
        """Perform one optimization step; ``closure`` re-evaluates the model, returns the loss."""
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        for group in self.param_groups:
            lr = group["lr"]
            lr = lr.item() if isinstance(lr, Tensor) else lr
            weight_decay, momentum = group["weight_decay"], group["momentum"]
            params = []
            for p in group["params"]:
                if p.grad is None:
                    continue
                if p.is_complex():
                    raise RuntimeError("Muon does not support complex parameters")
                if p.grad.is_sparse:
                    raise RuntimeError("Muon does not support sparse gradients")
                params.append(p)
                state = self.state[p]
                if "momentum_buffer" not in state:
                    state["momentum_buffer"] = _zeros_like(p.grad)
            for param in params:
                grad = param.grad
                if grad.ndim != 2:
                    raise ValueError("Param gradient must be a 2D matrix")
                buf = self.state[param]["momentum_buffer"]
                buf.lerp_(grad, 1 - momentum)
                update = grad.lerp(buf, momentum) if group["nesterov"] else buf
                update = _zeropower_via_newtonschulz(
                    update, group["ns_coefficients"], group["ns_steps"], group["eps"]
                )
                adjusted_lr = _adjust_lr(lr, group["adjust_lr_fn"], param.shape)
                param.mul_(1 - lr * weight_decay)
                param.add_(update, alpha=-adjusted_lr)
        return loss

"""SparseAdam: Adam for sparse COO gradients, updating only the rows they touch."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable

from ember._core.grad_mode import enable_grad
from ember._core.tensor import Tensor
from ember._ops import API
from ember.optim._single import check_lr_size
from ember.optim.optimizer import Optimizer, _no_grad_step

__all__ = ["SparseAdam"]

_zeros_like = API["zeros_like"]


class SparseAdam(Optimizer):
    """Implements the lazy Adam of ``torch.optim.SparseAdam`` for sparse gradients.

    Only the moments and parameter entries at the gradient's indices are updated. Gradients
    must be sparse COO tensors (``nn.Embedding(sparse=True)`` in torch); a dense gradient raises
    torch's error.
    """

    def __init__(
        self,
        params: Iterable,
        lr: float | Tensor = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        maximize: bool = False,
    ) -> None:
        check_lr_size(lr)
        if not 0.0 < lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 < eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        defaults = {"lr": lr, "betas": betas, "eps": eps, "maximize": maximize}
        super().__init__(params, defaults)
        # [group, position] of every parameter; the messages list the offending ones
        where = [
            ([g, i], p)
            for g, group in enumerate(self.param_groups)
            for i, p in enumerate(group["params"])
        ]
        sparse_params = [at for at, p in where if p.is_sparse]
        complex_params = [at for at, p in where if p.is_complex()]
        if sparse_params:
            raise ValueError(
                f"Sparse params at indices {sparse_params}: SparseAdam requires dense parameter "
                "tensors"
            )
        if complex_params:
            raise ValueError(
                f"Complex params at indices {complex_params}: SparseAdam does not support "
                "complex parameters"
            )

    @_no_grad_step
    def step(self, closure: Callable[[], float] | None = None) -> float | None:
        """Perform one optimization step; ``closure`` re-evaluates the model, returns the loss."""
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            maximize = group.get("maximize", False)
            lr = group["lr"]
            lr = lr.item() if isinstance(lr, Tensor) else lr
            work = []
            for p in group["params"]:
                if p.grad is None:
                    continue
                if not p.grad.is_sparse:
                    raise RuntimeError(
                        "SparseAdam does not support dense gradients, please consider Adam instead"
                    )
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = 0
                    state["exp_avg"] = _zeros_like(p)
                    state["exp_avg_sq"] = _zeros_like(p)
                state["step"] += 1
                work.append((p, state))
            for p, state in work:
                _sparse_adam(p, state, beta1, beta2, lr, group["eps"], maximize)
        return loss


def _sparse_adam(param, state, beta1, beta2, lr, eps, maximize) -> None:
    grad = param.grad if not maximize else -param.grad
    grad = grad.coalesce()  # the update is non-linear: indices must be unique
    values = grad._values()
    if values.numel() == 0:
        return
    where = tuple(grad._indices().unbind(0))  # one index tensor per sparse dim
    exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
    # torch's arithmetic in its order: decay by adding (1 - b) * (new - old) at the indices
    old_avg = exp_avg[where]
    avg_update = values.sub(old_avg).mul_(1 - beta1)
    exp_avg.index_put_(where, avg_update, accumulate=True)
    old_sq = exp_avg_sq[where]
    sq_update = values.pow(2).sub_(old_sq).mul_(1 - beta2)
    exp_avg_sq.index_put_(where, sq_update, accumulate=True)
    numer = avg_update.add_(old_avg)
    denom = sq_update.add_(old_sq).sqrt_().add_(eps)
    step = state["step"]
    bias_correction1 = 1 - beta1**step
    bias_correction2 = 1 - beta2**step
    step_size = lr * math.sqrt(bias_correction2) / bias_correction1
    param.index_put_(where, numer.div_(denom).mul_(-step_size), accumulate=True)

"""A base for optimizers whose update is written per parameter with ember's in-place ops."""

from __future__ import annotations

from collections.abc import Callable

from ember._core.dtype import float32
from ember._core.grad_mode import enable_grad
from ember._ops import API
from ember.optim.optimizer import Optimizer, _no_grad_step

_COMPLEX = (
    "ember.optim: complex parameters are not supported by this optimizer yet "
    "(torch updates them as real views); optimize torch.view_as_real(p) instead"
)
_tensor = API["tensor"]
_zeros_like = API["zeros_like"]
_full_like = API["full_like"]
_where = API["where"]
_maximum = API["maximum"]


def scalar(value: float):
    """Return a float32 0-d tensor (torch's dtype for ``step`` and other scalar state)."""
    return _tensor(value, dtype=float32)


def check(ok: bool, message: str) -> None:
    if not ok:
        raise ValueError(message)


def check_common(lr, eps=None, betas=None, weight_decay=None, differentiable=False) -> None:
    """Raise torch's errors for an invalid lr, eps, betas or weight decay."""
    if hasattr(lr, "numel") and lr.numel() != 1:
        raise ValueError("Tensor lr must be 1-element")
    check(0.0 <= lr, f"Invalid learning rate: {lr}")
    if eps is not None:
        check(0.0 <= eps, f"Invalid epsilon value: {eps}")
    if betas is not None:
        check(0.0 <= betas[0] < 1.0, f"Invalid beta parameter at index 0: {betas[0]}")
        check(0.0 <= betas[1] < 1.0, f"Invalid beta parameter at index 1: {betas[1]}")
    if weight_decay is not None:
        check(0.0 <= weight_decay, f"Invalid weight_decay value: {weight_decay}")
    if differentiable:
        raise NotImplementedError("ember.optim: differentiable=True is not supported")


class SingleTensorOptimizer(Optimizer):
    """Runs ``_init_state`` once per parameter and ``_update`` for each parameter with a grad."""

    _group_defaults: dict = {}

    def __setstate__(self, state) -> None:
        super().__setstate__(state)
        for group in self.param_groups:
            for k, v in self._group_defaults.items():
                group.setdefault(k, v)

    def _init_state(self, group: dict, p, state: dict) -> None:
        raise NotImplementedError

    def _update(self, group: dict, p, grad, state: dict) -> None:
        raise NotImplementedError

    @_no_grad_step
    def step(self, closure: Callable[[], float] | None = None) -> float | None:
        """Perform one optimization step; ``closure`` re-evaluates the model, returns the loss."""
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                if p.is_complex():
                    raise NotImplementedError(_COMPLEX)
                state = self.state[p]
                if len(state) == 0:
                    self._init_state(group, p, state)
                grad = p.grad if not group["maximize"] else -p.grad
                self._update(group, p, grad, state)
        return loss

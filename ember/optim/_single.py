"""A base for optimizers whose update is written per parameter with ember's in-place ops."""

from __future__ import annotations

from collections.abc import Callable

from ember._core.dtype import float32
from ember._core.grad_mode import enable_grad
from ember._core.tensor import Tensor
from ember._ops import API
from ember.optim._flat import FlatGroup, can_fuse, flat_group
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
    """Runs ``_init_state`` once per parameter and ``_update`` for each parameter with a grad.

    A subclass that sets ``_flat_keys`` (its per-element state) and ``_flat_scalars`` (its 0-d
    float32 state) and writes ``_flat_update(group, fg)`` over a :class:`FlatGroup` also has the
    fused path, taken unless the group says ``foreach=False`` (see ``_flat.py``).
    """

    _group_defaults: dict = {}
    _flat_keys: tuple[str, ...] | None = None
    _flat_scalars: tuple[str, ...] = ("step",)
    # torch's error for a sparse gradient (None: the optimizer takes sparse gradients)
    _sparse_error: str | None = None

    def __setstate__(self, state) -> None:
        super().__setstate__(state)
        for group in self.param_groups:
            for k, v in self._group_defaults.items():
                group.setdefault(k, v)

    def _init_state(self, group: dict, p, state: dict) -> None:
        raise NotImplementedError

    def _update(self, group: dict, p, grad, state: dict) -> None:
        raise NotImplementedError

    def _flat_state_keys(self, group: dict) -> tuple[str, ...]:
        return self._flat_keys

    def _flat_update(self, group: dict, fg: FlatGroup) -> None:
        raise NotImplementedError

    # state in shared memory (Hogwild) must stay where it is: such an optimizer never takes the
    # fused path, whose flat buffers would copy the state out of the shared memory
    _shared_state = False

    def _state_is_shared(self, params) -> bool:
        state = self.state
        return any(
            isinstance(t, Tensor) and t.dim() > 0 and t.is_shared()
            for p in params
            if p in state
            for t in state[p].values()
        )

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
            if self._sparse_error is not None and any(p.grad.is_sparse for p in params):
                raise RuntimeError(self._sparse_error)
            fused = self._flat_keys is not None and group.get("foreach") is not False
            if fused and self._flat.get(index) is None and self._state_is_shared(params):
                self._shared_state = True  # e.g. Adagrad.share_memory() then sent to a process
            if fused and not self._shared_state and can_fuse(params, True):
                keys = self._flat_state_keys(group)
                fg = flat_group(  # new parameters get torch's initial state first
                    self,
                    index,
                    params,
                    keys,
                    scalars=self._flat_scalars,
                    init=lambda p, st, group=group: self._init_state(group, p, st),
                )
                fg.gather()
                self._flat_update(group, fg)
                fg.scatter()
                continue
            for p in params:
                if p.is_complex():
                    raise NotImplementedError(_COMPLEX)
                state = self.state[p]
                if len(state) == 0:
                    self._init_state(group, p, state)
                grad = p.grad if not group["maximize"] else -p.grad
                self._update(group, p, grad, state)
        return loss

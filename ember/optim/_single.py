"""The base of the optimizers whose update is elementwise: each algorithm's update is written
once, as ``_update(group, fg)`` over NumPy arrays, and runs either over a whole param group's
flat buffers (:class:`FlatGroup`, the default) or over one parameter at a time
(:class:`OneParam`: ``foreach=False``, mixed dtypes, state in shared memory, a group with sparse
gradients)."""

from __future__ import annotations

from collections.abc import Callable

from ember._core.dtype import float32
from ember._core.grad_mode import enable_grad
from ember._core.tensor import Tensor
from ember._ops import API
from ember._ops.registry import _check_inplace
from ember.optim._flat import FlatGroup, OneParam, can_fuse, flat_group
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


def check_lr_size(lr) -> None:
    """Raise torch's error for a learning rate given as a tensor of more than one element."""
    if hasattr(lr, "numel") and lr.numel() != 1:
        raise ValueError("Tensor lr must be 1-element")


def check_common(lr, eps=None, betas=None, weight_decay=None, differentiable=False) -> None:
    """Raise torch's errors for an invalid lr, eps, betas or weight decay."""
    check_lr_size(lr)
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


def check_steps(state_steps) -> None:
    """Raise torch's error when ``state_steps`` (of a functional step) holds no tensors."""
    if not all(isinstance(t, Tensor) for t in state_steps):
        raise RuntimeError(
            "API has changed, `state_steps` argument must contain a list of singleton tensors"
        )


def functional_step(
    cls, group: dict, params, grads, keys, states, flags=None, grad_scale=None, found_inf=None
) -> None:
    """Run ``cls``'s one update body on each parameter with the gradient and state given (the
    functional API, ``torch.optim.adam.adam(...)``): ``states[i]`` maps torch's state names to
    the caller's tensors, updated in place as torch's single-tensor path updates them."""
    if grad_scale is not None or found_inf is not None:
        raise NotImplementedError(
            "ember.optim: grad_scale/found_inf (fused steps) are not supported"
        )
    lr = group["lr"]
    if isinstance(lr, Tensor):
        group = {**group, "lr": lr.item()}
    flags = flags or {}
    writes = cls._writes + bool(group.get("decoupled_weight_decay") and group["weight_decay"])
    scalars = tuple(k for k in cls._flat_scalars if k in (states[0] if states else ()))
    bumps = cls._state_bumps(keys + scalars, flags)
    for p, g, state in zip(params, grads, states):
        _check_inplace(p)
        if p.is_complex() and not cls._complex_ok:
            raise NotImplementedError(_COMPLEX)
        one = OneParam(p, state, keys, scalars, grad=g)
        cls._update(None, group, one, **flags)  # (the update bodies read no instance)
        one.done(writes, bumps)


def functional(
    cls, params, grads, state: dict, group: dict, grad_scale=None, found_inf=None, checked=True
) -> None:
    """The functional API of ``cls`` (``torch.optim.<algorithm>.<algorithm>(...)``): ``state``
    maps each of torch's state names to the caller's list of tensors, one per parameter (the
    0-d ``step`` and other scalar state included); all are updated in place. ``checked``: raise
    torch's error for a ``step`` that is not a tensor (every algorithm but ASGD checks)."""
    if checked:
        check_steps(state["step"])
    keys = tuple(k for k in state if k not in cls._flat_scalars)
    states = [{k: v[i] for k, v in state.items()} for i in range(len(params))]
    functional_step(cls, group, params, grads, keys, states, None, grad_scale, found_inf)


class ElementwiseOptimizer(Optimizer):
    """Runs ``_init_state`` once per parameter and the one update body ``_update``.

    A subclass sets ``_flat_keys`` (its per-element state; or overrides ``_flat_state_keys``)
    and ``_flat_scalars`` (its 0-d float32 state) and writes ``_update(group, fg, **flags)``
    with ``fg`` a :class:`FlatGroup` or a :class:`OneParam`; ``_flags`` gives the facts the
    update needs that the state does not hold yet (SGD's "first step" of a momentum buffer).
    Sparse gradients, which have no array, go to ``_sparse_update`` (Adagrad's and SGD's own
    index-based update) or raise ``_sparse_error``.
    """

    _group_defaults: dict = {}
    _flat_keys: tuple[str, ...] = ()
    _flat_scalars: tuple[str, ...] = ("step",)
    # torch's error for a sparse gradient (None: the optimizer takes sparse gradients)
    _sparse_error: str | None = None
    # complex parameters update as they are (SGD: the update is linear) instead of raising
    _complex_ok = False
    # the update runs through ``fg.run_blocks``, which reads the gradients block by block (no
    # gather of the whole flat gradient first)
    _blockwise = False

    def __setstate__(self, state) -> None:
        super().__setstate__(state)
        for group in self.param_groups:
            for k, v in self._group_defaults.items():
                group.setdefault(k, v)

    def _init_state(self, group: dict, p, state: dict) -> None:
        raise NotImplementedError

    def _flat_state_keys(self, group: dict) -> tuple[str, ...]:
        return self._flat_keys

    def _flags(self, group: dict, params: list) -> dict | None:
        """Keyword arguments of ``_update`` for ``params``, read before their state is
        made; None when the parameters disagree (each is then updated on its own)."""
        return {}

    def _update(self, group: dict, fg: FlatGroup | OneParam, **flags) -> None:
        raise NotImplementedError

    # how many in-place ops torch's update makes on each parameter (its version bumps), besides
    # the decoupled weight decay's ``param.mul_(1 - lr * weight_decay)`` (counted by ``step``)
    _writes = 1
    # likewise on each state tensor, by state name (a name not given: one)
    _state_writes: dict[str, int] = {}

    @classmethod
    def _state_bumps(cls, names: tuple[str, ...], flags: dict) -> tuple[int, ...]:
        """The version bumps of the state tensors ``names`` in one step (torch's in-place ops
        on each); ``flags`` are ``_update``'s keyword arguments."""
        return tuple(cls._state_writes.get(k, 1) for k in names)

    def _check_sparse(self, group: dict) -> None:
        """Raise torch's error when a group with a sparse gradient cannot be updated."""
        if self._sparse_error is not None:
            raise RuntimeError(self._sparse_error)

    def _sparse_update(self, group: dict, p, grad, state: dict) -> None:
        """Update ``p`` from its sparse gradient ``grad`` (already negated for ``maximize``)."""
        raise NotImplementedError

    # state in shared memory (Hogwild) must stay where it is: such an optimizer never takes the
    # fused path, whose flat buffers would copy the state out of the shared memory
    _shared_state = False

    def _state_is_shared(self, params) -> bool:
        state = self.state
        return any(
            isinstance(t, Tensor) and not t.is_sparse and t.dim() > 0 and t.is_shared()
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
            params = [p for p in group["params"] if p._grad is not None]
            if not params:
                continue
            lr = group["lr"]  # (a Tensor lr is read once, as a number)
            hyper = {**group, "lr": lr.item()} if isinstance(lr, Tensor) else group
            keys = self._flat_state_keys(group)
            writes = self._writes + bool(
                group.get("decoupled_weight_decay") and group["weight_decay"] != 0
            )
            # (the fused path unless ``foreach=False`` without ``fused=True``)
            flat = group.get("foreach") is not False or bool(group.get("fused"))
            if flat and self._flat.get(index) is None and self._state_is_shared(params):
                self._shared_state = True  # e.g. Adagrad.share_memory() then sent to a process
            flags = self._flags(group, params) if flat else None
            if flags is not None and not self._shared_state and can_fuse(params, True):
                # (new parameters get torch's initial state first)
                fg = flat_group(self, index, params, keys, self._flat_scalars, group)
                if not self._blockwise:
                    fg.gather()
                self._update(hyper, fg, **flags)
                fg.scatter(writes, self._state_bumps(keys + self._flat_scalars, flags))
            else:
                self._step_each(hyper, params, keys, writes)
        return loss

    def _step_each(self, group: dict, params: list, keys: tuple[str, ...], writes: int) -> None:
        """The same update, one parameter at a time (also the path of a group with a sparse
        gradient: it has no flat array)."""
        if any(p.grad.is_sparse for p in params):
            self._check_sparse(group)
        names = keys + self._flat_scalars
        plain = self._state_bumps(names, {})  # the state's version bumps without flags
        for p in params:
            if p.is_complex() and not self._complex_ok:
                raise NotImplementedError(_COMPLEX)
            state = self.state[p]
            if p.grad.is_sparse:
                grad = p.grad if not group["maximize"] else -p.grad
                self._sparse_update(group, p, grad, state)
                continue
            flags = self._flags(group, [p])
            if len(state) == 0 or any(state.get(k) is None for k in keys):
                self._init_state(group, p, state)
            one = OneParam(p, state, keys, self._flat_scalars)
            self._update(group, one, **flags)
            one.done(writes, self._state_bumps(names, flags) if flags else plain)

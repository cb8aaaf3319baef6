"""Learning-rate schedulers, as ``torch.optim.lr_scheduler``.

Each scheduler computes the next lr of every param group from the current one (torch's "chainable"
form, so schedulers compose), and from ``base_lrs`` when stepped with an explicit epoch (the closed
form). The formulas are torch's, term for term, so lr sequences agree to the last bit.
"""

from __future__ import annotations

import math
import types
import warnings
from bisect import bisect_right
from collections import Counter
from collections.abc import Iterable, Sequence
from functools import wraps
from typing import Any
from weakref import ref

from ember.optim.optimizer import Optimizer

__all__ = [
    "LambdaLR",
    "MultiplicativeLR",
    "StepLR",
    "MultiStepLR",
    "ConstantLR",
    "LinearLR",
    "ExponentialLR",
    "SequentialLR",
    "CosineAnnealingLR",
    "ChainedScheduler",
    "ReduceLROnPlateau",
    "CyclicLR",
    "CosineAnnealingWarmRestarts",
    "OneCycleLR",
    "PolynomialLR",
    "LRScheduler",
]

EPOCH_DEPRECATION_WARNING = (
    "The epoch parameter in `scheduler.step()` was not necessary and is being "
    "deprecated where possible. Please use `scheduler.step()` to step the "
    "scheduler. During the deprecation, if epoch is different from None, the "
    "closed form is used instead of the new chainable form, where available. "
    "Please open an issue if you are unable to replicate your use case: "
    "https://github.com/pytorch/pytorch/issues/new/choose."
)


def _per_group(value, optimizer: Optimizer, mismatch) -> list:
    """``value`` as one entry per param group: a list/tuple must have one per group
    (``mismatch(given, groups)`` builds the error), anything else is repeated."""
    groups = len(optimizer.param_groups)
    if not isinstance(value, (list, tuple)):
        return [value] * groups
    if len(value) == groups:
        return list(value)
    raise mismatch(len(value), groups)


def _format_param(name: str, optimizer: Optimizer, param, write_as: str | None = None) -> list:
    """Return ``param`` as one value per param group; with ``write_as``, also store each
    group's value in the group under that key."""
    values = _per_group(
        param,
        optimizer,
        lambda given, groups: ValueError(
            f"{name} must have the same length as optimizer.param_groups. "
            f"{name} has {given} values, param_groups has {groups}."
        ),
    )
    if write_as is not None:
        for group, value in zip(optimizer.param_groups, values):
            group[write_as] = value
    return values


def _expect_int(value, too_small, message: str, *, compare_first: bool = False) -> None:
    """ValueError(message) unless ``value`` is an int and not ``too_small``.

    torch checks some arguments by comparing first (a non-number then fails with the
    comparison's own TypeError) and others by type first; ``compare_first`` keeps each one's
    order, ``too_small`` its comparison.
    """
    if compare_first:
        bad = too_small(value) or not isinstance(value, int)
    else:
        bad = not isinstance(value, int) or too_small(value)
    if bad:
        raise ValueError(message)


def _group_values(optimizer: Optimizer, key: str) -> list:
    return [group[key] for group in optimizer.param_groups]


class _Flag:
    """Set ``attr`` of ``obj`` to True for the duration of a ``with`` block."""

    def __init__(self, obj, attr: str) -> None:
        self.obj, self.attr = obj, attr

    def __enter__(self):
        setattr(self.obj, self.attr, True)

    def __exit__(self, *exc) -> None:
        setattr(self.obj, self.attr, False)


def _warn_epoch_argument() -> None:
    warnings.warn(EPOCH_DEPRECATION_WARNING, UserWarning, stacklevel=3)


# the attribute marking an optimizer.step we wrapped to see whether it ran
_STEP_WRAPPED = "_wrapped_by_lr_sched"


def _warn_get_lr_called_within_step(scheduler: LRScheduler) -> None:
    if not scheduler._get_lr_called_within_step:
        warnings.warn(
            "To get the last learning rate computed by the scheduler, please use `get_last_lr()`.",
            UserWarning,
            stacklevel=3,
        )


class LRScheduler:
    """Base class: adjusts ``optimizer.param_groups[i]["lr"]`` at each ``step()``."""

    _get_lr_called_within_step: bool = False
    _is_initial: bool = False

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1) -> None:
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        if last_epoch == -1:
            for group in optimizer.param_groups:
                group.setdefault("initial_lr", group["lr"])
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise KeyError(
                        f"param 'initial_lr' is not specified in param_groups[{i}] when "
                        "resuming scheduler with last_epoch >= 0.\n"
                        "This typically happens when:\n"
                        "1. You're trying to resume training from a checkpoint but haven't "
                        "properly loaded the optimizer state\n"
                        "2. You're using last_epoch >= 0 for a fresh training run "
                        "(not recommended)"
                    )
        self.base_lrs: list = _group_values(optimizer, "initial_lr")
        self.last_epoch = last_epoch
        self._track_optimizer_step()
        self._initial_step()

    def _track_optimizer_step(self) -> None:
        # Wrap the optimizer's bound step so the first scheduler.step() can tell whether
        # optimizer.step() ran before it (torch's ordering warning).
        opt = self.optimizer
        if hasattr(opt.step, _STEP_WRAPPED):
            return
        opt_ref = ref(opt)
        func = opt.step.__func__

        @wraps(func)
        def wrapper(*args, **kwargs):
            o = opt_ref()
            o._opt_called = True
            return func.__get__(o, o.__class__)(*args, **kwargs)

        setattr(wrapper, _STEP_WRAPPED, True)
        opt.step = wrapper

    def _initial_step(self) -> None:
        self._step_count = 0
        with _Flag(self, "_is_initial"):
            self.step()

    def state_dict(self) -> dict[str, Any]:
        """Return the scheduler's state: every attribute except the optimizer."""
        return {k: v for k, v in self.__dict__.items() if k != "optimizer"}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Load a state made by ``state_dict()``."""
        self.__dict__.update(state_dict)

    def get_last_lr(self) -> list[float]:
        """Return the lr of each param group set by the last ``step()``."""
        return self._last_lr

    def get_lr(self) -> list[float]:
        """Return the lr of each group for the current ``last_epoch`` (chainable form)."""
        raise NotImplementedError

    def step(self, epoch: int | None = None) -> None:
        """Advance the schedule by one epoch (or to ``epoch``, deprecated) and set the lrs."""
        if self._step_count == 1:
            self._check_step_order()
        self._step_count += 1
        if epoch is not None:
            _warn_epoch_argument()
        self._update_lr(epoch)

    def _check_step_order(self) -> None:
        # at the first real step: optimizer.step() should have run already (our wrapper sets
        # ``_opt_called``), unless someone replaced optimizer.step after we wrapped it
        if not hasattr(self.optimizer.step, _STEP_WRAPPED):
            message = (
                "Seems like `optimizer.step()` has been overridden after learning rate "
                "scheduler initialization. Please, make sure to call `optimizer.step()` "
                "before `lr_scheduler.step()`. See more details at "
                "https://pytorch.org/docs/stable/optim.html#how-to-adjust-learning-rate"
            )
        elif getattr(self.optimizer, "_opt_called", False):
            return
        else:
            message = (
                "Detected call of `lr_scheduler.step()` before `optimizer.step()`. "
                "In PyTorch 1.1.0 and later, you should call them in the opposite order: "
                "`optimizer.step()` before `lr_scheduler.step()`.  Failure to do this "
                "will result in PyTorch skipping the first value of the learning rate "
                "schedule. See more details at "
                "https://pytorch.org/docs/stable/optim.html#how-to-adjust-learning-rate"
            )
        warnings.warn(message, UserWarning, stacklevel=3)

    def _update_lr(self, epoch: int | None = None) -> None:
        with _Flag(self, "_get_lr_called_within_step"):
            if epoch is None:
                self.last_epoch += 1
                values = self.get_lr()
            else:
                self.last_epoch = epoch
                closed = getattr(self, "_get_closed_form_lr", None)
                values = closed() if closed is not None else self.get_lr()
        for group, lr in zip(self.optimizer.param_groups, values):
            group["lr"] = lr
        self._last_lr = _group_values(self.optimizer, "lr")


class _LRScheduler(LRScheduler):
    """The old name of ``LRScheduler`` (custom schedulers written against it subclass this)."""


def _callable_state(fn) -> dict | None:
    """What a state dict keeps of a user callable: nothing for a plain function (it is code,
    not state), the attributes of a callable object (restored into the live object on load)."""
    if fn is None or isinstance(fn, types.FunctionType):
        return None
    return fn.__dict__.copy()


class _LambdaState:
    """state_dict support for schedulers holding one callable per group (``lr_lambdas``)."""

    def state_dict(self) -> dict[str, Any]:
        sd = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "lr_lambdas")}
        sd["lr_lambdas"] = [_callable_state(fn) for fn in self.lr_lambdas]
        return sd

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        lr_lambdas = state_dict.pop("lr_lambdas")
        self.__dict__.update(state_dict)
        state_dict["lr_lambdas"] = lr_lambdas
        for idx, fn in enumerate(lr_lambdas):
            if fn is not None:
                self.lr_lambdas[idx].__dict__.update(fn)

    def _set_lambdas(self, optimizer, lr_lambda) -> None:
        self.lr_lambdas = _per_group(
            lr_lambda,
            optimizer,
            lambda given, groups: ValueError(f"Expected {groups} lr_lambdas, but got {given}"),
        )


class LambdaLR(_LambdaState, LRScheduler):
    """lr = initial lr * ``lr_lambda(epoch)``."""

    def __init__(self, optimizer: Optimizer, lr_lambda, last_epoch: int = -1) -> None:
        self.optimizer = optimizer
        self._set_lambdas(optimizer, lr_lambda)
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        _warn_get_lr_called_within_step(self)
        return [b * fn(self.last_epoch) for fn, b in zip(self.lr_lambdas, self.base_lrs)]


class MultiplicativeLR(_LambdaState, LRScheduler):
    """lr = previous lr * ``lr_lambda(epoch)``."""

    def __init__(self, optimizer: Optimizer, lr_lambda, last_epoch: int = -1) -> None:
        self.optimizer = optimizer
        self._set_lambdas(optimizer, lr_lambda)
        for fn in self.lr_lambdas:
            if not callable(fn):
                raise TypeError(f"lr_lambda should be a function, but got {type(fn).__name__}")
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        _warn_get_lr_called_within_step(self)
        if self._is_initial:
            return _group_values(self.optimizer, "lr")
        return [
            g["lr"] * fn(self.last_epoch)
            for fn, g in zip(self.lr_lambdas, self.optimizer.param_groups)
        ]


class StepLR(LRScheduler):
    """Multiply the lr by ``gamma`` every ``step_size`` epochs."""

    def __init__(
        self, optimizer: Optimizer, step_size: int, gamma: float = 0.1, last_epoch: int = -1
    ) -> None:
        self.step_size = step_size
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        _warn_get_lr_called_within_step(self)
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return _group_values(self.optimizer, "lr")
        return [g["lr"] * self.gamma for g in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list[float]:
        return [b * self.gamma ** (self.last_epoch // self.step_size) for b in self.base_lrs]


class MultiStepLR(LRScheduler):
    """Multiply the lr by ``gamma`` at each milestone epoch."""

    def __init__(
        self,
        optimizer: Optimizer,
        milestones: Iterable[int],
        gamma: float = 0.1,
        last_epoch: int = -1,
    ) -> None:
        self.milestones = Counter(milestones)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        _warn_get_lr_called_within_step(self)
        if self.last_epoch not in self.milestones:
            return _group_values(self.optimizer, "lr")
        k = self.milestones[self.last_epoch]
        return [g["lr"] * self.gamma**k for g in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list[float]:
        # gamma once per milestone passed (a repeated milestone counts as often as given)
        passed = sum(n for epoch, n in self.milestones.items() if epoch <= self.last_epoch)
        return [b * self.gamma**passed for b in self.base_lrs]


class ConstantLR(LRScheduler):
    """Multiply the lr by ``factor`` until epoch ``total_iters``."""

    def __init__(
        self,
        optimizer: Optimizer,
        factor: float = 1.0 / 3,
        total_iters: int = 5,
        last_epoch: int = -1,
    ) -> None:
        if factor > 1.0 or factor < 0:
            raise ValueError("Constant multiplicative factor expected to be between 0 and 1.")
        self.factor = factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        _warn_get_lr_called_within_step(self)
        if self.last_epoch == 0:
            return [g["lr"] * self.factor for g in self.optimizer.param_groups]
        if self.last_epoch != self.total_iters:
            return _group_values(self.optimizer, "lr")
        return [g["lr"] * (1.0 / self.factor) for g in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list[float]:
        f = self.factor + (self.last_epoch >= self.total_iters) * (1 - self.factor)
        return [b * f for b in self.base_lrs]


class _Finite:
    """Schedules that stop changing the lr after ``total_iters`` epochs."""

    def _holding(self) -> bool:
        # the initial step keeps the lr; after total_iters nothing changes it any more
        return self._is_initial or self.last_epoch > self.total_iters


class LinearLR(_Finite, LRScheduler):
    """Scale the lr linearly from ``start_factor`` to ``end_factor`` over ``total_iters``."""

    def __init__(
        self,
        optimizer: Optimizer,
        start_factor: float = 1.0 / 3,
        end_factor: float = 1.0,
        total_iters: int = 5,
        last_epoch: int = -1,
    ) -> None:
        if start_factor > 1.0 or start_factor <= 0:
            raise ValueError(
                "Starting multiplicative factor expected to be greater than 0 and less or "
                "equal to 1."
            )
        if end_factor > 1.0 or end_factor < 0:
            raise ValueError("Ending multiplicative factor expected to be between 0 and 1.")
        self.start_factor = start_factor
        self.end_factor = end_factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        _warn_get_lr_called_within_step(self)
        if self.last_epoch == 0:
            return [g["lr"] * self.start_factor for g in self.optimizer.param_groups]
        if self._holding():
            return _group_values(self.optimizer, "lr")
        d = self.end_factor - self.start_factor
        f = 1.0 + d / (self.total_iters * self.start_factor + (self.last_epoch - 1) * d)
        return [g["lr"] * f for g in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list[float]:
        d = self.end_factor - self.start_factor
        f = self.start_factor + d * min(self.total_iters, self.last_epoch) / self.total_iters
        return [b * f for b in self.base_lrs]


class ExponentialLR(LRScheduler):
    """Multiply the lr by ``gamma`` every epoch."""

    def __init__(self, optimizer: Optimizer, gamma: float, last_epoch: int = -1) -> None:
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        _warn_get_lr_called_within_step(self)
        if self._is_initial:
            return _group_values(self.optimizer, "lr")
        return [g["lr"] * self.gamma for g in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list[float]:
        return [b * self.gamma**self.last_epoch for b in self.base_lrs]


class PolynomialLR(_Finite, LRScheduler):
    """Decay the lr polynomially (``power``) to zero over ``total_iters``."""

    def __init__(
        self,
        optimizer: Optimizer,
        total_iters: int = 5,
        power: float = 1.0,
        last_epoch: int = -1,
    ) -> None:
        self.total_iters = total_iters
        self.power = power
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        _warn_get_lr_called_within_step(self)
        if self._holding():
            return _group_values(self.optimizer, "lr")

        # the chainable form: (remaining fraction now / remaining fraction before) ** power
        def remaining(epoch):
            return 1.0 - epoch / self.total_iters

        decay = (remaining(self.last_epoch) / remaining(self.last_epoch - 1)) ** self.power
        return [g["lr"] * decay for g in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list[float]:
        f = (1.0 - min(self.total_iters, self.last_epoch) / self.total_iters) ** self.power
        return [b * f for b in self.base_lrs]


class CosineAnnealingLR(LRScheduler):
    """Anneal the lr along a cosine from the initial lr to ``eta_min`` over ``T_max`` epochs."""

    def __init__(
        self, optimizer: Optimizer, T_max: int, eta_min: float = 0.0, last_epoch: int = -1
    ) -> None:
        self.T_max = T_max
        self.eta_min = eta_min
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        _warn_get_lr_called_within_step(self)
        e, T, lo = self.last_epoch, self.T_max, self.eta_min
        groups = self.optimizer.param_groups
        if self._is_initial:
            return _group_values(self.optimizer, "lr")
        if self._step_count == 1 and e > 0:
            return [lo + (b - lo) * (1 + math.cos(e * math.pi / T)) / 2 for b in self.base_lrs]
        if (e - 1 - T) % (2 * T) == 0:
            return [
                g["lr"] + (b - lo) * (1 - math.cos(math.pi / T)) / 2
                for b, g in zip(self.base_lrs, groups)
            ]
        return [
            (1 + math.cos(math.pi * e / T)) / (1 + math.cos(math.pi * (e - 1) / T)) * (g["lr"] - lo)
            + lo
            for g in groups
        ]

    def _get_closed_form_lr(self) -> list[float]:
        lo = self.eta_min
        c = 1 + math.cos(math.pi * self.last_epoch / self.T_max)
        return [lo + (b - lo) * c / 2 for b in self.base_lrs]


def _check_composable(owner: str, optimizer, schedulers) -> None:
    for i, s in enumerate(schedulers):
        if not hasattr(s, "optimizer"):
            raise TypeError(f"{owner} at index {i} should have `optimizer` as its attribute.")
        if isinstance(s, ReduceLROnPlateau):
            raise ValueError(
                f"{owner} does not support `ReduceLROnPlateau` scheduler as it "
                "requires additional kwargs to be specified when calling `step`, "
                f"but got one at index {i} in the given schedulers sequence."
            )
        if optimizer != s.optimizer:
            raise ValueError(
                f"{owner} expects all schedulers to belong to the same optimizer, but "
                f"got scheduler {s.__class__.__name__} at index {i} has {s.optimizer}, "
                f"which is different from {optimizer.__class__.__name__}."
            )


class _Composite:
    """state_dict support for schedulers made of ``_schedulers``."""

    def state_dict(self) -> dict[str, Any]:
        sd = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "_schedulers")}
        sd["_schedulers"] = [s.state_dict() for s in self._schedulers]
        return sd

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        schedulers = state_dict.pop("_schedulers")
        self.__dict__.update(state_dict)
        state_dict["_schedulers"] = schedulers
        for s, sd in zip(self._schedulers, schedulers):
            s.load_state_dict(sd)


class SequentialLR(_Composite, LRScheduler):
    """Run ``schedulers`` one after the other, switching at each of ``milestones``."""

    def __init__(
        self,
        optimizer: Optimizer,
        schedulers: list[LRScheduler],
        milestones: list[int],
        last_epoch: int = -1,
    ) -> None:
        name = self.__class__.__name__
        if len(schedulers) < 1:
            raise ValueError(f"{name} expects at least one scheduler, but got no scheduler.")
        _check_composable(name, optimizer, schedulers)
        if len(milestones) != len(schedulers) - 1:
            raise ValueError(
                "Sequential Schedulers expects number of schedulers provided to be one more "
                f"than the number of milestone points, but got number of schedulers "
                f"{len(schedulers)} and the number of milestones to be equal to {len(milestones)}"
            )
        self._schedulers = schedulers
        self._milestones = milestones
        self.last_epoch = last_epoch + 1
        self.optimizer = optimizer
        for group in optimizer.param_groups:
            group["lr"] = group["initial_lr"]
        self.recursive_undo()
        first, _ = self._scheduler_at(0)
        first._initial_step()
        self._last_lr = first.get_last_lr()

    def _scheduler_at(self, epoch: int):
        """(the scheduler running at ``epoch``, whether ``epoch`` is its first)."""
        # scheduler k runs from milestone k-1 (inclusive) to milestone k
        k = bisect_right(self._milestones, epoch)
        return self._schedulers[k], k > 0 and self._milestones[k - 1] == epoch

    def recursive_undo(self, sched=None) -> None:
        """Undo the initial step every (nested) scheduler took when it was built."""
        scheds = self if sched is None else sched
        if hasattr(scheds, "_schedulers"):
            for s in scheds._schedulers:
                self.recursive_undo(s)
        elif hasattr(scheds, "last_epoch"):
            scheds.last_epoch -= 1

    def step(self) -> None:
        self.last_epoch += 1
        scheduler, starting = self._scheduler_at(self.last_epoch)
        if starting:  # a scheduler taking over restarts from its own epoch 0
            scheduler._update_lr(0)
        else:
            scheduler.step()
        self._last_lr = scheduler.get_last_lr()


class ChainedScheduler(_Composite, LRScheduler):
    """Step every scheduler of ``schedulers`` at each step (their effects multiply)."""

    def __init__(self, schedulers: Sequence[LRScheduler], optimizer: Optimizer | None = None):
        name = self.__class__.__name__
        if len(schedulers) < 1:
            raise ValueError(
                f"{name} expects at least one scheduler to be chained, but got no scheduler."
            )
        if optimizer is None:
            optimizer = schedulers[0].optimizer
        _check_composable(name, optimizer, schedulers)
        self._schedulers = schedulers
        self.optimizer = optimizer
        self._last_lr = _group_values(schedulers[-1].optimizer, "lr")

    def step(self) -> None:
        for scheduler in self._schedulers:
            scheduler.step()
        self._last_lr = _group_values(self._schedulers[-1].optimizer, "lr")


class ReduceLROnPlateau(LRScheduler):
    """Multiply the lr by ``factor`` when a metric has stopped improving for ``patience`` epochs."""

    def __init__(
        self,
        optimizer: Optimizer,
        mode: str = "min",
        factor: float = 0.1,
        patience: int = 10,
        threshold: float = 1e-4,
        threshold_mode: str = "rel",
        cooldown: int = 0,
        min_lr: list[float] | float = 0,
        eps: float = 1e-8,
    ) -> None:
        if factor >= 1.0:
            raise ValueError("Factor should be < 1.0.")
        self.factor = factor
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        # a single min_lr is remembered, to extend min_lrs to groups added later
        self.default_min_lr = None if isinstance(min_lr, (list, tuple)) else min_lr
        self.min_lrs = _per_group(
            min_lr,
            optimizer,
            lambda given, groups: ValueError(f"expected {groups} min_lrs, got {given}"),
        )
        self.patience = patience
        self.cooldown = cooldown
        self.eps = eps
        self.last_epoch = 0
        self._last_lr = _group_values(optimizer, "lr")
        self._set_comparison(mode, threshold, threshold_mode)
        self._reset()

    def _reset(self) -> None:
        self.best = self.mode_worse
        self.cooldown_counter = 0
        self.num_bad_epochs = 0

    def step(self, metrics, epoch=None) -> None:
        current = float(metrics)
        if epoch is None:
            epoch = self.last_epoch + 1
        else:
            _warn_epoch_argument()
        self.last_epoch = epoch
        if self._is_better(current, self.best):
            self.best = current
            self.num_bad_epochs = 0
        else:
            self.num_bad_epochs += 1
        if self.in_cooldown:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0  # bad epochs in cooldown do not count
        if self.num_bad_epochs > self.patience:
            self._reduce_lr(epoch)
            self.cooldown_counter = self.cooldown
            self.num_bad_epochs = 0
        self._last_lr = _group_values(self.optimizer, "lr")

    def _reduce_lr(self, epoch) -> None:
        groups = self.optimizer.param_groups
        if len(groups) != len(self.min_lrs):
            if self.default_min_lr is None:
                raise RuntimeError(
                    "The number of param groups in the `optimizer` "
                    f"({len(self.optimizer.param_groups)}) differs "
                    f"from when `ReduceLROnPlateau` was initialized "
                    f"({len(self.min_lrs)}), usually due to a new "
                    "param group being added to the optimizer. Please "
                    "modify the `min_lrs` field to match the length "
                    "of the `optimizer` param groups."
                )
            self.min_lrs = [self.default_min_lr] * len(groups)
        for group, floor in zip(groups, self.min_lrs):
            lr = float(group["lr"])
            reduced = max(lr * self.factor, floor)
            if lr - reduced > self.eps:  # changes smaller than eps are ignored
                group["lr"] = reduced

    @property
    def in_cooldown(self) -> bool:
        return self.cooldown_counter > 0

    # does ``a`` improve on ``best`` by more than the threshold t, per (mode, threshold_mode)
    _IMPROVES = {
        ("min", "rel"): lambda a, best, t: a < best * (1.0 - t),
        ("min", "abs"): lambda a, best, t: a < best - t,
        ("max", "rel"): lambda a, best, t: a > best * (t + 1.0),
        ("max", "abs"): lambda a, best, t: a > best + t,
    }

    def _is_better(self, a, best) -> bool:
        return self._IMPROVES[self.mode, self.threshold_mode](a, best, self.threshold)

    def _set_comparison(self, mode, threshold, threshold_mode) -> None:
        if mode not in {"min", "max"}:
            raise ValueError("mode " + mode + " is unknown!")
        if threshold_mode not in {"rel", "abs"}:
            raise ValueError("threshold mode " + threshold_mode + " is unknown!")
        self.mode_worse = math.inf if mode == "min" else -math.inf
        self.mode = mode
        self.threshold = threshold
        self.threshold_mode = threshold_mode

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.__dict__.update(state_dict)
        self._set_comparison(self.mode, self.threshold, self.threshold_mode)


from ember.optim._lr_cyclic import (  # noqa: E402  (they subclass LRScheduler)
    CosineAnnealingWarmRestarts,
    CyclicLR,
    OneCycleLR,
)

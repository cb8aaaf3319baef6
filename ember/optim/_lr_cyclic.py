"""Cyclic schedules: CyclicLR, OneCycleLR, CosineAnnealingWarmRestarts (torch's formulas)."""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial
from typing import Any

from ember.optim.lr_scheduler import (
    LRScheduler,
    _callable_state,
    _expect_int,
    _Flag,
    _format_param,
    _group_values,
    _warn_get_lr_called_within_step,
)
from ember.optim.optimizer import Optimizer

__all__ = ["CyclicLR", "OneCycleLR", "CosineAnnealingWarmRestarts"]


def _nonpositive(value) -> bool:
    return value <= 0


def _below_one(value) -> bool:
    return value < 1


def _set_momentum(group: dict, use_beta1: bool, momentum: float) -> None:
    if use_beta1:
        group["betas"] = (momentum, *group["betas"][1:])
    else:
        group["momentum"] = momentum


def _init_momentum(sched, optimizer, base_momentum, max_momentum, last_epoch: int):
    if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
        raise ValueError(
            "optimizer must support momentum or beta1 with `cycle_momentum` option enabled"
        )
    sched.use_beta1 = "betas" in optimizer.defaults
    base = _format_param("base_momentum", optimizer, base_momentum)
    top = _format_param("max_momentum", optimizer, max_momentum)
    if last_epoch == -1:
        for m, b, group in zip(top, base, optimizer.param_groups):
            _set_momentum(group, sched.use_beta1, m)
            group["max_momentum"] = m
            group["base_momentum"] = b
    return base, top


def _gamma_power(gamma: float, x: float) -> float:
    return gamma**x


# the built-in amplitude policies: mode -> (scale of the amplitude at x, what x counts);
# "exp_range" is completed with the scheduler's gamma
_CYCLIC_MODES: dict[str, tuple[Callable, str]] = {
    "triangular": (lambda cycle: 1.0, "cycle"),
    "triangular2": (lambda cycle: 1 / (2.0 ** (cycle - 1)), "cycle"),  # halves every cycle
    "exp_range": (_gamma_power, "iterations"),
}


class CyclicLR(LRScheduler):
    """Cycle the lr between ``base_lr`` and ``max_lr`` (triangular, triangular2, exp_range)."""

    def __init__(
        self,
        optimizer: Optimizer,
        base_lr: float | list[float],
        max_lr: float | list[float],
        step_size_up: int = 2000,
        step_size_down: int | None = None,
        mode: str = "triangular",
        gamma: float = 1.0,
        scale_fn: Callable[[float], float] | None = None,
        scale_mode: str = "cycle",
        cycle_momentum: bool = True,
        base_momentum: float = 0.8,
        max_momentum: float = 0.9,
        last_epoch: int = -1,
    ) -> None:
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        # a fresh start also sets each group's lr to its base
        fresh = last_epoch == -1
        base_lrs = _format_param("base_lr", optimizer, base_lr, write_as="lr" if fresh else None)
        self.max_lrs = _format_param("max_lr", optimizer, max_lr)
        step_size_up = float(step_size_up)
        step_size_down = float(step_size_down) if step_size_down is not None else step_size_up
        self.total_size = step_size_up + step_size_down
        self.step_ratio = step_size_up / self.total_size
        if scale_fn is None and mode not in _CYCLIC_MODES:
            raise ValueError("mode is invalid and scale_fn is None")
        self.mode = mode
        self.gamma = gamma
        self._scale_fn_custom = scale_fn
        self.scale_mode = scale_mode
        self._init_scale_fn()
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            self.base_momentums, self.max_momentums = _init_momentum(
                self, optimizer, base_momentum, max_momentum, last_epoch
            )
        super().__init__(optimizer, last_epoch)
        self.base_lrs = base_lrs

    def _init_scale_fn(self) -> None:
        # a user scale_fn wins over the mode (and keeps the scale_mode it came with)
        if self._scale_fn_custom is not None or self.mode not in _CYCLIC_MODES:
            return
        fn, self.scale_mode = _CYCLIC_MODES[self.mode]
        self._scale_fn_ref = partial(fn, self.gamma) if fn is _gamma_power else fn

    def scale_fn(self, x) -> float:
        """Return the amplitude scale at cycle (or iteration) ``x``."""
        if self._scale_fn_custom is not None:
            return self._scale_fn_custom(x)
        return self._scale_fn_ref(x)

    def get_lr(self) -> list[float]:
        _warn_get_lr_called_within_step(self)
        # cycles count from 1; ``x`` in [0, 1) is the position inside the current one
        progress = self.last_epoch / self.total_size
        cycle = math.floor(1 + progress)
        x = 1.0 + progress - cycle
        # the triangle: 0 -> 1 over the rising fraction step_ratio, back to 0 after it
        rising = x <= self.step_ratio
        scale_factor = x / self.step_ratio if rising else (x - 1) / (self.step_ratio - 1)
        at = cycle if self.scale_mode == "cycle" else self.last_epoch
        lrs = [
            b + ((m - b) * scale_factor) * self.scale_fn(at)
            for b, m in zip(self.base_lrs, self.max_lrs)
        ]
        if self.cycle_momentum:
            for group, b, m in zip(
                self.optimizer.param_groups, self.base_momentums, self.max_momentums
            ):
                momentum = m - ((m - b) * scale_factor) * self.scale_fn(at)
                _set_momentum(group, self.use_beta1, momentum)
        return lrs

    def state_dict(self) -> dict[str, Any]:
        state = super().state_dict()
        state.pop("_scale_fn_ref", None)
        state["_scale_fn_custom"] = _callable_state(state["_scale_fn_custom"])
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        fn = state_dict.pop("_scale_fn_custom")
        super().load_state_dict(state_dict)
        if fn is not None:
            self._scale_fn_custom.__dict__.update(fn)
        self._init_scale_fn()


class CosineAnnealingWarmRestarts(LRScheduler):
    """Cosine annealing restarted every ``T_i`` epochs (``T_i`` grows by ``T_mult``)."""

    def __init__(
        self,
        optimizer: Optimizer,
        T_0: int,
        T_mult: int = 1,
        eta_min: float = 0.0,
        last_epoch: int = -1,
    ) -> None:
        _expect_int(
            T_0, _nonpositive, f"Expected positive integer T_0, but got {T_0}", compare_first=True
        )
        _expect_int(
            T_mult,
            _below_one,
            f"Expected integer T_mult >= 1, but got {T_mult}",
            compare_first=True,
        )
        if not isinstance(eta_min, (float, int)):
            raise ValueError(
                f"Expected float or int eta_min, but got {eta_min} of type {type(eta_min)}"
            )
        self.T_0 = T_0
        self.T_i = T_0
        self.T_mult = T_mult
        self.eta_min = eta_min
        self.T_cur = last_epoch
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        _warn_get_lr_called_within_step(self)
        c = 1 + math.cos(math.pi * self.T_cur / self.T_i)
        return [self.eta_min + (b - self.eta_min) * c / 2 for b in self.base_lrs]

    def step(self, epoch=None) -> None:
        if epoch is None and self.last_epoch < 0:
            epoch = 0
        if epoch is None:
            epoch = self.last_epoch + 1
            self.T_cur = self.T_cur + 1
            if self.T_cur >= self.T_i:
                self.T_cur = self.T_cur % self.T_i
                self.T_i = self.T_i * self.T_mult
        else:
            if epoch < 0:
                raise ValueError(f"Expected non-negative epoch, but got {epoch}")
            if epoch >= self.T_0:
                if self.T_mult == 1:
                    self.T_cur = epoch % self.T_0
                else:
                    n = int(math.log((epoch / self.T_0 * (self.T_mult - 1) + 1), self.T_mult))
                    self.T_cur = epoch - self.T_0 * (self.T_mult**n - 1) / (self.T_mult - 1)
                    self.T_i = self.T_0 * self.T_mult ** (n)
            else:
                self.T_i = self.T_0
                self.T_cur = epoch
        self.last_epoch = math.floor(epoch)
        with _Flag(self, "_get_lr_called_within_step"):
            for group, lr in zip(self.optimizer.param_groups, self.get_lr()):
                group["lr"] = lr
        self._last_lr = _group_values(self.optimizer, "lr")


class OneCycleLR(LRScheduler):
    """The 1cycle policy: warm up to ``max_lr`` then anneal far below the initial lr."""

    def __init__(
        self,
        optimizer: Optimizer,
        max_lr: float | list[float],
        total_steps: int | None = None,
        epochs: int | None = None,
        steps_per_epoch: int | None = None,
        pct_start: float = 0.3,
        anneal_strategy: str = "cos",
        cycle_momentum: bool = True,
        base_momentum: float | list[float] = 0.85,
        max_momentum: float | list[float] = 0.95,
        div_factor: float = 25.0,
        final_div_factor: float = 1e4,
        three_phase: bool = False,
        last_epoch: int = -1,
    ) -> None:
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        if total_steps is not None:
            message = f"Expected positive integer total_steps, but got {total_steps}"
            _expect_int(total_steps, _nonpositive, message, compare_first=True)
            self.total_steps = total_steps
        elif epochs is not None and steps_per_epoch is not None:
            _expect_int(epochs, _nonpositive, f"Expected positive integer epochs, but got {epochs}")
            message = f"Expected positive integer steps_per_epoch, but got {steps_per_epoch}"
            _expect_int(steps_per_epoch, _nonpositive, message)
            self.total_steps = epochs * steps_per_epoch
        else:
            raise ValueError("You must define either total_steps OR (epochs AND steps_per_epoch)")

        def phase(end, slr, elr, sm, em):
            return {
                "end_step": end,
                "start_lr": slr,
                "end_lr": elr,
                "start_momentum": sm,
                "end_momentum": em,
            }

        up = float(pct_start * self.total_steps) - 1
        if three_phase:
            self._schedule_phases = [
                phase(up, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
                phase(
                    float(2 * pct_start * self.total_steps) - 2,
                    "max_lr",
                    "initial_lr",
                    "base_momentum",
                    "max_momentum",
                ),
                phase(self.total_steps - 1, "initial_lr", "min_lr", "max_momentum", "max_momentum"),
            ]
        else:
            self._schedule_phases = [
                phase(up, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
                phase(self.total_steps - 1, "max_lr", "min_lr", "base_momentum", "max_momentum"),
            ]
        if pct_start < 0 or pct_start > 1 or not isinstance(pct_start, float):
            raise ValueError(f"Expected float between 0 and 1 pct_start, but got {pct_start}")
        if anneal_strategy not in ["cos", "linear"]:
            raise ValueError(
                f"anneal_strategy must be one of 'cos' or 'linear', instead got {anneal_strategy}"
            )
        self._anneal_func_type = anneal_strategy
        peaks = _format_param("max_lr", optimizer, max_lr)
        if last_epoch == -1:
            # each group starts at peak / div_factor and ends final_div_factor below that
            for group, peak in zip(optimizer.param_groups, peaks):
                start = peak / div_factor
                group.update(initial_lr=start, max_lr=peak, min_lr=start / final_div_factor)
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            _init_momentum(self, optimizer, base_momentum, max_momentum, last_epoch)
        super().__init__(optimizer, last_epoch)

    def _anneal_func(self, start, end, pct):
        if self._anneal_func_type == "cos":
            return self._annealing_cos(start, end, pct)
        return self._annealing_linear(start, end, pct)

    @staticmethod
    def _annealing_cos(start, end, pct):
        cos_out = math.cos(math.pi * pct) + 1
        return end + (start - end) / 2.0 * cos_out

    @staticmethod
    def _annealing_linear(start, end, pct):
        return (end - start) * pct + start

    def get_lr(self) -> list[float]:
        _warn_get_lr_called_within_step(self)
        step_num = self.last_epoch
        if step_num > self.total_steps:
            raise ValueError(
                f"Tried to step {step_num} times. The specified number of total steps is "
                f"{self.total_steps}"
            )
        # the phase holding this step (the last one takes everything after its predecessor)
        begin = 0.0
        for phase in self._schedule_phases[:-1]:
            if step_num <= phase["end_step"]:
                break
            begin = phase["end_step"]
        else:
            phase = self._schedule_phases[-1]
        pct = (step_num - begin) / (phase["end_step"] - begin)
        lrs = []
        for group in self.optimizer.param_groups:
            lrs.append(self._anneal_func(group[phase["start_lr"]], group[phase["end_lr"]], pct))
            if self.cycle_momentum:
                m = self._anneal_func(
                    group[phase["start_momentum"]], group[phase["end_momentum"]], pct
                )
                _set_momentum(group, self.use_beta1, m)
        return lrs

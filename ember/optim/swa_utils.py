"""Stochastic weight averaging and EMA: AveragedModel, SWALR, update_bn (as torch's swa_utils)."""

from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Callable, Iterable
from copy import deepcopy
from typing import Any

from ember._core.dtype import int64
from ember._core.grad_mode import no_grad
from ember._ops import API
from ember.nn import Module
from ember.nn.modules.batchnorm import _BatchNorm
from ember.optim.lr_scheduler import LRScheduler, _expect_int, _format_param
from ember.optim.optimizer import Optimizer

__all__ = [
    "AveragedModel",
    "update_bn",
    "SWALR",
    "get_ema_multi_avg_fn",
    "get_swa_multi_avg_fn",
    "get_ema_avg_fn",
    "get_swa_avg_fn",
]

_tensor = API["tensor"]


def _check_decay(decay: float) -> None:
    if decay < 0.0 or decay > 1.0:
        raise ValueError(
            f"Invalid decay value {decay} provided. Please provide a value in [0,1] range."
        )


def _ema_of(average, current, decay):
    # the exponential moving average's new value (out of place: integer tensors too)
    return decay * average + (1 - decay) * current


def _running_mean_of(average, current, count):
    # the equal-weight mean of ``count`` values so far and ``current``
    return average + (current - average) / (count + 1)


def get_ema_multi_avg_fn(decay: float = 0.999) -> Callable:
    """Return a function updating a list of EMA parameters in place: ``ema += (1-decay)(p-ema)``."""
    _check_decay(decay)

    def ema_update(ema_param_list, current_param_list, _) -> None:
        with no_grad():
            if ema_param_list[0].is_floating_point():
                for p_ema, p_model in zip(ema_param_list, current_param_list):
                    p_ema.lerp_(p_model, 1 - decay)
            else:
                for p_ema, p_model in zip(ema_param_list, current_param_list):
                    p_ema.copy_(_ema_of(p_ema, p_model, decay))

    return ema_update


def get_swa_multi_avg_fn() -> Callable:
    """Return a function updating a list of running means in place (equal weights)."""

    def swa_update(averaged_param_list, current_param_list, num_averaged) -> None:
        with no_grad():
            if averaged_param_list[0].is_floating_point():
                w = float(1 / (num_averaged + 1))
                for p_avg, p_model in zip(averaged_param_list, current_param_list):
                    p_avg.lerp_(p_model, w)
            else:
                for p_avg, p_model in zip(averaged_param_list, current_param_list):
                    diff = p_model - p_avg
                    if hasattr(num_averaged, "dtype"):
                        p_avg.addcdiv_(diff, num_averaged + 1)  # torch's error for ints
                    else:
                        p_avg.add_(diff, alpha=1.0 / (num_averaged + 1))

    return swa_update


def get_ema_avg_fn(decay: float = 0.999) -> Callable:
    """Return ``avg_fn(ema, p, n) -> decay * ema + (1 - decay) * p``."""
    _check_decay(decay)

    def ema_update(ema_param, current_param, num_averaged):
        with no_grad():
            return _ema_of(ema_param, current_param, decay)

    return ema_update


def get_swa_avg_fn() -> Callable:
    """Return ``avg_fn(avg, p, n) -> avg + (p - avg) / (n + 1)``."""

    def swa_update(averaged_param, current_param, num_averaged):
        with no_grad():
            return _running_mean_of(averaged_param, current_param, num_averaged)

    return swa_update


class AveragedModel(Module):
    """A copy of ``model`` whose parameters (and buffers with ``use_buffers``) are averaged by
    ``update_parameters`` (equal-weight SWA by default, or ``avg_fn`` / ``multi_avg_fn``)."""

    def __init__(
        self,
        model: Module,
        device=None,
        avg_fn: Callable | None = None,
        multi_avg_fn: Callable | None = None,
        use_buffers: bool = False,
    ) -> None:
        super().__init__()
        if None not in (avg_fn, multi_avg_fn):
            raise AssertionError("Only one of avg_fn and multi_avg_fn should be provided")
        self.module = deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        self.register_buffer("n_averaged", _tensor(0, dtype=int64))
        self.avg_fn = avg_fn
        self.multi_avg_fn = multi_avg_fn
        self.use_buffers = use_buffers

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)

    def update_parameters(self, model: Module) -> None:
        """Fold the current parameters of ``model`` into the average."""
        if self.use_buffers:
            self_param = itertools.chain(self.module.parameters(), self.module.buffers())
            model_param = itertools.chain(model.parameters(), model.buffers())
        else:
            self_param, model_param = self.parameters(), model.parameters()
        averaged, current = [], []
        copy_param = bool(self.n_averaged == 0)
        with no_grad():
            for p_averaged, p_model in zip(self_param, model_param):
                averaged.append(p_averaged.detach())
                current.append(p_model.detach())
                if copy_param:
                    p_averaged.detach().copy_(p_model.detach())
            if self.n_averaged > 0:
                if self.multi_avg_fn is not None:
                    # one call per dtype, as torch groups tensors by device and dtype
                    groups: dict = {}
                    for a, c in zip(averaged, current):
                        pair = groups.setdefault(a.dtype, ([], []))
                        pair[0].append(a)
                        pair[1].append(c)
                    for avg_list, cur_list in groups.values():
                        self.multi_avg_fn(avg_list, cur_list, self.n_averaged)
                else:
                    avg_fn = self.avg_fn if self.avg_fn is not None else get_swa_avg_fn()
                    for p_averaged, p_model in zip(averaged, current):
                        p_averaged.copy_(avg_fn(p_averaged, p_model, self.n_averaged))
            if not self.use_buffers:
                for b_swa, b_model in zip(self.module.buffers(), model.buffers()):
                    b_swa.detach().copy_(b_model.detach())
            self.n_averaged.add_(1)


def update_bn(loader: Iterable[Any], model: Module, device=None) -> None:
    """Recompute the BatchNorm running statistics of ``model`` with one pass over ``loader``."""
    momenta = {}
    for module in model.modules():
        if isinstance(module, _BatchNorm):
            module.reset_running_stats()
            momenta[module] = module.momentum
    if not momenta:
        return
    was_training = model.training
    model.train()
    for module in momenta:
        module.momentum = None  # a cumulative average over the whole pass
    with no_grad():
        for input in loader:
            if isinstance(input, (list, tuple)):
                input = input[0]
            if device is not None:
                input = input.to(device)
            model(input)
    for bn_module in momenta:
        bn_module.momentum = momenta[bn_module]
    model.train(was_training)


class SWALR(LRScheduler):
    """Anneal each group's lr to ``swa_lr`` over ``anneal_epochs`` (cos or linear), then hold."""

    def __init__(
        self,
        optimizer: Optimizer,
        swa_lr: float,
        anneal_epochs: int = 10,
        anneal_strategy: str = "cos",
        last_epoch: int = -1,
    ) -> None:
        _format_param("swa_lr", optimizer, swa_lr, write_as="swa_lr")
        if anneal_strategy not in ["cos", "linear"]:
            raise ValueError(
                f"anneal_strategy must be one of 'cos' or 'linear', instead got {anneal_strategy}"
            )
        self._set_anneal_func(anneal_strategy)
        message = f"anneal_epochs must be equal or greater than 0, got {anneal_epochs}"
        _expect_int(anneal_epochs, lambda epochs: epochs < 0, message)
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    @staticmethod
    def _linear_anneal(t):
        return t

    @staticmethod
    def _cosine_anneal(t):
        return (1 - math.cos(math.pi * t)) / 2

    @staticmethod
    def _get_initial_lr(lr, swa_lr, alpha):
        if alpha == 1:
            return swa_lr
        return (lr - alpha * swa_lr) / (1 - alpha)

    def get_lr(self) -> list[float]:
        if not self._get_lr_called_within_step:
            warnings.warn(
                "To get the last learning rate computed by the scheduler, "
                "please use `get_last_lr()`.",
                UserWarning,
                stacklevel=2,
            )
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)

        # the share of swa_lr at a step: the annealing curve over the clipped progress
        def share(at):
            progress = at / max(1, self.anneal_epochs)
            return self.anneal_func(max(0, min(1, progress)))

        # recover the lr this schedule started from (the group's lr may be someone else's)
        prev_alpha = share(step - 1)
        groups = self.optimizer.param_groups
        prev_lrs = [self._get_initial_lr(g["lr"], g["swa_lr"], prev_alpha) for g in groups]
        alpha = share(step)
        return [g["swa_lr"] * alpha + lr * (1 - alpha) for g, lr in zip(groups, prev_lrs)]

    def _set_anneal_func(self, anneal_strategy: str) -> None:
        self._anneal_strategy = anneal_strategy
        self.anneal_func = self._cosine_anneal if anneal_strategy == "cos" else self._linear_anneal

    def state_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "anneal_func")}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.__dict__.update(state_dict)
        self._set_anneal_func(self._anneal_strategy)

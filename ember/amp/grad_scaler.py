"""``GradScaler``: dynamic loss scaling, as torch's ``torch.amp.GradScaler``.

On ``'cpu'`` it is enabled, as torch's: ``scale`` multiplies the loss by the scale,
``unscale_`` divides the gradients by it (noting any inf/nan), ``step`` skips the optimizer
step when one was found, and ``update`` backs the scale off after a skipped step or grows it
after ``growth_interval`` clean ones. For ``'cuda'`` (and other devices ember lacks) it disables
itself with torch's warning and passes everything through.
"""

from __future__ import annotations

import warnings
from collections import defaultdict
from enum import Enum

import numpy as np


class OptState(Enum):
    READY = 0
    UNSCALED = 1
    STEPPED = 2


def _refresh_per_optimizer_state() -> dict:
    return {"stage": OptState.READY, "found_inf_per_device": {}}


class GradScaler:
    """Scale the loss so that small float16/bfloat16 gradients do not underflow."""

    def __init__(
        self,
        device: str = "cuda",
        init_scale: float = 2.0**16,
        growth_factor: float = 2.0,
        backoff_factor: float = 0.5,
        growth_interval: int = 2000,
        enabled: bool = True,
    ) -> None:
        self._device = device
        self._enabled = enabled
        if enabled and device != "cpu":
            warnings.warn(
                f"torch.{device}.amp.GradScaler is enabled, but {device.upper()} is not "
                "available.  Disabling."
                if device == "cuda"
                else f"GradScaler: device '{device}' is not available.  Disabling.",
                UserWarning,
                stacklevel=2,
            )
            self._enabled = False
        if self._enabled:
            if growth_factor <= 1.0:
                raise AssertionError("The growth factor must be > 1.0.")
            if backoff_factor >= 1.0:
                raise AssertionError("The backoff factor must be < 1.0.")
        self._init_scale = init_scale
        self._scale: float | None = None
        self._growth_factor = growth_factor
        self._backoff_factor = backoff_factor
        self._growth_interval = growth_interval
        self._init_growth_tracker = 0
        self._growth_tracker: int | None = None
        self._per_optimizer_states: defaultdict
        self._forget_optimizers()

    def _forget_optimizers(self) -> None:
        # a new iteration (and an unpickled scaler) starts with no optimizer seen: each gets
        # a fresh READY record, keyed by id, on first use
        self._per_optimizer_states = defaultdict(_refresh_per_optimizer_state)

    # ------------------------------------------------------------------ scaling
    def scale(self, outputs):
        """Return ``outputs`` (a tensor or an iterable of them) multiplied by the scale."""
        if not self._enabled:
            return outputs
        from ember._core.tensor import Tensor

        if self._scale is None:
            self._scale = float(np.float32(self._init_scale))
            self._growth_tracker = self._init_growth_tracker
        if isinstance(outputs, Tensor):
            return outputs * self._scale

        def apply_scale(val):
            if isinstance(val, Tensor):
                return val * self._scale
            if isinstance(val, (list, tuple)):
                out = [apply_scale(v) for v in val]
                return type(val)(out)
            raise ValueError("outputs must be a Tensor or an iterable of Tensors")

        return apply_scale(outputs)

    def unscale_(self, optimizer) -> None:
        """Divide the gradients of ``optimizer``'s parameters by the scale, in place."""
        if not self._enabled:
            return
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] is OptState.UNSCALED:
            raise RuntimeError(
                "unscale_() has already been called on this optimizer since the last update()."
            )
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        if self._scale is None:
            raise AssertionError("Attempted unscale_ but _scale is None.  " + _NOT_SCALED)
        inv_scale = float(np.float32(1.0 / np.float64(np.float32(self._scale))))
        found_inf = False
        from ember._core.grad_mode import no_grad

        with no_grad():
            for group in optimizer.param_groups:
                for p in group["params"]:
                    g = p.grad
                    if g is None:
                        continue
                    if not np.all(np.isfinite(g._data)):
                        found_inf = True
                    g.mul_(inv_scale)
        state["found_inf_per_device"] = {"cpu": 1.0 if found_inf else 0.0}
        state["stage"] = OptState.UNSCALED

    def step(self, optimizer, *args, **kwargs):
        """Unscale (if not done yet) and run ``optimizer.step`` unless a gradient was inf/nan;
        return what the step returned (None when skipped)."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is enabled.")
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if state["stage"] is OptState.READY:
            self.unscale_(optimizer)
        if not state["found_inf_per_device"]:
            raise AssertionError("No inf checks were recorded for this optimizer.")
        retval = None
        if not sum(state["found_inf_per_device"].values()):
            retval = optimizer.step(*args, **kwargs)
        state["stage"] = OptState.STEPPED
        return retval

    def update(self, new_scale=None) -> None:
        """Update the scale: back off after a skipped step, grow after ``growth_interval`` clean
        steps in a row (or set it to ``new_scale``)."""
        if not self._enabled:
            return
        if self._scale is None:
            raise AssertionError("Attempted update but _scale is None.  " + _NOT_SCALED)
        if new_scale is not None:
            from ember._core.tensor import Tensor

            if isinstance(new_scale, Tensor):
                new_scale = new_scale.item()
            elif not isinstance(new_scale, float):
                raise AssertionError(
                    "new_scale should be a float or a 1-element torch.cuda.FloatTensor or "
                    "torch.FloatTensor with requires_grad=False."
                )
            self._scale = float(np.float32(new_scale))
        else:
            found = [
                v
                for state in self._per_optimizer_states.values()
                for v in state["found_inf_per_device"].values()
            ]
            if not found:
                raise AssertionError("No inf checks were recorded prior to update.")
            if sum(found):
                self._scale = float(np.float32(self._scale * self._backoff_factor))
                self._growth_tracker = 0
            else:
                self._growth_tracker += 1
                if self._growth_tracker == self._growth_interval:
                    self._scale = float(np.float32(self._scale * self._growth_factor))
                    self._growth_tracker = 0
        self._forget_optimizers()

    # ------------------------------------------------------------------ queries and settings
    def get_scale(self) -> float:
        """Return the current scale (1.0 when disabled)."""
        if not self._enabled:
            return 1.0
        return float(self._init_scale) if self._scale is None else self._scale

    def get_growth_factor(self) -> float:
        """Return the factor the scale grows by."""
        return self._growth_factor

    def set_growth_factor(self, new_factor: float) -> None:
        """Set the factor the scale grows by."""
        self._growth_factor = new_factor

    def get_backoff_factor(self) -> float:
        """Return the factor the scale backs off by."""
        return self._backoff_factor

    def set_backoff_factor(self, new_factor: float) -> None:
        """Set the factor the scale backs off by."""
        self._backoff_factor = new_factor

    def get_growth_interval(self) -> int:
        """Return the number of clean steps after which the scale grows."""
        return self._growth_interval

    def set_growth_interval(self, new_interval: int) -> None:
        """Set the number of clean steps after which the scale grows."""
        self._growth_interval = new_interval

    def _get_growth_tracker(self) -> int:
        if self._enabled:
            return (
                self._init_growth_tracker if self._growth_tracker is None else self._growth_tracker
            )
        return 0

    def is_enabled(self) -> bool:
        """Return whether the scaler is enabled."""
        return self._enabled

    def state_dict(self) -> dict:
        """Return the scaler's state (``{}`` when disabled), in torch's format."""
        if not self._enabled:
            return {}
        return {
            "scale": self.get_scale(),
            "growth_factor": self._growth_factor,
            "backoff_factor": self._backoff_factor,
            "growth_interval": self._growth_interval,
            "_growth_tracker": self._get_growth_tracker(),
        }

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore the state ``state_dict()`` returned."""
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError(
                "The source state dict is empty, possibly because it was saved from a disabled "
                "instance of GradScaler."
            )
        self._init_scale = float(state_dict["scale"])
        if self._scale is not None:
            self._scale = float(np.float32(state_dict["scale"]))
        self._growth_factor = float(state_dict["growth_factor"])
        self._backoff_factor = float(state_dict["backoff_factor"])
        self._growth_interval = int(state_dict["growth_interval"])
        self._init_growth_tracker = int(state_dict["_growth_tracker"])
        if self._growth_tracker is not None:
            self._growth_tracker = int(state_dict["_growth_tracker"])

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        if self._enabled:
            if len(self._per_optimizer_states) != 0:
                raise AssertionError(
                    "A GradScaler instance may only be pickled at the beginning of an iteration, "
                    "or at the end after scaler.update()."
                )
        state["_per_optimizer_states"] = None
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._forget_optimizers()


_NOT_SCALED = (
    "This may indicate your script did not use scaler.scale(loss or outputs) earlier in the "
    "iteration."
)

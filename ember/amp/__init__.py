"""``ember.amp``: ``autocast`` and ``GradScaler`` as torch behaves without a GPU.

``GradScaler`` for CUDA disables itself with torch's warning (``scale`` returns the loss as is,
``step`` calls ``optimizer.step()``), so mixed-precision training loops run unchanged. ember has
no autocast kernels: ``autocast`` on ``'cuda'`` disables itself with torch's warning, and on
``'cpu'`` (where torch would run some ops in bfloat16) it warns that ops keep their dtypes.
"""

from __future__ import annotations

import warnings

_STATE = {"enabled": False}


def is_autocast_available(device_type: str) -> bool:
    """Return False: ember has no autocast kernels."""
    return False


class autocast:
    """Context manager and decorator for mixed precision; a no-op in ember (see module doc)."""

    def __init__(self, device_type: str, dtype=None, enabled: bool = True, cache_enabled=None):
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        self.device = device_type
        self.fast_dtype = dtype
        if enabled and device_type == "cuda":
            warnings.warn(
                "CUDA is not available or torch_xla is imported. Disabling autocast.",
                UserWarning,
                stacklevel=2,
            )
            enabled = False
        elif enabled:
            warnings.warn(
                f"ember has no autocast kernels: on '{device_type}' ops keep their input dtypes.",
                UserWarning,
                stacklevel=2,
            )
            enabled = False
        self._enabled = enabled

    def __enter__(self):
        self._prev = _STATE["enabled"]
        _STATE["enabled"] = self._enabled
        return self

    def __exit__(self, *exc) -> None:
        _STATE["enabled"] = self._prev

    def __call__(self, fn):
        import functools

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self:
                return fn(*args, **kwargs)

        return wrapper


def is_autocast_enabled(device_type: str | None = None) -> bool:
    """Return whether autocast is on (never, in ember)."""
    return _STATE["enabled"]


class GradScaler:
    """Loss scaling for float16 training; disabled without CUDA, as torch's (it passes the loss
    and the optimizer step through unchanged)."""

    def __init__(
        self,
        device: str = "cuda",
        init_scale: float = 65536.0,
        growth_factor: float = 2.0,
        backoff_factor: float = 0.5,
        growth_interval: int = 2000,
        enabled: bool = True,
    ) -> None:
        if enabled and device == "cuda":
            warnings.warn(
                "torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabling.",
                UserWarning,
                stacklevel=2,
            )
        self._device = device
        self._enabled = False

    def is_enabled(self) -> bool:
        """Return False: scaling is off without CUDA."""
        return self._enabled

    def scale(self, outputs):
        """Return ``outputs`` unchanged (scaling is off)."""
        return outputs

    def unscale_(self, optimizer) -> None:
        """Do nothing (scaling is off)."""

    def step(self, optimizer, *args, **kwargs):
        """Return ``optimizer.step(*args, **kwargs)``."""
        return optimizer.step(*args, **kwargs)

    def update(self, new_scale=None) -> None:
        """Do nothing (scaling is off)."""

    def get_scale(self) -> float:
        """Return 1.0 (scaling is off)."""
        return 1.0

    def get_growth_factor(self) -> float:
        """Return the growth factor (unused while disabled)."""
        return 2.0

    def state_dict(self) -> dict:
        """Return ``{}``, torch's state of a disabled scaler."""
        return {}

    def load_state_dict(self, state_dict: dict) -> None:
        """Accept a state dict (nothing to restore while disabled)."""


__all__ = ["GradScaler", "autocast", "is_autocast_available", "is_autocast_enabled"]

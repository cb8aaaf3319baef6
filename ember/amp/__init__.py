"""``ember.amp``: ``autocast`` and ``GradScaler`` as torch behaves without a GPU.

``GradScaler`` scales on the CPU as torch's does; for CUDA it disables itself with torch's warning
(``scale`` returns the loss as is, ``step`` calls ``optimizer.step()``), so mixed-precision
training loops run unchanged. ember has
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


def get_autocast_dtype(device_type: str):
    """Return the dtype autocast would use on ``device_type`` (bfloat16 on the CPU)."""
    import ember

    return ember.bfloat16 if device_type == "cpu" else ember.float16


def is_autocast_enabled(device_type: str | None = None) -> bool:
    """Return whether autocast is on (never, in ember)."""
    return _STATE["enabled"]


from ember.amp.grad_scaler import GradScaler  # noqa: E402

__all__ = [
    "get_autocast_dtype",
    "GradScaler",
    "autocast",
    "is_autocast_available",
    "is_autocast_enabled",
]

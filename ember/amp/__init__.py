"""``ember.amp``: automatic mixed precision, ``autocast`` and ``GradScaler``.

``autocast("cpu")`` runs the ops of torch's CPU lists in bfloat16 (or float16) or float32 (see
``autocast_mode``). ``GradScaler`` scales on the CPU as torch's does. ember has no GPU: for CUDA
both disable themselves with torch's warning (``scale`` returns the loss as is, ``step`` calls
``optimizer.step()``), so mixed-precision training loops run unchanged.
"""

from __future__ import annotations

from ember.amp import autocast_mode  # noqa: F401
from ember.amp.autocast_mode import (  # noqa: F401  (torch.amp's names, and torch's top level's)
    autocast,
    autocast_decrement_nesting,
    autocast_increment_nesting,
    clear_autocast_cache,
    custom_bwd,
    custom_fwd,
    get_autocast_dtype,
    is_autocast_available,
    is_autocast_cache_enabled,
    is_autocast_enabled,
    set_autocast_cache_enabled,
    set_autocast_dtype,
    set_autocast_enabled,
)
from ember.amp.grad_scaler import GradScaler

__all__ = ["autocast", "custom_bwd", "custom_fwd", "is_autocast_available", "GradScaler"]

"""torch.nn.utils.init: ``skip_init`` (kept at torch's module path)."""

from __future__ import annotations

from ember.nn.utils.memory_format import skip_init

__all__ = ["skip_init"]

"""``ember.utils.hooks``: ``RemovableHandle`` (the handle every ``register_*_hook`` returns) and
``unserializable_hook``, at the path torch code imports them from."""

from __future__ import annotations

from ember.nn.modules._hooks import RemovableHandle

__all__ = ["RemovableHandle", "unserializable_hook"]


def unserializable_hook(f):
    """Mark ``f`` as a hook that should not be serialized; return ``f``."""
    f.__torch_unserializable__ = True
    return f

"""``ember.utils.hooks``: ``RemovableHandle`` (the handle every ``register_*_hook`` returns:
tensors, nodes, modules, optimizers) and ``unserializable_hook``.

A leaf of the layer list (standard library only), so that ``_core/node.py`` and ``nn`` both
import it from here.
"""

from __future__ import annotations

import itertools
import weakref
from typing import Any

__all__ = ["RemovableHandle", "unserializable_hook"]

_next_ids = itertools.count()


class RemovableHandle:
    """A handle whose ``remove()`` takes a hook out of the dicts it was registered in.

    Args:
        hooks_dict (dict): the hooks by ``id``, the handle's own entry among them.
        extra_dict (dict or list of dicts): more tables from which ``remove()`` also deletes
            this handle's ``id``.

    The dicts are held weakly (a plain ``dict`` cannot be: TypeError, as torch's).
    """

    def __init__(self, hooks_dict: Any, *, extra_dict: Any = None) -> None:
        if extra_dict is None:
            extras = ()
        else:
            extras = tuple(extra_dict) if isinstance(extra_dict, list) else (extra_dict,)
        refs = [weakref.ref(table) for table in (hooks_dict, *extras)]
        self.hooks_dict_ref, self.extra_dict_ref = refs[0], tuple(refs[1:])
        self.id = next(_next_ids)

    def remove(self) -> None:
        """Remove the hook from every dict it was registered in."""
        for ref in (self.hooks_dict_ref, *self.extra_dict_ref):
            d = ref()
            if d is not None:
                d.pop(self.id, None)

    def __getstate__(self):
        extra = tuple(ref() for ref in self.extra_dict_ref)
        return (self.hooks_dict_ref(), self.id, extra)

    def __setstate__(self, state) -> None:
        hooks, self.id = state[0], state[1]
        # (the pickled dicts are copies: the references die with them, as torch's do)
        self.hooks_dict_ref = _dead_ref if hooks is None else weakref.ref(hooks)
        self.extra_dict_ref = tuple(
            _dead_ref if d is None else weakref.ref(d) for d in (state[2] if len(state) > 2 else ())
        )

    def __enter__(self) -> RemovableHandle:
        return self

    def __exit__(self, *exc) -> None:
        self.remove()


class _HookDict(dict):
    """A dict that can be weakly referenced (plain dicts cannot): the hook tables of tensors
    and graph nodes."""

    __slots__ = ("__weakref__",)


def add_hook(hooks: _HookDict, fn) -> RemovableHandle:
    """Add ``fn`` to ``hooks`` under a new handle's id; return the handle."""
    handle = RemovableHandle(hooks)
    hooks[handle.id] = fn
    return handle


def _dead_ref():
    return None


def unserializable_hook(f):
    """Mark ``f`` as a hook that should not be serialized; return ``f``."""
    f.__torch_unserializable__ = True
    return f

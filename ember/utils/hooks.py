"""``ember.utils.hooks``: ``RemovableHandle`` (the handle every ``register_*_hook`` returns:
tensors, nodes, modules, optimizers) and ``unserializable_hook``.

A leaf of the layer list (standard library only), so that ``autograd/node.py`` and ``nn`` both
import it from here.
"""

from __future__ import annotations

import itertools
import weakref
from typing import Any

__all__ = ["RemovableHandle", "unserializable_hook"]

_next_ids = itertools.count()


class RemovableHandle:
    """A handle which provides the capability to remove a hook.

    Args:
        hooks_dict (dict): A dictionary of hooks, indexed by hook ``id``.
        extra_dict (Union[dict, List[dict]]): An additional dictionary or list of
            dictionaries whose keys will be deleted when the same keys are
            removed from ``hooks_dict``.
    """

    def __init__(self, hooks_dict: Any, *, extra_dict: Any = None) -> None:
        self.hooks_dict_ref = weakref.ref(hooks_dict)
        self.id = next(_next_ids)
        if extra_dict is None:
            extra_dict = []
        elif not isinstance(extra_dict, list):
            extra_dict = [extra_dict]
        self.extra_dict_ref = tuple(weakref.ref(d) for d in extra_dict)

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


def _dead_ref():
    return None


def unserializable_hook(f):
    """Mark ``f`` as a hook that should not be serialized; return ``f``."""
    f.__torch_unserializable__ = True
    return f

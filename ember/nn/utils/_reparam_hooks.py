"""Finding the hook objects that weight_norm, spectral_norm and prune install on a module.

Each of those keeps its state in a hook (a forward pre-hook, and for spectral_norm two
state-dict hooks around it); one lookup serves all of them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def _named(hook: Any) -> str:
    return hook.name


def hook_keys(table: dict, kind: type, name: str, name_of: Callable = _named) -> list:
    """Return the keys of the ``kind`` hooks in ``table`` that reparametrize the tensor
    ``name`` (``name_of(hook)`` reads the tensor name a hook acts on)."""
    return [key for key, hook in table.items() if isinstance(hook, kind) and name_of(hook) == name]


def hook_key(table: dict, kind: type, name: str, name_of: Callable = _named) -> Any:
    """Return the first key :func:`hook_keys` finds, or None."""
    return next(iter(hook_keys(table, kind, name, name_of)), None)


def check_unclaimed(module: Any, kind: type, name: str, label: str) -> None:
    """Refuse a second ``kind`` reparametrization (``label``: ``weight_norm``...) of
    ``module.<name>``."""
    if hook_key(module._forward_pre_hooks, kind, name) is not None:
        raise RuntimeError(f"Cannot register two {label} hooks on the same parameter {name}")


def check_materialized(weight: Any, kind: type, label: str) -> None:
    """Refuse a lazy layer's weight before its first forward has given it a shape."""
    from ember.nn.parameter import is_lazy

    if is_lazy(weight):
        what = label.replace("_norm", " normalization")
        raise ValueError(
            f"The module passed to `{kind.__name__}` can't have uninitialized parameters. "
            f"Make sure to run the dummy forward before applying {what}"
        )

"""``torch.compiler``: ``compile`` is ``ember.compile``; ``reset`` clears the compiled caches,
``is_compiling`` answers True while a program is being captured."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ember._ops.torch_settings import compile

__all__ = [
    "allow_in_graph",
    "assume_constant_result",
    "compile",
    "cudagraph_mark_step_begin",
    "disable",
    "is_compiling",
    "is_dynamo_compiling",
    "is_exporting",
    "list_backends",
    "reset",
    "substitute_in_graph",
]


def is_compiling() -> bool:
    """Return whether a program is being captured by the compiler right now."""
    from ember._dynamo.eval_frame import COMPILING

    return COMPILING[0] > 0


def is_dynamo_compiling() -> bool:
    """Return whether the compiler is capturing a program right now."""
    return is_compiling()


def is_exporting() -> bool:
    """Return whether ``torch.export`` is tracing: never, in ember."""
    return False


def reset() -> None:
    """Clear the compiler's caches: every compiled function captures again on its next call."""
    from ember._dynamo.eval_frame import reset_all

    reset_all()


def disable(fn: Callable | None = None, recursive: bool = True, *, reason: str | None = None):
    """Return ``fn`` unchanged (as a decorator too): ember never compiles it."""
    if fn is None:
        return lambda f: f
    return fn


def allow_in_graph(fn: Callable) -> Callable:
    """Return ``fn`` unchanged."""
    return fn


def assume_constant_result(fn: Callable) -> Callable:
    """Return ``fn`` unchanged."""
    return fn


def substitute_in_graph(original_fn: Callable, *, can_constant_fold_through: bool = False,
                        skip_signature_check: bool = False) -> Callable:  # fmt: skip
    """Return a decorator that leaves the polyfill unused: ember runs ``original_fn``."""
    return lambda fn: fn


def cudagraph_mark_step_begin() -> None:
    """Mark a CUDA-graph step (ember has no CUDA graphs)."""


def list_backends(exclude_tags: Any = ("debug", "experimental")) -> list:
    """Return the names of the registered compiler backends."""
    from ember._dynamo import list_backends as _list

    return _list(exclude_tags)

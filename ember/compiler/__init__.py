"""``torch.compiler`` on an eager framework: nothing is ever being compiled, so the queries
answer False, ``disable`` and friends return what they are given, ``compile`` is
``ember.compile``."""

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
    """Return whether a graph is being traced by the compiler: never, in ember."""
    return False


def is_dynamo_compiling() -> bool:
    """Return whether TorchDynamo is tracing: never, in ember."""
    return False


def is_exporting() -> bool:
    """Return whether ``torch.export`` is tracing: never, in ember."""
    return False


def reset() -> None:
    """Clear the compiler's caches (ember has none)."""


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
    """Return the available compiler backends: none, in ember."""
    return []

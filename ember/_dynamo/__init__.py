"""``torch._dynamo`` on an eager framework: the settings scripts touch (``config``,
``reset``, ``disable``, ``mark_dynamic``...) exist and do nothing, since ember never traces
Python bytecode."""

from __future__ import annotations

import types

from ember._dynamo.eval_frame import OptimizedModule
from ember.compiler import (
    allow_in_graph,
    assume_constant_result,
    disable,
    is_compiling,
    reset,
)

__all__ = [
    "OptimizedModule",
    "allow_in_graph",
    "assume_constant_result",
    "config",
    "disable",
    "is_compiling",
    "mark_dynamic",
    "mark_static",
    "maybe_mark_dynamic",
    "optimize",
    "reset",
]

# settings scripts assign (``config.suppress_errors = True``) are recorded and never read
config = types.SimpleNamespace(
    suppress_errors=False,
    cache_size_limit=8,
    verbose=False,
    capture_scalar_outputs=False,
    optimize_ddp=True,
)


def mark_dynamic(t, index, **kwargs) -> None:
    """Mark dims of ``t`` as dynamic for the compiler (nothing to do in ember)."""


def maybe_mark_dynamic(t, index) -> None:
    """Mark dims of ``t`` as possibly dynamic (nothing to do in ember)."""


def mark_static(t, index=None) -> None:
    """Mark dims of ``t`` as static (nothing to do in ember)."""


def optimize(backend="inductor", *, nopython: bool = False, **kwargs):
    """Return a decorator leaving its function unchanged (ember runs eagerly)."""
    return lambda fn: fn

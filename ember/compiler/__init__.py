"""``torch.compiler``: ``compile`` is ``ember.compile`` (defined and published here, imported by
``import ember``: the capture itself, ``_dynamo.eval_frame``, is imported on first call);
``reset`` clears the compiled caches, ``is_compiling`` answers True while a program is being
captured."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ember._ops.registry import publish
from ember.nn.modules.module import ABOVE as _MODULE_ABOVE

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


def compile(model=None, *, fullgraph: bool = False, dynamic: bool | None = None,
            backend="inductor", mode: str | None = None, options: dict | None = None,
            disable: bool = False):  # fmt: skip
    """Return ``model`` compiled: a module comes back as an ``OptimizedModule`` (the module is
    ``_orig_mod``), a function as a function. The first call of each new input signature
    captures the program (running it eagerly) and generates code for it; later calls whose
    guards hold run the generated code. Works as ``compile(model)``, ``@compile`` and
    ``@compile(mode=...)``.
    """
    if model is None:
        return lambda fn: compile(fn, fullgraph=fullgraph, dynamic=dynamic, backend=backend,
                                  mode=mode, options=options, disable=disable)  # fmt: skip
    if not callable(model):
        raise AssertionError(f"A callable function is expected, but {type(model)} is provided.")
    if mode is not None and options is not None:
        raise RuntimeError(
            "Either mode or options can be specified, but both can't be specified at the same time."
        )
    if disable:
        return model
    import functools

    from ember._dynamo.eval_frame import CompiledFunction, OptimizedModule
    from ember.nn.modules.module import Module

    if isinstance(model, Module):
        cf = CompiledFunction(model.__call__, model, fullgraph, backend, options)
        cf.dynamic, cf.mode = dynamic, mode
        return OptimizedModule(model, cf)
    cf = CompiledFunction(model, None, fullgraph, backend, options)
    cf.dynamic, cf.mode = dynamic, mode

    @functools.wraps(model)
    def compiled(*args, **kwargs):
        return cf(*args, **kwargs)

    compiled._torchdynamo_orig_callable = model
    compiled._ember_compiled = cf
    return compiled


publish(None, compile, method=False)


def _compiled_forward(forward, module, fullgraph: bool, backend, options):
    # Module.compile's in-place compiled forward (the capture is imported on first use)
    from ember._dynamo.eval_frame import CompiledFunction

    return CompiledFunction(forward, module, fullgraph, backend, options)


_MODULE_ABOVE.compiled_forward = _compiled_forward  # (nn imports nothing above it)


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

"""``torch._dynamo``: capture a program with guards, compile it, cache the result.

ember captures through the op table (every op call is recorded while the program runs once,
eagerly) rather than by reading bytecode; see :mod:`ember._dynamo.capture` for what becomes a
guard and what a graph break, and :mod:`ember._inductor` for the code generator.
"""

from __future__ import annotations

import functools
import types

from ember._dynamo import exc

__all__ = [
    "OptimizedModule",
    "allow_in_graph",
    "assume_constant_result",
    "config",
    "disable",
    "exc",
    "explain",
    "is_compiling",
    "list_backends",
    "mark_dynamic",
    "mark_static",
    "maybe_mark_dynamic",
    "optimize",
    "reset",
]

# read by the compiler: cache_size_limit (entries per function before running eagerly)
config = types.SimpleNamespace(
    suppress_errors=False,
    cache_size_limit=8,
    recompile_limit=8,
    verbose=False,
    capture_scalar_outputs=False,
    optimize_ddp=True,
)

_BACKENDS = ["cudagraphs", "inductor", "onnxrt", "openxla", "tvm"]


def list_backends(exclude_tags=("debug", "experimental")) -> list:
    """Return the names of the registered compiler backends (torch's list)."""
    return list(_BACKENDS) if exclude_tags else sorted(_BACKENDS + ["aot_eager", "eager"])


def is_compiling() -> bool:
    """Return whether a program is being captured right now."""
    from ember._dynamo.eval_frame import COMPILING

    return COMPILING[0] > 0


def reset() -> None:
    """Clear every compiled function's cache: the next call captures again."""
    from ember._dynamo.eval_frame import reset_all

    reset_all()


def disable(fn=None, recursive: bool = True, *, reason: str | None = None):
    """Return ``fn`` as it is (a decorator too): it runs eagerly."""
    if fn is None:
        return lambda f: f
    return fn


def allow_in_graph(fn):
    """Return ``fn`` unchanged (every op call is captured anyway)."""
    return fn


def assume_constant_result(fn):
    """Return ``fn`` unchanged."""
    return fn


def mark_dynamic(t, index, **kwargs) -> None:
    """Mark dims of ``t`` as dynamic: a compiled program accepts any size >= 2 there."""
    dims = [index] if isinstance(index, int) else list(index)
    # (stored as given, as torch's; an out-of-range dim is never matched)
    t._dynamo_dynamic_indices = set(getattr(t, "_dynamo_dynamic_indices", ())) | set(dims)


def maybe_mark_dynamic(t, index) -> None:
    """Mark dims of ``t`` as possibly dynamic (as ``mark_dynamic``)."""
    mark_dynamic(t, index)


def mark_static(t, index=None) -> None:
    """Mark dims of ``t`` as static."""


def optimize(backend="inductor", *, nopython: bool = False, **kwargs):
    """Return a decorator compiling its function (``torch._dynamo.optimize``)."""
    from ember.compiler import compile

    return lambda fn: compile(fn, backend=backend, fullgraph=nopython)


class GraphCompileReason:
    """Why a graph ended: ``reason`` (text) and ``user_stack`` (where the program broke)."""

    def __init__(self, reason: str, where=None, graph_break: bool = True) -> None:
        import traceback

        self.reason = reason
        self.user_stack = [] if where is None else [traceback.FrameSummary(*where)]
        self.graph_break = graph_break

    def __repr__(self) -> str:
        return f"GraphCompileReason(reason={self.reason!r}, user_stack={self.user_stack!r})"


class ExplainOutput:
    """What ``explain`` found: graphs, breaks and their reasons."""

    def __init__(self, graphs, break_reasons, ops_per_graph, out_guards):
        self.graphs = graphs
        self.graph_count = len(graphs)
        # torch counts the splits between graphs (-1 when a frame ran eagerly whole)
        self.graph_break_count = len(graphs) - 1
        self.break_reasons = break_reasons
        self.op_count = sum(len(o) for o in ops_per_graph)
        self.ops_per_graph = ops_per_graph
        self.out_guards = out_guards
        self.compile_times = ""

    def __str__(self) -> str:
        s = f"Graph Count: {self.graph_count}\nGraph Break Count: {self.graph_break_count}\n"
        s += f"Op Count: {self.op_count}\n"
        s += "Break Reasons:\n"
        for i, r in enumerate(self.break_reasons):
            s += f"  Break Reason {i + 1}:\n    Reason: {r.reason}\n"
        s += "Ops per Graph:\n"
        for i, ops in enumerate(self.ops_per_graph):
            s += f"  Ops {i + 1}:\n" + "".join(f"    {o}\n" for o in ops)
        return s


def explain(f, *extra_args, **extra_kwargs):
    """Return ``fn(*args) -> ExplainOutput``: run ``f`` once, captured past each graph break,
    and report its graphs, the breaks and their reasons (``ember._dynamo.explain``)."""

    @functools.wraps(f)
    def inner(*args, **kwargs):
        from ember._dynamo import _explain as X
        from ember._dynamo import capture as C
        from ember._dynamo.eval_frame import COMPILING, _flatten
        from ember.nn.modules.module import Module

        fn = f.__call__ if isinstance(f, Module) else f
        tensors: list = []
        _flatten(args, tensors, [])
        if kwargs:
            _flatten(kwargs, tensors, [])
        COMPILING[0] += 1
        try:
            result, rec = C.capture(fn, args, kwargs, tensors, explaining=True)
        finally:
            COMPILING[0] -= 1
        graphs, reasons, ops = X.cut(f, rec, result)
        guards = X.guards(f if isinstance(f, Module) else None, rec, tensors)
        return ExplainOutput(graphs, reasons, ops, guards)

    if extra_args or extra_kwargs:
        return inner(*extra_args, **extra_kwargs)
    return inner


def __getattr__(name: str):
    # ``from torch._dynamo import OptimizedModule`` (Lightning): eval_frame imports nn, which
    # imports this package, so it is bound on first use
    if name == "OptimizedModule":
        from ember._dynamo.eval_frame import OptimizedModule

        return OptimizedModule
    raise AttributeError(f"module 'ember._dynamo' has no attribute '{name}'")

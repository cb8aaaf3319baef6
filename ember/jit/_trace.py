"""Tracing state shared by ``jit.trace`` and everything that traces through it (the ONNX
exporter, tensorboard's ``add_graph``): the stack of active tracers, ``is_tracing``,
``TracerWarning`` and the guards warning when a traced tensor becomes a Python value.

The tracer itself is ``_tracer.py`` (it records ``ember.jit.ir`` graphs).
"""

from __future__ import annotations

import contextlib
import warnings

from ember._core.tensor import Tensor

_TRACING: list = []  # the active tracers, innermost last


def is_tracing() -> bool:
    """Return True while a function is being traced (``jit.trace``, ``onnx.export``)."""
    return bool(_TRACING)


class TracerWarning(Warning):
    """Warns about a trace that may not generalise (as torch.jit.TracerWarning)."""


# Tensor -> Python value conversions the graph cannot follow, and how torch's tracer names them
_LEAKS = {
    "item": "a Python number",
    "__int__": "a Python integer",
    "__float__": "a Python float",
    "__index__": "a Python index",
    "__bool__": "a Python boolean",
    "tolist": "a Python list",
    "numpy": "a NumPy array",
}


def _leak_guard(name: str, original):
    what = _LEAKS[name]

    def guarded(self, *args, **kwargs):
        tracer = _TRACING[-1] if _TRACING else None
        if tracer is not None and tracer.is_traced(self):
            warnings.warn(
                f"Converting a tensor to {what} might cause the trace to be incorrect. We can't "
                "record the data flow of Python values, so this value will be treated as a "
                "constant in the future. This means that the trace might not generalize to "
                "other inputs!",
                TracerWarning,
                stacklevel=2,
            )
        return original(self, *args, **kwargs)

    guarded.__name__ = getattr(original, "__name__", name)
    guarded.__doc__ = original.__doc__
    return guarded


@contextlib.contextmanager
def _leak_guards():
    """Warn, while tracing, when a traced tensor becomes a Python value (as torch does)."""
    saved = {name: Tensor.__dict__.get(name) for name in _LEAKS}
    for name in _LEAKS:
        setattr(Tensor, name, _leak_guard(name, getattr(Tensor, name)))
    try:
        yield
    finally:
        for name, original in saved.items():
            if original is None:
                delattr(Tensor, name)
            else:
                setattr(Tensor, name, original)

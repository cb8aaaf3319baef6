"""The rest of torch.jit's surface, as it behaves outside TorchScript (where ember always is)."""

from __future__ import annotations

import builtins
import contextlib
import types
import typing
from typing import Any, NamedTuple

_FUSION = {"strategy": [("STATIC", 2), ("DYNAMIC", 10)], "onednn": False}


class Attribute(NamedTuple):
    """An attribute's value with its TorchScript type (a pass-through outside TorchScript)."""

    value: Any
    type: Any


class Error(Exception):
    """An exception raised inside TorchScript code (as ``torch.jit.Error``)."""


def script_if_tracing(fn):
    """Return ``fn``: compiled only under a trace in torch; ember runs it as Python."""
    return fn


@contextlib.contextmanager
def optimized_execution(should_optimize):
    """Context manager kept for torch compatibility (there is no graph executor to tune)."""
    yield


@contextlib.contextmanager
def fuser(name):
    """Context manager choosing torch's kernel fuser; ember has none, so it changes nothing."""
    if name not in ("fuser0", "fuser1", "fuser2", "fuser3", "none"):
        raise Exception(f"unrecognized fuser option (name: {name})")  # noqa: TRY002 (as torch)
    yield


def set_fusion_strategy(strategy: list[tuple[str, int]]):
    """Record the fusion strategy; return the previous one (nothing is fused in ember)."""
    old = _FUSION["strategy"]
    _FUSION["strategy"] = list(strategy)
    return old


def enable_onednn_fusion(enabled: bool) -> None:
    """Record the oneDNN fusion switch (ember never fuses)."""
    _FUSION["onednn"] = bool(enabled)


def onednn_fusion_enabled():
    """Return the recorded oneDNN fusion switch."""
    return _FUSION["onednn"]


class strict_fusion:
    """Context manager asserting fusion in TorchScript; a no-op outside it."""

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        return None


def interface(obj):
    """Return ``obj`` (declares a TorchScript interface)."""
    return obj


def script_method(fn):
    """Return ``fn`` (the legacy ``ScriptModule`` method decorator)."""
    from ember.jit._script import deprecated

    deprecated("script_method", "both")
    return fn


def export_opnames(m):
    """Return the operator names a scripted module needs: none, ember compiles nothing."""
    return []


def set_module(obj, mod):
    """Set ``obj.__module__`` to ``mod``."""
    if not builtins.isinstance(mod, str):
        raise TypeError("The mod argument should be a string")
    obj.__module__ = mod


def isinstance(obj, target_type) -> bool:
    """Return whether ``obj`` is of ``target_type``, which may be a container type such as
    ``List[int]`` or ``Dict[str, Tensor]`` (checked element by element)."""
    origin = typing.get_origin(target_type)
    args = typing.get_args(target_type)
    if origin is None:
        if target_type is None or target_type is type(None):
            return obj is None
        return builtins.isinstance(obj, target_type)
    if origin is typing.Union or origin is types.UnionType:
        return any(isinstance(obj, a) for a in args)
    if origin is list:
        return builtins.isinstance(obj, list) and all(isinstance(e, args[0]) for e in obj)
    if origin is dict:
        return builtins.isinstance(obj, dict) and all(
            isinstance(k, args[0]) and isinstance(v, args[1]) for k, v in obj.items()
        )
    if origin is tuple:
        return (
            builtins.isinstance(obj, tuple)
            and len(obj) == len(args)
            and all(isinstance(e, a) for e, a in zip(obj, args))
        )
    return builtins.isinstance(obj, origin)

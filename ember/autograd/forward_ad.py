"""``ember.autograd.forward_ad``: forward-mode AD's API (dual tensors), on the reverse-mode engine.

``make_dual(primal, tangent)`` returns a tensor that records the graph from ``primal`` (it
requires grad, unlike torch's dual tensor) and remembers ``tangent``. ``unpack_dual(out)`` gives
``out``'s tangent as the Jacobian-vector product ``J t`` of every dual of the level ``out``
depends on, by the double-backward trick: ``u -> J^T u`` is linear in ``u``, and the gradient of
``<J^T u, t>`` with respect to ``u`` is ``J t``. Leaving the level forgets the tangents.
"""

from __future__ import annotations

import weakref
from typing import Any, NamedTuple

from ember._core.grad_mode import enable_grad, is_grad_enabled, set_grad_enabled
from ember._core.tensor import Tensor
from ember._ops.registry import API

__all__ = ["UnpackedDualTensor", "dual_level", "enter_dual_level", "exit_dual_level"]
__all__ += ["make_dual", "unpack_dual"]

_current_level = -1
# id(dual) -> (weakref to the dual, its tangent, level, whether its primal required grad)
_duals: dict[int, tuple[Any, Tensor, int, bool]] = {}


class UnpackedDualTensor(NamedTuple):
    """The primal and the tangent (None if it has none) of a dual tensor."""

    primal: Tensor
    tangent: Tensor | None


def enter_dual_level() -> int:
    """Enter a new forward grad level (only one at a time); return its index."""
    global _current_level
    if _current_level >= 0:
        raise RuntimeError("Nested forward mode AD is not supported at the moment")
    _current_level = 0
    return _current_level


def exit_dual_level(*, level: int | None = None) -> None:
    """Exit the forward grad level: every dual tensor of it loses its tangent."""
    global _current_level
    level = _current_level if level is None else level
    if level != _current_level:
        raise RuntimeError(
            "Trying to exit a forward AD level that was not the last one that was created. "
            "This is not supported."
        )
    for key in [k for k, (_, _, lv, _) in _duals.items() if lv == level]:
        del _duals[key]
    _current_level = -1


class dual_level:
    """Context manager for a forward AD level: dual tensors made inside it carry tangents."""

    def __enter__(self) -> int:
        return enter_dual_level()

    def __exit__(self, exc_type, exc_value, traceback) -> None:
        exit_dual_level()


def _forget(key: int):
    def drop(_ref) -> None:
        entry = _duals.get(key)
        if entry is not None and entry[0] is _ref:
            del _duals[key]

    return drop


def make_dual(tensor: Tensor, tangent: Tensor, *, level: int | None = None) -> Tensor:
    """Return a dual tensor: the values of ``tensor`` with forward gradient ``tangent``."""
    level = _current_level if level is None else level
    if level < 0:
        raise RuntimeError(
            "Trying to create a dual Tensor for forward AD but no level exists, make sure to "
            "enter_dual_level() first."
        )
    if tuple(tangent.shape) != tuple(tensor.shape):
        raise RuntimeError(
            "Trying to set a forward gradient that has a different size than that of the "
            f"original Tensor, this is not supported. Tensor is of size {list(tensor.shape)} "
            f"while the given forward gradient is of size {list(tangent.shape)}."
        )
    if not (tensor.dtype.is_floating_point or tensor.dtype.is_complex):
        raise ValueError(
            f"Expected primal to be floating point or complex, but got: {tensor.dtype}"
        )
    if tangent.stride() != tensor.stride() and tensor.numel() > 1:
        # torch keeps the tangent only when its layout is the primal's; else a copy
        tangent = tensor.detach().clone().copy_(tangent)
    with enable_grad():
        dual = tensor.view_as(tensor) if tensor.requires_grad else tensor.detach()
        if not dual.requires_grad:
            dual.requires_grad_(True)
    key = id(dual)
    _duals[key] = (weakref.ref(dual, _forget(key)), tangent, level, tensor.requires_grad)
    return dual


def unpack_dual(tensor: Tensor, *, level: int | None = None) -> UnpackedDualTensor:
    """Return ``(primal, tangent)`` of ``tensor`` at the level (tangent None if it has none)."""
    level = _current_level if level is None else level
    primal = tensor.detach()
    if level < 0 or not isinstance(tensor, Tensor):
        return UnpackedDualTensor(tensor, None)
    entry = _duals.get(id(tensor))
    if entry is not None and entry[0]() is tensor and entry[2] == level:
        return UnpackedDualTensor(primal, entry[1])
    live = [
        (ref(), t, rg) for ref, t, lv, rg in _duals.values() if lv == level and ref() is not None
    ]
    if not live or not tensor.requires_grad:
        return UnpackedDualTensor(primal, None)
    from ember.autograd.engine import grad

    with enable_grad():
        u = API["zeros_like"](tensor).requires_grad_(True)
        gs = grad(
            tensor, [d for d, _, _ in live], u, create_graph=True, allow_unused=True,
            retain_graph=True,
        )  # fmt: skip
        terms = [(g * t).sum() for g, (_, t, _) in zip(gs, live) if g is not None]
        if not terms:
            return UnpackedDualTensor(primal, None)
        total = terms[0]
        for term in terms[1:]:
            total = total + term
        if not total.requires_grad:
            return UnpackedDualTensor(primal, API["zeros_like"](primal))
        # as torch's, the tangent stays differentiable when a primal (a Parameter) requires grad
        keep = is_grad_enabled() and any(rg for _, _, rg in live)
        (jvp,) = grad(total, [u], allow_unused=True, retain_graph=True, create_graph=keep)
    if jvp is None:
        tangent = API["zeros_like"](primal)
    else:
        tangent = jvp if keep else jvp.detach()
    return UnpackedDualTensor(primal, tangent)


def _custom_function_jvp(fn_cls, ctx, args: tuple, result):
    """Give the outputs of a custom Function that defines only ``jvp`` their tangents:
    ``jvp(ctx, *input_tangents)`` (zeros for inputs without one). Each output becomes a dual
    cut from the Function's graph, so tangents further on flow from it alone."""
    tangents = [unpack_dual(a).tangent if isinstance(a, Tensor) else None for a in args]
    if all(t is None for t in tangents):
        return result

    # the tangents are differentiable (as torch's) only when a primal requires grad: ember's
    # duals require grad themselves, so ask what the primal behind each dual did
    def primal_requires_grad(a) -> bool:
        entry = _duals.get(id(a))
        if entry is not None and entry[0]() is a:
            return entry[3]
        return a.requires_grad

    keep = is_grad_enabled() and any(primal_requires_grad(a) for a in args if isinstance(a, Tensor))

    tangents = [
        API["zeros_like"](a) if isinstance(a, Tensor) and t is None else t
        for a, t in zip(args, tangents)
    ]
    # in jvp, ctx.saved_tensors gives what forward saved with save_for_forward
    forward_saved = ctx.__dict__.get("saved_for_forward")
    kept = (ctx._saved, ctx._had_saved)
    if forward_saved is not None:
        from ember._core.node import SavedTensor

        ctx._saved = tuple(None if t is None else SavedTensor(t) for t in forward_saved)
        ctx._had_saved = True
    try:
        with set_grad_enabled(keep):
            out_tangents = fn_cls.jvp(ctx, *tangents)
    finally:
        ctx._saved, ctx._had_saved = kept
    outs = result if isinstance(result, tuple) else (result,)
    out_tangents = out_tangents if isinstance(out_tangents, tuple) else (out_tangents,)
    new = []
    for out, tangent in zip(outs, out_tangents):
        if not isinstance(out, Tensor) or tangent is None:
            new.append(out)
            continue
        dual = out.detach().requires_grad_(True)
        key = id(dual)
        _duals[key] = (weakref.ref(dual, _forget(key)), tangent, _current_level, keep)
        new.append(dual)
    new += list(outs[len(new) :])
    return tuple(new) if isinstance(result, tuple) else new[0]

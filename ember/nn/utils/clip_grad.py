"""Gradient clipping: ``clip_grad_norm_``, ``clip_grad_value_``, ``get_total_norm``,
``clip_grads_with_norm_``, as torch's (the norm of the per-tensor norms)."""

from __future__ import annotations

import functools
import types
import warnings
from collections.abc import Iterable

import ember
import ember.linalg
from ember._core.tensor import Tensor

__all__ = [
    "clip_grad_norm_",
    "clip_grad_norm",
    "clip_grad_value_",
    "get_total_norm",
    "clip_grads_with_norm_",
]


def _no_grad(func):
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        with ember.no_grad():
            return func(*args, **kwargs)

    return wrapper


def _no_sparse(tensors: list, op: str) -> None:
    # torch has no sparse kernel for the norm or the clamp: the dispatcher's error
    if any(t.is_sparse for t in tensors):
        raise NotImplementedError(
            f"Could not run 'aten::{op}' with arguments from the 'SparseCPU' backend. This "
            "could be because the operator doesn't exist for this backend, or was omitted "
            "during the selective/custom build process (if using custom build)."
        )


@_no_grad
def get_total_norm(
    tensors: Tensor | Iterable[Tensor],
    norm_type: float = 2.0,
    error_if_nonfinite: bool = False,
    foreach: bool | None = None,
) -> Tensor:
    """Return the ``norm_type`` norm of all ``tensors`` taken together (the norm of their
    norms)."""
    tensors = [tensors] if isinstance(tensors, Tensor) else list(tensors)
    norm_type = float(norm_type)
    if not tensors:
        return ember.tensor(0.0)
    _no_sparse(tensors, "linalg_vector_norm")
    norms = [ember.linalg.vector_norm(t, norm_type) for t in tensors]
    total_norm = ember.linalg.vector_norm(ember.stack(norms), norm_type)
    if error_if_nonfinite and bool(ember.logical_or(total_norm.isnan(), total_norm.isinf())):
        raise RuntimeError(
            f"The total norm of order {norm_type} for gradients from "
            "`parameters` is non-finite, so it cannot be clipped. To disable "
            "this error and scale the gradients by the non-finite norm anyway, "
            "set `error_if_nonfinite=False`"
        )
    return total_norm


def _existing_grads(parameters) -> list:
    # parameters without a gradient are skipped by every clipping function
    return [g for g in (p.grad for p in parameters) if g is not None]


@_no_grad
def clip_grads_with_norm_(
    parameters: Tensor | Iterable[Tensor],
    max_norm: float,
    total_norm: Tensor,
    foreach: bool | None = None,
) -> None:
    """Scale the gradients of ``parameters`` by ``min(1, max_norm / (total_norm + 1e-6))``."""
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    grads = _existing_grads(parameters)
    max_norm = float(max_norm)
    if not grads:
        return
    # scale down only (never up); the 1e-6 keeps a zero norm finite
    scale = ember.clamp(max_norm / (total_norm + 1e-6), max=1.0)
    for g in grads:
        g.mul_(scale)


@_no_grad
def clip_grad_norm_(
    parameters: Tensor | Iterable[Tensor],
    max_norm: float,
    norm_type: float = 2.0,
    error_if_nonfinite: bool = False,
    foreach: bool | None = None,
) -> Tensor:
    """Clip the gradients of ``parameters`` in place to a total norm of at most ``max_norm``;
    return the total norm before clipping."""
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    else:
        is_generator = isinstance(parameters, types.GeneratorType)
        parameters = list(parameters)
        if is_generator and len(parameters) == 0:
            warnings.warn(
                "`parameters` is an empty generator, no gradient clipping will occur.",
                stacklevel=3,
            )
    grads = _existing_grads(parameters)
    total_norm = get_total_norm(grads, norm_type, error_if_nonfinite, foreach)
    clip_grads_with_norm_(parameters, max_norm, total_norm, foreach)
    return total_norm


def clip_grad_norm(
    parameters: Tensor | Iterable[Tensor],
    max_norm: float,
    norm_type: float = 2.0,
    error_if_nonfinite: bool = False,
    foreach: bool | None = None,
) -> Tensor:
    """Deprecated alias of :func:`clip_grad_norm_` (with torch's FutureWarning)."""
    warnings.warn(
        "`torch.nn.utils.clip_grad_norm` is now deprecated "
        "in favor of `torch.nn.utils.clip_grad_norm_`.",
        FutureWarning,
        stacklevel=2,
    )
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


@_no_grad
def clip_grad_value_(
    parameters: Tensor | Iterable[Tensor], clip_value: float, foreach: bool | None = None
) -> None:
    """Clamp the gradients of ``parameters`` in place to [-clip_value, clip_value]."""
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    clip_value = float(clip_value)
    grads = _existing_grads(parameters)
    _no_sparse(grads, "clamp_" if foreach is False else "clamp_min_")
    for g in grads:
        g.clamp_(min=-clip_value, max=clip_value)

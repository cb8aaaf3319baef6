"""Integration of sampled functions: ``trapezoid`` (``trapz``) and ``cumulative_trapezoid``,
along a dimension with a spacing ``dx`` or sample points ``x``; ATen's scalar ``mul``/``div``
(``MulBackward1``/``DivBackward1``) keep torch's graph."""

from __future__ import annotations

import numpy as np

from ember._core import dtype as D
from ember._core.tensor import Tensor
from ember._ops.registry import API, dispatch, op, publish


def _float_like(x):
    return x.astype(D.get_default_dtype().np) if x.dtype.kind in "biu" else x


@op("mul", grad_fn="MulBackward1")
def _mul_scalar(x, other):
    x = _float_like(x) if isinstance(other, float) else x
    return x * np.asarray(other, x.dtype)


_mul_scalar.backward(lambda ctx, g, other: g * other)


@op("div", grad_fn="DivBackward1")
def _div_scalar(x, other):
    x = _float_like(x)
    return x / np.asarray(other, x.dtype)


_div_scalar.backward(lambda ctx, g, other: g / other)


def _mul(t: Tensor, number: float) -> Tensor:
    # ATen's ``mul.Scalar`` (MulBackward1), as C++ code multiplying by a double records
    return dispatch(_mul_scalar, (t,), {"other": number})


def _div(t: Tensor, number: float) -> Tensor:
    return dispatch(_div_scalar, (t,), {"other": number})


def _zeros_except(y: Tensor, dim: int) -> Tensor:
    sizes = list(y.shape)
    del sizes[dim]
    return API["zeros"](sizes, dtype=y.dtype)


def _sample_dx(y: Tensor, x: Tensor, dim: int, fname: str) -> Tensor:
    # ATen: a 1-d ``x`` lies along ``dim``; a lower-rank one is padded with leading 1s
    if x.dim() == 1:
        if x.shape[0] != y.shape[dim]:
            raise RuntimeError(f"{fname}: There must be one `x` value for each sample point")
        sizes = [1] * y.dim()
        sizes[dim] = x.shape[0]
        x = x.view(sizes)
    elif x.dim() < y.dim():
        x = x.view([1] * (y.dim() - x.dim()) + list(x.shape))
    return _slice(x, dim, 1, None) - _slice(x, dim, 0, -1)


def _check_dx(dx, fname: str) -> float:
    if isinstance(dx, (bool, complex)):
        raise RuntimeError(f"{fname}: Currently, we only support dx as a real number.")
    return float(dx)


def _slice(t: Tensor, dim: int, start, stop) -> Tensor:
    return t[(slice(None),) * dim + (slice(start, stop),)]


def _pair_sums(y: Tensor, dim: int) -> Tensor:
    return _slice(y, dim, 1, None) + _slice(y, dim, 0, -1)


def trapezoid(y: Tensor, x: Tensor | None = None, *, dx=None, dim: int = -1) -> Tensor:
    """Return the trapezoidal-rule integral of ``y`` along ``dim`` (spacing ``x`` or ``dx``)."""
    from ember._core.tensor import wrap_dim

    dim = wrap_dim(dim, y.dim())
    if y.shape[dim] == 0:
        return _zeros_except(y, dim)
    if y.dtype is D.bool:
        raise RuntimeError("trapezoid: received a bool input for `y`, but bool is not supported")
    if x is not None:
        if x.dtype is D.bool:
            raise RuntimeError(
                "trapezoid: received a bool input for `x`, but bool is not supported"
            )
        d = _sample_dx(y, x, dim, "trapezoid")
        return _div((d * _pair_sums(y, dim)).sum(dim), 2.0)
    dx = _check_dx(1 if dx is None else dx, "trapezoid")
    return _mul(y.sum(dim) - _mul(y.select(dim, 0) + y.select(dim, -1), 0.5), dx)


def trapz(y: Tensor, x: Tensor | None = None, *, dx=None, dim: int = -1) -> Tensor:
    """Alias of :func:`trapezoid`."""
    return trapezoid(y, x, dx=dx, dim=dim)


def cumulative_trapezoid(y: Tensor, x: Tensor | None = None, *, dx=None, dim: int = -1) -> Tensor:
    """Return the cumulative trapezoidal-rule integral of ``y`` along ``dim``."""
    from ember._core.tensor import wrap_dim

    dim = wrap_dim(dim, y.dim())
    if x is not None:
        d = _sample_dx(y, x, dim, "cumulative_trapezoid")
        return _div((d * _pair_sums(y, dim)).cumsum(dim), 2.0)
    dx = _check_dx(1 if dx is None else dx, "cumulative_trapezoid")
    return _mul(_pair_sums(y, dim), dx / 2.0).cumsum(dim)


for _fn in (trapezoid, trapz, cumulative_trapezoid):
    publish(None, _fn, method=False)

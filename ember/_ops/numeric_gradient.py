"""``torch.gradient``: finite-difference derivatives of sampled values, composed of ember ops
(slices, products, ``cat``), so they are differentiable; uniform spacing or coordinates.
``cat`` is taken from the op table's namespace (``registry.API``), not from ``ember``."""

from __future__ import annotations

import numbers

from ember._core.tensor import Tensor
from ember._ops.registry import API, publish


def _edge_check(input: Tensor, dims, edge_order: int) -> None:
    if edge_order not in (1, 2):
        raise RuntimeError("torch.gradient only supports edge_order=1 and edge_order=2.")
    if any(input.shape[d] < edge_order + 1 for d in dims):
        raise RuntimeError(
            "torch.gradient expected each dimension size to be at least edge_order+1"
        )


def _along(x: Tensor, d: int, start: int, stop: int | None) -> Tensor:
    n = x.shape[d]
    stop = n if stop is None else (stop if stop >= 0 else n + stop)
    start = start if start >= 0 else n + start
    return x.narrow(d, start, stop - start)


def _uniform(f: Tensor, d: int, h: float, edge_order: int) -> Tensor:
    interior = (_along(f, d, 2, None) - _along(f, d, 0, -2)) / (2 * h)
    f0, f1, f2 = (_along(f, d, i, i + 1) for i in range(3)) if f.shape[d] > 2 else (None,) * 3
    if edge_order == 1:
        first = (_along(f, d, 1, 2) - _along(f, d, 0, 1)) / h
        last = (_along(f, d, -1, None) - _along(f, d, -2, -1)) / h
    else:
        first = (-1.5 * f0 + 2 * f1 - 0.5 * f2) / h
        last = (
            0.5 * _along(f, d, -3, -2) - 2 * _along(f, d, -2, -1) + 1.5 * _along(f, d, -1, None)
        ) / h
    return API["cat"]([first, interior, last], dim=d)


def _coordinates(f: Tensor, d: int, x: Tensor, edge_order: int) -> Tensor:
    # the coefficients come from the coordinates alone (in their dtype), as torch computes them
    shape = [1] * f.dim()
    shape[d] = -1
    dx = x[1:] - x[:-1]
    dx1, dx2 = dx[:-1], dx[1:]
    a = (-dx2 / (dx1 * (dx1 + dx2))).reshape(shape)
    b = ((dx2 - dx1) / (dx1 * dx2)).reshape(shape)
    c = (dx1 / (dx2 * (dx1 + dx2))).reshape(shape)
    center = a * _along(f, d, 0, -2) + b * _along(f, d, 1, -1) + c * _along(f, d, 2, None)
    fs = [_along(f, d, i, i + 1 if i != -1 else None) for i in (0, 1, 2, -3, -2, -1)]
    if edge_order == 1:
        first = (fs[1] - fs[0]) / dx[0]
        last = (fs[5] - fs[4]) / dx[-1]
    else:
        d0, d1 = dx[0], dx[1]
        first = (
            (-(2.0 * d0 + d1) / (d0 * (d0 + d1))) * fs[0]
            + ((d0 + d1) / (d0 * d1)) * fs[1]
            + ((-d0) / (d1 * (d0 + d1))) * fs[2]
        )
        dl, dm = dx[-1], dx[-2]
        last = (
            (dl / (dm * (dl + dm))) * fs[3]
            + (-(dl + dm) / (dl * dm)) * fs[4]
            + ((2 * dl + dm) / (dl * (dl + dm))) * fs[5]
        )
    return API["cat"]([first, center, last], dim=d)


def gradient(input: Tensor, *, spacing=1, dim=None, edge_order: int = 1) -> tuple:
    """Return the derivative of ``input`` along each dimension in ``dim`` (all by default),
    estimated by central differences inside and one-sided differences of order ``edge_order``
    at the ends; ``spacing`` is a step (per dimension) or the coordinates of the samples."""
    if dim is None:
        dims = list(range(input.dim()))
    elif isinstance(dim, numbers.Integral):
        dims = [int(dim)]
    else:
        dims = [int(d) for d in dim]
    dims = [d % input.dim() for d in dims]
    _edge_check(input, dims, edge_order)
    if not isinstance(spacing, (list, tuple)):
        spacing = [spacing] * len(dims)
    elif len(spacing) == 1 and len(dims) > 1 and not isinstance(spacing[0], Tensor):
        spacing = list(spacing) * len(dims)
    if len(spacing) != len(dims):
        raise RuntimeError(
            "torch.gradient expected spacing to be unspecified, a scalar or it's spacing and dim "
            f"arguments to have the same length, but got a spacing argument of length "
            f"{len(spacing)} and a dim argument of length {len(dims)}."
        )
    f = input if input.dtype.is_floating_point or input.dtype.is_complex else input.float()
    out = []
    for d, h in zip(dims, spacing):
        if isinstance(h, Tensor):
            out.append(_coordinates(f, d, h, edge_order))
        else:
            out.append(_uniform(f, d, float(h), edge_order))
    return tuple(out)


publish(None, gradient, method=False)

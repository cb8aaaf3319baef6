"""torch.histogramdd: the multi-dimensional histogram of points (the last dim of ``input``)."""

from __future__ import annotations

import math

import numpy as np

from ember._core import dtype as D
from ember._core.tensor import Tensor
from ember._ops.registry import dispatch, op, publish


@op("histogramdd", grad_fn="NotImplemented")
def _histogramdd(x, *rest, ndim=1, density=False):
    edges = rest[:ndim]
    weight = rest[ndim] if len(rest) > ndim else None
    pts = x.reshape(-1, ndim)
    nbins = tuple(max(e.shape[0] - 1, 0) for e in edges)
    keep = np.ones(pts.shape[0], bool)
    idx = []
    for d, e in enumerate(edges):
        col = pts[:, d]
        if e.shape[0]:
            keep &= (col >= e[0]) & (col <= e[-1])
        else:
            keep &= False
    for d, e in enumerate(edges):
        col = pts[keep, d]
        # the bin whose left edge is the last <= x; the last bin includes its right edge
        idx.append(np.minimum(np.searchsorted(e, col, side="right") - 1, nbins[d] - 1))
    w = None if weight is None else weight.reshape(-1)[keep]
    size = math.prod(nbins)
    if size and idx and idx[0].size:
        flat = np.ravel_multi_index(tuple(idx), nbins)
        hist = np.bincount(flat, weights=w, minlength=size).astype(x.dtype)
    else:
        hist = np.zeros(size, x.dtype)
    hist = hist.reshape(nbins)
    if density:
        hist = hist / hist.sum()
        for d, e in enumerate(edges):
            shape = [1] * ndim
            shape[d] = -1
            hist = hist / np.diff(e).reshape(shape)
        hist = hist.astype(x.dtype, copy=False)
    return (hist,) + tuple(np.array(e) for e in edges)


@_histogramdd.backward
def _(ctx, *grads, **params):
    raise RuntimeError("derivative for aten::_histogramdd_from_bin_cts is not implemented")


def _outer_edges(x: np.ndarray, ndim: int, lims) -> list:
    fn = "torch.histogramdd"
    if lims is not None:
        lims = [float(r) for r in lims]
        if len(lims) != 2 * ndim:
            raise RuntimeError(
                f"{fn}: for a {ndim}-dimensional histogram range should have {2 * ndim} "
                f"elements, but got {len(lims)}"
            )
    out = []
    pts = x.reshape(-1, ndim)
    for d in range(ndim):
        if lims is not None:
            lo, hi = lims[2 * d], lims[2 * d + 1]
        elif pts.shape[0]:
            lo, hi = float(pts[:, d].min()), float(pts[:, d].max())
        else:
            lo, hi = 0.0, 1.0
        if not (math.isfinite(lo) and math.isfinite(hi)):
            raise RuntimeError(f"{fn}: dimension {d}'s range [{lo:g}, {hi:g}] is not finite")
        if lo > hi:
            raise RuntimeError(
                f"{fn}: min should not exceed max, but got min {lo:g} max {hi:g} for dimension {d}"
            )
        if lo == hi:
            lo, hi = lo - 0.5, hi + 0.5
        out.append((lo, hi))
    return out


def histogramdd(
    input: Tensor,
    bins,
    *,
    range=None,
    weight: Tensor | None = None,
    density: bool = False,
    out=None,
):
    """Return ``(hist, bin_edges)``: the histogram of the points ``input[..., :]`` (one
    coordinate per entry of the last dim) over ``bins`` per dimension (a count for all, a count
    per dimension, or a sequence of 1-d edge tensors)."""
    from ember import return_types
    from ember._ops.ranges import linspace

    fn = "torch.histogramdd"
    dt = input.dtype
    if input._data.ndim < 2:
        raise RuntimeError(f"{fn}: input tensor should have at least 2 dimensions")
    if not dt.is_floating_point or dt in (D.float16, D.bfloat16):
        raise NotImplementedError(f"\"histogramdd\" not implemented for '{D.scalar_type_name(dt)}'")
    ndim = input._data.shape[-1]
    if weight is not None:
        if tuple(weight.shape) != tuple(input.shape[:-1]):
            raise RuntimeError(
                f"{fn}: if weight tensor is provided it should have the same shape as the input "
                "tensor excluding its innermost dimension, but got input with shape "
                f"{list(input.shape)} and weight with shape {list(weight.shape)}"
            )
        if weight.dtype is not dt:
            raise RuntimeError(
                f"{fn}: if weight tensor is provided, input tensor and weight tensor should have "
                f"the same dtype, but got input({D.cpp_type_name(dt)}), and "
                f"weight({D.cpp_type_name(weight.dtype)})"
            )
    if isinstance(bins, int):
        bins = [bins] * ndim
    bins = list(bins)
    if len(bins) != ndim:
        raise RuntimeError(
            "histogramdd: The size of bins must be equal to the innermost dimension of the input."
        )
    if bins and isinstance(bins[0], Tensor):
        edges = [b.to(dt) for b in bins]
    else:
        for d, b in enumerate(bins):
            if b <= 0:
                raise RuntimeError(
                    f"torch.histogram(): bins must be > 0, but got {b} for dimension {d}"
                )
        lims = _outer_edges(input._data, ndim, range)
        edges = [linspace(lo, hi, int(b) + 1, dtype=dt) for (lo, hi), b in zip(lims, bins)]
    inputs = (input, *edges) + (() if weight is None else (weight,))
    res = dispatch(_histogramdd, inputs, {"ndim": ndim, "density": bool(density)})
    result = return_types.histogramdd((res[0], tuple(res[1:])))
    if out is not None:
        hist_out, edges_out = out
        hist_out.resize_(result[0].shape).copy_(result[0])
        for o, r in zip(edges_out, result[1]):
            o.resize_(r.shape).copy_(r)
        return return_types.histogramdd((hist_out, tuple(edges_out)))
    return result


publish(None, histogramdd, method=False)

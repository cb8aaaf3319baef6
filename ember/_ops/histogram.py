"""``torch.histogram``: counts (or densities) of a tensor's values in bins given by a count and
a range or by their edges, with optional weights (``histogramdd`` is ``histogram_dd.py``'s)."""

from __future__ import annotations

import numpy as np

from ember._core import dtype as D
from ember._core.tensor import Tensor
from ember._ops.registry import API, dispatch, op, publish


@op("histogram", grad_fn="NotImplemented")
def _histogram(x, edges, weight=None, density=False):
    x, n = x.reshape(-1), edges.shape[0] - 1
    hist = np.zeros(max(n, 0), dtype=x.dtype)
    if n > 0 and x.size:
        keep = (x >= edges[0]) & (x <= edges[-1])
        pos = np.minimum(np.searchsorted(edges, x[keep], side="right") - 1, n - 1)
        w = None if weight is None else weight.reshape(-1)[keep]
        hist = np.bincount(pos, weights=w, minlength=n).astype(x.dtype)
    if density:
        hist = (hist / (hist.sum() * np.diff(edges))).astype(x.dtype)
    return hist, np.array(edges)


@_histogram.backward
def _(ctx, *grads, **params):
    raise RuntimeError("derivative for aten::histogram is not implemented")


def histogram(input: Tensor, bins=100, *, range=None, weight: Tensor | None = None,
              density: bool = False, out=None):  # fmt: skip
    """Return ``(hist, bin_edges)``: counts (or summed ``weight``) of ``input`` in ``bins``.

    ``bins`` is a count of equal bins over ``range`` (default: the data's min and max) or a
    1-d tensor of edges. Each bin is half open but the last, which includes its right edge;
    values outside the edges are not counted. ``density`` normalises to a density.
    """
    from ember import return_types

    dt = input.dtype
    if not dt.is_floating_point:
        raise NotImplementedError(
            f"\"histogramdd\" not implemented for '{D.scalar_type_name(dt)}'"
        )  # fmt: skip
    if weight is not None and weight.dtype is not dt:
        raise RuntimeError(
            "torch.histogramdd: if weight tensor is provided, input tensor and weight tensor "
            f"should have the same dtype, but got input({D.cpp_type_name(dt)}), and "
            f"weight({D.cpp_type_name(weight.dtype)})"
        )
    x = input._data.reshape(-1)
    if isinstance(bins, Tensor):
        edges_t = bins.to(dt)
    else:
        if bins <= 0:
            raise RuntimeError(
                f"torch.histogram(): bins must be > 0, but got {bins} for dimension 0"
            )  # fmt: skip
        if range is not None:
            lo, hi = float(range[0]), float(range[1])
        elif x.size:
            lo, hi = float(x.min()), float(x.max())
        else:
            lo, hi = 0.0, 1.0
        if lo > hi:
            raise RuntimeError(
                "torch.histogramdd: min should not exceed max, but got min "
                f"{lo:g} max {hi:g} for dimension 0"
            )
        if not (np.isfinite(lo) and np.isfinite(hi)):
            raise RuntimeError(
                f"torch.histogramdd: dimension 0's range [{lo:g}, {hi:g}] is not finite"
            )  # fmt: skip
        if lo == hi:
            lo, hi = lo - 0.5, hi + 0.5
        edges_t = API["linspace"](lo, hi, bins + 1, dtype=dt)
    inputs = (input, edges_t) if weight is None else (input, edges_t, weight)
    hist, edges_t = dispatch(_histogram, inputs, {"density": density})
    result = return_types.histogram((hist, edges_t))
    if out is not None:
        for o, r in zip(out, result):
            o.resize_(r.shape).copy_(r)
        return return_types.histogram(tuple(out))
    return result


publish(None, histogram)

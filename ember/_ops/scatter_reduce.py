"""scatter_reduce (sum, prod, mean, amax, amin; ``include_self``) and its in-place form.

The forward accumulates with ``np.add.at`` / ``np.multiply.at`` / ``np.maximum.at``; the
backward is torch's formula written with gather/scatter ops, so double backward works.
"""

from __future__ import annotations

import numpy as np

from ember._core.tensor import Tensor, _wrap
from ember._ops.gather_scatter import (
    _1d,
    _check_along,
    _gather,
    _grid,
    _head,
    _masked_fill,
    _same_dtype,
    _scatter_add,
    _scatter_into,
    _scatter_value,
    _zeros,
)
from ember._ops.registry import dispatch, dispatch_inplace, op, publish

_REDUCES = ("sum", "prod", "mean", "amax", "amin")


def _identity(reduce: str, dt: np.dtype):
    if reduce in ("sum", "mean"):
        return 0
    if reduce == "prod":
        return 1
    big = np.inf if dt.kind in "fc" else (True if dt.kind == "b" else np.iinfo(dt).max)
    small = -np.inf if dt.kind in "fc" else (False if dt.kind == "b" else np.iinfo(dt).min)
    return small if reduce == "amax" else big


_REDUCE_UFUNC = {"sum": np.add, "mean": np.add, "prod": np.multiply}


@op(
    "scatter_reduce",
    grad_fn="ScatterReduceBackward0",
    args=("self", "index", "src"),
    save=("self", "index", "src", "result"),
)
def _scatter_reduce(x, idx, src, dim, reduce, include_self):
    out = x.copy()
    if idx.size == 0:
        return out
    o1, i1 = _1d(out), _1d(idx)
    s = _head(_1d(src), i1.shape)
    ix = _grid(i1, dim)
    if not include_self:
        o1[ix] = _identity(reduce, x.dtype)
    if reduce in _REDUCE_UFUNC:
        _REDUCE_UFUNC[reduce].at(o1, ix, s)
    else:
        # NaN propagates as in torch (np.maximum.at keeps NaN; np.fmax would drop it)
        (np.maximum if reduce == "amax" else np.minimum).at(o1, ix, s)
    if reduce == "mean":
        count = np.ones(o1.shape, np.int64)
        if not include_self:
            count[ix] = 0
        np.add.at(count, ix, 1)
        count = np.maximum(count, 1)
        if out.dtype.kind in "fc":
            o1 /= count
        else:
            np.floor_divide(o1, count, out=o1, casting="unsafe")
    return out


@_scatter_reduce.backward
def _(ctx, g, dim, reduce, include_self):
    x, idx, src, result = ctx.saved_tensors
    need = ctx.needs_input_grad
    p = {"dim": dim}
    gather_ = lambda t: dispatch(_gather, (t, idx), p)  # noqa: E731
    dt = g.dtype.np
    if reduce == "sum":
        gx, gs = g, gather_(g) if need[2] else None
    elif reduce == "mean":
        n = np.ones(x.shape, dt) if include_self else np.zeros(x.shape, dt)
        n = _scatter_into(n, idx._data, np.ones(idx.shape, dt), dim, np.add)
        gn = g / _wrap(np.where(n == 0, 1, n).astype(dt))
        gx, gs = gn, gather_(gn) if need[2] else None
    elif reduce == "prod":
        gx, gs = _prod_backward(g, x, idx, src, result, dim, include_self, need)
    else:
        value = gather_(result)
        self_is = (x == result).to(g.dtype)
        src_is = (src == value).to(g.dtype)
        n = dispatch(_scatter_add, (self_is, idx, src_is), p)
        gd = g / n
        gx = self_is * gd
        gs = src_is * gather_(gd) if need[2] else None
    if not include_self and need[0]:
        gx = dispatch(_scatter_value, (gx, idx), {"dim": dim, "value": 0})
    return gx if need[0] else None, None, gs


def _prod_backward(g, x, idx, src, result, dim, include_self, need):
    # torch's formula: zeros in self or (one per slot) in src get the product of the others
    p = {"dim": dim}
    red = {"dim": dim, "reduce": "prod", "include_self": include_self}
    gx = gs = None
    if need[0]:
        masked_self = dispatch(_masked_fill, (x, x == 0), {"value": 1})
        masked_result = dispatch(_scatter_reduce, (masked_self, idx, src), red)
        gx = g * masked_result / masked_self
    if need[2]:
        src_zero = src == 0
        zeros = _zeros(tuple(x.shape), g.dtype.np)
        n_zeros = dispatch(_scatter_add, (zeros, idx, src_zero.to(g.dtype)), p)
        single = src_zero & (dispatch(_gather, (n_zeros, idx), p) == 1)
        masked_src = dispatch(_masked_fill, (src, single), {"value": 1})
        masked_src_result = dispatch(_scatter_reduce, (x, idx, masked_src), red)
        a = dispatch(_gather, (g * masked_src_result, idx), p)
        b = dispatch(_gather, (g * result, idx), p) / dispatch(
            _masked_fill, (src, src_zero), {"value": 1}
        )
        gs = dispatch(_masked_fill, (b, single), {"value": 0}) + dispatch(
            _masked_fill, (a, ~single), {"value": 0}
        )
    return gx, gs


def _scatter_reduce_args(fn, input, dim, index, src, reduce):
    dim = _check_along(fn, input, dim, index, src)
    _same_dtype("scatter", input, src)
    if reduce not in _REDUCES and reduce not in ("max", "min"):
        raise RuntimeError(
            f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}"
        )
    return dim, _ALIAS.get(reduce, reduce)


_ALIAS = {"max": "amax", "min": "amin"}  # torch accepts these too


def scatter_reduce(
    input: Tensor, dim: int, index: Tensor, src: Tensor, reduce: str, *, include_self=True
) -> Tensor:
    """Return ``input`` with ``src`` reduced in at ``index`` along ``dim`` (sum, prod, mean,
    amax, amin; ``include_self=False`` leaves ``input``'s own value out where scattered)."""
    dim, reduce = _scatter_reduce_args("scatter_reduce", input, dim, index, src, reduce)
    params = {"dim": dim, "reduce": reduce, "include_self": bool(include_self)}
    return dispatch(_scatter_reduce, (input, index, src), params)


def scatter_reduce_(
    self: Tensor, dim: int, index: Tensor, src: Tensor, reduce: str, *, include_self=True
) -> Tensor:
    """In-place version of :meth:`Tensor.scatter_reduce`."""
    dim, reduce = _scatter_reduce_args("scatter_reduce_", self, dim, index, src, reduce)
    params = {"dim": dim, "reduce": reduce, "include_self": bool(include_self)}
    return dispatch_inplace(_scatter_reduce, self, (self, index, src), params)


publish(_scatter_reduce, scatter_reduce, inplace=scatter_reduce_)

"""Statistics: std, var, std_mean, var_mean, median, nanmedian, mode, quantile, nanquantile.

Index choices follow torch: ``median(dim)`` returns the lower median and, among equal values,
the index a stable sort puts there (the first NaN when there is one); ``mode`` returns the
smallest most frequent value and the last index where it occurs.
"""

from __future__ import annotations

import math
import numbers
import warnings

import numpy as np

from ember._core.tensor import Tensor, _wrap
from ember._ops.extrema import (
    check_reduce_dim,
    evenly_distribute_backward,
    indexed_result,
    put_along,
    value_selecting_backward,
)
from ember._ops.reduce import (
    as_dtype,
    check_out,
    expand_back,
    reduce_dims,
    restore,
    save_outputs,
    upcast,
    write_out,
)
from ember._ops.registry import _type_name, dispatch, op, publish

# ------------------------------------------------------------------------------ std, var


def _np_var(x, dims, correction, keepdim):
    n = math.prod(x.shape[d] for d in dims)
    real = np.abs(np.empty(0, x.dtype)).dtype
    xa = upcast(x)
    mean = np.add.reduce(xa, axis=dims, keepdims=True) / n if n else np.full((), np.nan, xa.dtype)
    dev = np.asarray(np.subtract(xa, mean))
    if dev.dtype.kind == "c":
        sq = dev.real**2 + dev.imag**2
    else:
        sq = np.multiply(dev, dev, out=dev)  # in place: one temporary, as np.var
    return as_dtype(
        np.true_divide(np.add.reduce(sq, axis=dims, keepdims=keepdim), max(0, n - correction)), real
    )


def _var_backward(g, x, dims, correction, keepdim, rnumel):
    """torch's var_backward. ``rnumel`` is None for a reduction without ``dim`` (or of a 0-d
    tensor); else the element count over the given dims (1 for an explicit ``dim=()``, as in
    torch, though the forward then reduces everything)."""
    shape = tuple(x.shape)
    if rnumel is None:
        dof = x.numel() - correction
        if dof <= 0:
            # 2 / dof is inf: inf * 0 is nan where x equals its mean, inf elsewhere
            from ember._ops.pointwise import where

            return g * where(x == x.mean(), math.nan, math.inf)
        return (2.0 / dof) * g * (x - x.mean())
    dof = rnumel - correction
    factor = 2.0 / dof if dof else math.inf
    return factor * restore(g, shape, dims, keepdim) * (x - x.mean(dims, keepdim=True))


def _std_to_var_grad(g, std):
    from ember._ops.pointwise import where

    return where(std == 0, 0.0, g / (std * 2))


@op("var", grad_fn="VarBackward0", save=("self",))
def _var(x, dims, correction, keepdim=False, rnumel=None):
    return _np_var(x, dims, correction, keepdim)


@_var.backward
def _(ctx, g, dims, correction, keepdim=False, rnumel=None):
    (x,) = ctx.saved_tensors
    return _var_backward(g, x, dims, correction, keepdim, rnumel)


@op("std", grad_fn="StdBackward0", save=("self", "result"))
def _std(x, dims, correction, keepdim=False, rnumel=None):
    return np.sqrt(_np_var(x, dims, correction, keepdim))


@_std.backward
def _(ctx, g, dims, correction, keepdim=False, rnumel=None):
    x, r = ctx.saved_tensors
    return _var_backward(_std_to_var_grad(g, r), x, dims, correction, keepdim, rnumel)


def _moments(x, dims, correction, keepdim, take_sqrt):
    v = _np_var(x, dims, correction, keepdim)
    n = math.prod(x.shape[d] for d in dims)
    m = np.add.reduce(upcast(x), axis=dims, keepdims=keepdim) / n if n else np.nan * v
    return (np.sqrt(v) if take_sqrt else v), as_dtype(m, x.dtype)


@op("std_mean", grad_fn="StdMeanBackward0", post_save=("self", "result0"))
def _std_mean(x, dims, correction, keepdim=False, rnumel=None):
    return _moments(x, dims, correction, keepdim, True)


@op("var_mean", grad_fn="VarMeanBackward0", post_save=("self", "_result0"))
def _var_mean(x, dims, correction, keepdim=False, rnumel=None):
    return _moments(x, dims, correction, keepdim, False)


def _moments_backward(is_std):
    def backward(ctx, g0, g1, dims, correction, keepdim=False, rnumel=None):
        x, r = ctx.saved_tensors
        shape = tuple(x.shape)
        res = None
        if g0 is not None:
            gvar = _std_to_var_grad(g0, r) if is_std else g0
            res = _var_backward(gvar, x, dims, correction, keepdim, rnumel)
        if g1 is not None:
            aux = expand_back(g1, shape, dims, keepdim) / math.prod(shape[d] for d in dims)
            res = aux if res is None else res + aux
        return res

    return backward


_std_mean.backward(_moments_backward(True))
_var_mean.backward(_moments_backward(False))


def _var_args(fn, input, dim, unbiased, keepdim, correction):
    """Parse torch's std/var overloads: (dim, unbiased, keepdim), (unbiased), (dim, *,
    correction, keepdim); return the op's params."""
    if isinstance(dim, bool):
        if unbiased is not None:
            raise TypeError(f"{fn}() received an invalid combination of arguments")
        dim, unbiased = None, dim
    if unbiased is not None and correction is not None:
        raise TypeError(
            f"{fn}() received an invalid combination of arguments - got both 'unbiased' and "
            "'correction'"
        )
    if unbiased is not None and not isinstance(unbiased, bool):
        raise TypeError(f"{fn}() received an invalid combination of arguments")
    if correction is None:
        correction = 0 if unbiased is False else 1
    if not (input.dtype.is_floating_point or input.dtype.is_complex):
        what = "std and var" if fn in ("std", "var") else fn
        raise RuntimeError(f"{what} only support floating point and complex dtypes")
    nd = input._data.ndim
    dims = reduce_dims(dim, nd)
    n = math.prod(input._data.shape[d] for d in dims)
    if n - correction <= 0:
        warnings.warn(
            f"{fn.split('_')[0]}(): degrees of freedom is <= 0. Correction should be strictly "
            "less than the reduction factor (input numel divided by output numel).",
            UserWarning,
            stacklevel=3,
        )
    if dim is None or nd == 0:
        rnumel = None
    elif not isinstance(dim, (int, np.integer)) and len(dim) == 0:
        rnumel = 1
    else:
        rnumel = n
    return {"dims": dims, "correction": correction, "keepdim": keepdim, "rnumel": rnumel}


def var(input, dim=None, unbiased=None, keepdim=False, *, correction=None, out=None):
    """Return the variance over ``dim`` with Bessel's ``correction`` (1 unless ``unbiased`` is
    False)."""
    params = _var_args("var", input, dim, unbiased, keepdim, correction)
    return _finish_out("var", _var, input, params, out)


def std(input, dim=None, unbiased=None, keepdim=False, *, correction=None, out=None):
    """Return the standard deviation over ``dim`` with Bessel's ``correction``."""
    params = _var_args("std", input, dim, unbiased, keepdim, correction)
    return _finish_out("std", _std, input, params, out)


def _finish_out(fn, vop, input, params, out):
    if out is None:
        return dispatch(vop, (input,), params)
    check_out(fn, out, (input,))
    if out.dtype is not input.dtype and out.dtype.is_floating_point and input.is_floating_point():
        input = input.to(out.dtype)  # torch computes in out's dtype
    return write_out(out, dispatch(vop, (input,), params))


def std_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """Return ``(std, mean)`` over ``dim``."""
    params = _var_args("std_mean", input, dim, unbiased, keepdim, correction)
    s, m = dispatch(_std_mean, (input,), params)
    save_outputs(s, input, s)
    return s, m


def var_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """Return ``(var, mean)`` over ``dim``."""
    params = _var_args("var_mean", input, dim, unbiased, keepdim, correction)
    v, m = dispatch(_var_mean, (input,), params)
    save_outputs(v, input, v)
    return v, m


# ------------------------------------------------------------------------------ median


def _no_bool(fn: str, x: np.ndarray) -> None:
    if x.dtype == np.bool_ or x.dtype.kind == "c":
        raise NotImplementedError(f"\"{fn}\" not implemented for '{_type_name_np(x)}'")


def _type_name_np(x):
    from ember._core import dtype as D

    return _type_name(D.FROM_NP[x.dtype])


def _isnan(x: np.ndarray) -> np.ndarray:
    if x.dtype.kind in "fc" or x.dtype == np.dtype("V2"):
        return np.isnan(x)
    return np.zeros(x.shape, bool)


def _median_positions(xm: np.ndarray, ignore_nan: bool) -> np.ndarray:
    """Return, per row of ``xm`` (sorted dim last), the index torch's median picks."""
    n = xm.shape[-1]
    order = np.argsort(xm, axis=-1, kind="stable")  # NaN sort last, in their order
    nan = _isnan(xm)
    if ignore_nan:
        k = np.maximum((n - np.count_nonzero(nan, axis=-1) - 1) // 2, 0)
        return np.take_along_axis(order, k[..., None], axis=-1)[..., 0]
    pos = order[..., (n - 1) // 2]
    if nan.any():
        pos = np.where(nan.any(axis=-1), np.argmax(nan, axis=-1), pos)
    return pos


def _median_all(fn: str, ignore_nan: bool):
    def forward(x):
        _no_bool("median_cpu", x)
        if x.size == 0:
            return np.full((), np.nan, x.dtype)
        flat = x.reshape(-1)
        return flat[_median_positions(flat, ignore_nan)].copy()

    return forward


_median = op("median", grad_fn="MedianBackward0", save=("self", "result"))(
    _median_all("median", False)
)
_nanmedian = op("nanmedian", grad_fn="NanmedianBackward0", save=("self", "result"))(
    _median_all("nanmedian", True)
)


def _evenly(ctx, g):
    x, r = ctx.saved_tensors
    return evenly_distribute_backward(g, x, r)


_median.backward(_evenly)
_nanmedian.backward(_evenly)


def _median_dim(fn: str, ignore_nan: bool):
    def forward(x, dim, keepdim=False):
        _no_bool("median_out", x)
        if x.ndim == 0:
            return x.copy(), np.zeros((), np.int64)
        check_reduce_dim("median", x, dim)  # nanmedian's message says median too
        pos = _median_positions(np.moveaxis(x, dim, -1), ignore_nan)
        idx = np.expand_dims(pos, dim)
        vals = np.take_along_axis(x, idx, axis=dim)
        if not keepdim:
            vals, idx = np.squeeze(vals, dim), pos
        return vals, np.asarray(idx, dtype=np.int64, order="C")

    return forward


def _selected(ctx, g, _gi, dim, keepdim=False):
    return value_selecting_backward(ctx, g, dim, keepdim)


_median_d = op("median", grad_fn="MedianBackward1", nondiff_outputs=(1,), post_save=("indices",))(
    _median_dim("median", False)
)
_nanmedian_d = op(
    "nanmedian", grad_fn="NanmedianBackward1", nondiff_outputs=(1,), post_save=("indices",)
)(_median_dim("nanmedian", True))
_median_d.backward(_selected)
_nanmedian_d.backward(_selected)


_NO_DIM = object()  # median(dim=None) is a TypeError in torch; no dim: the whole tensor's


def _no_dim_args(fn: str, dim, keepdim, out) -> None:
    if dim is None:
        raise TypeError(f"{fn}(): argument 'dim' (position 1) must be int, not NoneType")
    if dim is _NO_DIM and (keepdim is not False or out is not None):
        raise TypeError(f'{fn}() missing 1 required positional arguments: "dim"')


def median(input, dim=_NO_DIM, keepdim=False, *, out=None):
    """Return the lower median of all elements; with ``dim``, ``(values, indices)`` along it.
    NaN propagates."""
    _no_dim_args("median", dim, keepdim, out)
    if dim is _NO_DIM:
        return dispatch(_median, (input,))
    return indexed_result(_median_d, "median", "median", input, dim, keepdim, out)


def nanmedian(input, dim=_NO_DIM, keepdim=False, *, out=None):
    """Return the lower median ignoring NaN; with ``dim``, ``(values, indices)`` along it."""
    _no_dim_args("nanmedian", dim, keepdim, out)
    if dim is _NO_DIM:
        return dispatch(_nanmedian, (input,))
    return indexed_result(_nanmedian_d, "nanmedian", "nanmedian", input, dim, keepdim, out)


# ------------------------------------------------------------------------------ mode


@op("mode", grad_fn="ModeBackward0", nondiff_outputs=(1,), post_save=("indices",))
def _mode(x, dim, keepdim=False):
    if x.dtype.kind == "c":
        raise NotImplementedError(f"\"mode_cpu\" not implemented for '{_type_name_np(x)}'")
    if x.ndim == 0:
        return x.copy(), np.zeros((), np.int64)
    check_reduce_dim("mode", x, dim)
    xm = np.moveaxis(x, dim, -1)
    n = xm.shape[-1]
    order = np.argsort(xm, axis=-1, kind="stable")
    s = np.take_along_axis(xm, order, axis=-1)
    # runs of equal values in sorted order (NaN != NaN: each NaN is a run of its own)
    start = np.ones(s.shape, bool)
    start[..., 1:] = s[..., 1:] != s[..., :-1]
    end = np.ones(s.shape, bool)
    end[..., :-1] = start[..., 1:]
    pos = np.arange(n)
    run_start = np.maximum.accumulate(np.where(start, pos, 0), axis=-1)
    length = np.where(end, pos - run_start + 1, 0)
    best = np.argmax(length, axis=-1)[..., None]  # the first (smallest) value of max count
    vals = np.take_along_axis(s, best, axis=-1)[..., 0]
    idx = np.take_along_axis(order, best, axis=-1)[..., 0]  # the last occurrence
    if keepdim:
        vals, idx = np.expand_dims(vals, dim), np.expand_dims(idx, dim)
    return np.asarray(vals, order="C"), np.asarray(idx, dtype=np.int64, order="C")


_mode.backward(_selected)


def mode(input, dim=-1, keepdim=False, *, out=None):
    """Return ``(values, indices)``: the most frequent value along ``dim`` (the smallest on
    ties) and the last index where it occurs."""
    return indexed_result(_mode, "mode", "mode", input, dim, keepdim, out)


# ------------------------------------------------------------------------------ quantile

_MODES = ("linear", "lower", "higher", "midpoint", "nearest")


def _lerp(a, b, w):
    # torch's CPU lerp: exact at both ends
    with np.errstate(all="ignore"):
        return np.where(np.abs(w) < 0.5, a + w * (b - a), b - (b - a) * (1 - w))


@op(
    "quantile",
    grad_fn="SqueezeBackward4",
    args=("self", "below", "above", "weight"),
    save=("_below", "_above", "_weight"),
)
def _quantile_pick(x, below, above, w, dim, rest, scalar):
    lo = np.take_along_axis(x, below, axis=dim)
    hi = np.take_along_axis(x, above, axis=dim)
    r = _lerp(lo, hi, w).astype(x.dtype, copy=False)
    # torch's layout: the quantiles last in memory, then moved to the front (a transposed view)
    buf = np.ascontiguousarray(np.moveaxis(r, dim, -1)).reshape(rest + (r.shape[dim],))
    return buf.reshape(rest) if scalar else np.moveaxis(buf, -1, 0)


@_quantile_pick.backward
def _(ctx, g, dim, rest, scalar):
    from ember._ops.shape import movedim

    below, above, w = ctx.saved_tensors
    xshape = ctx._input_meta[0][0]
    g = g.reshape(rest + (1,)) if scalar else movedim(g, 0, -1)
    moved = tuple(s for i, s in enumerate(below.shape) if i != dim) + (below.shape[dim],)
    g = movedim(g.reshape(moved), -1, dim)
    return (
        put_along(g * (1 - w), below, dim, xshape) + put_along(g * w, above, dim, xshape),
        None,
        None,
        None,
    )


def _quantile_q(fn: str, input: Tensor, q) -> tuple:
    x = input._data
    if x.size == 0:
        raise RuntimeError(f"{fn}() input tensor must be non-empty")
    if isinstance(q, Tensor):
        if q.ndim > 1:
            raise RuntimeError(f"{fn}() q must be a scalar or 1D tensor")
    if x.dtype not in (np.float32, np.float64):
        raise RuntimeError(f"{fn}() input tensor must be either float or double dtype")
    if isinstance(q, Tensor):
        if q.dtype is not input.dtype:
            raise RuntimeError(f"{fn}() q tensor must be same dtype as the input tensor")
        qa = q._data
        if not np.all((qa >= 0) & (qa <= 1)):
            raise RuntimeError(f"{fn}() q values must be in the range [0, 1]")
        return qa.reshape(-1), q.ndim == 0
    if not isinstance(q, numbers.Real):
        raise TypeError(f"{fn}(): argument 'q' must be Tensor or float, not {type(q).__name__}")
    if not 0 <= q <= 1:
        raise RuntimeError(f"{fn}() q must be in the range [0, 1] but got {q}")
    return np.asarray([q], x.dtype), True


def _quantile(fn, input, q, dim, keepdim, interpolation, out, ignore_nan):
    if interpolation not in _MODES:
        raise RuntimeError(
            f"{fn}() interpolation must be one of linear, lower, higher, midpoint or nearest, "
            f"but got {interpolation}"
        )
    qa, scalar = _quantile_q(fn, input, q)
    if out is not None:
        check_out(fn, out, (input,), differentiable=False)  # torch's is composite: no error
        if out.dtype is not input.dtype:
            raise RuntimeError(f"{fn}() out tensor must be same dtype as the input tensor")
    nd = input._data.ndim
    x = input
    if dim is None:
        x, d = input.reshape(-1), 0
        rest = (1,) * nd if keepdim else ()
    else:
        if not isinstance(dim, (int, np.integer)) or isinstance(dim, bool):
            raise TypeError(f"{fn}(): argument 'dim' must be int, not {type(dim).__name__}")
        (d,) = reduce_dims(dim, nd) or (0,)
        shp = input._data.shape
        rest = tuple((1 if i == d else s) for i, s in enumerate(shp) if keepdim or i != d)
    if x.ndim == 0:
        x, d = x.reshape(1), 0
    below, above, w = _quantile_plan(x._data, d, qa, interpolation, ignore_nan)
    params = {"dim": d, "rest": rest, "scalar": scalar}
    res = dispatch(_quantile_pick, (x, _wrap(below), _wrap(above), _wrap(w)), params)
    if out is None:
        return res
    write_out(out, res.detach())
    if res.requires_grad:  # torch's quantile is composite: out= is a differentiable copy
        out.copy_(res)
    return out


def _quantile_plan(x, d, qa, interpolation, ignore_nan):
    """Return the indices into ``x`` (along ``d``) below and above each quantile, and the
    interpolation weights; the quantiles run along ``d`` (torch's arithmetic, in x's dtype)."""
    xm = np.moveaxis(x, d, -1)
    n = xm.shape[-1]
    order = np.argsort(xm, axis=-1, kind="stable")
    nan = np.isnan(xm)
    q = qa.astype(x.dtype)
    if ignore_nan:
        count = (n - np.count_nonzero(nan, axis=-1, keepdims=True)).astype(x.dtype)
        ranks = q * (count - 1)
        ranks = np.where(ranks < 0, 0, ranks).astype(x.dtype)
    else:
        ranks = np.broadcast_to(q * x.dtype.type(n - 1), xm.shape[:-1] + (len(q),))
        ranks = np.where(nan.any(axis=-1, keepdims=True), x.dtype.type(n - 1), ranks)
    if interpolation == "lower":
        ranks = np.floor(ranks)
    elif interpolation == "higher":
        ranks = np.ceil(ranks)
    elif interpolation == "nearest":
        ranks = np.round(ranks)
    lo = ranks.astype(np.int64)
    if interpolation in ("linear", "midpoint"):
        w = np.full(ranks.shape, 0.5, x.dtype) if interpolation == "midpoint" else ranks - lo
        hi = np.ceil(ranks).astype(np.int64)
    else:
        w, hi = np.zeros(ranks.shape, x.dtype), lo
    below = np.take_along_axis(order, lo, axis=-1)
    above = np.take_along_axis(order, hi, axis=-1)
    back = lambda a: np.ascontiguousarray(np.moveaxis(a, -1, d))  # noqa: E731
    return back(below), back(above), back(w.astype(x.dtype))


def quantile(input, q, dim=None, keepdim=False, *, interpolation="linear", out=None):
    """Return the ``q``-th quantiles (a float or 1-D tensor in [0, 1]) over ``dim`` (all elements
    when None), interpolating as asked; NaN propagates."""
    return _quantile("quantile", input, q, dim, keepdim, interpolation, out, False)


def nanquantile(input, q, dim=None, keepdim=False, *, interpolation="linear", out=None):
    """Return the ``q``-th quantiles ignoring NaN (NaN where a slice is all NaN)."""
    return _quantile("nanquantile", input, q, dim, keepdim, interpolation, out, True)


publish(_std, std)
publish(_var, var)
publish(_median, median)
publish(_nanmedian, nanmedian)
publish(_mode, mode)
publish(_quantile_pick, quantile)
publish(_quantile_pick, nanquantile)
publish(_std_mean, std_mean, method=False)
publish(_var_mean, var_mean, method=False)

"""Scans along a dim: cumsum, cumprod, cummax, cummin, logcumsumexp; and diff.

Each scan op takes ``reverse=`` (scan from the end), so the backward of a scan is the reverse
scan, itself differentiable: double backward works without flip ops.
"""

from __future__ import annotations

import numpy as np

from ember._core.dtype import finfo
from ember._core.grad_mode import STATE
from ember._core.tensor import Tensor, _wrap, wrap_dim
from ember._ops.extrema import indexed_result, put_along
from ember._ops.reduce import (
    _compute_dtype,
    _dtype_arg,
    _sum_dtype,
    acc_dtype,
    as_dtype,
    check_out,
    int_dim,
    upcast,
    write_out,
)
from ember._ops.registry import _type_name, dispatch, dispatch_inplace, op, publish


def _scan(ufunc_acc, x, dim, reverse, dtype=None):
    """Return the scan of ``x`` along ``dim`` computed in ``dtype`` (from the end if reverse),
    C-contiguous as torch's."""
    if reverse:
        x = np.flip(x, dim)
    r = ufunc_acc(x, axis=dim, dtype=dtype)
    return np.asarray(np.flip(r, dim) if reverse else r, order="C")


# ------------------------------------------------------------------------------ cumsum


@op("cumsum", grad_fn="CumsumBackward0")
def _cumsum(x, dim, reverse=False, dtype=None):
    dt = _sum_dtype(x, dtype)
    if x.ndim == 0:
        return as_dtype(x, dt).copy()
    acc = acc_dtype(dt)
    return as_dtype(_scan(np.add.accumulate, x.astype(acc, copy=False), dim, reverse), dt)


@_cumsum.backward
def _(ctx, g, dim, reverse=False, dtype=None):
    shape = ctx._input_meta[0][0]
    if not shape or shape[dim] <= 1 or g.numel() <= 1:
        return g
    return cumsum_scan(g, dim, reverse=not reverse)


def cumsum_scan(x: Tensor, dim: int, reverse: bool = False) -> Tensor:
    """Return the cumulative sum of ``x`` along the non-negative ``dim`` (from the end if asked)."""
    return dispatch(_cumsum, (x,), {"dim": dim, "reverse": reverse})


def _scan_args(fn, input, dim, dtype, out):
    nd = input._data.ndim
    d = int_dim(fn, dim, nd) if nd else int_dim(fn, dim, 0) * 0
    if out is not None:
        check_out(fn, out, (input,))
        dtype = _compute_dtype(fn, dtype, out)
    return d, _dtype_arg(fn, dtype)


def cumsum(input, dim, *, dtype=None, out=None):
    """Return the cumulative sum of ``input`` along ``dim`` (ints accumulate in int64)."""
    d, dtype = _scan_args("cumsum", input, dim, dtype, out)
    res = dispatch(_cumsum, (input,), {"dim": d, "dtype": dtype})
    return res if out is None else write_out(out, res)


def _cumsum_(self, dim, *, dtype=None):
    d, dtype = _scan_args("cumsum_", self, dim, dtype, None)
    return dispatch_inplace(_cumsum, self, (self,), {"dim": d, "dtype": dtype})


# ------------------------------------------------------------------------------ cumprod


@op("cumprod", grad_fn="CumprodBackward0", save=("self", "result"))
def _cumprod(x, dim, reverse=False, dtype=None):
    dt = _sum_dtype(x, dtype)
    if x.ndim == 0:
        return as_dtype(x, dt).copy()
    acc = acc_dtype(dt)
    return as_dtype(_scan(np.multiply.accumulate, x.astype(acc, copy=False), dim, reverse), dt)


@_cumprod.backward
def _(ctx, g, dim, reverse=False, dtype=None):
    x, y = ctx.saved_tensors
    shape = tuple(x.shape)
    if not shape or shape[dim] <= 1 or x.numel() <= 1:
        return g
    if not np.any(x._data == 0):
        # d y_j / d x_k = y_j / x_k for j >= k: a reverse scan of g * y, divided by x
        return cumsum_scan(g * y, dim, reverse=not reverse) / x
    if not STATE.grad_enabled:
        return _wrap(_cumprod_zeros_grad(x._data, g._data, y._data, dim, reverse))
    return _cumprod_grad_quadratic(g, x, dim, reverse)


def _cumprod_zeros_grad(x, g, y, dim, reverse):
    """The gradient of cumprod for inputs holding zeros, in O(n): only elements up to the first
    zero of each slice get a gradient."""
    if reverse:
        x, g, y = np.flip(x, dim), np.flip(g, dim), np.flip(y, dim)
    zeros = np.cumsum(x == 0, axis=dim)
    before = zeros == 0
    first = (x == 0) & (zeros == 1)
    with np.errstate(all="ignore"):
        rev = np.flip(np.cumsum(np.flip(np.where(before, y * g, 0), dim), axis=dim), dim)
        grad = np.where(before, rev / np.where(before, x, 1), 0)
    # at the first zero z1: prod(x[:z1]) * sum_{z1 <= j < z2} g_j * prod(x[z1+1 : j+1]), as
    # torch computes it (the terms from the second zero z2 on, zero anyway, are left out)
    one_zero = zeros == 1
    prefix = np.multiply.reduce(np.where(before, x, 1), axis=dim, keepdims=True)
    after = np.cumprod(np.where(one_zero & ~first, x, 1), axis=dim)
    tail = np.add.reduce(np.where(one_zero, g * after, 0), axis=dim, keepdims=True)
    grad = np.where(first, prefix * tail, grad).astype(g.dtype, copy=False)
    return np.ascontiguousarray(np.flip(grad, dim)) if reverse else grad


def _cumprod_grad_quadratic(g, x, dim, reverse):
    """The gradient of cumprod written in differentiable ops, O(n^2) in the scanned length:
    grad_k = sum_{j >= k} g_j * prod_{i <= j, i != k} x_i (used for double backward with zeros)."""
    from ember._ops.pointwise import where
    from ember._ops.shape import movedim

    n = x.shape[dim]
    xm = movedim(x, dim, -1).unsqueeze(-2)  # [..., 1, n]: row k will drop x_k
    eye = _wrap(np.eye(n, dtype=bool))
    prods = cumprod_scan(where(eye, 1.0, xm), xm.ndim - 1, reverse=reverse)  # [..., k, j]
    upper = np.triu(np.ones((n, n), bool)) if not reverse else np.tril(np.ones((n, n), bool))
    gm = movedim(g, dim, -1).unsqueeze(-2)
    grad = (where(_wrap(upper), gm * prods, 0.0)).sum(-1)
    return movedim(grad, -1, dim)


def cumprod_scan(x: Tensor, dim: int, reverse: bool = False) -> Tensor:
    """Return the cumulative product of ``x`` along the non-negative ``dim`` (from the end if
    asked)."""
    return dispatch(_cumprod, (x,), {"dim": dim, "reverse": reverse})


def cumprod(input, dim, *, dtype=None, out=None):
    """Return the cumulative product of ``input`` along ``dim`` (ints accumulate in int64)."""
    d, dtype = _scan_args("cumprod", input, dim, dtype, out)
    res = dispatch(_cumprod, (input,), {"dim": d, "dtype": dtype})
    return res if out is None else write_out(out, res)


def _cumprod_(self, dim, *, dtype=None):
    d, dtype = _scan_args("cumprod_", self, dim, dtype, None)
    return dispatch_inplace(_cumprod, self, (self,), {"dim": d, "dtype": dtype})


# ------------------------------------------------------------------------------ cummax, cummin


def _cum_extreme(fn: str, acc):
    def forward(x, dim, keepdim=True):
        if x.dtype.kind == "c":
            raise RuntimeError(f"\"{fn}_cpu\" not implemented for '{_type_name_np(x)}'")
        if x.ndim == 0:
            return x.copy(), np.zeros((), np.int64)
        vals = np.asarray(acc(x, axis=dim), order="C")
        # the index moves to every position that reaches the running extreme (ties: the last)
        # and to every NaN, which then sticks in the values
        moved = x == vals
        if x.dtype.kind == "f" or x.dtype.kind == "V":
            moved |= np.isnan(x)
        pos = np.arange(x.shape[dim], dtype=np.int64).reshape((-1,) + (1,) * (x.ndim - dim - 1))
        idx = np.maximum.accumulate(np.where(moved, pos, 0), axis=dim)
        return vals, idx

    return forward


def _type_name_np(x):
    from ember._core import dtype as D

    return _type_name(D.FROM_NP[x.dtype])


_cummax = op("cummax", grad_fn="CummaxBackward0", nondiff_outputs=(1,), post_save=("indices",))(
    _cum_extreme("cummax", np.maximum.accumulate)
)
_cummin = op("cummin", grad_fn="CumminBackward0", nondiff_outputs=(1,), post_save=("indices",))(
    _cum_extreme("cummin", np.minimum.accumulate)
)


def _cum_extreme_backward(ctx, g, _gi, dim, keepdim=True):
    (indices,) = ctx.saved_tensors
    if g.numel() == 0:
        return g
    return put_along(g, indices, dim, ctx._input_meta[0][0])


_cummax.backward(_cum_extreme_backward)
_cummin.backward(_cum_extreme_backward)


def cummax(input, dim, *, out=None):
    """Return ``(values, indices)``: the running maximum along ``dim`` and where it was reached
    (the last position on ties)."""
    return indexed_result(_cummax, "cummax", "cummax", input, dim, True, out)


def cummin(input, dim, *, out=None):
    """Return ``(values, indices)``: the running minimum along ``dim`` and where it was reached
    (the last position on ties)."""
    return indexed_result(_cummin, "cummin", "cummin", input, dim, True, out)


# ------------------------------------------------------------------------------ logcumsumexp


@op("logcumsumexp", grad_fn="LogcumsumexpBackward0", save=("self", "result"))
def _logcumsumexp(x, dim, reverse=False):
    if x.dtype.kind not in "fcV":
        raise NotImplementedError(
            f"\"logcumsumexp_out_cpu\" not implemented for '{_type_name_np(x)}'"
        )
    if x.ndim == 0:
        return x.copy()
    return as_dtype(_scan(np.logaddexp.accumulate, upcast(x), dim, reverse), x.dtype)


@_logcumsumexp.backward
def _(ctx, g, dim, reverse=False):
    from ember._ops.pointwise import where

    x, r = ctx.saved_tensors
    if g.ndim == 0 or g.numel() == 0:
        return g
    # torch's stable form: split g by sign and scan log|g| - result from the other end
    lowest = float(finfo(g.dtype).min)
    log_abs = g.abs().log()
    pos = where(g > 0, log_abs, lowest)
    neg = where(g < 0, log_abs, lowest)
    params = {"dim": dim, "reverse": not reverse}
    out_pos = (dispatch(_logcumsumexp, (pos - r,), params) + x).exp()
    out_neg = (dispatch(_logcumsumexp, (neg - r,), params) + x).exp()
    return out_pos - out_neg


def logcumsumexp(input, dim, *, out=None):
    """Return ``log(cumsum(exp(input), dim))``, computed stably."""
    nd = input._data.ndim
    d = int_dim("logcumsumexp", dim, nd) if nd else int_dim("logcumsumexp", dim, 0) * 0
    if out is not None:
        check_out("logcumsumexp", out, (input,))
    res = dispatch(_logcumsumexp, (input,), {"dim": d})
    if out is not None:
        return write_out(out, res if res.dtype is out.dtype else res.to(out.dtype))
    return res


# ------------------------------------------------------------------------------ diff


def _check_diff_other(input: Tensor, other, dim: int) -> None:
    if other is None:
        return
    if other.ndim != input.ndim:
        raise RuntimeError("diff expects prepend or append to be the same dimension as input")
    for i in range(other.ndim):
        if i != dim and other.shape[i] != input.shape[i]:
            raise RuntimeError(
                "diff expects the shape of tensor to prepend or append to match that of input "
                f"except along the differencing dimension; input.size({i}) = {input.shape[i]}, "
                f"but got tensor.size({i}) = {other.shape[i]}"
            )


def diff(input, n=1, dim=-1, prepend=None, append=None, *, out=None):
    """Return the ``n``-th forward difference along ``dim`` (``prepend``/``append`` joined first);
    for bool tensors, the logical xor of neighbours."""
    from ember._ops.cat_split import cat
    from ember._ops.slicing import narrow

    if not isinstance(input, Tensor):
        raise TypeError(
            f"diff(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}"
        )
    for name, pos, v in (("n", 1, n), ("dim", 2, dim)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise TypeError(
                f"diff(): argument '{name}' (position {pos}) must be int, not {type(v).__name__}"
            )
    if input.ndim < 1:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    d = wrap_dim(dim, input.ndim)
    _check_diff_other(input, prepend, d)
    _check_diff_other(input, append, d)
    if out is not None:  # torch's diff writes out= with its last sub (logical_xor for bool)
        check_out(
            "logical_xor" if input.dtype.name == "bool" else "sub", out, (input, prepend, append)
        )
    if n == 0:
        res = _copy_of(input)
    else:
        x = input
        if prepend is not None or append is not None:
            x = cat([t for t in (prepend, input, append) if t is not None], d)
        length = x.shape[d] - 1
        for _ in range(min(n, x.shape[d])):
            hi, lo = narrow(x, d, 1, length), narrow(x, d, 0, length)
            x = hi ^ lo if x.dtype.name == "bool" else hi - lo
            length -= 1
        res = x
    if out is None:
        return res
    return write_out(out, res if res.dtype is out.dtype else res.to(out.dtype))


def _copy_of(x: Tensor) -> Tensor:
    # torch's diff with n=0: zeros_like(input).copy_(input)
    from ember._ops.creation import zeros_like

    return zeros_like(x).copy_(x)


publish(_cumsum, cumsum, inplace=_cumsum_)
publish(_cumprod, cumprod, inplace=_cumprod_)
publish(_cummax, cummax)
publish(_cummin, cummin)
publish(_logcumsumexp, logcumsumexp)
publish(None, diff)

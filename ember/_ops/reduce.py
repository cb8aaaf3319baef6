"""Reductions: sum, nansum, mean, nanmean, prod, logsumexp, all, any, count_nonzero, norm.

Shared here for the other reduction families (``extrema.py``, ``stats.py``, ``scan.py``): dim
normalisation, reshaping a reduced gradient back to the input, and torch's ``out=`` rules.
Half-precision inputs are accumulated in float32, as torch does.
"""

from __future__ import annotations

import builtins
import math

import numpy as np

from ember._core import dtype as D
from ember._core.grad_mode import STATE
from ember._core.reductions import add_reduce
from ember._core.tensor import Tensor, _wrap, wrap_dim
from ember._ops.registry import FLOAT, _requires_grad, _type_name, dispatch, op, publish

# ------------------------------------------------------------------------------ shared helpers


def _no_bool_dims(dim, fn: str) -> None:
    # torch's argument parser takes no bool where it wants ints
    if isinstance(dim, bool) or (
        isinstance(dim, (tuple, list)) and builtins.any(isinstance(d, bool) for d in dim)
    ):
        raise TypeError(f"{fn}(): argument 'dim' must be tuple of ints, not bool")


def reduce_dims(dim, ndim: int, fn: str = "reduce") -> tuple:
    """Return ``dim`` (int, sequence, or None = all) as a sorted tuple of non-negative dims.

    An empty sequence means every dim, as for torch's ``sum``.
    """
    if dim is None:
        return tuple(range(ndim))
    _no_bool_dims(dim, fn)
    if ndim == 0:  # a 0-d tensor reduces over dim 0 or -1 to itself
        dims = (dim,) if isinstance(dim, (int, np.integer)) else tuple(dim)
        seen = [wrap_dim(int(d), 0) for d in dims]
        if len(seen) > 1:
            raise RuntimeError("dim 0 appears multiple times in the list of dims")
        return ()
    if isinstance(dim, (int, np.integer)):
        return (wrap_dim(int(dim), ndim),)
    dims = tuple(wrap_dim(int(d), ndim) for d in dim)
    if len(set(dims)) != len(dims):
        dup = next(d for d in dims if dims.count(d) > 1)
        raise RuntimeError(f"dim {dup} appears multiple times in the list of dims")
    return tuple(sorted(dims)) if dims else tuple(range(ndim))


def int_dim(fn: str, dim, ndim: int) -> int:
    """Return ``dim`` wrapped into ``ndim`` dims; raise torch's TypeError for a non-int."""
    if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)):
        raise TypeError(
            f"{fn}(): argument 'dim' (position 1) must be int, not {type(dim).__name__}"
        )
    return wrap_dim(int(dim), ndim)


def keep_shape(shape: tuple, dims: tuple) -> tuple:
    """Return ``shape`` with the reduced ``dims`` set to 1 (the ``keepdim=True`` shape)."""
    return tuple(1 if i in dims else s for i, s in enumerate(shape))


def restore(g: Tensor, shape: tuple, dims: tuple, keepdim: bool) -> Tensor:
    """Return a reduced gradient reshaped with size-1 dims where ``dims`` were reduced."""
    if keepdim or not shape:
        return g
    return g.reshape(keep_shape(shape, dims))


def expand_back(g: Tensor, shape: tuple, dims: tuple, keepdim: bool) -> Tensor:
    """Broadcast the gradient of a reduction over ``dims`` back to the input ``shape``."""
    return restore(g, shape, dims, keepdim).expand(shape)


_HALF = D.HALF_NP


def upcast(x: np.ndarray) -> np.ndarray:
    """Return ``x`` as float32 if it is a half type (torch accumulates those in float32)."""
    if x.dtype in _HALF:
        return x.astype(np.float32)
    return x


def acc_dtype(dt) -> np.dtype:
    """Return the NumPy dtype to accumulate results of dtype ``dt`` in (float32 for halves)."""
    dt = np.dtype(dt)
    return np.dtype(np.float32) if dt in _HALF else dt


def as_dtype(a, dt) -> np.ndarray:
    """Return ``a`` as an ndarray of NumPy dtype ``dt`` (no copy when it already is)."""
    a = np.asarray(a)
    return a if a.dtype == dt else a.astype(dt)


def nan_mask(x: Tensor) -> Tensor:
    """Return the bool tensor ``isnan(x)`` (``x != x``; no grad flows through it)."""
    return x != x


def save_outputs(res, *tensors) -> None:
    """Save tensors for the backward of a multi-output op (e.g. the indices of ``max(dim)``).

    The op table saves outputs of single-output ops only; multi-output ops attach theirs to the
    node here, after dispatch, with the same version tracking. An output of the op itself (its
    grad_fn is the node) is saved as such, so double backward flows through it.
    """
    from ember._core.node import SavedTensor

    node = res.grad_fn
    if node is None:
        return
    saved = []
    for t in tensors:
        if t.grad_fn is node:
            saved.append(SavedTensor(t, is_output=True, output_nr=t._output_nr))
        else:
            saved.append(SavedTensor(t))
    node._saved = tuple(saved)


def check_out(fn: str, out, inputs: tuple, n: int = 1, differentiable: bool = True) -> None:
    """Raise torch's errors for ``out=``: wrong type, or (for a differentiable op) an input
    that requires grad."""
    outs = out if n > 1 else (out,)
    if n > 1 and (not isinstance(out, (tuple, list)) or len(out) != n):
        raise TypeError(f"{fn}(): argument 'out' must be tuple of {n} Tensors")
    for o in outs:
        if not isinstance(o, Tensor):
            raise TypeError(f"{fn}(): argument 'out' must be Tensor, not {type(o).__name__}")
    if differentiable and STATE.grad_enabled and _requires_grad(inputs):
        raise RuntimeError(
            f"{fn}(): functions with out=... arguments don't support automatic differentiation, "
            "but one of the arguments requires grad."
        )


def out_dtype_error(want: D.dtype, got: D.dtype) -> RuntimeError:
    return RuntimeError(
        f"Expected out tensor to have dtype {D.cpp_type_name(want)}, but got "
        f"{D.cpp_type_name(got)} instead"
    )


def write_out(out: Tensor, res: Tensor) -> Tensor:
    """Copy ``res`` into ``out`` (resizing it as torch does, with its warning); return ``out``."""
    from ember._ops.pointwise import copy_out

    return copy_out(res, out, check_dtype=False)


def _dtype_arg(fn: str, dtype) -> D.dtype | None:
    if dtype is None or isinstance(dtype, D.dtype):
        return dtype
    raise TypeError(f"{fn}(): argument 'dtype' must be torch.dtype, not {type(dtype).__name__}")


def _compute_dtype(fn: str, dtype, out) -> D.dtype | None:
    """The ``dtype=`` of a sum-like op: with ``out=``, out's dtype (they must agree)."""
    dtype = _dtype_arg(fn, dtype)
    if out is not None:
        if dtype is not None and dtype is not out.dtype:
            raise out_dtype_error(dtype, out.dtype)
        return out.dtype
    return dtype


# ------------------------------------------------------------------------------ sum, nansum


def _sum_dtype(x: np.ndarray, dtype):
    if dtype is not None:
        return dtype.np
    if x.dtype.kind in "biu":
        return np.int64
    return x.dtype


def _np_sum(x, dims, keepdim, dtype):
    dt = _sum_dtype(x, dtype)
    acc = acc_dtype(dt)
    if x.dtype != acc:
        x = x.astype(acc)
    return as_dtype(add_reduce(x, dims, keepdim), dt)


@op("sum", grad_fn="SumBackward0")
def _sum_all(x, dtype=None):
    return _np_sum(x, None, False, dtype)


@_sum_all.backward
def _(ctx, g, dtype=None):
    return g.expand(ctx._input_meta[0][0])


@op("sum", grad_fn="SumBackward1")
def _sum_dim(x, dims, keepdim=False, dtype=None):
    return _np_sum(x, dims, keepdim, dtype)


@_sum_dim.backward
def _(ctx, g, dims, keepdim=False, dtype=None):
    return expand_back(g, ctx._input_meta[0][0], dims, keepdim)


# torch's overloads tell "no dim" from dim=None: sum(keepdim=True) and prod(None) are TypeErrors
_NO_DIM = object()


def sum(input, dim=_NO_DIM, keepdim=False, *, dtype=None, out=None):  # noqa: A001 - torch.sum
    """Return the sum of all elements, or over ``dim`` (int or tuple) keeping dims if asked."""
    if out is not None:
        check_out("sum", out, (input,))
        dtype = _compute_dtype("sum", dtype, out)
    if dim is _NO_DIM and keepdim:
        raise TypeError(_no_dim_keepdim("sum"))
    if dim is _NO_DIM or (dim is None and not keepdim):
        res = dispatch(_sum_all, (input,), {"dtype": dtype} if dtype is not None else {})
    else:
        dims = reduce_dims(dim, input._data.ndim, "sum")
        res = dispatch(_sum_dim, (input,), {"dims": dims, "keepdim": keepdim, "dtype": dtype})
    return res if out is None else write_out(out, res)


def _no_dim_keepdim(fn: str) -> str:
    return (
        f"{fn}() received an invalid combination of arguments - got (keepdim=bool, ), but "
        "expected one of: (*, torch.dtype dtype = None) or (tuple of ints dim, bool keepdim = "
        "False, *, torch.dtype dtype = None)"
    )


@op("nansum", grad_fn="NansumBackward0", save=("self",))
def _nansum(x, dims, keepdim=False, dtype=None):
    if x.dtype.kind == "c":
        raise RuntimeError("nansum does not support complex inputs")
    if x.dtype.kind in "fV":  # NaN counts as zero
        x = np.where(x != x, x.dtype.type(0), x)
    return _np_sum(x, dims, keepdim, dtype)


@_nansum.backward
def _(ctx, g, dims, keepdim=False, dtype=None):
    (x,) = ctx.saved_tensors
    return expand_back(g, x.shape, dims, keepdim) * (x == x)


def nansum(input, dim=None, keepdim=False, *, dtype=None, out=None):
    """Return the sum of the elements, treating NaN as zero."""
    if out is not None:
        check_out("nansum", out, (input,))
        dtype = _compute_dtype("nansum", dtype, out)
    dims = reduce_dims(dim, input._data.ndim, "nansum")
    res = dispatch(_nansum, (input,), {"dims": dims, "keepdim": keepdim, "dtype": dtype})
    return res if out is None else write_out(out, res)


# ------------------------------------------------------------------------------ mean, nanmean


def _mean_check(x: np.ndarray, dtype) -> None:
    if dtype is not None:
        if not (dtype.is_floating_point or dtype.is_complex):
            raise RuntimeError(
                "mean(): could not infer output dtype. Optional dtype must be either a floating "
                f"point or complex dtype. Got: {_type_name(dtype)}"
            )
        return
    if x.dtype.kind not in "fcV":  # (bfloat16: kind V)
        raise RuntimeError(
            "mean(): could not infer output dtype. Input dtype must be either a floating point "
            f"or complex dtype. Got: {_type_name(D.FROM_NP[x.dtype])}"
        )


def _np_mean(x, dims, keepdim, dtype):
    _mean_check(x, dtype)
    dt = dtype.np if dtype is not None else x.dtype
    x = upcast(x if x.dtype == dt else x.astype(dt))
    n = x.size if dims is None else math.prod(x.shape[d] for d in dims)
    s = np.add.reduce(x, axis=dims, keepdims=keepdim)
    return as_dtype(np.true_divide(s, n) if n else s * np.nan, dt)


@op("mean", grad_fn="MeanBackward0")
def _mean_all(x, dtype=None):
    return _np_mean(x, None, False, dtype)


@_mean_all.backward
def _(ctx, g, dtype=None):
    shape = ctx._input_meta[0][0]
    return g.expand(shape) / builtins.max(math.prod(shape), 1)


@op("mean", grad_fn="MeanBackward1")
def _mean_dim(x, dims, keepdim=False, dtype=None):
    return _np_mean(x, dims, keepdim, dtype)


@_mean_dim.backward
def _(ctx, g, dims, keepdim=False, dtype=None):
    shape = ctx._input_meta[0][0]
    n = math.prod(shape[d] for d in dims)
    return expand_back(g, shape, dims, keepdim) / builtins.max(n, 1)


def mean(input, dim=_NO_DIM, keepdim=False, *, dtype=None, out=None):
    """Return the mean of all elements, or over ``dim`` (int or tuple)."""
    dtype = _dtype_arg("mean", dtype)
    if dim is _NO_DIM:
        if keepdim:
            raise TypeError(_no_dim_keepdim("mean"))
        dim = None
    _no_bool_dims(dim, "mean")
    _mean_check(input._data, dtype)  # before the dims, as torch
    if out is not None:
        check_out("mean", out, (input,))
        dtype = _compute_dtype("mean", dtype, out)
    if dim is None and not keepdim:
        res = dispatch(_mean_all, (input,), {"dtype": dtype} if dtype is not None else {})
    else:
        dims = reduce_dims(dim, input._data.ndim, "mean")
        res = dispatch(_mean_dim, (input,), {"dims": dims, "keepdim": keepdim, "dtype": dtype})
    return res if out is None else write_out(out, res)


def nanmean(input, dim=None, keepdim=False, *, dtype=None, out=None):
    """Return the mean of the non-NaN elements (NaN where all are NaN)."""
    _no_bool_dims(dim, "nanmean")
    if not (input.dtype.is_floating_point or input.dtype.is_complex):
        raise RuntimeError(
            "nanmean(): expected input to have floating point or complex dtype but got "
            f"{_type_name(input.dtype)}"
        )
    if dtype is not None and not (dtype.is_floating_point or dtype.is_complex):
        raise RuntimeError(
            "nanmean(): could not infer output dtype. Optional dtype must be either a floating "
            f"point or complex dtype. Got: {_type_name(dtype)}"
        )
    if out is not None:
        check_out("nansum", out, (input,))  # torch's nanmean is nansum(..., out) / count
    if dim is None and keepdim:
        dim = tuple(range(input._data.ndim))
    count = sum(input == input, dim, keepdim)
    res = nansum(input, dim, keepdim, dtype=dtype) / count
    return res if out is None else write_out(out, res)


# ------------------------------------------------------------------------------ prod


def _np_prod(x, dims, keepdim, dtype):
    dt = _sum_dtype(x, dtype)
    acc = acc_dtype(dt)
    return as_dtype(np.multiply.reduce(x, axis=dims, keepdims=keepdim, dtype=acc), dt)


@op("prod", grad_fn="ProdBackward0", save=("self", "result"))
def _prod_all(x, dtype=None):
    return _np_prod(x, None, False, dtype)


@_prod_all.backward
def _(ctx, g, dtype=None):
    x, r = ctx.saved_tensors
    if x._data.ndim == 0:
        return g
    zeros = int(np.count_nonzero(x._data == 0))
    if zeros == 0:
        return g * (r / x)
    if zeros > 1 and not STATE.grad_enabled:
        return x.new_zeros(x.shape)
    return _prod_safe_zeros_backward(g, x.reshape(-1), 0).reshape(x.shape)


@op("prod", grad_fn="ProdBackward1", save=("self", "result"))
def _prod_dim(x, dim, keepdim=False, dtype=None):
    return _np_prod(x, (dim,) if x.ndim else None, keepdim, dtype)


@_prod_dim.backward
def _(ctx, g, dim, keepdim=False, dtype=None):
    x, r = ctx.saved_tensors
    if x._data.ndim == 0:
        return g
    if not keepdim:
        g, r = g.unsqueeze(dim), r.unsqueeze(dim)
    if not np.any(x._data == 0):
        return g * (r / x)
    return _prod_safe_zeros_backward(g, x, dim)


def _prod_safe_zeros_backward(g: Tensor, x: Tensor, dim: int) -> Tensor:
    # the product of all other elements along dim: exclusive cumprods from both ends,
    # [1, a, ab] * [bc, c, 1] for [a, b, c]; exact when x holds zeros, and differentiable
    from ember._ops.cat_split import cat
    from ember._ops.scan import cumprod_scan
    from ember._ops.slicing import narrow

    n = x.shape[dim]
    if x.numel() == 0:
        return g.expand(x.shape)
    ones = x.new_ones(keep_shape(tuple(x.shape), (dim,)))
    before = cumprod_scan(cat([ones, narrow(x, dim, 0, n - 1)], dim), dim)
    after = cumprod_scan(cat([narrow(x, dim, 1, n - 1), ones], dim), dim, reverse=True)
    return g * (before * after)


def prod(input, dim=_NO_DIM, keepdim=False, *, dtype=None, out=None):
    """Return the product of all elements, or along the int ``dim``."""
    if out is not None:
        check_out("prod", out, (input,))
        dtype = _compute_dtype("prod", dtype, out)
    dtype = _dtype_arg("prod", dtype)
    if dim is _NO_DIM:
        if keepdim:
            raise TypeError("prod(): argument 'dim' must be int, not NoneType")
        res = dispatch(_prod_all, (input,), {"dtype": dtype} if dtype is not None else {})
    else:
        d = int_dim("prod", dim, input._data.ndim)
        res = dispatch(_prod_dim, (input,), {"dim": d, "keepdim": keepdim, "dtype": dtype})
    return res if out is None else write_out(out, res)


# ------------------------------------------------------------------------------ logsumexp


def _np_logsumexp(x, dims, keepdim, acc=None):
    """Return logsumexp over ``dims``; ``acc``: the dtype to sum and log in (torch's out=)."""
    x = upcast(x)
    if x.size == 0:
        return np.log(np.add.reduce(np.exp(x), axis=dims, keepdims=keepdim, dtype=acc))
    m = np.asarray(np.maximum.reduce(x, axis=dims, keepdims=True))
    m[np.isinf(m)] = 0  # rows of -inf (or +inf) would give inf - inf = nan
    s = np.add.reduce(np.exp(x - m), axis=dims, keepdims=keepdim, dtype=acc)
    return np.log(s) + (m if keepdim else m.reshape(s.shape))


@op("logsumexp", grad_fn="LogsumexpBackward0", save=("self", "result"), promote=FLOAT)
def _logsumexp(x, dims, keepdim=False):
    dt = x.dtype
    return as_dtype(_np_logsumexp(x, dims, keepdim), dt)


@_logsumexp.backward
def _(ctx, g, dims, keepdim=False):
    x, r = ctx.saved_tensors
    shape = tuple(x.shape)
    return restore(g, shape, dims, keepdim) * (x - restore(r, shape, dims, keepdim)).exp()


def logsumexp(input, dim, keepdim=False, *, out=None):
    """Return ``log(sum(exp(input), dim))``, computed stably (a max is subtracted first)."""
    if dim is None:
        raise TypeError("logsumexp(): argument 'dim' must be tuple of ints, not NoneType")
    nd = input._data.ndim
    _no_bool_dims(dim, "logsumexp")
    empty_dims = not isinstance(dim, (int, np.integer)) and len(dim) == 0
    if empty_dims and nd and not keepdim and input._data.size:
        raise RuntimeError(
            f"output with shape [] doesn't match the broadcast shape {[1] * nd}"
        )  # torch's own behaviour for dim=()
    dims = reduce_dims(dim, nd)
    if out is not None:
        check_out("logsumexp", out, (input,))
        if out.dtype.is_floating_point and out.dtype is not input.dtype:
            # torch exponentiates in the input's dtype, then sums and logs in out's
            x = input._data if input.dtype.is_floating_point else input._data.astype(np.float32)
            return write_out(out, _wrap(_np_logsumexp(x, dims, keepdim, out.dtype.np)))
    res = dispatch(_logsumexp, (input,), {"dims": dims, "keepdim": keepdim})
    if out is not None:
        if out.dtype is not res.dtype:
            res = res.to(out.dtype)
        return write_out(out, res)
    return res


# ------------------------------------------------------------------------------ all, any, count


def _logical_reduce(fn, x, dims, keepdim):
    if dims == ():  # torch's all/any with dim=() reduce nothing
        r = x != 0
    else:
        r = fn(x, axis=dims, keepdims=keepdim)
    return np.asarray(r, dtype=np.uint8 if x.dtype == np.uint8 else np.bool_)


@op("all", differentiable=False)
def _all(x, dims, keepdim=False):
    return _logical_reduce(np.all, x, dims, keepdim)


@op("any", differentiable=False)
def _any(x, dims, keepdim=False):
    return _logical_reduce(np.any, x, dims, keepdim)


def _logical(fn: str, lop, input, dim, keepdim, out):
    nd = input._data.ndim
    _no_bool_dims(dim, fn)
    if dim is None:
        dims = None
    elif isinstance(dim, (int, np.integer)):
        dims = (wrap_dim(int(dim), nd),)
    else:
        dims = reduce_dims(dim, nd) if len(dim) else ()
    if not nd:
        dims = None
    if out is not None and out.dtype is D.uint8 and input.dtype is not D.uint8:
        # torch computes into a uint8 out= in uint8: the input is cast first (0.5 -> 0)
        input = _wrap(input._data.astype(np.uint8))
    res = dispatch(lop, (input,), {"dims": dims, "keepdim": keepdim})
    if out is None:
        return res
    check_out(fn, out, (input,), differentiable=False)
    if out.dtype not in (D.bool, D.uint8):
        raise RuntimeError(
            f"{fn} only supports bool tensor for result, got: {_type_name(out.dtype)}"
        )
    return write_out(out, res)


def all(input, dim=None, keepdim=False, *, out=None):  # noqa: A001 - torch.all
    """Return True where every element (over ``dim``) is nonzero (uint8 stays uint8)."""
    return _logical("all", _all, input, dim, keepdim, out)


def any(input, dim=None, keepdim=False, *, out=None):  # noqa: A001 - torch.any
    """Return True where any element (over ``dim``) is nonzero (uint8 stays uint8)."""
    return _logical("any", _any, input, dim, keepdim, out)


@op("count_nonzero", differentiable=False)
def _count_nonzero(x, dims):
    return np.asarray(np.count_nonzero(x, axis=dims), dtype=np.int64)


def count_nonzero(input, dim=None):
    """Return the number of nonzero elements (over ``dim``) as int64."""
    dims = reduce_dims(dim, input._data.ndim)
    return dispatch(_count_nonzero, (input,), {"dims": dims or None})


# ------------------------------------------------------------------------------ norm


def _check_norm_input(x: Tensor, dtype) -> None:
    if not isinstance(x, Tensor):
        raise TypeError(
            "linalg_vector_norm(): argument 'input' (position 1) must be Tensor, not "
            f"{type(x).__name__}"
        )
    if not (x.dtype.is_floating_point or x.dtype.is_complex):
        raise RuntimeError(
            "linalg.vector_norm: Expected a floating point or complex tensor as input. Got "
            f"{_type_name(x.dtype)}"
        )
    if dtype is not None and not (dtype.is_floating_point or dtype.is_complex):
        raise RuntimeError(
            "linalg.vector_norm: dtype should be floating point or complex, but got "
            f"{_type_name(dtype)}"
        )
    if dtype is not None and dtype.is_complex != x.dtype.is_complex:
        kind = "complex" if x.dtype.is_complex else "real"
        raise RuntimeError(
            f"linalg.vector_norm: dtype should be {kind} for {kind} inputs, but got "
            f"{_type_name(dtype)}"
        )


def _np_vector_norm(x, ord, dims, keepdim, dtype):
    if dtype is not None:
        x = as_dtype(x, dtype.np)
    out_dt = np.abs(np.empty(0, x.dtype)).dtype
    x = upcast(x)
    a = np.abs(x) if x.dtype.kind == "c" or ord not in (2, 0) else x
    if ord == 2:
        r = np.sqrt(np.add.reduce(a * a, axis=dims, keepdims=keepdim))
    elif ord == math.inf:
        r = np.maximum.reduce(a, axis=dims, keepdims=keepdim)
    elif ord == -math.inf:
        r = np.minimum.reduce(a, axis=dims, keepdims=keepdim)
    elif ord == 0:
        r = np.count_nonzero(a, axis=dims, keepdims=keepdim)
    elif ord == 1:
        r = np.add.reduce(a, axis=dims, keepdims=keepdim)
    else:
        r = np.add.reduce(a**ord, axis=dims, keepdims=keepdim) ** (1.0 / ord)
    return as_dtype(r, out_dt)


@op("linalg_vector_norm", grad_fn="LinalgVectorNormBackward0", save=("self", "result"))
def _vector_norm(x, ord, dims, keepdim=False, dtype=None):
    return _np_vector_norm(x, ord, dims, keepdim, dtype)


@_vector_norm.backward
def _(ctx, g, ord, dims, keepdim=False, dtype=None):
    x, norm = ctx.saved_tensors
    shape = tuple(x.shape)
    g, norm = restore(g, shape, dims, keepdim), restore(norm, shape, dims, keepdim)
    if ord == 0:
        return x * 0
    if ord == 1:
        return x.sgn() * g
    if ord == 2:
        return g * _where(norm == 0, 0, x / norm)
    if math.isinf(ord):
        ax = x.abs()
        mask = (ax == norm) | nan_mask(ax)
        return x.sgn() * ((g / mask.sum(dims, keepdim=True)) * mask)
    if ord < 1:
        scaled = x.sgn() * _where(x == 0, 0, x.abs() ** (ord - 1))
        return scaled * g * norm ** (1 - ord)
    scaled = x.sgn() * x.abs() ** (ord - 1) if ord < 2 else x * x.abs() ** (ord - 2)
    return scaled * _where(norm == 0, 0, g / norm ** (ord - 1))


def _where(cond, a, b):
    from ember._ops.pointwise import where

    return where(cond, a, b)


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None, out=None):
    """Return the vector ``ord``-norm of ``x`` over ``dim`` (all elements when None)."""
    dtype = _dtype_arg("linalg.vector_norm", dtype)
    if not isinstance(ord, (int, float, np.number)):
        raise TypeError(
            f"linalg_vector_norm(): argument 'ord' (position 2) must be Number, not "
            f"{type(ord).__name__}"
        )
    _no_bool_dims(dim, "linalg_vector_norm")
    _check_norm_input(x, dtype)
    ord = float(ord)
    nd = x._data.ndim
    dims = reduce_dims(dim, nd)
    if x._data.size == 0 and (ord < 0 or math.isinf(ord)):
        red = dims if dims else tuple(range(nd))
        if builtins.any(x._data.shape[d] == 0 for d in red) or not nd:
            raise RuntimeError(
                f"linalg.vector_norm cannot compute the {_ord_str(ord)} norm on an empty tensor "
                "because the operation does not have an identity"
            )
    if out is not None:
        check_out("linalg_vector_norm", out, (x,))
    res = dispatch(
        _vector_norm, (x,), {"ord": ord, "dims": dims, "keepdim": keepdim, "dtype": dtype}
    )
    if out is not None:
        if out.dtype is not res.dtype:
            raise out_dtype_error(res.dtype, out.dtype)
        return write_out(out, res)
    return res


def _ord_str(ord: float) -> str:
    # torch prints the order as a C++ double: -1.0 as "-1", -0.5 as "-0.5"
    if math.isinf(ord):
        return "inf" if ord > 0 else "-inf"
    return str(int(ord)) if ord.is_integer() else repr(ord)


def norm(input, p="fro", dim=None, keepdim=False, out=None, dtype=None):
    """Return the norm of ``input``: a vector norm (``p`` a number or 'fro'), or 'nuc'."""
    if isinstance(p, str):
        if p == "fro" and (dim is None or isinstance(dim, (int, np.integer)) or len(dim) <= 2):
            return vector_norm(input, 2, dim, keepdim, dtype=dtype, out=out)
        if dim is None:
            dim = tuple(range(input._data.ndim))
        elif isinstance(dim, (int, np.integer)):
            dim = (dim,)
        from ember._ops.linalg_norm import matrix_norm

        return matrix_norm(input, p, dim, keepdim, dtype=dtype, out=out)
    return vector_norm(input, 2.0 if p is None else p, dim, keepdim, dtype=dtype, out=out)


def _norm_method(self, p="fro", dim=None, keepdim=False, dtype=None):
    """Return the norm of the tensor (see :func:`norm`; the method's 4th argument is dtype)."""
    return norm(self, p, dim, keepdim, dtype=dtype)


# (each function's node: the whole-tensor op or the op over dims, by its arguments)
publish(_sum_dim, sum)
publish(_nansum, nansum)
publish(_mean_dim, mean)
publish(None, nanmean)
publish(_prod_dim, prod)
publish(_logsumexp, logsumexp)
publish(_all, all)
publish(_any, any)
publish(_count_nonzero, count_nonzero)
publish(_vector_norm, norm, method=_norm_method)

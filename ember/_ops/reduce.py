"""Reductions: sum and mean (the rest of the family arrives with the op library)."""

from __future__ import annotations

import numpy as np

from ember._core import dtype as D
from ember._core.tensor import Tensor, wrap_dim
from ember._ops.registry import dispatch, expose, op


def reduce_dims(dim, ndim: int) -> tuple:
    """Return ``dim`` (int, sequence, or None = all) as a sorted tuple of non-negative dims."""
    if dim is None:
        return tuple(range(ndim))
    if ndim == 0:  # a 0-d tensor reduces over dim 0 or -1 to itself
        for d in (dim,) if isinstance(dim, (int, np.integer)) else dim:
            wrap_dim(int(d), 0)
        return ()
    if isinstance(dim, (int, np.integer)):
        return (wrap_dim(int(dim), ndim),)
    dims = tuple(wrap_dim(int(d), ndim) for d in dim)
    if len(set(dims)) != len(dims):
        dup = next(d for d in dims if dims.count(d) > 1)
        raise RuntimeError(f"dim {dup} appears multiple times in the list of dims")
    return tuple(sorted(dims)) if dims else tuple(range(ndim))


def _sum_dtype(x: np.ndarray, dtype):
    if dtype is not None:
        return dtype.np
    if x.dtype.kind in "biu":
        return np.int64
    return x.dtype


def _expand_back(g: Tensor, shape: tuple, dims: tuple, keepdim: bool) -> Tensor:
    """Broadcast the gradient of a reduction over ``dims`` back to the input ``shape``."""
    if not keepdim and dims:
        g = g.reshape(tuple(1 if i in dims else s for i, s in enumerate(shape)))
    return g.expand(shape)


@op("sum", grad_fn="SumBackward0")
def _sum_all(x, dtype=None):
    return np.asarray(np.sum(x, dtype=_sum_dtype(x, dtype)))


@_sum_all.backward
def _(ctx, g, dtype=None):
    shape = ctx._input_meta[0][0]
    return g.expand(shape)


@op("sum", grad_fn="SumBackward1")
def _sum_dim(x, dims, keepdim=False, dtype=None):
    return np.asarray(np.sum(x, axis=dims, keepdims=keepdim, dtype=_sum_dtype(x, dtype)))


@_sum_dim.backward
def _(ctx, g, dims, keepdim=False, dtype=None):
    return _expand_back(g, ctx._input_meta[0][0], dims, keepdim)


def sum(input, dim=None, keepdim=False, *, dtype=None):  # noqa: A001 - torch.sum
    """Return the sum of all elements, or over ``dim`` (int or tuple) keeping dims if asked."""
    if dim is None:
        if keepdim:
            dims = tuple(range(input.ndim))
            return dispatch(_sum_dim, (input,), {"dims": dims, "keepdim": True, "dtype": dtype})
        return dispatch(_sum_all, (input,), {"dtype": dtype} if dtype is not None else {})
    dims = reduce_dims(dim, input.ndim)
    return dispatch(_sum_dim, (input,), {"dims": dims, "keepdim": keepdim, "dtype": dtype})


def _mean_check(x: np.ndarray, dtype) -> None:
    dt = dtype or D.FROM_NP[x.dtype]
    if not (dt.is_floating_point or dt.is_complex):
        from ember._ops.registry import _type_name

        raise RuntimeError(
            "mean(): could not infer output dtype. Input dtype must be either a floating point "
            f"or complex dtype. Got: {_type_name(dt)}"
        )


def _np_mean(x, dims, keepdim, dtype):
    _mean_check(x, dtype)
    if dtype is not None:
        x = x.astype(dtype.np)
    n = 1
    for d in dims if dims is not None else range(x.ndim):
        n *= x.shape[d]
    with np.errstate(all="ignore"):
        s = np.sum(x, axis=dims, keepdims=keepdim)
        return np.asarray(np.true_divide(s, n) if n else s * np.nan).astype(x.dtype, copy=False)


@op("mean", grad_fn="MeanBackward0")
def _mean_all(x, dtype=None):
    return _np_mean(x, None, False, dtype)


@_mean_all.backward
def _(ctx, g, dtype=None):
    shape = ctx._input_meta[0][0]
    return g.expand(shape) / max(int(np.prod(shape)), 1)


@op("mean", grad_fn="MeanBackward1")
def _mean_dim(x, dims, keepdim=False, dtype=None):
    return _np_mean(x, dims, keepdim, dtype)


@_mean_dim.backward
def _(ctx, g, dims, keepdim=False, dtype=None):
    shape = ctx._input_meta[0][0]
    n = 1
    for d in dims:
        n *= shape[d]
    return _expand_back(g, shape, dims, keepdim) / max(n, 1)


def mean(input, dim=None, keepdim=False, *, dtype=None):
    """Return the mean of all elements, or over ``dim`` (int or tuple)."""
    if dim is None and not keepdim:
        return dispatch(_mean_all, (input,), {"dtype": dtype} if dtype is not None else {})
    dims = reduce_dims(dim, input.ndim)
    return dispatch(_mean_dim, (input,), {"dims": dims, "keepdim": keepdim, "dtype": dtype})


expose(sum)
expose(mean)

"""Extrema: max, min (whole tensor, along a dim, or elementwise), amax, amin, aminmax, argmax,
argmin; and the gather/scatter pair that routes a selected value's gradient to its index.

Gradients follow torch: ``max()`` over the whole tensor and ``amax``/``amin`` share the gradient
evenly among tied elements; ``max(dim)`` sends it to the returned index (the first maximum).
"""

from __future__ import annotations

import numpy as np

from ember import return_types
from ember._core.tensor import Tensor, wrap_dim
from ember._ops.reduce import (
    _no_bool_dims,
    check_out,
    int_dim,
    nan_mask,
    reduce_dims,
    restore,
    save_outputs,
    write_out,
)
from ember._ops.registry import API, _type_name, dispatch, op, publish

# ------------------------------------------------------------------------------ gather / scatter
# ``take_along(x, idx)`` picks x at ``idx`` along ``dim``; ``put_along(g, idx)`` is its adjoint,
# summing ``g`` into zeros of the input's shape at ``idx``. Each is the other's backward, so the
# gradients of max(dim), median(dim), mode, cummax... are differentiable again.


def _along(a: np.ndarray, dim: int, keepdim: bool) -> np.ndarray:
    return a if keepdim else np.expand_dims(a, dim)


@op("gather", grad_fn="GatherBackward0", args=("self", "index"), save=("index",))
def _take_along(x, idx, dim, keepdim=True):
    if x.ndim == 0:
        return x.copy()
    r = np.take_along_axis(x, _along(idx, dim, keepdim), axis=dim)
    return r if keepdim else np.squeeze(r, dim)


@_take_along.backward
def _(ctx, g, dim, keepdim=True):
    (idx,) = ctx.saved_tensors
    return put_along(g, idx, dim, ctx._input_meta[0][0], keepdim), None


@op("scatter_add", grad_fn="ScatterAddBackward0", args=("self", "index"), save=("index",))
def _put_along(g, idx, dim, shape, keepdim=True):
    if not shape:
        return g.copy()
    g, idx = _along(g, dim, keepdim), _along(idx, dim, keepdim)
    out = np.zeros(shape, g.dtype)
    if idx.shape[dim] <= 1 or g.size == 0:  # one index per slice: a plain assignment
        np.put_along_axis(out, idx, g, axis=dim)
        return out
    # indices may repeat (cummax): accumulate with one bincount over flat positions
    n = shape[dim]
    gi = np.moveaxis(np.broadcast_to(g, idx.shape), dim, -1).reshape(-1, idx.shape[dim])
    ii = np.moveaxis(idx, dim, -1).reshape(gi.shape)
    flat = (ii + (np.arange(gi.shape[0]) * n)[:, None]).ravel()
    size = gi.shape[0] * n
    if g.dtype.kind == "c":
        acc = np.bincount(flat, gi.real.ravel(), size) + 1j * np.bincount(
            flat, gi.imag.ravel(), size
        )
    else:
        acc = np.bincount(flat, gi.ravel(), size)
    moved = np.moveaxis(out, dim, -1)
    moved[...] = acc.reshape(moved.shape)
    return out


@_put_along.backward
def _(ctx, g, dim, shape, keepdim=True):
    (idx,) = ctx.saved_tensors
    return take_along(g, idx, dim, keepdim), None


def take_along(x: Tensor, idx: Tensor, dim: int, keepdim: bool = True) -> Tensor:
    """Return ``x`` gathered at the int64 ``idx`` along ``dim`` (differentiable in ``x``)."""
    return dispatch(_take_along, (x, idx), {"dim": dim, "keepdim": keepdim})


def put_along(g: Tensor, idx: Tensor, dim: int, shape: tuple, keepdim: bool = True) -> Tensor:
    """Return zeros of ``shape`` with ``g`` summed in at ``idx`` along ``dim`` (differentiable)."""
    return dispatch(_put_along, (g, idx), {"dim": dim, "shape": tuple(shape), "keepdim": keepdim})


def value_selecting_backward(ctx, g: Tensor, dim: int, keepdim: bool) -> Tensor:
    """Backward of ops that select one element per slice and return its index (max(dim)...)."""
    (indices,) = ctx.saved_tensors
    shape = ctx._input_meta[0][0]
    return put_along(g, indices, dim, shape, keepdim)


def evenly_distribute_backward(g: Tensor, x: Tensor, value: Tensor) -> Tensor:
    """Share ``g`` equally among the elements of ``x`` equal to ``value`` (NaN counts as equal)."""
    from ember._ops.pointwise import where

    mask = nan_mask(x) if bool(np.isnan(value._data)) else x == value
    return where(mask, g / mask.sum(), 0)


def check_reduce_dim(fn: str, x: np.ndarray, dim: int) -> None:
    """Raise torch's IndexError when reducing over an empty ``dim`` with no identity."""
    if x.ndim and x.shape[dim] == 0:
        raise IndexError(f"{fn}(): Expected reduction dim {dim} to have non-zero size.")


def check_nonempty(fn: str, x: np.ndarray, cls=RuntimeError) -> None:
    if x.size == 0:
        tail = " Specify the reduction dim with the 'dim' argument." if cls is RuntimeError else ""
        raise cls(f"{fn}(): Expected reduction dim to be specified for input.numel() == 0.{tail}")


def _no_complex(fn: str, x: np.ndarray) -> None:
    if x.dtype.kind == "c":
        raise RuntimeError(f"{fn}(): does not support complex input")


# ------------------------------------------------------------------------------ max, min


def _extreme(fn: str, np_fn):
    def forward(x):
        _no_complex(fn, x)
        check_nonempty(fn, x)
        return np_fn(x, axis=None)

    return forward


_max_all = op("max", grad_fn="MaxBackward1", save=("self", "result"))(
    _extreme("max", np.maximum.reduce)
)
_min_all = op("min", grad_fn="MinBackward1", save=("self", "result"))(
    _extreme("min", np.minimum.reduce)
)


def _evenly(ctx, g):
    x, r = ctx.saved_tensors
    return evenly_distribute_backward(g, x, r)


_max_all.backward(_evenly)
_min_all.backward(_evenly)


def _extreme_dim(fn: str, arg_fn):
    def forward(x, dim, keepdim=False):
        _no_complex(fn, x)
        if x.ndim == 0:
            return x.copy(), np.zeros((), np.int64)
        check_reduce_dim(fn, x, dim)
        idx = arg_fn(x, axis=dim, keepdims=True)
        vals = np.take_along_axis(x, idx, axis=dim)
        if not keepdim:
            idx, vals = np.squeeze(idx, dim), np.squeeze(vals, dim)
        return vals, idx.astype(np.int64, copy=False)

    return forward


_IDX = ("indices",)  # what indexed_result saves after dispatch
_max_dim = op("max", grad_fn="MaxBackward0", nondiff_outputs=(1,), post_save=_IDX)(
    _extreme_dim("max", np.argmax)
)
_min_dim = op("min", grad_fn="MinBackward0", nondiff_outputs=(1,), post_save=_IDX)(
    _extreme_dim("min", np.argmin)
)


def _selected(ctx, g, _gi, dim, keepdim=False):
    return value_selecting_backward(ctx, g, dim, keepdim)


_max_dim.backward(_selected)
_min_dim.backward(_selected)


def indexed_result(op_, rtype, fn: str, input, dim, keepdim, out, extra=None):
    """Run an op returning (values, indices); save the indices for backward; honour ``out=``."""
    nd = input._data.ndim
    d = int_dim(fn, dim, nd)
    params = {"dim": d, "keepdim": keepdim}
    if extra:
        params.update(extra)
    if out is not None:
        check_out(fn, out, (input,), n=2)
    values, indices = dispatch(op_, (input,), params)
    save_outputs(values, indices)
    if out is not None:
        ov, oi = out
        if ov.dtype is not values.dtype:
            from ember._ops.reduce import out_dtype_error

            raise out_dtype_error(values.dtype, ov.dtype)
        if oi.dtype.name != "int64":
            from ember._ops.reduce import out_dtype_error

            raise out_dtype_error(indices.dtype, oi.dtype)
        write_out(ov, values)
        write_out(oi, indices)
        return getattr(return_types, rtype + "_out")((ov, oi))
    return getattr(return_types, rtype)((values, indices))


_NO_DIM = object()  # torch's max() overloads: no dim at all differs from dim=None


def _extremum(fn, all_op, dim_op, binary, input, dim, keepdim, out, other):
    if other is not None or isinstance(dim, Tensor):
        other = dim if other is None else other
        if out is not None:
            return API[binary](input, other, out=out)
        return API[binary](input, other)
    if dim is _NO_DIM:
        if keepdim:
            raise TypeError(
                f"{fn}() received an invalid combination of arguments - got (keepdim=bool), "
                "but expected one of: (int dim, bool keepdim = False)"
            )
        res = dispatch(all_op, (input,))
        if out is not None:
            check_out(fn, out, (input,))
            return write_out(out, res)
        return res
    return indexed_result(dim_op, fn, fn, input, dim, keepdim, out)


def max(input, dim=_NO_DIM, keepdim=False, *, out=None, other=None):  # noqa: A001 - torch.max
    """Return the largest element; with ``dim``, ``(values, indices)`` of the maxima along it
    (the first on ties); with a Tensor ``other``, the elementwise maximum."""
    return _extremum("max", _max_all, _max_dim, "maximum", input, dim, keepdim, out, other)


def min(input, dim=_NO_DIM, keepdim=False, *, out=None, other=None):  # noqa: A001 - torch.min
    """Return the smallest element; with ``dim``, ``(values, indices)`` of the minima along it
    (the first on ties); with a Tensor ``other``, the elementwise minimum."""
    return _extremum("min", _min_all, _min_dim, "minimum", input, dim, keepdim, out, other)


# ------------------------------------------------------------------------------ amax, amin


def _check_amax(fn: str, x: np.ndarray, dims: tuple, all_dims: bool) -> None:
    _no_complex(fn, x)
    if x.size == 0:
        if all_dims:
            check_nonempty(fn, x)
        for d in dims:
            check_reduce_dim(fn, x, d)


def _amax_forward(fn: str, np_fn):
    def forward(x, dims, keepdim=False, all_dims=False):
        _check_amax(fn, x, dims, all_dims)
        return np_fn(x, axis=dims, keepdims=keepdim)

    return forward


def scale_grad_by_count(g: Tensor, mask: Tensor, dims: tuple) -> Tensor:
    """Return ``g`` shared equally among the True elements of ``mask`` in each slice."""
    return (g / mask.sum(dims, keepdim=True)) * mask


def _amax_backward(ctx, g, dims, keepdim=False, all_dims=False):
    x, r = ctx.saved_tensors
    shape = tuple(x.shape)
    if not shape:
        return g
    mask = restore(r, shape, dims, keepdim) == x
    return scale_grad_by_count(restore(g, shape, dims, keepdim), mask, dims)


_amax = op("amax", grad_fn="AmaxBackward0", save=("self", "result"))(
    _amax_forward("amax", np.maximum.reduce)
)
_amin = op("amin", grad_fn="AminBackward0", save=("self", "result"))(
    _amax_forward("amin", np.minimum.reduce)
)
_amax.backward(_amax_backward)
_amin.backward(_amax_backward)


def _amax_like(fn, aop, input, dim, keepdim, out):
    nd = input._data.ndim
    _no_bool_dims(dim, fn)
    given = () if dim is None else (dim,) if isinstance(dim, (int, np.integer)) else tuple(dim)
    if input._data.size == 0 and nd:
        for d in given:  # torch names the dim as given, before checking the others
            if input._data.shape[wrap_dim(int(d), nd)] == 0:
                raise IndexError(f"{fn}(): Expected reduction dim {d} to have non-zero size.")
    dims = reduce_dims(dim, nd)
    all_dims = not given
    res = dispatch(aop, (input,), {"dims": dims, "keepdim": keepdim, "all_dims": all_dims})
    if out is None:
        return res
    check_out(fn, out, (input,))
    if out.dtype is not input.dtype:
        raise RuntimeError(
            f"Expected the dtype for input and out to match, but got {_type_name(input.dtype)} "
            f"for input's dtype and {_type_name(out.dtype)} for out's dtype."
        )
    return write_out(out, res)


def amax(input, dim=(), keepdim=False, *, out=None):
    """Return the maximum over ``dim`` (all dims when empty); the gradient is shared by ties."""
    return _amax_like("amax", _amax, input, dim, keepdim, out)


def amin(input, dim=(), keepdim=False, *, out=None):
    """Return the minimum over ``dim`` (all dims when empty); the gradient is shared by ties."""
    return _amax_like("amin", _amin, input, dim, keepdim, out)


@op("aminmax", grad_fn="AminmaxBackward0", post_save=("self", "min", "max"))
def _aminmax(x, dims, keepdim=False, by_dim=False):
    _no_complex("aminmax", x)
    if x.size == 0 and by_dim and x.shape[dims[0]] == 0:
        raise IndexError(f"aminmax: Expected reduction dim {dims[0]} to have non-zero size.")
    if x.size == 0 and not by_dim:
        raise RuntimeError(
            "aminmax(): cannot compute aminmax over an empty dimension as the operation has no "
            "identity."
        )
    return (
        np.asarray(np.minimum.reduce(x, axis=dims, keepdims=keepdim)),
        np.asarray(np.maximum.reduce(x, axis=dims, keepdims=keepdim)),
    )


@_aminmax.backward
def _(ctx, gmin, gmax, dims, keepdim=False, by_dim=False):
    x, rmin, rmax = ctx.saved_tensors
    shape = tuple(x.shape)
    red = dims if dims else tuple(range(len(shape)))
    res = None
    for g, r in ((gmin, rmin), (gmax, rmax)):
        if g is None:
            continue
        if not shape:
            part = g
        else:
            mask = restore(r, shape, red, keepdim) == x
            part = scale_grad_by_count(restore(g, shape, red, keepdim), mask, red)
        res = part if res is None else res + part
    return res


def aminmax(input, *, dim=None, keepdim=False, out=None):
    """Return ``(min, max)`` over ``dim`` (all elements when None)."""
    nd = input._data.ndim
    if dim is None:
        dims = tuple(range(nd))
    else:
        d = int_dim("aminmax", dim, nd)
        dims = (d,) if nd else ()
    if out is not None:
        check_out("aminmax", out, (input,), n=2)
    params = {"dims": dims, "keepdim": keepdim, "by_dim": dim is not None and nd > 0}
    mn, mx = dispatch(_aminmax, (input,), params)
    save_outputs(mn, input, mn, mx)
    if out is not None:
        write_out(out[0], mn)
        write_out(out[1], mx)
        return return_types.aminmax_out(tuple(out))
    return return_types.aminmax((mn, mx))


# ------------------------------------------------------------------------------ argmax, argmin


def _arg_forward(fn: str, np_fn):
    def forward(x, dim=None, keepdim=False):
        if x.dtype == np.bool_:
            raise RuntimeError(f"{fn}(): does not support bool input")
        _no_complex(fn, x)
        if dim is None:
            check_nonempty(fn, x, IndexError)
            r = np_fn(x)
            return np.full((1,) * x.ndim if keepdim else (), r, np.int64)
        if x.ndim == 0:
            return np.zeros((), np.int64)
        check_reduce_dim(fn, x, dim)
        return np.asarray(np_fn(x, axis=dim, keepdims=keepdim), np.int64)

    return forward


_argmax = op("argmax", differentiable=False)(_arg_forward("argmax", np.argmax))
_argmin = op("argmin", differentiable=False)(_arg_forward("argmin", np.argmin))


def _arg(fn, aop, input, dim, keepdim, out):
    if dim is not None and (isinstance(dim, bool) or not isinstance(dim, (int, np.integer))):
        int_dim(fn, dim, 0)  # torch's TypeError, before anything else
    if input.dtype.name == "bool":
        raise RuntimeError(f"{fn}(): does not support bool input")
    if dim is not None:
        dim = int_dim(fn, dim, input._data.ndim)
    res = dispatch(aop, (input,), {"dim": dim, "keepdim": keepdim})
    if out is None:
        return res
    check_out(fn, out, (input,), differentiable=False)
    if out.dtype.name != "int64":
        from ember._ops.reduce import out_dtype_error

        raise out_dtype_error(res.dtype, out.dtype)
    return write_out(out, res)


def argmax(input, dim=None, keepdim=False, *, out=None):
    """Return the index of the (first) maximum, flat or along ``dim``, as int64."""
    return _arg("argmax", _argmax, input, dim, keepdim, out)


def argmin(input, dim=None, keepdim=False, *, out=None):
    """Return the index of the (first) minimum, flat or along ``dim``, as int64."""
    return _arg("argmin", _argmin, input, dim, keepdim, out)


publish(_max_all, max)
publish(_min_all, min)
publish(_amax, amax)
publish(_amin, amin)
publish(_aminmax, aminmax)
publish(_argmax, argmax)
publish(_argmin, argmin)

"""Gather and scatter: gather, scatter (src, value, reduce=), scatter_add, index_select,
index_add, index_copy, index_fill, masked_fill, masked_scatter, masked_select, take,
take_along_dim, put, nonzero, argwhere.

Each op's backward is its adjoint written with these same ops (gather <-> scatter_add,
index_select <-> index_add, masked_select <-> masked_scatter, take <-> put), so double
backward works. Accumulation uses ``np.add.at`` and friends: no Python loop over elements.
"""

from __future__ import annotations

import warnings

import numpy as np

from ember._core import dtype as D
from ember._core.tensor import Tensor, _wrap, wrap_dim
from ember._ops.convert import scalar_value
from ember._ops.reduce import check_out, out_dtype_error, write_out
from ember._ops.registry import (
    AUTOCAST,
    _broadcast_error,
    _type_name,
    autocast_inputs,
    dispatch,
    dispatch_inplace,
    op,
    publish,
)

_INT64 = np.dtype(np.int64)
_UFUNC = {"sum": np.add, "add": np.add, "prod": np.multiply, "multiply": np.multiply}


def _zeros(shape, dtype) -> Tensor:
    return _wrap(np.zeros(shape, dtype))


def _out(fn: str, out, inputs: tuple, res: Tensor, differentiable: bool = True) -> Tensor:
    """Honour ``out=``: torch's checks, then copy ``res`` into ``out`` (resizing as torch)."""
    if out is None:
        return res
    check_out(fn, out, inputs, differentiable=differentiable)
    if out.dtype is not res.dtype:
        raise out_dtype_error(res.dtype, out.dtype)
    return write_out(out, res)


# ------------------------------------------------------------------------------ index checks


_INDEX = (np.dtype(np.int64), np.dtype(np.int32))
_CTYPE = {
    "Long": "long int",
    "Int": "int",
    "Short": "short int",
    "Char": "signed char",
    "Byte": "unsigned char",
    "Float": "float",
    "Double": "double",
    "Half": "c10::Half",
    "BFloat16": "c10::BFloat16",
}


def _check_index_dtype(fn: str, index: Tensor) -> None:
    if index._data.dtype not in _INDEX:
        raise RuntimeError(f"{fn}(): Expected dtype int32/int64 for index")


def _check_along(fn: str, x: Tensor, dim: int, index: Tensor, src: Tensor | None = None) -> int:
    """Check the shapes of a gather/scatter call; return ``dim`` wrapped."""
    _check_index_dtype(fn, index)
    xs, ixs = x._data.shape, index._data.shape
    dim = wrap_dim(dim, len(xs))
    if index._data.size == 0:
        return dim
    if max(len(ixs), 1) != max(len(xs), 1):
        raise RuntimeError("Index tensor must have the same number of dimensions as input tensor")
    if src is not None and max(src._data.ndim, 1) != max(len(xs), 1):
        raise RuntimeError("Index tensor must have the same number of dimensions as src tensor")
    for d, (n, m) in enumerate(zip(ixs, xs)):
        if d != dim and n > m:
            raise RuntimeError(
                f"Size does not match at dimension {d} expected index {list(ixs)} to be no "
                f"larger than self {list(xs)} apart from dimension {dim}"
            )
        if src is not None and n > src._data.shape[d]:
            raise RuntimeError(
                f"Size does not match at dimension {d} expected index {list(ixs)} to be no "
                f"larger than src {list(src._data.shape)}"
            )
    i = index._data
    size = xs[dim] if xs else 1
    bad = (i < 0) | (i >= size)  # torch does not wrap negative indices here
    if bad.any():
        v = int(i[bad].ravel()[0])
        raise RuntimeError(f"index {v} is out of bounds for dimension {dim} with size {size}")
    return dim


def _grid(idx: np.ndarray, dim: int) -> tuple:
    """Return the NumPy index addressing ``idx``'s positions with ``dim`` replaced by ``idx``."""
    ix = list(np.ogrid[tuple(slice(n) for n in idx.shape)])
    ix[dim] = idx
    return tuple(ix)


def _head(a: np.ndarray, shape: tuple) -> np.ndarray:
    # the leading block of ``a`` with ``shape`` (torch lets src/self exceed index's size)
    if a.ndim == 0:
        return a.reshape((1,) * len(shape)) if shape else a
    return a[tuple(slice(n) for n in shape)]


def _1d(a: np.ndarray) -> np.ndarray:
    return a.reshape(1) if a.ndim == 0 else a


# ------------------------------------------------------------------------------ gather


@op("gather", grad_fn="GatherBackward0", args=("self", "index"), save=("index",))
def _gather(x, idx, dim):
    shape = idx.shape
    x1, i1 = _1d(x), _1d(idx)
    if i1.size == 0:
        return np.zeros(shape, x.dtype)
    src = x1[tuple(slice(n) if d != dim else slice(None) for d, n in enumerate(i1.shape))]
    return np.take_along_axis(src, i1, axis=dim).reshape(shape)


@_gather.backward
def _(ctx, g, dim):
    (idx,) = ctx.saved_tensors
    shape, dt = ctx._input_meta[0]
    return dispatch(_scatter_add, (_zeros(shape, dt.np), idx, g), {"dim": dim}), None


def gather(input: Tensor, dim: int, index: Tensor, *, sparse_grad: bool = False, out=None):
    """Return the values of ``input`` at ``index`` along ``dim``."""
    dim = _check_along("gather", input, dim, index)
    return _out("gather", out, (input,), dispatch(_gather, (input, index), {"dim": dim}))


# ------------------------------------------------------------------------------ scatter


def _scatter_into(out, idx, src, dim, ufunc=None):
    if idx.size == 0:
        return out
    o1, i1 = _1d(out), _1d(idx)
    s = src if np.ndim(src) == 0 else _head(_1d(src), i1.shape)
    ix = _grid(i1, dim)
    if ufunc is None:
        o1[ix] = s
    else:
        ufunc.at(o1, ix, np.broadcast_to(s, i1.shape))
    return out


@op("scatter_add", grad_fn="ScatterAddBackward0", args=("self", "index"), save=("index",))
def _scatter_add(x, idx, src, dim):
    return _scatter_into(x.copy(), idx, src, dim, np.add)


@_scatter_add.backward
def _(ctx, g, dim):
    (idx,) = ctx.saved_tensors
    need = ctx.needs_input_grad
    return g if need[0] else None, None, _gather_src(g, idx, dim, ctx) if need[2] else None


def _gather_src(g: Tensor, idx: Tensor, dim: int, ctx) -> Tensor:
    # the gradient of a scattered src: g at idx, zero-padded where src exceeds idx
    gs = dispatch(_gather, (g, idx), {"dim": dim})
    shape = ctx._input_meta[2][0]
    if tuple(gs.shape) == tuple(shape):
        return gs
    return dispatch(_pad_to, (gs,), {"shape": shape})


@op("constant_pad_nd", grad_fn="ConstantPadNdBackward0")
def _pad_to(x, shape):
    out = np.zeros(shape, x.dtype)
    out[tuple(slice(n) for n in x.shape)] = x
    return out


@_pad_to.backward
def _(ctx, g, shape):
    sizes = ctx._input_meta[0][0]
    return dispatch(_head_op, (g,), {"shape": sizes})


@op("slice", grad_fn="SliceBackward0")
def _head_op(x, shape):
    return x[tuple(slice(n) for n in shape)].copy()


@_head_op.backward
def _(ctx, g, shape):
    return dispatch(_pad_to, (g,), {"shape": ctx._input_meta[0][0]})


@op("scatter", grad_fn="ScatterBackward0", args=("self", "index", "src"), save=("index",))
def _scatter_src(x, idx, src, dim):
    return _scatter_into(x.copy(), idx, src, dim)


@_scatter_src.backward
def _(ctx, g, dim):
    (idx,) = ctx.saved_tensors
    need = ctx.needs_input_grad
    gx = dispatch(_scatter_value, (g, idx), {"dim": dim, "value": 0}) if need[0] else None
    return gx, None, _gather_src(g, idx, dim, ctx) if need[2] else None


@op("scatter", grad_fn="ScatterBackward1", args=("self", "index"), save=("index",))
def _scatter_value(x, idx, dim, value):
    return _scatter_into(x.copy(), idx, np.asarray(value).astype(x.dtype), dim)


@_scatter_value.backward
def _(ctx, g, dim, value):
    (idx,) = ctx.saved_tensors
    return dispatch(_scatter_value, (g, idx), {"dim": dim, "value": 0}), None


@op("scatter", grad_fn="NotImplemented")
def _scatter_reduce_legacy(x, idx, src, dim, reduce):
    s = np.asarray(src).astype(x.dtype) if not isinstance(src, np.ndarray) else src
    return _scatter_into(x.copy(), idx, s, dim, _UFUNC[reduce])


@_scatter_reduce_legacy.backward
def _(ctx, g, dim, reduce, src=None):
    # torch's NotImplemented node: the legacy ``reduce=`` has no gradient
    raise RuntimeError("the derivative for 'scatter' with reduce= is not implemented")


SCATTER_REDUCE_DEPRECATED = (
    "The reduce argument of torch.scatter with Tensor src is deprecated and will be removed in a "
    "future PyTorch release. Use torch.scatter_reduce instead for more reduction options."
)
_WARNED_REDUCE: list = []


def _scatter_args(fn, input, dim, index, src, value, reduce):
    if src is None:
        src = value
    if isinstance(src, Tensor):
        dim = _check_along(fn, input, dim, index, src)
        if src.dtype is not input.dtype:
            raise RuntimeError("scatter(): Expected self.dtype to be equal to src.dtype")
    else:
        dim = _check_along(fn, input, dim, index)
    if reduce is not None and reduce not in ("add", "multiply"):
        raise RuntimeError(
            f"reduce argument must be either add or multiply. Got {reduce}"
            if not isinstance(src, Tensor)
            else "reduce argument must be either add or multiply."
        )
    if reduce is not None:
        if isinstance(src, Tensor) and not _WARNED_REDUCE:
            _WARNED_REDUCE.append(True)  # torch warns once per process
            warnings.warn(SCATTER_REDUCE_DEPRECATED, UserWarning, stacklevel=3)
        return _scatter_reduce_legacy, (input, index), {"dim": dim, "reduce": reduce}, src
    if isinstance(src, Tensor):
        return _scatter_src, (input, index, src), {"dim": dim}, None
    from ember._ops.convert import scalar_value

    scalar_value(src, input.dtype)  # a value input's dtype cannot hold raises, as torch's
    return _scatter_value, (input, index), {"dim": dim, "value": src}, None


def scatter(input: Tensor, dim: int, index: Tensor, src=None, *, value=None, reduce=None):
    """Return ``input`` with ``src`` (a tensor or a number) written at ``index`` along ``dim``."""
    o, ins, params, extra = _scatter_args("scatter", input, dim, index, src, value, reduce)
    if extra is not None:
        ins = ins + (extra,) if isinstance(extra, Tensor) else ins
        params = params if isinstance(extra, Tensor) else {**params, "src": extra}
    return dispatch(o, ins, params)


def scatter_(self: Tensor, dim: int, index: Tensor, src=None, *, value=None, reduce=None):
    """In-place version of :meth:`Tensor.scatter`."""
    o, ins, params, extra = _scatter_args("scatter_", self, dim, index, src, value, reduce)
    if extra is not None:
        ins = ins + (extra,) if isinstance(extra, Tensor) else ins
        params = params if isinstance(extra, Tensor) else {**params, "src": extra}
    return dispatch_inplace(o, self, ins, params)


def scatter_add(input: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    """Return ``input`` with ``src`` summed in at ``index`` along ``dim``."""
    dim = _check_along("scatter_add", input, dim, index, src)
    _same_dtype("scatter", input, src)
    return dispatch(_scatter_add, (input, index, src), {"dim": dim})


def scatter_add_(self: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    """In-place version of :meth:`Tensor.scatter_add`."""
    dim = _check_along("scatter_add_", self, dim, index, src)
    _same_dtype("scatter", self, src)
    return dispatch_inplace(_scatter_add, self, (self, index, src), {"dim": dim})


def _same_dtype(fn: str, x: Tensor, src: Tensor) -> None:
    if src.dtype is not x.dtype:
        raise RuntimeError(f"{fn}(): Expected self.dtype to be equal to src.dtype")


# ------------------------------------------------------------------------------ index_select


def _check_index_1d(fn: str, index: Tensor) -> None:
    if index._data.ndim > 1:
        raise IndexError(f"{fn}(): Index is supposed to be a vector")
    if index._data.dtype not in _INDEX:
        raise RuntimeError(f"{fn}(): Expected dtype int32 or int64 for index")


@op("index_select", grad_fn="IndexSelectBackward0", args=("self", "index"), save=("index",))
def _index_select(x, idx, dim):
    if x.ndim == 0:
        return x.copy()
    return np.take(_1d(x), idx.reshape(-1), axis=dim).reshape(
        x.shape[:dim] + (idx.size,) + x.shape[dim + 1 :] if x.ndim else idx.shape
    )


@_index_select.backward
def _(ctx, g, dim):
    (idx,) = ctx.saved_tensors
    shape, dt = ctx._input_meta[0]
    return dispatch(_index_add, (_zeros(shape, dt.np), idx, g), {"dim": dim, "alpha": 1}), None


def index_select(input: Tensor, dim: int, index: Tensor, *, out=None) -> Tensor:
    """Return the slices of ``input`` along ``dim`` at the entries of the vector ``index``."""
    _check_index_1d("index_select", index)
    dim = wrap_dim(dim, input._data.ndim)
    size = input._data.shape[dim] if input._data.ndim else 1
    i = index._data
    if i.size and ((i < 0) | (i >= size)).any():
        raise IndexError("index out of range in self")
    res = dispatch(_index_select, (input, index), {"dim": dim})
    return _out("index_select", out, (input,), res)


@op("index_add", grad_fn="IndexAddBackward0", args=("self", "index", "source"), save=("index",))
def _index_add(x, idx, src, dim, alpha):
    out = x.copy()
    o = np.moveaxis(_1d(out), dim, 0)
    s = np.moveaxis(_1d(src), dim, 0) if src.ndim else _1d(src)
    np.add.at(o, idx.reshape(-1), s * alpha if alpha != 1 else s)
    return out


@_index_add.backward
def _(ctx, g, dim, alpha):
    (idx,) = ctx.saved_tensors
    need = ctx.needs_input_grad
    gs = None
    if need[2]:
        gs = dispatch(_index_select, (g, idx), {"dim": dim})
        gs = gs * alpha if alpha != 1 else gs
        shape = ctx._input_meta[2][0]
        gs = gs.reshape(shape) if tuple(gs.shape) != tuple(shape) else gs
    return g if need[0] else None, None, gs


def _index_add_args(fn, input, dim, index, source):
    _check_index_1d(fn, index)
    dim = wrap_dim(dim, input._data.ndim)
    if source.dtype is not input.dtype:
        raise RuntimeError(
            f"{fn}(): self ({_type_name(input.dtype)}) and source "
            f"({_type_name(source.dtype)}) must have the same scalar type"
        )
    size = input._data.shape[dim] if input._data.ndim else 1
    i = index._data
    bad = (i < 0) | (i >= size)
    if i.size and bad.any():
        msg = (
            f"index {int(i[bad].ravel()[0])} is out of bounds for dimension {dim} with size {size}"
        )
        if fn.startswith("index_copy"):
            raise IndexError(f"index_copy_(): {msg}")
        raise RuntimeError(msg)
    xs, ss = input._data.shape, source._data.shape
    if fn.startswith("index_add") and max(len(xs), 1) == max(len(ss), 1) and len(xs):
        if any(a != b for d, (a, b) in enumerate(zip(xs, ss)) if d != dim):
            raise RuntimeError(
                "source tensor shape must match self tensor shape, excluding the specified "
                f"dimension. Got self.shape = {list(xs)} source.shape = {list(ss)}"
            )
        if ss[dim] != i.size:
            raise RuntimeError(
                f"index_add_(): Number of indices ({i.size}) should be equal to "
                f"source.size(dim): ({ss[dim]}), for dim: {dim}"
            )
    elif fn.startswith("index_add") and (ss or xs) and (len(ss) != len(xs) or i.size != 1):
        raise RuntimeError(
            "source tensor shape must match self tensor shape, excluding the specified "
            f"dimension. Got self.shape = {list(xs)} source.shape = {list(ss)}"
        )
    return dim


def index_add(input: Tensor, dim: int, index: Tensor, source: Tensor, *, alpha=1) -> Tensor:
    """Return ``input`` with ``alpha * source`` summed into the slices at ``index``."""
    dim = _index_add_args("index_add", input, dim, index, source)
    return dispatch(_index_add, (input, index, source), {"dim": dim, "alpha": alpha})


def index_add_(self: Tensor, dim: int, index: Tensor, source: Tensor, *, alpha=1) -> Tensor:
    """In-place version of :meth:`Tensor.index_add`."""
    dim = _index_add_args("index_add_", self, dim, index, source)
    return dispatch_inplace(_index_add, self, (self, index, source), {"dim": dim, "alpha": alpha})


@op("index_copy", grad_fn="IndexCopyBackward0", args=("self", "index", "source"), save=("index",))
def _index_copy(x, idx, src, dim):
    out = x.copy()
    o = np.moveaxis(_1d(out), dim, 0)
    o[idx.reshape(-1)] = np.moveaxis(_1d(src), dim, 0) if src.ndim else _1d(src)
    return out


@_index_copy.backward
def _(ctx, g, dim):
    (idx,) = ctx.saved_tensors
    need = ctx.needs_input_grad
    gx = dispatch(_index_fill, (g, idx), {"dim": dim, "value": 0}) if need[0] else None
    gs = None
    if need[2]:
        gs = dispatch(_index_select, (g, idx), {"dim": dim}).reshape(ctx._input_meta[2][0])
    return gx, None, gs


def _index_copy_args(fn, input, dim, index, source):
    dim = _index_add_args(fn, input, dim, index, source)
    xs, ss, n = input._data.shape, source._data.shape, index._data.size
    if len(xs) == len(ss) and xs:
        for d, (a, b) in enumerate(zip(xs, ss)):
            if d != dim and a != b:
                raise RuntimeError(
                    "index_copy_(): Source/destination tensor must have same slice shapes. "
                    f"Destination slice shape: {a} at dimension {dim} and source slice shape: "
                    f"{b} at dimension {dim}."
                )
        if ss[dim] != n:
            raise IndexError(
                f"index_copy_(): Number of indices ({n}) should be equal to source.size(dim) "
                f"({ss[dim]})"
            )
    if index._data.dtype != _INT64:
        raise RuntimeError(
            f"{fn}(): Expected a long tensor for index, but got {_type_name(index.dtype)}"
        )
    return dim


def index_copy(input: Tensor, dim: int, index: Tensor, source: Tensor) -> Tensor:
    """Return ``input`` with the slices of ``source`` copied to the entries ``index`` of ``dim``."""
    if AUTOCAST:
        input, index, source = autocast_inputs(_index_copy, (input, index, source))
    dim = _index_copy_args("index_copy", input, dim, index, source)
    return dispatch(_index_copy, (input, index, source), {"dim": dim})


def index_copy_(self: Tensor, dim: int, index: Tensor, source: Tensor) -> Tensor:
    """In-place version of :meth:`Tensor.index_copy`."""
    dim = _index_copy_args("index_copy_", self, dim, index, source)
    return dispatch_inplace(_index_copy, self, (self, index, source), {"dim": dim})


def _fill_slices(x, idx, dim, value):
    out = x.copy()
    np.moveaxis(_1d(out), dim, 0)[idx.reshape(-1)] = value
    return out


@op("index_fill", grad_fn="IndexFillBackward0", args=("self", "index"), save=("index",))
def _index_fill(x, idx, dim, value):
    return _fill_slices(x, idx, dim, np.asarray(value).astype(x.dtype))


@_index_fill.backward
def _(ctx, g, dim, value):
    (idx,) = ctx.saved_tensors
    return dispatch(_index_fill, (g, idx), {"dim": dim, "value": 0}), None


@op("index_fill", grad_fn="IndexFillBackward1", args=("self", "index"), save=("index",))
def _index_fill_t(x, idx, value, dim):
    return _fill_slices(x, idx, dim, value.astype(x.dtype))


@_index_fill_t.backward
def _(ctx, g, dim):
    (idx,) = ctx.saved_tensors
    need = ctx.needs_input_grad
    rest = dispatch(_index_fill, (g, idx), {"dim": dim, "value": 0})
    # the filled slices' gradient, each counted once however often ``index`` names it
    return rest if need[0] else None, None, (g - rest).sum() if need[2] else None


def _index_fill_args(fn, input, dim, index, value):
    if index._data.dtype != _INT64:
        raise IndexError(f"{fn}(): Expected dtype int64 for index.")
    if index._data.ndim > 1:
        raise IndexError(f"{fn}(): Index is supposed to be a vector")
    dim = wrap_dim(dim, input._data.ndim)
    size = input._data.shape[dim] if input._data.ndim else 1
    i = index._data
    if i.size and ((i < -size) | (i >= size)).any():
        v = int(i[(i < -size) | (i >= size)].ravel()[0])
        raise IndexError(f"index {v} is out of bounds for dimension {dim} with size {size}")
    if isinstance(value, Tensor):
        if value._data.ndim:
            raise RuntimeError(
                f"{fn} only supports a 0-dimensional value tensor, but got tensor with "
                f"{value._data.ndim} dimension(s)."
            )
        if not input.dtype.is_floating_point:
            _check_fill_value(value.item(), input.dtype)
        return _index_fill_t, (input, index, value), {"dim": dim}
    _check_fill_value(value, input.dtype)
    return _index_fill, (input, index), {"dim": dim, "value": value}


def index_fill(input: Tensor, dim: int, index: Tensor, value) -> Tensor:
    """Return ``input`` with ``value`` written into the slices at ``index`` along ``dim``."""
    o, ins, params = _index_fill_args("index_fill_", input, dim, index, value)
    return dispatch(o, ins, params)


def index_fill_(self: Tensor, dim: int, index: Tensor, value) -> Tensor:
    """In-place version of :meth:`Tensor.index_fill`."""
    o, ins, params = _index_fill_args("index_fill_", self, dim, index, value)
    return dispatch_inplace(o, self, ins, params)


# ------------------------------------------------------------------------------ masks


def _check_mask(fn: str, mask: Tensor) -> None:
    if mask.dtype is not D.bool:
        raise RuntimeError(
            f"{fn} only supports boolean masks, but got mask with dtype "
            f"{_CTYPE.get(_type_name(mask.dtype), str(mask.dtype))}"
        )


@op("masked_fill", grad_fn="MaskedFillBackward0", args=("self", "mask"), save=("mask",))
def _masked_fill(x, mask, value):
    return np.where(mask, np.asarray(value).astype(x.dtype), x)


@_masked_fill.backward
def _(ctx, g, value):
    (mask,) = ctx.saved_tensors
    return dispatch(_masked_fill, (g, mask), {"value": 0}), None


@op("masked_fill", grad_fn="MaskedFillBackward1", args=("self", "mask"), save=("mask",))
def _masked_fill_t(x, mask, value):
    return np.where(mask, value.astype(x.dtype), x)


@_masked_fill_t.backward
def _(ctx, g):
    (mask,) = ctx.saved_tensors
    need = ctx.needs_input_grad
    gx = dispatch(_masked_fill, (g, mask), {"value": 0}) if need[0] else None
    gv = dispatch(_masked_fill, (g, ~mask), {"value": 0}).sum() if need[2] else None
    return gx, None, gv


def _fill_args(fn, input, mask, value):
    _check_mask(fn, mask)
    if isinstance(value, Tensor):
        if value._data.ndim:
            raise RuntimeError(
                f"{fn} only supports a 0-dimensional value tensor, but got tensor with "
                f"{value._data.ndim} dimension(s)."
            )
        if not input.dtype.is_floating_point:
            _check_fill_value(value.item(), input.dtype)
        return _masked_fill_t, (input, mask, value), {}
    _check_fill_value(value, input.dtype)
    return _masked_fill, (input, mask), {"value": value}


def _check_fill_value(value, dt) -> None:
    # torch converts the fill value to the tensor's dtype, raising when it does not fit
    scalar_value(value, dt)


def masked_fill(input: Tensor, mask: Tensor, value) -> Tensor:
    """Return ``input`` with ``value`` where ``mask`` is True (``mask`` broadcasts)."""
    o, ins, params = _fill_args("masked_fill_", input, mask, value)
    try:
        return dispatch(o, ins, params)
    except RuntimeError as e:
        # torch broadcasts the mask first: its error names the mask as tensor a
        err = _broadcast_error((mask, input)) if "must match the size" in str(e) else None
        if err is None:
            raise
        raise err from None


def masked_fill_(self: Tensor, mask: Tensor, value) -> Tensor:
    """In-place version of :meth:`Tensor.masked_fill`."""
    o, ins, params = _fill_args("masked_fill_", self, mask, value)
    return dispatch_inplace(o, self, ins, params)


@op("masked_select", grad_fn="MaskedSelectBackward0", args=("self", "mask"), save=("mask",))
def _masked_select(x, mask):
    x, mask = np.broadcast_arrays(x, mask)
    return x[mask]


@_masked_select.backward
def _(ctx, g):
    (mask,) = ctx.saved_tensors
    shape, dt = ctx._input_meta[0]
    bshape = np.broadcast_shapes(shape, tuple(mask.shape))
    return dispatch(_masked_scatter, (_zeros(bshape, dt.np), mask, g)), None


def masked_select(input: Tensor, mask: Tensor, *, out=None) -> Tensor:
    """Return a 1-D tensor of the elements of ``input`` where ``mask`` is True."""
    if mask.dtype is not D.bool:
        raise RuntimeError("masked_select: expected BoolTensor for mask")
    return _out("masked_select", out, (input,), dispatch(_masked_select, (input, mask)))


@op(
    "masked_scatter",
    grad_fn="MaskedScatterBackward0",
    args=("self", "mask", "source"),
    save=("mask",),
)
def _masked_scatter(x, mask, src):
    out, m = np.broadcast_arrays(x, mask)
    out = out.copy()
    n = int(np.count_nonzero(m))
    if n > src.size:
        raise RuntimeError(
            "masked_scatter: expected source to have at least as many elements as ones in mask"
        )
    out[m] = src.reshape(-1)[:n]
    return out


@_masked_scatter.backward
def _(ctx, g):
    (mask,) = ctx.saved_tensors
    need = ctx.needs_input_grad
    gx = dispatch(_masked_fill, (g, mask), {"value": 0}) if need[0] else None
    gs = None
    if need[2]:
        shape = ctx._input_meta[2][0]
        sel = dispatch(_masked_select, (g, mask))
        gs = dispatch(_pad_to, (sel,), {"shape": (int(np.prod(shape)),)}).reshape(shape)
    return gx, None, gs


def masked_scatter(input: Tensor, mask: Tensor, source: Tensor) -> Tensor:
    """Return ``input`` with ``source``'s leading elements written where ``mask`` is True."""
    _check_mask("masked_scatter_", mask)
    if source.dtype is not input.dtype:
        raise RuntimeError(
            "masked_scatter: expected self and source to have same dtypes but got"
            f"{_type_name(input.dtype)} and {_type_name(source.dtype)}"
        )
    return dispatch(_masked_scatter, (input, mask, source))


def masked_scatter_(self: Tensor, mask: Tensor, source: Tensor) -> Tensor:
    """In-place version of :meth:`Tensor.masked_scatter`."""
    _check_mask("masked_scatter_", mask)
    if source.dtype is not self.dtype:
        raise RuntimeError(
            "masked_scatter_: expected self and source to have same dtypes but got"
            f"{_type_name(self.dtype)} and {_type_name(source.dtype)}"
        )
    return dispatch_inplace(_masked_scatter, self, (self, mask, source))


# ------------------------------------------------------------------------------ take / put


def _check_flat(fn: str, x: Tensor, index: Tensor) -> None:
    if index._data.dtype != _INT64:
        raise RuntimeError(
            f"{fn}(): Expected a long tensor for index, but got {_type_name(index.dtype)}"
        )
    n = x._data.size
    i = index._data
    if i.size and ((i < -n) | (i >= n)).any():
        v = int(i[(i < -n) | (i >= n)].ravel()[0])
        raise IndexError(f"out of range: tried to access index {v} on a tensor of {n} elements.")


@op("take", grad_fn="TakeBackward0", args=("self", "index"), save=("index",))
def _take(x, idx):
    return x.reshape(-1)[idx]


@_take.backward
def _(ctx, g):
    (idx,) = ctx.saved_tensors
    shape, dt = ctx._input_meta[0]
    return dispatch(_put, (_zeros(shape, dt.np), idx, g), {"accumulate": True}), None


def take(input: Tensor, index: Tensor) -> Tensor:
    """Return the elements of flattened ``input`` at ``index`` (shaped as ``index``)."""
    _check_flat("take", input, index)
    return dispatch(_take, (input, index))


@op("put", grad_fn="PutBackward0", args=("self", "index", "source"), save=("index",))
def _put(x, idx, src, accumulate=False):
    out = x.copy()
    flat = out.reshape(-1)
    if accumulate:
        np.add.at(flat, idx.reshape(-1), src.reshape(-1))
    else:
        flat[idx.reshape(-1)] = src.reshape(-1)
    return out


@_put.backward
def _(ctx, g, accumulate=False):
    (idx,) = ctx.saved_tensors
    need = ctx.needs_input_grad
    gx = None
    if need[0]:
        gx = (
            g
            if accumulate
            else dispatch(
                _put, (g, idx, _zeros(tuple(idx.shape), g.dtype.np)), {"accumulate": False}
            )
        )
    gs = dispatch(_take, (g, idx)).reshape(ctx._input_meta[2][0]) if need[2] else None
    return gx, None, gs


def _put_args(fn, x, index, source):
    _check_flat(fn, x, index)
    if source.dtype is not x.dtype:
        raise RuntimeError(
            f"{fn}(): self and source expected to have the same dtype, but got "
            f"self.dtype = {_type_name(x.dtype)} and source.dtype = {_type_name(source.dtype)}"
        )
    if index._data.size != source._data.size:
        raise IndexError(
            f"{fn}(): Expected source and index to have the same number of elements, but got "
            f"source.numel() = {source._data.size}, index.numel() = {index._data.size}"
        )


def put(input: Tensor, index: Tensor, source: Tensor, accumulate: bool = False) -> Tensor:
    """Return ``input`` with ``source`` written (or summed) at flat positions ``index``."""
    _put_args("put_", input, index, source)
    return dispatch(_put, (input, index, source), {"accumulate": bool(accumulate)})


def put_(self: Tensor, index: Tensor, source: Tensor, accumulate: bool = False) -> Tensor:
    """In-place version of :meth:`Tensor.put`."""
    _put_args("put_", self, index, source)
    return dispatch_inplace(_put, self, (self, index, source), {"accumulate": bool(accumulate)})


def take_along_dim(input: Tensor, indices: Tensor, dim: int | None = None, *, out=None) -> Tensor:
    """Return ``input`` gathered at ``indices`` along ``dim`` (broadcasting the other dims)."""
    if indices._data.dtype != _INT64:
        raise RuntimeError(
            f"torch.take_along_dim(): dtype of indices should be Long but got "
            f"{_type_name(indices.dtype)}"
        )
    if dim is None:
        return gather(input.reshape(-1), 0, indices.reshape(-1), out=out)
    if input._data.ndim != indices._data.ndim:
        raise RuntimeError(
            "torch.take_along_dim(): input and indices should have the same number of dimensions, "
            f"but got {input._data.ndim} dimensions for input, and {indices._data.ndim} "
            "dimensions for indices"
        )
    dim = wrap_dim(dim, input._data.ndim)
    xs, ixs = list(input._data.shape), list(indices._data.shape)
    xb, ib = list(xs), list(ixs)
    for d in range(len(xs)):
        if d == dim:
            continue
        n = np.broadcast_shapes((xs[d],), (ixs[d],))[0]
        xb[d] = ib[d] = n
    x = input if xb == xs else input.expand(*xb)
    i = indices if ib == ixs else indices.expand(*ib)
    return gather(x, dim, i, out=out)


# ------------------------------------------------------------------------------ nonzero


@op("nonzero", differentiable=False)
def _nonzero(x):
    return np.argwhere(x).astype(np.int64)


def nonzero(input: Tensor, *, out=None, as_tuple: bool = False):
    """Return the indices of the nonzero elements: an (n, ndim) int64 tensor, or a tuple of
    one 1-D tensor per dim with ``as_tuple=True``."""
    if as_tuple:
        a = input._data
        return tuple(_wrap(np.ascontiguousarray(i, np.int64)) for i in np.nonzero(_1d(a)))
    return _out("nonzero", out, (input,), dispatch(_nonzero, (input,)), differentiable=False)


def argwhere(input: Tensor) -> Tensor:
    """Return the indices of the nonzero elements of ``input`` as an (n, ndim) int64 tensor."""
    return dispatch(_nonzero, (input,))


publish(_gather, gather)
publish(_scatter_src, scatter, inplace=scatter_)
publish(_scatter_add, scatter_add, inplace=scatter_add_)
publish(_index_select, index_select)
publish(_index_add, index_add, inplace=index_add_)
publish(_index_copy, index_copy, inplace=index_copy_)
publish(_index_fill, index_fill, inplace=index_fill_)
publish(_masked_fill, masked_fill, inplace=masked_fill_)
publish(_masked_select, masked_select)
publish(_masked_scatter, masked_scatter, inplace=masked_scatter_)
publish(_take, take)
publish(_put, put, inplace=put_)
publish(None, take_along_dim)
publish(_nonzero, nonzero)
publish(_nonzero, argwhere)

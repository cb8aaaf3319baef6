"""Views that pick part of a tensor: ``select``, ``slice``/``narrow``, ``diagonal``, ``unfold``
and ``as_strided``, each with its backward (a zero tensor with the gradient written into the
picked part) and that backward's own backward."""

from __future__ import annotations

import operator

import numpy as np

from ember._core.storage import array_ptr as _ptr
from ember._core.storage import owner_of
from ember._core.tensor import wrap_dim
from ember._ops.registry import dispatch, op, publish
from ember._ops.strides import (
    _estrides,
    _select_array,
    _select_key,
    _sizes,
    _slice_array,
    _slice_key,
    _strided,
)


@op("select", grad_fn="SelectBackward0", view=True)
def _select(x, dim, index):
    return _select_array(x, dim, index)


@_select.backward
def _(ctx, g, dim, index):
    return dispatch(
        _select_backward, (g,), {"shape": ctx._input_meta[0][0], "dim": dim, "index": index}
    )


@op("select_backward", grad_fn="SelectBackwardBackward0")
def _select_backward(g, shape, dim, index):
    out = np.zeros(shape, dtype=g.dtype)
    out[_select_key(dim, index)] = g
    return out


# (the engine writes the gradient straight into a slice of the input's buffer when it can)
_select.node_cls._grad_slice = staticmethod(_select_key)


_select_backward.backward(lambda ctx, gg, shape, dim, index: gg.select(dim, index))


def select(input, dim: int, index: int):
    """Return a view of the slice of ``input`` at ``index`` along ``dim`` (dim removed)."""
    nd = input._data.ndim
    if nd == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    d = wrap_dim(dim, nd)
    n = input._data.shape[d]
    index = operator.index(index)
    if not -n <= index < n:
        raise IndexError(
            f"select(): index {index} out of range for tensor of size {list(input.shape)} at "
            f"dimension {dim}"
        )
    return dispatch(_select, (input,), {"dim": d, "index": index + n if index < 0 else index})


@op("slice", grad_fn="SliceBackward0", view=True)
def _slice(x, dim, start, end, step):
    return _slice_array(x, dim, start, end, step)


@_slice.backward
def _(ctx, g, dim, start, end, step):
    params = {"shape": ctx._input_meta[0][0], "dim": dim, "start": start, "end": end, "step": step}
    return dispatch(_slice_backward, (g,), params)


@op("slice_backward", grad_fn="SliceBackwardBackward0")
def _slice_backward(g, shape, dim, start, end, step):
    out = np.zeros(shape, dtype=g.dtype)
    out[_slice_key(dim, start, end, step)] = g
    return out


_slice.node_cls._grad_slice = staticmethod(_slice_key)


_slice_backward.backward(
    lambda ctx, gg, shape, dim, start, end, step: dispatch(
        _slice, (gg,), {"dim": dim, "start": start, "end": end, "step": step}
    )
)


def slice_dim(input, dim: int, start, end, step: int = 1):
    """Return a view of ``input[start:end:step]`` along ``dim`` (torch's ``slice`` op)."""
    if step <= 0:
        raise ValueError("step must be greater than zero")
    n = input._data.shape[dim]
    start, end, _ = slice(start, end, step).indices(n)
    end = max(end, start)
    return dispatch(_slice, (input,), {"dim": dim, "start": start, "end": end, "step": step})


def narrow(input, dim: int, start, length: int):
    """Return a view of ``length`` elements of ``input`` along ``dim`` from ``start``."""
    nd = input._data.ndim
    if nd == 0:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    length = operator.index(length)
    if length < 0:
        raise RuntimeError("narrow(): length must be non-negative.")
    d = wrap_dim(dim, nd)
    n = input._data.shape[d]
    start = operator.index(start)
    if not -n <= start <= n:
        raise IndexError(
            f"start out of range (expected to be in range of [{-n}, {n}], but got {start})"
        )
    if start < 0:
        start += n
    if start + length > n:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({n}).")
    return dispatch(_slice, (input,), {"dim": d, "start": start, "end": start + length, "step": 1})


# ------------------------------------------------------------------------------ diagonal, unfold


def _diagonal_geometry(shape, strides, offset, dim1, dim2):
    n1, n2 = shape[dim1], shape[dim2]
    if offset >= 0:
        length = max(min(n1, n2 - offset), 0)
        start = offset * strides[dim2]
    else:
        length = max(min(n1 + offset, n2), 0)
        start = -offset * strides[dim1]
    if length == 0:
        start = 0  # torch leaves the offset of an empty diagonal alone
    rest = [d for d in range(len(shape)) if d not in (dim1, dim2)]
    out_shape = tuple(shape[d] for d in rest) + (length,)
    out_strides = tuple(strides[d] for d in rest) + (strides[dim1] + strides[dim2],)
    return out_shape, out_strides, start


@op("diagonal", grad_fn="DiagonalBackward0", view=True)
def _diagonal(x, offset, dim1, dim2):
    shape, strides, start = _diagonal_geometry(x.shape, _estrides(x), offset, dim1, dim2)
    return _strided(x, shape, strides, start)


@_diagonal.backward
def _(ctx, g, offset, dim1, dim2):
    return dispatch(
        _diagonal_backward,
        (g,),
        {"shape": ctx._input_meta[0][0], "offset": offset, "dim1": dim1, "dim2": dim2},
    )


@op("diagonal_backward", grad_fn="DiagonalBackwardBackward0")
def _diagonal_backward(g, shape, offset, dim1, dim2):
    out = np.zeros(shape, dtype=g.dtype)
    _diagonal.forward(out, offset, dim1, dim2)[...] = g
    return out


_diagonal_backward.backward(
    lambda ctx, gg, shape, offset, dim1, dim2: diagonal(gg, offset, dim1, dim2)
)


def diagonal(input, offset: int = 0, dim1: int = 0, dim2: int = 1):
    """Return a view of the diagonal of ``input`` over ``dim1``/``dim2``, appended last."""
    nd = input._data.ndim
    d1, d2 = wrap_dim(dim1, nd), wrap_dim(dim2, nd)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    return dispatch(_diagonal, (input,), {"offset": offset, "dim1": d1, "dim2": d2})


@op("unfold", grad_fn="UnfoldBackward0", view=True)
def _unfold(x, dim, size, step):
    if x.ndim == 0:
        return _strided(x, (size,), (1,))
    shape, strides = list(x.shape), list(_estrides(x))
    shape[dim] = (shape[dim] - size) // step + 1
    stride = strides[dim]
    strides[dim] = stride * step
    return _strided(x, tuple(shape) + (size,), tuple(strides) + (stride,))


@_unfold.backward
def _(ctx, g, dim, size, step):
    return dispatch(
        _unfold_backward,
        (g,),
        {"shape": ctx._input_meta[0][0], "dim": dim, "size": size, "step": step},
    )


@op("unfold_backward", grad_fn="UnfoldBackwardBackward0")
def _unfold_backward(g, shape, dim, size, step):
    out = np.zeros(shape, dtype=g.dtype)
    if len(shape) == 0:
        out[...] = g.sum()
        return out
    n = g.shape[dim]
    for k in range(size):  # one strided add per window offset, never per element
        idx = (slice(None),) * dim + (slice(k, k + step * (n - 1) + 1, step),)
        out[idx] += g[..., k]
    return out


_unfold_backward.backward(lambda ctx, gg, shape, dim, size, step: gg.unfold(dim, size, step))


def unfold(self, dimension: int, size: int, step: int):
    """Return a view with all slices of length ``size`` (stride ``step``) along ``dimension``."""
    nd = self._data.ndim
    d = wrap_dim(dimension, nd)
    n = self._data.shape[d] if nd else 1
    if size > n:
        raise RuntimeError(f"maximum size for tensor at dimension {d} is {n} but size is {size}")
    if size < 0:
        raise RuntimeError(f"size is {size} but must be >= 0")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    return dispatch(_unfold, (self,), {"dim": d, "size": size, "step": step})


# ------------------------------------------------------------------------------ as_strided


def _positions(shape, strides, offset):
    pos = np.full(shape, offset, dtype=np.int64)
    for d, (n, s) in enumerate(zip(shape, strides)):
        pos += (np.arange(n, dtype=np.int64) * s).reshape((n,) + (1,) * (len(shape) - d - 1))
    return pos


@op("as_strided", grad_fn="AsStridedBackward0", view=True)
def _as_strided(x, size, stride, storage_offset, input_geometry):
    owner = owner_of(x)
    item = x.itemsize
    storage = owner.nbytes // item
    need = storage_offset + sum((n - 1) * s for n, s in zip(size, stride)) + 1
    if all(size) and need > storage:
        raise RuntimeError(
            f"setStorage: sizes {list(size)}, strides {list(stride)}, storage offset "
            f"{storage_offset}, and itemsize {item} requiring a storage size of {need * item} "
            f"are out of bounds for storage of size {storage * item}"
        )
    here = (_ptr(x) - _ptr(owner)) // item
    return _strided(x, size, stride, storage_offset - here)


@_as_strided.backward
def _(ctx, g, size, stride, storage_offset, input_geometry):
    # scatter-add the gradient into a flat storage, then read the input's elements back out
    in_pos = _positions(*input_geometry)
    out_pos = _positions(size, stride, storage_offset)
    storage = int(max(in_pos.max(initial=0), out_pos.max(initial=0))) + 1
    return dispatch(_as_strided_backward, (g,), {"geometry": (in_pos, out_pos, storage)})


@op("as_strided_backward", grad_fn="AsStridedBackwardBackward0")
def _as_strided_backward(g, geometry):
    in_pos, out_pos, storage = geometry
    acc = np.zeros(storage, dtype=g.dtype)
    np.add.at(acc, out_pos, g)
    return acc[in_pos]


_as_strided_backward.backward(
    lambda ctx, gg, geometry: dispatch(
        _as_strided_backward, (gg,), {"geometry": (geometry[1], geometry[0], geometry[2])}
    )
)


def as_strided(input, size, stride, storage_offset=None):
    """Return a view of ``input``'s storage with the given size, strides and offset."""
    size, stride = _sizes((size,)), _sizes((stride,))
    if len(size) != len(stride):
        raise RuntimeError("mismatch in length of strides and shape")
    if any(s < 0 for s in stride):
        raise RuntimeError(
            f"as_strided: Negative strides are not supported at the moment, got strides: "
            f"{list(stride)}"
        )
    here = input.storage_offset()
    off = here if storage_offset is None else operator.index(storage_offset)
    if off < 0:
        raise RuntimeError(f"Tensor: invalid storage offset {off}")
    params = {
        "size": size,
        "stride": stride,
        "storage_offset": off,
        # where the input's elements sit in the storage, for the backward (and its replays)
        "input_geometry": (input._data.shape, input.stride(), here),
    }
    return dispatch(_as_strided, (input,), params)


for _op, _f in ((_unfold, unfold),):
    publish(_op, _f, function=False)
for _op, _f in (
    (_select, select),
    (None, narrow),
    (_diagonal, diagonal),
    (_as_strided, as_strided),
):
    publish(_op, _f)

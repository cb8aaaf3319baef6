"""Indexing: ``Tensor.__getitem__`` and ``__setitem__``.

Basic indices (ints, slices, None, Ellipsis) become a chain of view ops, one per indexed dim,
exactly as torch applies them (so ``x[0, 1:]`` is a SliceBackward0 over a SelectBackward0).
Advanced indices (integer or boolean tensors, lists, arrays) give copies through ``index``;
assignment writes through views (``copy_`` on the indexed view) or through ``index_put_``.
"""

from __future__ import annotations

import numpy as np

from ember._core.tensor import Tensor, _wrap
from ember._ops.registry import dispatch, dispatch_inplace, op
from ember._ops.shape import _alias, select, slice_dim, unsqueeze

_BASIC = (int, slice, type(None), type(Ellipsis))


def _is_int_scalar_tensor(i) -> bool:
    return isinstance(i, Tensor) and i._data.ndim == 0 and i.dtype.np.kind in "iu"


def _normalize(index) -> tuple:
    if not isinstance(index, tuple):
        index = (index,)
    out = []
    for i in index:
        if _is_int_scalar_tensor(i):
            i = int(i._data)
        elif isinstance(i, np.integer):
            i = int(i)
        out.append(i)
    return tuple(out)


def _is_basic(index: tuple) -> bool:
    for i in index:
        if type(i) not in _BASIC:
            return False
    return True


def _expand_ellipsis(index: tuple, ndim: int) -> tuple:
    consumed = sum(1 for i in index if i is not None and i is not Ellipsis)
    if consumed > ndim:
        raise IndexError(f"too many indices for tensor of dimension {ndim}")
    n_ell = sum(1 for i in index if i is Ellipsis)
    if n_ell > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if n_ell == 0:
        return index
    k = index.index(Ellipsis)
    return index[:k] + (slice(None),) * (ndim - consumed) + index[k + 1 :]


def _basic_getitem(self: Tensor, index: tuple, single_slice: bool) -> Tensor:
    index = _expand_ellipsis(index, self._data.ndim)
    t = self
    dim = 0
    for i in index:
        if i is None:
            t = unsqueeze(t, dim)
            dim += 1
        elif type(i) is int:
            n = t._data.shape[dim]
            if not -n <= i < n:
                raise IndexError(f"index {i} is out of bounds for dimension {dim} with size {n}")
            t = select(t, dim, i)
        elif type(i) is slice:
            if single_slice or i != slice(None):
                step = 1 if i.step is None else i.step
                t = slice_dim(t, dim, i.start, i.stop, step)
            dim += 1
    if t is self:
        t = dispatch(_alias, (self,))
    return t


def _to_index_array(i, dim_size=None):
    if isinstance(i, Tensor):
        a = i._data
        if a.dtype.kind not in "biu":
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
        return a
    if isinstance(i, (list, tuple)):
        if any(isinstance(e, Tensor) for e in i):
            i = [e._data if isinstance(e, Tensor) else e for e in i]
        a = np.asarray(i)
        if a.size == 0:
            a = a.astype(np.int64)
        if a.dtype.kind not in "biu":
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
        return a
    if isinstance(i, np.ndarray):
        return i
    if type(i) is bool:
        return np.asarray(i)
    return i


def _advanced_index(self: Tensor, index: tuple) -> tuple:
    """Return ``index`` as a NumPy index with bool masks turned into integer arrays."""
    index = tuple(_to_index_array(i) for i in index)
    ndim = self._data.ndim
    out = []
    dim = 0
    consumed = sum(
        (i.ndim if isinstance(i, np.ndarray) and i.dtype == np.bool_ else 1)
        for i in index
        if i is not None and i is not Ellipsis
    )
    if consumed > ndim:
        raise IndexError(f"too many indices for tensor of dimension {ndim}")
    for i in index:
        if i is Ellipsis:
            out.append(i)
            dim += ndim - consumed
        elif isinstance(i, np.ndarray) and i.dtype == np.bool_ and i.ndim > 0:
            shp = self._data.shape[dim : dim + i.ndim]
            if i.shape != shp:
                for k, (a, b) in enumerate(zip(i.shape, shp)):
                    if a != b:
                        raise IndexError(
                            f"The shape of the mask {list(i.shape)} at index {k} does not match "
                            f"the shape of the indexed tensor {list(shp)} at index {k}"
                        )
            out.extend(np.nonzero(i))
            dim += i.ndim
        else:
            if isinstance(i, np.ndarray) and i.dtype.kind in "iu":
                n = self._data.shape[dim]
                if i.size and (i.max() >= n or i.min() < -n):
                    bad = int(i.max()) if i.max() >= n else int(i.min())
                    raise IndexError(
                        f"index {bad} is out of bounds for dimension {dim} with size {n}"
                    )
            out.append(i)
            if i is not None:
                dim += 1
    return tuple(out)


@op("index", grad_fn="IndexBackward0")
def _index(x, idx):
    return x[idx]


@_index.backward
def _(ctx, g, idx):
    return dispatch(_index_backward, (g,), {"shape": ctx._input_meta[0][0], "idx": idx})


@op("index_backward", grad_fn="IndexPutBackward0")
def _index_backward(g, shape, idx):
    out = np.zeros(shape, dtype=g.dtype)
    np.add.at(out, idx, g)
    return out


_index_backward.backward(lambda ctx, gg, shape, idx: dispatch(_index, (gg,), {"idx": idx}))


def getitem(self: Tensor, index) -> Tensor:
    """``self[index]``: a view for basic indices, a copy for advanced ones."""
    single_slice = type(index) is slice
    index = _normalize(index)
    if _is_basic(index):
        return _basic_getitem(self, index, single_slice)
    if self._data.ndim == 0 and not all(
        i is None or i is Ellipsis or type(i) is bool for i in index
    ):
        raise IndexError(
            "invalid index of a 0-dim tensor. Use `tensor.item()` in Python or "
            "`tensor.item<T>()` in C++ to convert a 0-dim tensor to a number"
        )
    return dispatch(_index, (self,), {"idx": _advanced_index(self, index)})


@op("index_put_", grad_fn="IndexPutBackward0")
def _index_put(x, v, idx, accumulate=False):
    out = x.copy()
    if accumulate:
        np.add.at(out, idx, v)
    else:
        out[idx] = v
    return out


@_index_put.backward
def _(ctx, g, idx, accumulate=False):
    need = ctx.needs_input_grad
    gx = dispatch(_index_put, (g, 0.0), {"idx": idx}) if need[0] and not accumulate else g
    gv = dispatch(_index, (g,), {"idx": idx}) if need[1] else None
    return (gx if need[0] else None), gv


def _value_tensor(self: Tensor, value) -> Tensor:
    if isinstance(value, Tensor):
        return value
    if isinstance(value, (list, tuple)) or (isinstance(value, np.ndarray) and value.ndim):
        return _wrap(np.asarray(value).astype(self.dtype.np))
    return _wrap(
        np.asarray(value, dtype=self.dtype.np)
        if not isinstance(value, bool)
        else np.asarray(value).astype(self.dtype.np)
    )


def setitem(self: Tensor, index, value) -> None:
    """``self[index] = value``: writes through (views share the write)."""
    single_slice = type(index) is slice
    index = _normalize(index)
    value = _value_tensor(self, value)
    if _is_basic(index):
        target = _basic_getitem(self, index, single_slice)
        target.copy_(value)
        return
    idx = _advanced_index(self, index)
    dispatch_inplace(_index_put, self, (self, value), {"idx": idx})


def index_put_(self: Tensor, indices, values, accumulate: bool = False) -> Tensor:
    """Write ``values`` into ``self`` at ``indices`` (a tuple of index tensors); return self."""
    idx = _advanced_index(self, tuple(indices))
    return dispatch_inplace(
        _index_put, self, (self, values), {"idx": idx, "accumulate": accumulate}
    )


Tensor.__getitem__ = getitem
Tensor.__setitem__ = setitem
Tensor.index_put_ = index_put_

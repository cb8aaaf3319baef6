"""``index_reduce`` (and in place: ``prod``/``mean``/``amax``/``amin`` of ``source`` rows
into ``input`` at ``index``) and ``nonzero_static`` (``nonzero`` padded to a fixed size)."""

from __future__ import annotations

import numpy as np

from ember._core import dtype as D
from ember._core.tensor import Tensor, _wrap, wrap_dim
from ember._ops.registry import dispatch, dispatch_inplace, op, publish


def nonzero_static(input: Tensor, *, size: int, fill_value: int = -1) -> Tensor:
    """Return the indices of nonzero elements, truncated or padded with ``fill_value`` to
    exactly ``size`` rows."""
    size = int(size)
    if size < 0:
        raise RuntimeError(
            f"nonzero_static: 'size' must be an non-negative integer, but got {size}"
        )
    a = input._data
    idx = np.argwhere(a)[:size]
    out = np.full((size, a.ndim), fill_value, dtype=np.int64)
    out[: len(idx)] = idx
    return _wrap(out)


_INDEX_REDUCE = ("prod", "mean", "amax", "amin")


def _index_reduce_args(fn, input, dim, index, source, reduce):
    if reduce not in _INDEX_REDUCE:
        raise RuntimeError(
            f"{fn}(): Expected reduce to be one of prod, mean, amax or amin but got {reduce}."
        )
    nd = input._data.ndim
    d = wrap_dim(dim, max(nd, 1))
    if index._data.ndim > 1:
        raise IndexError("index_reduce_(): Index is supposed to be a vector")
    if index.dtype not in (D.int64, D.int32):
        raise RuntimeError("index_reduce_(): Expected dtype int32/int64 for index")
    if source.dtype is not input.dtype:
        raise RuntimeError(
            f"{fn}(): self ({D.scalar_type_name(input.dtype)}) and source "
            f"({D.scalar_type_name(source.dtype)}) must have the same scalar type"
        )
    if source._data.ndim != nd or (nd and source._data.shape[d] != index._data.size):
        raise RuntimeError(
            f"{fn}(): Expected source to have the same number of dimensions as self and "
            f"source.size(dim) == index.numel()"
        )
    # index_reduce is scatter_reduce with the index spread across ``source``'s other dims
    shape = [1] * max(nd, 1)
    shape[d] = -1
    idx = np.broadcast_to(index._data.astype(np.int64).reshape(shape), source._data.shape)
    return d, _wrap(np.ascontiguousarray(idx))


def _index_reduce_op():
    # scatter_reduce's forward and backward (the index spread over ``source``), under torch's
    # grad_fn name for index_reduce
    from ember._ops.scatter_reduce import _scatter_reduce as sr

    o = op(
        "index_reduce",
        grad_fn="IndexReduceBackward0",
        args=("self", "index", "source"),
        save=("self", "index", "source", "result"),
    )(sr.forward)
    o.backward(sr.backward_fn)
    return o


_index_reduce = _index_reduce_op()


def index_reduce(
    input: Tensor, dim: int, index: Tensor, source: Tensor, reduce: str, *, include_self=True
) -> Tensor:
    """Return ``input`` with the slices of ``source`` reduced (prod, mean, amax, amin) into
    the slices ``index`` names along ``dim``."""
    d, idx = _index_reduce_args("index_reduce", input, dim, index, source, reduce)
    params = {"dim": d, "reduce": reduce, "include_self": bool(include_self)}
    return dispatch(_index_reduce, (input, idx, source), params)


def index_reduce_(
    self: Tensor, dim: int, index: Tensor, source: Tensor, reduce: str, *, include_self=True
) -> Tensor:
    """In-place version of :meth:`Tensor.index_reduce`; return ``self``."""
    d, idx = _index_reduce_args("index_reduce_", self, dim, index, source, reduce)
    params = {"dim": d, "reduce": reduce, "include_self": bool(include_self)}
    return dispatch_inplace(_index_reduce, self, (self, idx, source), params)


publish(None, index_reduce_, function=False)
for _f in (nonzero_static, index_reduce):
    publish(None, _f)

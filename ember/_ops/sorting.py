"""Sorting and searching: sort, argsort, msort, topk, kthvalue, unique, unique_consecutive,
searchsorted, bucketize, histc, bincount.

Every sort is NumPy's stable sort, so ties keep their input order (torch's ``stable=True``;
torch's default CPU sort is free to order ties otherwise). NaN sorts as the largest value.
The gradients of sort, topk and kthvalue route ``g`` back to the selected indices with
``scatter_add`` (whose backward is ``gather``), so double backward works.
"""

from __future__ import annotations

import numpy as np

from ember import return_types
from ember._core.tensor import Tensor, _wrap, wrap_dim
from ember._ops.gather_scatter import _scatter_add
from ember._ops.reduce import check_out, out_dtype_error, write_out
from ember._ops.registry import _type_name, dispatch, op, publish


def _argsort(x: np.ndarray, dim: int, descending: bool) -> np.ndarray:
    """Return the stable ascending (or descending, ties still in input order) sort order."""
    if not descending:
        return np.argsort(x, axis=dim, kind="stable")
    # descending and stable: sort the reversed array ascending, reverse, map indices back
    n = x.shape[dim]
    rev = np.flip(x, dim)
    order = np.flip(np.argsort(rev, axis=dim, kind="stable"), dim)
    return (n - 1) - order


def _sort_forward(x, dim, descending):
    if x.ndim == 0:
        return x.copy(), np.zeros((), np.int64)
    order = _argsort(x, dim, descending)
    return np.take_along_axis(x, order, axis=dim), order.astype(np.int64)


@op("sort", grad_fn="SortBackward0", nondiff_outputs=(1,), post_save=("indices",))
def _sort(x, dim, descending):
    return _sort_forward(x, dim, descending)


@op("sort", grad_fn="SortBackward1", nondiff_outputs=(1,), post_save=("indices",))
def _sort_stable(x, dim, descending):
    return _sort_forward(x, dim, descending)


def _check_dim(x: Tensor, dim: int) -> int:
    return wrap_dim(dim, x._data.ndim)


_NO_STABLE = object()


def _out(fn: str, out, inputs: tuple, res: Tensor, differentiable: bool = True) -> Tensor:
    """Honour ``out=``: torch's checks, then copy ``res`` into ``out`` (resizing as torch)."""
    if out is None:
        return res
    check_out(fn, out, inputs, differentiable=differentiable)
    if out.dtype is not res.dtype:
        raise out_dtype_error(res.dtype, out.dtype)
    return write_out(out, res)


def _out2(fn: str, rtype: str, out, input: Tensor, values: Tensor, indices: Tensor):
    """Return the named (values, indices); with ``out=``, written into the given pair."""
    if out is None:
        return getattr(return_types, rtype)((values, indices))
    check_out(fn, out, (input,), n=2)
    ov, oi = out
    for o, r in ((ov, values), (oi, indices)):
        if o.dtype is not r.dtype:
            raise out_dtype_error(r.dtype, o.dtype)
    write_out(ov, values)
    write_out(oi, indices)
    return getattr(return_types, rtype + "_out")((ov, oi))


def argsort(input: Tensor, dim: int = -1, descending: bool = False, stable: bool = False):
    """Return the indices that sort ``input`` along ``dim`` (int64)."""
    dim = _check_dim(input, dim)
    return dispatch(_argsort_op, (input,), {"dim": dim, "descending": bool(descending)})


@op("argsort", differentiable=False)
def _argsort_op(x, dim, descending):
    if x.ndim == 0:
        return np.zeros((), np.int64)
    return _argsort(x, dim, descending).astype(np.int64)


def msort(input: Tensor, *, out=None) -> Tensor:
    """Return ``input`` sorted along its first dim."""
    return _out("msort", out, (input,), sort(input, 0).values)


# ------------------------------------------------------------------------------ topk, kthvalue


@op("topk", grad_fn="TopkBackward0", nondiff_outputs=(1,), post_save=("indices",))
def _topk(x, k, dim, largest):
    if x.ndim == 0:
        return x.copy(), np.zeros((), np.int64)
    order = _argsort(x, dim, largest)
    order = np.take(order, np.arange(k), axis=dim)
    return np.take_along_axis(x, order, axis=dim), order.astype(np.int64)


@op("kthvalue", grad_fn="KthvalueBackward0", nondiff_outputs=(1,), post_save=("indices",))
def _kthvalue(x, k, dim, keepdim):
    if x.ndim == 0:
        return x.copy(), np.zeros((), np.int64)
    order = np.take(_argsort(x, dim, False), [k - 1], axis=dim)
    values = np.take_along_axis(x, order, axis=dim)
    if not keepdim:
        values, order = np.squeeze(values, dim), np.squeeze(order, dim)
    return values, order.astype(np.int64)


def _index_backward(ctx, g, gi, dim, keepdim=True, **_):
    # g flows to the selected positions (indices never repeat along dim), through scatter_add
    # whose backward is gather: double backward works
    (idx,) = ctx.saved_tensors
    shape, dt = ctx._input_meta[0]
    if not shape:
        return g.reshape(())
    if not keepdim:
        g, idx = g.unsqueeze(dim), idx.unsqueeze(dim)
    zeros = _wrap(np.zeros(shape, dt.np))
    return dispatch(_scatter_add, (zeros, idx, g), {"dim": dim})


for _o in (_sort, _sort_stable, _topk, _kthvalue):
    _o.backward(_index_backward)


def _remember(values: Tensor, indices: Tensor) -> None:
    # the table saves inputs or a single result; these ops save their indices output by hand
    node = values.grad_fn
    if node is not None:
        node._saved = (indices,)


def _sort_dispatch(o, input, params):
    values, indices = dispatch(o, (input,), params)
    _remember(values, indices)
    return values, indices


def sort(input: Tensor, dim: int = -1, descending: bool = False, stable=_NO_STABLE, *, out=None):
    """Return ``(values, indices)`` of ``input`` sorted along ``dim`` (ties in input order)."""
    dim = _check_dim(input, dim)
    o = _sort if stable is _NO_STABLE else _sort_stable
    values, indices = _sort_dispatch(o, input, {"dim": dim, "descending": bool(descending)})
    return _out2("sort", "sort", out, input, values, indices)


def topk(
    input: Tensor, k: int, dim: int = -1, largest: bool = True, sorted: bool = True, *, out=None
):
    """Return ``(values, indices)`` of the ``k`` largest (or smallest) elements along ``dim``."""
    dim = _check_dim(input, dim)
    n = input._data.shape[dim] if input._data.ndim else 1
    if not 0 <= k <= n:
        raise RuntimeError("selected index k out of range")
    params = {"k": int(k), "dim": dim, "largest": bool(largest)}
    return _out2("topk", "topk", out, input, *_sort_dispatch(_topk, input, params))


def kthvalue(input: Tensor, k: int, dim: int = -1, keepdim: bool = False, *, out=None):
    """Return ``(values, indices)`` of the ``k``-th smallest element along ``dim``."""
    dim = _check_dim(input, dim)
    n = input._data.shape[dim] if input._data.ndim else 1
    if not 1 <= k <= n:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {dim}")
    params = {"k": int(k), "dim": dim, "keepdim": bool(keepdim)}
    return _out2("kthvalue", "kthvalue", out, input, *_sort_dispatch(_kthvalue, input, params))


# ------------------------------------------------------------------------------ unique


def _unique_not_differentiable(name: str):
    def backward(ctx, *grads, **params):
        raise NotImplementedError(f"the derivative for '{name}' is not implemented.")

    return backward


# torch records these nodes (the values require grad) but has no derivative for them
@op("unique", grad_fn="Unique2Backward0", nondiff_outputs=(1, 2))
def _unique(a):
    values, inverse, counts = np.unique(a, return_inverse=True, return_counts=True)
    return values, inverse.reshape(a.shape).astype(np.int64), counts.astype(np.int64)


@op("unique_dim", grad_fn="UniqueDimBackward0", nondiff_outputs=(1, 2))
def _unique_dim(a, dim):
    # torch works on ``dim`` moved first and moves it back: its result's strides show it
    moved = np.ascontiguousarray(np.moveaxis(a, dim, 0))
    values, inverse, counts = np.unique(moved, return_inverse=True, return_counts=True, axis=0)
    values = np.moveaxis(np.ascontiguousarray(values), 0, dim)
    return values, inverse.reshape(-1).astype(np.int64), counts.astype(np.int64)


@op("unique_consecutive", grad_fn="UniqueConsecutiveBackward0", nondiff_outputs=(1, 2))
def _unique_consecutive(a, dim):
    if dim is None:
        src, axis = a.reshape(-1), 0
        change = src[1:] != src[:-1]
    else:
        src, axis = a, dim
        moved = np.moveaxis(a, axis, 0).reshape(a.shape[axis], -1)
        change = (moved[1:] != moved[:-1]).any(axis=1)
    n = src.shape[axis]
    starts = np.flatnonzero(np.concatenate([[n > 0], change])) if n else np.zeros(0, np.int64)
    values = np.take(src, starts, axis=axis)
    if dim is not None:  # as torch, computed with ``dim`` first (see unique_dim)
        values = np.moveaxis(np.ascontiguousarray(np.moveaxis(values, axis, 0)), 0, axis)
    counts = np.diff(np.append(starts, n)).astype(np.int64)
    inverse = np.cumsum(np.concatenate([[0], change])) if n else np.zeros(0, np.int64)
    inverse = inverse.astype(np.int64)
    return values, inverse.reshape(a.shape) if dim is None else inverse, counts


_unique.backward(_unique_not_differentiable("_unique2"))
_unique_dim.backward(_unique_not_differentiable("unique_dim"))
_unique_consecutive.backward(_unique_not_differentiable("unique_consecutive"))


def _pick(outs, return_inverse, return_counts):
    values, inverse, counts = outs
    res = [values]
    if return_inverse:
        res.append(inverse)
    if return_counts:
        res.append(counts)
    return res[0] if len(res) == 1 else tuple(res)


def unique(
    input: Tensor,
    sorted: bool = True,
    return_inverse: bool = False,
    return_counts: bool = False,
    dim: int | None = None,
):
    """Return the unique elements of ``input`` (sorted), optionally with the inverse indices
    and the counts; with ``dim``, the unique slices along ``dim``."""
    if dim is None:
        outs = dispatch(_unique, (input,))
    else:
        outs = dispatch(_unique_dim, (input,), {"dim": wrap_dim(dim, input._data.ndim)})
    return _pick(outs, return_inverse, return_counts)


def unique_consecutive(
    input: Tensor, return_inverse: bool = False, return_counts: bool = False, dim: int | None = None
):
    """Return ``input`` with runs of equal consecutive elements (or slices) collapsed."""
    d = None if dim is None else wrap_dim(dim, input._data.ndim)
    outs = dispatch(_unique_consecutive, (input,), {"dim": d})
    return _pick(outs, return_inverse, return_counts)


# ------------------------------------------------------------------------------ searching


def _side(right: bool, side: str | None) -> str:
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(
                f"torch.searchsorted(): side can only be 'left' or 'right' but got {side}"
            )
        if right and side == "left":
            raise RuntimeError(
                "torch.searchsorted(): side and right can't be set to opposites, got side of "
                "left while right was True"
            )
        return side
    return "right" if right else "left"


def _search(seq: np.ndarray, values: np.ndarray, side: str) -> np.ndarray:
    if seq.ndim <= 1:
        return np.searchsorted(seq, values, side=side)
    # batched: count the elements before each value (vectorised over the batch)
    cmp = np.less_equal if side == "right" else np.less
    return cmp(seq[..., None, :], values[..., :, None]).sum(-1)


def searchsorted(
    sorted_sequence: Tensor,
    input,
    *,
    out_int32: bool = False,
    right: bool = False,
    side: str | None = None,
    sorter: Tensor | None = None,
    out=None,
) -> Tensor:
    """Return the indices where ``input``'s values would be inserted into the innermost dim of
    ``sorted_sequence`` to keep it sorted."""
    side = _side(right, side)
    seq = sorted_sequence._data
    if sorter is not None:
        seq = np.take_along_axis(seq, sorter._data, axis=-1)
    scalar = not isinstance(input, Tensor)
    vals = np.asarray(input) if scalar else input._data
    if seq.ndim > 1 and (scalar or seq.shape[:-1] != vals.shape[:-1]):
        raise RuntimeError(
            "torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 "
            "dimensions of boundaries tensor and input value tensor must match, but we got "
            f"boundaries tensor {list(seq.shape)} and input value tensor "
            f"{list(vals.shape)}"
        )
    res = _wrap(np.asarray(_search(seq, vals, side), np.int32 if out_int32 else np.int64))
    return _out("searchsorted", out, (), res, differentiable=False)


def bucketize(
    input, boundaries: Tensor, *, out_int32: bool = False, right: bool = False, out=None
) -> Tensor:
    """Return the index of the bucket of ``boundaries`` each element of ``input`` falls in."""
    if boundaries._data.ndim != 1:
        raise RuntimeError(
            f"boundaries tensor must be 1 dimension, but got dim({boundaries._data.ndim})"
        )
    if isinstance(input, Tensor):
        vals = input._data
    elif type(input) is int and boundaries._data.dtype.kind in "iu":
        # torch converts a number to the boundaries' integer dtype as C does (int8: 128 -> -128)
        from ember._ops.registry import _integer_operand

        vals = np.asarray(_integer_operand(input, boundaries._data.dtype))
    else:
        if type(input) is int:
            from ember._ops.registry import check_python_int

            check_python_int(input)
        vals = np.asarray(input)
    res = np.searchsorted(boundaries._data, vals, side="right" if right else "left")
    res = _wrap(np.asarray(res, np.int32 if out_int32 else np.int64))
    return _out("bucketize", out, (), res, differentiable=False)


def histc(input: Tensor, bins: int = 100, min=0, max=0, *, out=None) -> Tensor:  # noqa: A002
    """Return the histogram of ``input`` with ``bins`` equal bins over ``[min, max]`` (the data's
    range when both are 0); elements outside are ignored."""
    if not input.dtype.is_floating_point:
        raise NotImplementedError(
            f"\"histogram_cpu\" not implemented for '{_type_name(input.dtype)}'"
        )
    if bins <= 0:
        raise RuntimeError(
            "torch.histc: bins must be > 0, but got 0 for dimension 0"
            if bins == 0
            else f"torch.histc: bins must be > 0, but got {bins}"
        )
    a = input._data.reshape(-1)
    lo, hi = float(min), float(max)
    if lo == hi and a.size:
        lo, hi = float(a.min()), float(a.max())
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    if lo > hi:
        raise RuntimeError(f"torch.histc: max must be larger than min, but got min {lo} max {hi}")
    keep = a[(a >= lo) & (a <= hi)].astype(np.float64)
    pos = ((keep - lo) * bins / (hi - lo)).astype(np.int64)
    pos = np.minimum(pos, bins - 1)
    res = _wrap(np.bincount(pos, minlength=bins).astype(input.dtype.np))
    return _out("histc", out, (), res, differentiable=False)


def bincount(input: Tensor, weights: Tensor | None = None, minlength: int = 0) -> Tensor:
    """Return the count of each value of the 1-D non-negative int ``input`` (weighted sums with
    ``weights``)."""
    a = input._data
    if a.dtype.kind not in "iub":
        name = _type_name(input.dtype)
        raise NotImplementedError(f"\"bincount_cpu\" not implemented for '{name}'")
    if a.ndim != 1 or (a.size and a.min() < 0):
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if minlength < 0:
        raise RuntimeError("minlength should be >= 0")
    if weights is None:
        return _wrap(np.bincount(a, minlength=minlength).astype(np.int64))
    w = weights._data
    if w.ndim != 1 or w.shape[0] != a.shape[0]:
        raise RuntimeError("weights should be 1-d and have the same length as input")
    dt = w.dtype if weights.dtype.is_floating_point else np.dtype(np.float64)
    return _wrap(np.bincount(a, w.astype(np.float64), minlength=minlength).astype(dt))


publish(_sort, sort)
publish(_argsort_op, argsort)
publish(None, msort)
publish(_topk, topk)
publish(_kthvalue, kthvalue)
publish(_unique, unique)
publish(_unique_consecutive, unique_consecutive)
publish(None, bincount)
publish(None, histc)
publish(None, searchsorted, method=False)
publish(None, bucketize, method=False)

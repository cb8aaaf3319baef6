"""Indexing: ``Tensor.__getitem__``, ``__setitem__`` and ``index_put_``, with torch's rules.

torch reads an index in two passes, and so do we. First, ints, slices, None, Ellipsis (and
Python bools) become a chain of view ops, one per index (``x[0, 1:]`` is a SliceBackward0 over
a SelectBackward0); ints are never "advanced" as in NumPy, so ``x[0, :, [1, 2]]`` has shape
``(x.shape[1], 2)``. The tensors and lists met on the way are recorded at the dim they index.
Second, if any were recorded, ``index`` gathers a copy with NumPy's placement rule (advanced
dims replace the indexed dims when those are adjacent, else go first) and torch's layout for
the result. Assignment writes into the view (``copy_``/``fill_``) or through ``index_put_``.
"""

from __future__ import annotations

import math
import operator
import warnings

import numpy as np

from ember._core.dtype import finfo
from ember._core.tensor import Tensor, _wrap
from ember._ops.registry import _type_name, dispatch, dispatch_inplace, op, publish
from ember._ops.shape import _alias, expand, unsqueeze, view
from ember._ops.slicing import _select, _slice
from ember._ops.strides import _compute_stride, _contiguous_strides, _estrides

_INVALID_INDEX = (
    "only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are valid "
    "indices (got {})"
)
_INDEX_DTYPES = (np.dtype(np.int64), np.dtype(np.int32), np.dtype(np.uint8), np.dtype(np.bool_))
_MASK_DTYPES = (np.dtype(np.uint8), np.dtype(np.bool_))
_INT64 = np.dtype(np.int64)
_INT32 = np.dtype(np.int32)
_FULL = (slice(None),)
_TUPLE_MAKERS = (Tensor, slice, list, tuple, np.ndarray, range, str)
_SEQUENCE_WARNING = (
    "Using a non-tuple sequence for multidimensional indexing is deprecated and will be changed "
    "in pytorch 2.9; use x[tuple(seq)] instead of x[seq]. In pytorch 2.9 this will be "
    "interpreted as tensor index, x[torch.tensor(seq)], which will result either in an error or "
    "a different result"
)


def _type_path(obj) -> str:
    tp = type(obj)
    return tp.__name__ if tp.__module__ == "builtins" else f"{tp.__module__}.{tp.__name__}"


# ------------------------------------------------------------------------------ reading an index


def _as_tuple(index) -> tuple:
    """torch's ``treatSequenceAsTuple``: a short list holding slices, None, Ellipsis, tensors or
    sequences is a tuple of indices; any other list is one index."""
    if type(index) is tuple:
        return index
    if type(index) is list and len(index) < 32:
        for e in index:
            if e is None or e is Ellipsis or isinstance(e, _TUPLE_MAKERS):
                warnings.warn(_SEQUENCE_WARNING, UserWarning, stacklevel=3)
                return tuple(index)
    return (index,)


def _count_specified(items, self_ndim: int) -> int:
    # the dims the index consumes: everything but None, Ellipsis and Python bools; a mask
    # tensor consumes one per dim
    n = 0
    for it in items:
        if isinstance(it, Tensor):
            n += it._data.ndim if it._data.dtype in _MASK_DTYPES else 1
        elif it is not None and it is not Ellipsis and type(it) is not bool:
            n += 1
    if n > self_ndim:
        raise IndexError(f"too many indices for tensor of dimension {self_ndim}")
    return n


def _sequence_index(seq) -> np.ndarray:
    # torch's indexing_tensor_from_data: bool and uint8 data stay masks, anything else is long
    a = np.asarray(seq)
    if a.dtype.kind in "US":
        raise TypeError(f"new(): invalid data type '{'str' if a.dtype.kind == 'U' else 'bytes'}'")
    if a.dtype == object:  # e.g. a list of 0-d tensors
        a = np.asarray([e._data if isinstance(e, Tensor) else e for e in seq])
    if a.dtype == np.bool_ or a.dtype == np.uint8:
        return a
    return a.astype(np.int64)


def _select_checked(t: Tensor, dim: int, index: int, real_dim: int) -> Tensor:
    shape = t._data.shape
    if not shape:
        if index == 0:
            raise IndexError(
                "invalid index of a 0-dim tensor. Use `tensor.item()` in Python or "
                "`tensor.item<T>()` in C++ to convert a 0-dim tensor to a number"
            )
        size = 0
    else:
        size = shape[dim]
    if not -size <= index < size:
        raise IndexError(
            f"index {index} is out of bounds for dimension {real_dim} with size {size}"
        )
    return dispatch(_select, (t,), {"dim": dim, "index": index + size if index < 0 else index})


def _slice_checked(t: Tensor, dim: int, s: slice, optimize: bool) -> Tensor:
    step = 1 if s.step is None else operator.index(s.step)
    if step == 0:
        raise ValueError("slice step cannot be zero")
    if step < 0:
        raise ValueError("step must be greater than zero")
    shape = t._data.shape
    if not shape:
        raise IndexError("slice() cannot be applied to a 0-dim tensor.")
    n = shape[dim]
    start = None if s.start is None else operator.index(s.start)
    stop = None if s.stop is None else operator.index(s.stop)
    if optimize and not start and step == 1 and (stop is None or stop >= n):
        return t  # a whole dim: torch records no slice (but not for a lone ``x[:]``)
    start, stop, _ = slice(start, stop, step).indices(n)
    stop = max(stop, start)
    return dispatch(_slice, (t,), {"dim": dim, "start": start, "end": stop, "step": step})


def _bool_index(value: bool) -> np.ndarray:
    # a Python (or 0-d) bool indexes a new size-1 dim: [0] keeps it, [] empties it
    return np.zeros(1 if value else 0, dtype=np.int64)


def _apply_slicing(self: Tensor, items: tuple, optimize: bool = True):
    """Apply the basic part of an index as views; return (view, [(dim, index array)])."""
    specified = _count_specified(items, self._data.ndim)
    t = self
    dim = 0
    recorded = []
    for real_dim, it in enumerate(items):
        tp = type(it)
        if tp is int or (isinstance(it, (int, np.integer)) and tp is not bool):
            t = _select_checked(t, dim, int(it), real_dim)
        elif tp is slice:
            t = _slice_checked(t, dim, it, optimize)
            dim += 1
        elif it is Ellipsis:
            dim += self._data.ndim - specified
        elif it is None:
            t = unsqueeze(t, dim)
            dim += 1
        elif tp is bool:
            t = unsqueeze(t, dim)
            recorded.append((dim, _bool_index(it)))
            dim += 1
        else:
            if isinstance(it, Tensor):
                a = it._data
            elif isinstance(it, (list, tuple, np.ndarray, range, str)):
                a = _sequence_index(it)
            else:
                try:
                    t = _select_checked(t, dim, operator.index(it), real_dim)
                    continue
                except TypeError:
                    raise IndexError(_INVALID_INDEX.format(_type_path(it))) from None
            if a.ndim == 0 and a.dtype.kind in "biu":
                if a.dtype in _MASK_DTYPES:
                    t = unsqueeze(t, dim)
                    recorded.append((dim, _bool_index(bool(a))))
                    dim += 1
                else:
                    t = _select_checked(t, dim, int(a), real_dim)
                continue
            recorded.append((dim, a))
            dim += a.ndim if a.dtype in _MASK_DTYPES else 1
    return t, recorded


def _index_arrays(t: Tensor, recorded) -> tuple:
    """Return (NumPy index tuple, result shape) for the recorded tensor indices of ``t``."""
    shape = t._data.shape
    if len(recorded) == 1:  # the common case, without the bookkeeping of the general one
        dim, a = recorded[0]
        if a.dtype == _INT64 or a.dtype == _INT32:
            n = shape[dim] if dim < len(shape) else 0
            if a.size:
                if n == 0:
                    raise IndexError("index is out of bounds for dimension with size 0")
                if a.max() >= n or a.min() < -n:
                    bad = a[(a >= n) | (a < -n)].flat[0]
                    raise IndexError(f"index {bad} is out of bounds for dimension 0 with size {n}")
            if a.dtype == _INT32:
                a = a.astype(np.int64)
            return (_FULL * dim + (a,), shape[:dim] + a.shape + shape[dim + 1 :])
    per_dim = [None] * len(shape)
    from_masks = set()
    for dim, a in recorded:
        if a.dtype not in _INDEX_DTYPES:
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
        if a.dtype in _MASK_DTYPES:
            for j, n in enumerate(a.shape):
                if dim + j >= len(shape) or n != shape[dim + j]:
                    raise IndexError(
                        f"The shape of the mask {list(a.shape)} at index {j} does not match the "
                        f"shape of the indexed tensor {list(shape)} at index {dim + j}"
                    )
            per_dim[dim : dim + a.ndim] = np.nonzero(a)
            from_masks.update(range(dim, dim + a.ndim))
        else:
            per_dim[dim] = a if a.dtype == _INT64 else a.astype(np.int64)
    defined = [(d, a) for d, a in enumerate(per_dim) if a is not None]
    try:
        if len(defined) == 1:
            bshape = defined[0][1].shape
        else:
            bshape = np.broadcast_shapes(*(a.shape for _, a in defined))
    except ValueError:
        shapes = ", ".join(str(list(a.shape)) for _, a in defined)
        raise IndexError(
            f"shape mismatch: indexing tensors could not be broadcast together with shapes {shapes}"
        ) from None
    if 0 not in bshape and any(shape[d] == 0 for d, _ in defined):
        raise IndexError("index is out of bounds for dimension with size 0")
    for k, (d, a) in enumerate(defined):
        n = shape[d]
        if d in from_masks:
            continue  # nonzero() is always in range
        if a.size and (a.max() >= n or a.min() < -n):
            bad = a[(a >= n) | (a < -n)].flat[0]
            raise IndexError(f"index {bad} is out of bounds for dimension {k} with size {n}")
    first, last = defined[0][0], defined[-1][0]
    if last - first + 1 == len(defined):  # adjacent: the new dims replace the indexed ones
        out_shape = shape[:first] + bshape + shape[last + 1 :]
    else:
        out_shape = bshape + tuple(n for d, n in enumerate(shape) if per_dim[d] is None)
    idx = tuple(slice(None) if a is None else a for a in per_dim[: last + 1])
    return idx, out_shape


# ------------------------------------------------------------------------------ the result layout


def _iterator_perm(shape, operands) -> list:
    """TensorIterator's dim order (fastest first) for operands' strides (``reorder_dimensions``)."""
    nd = len(shape)
    perm = list(range(nd - 1, -1, -1))

    def should_swap(d0, d1):
        for st in operands:
            s0, s1 = st[d0], st[d1]
            if s0 == 0 or s1 == 0:
                continue
            if s0 != s1:
                return -1 if s0 < s1 else 1
            if shape[d0] > shape[d1]:
                return 1
        return 0

    for i in range(1, nd):
        d1 = i
        for d0 in range(i - 1, -1, -1):
            c = should_swap(perm[d0], perm[d1])
            if c > 0:
                perm[d0], perm[d1] = perm[d1], perm[d0]
                d1 = d0
            elif c < 0:
                break
    return perm


def _index_strides(x: np.ndarray, idx: tuple) -> tuple:
    """Return the strides torch gives the result of advanced indexing ``x[idx]``.

    ATen restrides ``x`` (indexed dims replaced by the index shape, stride 0), views each index
    as (1,) * before + shape + (1,) * after, and allocates the output in the order
    TensorIterator picks from those operands' strides.
    """
    shape, strides = list(x.shape), list(_estrides(x))
    per_dim = list(idx) + [slice(None)] * (len(shape) - len(idx))
    pos = [d for d, a in enumerate(per_dim) if type(a) is not slice]
    k = len(pos)
    if pos[-1] - pos[0] + 1 != k:  # not adjacent: ATen moves the indexed dims first
        order = pos + [d for d in range(len(shape)) if d not in pos]
        shape = [shape[d] for d in order]
        strides = [strides[d] for d in order]
        per_dim = [per_dim[d] for d in order]
        pos = list(range(k))
    arrays = [per_dim[d] for d in pos]
    bshape = arrays[0].shape if k == 1 else np.broadcast_shapes(*(a.shape for a in arrays))
    before = pos[0]
    after = len(shape) - before - k
    out_shape = tuple(shape[:before]) + bshape + tuple(shape[before + k :])
    operands = [tuple(strides[:before]) + (0,) * len(bshape) + tuple(strides[before + k :])]
    nb = len(bshape)
    for a in arrays:
        lead = nb - a.ndim
        expanded = [0] * lead + [
            0 if n != b else s for n, b, s in zip(a.shape, bshape[lead:], _estrides(a))
        ]
        full = _compute_stride(bshape, expanded, (1,) * before + bshape + (1,) * after)
        # TensorIterator broadcasts the size-1 dims of the view: stride 0 there
        operands.append(
            tuple(
                s if before <= d < before + nb or out_shape[d] == 1 else 0
                for d, s in enumerate(full)
            )
        )
    perm = _iterator_perm(out_shape, operands)
    if perm == list(range(len(out_shape) - 1, -1, -1)):
        return _contiguous_strides(out_shape)
    out = [0] * len(out_shape)
    step = 1
    for d in perm:
        out[d] = step
        step *= out_shape[d]
    return tuple(out)


def _empty_strided(shape, strides, dtype) -> np.ndarray:
    n = 1 + sum((s - 1) * st for s, st in zip(shape, strides)) if all(shape) else 0
    item = dtype.itemsize
    buf = np.empty(n, dtype=dtype)
    return np.ndarray(shape, dtype, buffer=buf, strides=tuple(s * item for s in strides))


# ------------------------------------------------------------------------------ index, index_put


def _standard(a: np.ndarray) -> bool:
    # C-contiguous with the default strides even on size-1 dims (which steer TensorIterator);
    # a 1-D index of length > 1 never decides the order (other operands are 0 on its dim)
    if a.ndim == 1 and a.shape[0] > 1:
        return True
    return a.flags.c_contiguous and (
        1 not in a.shape or _estrides(a) == _contiguous_strides(a.shape)
    )


@op("index", grad_fn="IndexBackward0")
def _index(x, idx):
    out = x[idx]
    if out.size and _standard(x) and all(type(a) is slice or _standard(a) for a in idx):
        # TensorIterator keeps C order for operands in C order
        return out if out.flags.c_contiguous else np.ascontiguousarray(out)
    want = _index_strides(x, idx)
    if _estrides(out) == want:
        return out
    res = _empty_strided(out.shape, want, out.dtype)
    res[...] = out
    return res


@_index.backward
def _(ctx, g, idx):
    return dispatch(_index_backward, (g,), {"shape": ctx._input_meta[0][0], "idx": idx})


@op("index_backward", grad_fn="IndexPutBackward0")
def _index_backward(g, shape, idx):
    out = np.zeros(shape, dtype=g.dtype)
    np.add.at(out, idx, g)  # repeated indices accumulate
    return out


_index_backward.backward(lambda ctx, gg, shape, idx: dispatch(_index, (gg,), {"idx": idx}))


def _put(out, v, idx, accumulate):
    if accumulate:
        np.add.at(out, idx, v)
    else:
        out[idx] = v
    return out


@op("index_put_", grad_fn="IndexPutBackward0")
def _index_put_(x, v, idx, accumulate=False):
    return _put(x, v, idx, accumulate)  # writes into x itself: no copy of the whole tensor


@op("index_put", grad_fn="IndexPutBackward0")
def _index_put(x, v, idx, accumulate=False):
    return _put(x.copy(), v, idx, accumulate)


def _index_put_backward(ctx, g, idx, accumulate=False):
    need = ctx.needs_input_grad
    gx = gv = None
    if need[0]:
        gx = g if accumulate else dispatch(_index_put, (g, 0), {"idx": idx})
    if need[1]:
        gv = dispatch(_index, (g,), {"idx": idx})
    return gx, gv


_index_put_.backward(_index_put_backward)
_index_put.backward(_index_put_backward)


def _check_values(self: Tensor, values: Tensor, out_shape) -> Tensor:
    if values.dtype is not self.dtype:
        raise RuntimeError(
            "Index put requires the source and destination dtypes match, got "
            f"{_type_name(self.dtype)} for the destination and {_type_name(values.dtype)} for "
            "the source."
        )
    vshape = values._data.shape
    try:
        ok = np.broadcast_shapes(vshape, out_shape) == tuple(out_shape)
    except ValueError:
        ok = False
    if not ok:
        raise RuntimeError(
            f"shape mismatch: value tensor of shape {list(vshape)} cannot be broadcast to "
            f"indexing result of shape {list(out_shape)}"
        )
    return values


def _put_indices(self: Tensor, indices, name: str, position: int) -> tuple:
    if isinstance(indices, Tensor) or not isinstance(indices, (tuple, list)):
        raise TypeError(
            f"{name}(): argument 'indices' (position {position + 1}) must be tuple of Tensors, "
            f"not {type(indices).__name__}"
        )
    for i, t in enumerate(indices):
        if not isinstance(t, Tensor):
            raise TypeError(
                f"expected Tensor as element {i} in argument {position}, but got {type(t).__name__}"
            )
    if len(indices) > self._data.ndim:
        raise IndexError(
            f"too many indices for tensor of dimension {self._data.ndim} (got {len(indices)})"
        )
    return _index_arrays(self, [(d, t._data) for d, t in enumerate(indices)])


def index_put_(self: Tensor, indices, values: Tensor, accumulate: bool = False) -> Tensor:
    """Write ``values`` into ``self`` at ``indices`` (a tuple of index tensors); return self."""
    idx, out_shape = _put_indices(self, indices, "index_put_", 0)
    _check_values(self, values, out_shape)
    params = {"idx": idx, "accumulate": bool(accumulate)}
    return dispatch_inplace(_index_put_, self, (self, values), params)


def index_put(input: Tensor, indices, values: Tensor, accumulate: bool = False) -> Tensor:
    """Return a copy of ``input`` with ``values`` written at ``indices``."""
    return _index_put_out_of_place(input, indices, values, accumulate, 1)


def _index_put_method(self: Tensor, indices, values: Tensor, accumulate: bool = False) -> Tensor:
    return _index_put_out_of_place(self, indices, values, accumulate, 0)


_index_put_method.__doc__ = index_put.__doc__


def _index_put_out_of_place(input, indices, values, accumulate, position):
    idx, out_shape = _put_indices(input, indices, "index_put", position)
    _check_values(input, values, out_shape)
    return dispatch(_index_put, (input, values), {"idx": idx, "accumulate": bool(accumulate)})


# ------------------------------------------------------------------------------ __getitem__


def getitem(self: Tensor, index) -> Tensor:
    """``self[index]``: a view for basic indices, a copy for tensor/list indices."""
    tp = type(index)
    if tp is int:
        return _select_checked(self, 0, index, 0)
    if tp is slice:
        return _slice_checked(self, 0, index, optimize=False)
    if index is None:
        return unsqueeze(self, 0)
    if index is Ellipsis:
        return dispatch(_alias, (self,))
    if isinstance(index, np.integer):
        return _select_checked(self, 0, int(index), 0)
    if tp is Tensor and index._data.ndim:  # the common x[idx] / x[mask]
        t, recorded = self, [(0, index._data)]
        _count_specified((index,), self._data.ndim)
    else:
        t, recorded = _apply_slicing(self, _as_tuple(index))
    if not recorded:
        return dispatch(_alias, (t,)) if t is self else t
    idx, _ = _index_arrays(t, recorded)
    return dispatch(_index, (t,), {"idx": idx})


# ------------------------------------------------------------------------------ __setitem__

_C_TYPE = {
    "float32": "float",
    "float64": "double",
    "float16": "c10::Half",
    "bfloat16": "c10::BFloat16",
    "int64": "int64_t",
    "int32": "int",
    "int16": "int16_t",
    "int8": "int8_t",
    "uint8": "uint8_t",
    "bool": "bool",
    "complex64": "c10::complex<float>",
    "complex128": "c10::complex<double>",
}


_LIMITS: dict = {}


def _limits(dt):
    """(lowest, highest, saturates) for a scalar stored into dtype ``dt`` (torch's
    checked_convert: half types saturate to inf instead of overflowing)."""
    lim = _LIMITS.get(dt.name)
    if lim is None:
        if dt.is_floating_point or dt.is_complex:
            big = finfo(dt).max
            lim = (-big, big, dt.name in ("float16", "bfloat16"))
        elif dt.name == "bool":
            lim = (-math.inf, math.inf, True)
        else:
            info = np.iinfo(dt.np)
            lim = (int(info.min), int(info.max), False)
        _LIMITS[dt.name] = lim
    return lim


def _overflows(v, dt) -> bool:
    lo, hi, saturates = _limits(dt)
    if saturates:
        return False
    if isinstance(v, complex):
        if not dt.is_complex and v.imag != 0:
            return True
        parts = (v.real, v.imag) if dt.is_complex else (v.real,)
    else:
        parts = (v,)
    floating = dt.is_floating_point or dt.is_complex
    for p in parts:
        if floating:
            try:
                if math.isfinite(p) and not lo <= float(p) <= hi:
                    return True
            except OverflowError:  # an int beyond any double
                return True
        elif isinstance(p, float) and not math.isfinite(p):
            return True
        elif p > hi or (p < lo and not (lo == 0 and isinstance(p, int) and -p <= hi)):
            return True  # (unsigned types take small negative ints: two's complement)
    return False


def _value_tensor(self: Tensor, value) -> Tensor:
    """torch's ``valueToTensor``: a Tensor as is, a Python number as a 0-d tensor of self's
    dtype; anything else is a TypeError."""
    if isinstance(value, Tensor):
        return value
    if isinstance(value, bool):
        v = int(value)
    elif isinstance(value, (int, np.integer)) and not isinstance(value, np.bool_):
        v = int(value)
        if not -(1 << 63) <= v < 1 << 63:  # torch unpacks an assigned int as int64
            raise ValueError("Overflow when unpacking long long")
    elif isinstance(value, (float, complex)):
        v = value
    else:
        raise TypeError(f"can't assign a {_type_path(value)} to a {self.type()}")
    dt = self.dtype
    if _overflows(v, dt):
        raise RuntimeError(f"value cannot be converted to type {_C_TYPE[dt.name]} without overflow")
    if isinstance(v, complex) and not dt.is_complex:
        v = v.real
    if _limits(dt)[2]:  # half types saturate to inf, silently
        with np.errstate(over="ignore"):
            return _wrap(np.array(v).astype(dt.np))
    try:
        return _wrap(np.array(v, dtype=dt.np))
    except OverflowError:  # a negative int into an unsigned type wraps around
        return _wrap(np.array(v).astype(dt.np))


def _strip_leading_ones(value: Tensor) -> Tensor:
    # torch's slicePrefix1sSize: leading size-1 dims of a value are dropped before broadcasting
    shape = value._data.shape
    k = 0
    while k < len(shape) and shape[k] == 1:
        k += 1
    return view(value, shape[k:]) if k else value


def _copy_to(dst: Tensor, src: Tensor) -> None:
    """torch's ``copy_to``: ``copy_`` for equal shapes, ``fill_`` for a 0-d value, else copy_ of
    the value broadcast to ``dst``."""
    dshape, sshape = dst._data.shape, src._data.shape
    if dshape == sshape:
        dst.copy_(src)
    elif not sshape and not src._requires_grad:
        dst.fill_(src)
    else:  # (a 0-d value requiring grad is copied: ember's fill_ passes no gradient to it)
        dst.copy_(expand(_strip_leading_ones(src), dshape))


def setitem(self: Tensor, index, value) -> None:
    """``self[index] = value``: writes into ``self`` (through views where it is one)."""
    if index is False:
        return  # torch does nothing at all
    value = _value_tensor(self, value)
    tp = type(index)
    if tp is int or isinstance(index, np.integer) and tp is not bool:
        _copy_to(_select_checked(self, 0, int(index), 0), value)
        return
    if tp is slice:
        _copy_to(_slice_checked(self, 0, index, optimize=True), value)
        return
    if index is None or index is True:
        _copy_to(unsqueeze(self, 0), value)
        return
    if index is Ellipsis:
        _copy_to(self, value)
        return
    if tp is Tensor and index._data.ndim:  # the common x[idx] = v / x[mask] = v
        t, recorded = self, [(0, index._data)]
        _count_specified((index,), self._data.ndim)
    else:
        t, recorded = _apply_slicing(self, _as_tuple(index))
    if not recorded:
        _copy_to(t, value)
        return
    idx, out_shape = _index_arrays(t, recorded)
    value = _check_values(t, _strip_leading_ones(value), out_shape)
    dispatch_inplace(_index_put_, t, (t, value), {"idx": idx, "accumulate": False})


Tensor.__getitem__ = getitem
Tensor.__setitem__ = setitem
publish(_index_put, index_put, method=_index_put_method, inplace=index_put_)

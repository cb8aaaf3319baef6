"""Movement ops: flip, roll, rot90, repeat/tile/repeat_interleave, tril/triu, diag family,
trace, ravel, narrow_copy. All return new tensors (torch has no negative strides, so ``flip``
copies, keeping the input's memory layout as torch's ``empty_like`` does).
"""

from __future__ import annotations

import operator

import numpy as np

from ember._core import dtype as D
from ember._core.tensor import Tensor, _wrap, wrap_dim
from ember._ops.reduce import check_out, out_dtype_error, write_out
from ember._ops.registry import API, dispatch, dispatch_inplace, op, publish
from ember._ops.shape import contiguous, reshape, view
from ember._ops.slicing import _diagonal, _diagonal_backward, _slice_backward, narrow
from ember._ops.strides import _sizes, _slice_array


def _dims(dims, nd: int) -> tuple:
    """Wrap a dim or sequence of dims; torch's error for a repeated dim."""
    if isinstance(dims, (int, np.integer)):
        dims = (dims,)
    out = tuple(wrap_dim(operator.index(d), nd) for d in dims)
    for d in out:
        if out.count(d) > 1:
            raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
    return out


def _copy_like(a: np.ndarray) -> np.ndarray:
    """Copy ``a`` keeping its memory order (torch's ``empty_like``), or C order when ``a`` has
    broadcast (stride 0) dims."""
    if any(s == 0 and n > 1 for s, n in zip(a.strides, a.shape)):
        return np.ascontiguousarray(a)
    return a.copy(order="K")


_NARROW_COPY_DTYPE = (
    "Expected self.dtype() == output.dtype() to be true, but got false.  (Could this error "
    "message be improved?  If so, please report an enhancement request to PyTorch.)"
)


def _with_out(fn: str, res_fn, input: Tensor, out):
    """Run ``res_fn()``; with ``out=``, raise torch's errors (grad, dtype) and write into it."""
    if out is None:
        return res_fn()
    check_out(fn, out, (input, out))
    want, got = input.dtype, out.dtype
    if got is not want:
        if fn == "narrow_copy":
            raise RuntimeError(_NARROW_COPY_DTYPE)
        if fn == "aten::diag_embed" and not D.can_cast(want, got):
            raise RuntimeError(
                f"diag: result type {D.scalar_type_name(want)} can't be cast to the desired "
                f"out= type {D.scalar_type_name(got)}"
            )
        raise out_dtype_error(want, got)
    return write_out(out, res_fn())


# ------------------------------------------------------------------------------ flip


@op("flip", grad_fn="FlipBackward0")
def _flip(x, dims):
    return _copy_like(np.flip(x, dims) if dims else x)


_flip.backward(lambda ctx, g, dims: dispatch(_flip, (g,), {"dims": dims}))


def flip(input: Tensor, *dims, **kwargs) -> Tensor:
    """Return ``input`` with the order of elements reversed along ``dims``."""
    if "dims" in kwargs:
        dims = (kwargs.pop("dims"),)
    if kwargs:
        raise TypeError(f"flip() got an unexpected keyword argument '{next(iter(kwargs))}'")
    if len(dims) == 1 and not isinstance(dims[0], (int, np.integer)):
        dims = tuple(dims[0])
    nd = input._data.ndim
    return dispatch(_flip, (input,), {"dims": _dims(dims, nd) if nd else ()})


def fliplr(input: Tensor) -> Tensor:
    """Return ``input`` flipped left-right (along dim 1)."""
    if input._data.ndim < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return dispatch(_flip, (input,), {"dims": (1,)})


def flipud(input: Tensor) -> Tensor:
    """Return ``input`` flipped up-down (along dim 0)."""
    if input._data.ndim < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return dispatch(_flip, (input,), {"dims": (0,)})


# ------------------------------------------------------------------------------ roll


@op("roll", grad_fn="RollBackward0")
def _roll(x, shifts, dims):
    if not dims:
        return np.roll(x.reshape(-1), shifts[0]).reshape(x.shape)
    return np.ascontiguousarray(np.roll(x, shifts, dims))


_roll.backward(
    lambda ctx, g, shifts, dims: dispatch(
        _roll, (g,), {"shifts": tuple(-s for s in shifts), "dims": dims}
    )
)


def roll(input: Tensor, shifts, dims=None) -> Tensor:
    """Return ``input`` rolled by ``shifts`` along ``dims`` (flattened if no dims)."""
    dims = () if dims is None else dims
    shifts = (shifts,) if isinstance(shifts, (int, np.integer)) else tuple(shifts)
    dims = (dims,) if isinstance(dims, (int, np.integer)) else tuple(dims)
    if not dims and len(shifts) == 1:
        return dispatch(_roll, (input,), {"shifts": (int(shifts[0]),), "dims": ()})
    if len(shifts) != len(dims):
        raise RuntimeError(
            f"shifts and dimensions must align. shifts: {len(shifts)}, dims:{len(dims)}"
        )
    nd = input._data.ndim
    dims = tuple(wrap_dim(operator.index(d), nd) for d in dims)
    return dispatch(_roll, (input,), {"shifts": tuple(int(s) for s in shifts), "dims": dims})


# ------------------------------------------------------------------------------ rot90


@op("rot90", grad_fn="Rot90Backward0")
def _rot90(x, k, dims):
    d0, d1 = dims
    if k == 1:
        return np.swapaxes(_copy_like(np.flip(x, d1)), d0, d1)
    if k == 2:
        return _copy_like(np.flip(x, dims))
    if k == 3:
        return np.swapaxes(_copy_like(np.flip(x, d0)), d0, d1)
    return _copy_like(x)


_rot90.backward(lambda ctx, g, k, dims: dispatch(_rot90, (g,), {"k": (4 - k) % 4, "dims": dims}))


def rot90(input: Tensor, k: int = 1, dims=(0, 1)) -> Tensor:
    """Return ``input`` rotated by 90 degrees ``k`` times in the plane of ``dims``."""
    dims = tuple(dims)
    nd = input._data.ndim
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if nd < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {nd}")
    d = (wrap_dim(dims[0], nd), wrap_dim(dims[1], nd))
    if d[0] == d[1]:
        raise RuntimeError(
            f"expected rotation dims to be different, but got dim0 = {dims[0]} and dim1 = {dims[1]}"
        )
    return dispatch(_rot90, (input,), {"k": operator.index(k) % 4, "dims": d})


# ------------------------------------------------------------------------------ repeat, tile


@op("repeat", grad_fn="RepeatBackward0")
def _repeat(x, repeats):
    if not repeats:
        return x.copy()
    lead = len(repeats) - x.ndim
    return np.ascontiguousarray(np.tile(x.reshape((1,) * lead + x.shape), repeats))


@_repeat.backward
def _(ctx, g, repeats):
    shape = ctx._input_meta[0][0]
    padded = (1,) * (len(repeats) - len(shape)) + tuple(shape)
    inter = []
    for r, n in zip(repeats, padded):
        inter += [r, n]
    if 0 in inter:
        return g.new_zeros(shape)
    summed = g.reshape(tuple(inter)).sum(tuple(range(0, 2 * len(repeats), 2)))
    return summed.reshape(shape)


def repeat(self: Tensor, *sizes) -> Tensor:
    """Return ``self`` repeated ``sizes[i]`` times along each dimension."""
    reps = _sizes(sizes)
    shp = self._data.shape
    if len(reps) < len(shp):
        raise RuntimeError(
            "Number of dimensions of repeat dims can not be smaller than number of dimensions of "
            "tensor"
        )
    padded = (1,) * (len(reps) - len(shp)) + shp
    out = [r * n for r, n in zip(reps, padded)]
    for r in reps:
        if r < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {min(out)}: {out}")
    return dispatch(_repeat, (self,), {"repeats": reps})


def tile(input: Tensor, dims) -> Tensor:
    """Return ``input`` repeated along each dimension (``dims`` padded with leading ones)."""
    reps = _sizes((dims,)) if not isinstance(dims, (int, np.integer)) else (int(dims),)
    nd = input._data.ndim
    reps = (1,) * (nd - len(reps)) + reps
    return repeat(input, reps)


def _tile_method(self: Tensor, *dims, **kwargs) -> Tensor:
    """Return the tensor repeated ``dims`` times along each dim (``torch.tile``)."""
    if "dims" in kwargs:
        return tile(self, kwargs["dims"])
    return tile(self, _sizes(dims))


def _check_repeats_dtype(r: Tensor) -> None:
    if r.dtype not in (D.int32, D.int64):
        raise NotImplementedError(
            f"\"repeat_interleave_cpu\" not implemented for '{D.scalar_type_name(r.dtype)}'"
        )


def repeat_interleave(input, repeats=None, dim=None, *, output_size=None) -> Tensor:
    """Return ``input`` with each element repeated ``repeats`` times along ``dim``."""
    if repeats is None:  # torch.repeat_interleave(repeats): the indices of a repeated arange
        _check_repeats_dtype(input)
        r = input._data
        if r.ndim > 1:
            raise RuntimeError("repeat_interleave only accept 1D vector as repeat")
        if r.size and r.min() < 0:
            raise RuntimeError("repeats can not be negative")
        return _wrap(np.repeat(np.arange(r.size, dtype=np.int64), r))
    if dim is None:
        input = reshape(input, (-1,))
        d = 0
    else:
        d = wrap_dim(dim, input._data.ndim)
    if isinstance(repeats, Tensor):
        _check_repeats_dtype(repeats)
        r = repeats._data
        n = input._data.shape[d] if input._data.ndim else 1
        if r.ndim == 0:
            r = np.broadcast_to(r, (n,))
        if r.ndim > 1:
            raise RuntimeError("repeat_interleave only accept 1D vector as repeat")
        if r.shape[0] != n:
            raise RuntimeError(
                "repeats must have the same size as input along dim, but got repeats.size(0) = "
                f"{r.shape[0]} and input.size({d}) = {n}"
            )
        if r.size and r.min() < 0:
            raise RuntimeError("repeats can not be negative")
        idx = _wrap(np.repeat(np.arange(n, dtype=np.int64), r))
        index_select = API.get("index_select")
        if index_select is not None:
            return index_select(input, d, idx)
        return input[(slice(None),) * d + (idx,)]
    repeats = operator.index(repeats)
    if repeats < 0:
        raise RuntimeError("Repeats must be non-negative")
    if input._data.ndim == 0:
        input = reshape(input, (1,))
    shp = input._data.shape
    big = shp[: d + 1] + (repeats,) + shp[d + 1 :]
    out = input.unsqueeze(d + 1).expand(big).clone()
    return view(out, shp[:d] + (shp[d] * repeats,) + shp[d + 1 :])


# ------------------------------------------------------------------------------ tril, triu


@op("tril", grad_fn="TrilBackward0")
def _tril(x, diagonal):
    return np.ascontiguousarray(np.tril(x, diagonal))


@op("triu", grad_fn="TriuBackward0")
def _triu(x, diagonal):
    return np.ascontiguousarray(np.triu(x, diagonal))


_tril.backward(lambda ctx, g, diagonal: dispatch(_tril, (g,), {"diagonal": diagonal}))
_triu.backward(lambda ctx, g, diagonal: dispatch(_triu, (g,), {"diagonal": diagonal}))


def _tri_check(name: str, x: Tensor) -> None:
    if x._data.ndim < 2:
        raise RuntimeError(f"{name}: input tensor must have at least 2 dimensions")


def tril(input: Tensor, diagonal: int = 0, *, out=None) -> Tensor:
    """Return the lower triangle of the last two dims of ``input`` (others zeroed)."""
    _tri_check("tril", input)
    params = {"diagonal": operator.index(diagonal)}
    return _with_out("tril", lambda: dispatch(_tril, (input,), params), input, out)


def triu(input: Tensor, diagonal: int = 0, *, out=None) -> Tensor:
    """Return the upper triangle of the last two dims of ``input`` (others zeroed)."""
    _tri_check("triu", input)
    params = {"diagonal": operator.index(diagonal)}
    return _with_out("triu", lambda: dispatch(_triu, (input,), params), input, out)


def tril_(self: Tensor, diagonal: int = 0) -> Tensor:
    """In-place version of :meth:`Tensor.tril`."""
    _tri_check("tril", self)
    return dispatch_inplace(_tril, self, (self,), {"diagonal": operator.index(diagonal)})


def triu_(self: Tensor, diagonal: int = 0) -> Tensor:
    """In-place version of :meth:`Tensor.triu`."""
    _tri_check("triu", self)
    return dispatch_inplace(_triu, self, (self,), {"diagonal": operator.index(diagonal)})


def _tri_indices(fn, row, col, offset, dtype):
    dtype = D.int64 if dtype is None else dtype
    if dtype not in (D.int32, D.int64):
        raise NotImplementedError(f"\"{fn}\" not implemented for '{D.scalar_type_name(dtype)}'")
    if row < 0:
        raise RuntimeError(f"row must be non-negative, got{row}")
    if col < 0:
        raise RuntimeError(f"col must be non-negative, got{col}")
    tri = np.tril_indices if fn == "tril_indices" else np.triu_indices
    r, c = tri(row, offset, col)
    return _wrap(np.stack([r, c]).astype(dtype.np).reshape(2, -1))


def tril_indices(row: int, col: int, offset: int = 0, *, dtype=None, device=None, layout=None):
    """Return the (2, N) indices of the lower triangle of a ``row`` x ``col`` matrix."""
    return _tri_indices("tril_indices", row, col, offset, dtype)


def triu_indices(row: int, col: int, offset: int = 0, *, dtype=None, device=None, layout=None):
    """Return the (2, N) indices of the upper triangle of a ``row`` x ``col`` matrix."""
    return _tri_indices("triu_indices", row, col, offset, dtype)


# ------------------------------------------------------------------------------ diagonals


@op("diag_embed", grad_fn="DiagEmbedBackward0")
def _diag_embed(x, offset, dim1, dim2):
    n = x.shape[-1] + abs(offset) if x.ndim else 1 + abs(offset)
    rest = list(x.shape[:-1])
    shape = [0] * (len(rest) + 2)
    lo, hi = min(dim1, dim2), max(dim1, dim2)
    shape[lo] = shape[hi] = n
    it = iter(rest)
    for i in range(len(shape)):
        if i not in (lo, hi):
            shape[i] = next(it)
    out = np.zeros(shape, dtype=x.dtype)
    _diagonal.forward(out, offset, dim1, dim2)[...] = x
    return out


_diag_embed.backward(lambda ctx, g, offset, dim1, dim2: g.diagonal(offset, dim1, dim2))


def diag_embed(input: Tensor, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """Return a tensor whose diagonals (over ``dim1``/``dim2``) are filled by ``input``'s last
    dimension; other entries are zero."""
    nd = input._data.ndim + 1
    d1, d2 = wrap_dim(dim1, nd), wrap_dim(dim2, nd)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    if input._data.ndim == 0:
        input = reshape(input, (1,))
    return dispatch(
        _diag_embed, (input,), {"offset": operator.index(offset), "dim1": d1, "dim2": d2}
    )


@op("diagonal_copy", grad_fn="DiagonalBackward0_copy")
def _diagonal_copy(x, offset, dim1, dim2):
    return _diagonal.forward(x, offset, dim1, dim2).copy()


@_diagonal_copy.backward
def _(ctx, g, offset, dim1, dim2):
    params = {"shape": ctx._input_meta[0][0], "offset": offset, "dim1": dim1, "dim2": dim2}
    return dispatch(_diagonal_backward, (g,), params)


def diag(input: Tensor, diagonal: int = 0, *, out=None) -> Tensor:
    """Return the ``diagonal``-th diagonal of a matrix, or a matrix with a vector on it."""
    nd = input._data.ndim
    params = {"offset": operator.index(diagonal), "dim1": 0, "dim2": 1}
    if nd == 1:
        res = lambda: dispatch(_diag_embed, (input,), params)  # noqa: E731
        return _with_out("aten::diag_embed", res, input, out)
    if nd == 2:
        res = lambda: dispatch(_diagonal_copy, (input,), params)  # noqa: E731
        return _with_out("aten::diagonal_copy", res, input, out)
    raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {nd}D")


def diagflat(input: Tensor, offset: int = 0) -> Tensor:
    """Return a 2-D tensor with the flattened ``input`` on its ``offset``-th diagonal."""
    flat = view(contiguous(input), (-1,))
    return dispatch(_diag_embed, (flat,), {"offset": operator.index(offset), "dim1": 0, "dim2": 1})


@op("trace", grad_fn="TraceBackward0")
def _trace(x):
    if x.dtype == np.bool_:
        raise NotImplementedError("\"trace\" not implemented for 'Bool'")
    out = np.trace(x)
    if x.dtype.kind in "biu":
        return np.asarray(out, dtype=np.int64)
    return np.asarray(out, dtype=x.dtype)


@_trace.backward
def _(ctx, g):
    shape = ctx._input_meta[0][0]
    n = min(shape)
    params = {"shape": shape, "offset": 0, "dim1": 0, "dim2": 1}
    return dispatch(_diagonal_backward, (g.expand(n),), params)


def trace(input: Tensor) -> Tensor:
    """Return the sum of the main diagonal of a 2-D ``input``."""
    nd = input._data.ndim
    if nd != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {nd}")
    return dispatch(_trace, (input,))


# ------------------------------------------------------------------------------ ravel, narrow_copy


def ravel(input: Tensor) -> Tensor:
    """Return ``input`` flattened to 1-D (a view when contiguous)."""
    return view(contiguous(input), (-1,))


@op("narrow_copy", grad_fn="NarrowCopyBackward0")
def _narrow_copy(x, dim, start, end):
    return np.ascontiguousarray(_slice_array(x, dim, start, end, 1))


@_narrow_copy.backward
def _(ctx, g, dim, start, end):
    params = {"shape": ctx._input_meta[0][0], "dim": dim, "start": start, "end": end, "step": 1}
    return dispatch(_slice_backward, (g,), params)


def narrow_copy(input: Tensor, dim: int, start: int, length: int, *, out=None) -> Tensor:
    """Return a copy of ``length`` elements of ``input`` along ``dim`` from ``start``."""
    from ember._core.grad_mode import no_grad

    with no_grad():
        narrow(input, dim, start, max(operator.index(length), 0))  # torch's checks
    if length < 0:
        n = input._data.shape[wrap_dim(dim, input._data.ndim)]
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({n}).")
    d = wrap_dim(dim, input._data.ndim)
    begin = operator.index(start)
    if begin < 0:
        begin += input._data.shape[d]
    params = {"dim": d, "start": begin, "end": begin + length}
    return _with_out("narrow_copy", lambda: dispatch(_narrow_copy, (input,), params), input, out)


publish(_flip, flip)
publish(_flip, fliplr)
publish(_flip, flipud)
publish(_roll, roll)
publish(_rot90, rot90)
publish(None, repeat_interleave)
publish(_tril, tril, inplace=tril_)
publish(_triu, triu, inplace=triu_)
publish(None, diag)
publish(_diag_embed, diag_embed)
publish(None, diagflat)
publish(_trace, trace)
publish(None, ravel)
publish(_narrow_copy, narrow_copy)
publish(None, tile, method=_tile_method)
publish(_repeat, repeat, function=False)
publish(None, tril_indices, method=False)
publish(None, triu_indices, method=False)

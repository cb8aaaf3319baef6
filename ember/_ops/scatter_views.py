"""The ``*_scatter`` ops: a copy of ``input`` with ``src`` written into one of its views.

``select_scatter``, ``slice_scatter``, ``diagonal_scatter`` and ``as_strided_scatter`` are the
out-of-place inverses of ``select``, ``slice``, ``diagonal`` and ``as_strided``. Each forward
copies ``input`` (keeping its memory layout, as torch's ``clone``) and assigns ``src`` into the
view; each backward sends ``grad`` outside the view to ``input`` and the view of ``grad`` to
``src``, written with the same ops, so double backward works.
"""

from __future__ import annotations

import numpy as np

from ember._core.tensor import Tensor, wrap_dim
from ember._ops.registry import dispatch, op, publish


def _clone_k(x: np.ndarray) -> np.ndarray:
    # a copy with x's memory layout (NumPy's order="K", torch's preserve_format for dense x)
    return np.array(x, order="K", copy=True)


def _diag_view(a: np.ndarray, offset: int, dim1: int, dim2: int) -> np.ndarray:
    """Return a writeable view of the diagonal of ``a`` (as ``np.diagonal``, last dim)."""
    v = np.moveaxis(a, (dim1, dim2), (-2, -1))
    v = v[..., :, offset:] if offset >= 0 else v[..., -offset:, :]
    n = max(min(v.shape[-2], v.shape[-1]), 0)
    strides = v.strides[:-2] + (v.strides[-2] + v.strides[-1],)
    return np.lib.stride_tricks.as_strided(v, v.shape[:-2] + (n,), strides, writeable=True)


def _strided_view(a: np.ndarray, perm: tuple, size, stride, offset) -> np.ndarray:
    # a's memory, in the order of its layout, seen with torch's as_strided geometry
    mem = a.transpose(perm).reshape(-1)
    item = a.itemsize
    return np.lib.stride_tricks.as_strided(
        mem[offset:], tuple(size), tuple(s * item for s in stride), writeable=True
    )


def _size_error(src_shape, view_shape) -> RuntimeError:
    return RuntimeError(
        "expected src to have a size equal to the slice of self. src size = "
        f"{list(src_shape)}, slice size = {list(view_shape)}"
    )


def _check_src(input: Tensor, src: Tensor, view_shape: tuple) -> None:
    if not isinstance(src, Tensor):
        raise TypeError(f"argument 'src' (position 2) must be Tensor, not {type(src).__name__}")
    if tuple(src._data.shape) != tuple(view_shape):
        raise _size_error(src._data.shape, view_shape)


def _zeros_like_src(ctx, g: Tensor) -> Tensor:
    return g.new_zeros(ctx._input_meta[1][0] if ctx._input_meta[1] else ())


# ------------------------------------------------------------------------------ select_scatter


@op("select_scatter", grad_fn="SelectScatterBackward0")
def _select_scatter(x, src, dim, index):
    out = _clone_k(x)
    out[(slice(None),) * dim + (index,)] = src
    return out


@_select_scatter.backward
def _(ctx, g, dim, index):
    gx = gs = None
    if ctx.needs_input_grad[0]:
        zeros = g.new_zeros(g.shape[:dim] + g.shape[dim + 1 :])
        gx = dispatch(_select_scatter, (g, zeros), {"dim": dim, "index": index})
    if ctx.needs_input_grad[1]:
        gs = g.select(dim, index)
    return gx, gs


def select_scatter(input: Tensor, src: Tensor, dim: int, index: int) -> Tensor:
    """Return a copy of ``input`` with ``src`` written into ``input.select(dim, index)``."""
    view = input.detach().select(dim, index)  # torch's index and dimension checks
    _check_src(input, src, view._data.shape)
    d = wrap_dim(dim, input._data.ndim)
    n = input._data.shape[d]
    index = int(index)
    return dispatch(_select_scatter, (input, src), {"dim": d, "index": index % n})


# ------------------------------------------------------------------------------ slice_scatter


@op("slice_scatter", grad_fn="SliceScatterBackward0")
def _slice_scatter(x, src, dim, start, end, step):
    out = _clone_k(x)
    out[(slice(None),) * dim + (slice(start, end, step),)] = src
    return out


@_slice_scatter.backward
def _(ctx, g, dim, start, end, step):
    params = {"dim": dim, "start": start, "end": end, "step": step}
    gx = gs = None
    if ctx.needs_input_grad[0]:
        gx = dispatch(_slice_scatter, (g, _zeros_like_src(ctx, g)), params)
    if ctx.needs_input_grad[1]:
        gs = g[(slice(None),) * dim + (slice(start, end, step),)]
    return gx, gs


def slice_scatter(
    input: Tensor, src: Tensor, dim: int = 0, start=None, end=None, step: int = 1
) -> Tensor:
    """Return a copy of ``input`` with ``src`` written into ``input[start:end:step]`` along
    ``dim``."""
    nd = input._data.ndim
    d = wrap_dim(dim, nd)
    if step <= 0:
        raise RuntimeError("slice step must be positive")
    n = input._data.shape[d]
    start, end, _ = slice(start, end, step).indices(n)
    end = max(end, start)
    view_shape = list(input._data.shape)
    view_shape[d] = len(range(start, end, step))
    _check_src(input, src, view_shape)
    params = {"dim": d, "start": start, "end": end, "step": step}
    return dispatch(_slice_scatter, (input, src), params)


# ------------------------------------------------------------------------------ diagonal_scatter


@op("diagonal_scatter", grad_fn="DiagonalScatterBackward0")
def _diagonal_scatter(x, src, offset, dim1, dim2):
    out = _clone_k(x)
    _diag_view(out, offset, dim1, dim2)[...] = src
    return out


@_diagonal_scatter.backward
def _(ctx, g, offset, dim1, dim2):
    params = {"offset": offset, "dim1": dim1, "dim2": dim2}
    gx = gs = None
    if ctx.needs_input_grad[0]:
        gx = dispatch(_diagonal_scatter, (g, _zeros_like_src(ctx, g)), params)
    if ctx.needs_input_grad[1]:
        gs = g.diagonal(offset, dim1, dim2)
    return gx, gs


def diagonal_scatter(
    input: Tensor, src: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1
) -> Tensor:
    """Return a copy of ``input`` with ``src`` written into its diagonal
    ``input.diagonal(offset, dim1, dim2)``."""
    view = input.detach().diagonal(offset, dim1, dim2)  # torch's dimension checks
    _check_src(input, src, view._data.shape)
    nd = input._data.ndim
    params = {"offset": int(offset), "dim1": wrap_dim(dim1, nd), "dim2": wrap_dim(dim2, nd)}
    return dispatch(_diagonal_scatter, (input, src), params)


# ------------------------------------------------------------------------------ as_strided_scatter


@op("as_strided_scatter", grad_fn="AsStridedScatterBackward0")
def _as_strided_scatter(x, src, perm, size, stride, storage_offset):
    # the copy is laid out as x, whose dims in memory order are ``perm``
    out = np.array(x.transpose(perm), order="C", copy=True).transpose(np.argsort(perm))
    _strided_view(out, perm, size, stride, storage_offset)[...] = src
    return out


@_as_strided_scatter.backward
def _(ctx, g, perm, size, stride, storage_offset):
    params = {"perm": perm, "size": size, "stride": stride, "storage_offset": storage_offset}
    inv = tuple(int(i) for i in np.argsort(perm))
    laid = g.permute(perm).contiguous().permute(inv)  # grad in the input's memory layout
    gx = gs = None
    if ctx.needs_input_grad[0]:
        gx = dispatch(_as_strided_scatter, (laid, _zeros_like_src(ctx, g)), params)
    if ctx.needs_input_grad[1]:
        flat = laid.permute(perm).reshape(-1)
        gs = flat.as_strided(size, stride, flat.storage_offset() + storage_offset)
    return gx, gs


def as_strided_scatter(
    input: Tensor, src: Tensor, size, stride, storage_offset: int | None = None
) -> Tensor:
    """Return a copy of ``input`` with ``src`` written into the view
    ``as_strided(size, stride, storage_offset)`` of that copy."""
    size = tuple(int(s) for s in size)
    stride = tuple(int(s) for s in stride)
    if len(size) != len(stride):
        raise RuntimeError("mismatch in length of strides and shape")
    _check_src(input, src, size)
    off = 0 if storage_offset is None else int(storage_offset)
    numel = input._data.size
    if size and all(size):
        need = off + sum((n - 1) * s for n, s in zip(size, stride)) + 1
        if need > numel:
            raise RuntimeError(
                f"setStorage: sizes {list(size)}, strides {list(stride)}, storage offset {off}, "
                f"and itemsize {input._data.itemsize} requiring a storage size of "
                f"{need * input._data.itemsize} are out of bounds for storage of size "
                f"{numel * input._data.itemsize}"
            )
    # the order of input's dims in memory (outermost first), as torch's clone keeps it
    perm = tuple(int(i) for i in np.argsort([-s for s in input.stride()], kind="stable"))
    params = {"perm": perm, "size": size, "stride": stride, "storage_offset": off}
    return dispatch(_as_strided_scatter, (input, src), params)


for _f in (select_scatter, slice_scatter, diagonal_scatter, as_strided_scatter):
    publish(None, _f)

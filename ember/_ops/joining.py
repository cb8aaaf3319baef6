"""Joining and broadcasting: hstack/vstack/dstack/column_stack, atleast_nd, tensor_split,
broadcast_to/tensors/shapes, meshgrid, kron, block_diag, cartesian_prod, combinations.

Most are compositions of the view ops (``shape.py``, ``slicing.py``) and ``cat``/``stack``
(``cat_split.py``), so their grad_fn is the last op torch runs too (``CatBackward0``,
``ExpandBackward0``...).
"""

from __future__ import annotations

import operator
import warnings

import numpy as np

from ember._core import dtype as D
from ember._core.tensor import Size, Tensor, _wrap, wrap_dim
from ember._ops.cat_split import cat, stack
from ember._ops.reduce import check_out, write_out
from ember._ops.registry import SAME, dispatch, op, packed_items, publish
from ember._ops.shape import _unsafe_view, expand, reshape, unsqueeze, view
from ember._ops.slicing import slice_dim
from ember._ops.strides import _sizes


def _tensor_args(args) -> tuple:
    # the tensors, and whether they came as a sequence (one bare tensor did not)
    items = packed_items(args)
    if items is not None:
        return items, True
    return tuple(args), len(args) != 1


def _with_out(fn: str, res_fn, inputs: tuple, out):
    """Run ``res_fn()``; with ``out=``, check it as torch does and write the result into it."""
    if out is None:
        return res_fn()
    check_out(fn, out, inputs)
    res = res_fn()
    if not D.can_cast(res.dtype, out.dtype):
        name = D.scalar_type_name(out.dtype)
        if fn == "cat":
            raise TypeError(
                f"torch.cat(): input types can't be cast to the desired output type {name}"
            )
        raise RuntimeError(
            f"result type {D.scalar_type_name(res.dtype)} can't be cast to the desired output "
            f"type {name}"
        )
    return write_out(out, res)


# ------------------------------------------------------------------------------ atleast_nd


def _atleast(args, fn):
    tensors, many = _tensor_args(args)
    out = tuple(fn(t) for t in tensors)
    return out if many else out[0]


def _1d(t):
    return reshape(t, (1,)) if t._data.ndim == 0 else t


def _2d(t):
    nd = t._data.ndim
    if nd == 0:
        return reshape(t, (1, 1))
    return unsqueeze(t, 0) if nd == 1 else t


def _3d(t):
    nd = t._data.ndim
    if nd == 0:
        return reshape(t, (1, 1, 1))
    if nd == 1:
        return unsqueeze(unsqueeze(t, 0), -1)
    return unsqueeze(t, -1) if nd == 2 else t


def atleast_1d(*tensors):
    """Return each input with at least one dimension (0-d tensors become shape (1,))."""
    return _atleast(tensors, _1d)


def atleast_2d(*tensors):
    """Return each input with at least two dimensions."""
    return _atleast(tensors, _2d)


def atleast_3d(*tensors):
    """Return each input with at least three dimensions."""
    return _atleast(tensors, _3d)


# ------------------------------------------------------------------------------ *stack


def _nonempty(tensors, name):
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError(f"{name} expects a non-empty TensorList")
    return tensors


def hstack(tensors, *, out=None) -> Tensor:
    """Return ``tensors`` concatenated horizontally (dim 0 for 1-D inputs, else dim 1)."""
    ts = [_1d(t) for t in _nonempty(tensors, "hstack")]
    return _with_out("cat", lambda: cat(ts, 0 if ts[0]._data.ndim == 1 else 1), ts, out)


def vstack(tensors, *, out=None) -> Tensor:
    """Return ``tensors`` (made at least 2-D) concatenated along dim 0."""
    ts = [_2d(t) for t in _nonempty(tensors, "vstack")]
    return _with_out("cat", lambda: cat(ts, 0), ts, out)


def dstack(tensors, *, out=None) -> Tensor:
    """Return ``tensors`` (made at least 3-D) concatenated along dim 2."""
    ts = [_3d(t) for t in _nonempty(tensors, "dstack")]
    return _with_out("cat", lambda: cat(ts, 2), ts, out)


def column_stack(tensors, *, out=None) -> Tensor:
    """Return ``tensors`` as columns: 0-d and 1-d inputs become (n, 1), then cat along dim 1."""
    ts = _nonempty(tensors, "column_stack")
    cols = [reshape(t, (t._data.size, 1)) if t._data.ndim <= 1 else t for t in ts]
    return _with_out("cat", lambda: cat(cols, 1), cols, out)


row_stack = vstack


# ------------------------------------------------------------------------------ tensor_split


def tensor_split(
    input: Tensor,
    indices_or_sections=None,
    dim: int = 0,
    *,
    sections=None,
    indices=None,
    tensor_indices_or_sections=None,
):
    """Return views of ``input`` split into ``sections`` near-equal parts, or at ``indices``."""
    for alt in (sections, indices, tensor_indices_or_sections):
        if alt is not None:
            indices_or_sections = alt
    nd = input._data.ndim
    if nd == 0:
        raise RuntimeError(
            "tensor_split expected at least a 1-dimensional tensor, but got a tensor with 0 dims"
        )
    d = wrap_dim(dim, nd)
    n = input._data.shape[d]
    ios = indices_or_sections
    if isinstance(ios, Tensor):
        if ios.dtype is not D.int64:
            raise RuntimeError(
                "tensor_split expected tensor_indices_or_sections to have dtype of long, but "
                f"got {D.scalar_type_name(ios.dtype)}"
            )
        if ios._data.ndim > 1:
            raise RuntimeError(
                "tensor_split expected tensor_indices_or_sections to be a zero-dimensional or "
                f"one-dimensional tensor, but got a tensor with {ios._data.ndim} dims"
            )
        ios = int(ios._data) if ios._data.ndim == 0 else tuple(ios._data.tolist())
    if isinstance(ios, (int, np.integer)):
        sections = int(ios)
        if sections <= 0:
            raise RuntimeError(f"number of sections must be larger than 0, got {sections}")
        size, extra = divmod(n, sections)
        out, start = [], 0
        for i in range(sections):
            m = size + (i < extra)
            out.append(slice_dim(input, d, start, start + m))
            start += m
        return tuple(out)
    try:
        idx = [operator.index(i) for i in ios]
    except TypeError:
        raise TypeError(
            f"tensor_split() received an invalid combination of arguments - got (Tensor, "
            f"{type(ios).__name__}), but expected one of:\n"
            " * (Tensor input, tuple of ints indices, int dim = 0)\n"
            " * (Tensor input, Tensor tensor_indices_or_sections, int dim = 0)\n"
            " * (Tensor input, int sections, int dim = 0)\n"
        ) from None
    out, start = [], 0
    for i in idx + [n]:
        stop = i if i is not None else n
        stop = max(stop + n, 0) if stop < 0 else min(stop, n)
        out.append(slice_dim(input, d, start, max(stop, start)))
        start = stop
    return tuple(out)


# ------------------------------------------------------------------------------ broadcasting


def broadcast_shapes(*shapes) -> Size:
    """Return the shape that ``shapes`` broadcast to (ints count as 1-D shapes)."""
    norm = []
    for s in shapes:
        if isinstance(s, (int, np.integer)):
            norm.append((int(s),))
        else:
            norm.append(tuple(operator.index(n) for n in s))
    nd = max((len(s) for s in norm), default=0)
    result = [1] * nd
    for i, s in enumerate(norm):
        for j in range(-1, -len(s) - 1, -1):
            n = s[j]
            if n < 0:
                raise RuntimeError(
                    f"Trying to create tensor with negative dimension {n}: {list(s)}"
                )
            if result[j] == 1 or result[j] == n:
                result[j] = n
            elif n != 1:
                raise RuntimeError(
                    f"Attempting to broadcast a dimension of length {n} at {j}! Mismatching "
                    f"argument at index {i} had {tuple(s)}; but expected shape should be "
                    f"broadcastable to {result}"
                )
    return Size(result)


def broadcast_to(input: Tensor, size) -> Tensor:
    """Return a view of ``input`` broadcast to ``size`` (as :meth:`Tensor.expand`)."""
    return expand(input, _sizes((size,)))


def broadcast_tensors(*tensors) -> tuple:
    """Return views of ``tensors`` broadcast to their common shape."""
    tensors, _ = _tensor_args(tensors)
    shapes = [t._data.shape for t in tensors]
    try:
        shape = tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        shape = None
    if shape is None:
        a = shapes[0]
        for b in shapes[1:]:
            try:
                a = np.broadcast_shapes(a, b)
            except ValueError:
                n = max(len(a), len(b))
                pa, pb = (1,) * (n - len(a)) + a, (1,) * (n - len(b)) + b
                for k in range(n - 1, -1, -1):
                    if pa[k] != pb[k] and pa[k] != 1 and pb[k] != 1:
                        raise RuntimeError(
                            f"The size of tensor a ({pa[k]}) must match the size of tensor b "
                            f"({pb[k]}) at non-singleton dimension {k}"
                        ) from None
    return tuple(t if t._data.shape == shape else expand(t, shape) for t in tensors)


def meshgrid(*tensors, indexing: str | None = None) -> tuple:
    """Return coordinate grids, one per 0-D/1-D input (``indexing`` "ij" or "xy")."""
    tensors, _ = _tensor_args(tensors)
    if indexing is None:
        warnings.warn(
            "torch.meshgrid: in an upcoming release, it will be required to pass the indexing "
            "argument.",
            UserWarning,
            stacklevel=2,
        )
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise RuntimeError(
            f'torch.meshgrid: indexing must be one of "xy" or "ij", but received: {indexing}'
        )
    if not tensors:
        raise RuntimeError("meshgrid expects a non-empty TensorList")
    for t in tensors:
        if t._data.ndim > 1:
            raise RuntimeError(
                f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got: {t}"
            )
    for t in tensors[1:]:
        if t.dtype is not tensors[0].dtype:
            raise RuntimeError(
                "torch.meshgrid: Expected all tensors in the tensor list to have the same dtype."
            )
    n = len(tensors)
    pos = list(range(n))
    if indexing == "xy" and n >= 2:
        pos[0], pos[1] = 1, 0
    sizes = [t._data.size for t in tensors]
    shape = [0] * n
    for i in range(n):
        shape[pos[i]] = sizes[i]
    out = []
    for i, t in enumerate(tensors):
        vshape = [1] * n
        vshape[pos[i]] = -1
        out.append(expand(view(t, tuple(vshape)), tuple(shape)))
    return tuple(out)


# ------------------------------------------------------------------------------ kron, block_diag


def _unsafe_reshape(t: Tensor, shape: tuple) -> Tensor:
    if not t._data.flags.c_contiguous:
        t = t.contiguous()
    return dispatch(_unsafe_view, (t,), {"shape": shape})


def kron(input: Tensor, other: Tensor, *, out=None) -> Tensor:
    """Return the Kronecker product of ``input`` and ``other``."""
    if out is not None:
        return _with_out("mul", lambda: kron(input, other), (input, other), out)
    a, b = input._data.shape, other._data.shape
    nd = max(len(a), len(b))
    a = (1,) * (nd - len(a)) + a
    b = (1,) * (nd - len(b)) + b
    ia, ib = [], []
    for x, y in zip(a, b):
        ia += [x, 1]
        ib += [1, y]
    prod = _unsafe_reshape(input, tuple(ia)) * _unsafe_reshape(other, tuple(ib))
    return _unsafe_reshape(prod, tuple(x * y for x, y in zip(a, b)))


@op("block_diag", grad_fn="BlockDiagBackward0", promote=SAME)
def _block_diag(*arrays, shapes):
    rows = sum(s[0] for s in shapes)
    cols = sum(s[1] for s in shapes)
    dt = arrays[0].dtype if arrays else np.float32
    out = np.zeros((rows, cols), dtype=dt)
    r = c = 0
    for a, (m, n) in zip(arrays, shapes):
        out[r : r + m, c : c + n] = a.reshape(m, n)
        r += m
        c += n
    return out


@_block_diag.backward
def _(ctx, g, shapes):
    grads = []
    r = c = 0
    for need, (m, n), meta in zip(ctx.needs_input_grad, shapes, ctx._input_meta):
        if need:
            part = slice_dim(slice_dim(g, 0, r, r + m), 1, c, c + n)
            grads.append(part.reshape(meta[0]))
        else:
            grads.append(None)
        r += m
        c += n
    return tuple(grads)


def block_diag(*tensors) -> Tensor:
    """Return a block-diagonal matrix built from 0-D, 1-D and 2-D ``tensors``."""
    shapes = []
    for i, t in enumerate(tensors):
        shp = t._data.shape
        if len(shp) > 2:
            raise RuntimeError(
                "torch.block_diag: Input tensors must have 2 or fewer dimensions. Input "
                f"{i} has {len(shp)} dimensions"
            )
        shapes.append((1, 1) if len(shp) == 0 else (1, shp[0]) if len(shp) == 1 else shp)
    if not tensors:
        return _wrap(np.zeros((1, 0), dtype=D.get_default_dtype().np))
    return dispatch(_block_diag, tuple(tensors), {"shapes": tuple(shapes)})


# ------------------------------------------------------------------------------ products


def cartesian_prod(*tensors) -> Tensor:
    """Return the Cartesian product of 1-D ``tensors`` as rows of a 2-D tensor."""
    for t in tensors:
        if t._data.ndim != 1:
            raise RuntimeError(f"Expect a 1D vector, but got shape {list(t._data.shape)}")
    if len(tensors) == 1:
        return tensors[0]
    grids = meshgrid(*tensors, indexing="ij")
    return stack([reshape(g, (-1,)) for g in grids], 1)


def combinations(input: Tensor, r: int = 2, with_replacement: bool = False) -> Tensor:
    """Return the length-``r`` combinations of the elements of 1-D ``input``, as rows."""
    if input._data.ndim != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(input._data.shape)}")
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return input.new_empty((0,))
    n = input._data.shape[0]
    grids = np.indices((n,) * r).reshape(r, -1)
    diffs = np.diff(grids, axis=0)
    keep = np.all(diffs >= 0 if with_replacement else diffs > 0, axis=0)
    idx = grids[:, keep]
    cols = [input[_wrap(np.ascontiguousarray(idx[k]))] for k in range(r)]
    return stack(cols, 1)


# composites of the shape ops (block_diag has an op of its own)
publish(None, vstack, name="row_stack", method=False)
for _f in (atleast_1d, atleast_2d, atleast_3d, hstack, vstack, dstack, column_stack):
    publish(None, _f, method=False)
for _f in (broadcast_shapes, broadcast_tensors, meshgrid, cartesian_prod):
    publish(None, _f, method=False)
publish(_block_diag, block_diag, method=False)
publish(None, tensor_split)
publish(None, broadcast_to)
publish(None, kron)
publish(None, combinations, method=False)

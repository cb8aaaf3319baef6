"""``cat`` and ``stack`` and their inverses ``unbind``, ``split``/``split_with_sizes`` and
``chunk`` (views of their input); the backward of each side is the other."""

from __future__ import annotations

import numpy as np

from ember._core.tensor import Tensor, wrap_dim
from ember._ops.registry import SAME, dispatch, op, publish
from ember._ops.strides import _select_array, _sizes, _slice_array


def _legacy_empty(a) -> bool:
    # torch.cat skips 1-D tensors of shape (0,) whatever the other inputs' shapes
    return a.ndim == 1 and a.shape[0] == 0


@op("cat", grad_fn="CatBackward0", promote=SAME)
def _cat(*arrays, dim, sizes):
    kept = [a for a in arrays if not _legacy_empty(a)] or arrays[:1]
    return np.concatenate(kept, axis=dim)


@_cat.backward
def _(ctx, g, dim, sizes):
    # ``sizes``: each input's extent along ``dim`` (None for a skipped legacy empty tensor)
    out = []
    start = 0
    for need, n in zip(ctx.needs_input_grad, sizes):
        if n is None:
            out.append(g.new_zeros((0,)) if need else None)
            continue
        out.append(g.narrow(dim, start, n) if need else None)
        start += n
    return tuple(out)


def _tensor_list(fn: str, tensors) -> list:
    """Return ``tensors`` as a list, raising torch's TypeError for a Tensor or a non-Tensor
    element (a list of NumPy arrays passed to ``torch.stack``)."""
    if isinstance(tensors, Tensor):
        raise TypeError(
            f"{fn}(): argument 'tensors' (position 1) must be tuple of Tensors, not Tensor"
        )
    tensors = list(tensors)
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            kind = type(t)
            name = kind.__name__
            if kind.__module__ != "builtins":
                name = f"{kind.__module__}.{name}"
            raise TypeError(f"expected Tensor as element {i} in argument 0, but got {name}")
    return tensors


def cat(tensors, dim: int = 0, *, out=None):
    """Return the concatenation of ``tensors`` along ``dim``."""
    tensors = _tensor_list("cat", tensors)
    if not tensors:
        raise ValueError("torch.cat(): expected a non-empty list of Tensors")
    kept = [(i, t) for i, t in enumerate(tensors) if not _legacy_empty(t._data)]
    if not kept:
        return dispatch(_cat, tuple(tensors), {"dim": 0, "sizes": (0,) * len(tensors)})
    ref = kept[0][1]._data
    for i, t in enumerate(tensors):
        if t._data.ndim == 0:
            raise RuntimeError(f"zero-dimensional tensor (at position {i}) cannot be concatenated")
    d = wrap_dim(dim, ref.ndim)
    for i, t in kept:
        a = t._data
        if a.ndim != ref.ndim:
            raise RuntimeError(
                f"Tensors must have same number of dimensions: got {ref.ndim} and {a.ndim}"
            )
        for k in range(ref.ndim):
            if k != d and a.shape[k] != ref.shape[k]:
                raise RuntimeError(
                    f"Sizes of tensors must match except in dimension {d}. Expected size "
                    f"{ref.shape[k]} but got size {a.shape[k]} for tensor number {i} in the list."
                )
    sizes = tuple(None if _legacy_empty(t._data) else t._data.shape[d] for t in tensors)
    return dispatch(_cat, tuple(tensors), {"dim": d, "sizes": sizes})


concat = concatenate = cat


@op("stack", grad_fn="StackBackward0", promote=SAME)
def _stack(*arrays, dim):
    return np.stack(arrays, axis=dim)


@_stack.backward
def _(ctx, g, dim):
    parts = g.unbind(dim)
    return tuple(p if need else None for p, need in zip(parts, ctx.needs_input_grad))


def stack(tensors, dim: int = 0, *, out=None):
    """Return ``tensors`` (all the same shape) stacked along a new dimension ``dim``."""
    tensors = _tensor_list("stack", tensors)
    if not tensors:
        raise RuntimeError("stack expects a non-empty TensorList")
    shp = tensors[0]._data.shape
    d = wrap_dim(dim, len(shp) + 1)
    for i, t in enumerate(tensors):
        if t._data.shape != shp:
            raise RuntimeError(
                f"stack expects each tensor to be equal size, but got {list(shp)} at entry 0 and "
                f"{list(t._data.shape)} at entry {i}"
            )
    return dispatch(_stack, tuple(tensors), {"dim": d})


@op("unbind", grad_fn="UnbindBackward0", view="multi")
def _unbind(x, dim):
    return tuple(_select_array(x, dim, i) for i in range(x.shape[dim]))


@_unbind.backward
def _(ctx, *grads, dim):
    shape, dtype = ctx._input_meta[0]
    sub = shape[:dim] + shape[dim + 1 :]
    ref = next(g for g in grads if g is not None)
    parts = [g if g is not None else ref.new_zeros(sub) for g in grads]
    return stack(parts, dim)


def unbind(input, dim: int = 0):
    """Return a tuple of views: the slices of ``input`` along ``dim``."""
    nd = input._data.ndim
    if nd == 0:
        raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    return dispatch(_unbind, (input,), {"dim": wrap_dim(dim, nd)})


def _split_forward(x, dim, sizes):
    out = []
    start = 0
    for n in sizes:
        out.append(_slice_array(x, dim, start, start + n, 1))
        start += n
    return tuple(out)


def _split_backward(ctx, *grads, dim, sizes):
    shape = ctx._input_meta[0][0]
    ref = next(g for g in grads if g is not None)
    parts = []
    for g, n in zip(grads, sizes):
        if g is None:
            g = ref.new_zeros(shape[:dim] + (n,) + shape[dim + 1 :])
        parts.append(g)
    return cat(parts, dim)


_split = op("split", grad_fn="SplitBackward0", view="multi")(_split_forward)
_split.backward(_split_backward)
_split_sizes = op("split_with_sizes", grad_fn="SplitWithSizesBackward0", view="multi")(
    _split_forward
)
_split_sizes.backward(_split_backward)


def split(tensor, split_size_or_sections, dim: int = 0):
    """Return views: chunks of ``split_size`` along ``dim``, or of the listed sizes."""
    if not isinstance(split_size_or_sections, (int, np.integer)):
        return split_with_sizes(tensor, split_size_or_sections, dim)
    nd = tensor._data.ndim
    if nd == 0:
        raise RuntimeError("split expects at least a 1-dimensional tensor")
    d = wrap_dim(dim, nd)
    n = tensor._data.shape[d]
    size = int(split_size_or_sections)
    if size < 0:
        raise RuntimeError(f"split expects split_size be non-negative, but got split_size={size}")
    if size == 0 and n != 0:
        raise RuntimeError(
            f"split_size can only be 0 if dimension size is 0, but got dimension size of {n}"
        )
    count = max(-(-n // size), 1) if size else 1
    sizes = (size,) * (count - 1) + (size - (size * count - n),)
    return dispatch(_split, (tensor,), {"dim": d, "sizes": sizes})


def split_with_sizes(input, split_sizes, dim: int = 0):
    """Return views of ``input`` along ``dim`` with the listed sizes."""
    nd = input._data.ndim
    if nd == 0:
        raise RuntimeError("split expects at least a 1-dimensional tensor")
    d = wrap_dim(dim, nd)
    n = input._data.shape[d]
    sizes = _sizes((split_sizes,))
    if any(s < 0 for s in sizes):
        raise RuntimeError(
            "split_with_sizes expects split_sizes have only non-negative entries, but got "
            f"split_sizes={list(sizes)}"
        )
    if sum(sizes) != n:
        raise RuntimeError(
            f"split_with_sizes expects split_sizes to sum exactly to {n} (input tensor's size at "
            f"dimension {d}), but got split_sizes={list(sizes)}"
        )
    return dispatch(_split_sizes, (input,), {"dim": d, "sizes": sizes})


def chunk(input, chunks: int, dim: int = 0):
    """Return up to ``chunks`` views of ``input`` split evenly along ``dim``."""
    nd = input._data.ndim
    if nd == 0:
        raise RuntimeError("chunk expects at least a 1-dimensional tensor")
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    d = wrap_dim(dim, nd)
    n = input._data.shape[d]
    size = -(-n // chunks)
    if size == 0 and n == 0:
        # torch keeps the number of (empty) chunks
        return split_with_sizes(input, (0,) * chunks, d)
    return split(input, size, d)


for _op, _f in (
    (_unbind, unbind),
    (_split, split),
    (_split_sizes, split_with_sizes),
    (None, chunk),
):
    publish(_op, _f)
publish(_cat, cat, method=False, aliases=("concat", "concatenate"))
publish(_stack, stack, method=False)

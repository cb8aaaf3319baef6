"""torch's view geometry on NumPy arrays: strides in elements, arrays built over the same memory
with torch's strides where NumPy picks others (``_strided``), ATen's rule for which shapes a view
can take (``_compute_stride``), slice/select keys and the shape-argument parsers the view ops
share.
"""

from __future__ import annotations

import operator

import numpy as np

from ember._core.storage import array_ptr as _ptr
from ember._core.storage import owner_of
from ember._core.tensor import Tensor


def _estrides(a: np.ndarray) -> tuple:
    """Return the strides of ``a`` in elements."""
    item = a.itemsize
    return tuple(s // item for s in a.strides)


class _Memory:
    """Raw memory handed to ``np.asarray`` (the last resort of ``_strided``)."""

    def __init__(self, interface, base):
        self.__array_interface__ = interface
        self.base = base


def _strided(x: np.ndarray, shape, strides, offset: int = 0) -> np.ndarray:
    """Return an array over ``x``'s memory with ``shape`` and ``strides`` (in elements), starting
    ``offset`` elements after ``x``'s first element.

    Its ``.base`` chain ends at ``x``'s owner, so ``storage_offset`` and ``untyped_storage`` stay
    right (NumPy's ``as_strided`` would hide the owner behind a dummy object).
    """
    item = x.itemsize
    bstrides = tuple(s * item for s in strides)
    if offset >= 0 and x.flags.c_contiguous:
        try:  # the cheap case: x itself is the buffer
            return np.ndarray(shape, x.dtype, buffer=x, offset=offset * item, strides=bstrides)
        except (TypeError, ValueError):
            pass  # the view reaches outside x: use the whole storage
    owner = owner_of(x)
    start = _ptr(x) - _ptr(owner) + offset * item
    if owner.flags.c_contiguous or owner.flags.f_contiguous:
        if start > owner.nbytes and 0 in shape:
            start = owner.nbytes  # torch lets an empty view start past the end; NumPy cannot
        return np.ndarray(shape, x.dtype, buffer=owner, offset=start, strides=bstrides)
    # the owner is no plain buffer (it was itself made by as_strided): raw memory
    iface = dict(x.__array_interface__)
    iface.update(
        shape=tuple(shape),
        strides=bstrides,
        data=(_ptr(x) + offset * item, not x.flags.writeable),
    )
    iface.pop("descr", None)
    out = np.asarray(_Memory(iface, x))
    return out if out.dtype == x.dtype else out.view(x.dtype)


def _contiguous_strides(shape) -> tuple:
    # torch's default strides (empty dims count as 1, so no stride is 0)
    strides = []
    s = 1
    for n in reversed(shape):
        strides.append(s)
        s *= max(n, 1)
    return tuple(reversed(strides))


def _compute_stride(oldshape, oldstride, newshape):
    """Return torch's strides for viewing (oldshape, oldstride) as ``newshape``, or None.

    ATen's ``computeStride``: dims are grouped into contiguous chunks; each chunk must map onto
    whole dims of the new shape.
    """
    if not oldshape:
        return (1,) * len(newshape)
    numel = 1
    for n in oldshape:
        numel *= n
    if numel == 0:
        if tuple(oldshape) == tuple(newshape):
            return tuple(oldstride)
        return _contiguous_strides(newshape)
    new = [0] * len(newshape)
    view_d = len(newshape) - 1
    chunk_base = oldstride[-1]
    tensor_numel = 1
    view_numel = 1
    for d in range(len(oldshape) - 1, -1, -1):
        tensor_numel *= oldshape[d]
        if d == 0 or (oldshape[d - 1] != 1 and oldstride[d - 1] != tensor_numel * chunk_base):
            while view_d >= 0 and (view_numel < tensor_numel or newshape[view_d] == 1):
                new[view_d] = view_numel * chunk_base
                view_numel *= newshape[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return None
            if d > 0:
                chunk_base = oldstride[d - 1]
                tensor_numel = 1
                view_numel = 1
    if view_d != -1:
        return None
    return tuple(new)


def _slice_key(dim: int, start: int, end: int, step: int) -> tuple:
    return (slice(None),) * dim + (slice(start, end, step),)


def _select_key(dim: int, index: int) -> tuple:
    return (slice(None),) * dim + (index, Ellipsis)


def _slice_array(x: np.ndarray, dim: int, start: int, end: int, step: int) -> np.ndarray:
    """``x[start:end:step]`` along ``dim`` (bounds already clamped) with torch's geometry."""
    out = x[_slice_key(dim, start, end, step)]
    if out.size == 0 and x.ndim:
        # NumPy leaves an empty slice at x's first element with an unscaled stride
        st = list(_estrides(x))
        offset = start * st[dim]
        st[dim] *= step
        return _strided(x, out.shape, st, offset)
    return out


def _select_array(x: np.ndarray, dim: int, index: int) -> np.ndarray:
    return x[_select_key(dim, index)]


def _sizes(args) -> tuple:
    """Accept ``f(2, 3)``, ``f((2, 3))``, ``f([2, 3])`` and ``f(Size)``."""
    if not args:
        raise TypeError("missing 1 required positional argument: a sequence of ints")
    if len(args) == 1 and not isinstance(args[0], (int, np.integer, Tensor)):
        args = args[0]
    try:
        return tuple(operator.index(s) for s in args)
    except TypeError:
        raise TypeError(f"expected a sequence of ints, got {args!r}") from None


def infer_shape(shape: tuple, numel: int) -> tuple:
    """Resolve one ``-1`` in ``shape`` for ``numel`` elements, with torch's errors."""
    infer = None
    known = 1
    for i, s in enumerate(shape):
        if s == -1:
            if infer is not None:
                raise RuntimeError("only one dimension can be inferred")
            infer = i
        elif s < 0:
            raise RuntimeError(f"invalid shape dimension {s} at index {i} of shape {list(shape)}")
        else:
            known *= s
    if numel == known or (infer is not None and known > 0 and numel % known == 0):
        if infer is not None:
            if known == 0:
                raise RuntimeError(
                    f"cannot reshape tensor of 0 elements into shape {list(shape)} because the "
                    "unspecified dimension size -1 can be any value and is ambiguous"
                )
            shape = shape[:infer] + (numel // known,) + shape[infer + 1 :]
        return shape
    raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")

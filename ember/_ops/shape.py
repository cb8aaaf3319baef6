"""Shape and view ops. A view op's forward returns a NumPy view of its input; dispatch then makes
the result share the input's version counter and remember how to replay itself from the base.
Also cat and stack, which split/unbind need for their backward.

Strides are torch's: where NumPy picks other strides (size-1 and empty dims, empty slices) or
has no view op (unsqueeze with torch's stride, expand, diagonal, unfold, as_strided), the array
is built with torch's geometry by ``_strided``, over the same memory.
"""

from __future__ import annotations

import operator
import warnings

import numpy as np

from ember._core.storage import array_ptr as _ptr
from ember._core.storage import owner_of
from ember._core.tensor import Size, Tensor, _wrap, contiguous_format, preserve_format, wrap_dim
from ember._ops.registry import SAME, _type_name, dispatch, op, publish

# ------------------------------------------------------------------------------ geometry


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


# ------------------------------------------------------------------------------ view / reshape

_VIEW_ERR = (
    "view size is not compatible with input tensor's size and stride (at least one dimension "
    "spans across two contiguous subspaces). Use .reshape(...) instead."
)


def _reshape_array(x: np.ndarray, shape: tuple) -> np.ndarray:
    try:
        out = np.reshape(x, shape, copy=False)
    except ValueError:
        raise RuntimeError(_VIEW_ERR) from None
    if 1 in shape or out.size == 0:
        # only size-1 dims and empty tensors can get other strides from NumPy than from torch
        want = _compute_stride(x.shape, _estrides(x), shape)
        if want is not None and want != _estrides(out):
            return _strided(x, shape, want)
    return out


def _reshape_backward(ctx, g, shape):
    return g.reshape(ctx._input_meta[0][0])


@op("view", grad_fn="ViewBackward0", view=True)
def _view(x, shape):
    return _reshape_array(x, shape)


@op("_reshape_alias", grad_fn="ReshapeAliasBackward0", view=True)
def _reshape_alias(x, shape):
    return _reshape_array(x, shape)


@op("_unsafe_view", grad_fn="UnsafeViewBackward0")
def _unsafe_view(x, shape):
    return _reshape_array(x, shape)


def _reshape_array_backward(ctx, g, **_):
    return g.reshape(ctx._input_meta[0][0])


for _o in (_view, _reshape_alias, _unsafe_view):
    _o.backward(_reshape_backward)
    _o.array_backward(_reshape_array_backward)


def _view_signature_error(args: tuple, kwargs: dict) -> TypeError:
    from ember._core.dtype import dtype as _dtype

    def name(v):
        return "torch.dtype" if isinstance(v, _dtype) else type(v).__name__

    keywords = [f"{k}={name(v)}" for k, v in kwargs.items()]
    # torch's rendering: keywords alone keep a trailing ", "
    got = (
        ", ".join([name(v) for v in args] + keywords)
        if args
        else "".join(f"{k}, " for k in keywords)
    )
    return TypeError(
        f"view() received an invalid combination of arguments - got ({got}), but "
        "expected one of:\n * (torch.dtype dtype)\n * (tuple of ints size)\n"
    )


def view(self, *shape, **kwargs):
    """Return a view of ``self`` with the given shape (or reinterpreted as another dtype):
    ``view(*shape)``, ``view(size=shape)``, ``view(dtype)`` or ``view(dtype=dtype)``."""
    from ember._core.dtype import dtype as _dtype

    if kwargs:
        if shape or len(kwargs) != 1 or not kwargs.keys() <= {"dtype", "size"}:
            raise _view_signature_error(shape, kwargs)
        ((key, value),) = kwargs.items()
        if (key == "dtype") != isinstance(value, _dtype):
            raise _view_signature_error(shape, kwargs)
        shape = (value,)
    if not shape:
        raise _view_signature_error(shape, kwargs)
    if len(shape) == 1 and not isinstance(shape[0], (int, np.integer, tuple, list, Size, Tensor)):
        if isinstance(shape[0], _dtype):
            return _view_dtype(self, shape[0])
        raise _view_signature_error(shape, kwargs)
    shape = infer_shape(_sizes(shape), self._data.size)
    return dispatch(_view, (self,), {"shape": shape})


def _view_dtype(self, dtype):
    # torch: shares storage and version counter, is not a view for autograd (``_base`` is
    # None) and is never differentiable
    a = self._data
    old, new = a.itemsize, dtype.itemsize
    if new != old:
        what = f"to view {_type_name(self.dtype)} as {_type_name(dtype)} (different element sizes)"
        if a.ndim == 0:
            raise RuntimeError(f"self.dim() cannot be 0 {what}")
        st = _estrides(a)
        if st[-1] != 1 and a.size:  # NumPy gives empty arrays stride 0
            raise RuntimeError(f"self.stride(-1) must be 1 {what}, but got {st[-1]}")
        if new > old:
            ratio = new // old
            if a.shape[-1] % ratio:
                raise RuntimeError(
                    f"self.size(-1) must be divisible by {ratio} {what}, but got {a.shape[-1]}"
                )
            off = self.storage_offset()
            if off % ratio:
                raise RuntimeError(
                    f"self.storage_offset() must be divisible by {ratio} {what}, but got {off}"
                )
            for i, s in enumerate(st[:-1]):
                if s % ratio:
                    raise RuntimeError(
                        f"self.stride({i}) must be divisible by {ratio} {what}, but got {s}"
                    )
    try:
        out = a.view(dtype.np)
    except ValueError as e:  # NumPy's own check; torch's checks above come first
        raise RuntimeError(f"view(dtype): {e}") from None
    t = _wrap(out)
    t._vc = self._vc
    return t


def reshape(input, *shape):
    """Return ``input`` with the given shape: a view when strides allow it, else a copy."""
    a = input._data
    shape = infer_shape(_sizes(shape), a.size)
    if a.flags.c_contiguous:
        return dispatch(_view, (input,), {"shape": shape})
    if _compute_stride(a.shape, _estrides(a), shape) is not None:
        return dispatch(_reshape_alias, (input,), {"shape": shape})
    copy = dispatch(_clone_op(), (input,), {"memory_format": contiguous_format})
    return dispatch(_unsafe_view, (copy,), {"shape": shape})


def _clone_op():
    from ember._ops.pointwise import _clone

    return _clone


def view_as(self, other):
    """Return ``self`` viewed with the shape of ``other``."""
    return view(self, other.shape)


def reshape_as(self, other):
    """Return ``self`` reshaped to the shape of ``other``."""
    return reshape(self, other.shape)


def flatten(input, start_dim: int = 0, end_dim: int = -1):
    """Return ``input`` with dims ``start_dim..end_dim`` flattened into one."""
    nd = input._data.ndim
    if nd == 0:
        return reshape(input, (1,))
    s, e = wrap_dim(start_dim, nd), wrap_dim(end_dim, nd)
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    if s == e:
        return input
    shp = input._data.shape
    n = 1
    for d in shp[s : e + 1]:
        n *= d
    return reshape(input, shp[:s] + (n,) + shp[e + 1 :])


def unflatten(input, dim: int, sizes):
    """Return ``input`` with dimension ``dim`` expanded into ``sizes``."""
    nd = input._data.ndim
    d = wrap_dim(dim, nd)
    sizes = _sizes((sizes,))
    if not sizes:
        raise RuntimeError("unflatten: sizes must be non-empty")
    shp = input._data.shape
    try:
        if nd == 0:
            raise IndexError("Dimension specified as 0 but tensor has no dimensions")
        sizes = infer_shape(sizes, shp[d])
    except (RuntimeError, IndexError) as e:
        if str(e).startswith("shape '"):
            raise RuntimeError(
                f"unflatten: Provided sizes {list(sizes)} don't multiply up to the size of dim "
                f"{d} ({shp[d]}) in the input tensor"
            ) from None
        raise RuntimeError(f"unflatten got an unexpected error:\n{e}") from None
    return view(input, shp[:d] + sizes + shp[d + 1 :])


# ------------------------------------------------------------------------------ permutations


@op("permute", grad_fn="PermuteBackward0", view=True)
def _permute(x, dims):
    return np.transpose(x, dims)


_permute.backward(lambda ctx, g, dims: g.permute(tuple(np.argsort(dims).tolist())))
_permute.array_backward(lambda ctx, g, dims: g.transpose(np.argsort(dims)))


def permute(input, *dims):
    """Return a view of ``input`` with its dimensions permuted."""
    nd = input._data.ndim
    dims = _sizes(dims)
    if len(dims) != nd:
        raise RuntimeError(
            "permute(sparse_coo): number of dimensions in the tensor input does not match the "
            f"length of the desired ordering of dimensions i.e. input.dim() = {nd} is not equal "
            f"to len(dims) = {len(dims)}"
        )
    dims = tuple(wrap_dim(d, nd) for d in dims)
    if len(set(dims)) != nd:
        raise RuntimeError("permute(): duplicate dims are not allowed.")
    return dispatch(_permute, (input,), {"dims": dims})


@op("transpose", grad_fn="TransposeBackward0", view=True)
def _transpose(x, dim0, dim1):
    return np.swapaxes(x, dim0, dim1) if x.ndim else x.view()


_transpose.backward(lambda ctx, g, dim0, dim1: g.transpose(dim0, dim1))
_transpose.array_backward(lambda ctx, g, dim0, dim1: _transpose.forward(g, dim0, dim1))


def transpose(input, dim0: int, dim1: int):
    """Return a view of ``input`` with ``dim0`` and ``dim1`` swapped."""
    nd = input._data.ndim
    return dispatch(_transpose, (input,), {"dim0": wrap_dim(dim0, nd), "dim1": wrap_dim(dim1, nd)})


@op("t", grad_fn="TBackward0", view=True)
def _t(x):
    return x.T


_t.backward(lambda ctx, g: g.t())
_t.array_backward(lambda ctx, g: g.T)


def t(input):
    """Return the transpose of a tensor with at most 2 dims."""
    if input._data.ndim > 2:
        raise RuntimeError(
            f"t() expects a tensor with <= 2 dimensions, but self is {input._data.ndim}D"
        )
    return dispatch(_t, (input,))


def movedim(input, source, destination):
    """Return a view of ``input`` with dims ``source`` moved to ``destination``."""
    nd = input._data.ndim
    src = (source,) if isinstance(source, (int, np.integer)) else tuple(source)
    dst = (destination,) if isinstance(destination, (int, np.integer)) else tuple(destination)
    if len(src) != len(dst):
        raise RuntimeError(
            "movedim: Invalid source or destination dims: source "
            f"({list(src)} dims) should contain the same number of dims as destination "
            f"({list(dst)} dims)"
        )
    wsrc = [wrap_dim(d, nd) for d in src]
    wdst = [wrap_dim(d, nd) for d in dst]
    if len(set(wsrc)) != len(wsrc):
        raise RuntimeError(f"movedim: repeated dim in `source` ({list(src)})")
    if len(set(wdst)) != len(wdst):
        raise RuntimeError(f"movedim: repeated dim in `destination` ({list(dst)})")
    if nd == 0:
        return dispatch(_alias, (input,))
    order = [d for d in range(nd) if d not in wsrc]
    for d, s in sorted(zip(wdst, wsrc)):
        order.insert(d, s)
    return dispatch(_permute, (input,), {"dims": tuple(order)})


moveaxis = movedim


def _T(self):
    nd = self._data.ndim
    if nd != 2:
        warnings.warn(
            "Tensor.T is deprecated on 0-D tensors. This function is the identity in these cases."
            if nd == 0
            else "The use of `x.T` on tensors of dimension other than 2 to reverse their shape is "
            "deprecated and it will throw an error in a future release. Consider `x.mT` to "
            "transpose batches of matrices or `x.permute(*torch.arange(x.ndim - 1, -1, -1))` to "
            "reverse the dimensions of a tensor.",
            UserWarning,
            stacklevel=2,
        )
    return dispatch(_permute, (self,), {"dims": tuple(range(nd - 1, -1, -1))})


def _mT(self):
    if self._data.ndim < 2:
        raise RuntimeError(
            "tensor.mT is only supported on matrices or batches of matrices. "
            f"Got {self._data.ndim}-D tensor."
        )
    return transpose(self, -2, -1)


# ------------------------------------------------------------------------------ expand, squeeze


@op("expand", grad_fn="ExpandBackward0", view=True)
def _expand(x, shape):
    # torch's inferExpandGeometry: new leading dims continue the strides, broadcast dims get 0
    nd, xnd = len(shape), x.ndim
    if xnd == 0:
        return _strided(x, shape, (0,) * nd)
    xs, xst = x.shape, _estrides(x)
    strides = [0] * nd
    for i in range(nd - 1, -1, -1):
        d = i - (nd - xnd)
        if d >= 0:
            strides[i] = xst[d] if xs[d] == shape[i] else 0
        elif shape[i] == 1:
            strides[i] = shape[i + 1] * strides[i + 1]
    return _strided(x, shape, strides)


@_expand.backward
def _(ctx, g, shape):
    from ember._ops.sum_to import sum_to

    return sum_to(g, ctx._input_meta[0][0])


def expand(self, *sizes):
    """Return a view of ``self`` broadcast to ``sizes`` (-1 keeps a dimension)."""
    sizes = _sizes(sizes)
    shp = self._data.shape
    lead = len(sizes) - len(shp)
    if lead < 0:
        raise RuntimeError(
            f"expand({self.type()}{{{list(shp)}}}, size={list(sizes)}): the number of sizes "
            f"provided ({len(sizes)}) must be greater or equal to the number of dimensions in "
            f"the tensor ({len(shp)})"
        )
    out = []
    for i, s in enumerate(sizes):
        if i < lead:
            if s < 0:
                raise RuntimeError(
                    f"The expanded size of the tensor ({s}) isn't allowed in a leading, "
                    f"non-existing dimension {i}"
                )
            out.append(s)
            continue
        cur = shp[i - lead]
        if s == -1:
            s = cur
        elif cur != s and cur != 1:
            raise RuntimeError(
                f"The expanded size of the tensor ({s}) must match the existing size ({cur}) at "
                f"non-singleton dimension {i}.  Target sizes: {list(sizes)}.  Tensor sizes: "
                f"{list(shp)}"
            )
        out.append(s)
    return dispatch(_expand, (self,), {"shape": tuple(out)})


def expand_as(self, other):
    """Return ``self`` expanded to the shape of ``other``."""
    return expand(self, other.shape)


def _squeeze_backward(ctx, g, **_):
    return g.reshape(ctx._input_meta[0][0])


@op("squeeze", grad_fn="SqueezeBackward0", view=True)
def _squeeze_all(x):
    return np.squeeze(x)


@op("squeeze", grad_fn="SqueezeBackward1", view=True)
def _squeeze_dim(x, dim):
    return np.squeeze(x, dim) if x.ndim and x.shape[dim] == 1 else x.view()


@op("squeeze", grad_fn="SqueezeBackward2", view=True)
def _squeeze_dims(x, dims):
    return np.squeeze(x, tuple(d for d in dims if x.shape[d] == 1)) if x.ndim else x.view()


for _o in (_squeeze_all, _squeeze_dim, _squeeze_dims):
    _o.backward(_squeeze_backward)
    _o.array_backward(_reshape_array_backward)


def squeeze(input, dim=None):
    """Return a view of ``input`` with size-1 dims removed (all, or those in ``dim``)."""
    nd = input._data.ndim
    if dim is None:
        return dispatch(_squeeze_all, (input,))
    if isinstance(dim, (int, np.integer)):
        return dispatch(_squeeze_dim, (input,), {"dim": wrap_dim(int(dim), nd)})
    dims = tuple(wrap_dim(d, nd) for d in dim)
    if len(set(dims)) != len(dims):
        dup = next(d for d in dims if dims.count(d) > 1)
        raise RuntimeError(f"dim {dup} appears multiple times in the list of dims")
    return dispatch(_squeeze_dims, (input,), {"dims": dims})


@op("unsqueeze", grad_fn="UnsqueezeBackward0", view=True)
def _unsqueeze(x, dim):
    # torch's stride for the new dim: that of the dim it lands before, times its size
    shp, st = x.shape, _estrides(x)
    new = shp[dim] * st[dim] if dim < x.ndim else 1
    return _strided(x, shp[:dim] + (1,) + shp[dim:], st[:dim] + (new,) + st[dim:])


_unsqueeze.backward(lambda ctx, g, dim: g.squeeze(dim))
_unsqueeze.array_backward(_reshape_array_backward)


def unsqueeze(input, dim: int):
    """Return a view of ``input`` with a size-1 dimension inserted at ``dim``."""
    return dispatch(_unsqueeze, (input,), {"dim": wrap_dim(dim, input._data.ndim + 1)})


@op("alias", grad_fn="AliasBackward0", view=True)
def _alias(x):
    return x.view()


_alias.backward(lambda ctx, g: g)

# ------------------------------------------------------------------------------ select, slice


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


# ------------------------------------------------------------------------------ cat, stack, split


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


def contiguous(self, memory_format=None):
    """Return ``self`` if contiguous (in ``memory_format``, row-major by default), else a
    contiguous copy."""
    if memory_format is None or memory_format is contiguous_format:
        if self._data.flags.c_contiguous:
            return self
        return self.clone(memory_format=contiguous_format)
    if memory_format is preserve_format:
        if self._data.flags.c_contiguous:
            return self
        raise RuntimeError("preserve memory format is unsupported by the contiguous operator")
    if self.is_contiguous(memory_format=memory_format):
        return self
    return self.clone(memory_format=memory_format)


# the public functions and methods, each with the op it runs (None: composed of other ops)
for _op, _f in (
    (_view, view),
    (None, view_as),
    (None, reshape_as),
    (_expand, expand),
    (None, expand_as),
    (_unfold, unfold),
    (None, contiguous),
):
    publish(_op, _f, function=False)
for _op, _f in (
    (None, reshape),
    (None, flatten),
    (None, unflatten),
    (_permute, permute),
    (_t, t),
    (None, squeeze),
    (_unsqueeze, unsqueeze),
    (_select, select),
    (None, narrow),
    (_diagonal, diagonal),
    (_as_strided, as_strided),
    (_unbind, unbind),
    (_split, split),
    (_split_sizes, split_with_sizes),
    (None, chunk),
):
    publish(_op, _f)
publish(_transpose, transpose, aliases=("swapaxes", "swapdims"))
publish(None, movedim, aliases=("moveaxis",))
publish(_cat, cat, method=False, aliases=("concat", "concatenate"))
publish(_stack, stack, method=False)
Tensor.T = property(_T)
Tensor.mT = property(_mT)
Tensor.H = property(lambda self: _T(self).conj())
Tensor.mH = property(lambda self: _mT(self).conj())

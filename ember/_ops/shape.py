"""Shape and view ops: view/reshape/flatten, permutations (``permute``, ``transpose``, ``t``,
``movedim``, ``.T``/``.mT``), ``expand`` and ``squeeze``/``unsqueeze``, and ``contiguous``. A view
op's forward returns a NumPy view of its input; dispatch then makes the result share the input's
version counter and remember how to replay itself from the base.

Strides are torch's: where NumPy picks other strides (size-1 and empty dims) or has no view op
(unsqueeze with torch's stride, expand), the array is built with torch's geometry by
``strides._strided``, over the same memory. The views that pick part of a tensor live in
``slicing.py``; ``cat``/``stack``/``split`` in ``cat_split.py``.
"""

from __future__ import annotations

import warnings

import numpy as np

from ember._core.tensor import Size, Tensor, _wrap, contiguous_format, preserve_format, wrap_dim
from ember._ops.registry import _type_name, dispatch, op, publish
from ember._ops.strides import _compute_stride, _estrides, _sizes, _strided, infer_shape

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
):
    publish(_op, _f)
publish(_transpose, transpose, aliases=("swapaxes", "swapdims"))
publish(None, movedim, aliases=("moveaxis",))
Tensor.T = property(_T)
Tensor.mT = property(_mT)
Tensor.H = property(lambda self: _T(self).conj())
Tensor.mH = property(lambda self: _mT(self).conj())

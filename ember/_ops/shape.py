"""Shape and view ops. A view op's forward returns a NumPy view of its input; dispatch then makes
the result share the input's version counter and remember how to replay itself from the base.
Also cat and stack, which split/unbind need for their backward.
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import as_strided as _np_as_strided

from ember._core.storage import owner_of
from ember._core.tensor import Size, Tensor, _wrap, wrap_dim
from ember._ops.registry import SAME, dispatch, expose, op


def _sizes(args) -> tuple:
    """Accept ``f(2, 3)``, ``f((2, 3))``, ``f([2, 3])`` and ``f(Size)``."""
    if len(args) == 1 and not isinstance(args[0], (int, np.integer, Tensor)):
        args = args[0]
    try:
        return tuple(int(s) for s in args)
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
            raise RuntimeError(f"invalid shape dimension {s}")
        else:
            known *= s
    if infer is not None:
        if known == 0 or numel % known:
            raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
        shape = shape[:infer] + (numel // known,) + shape[infer + 1 :]
    elif known != numel:
        raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
    return shape


# ------------------------------------------------------------------------------ view / reshape

_VIEW_ERR = (
    "view size is not compatible with input tensor's size and stride (at least one dimension "
    "spans across two contiguous subspaces). Use .reshape(...) instead."
)


@op("view", grad_fn="ViewBackward0", view=True)
def _view(x, shape):
    try:
        return np.reshape(x, shape, copy=False)
    except ValueError:
        raise RuntimeError(_VIEW_ERR) from None


_view.backward(lambda ctx, g, shape: g.reshape(ctx._input_meta[0][0]))


@op("_unsafe_view", grad_fn="UnsafeViewBackward0")
def _unsafe_view(x, shape):
    return np.reshape(x, shape)


_unsafe_view.backward(lambda ctx, g, shape: g.reshape(ctx._input_meta[0][0]))


def view(self, *shape):
    """Return a view of ``self`` with the given shape (or reinterpreted as another dtype)."""
    if len(shape) == 1 and not isinstance(shape[0], (int, np.integer, tuple, list, Size)):
        from ember._core.dtype import dtype as _dtype

        if isinstance(shape[0], _dtype):
            return _view_dtype(self, shape[0])
        raise TypeError(
            f"view() received an invalid combination of arguments - got "
            f"({type(shape[0]).__name__}), but expected one of:\n * (torch.dtype dtype)\n"
            " * (tuple of ints size)\n"
        )
    shape = infer_shape(_sizes(shape), self._data.size)
    return dispatch(_view, (self,), {"shape": shape})


def _view_dtype(self, dtype):
    a = self._data
    if dtype.itemsize != a.itemsize and (a.ndim == 0 or a.strides[-1] != a.itemsize):
        raise RuntimeError(
            "self.stride(-1) must be 1 to view Byte as Float (different element sizes), but got "
            f"{self.stride(-1) if a.ndim else 0}"
        )
    t = _wrap(a.view(dtype.np))
    t._vc = self._vc
    t._base = self if self._base is None else self._base
    return t


def reshape(input, *shape):
    """Return ``input`` with the given shape: a view when strides allow it, else a copy."""
    shape = infer_shape(_sizes(shape), input._data.size)
    try:
        np.reshape(input._data, shape, copy=False)
    except ValueError:
        return dispatch(_unsafe_view, (dispatch(_clone_op(), (input,)),), {"shape": shape})
    return dispatch(_view, (input,), {"shape": shape})


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
    d = wrap_dim(dim, input._data.ndim)
    shp = input._data.shape
    sizes = tuple(sizes)
    if -1 not in sizes and int(np.prod(sizes)) != shp[d]:
        raise RuntimeError(
            f"unflatten: Provided sizes {list(sizes)} don't multiply up to the size of dim {dim} "
            f"({shp[d]}) in the input tensor"
        )
    sizes = infer_shape(sizes, shp[d])
    return view(input, shp[:d] + sizes + shp[d + 1 :])


# ------------------------------------------------------------------------------ permutations


@op("permute", grad_fn="PermuteBackward0", view=True)
def _permute(x, dims):
    return np.transpose(x, dims)


_permute.backward(lambda ctx, g, dims: g.permute(tuple(np.argsort(dims).tolist())))


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
    return np.swapaxes(x, dim0, dim1)


_transpose.backward(lambda ctx, g, dim0, dim1: g.transpose(dim0, dim1))


def transpose(input, dim0: int, dim1: int):
    """Return a view of ``input`` with ``dim0`` and ``dim1`` swapped."""
    nd = input._data.ndim
    return dispatch(_transpose, (input,), {"dim0": wrap_dim(dim0, nd), "dim1": wrap_dim(dim1, nd)})


@op("t", grad_fn="TBackward0", view=True)
def _t(x):
    return x.T


_t.backward(lambda ctx, g: g.t())


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
    src = (source,) if isinstance(source, int) else tuple(source)
    dst = (destination,) if isinstance(destination, int) else tuple(destination)
    if len(src) != len(dst):
        raise RuntimeError(
            "movedim: Invalid source or destination dims: source "
            f"({list(src)} dims) should contain the same number of dims as destination "
            f"({list(dst)} dims)"
        )
    src = [wrap_dim(d, nd) for d in src]
    dst = [wrap_dim(d, nd) for d in dst]
    order = [d for d in range(nd) if d not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return dispatch(_permute, (input,), {"dims": tuple(order)})


moveaxis = movedim


def _T(self):
    nd = self._data.ndim
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
    return np.broadcast_to(x, shape)


@_expand.backward
def _(ctx, g, shape):
    from ember.autograd.engine import sum_to

    return sum_to(g, ctx._input_meta[0][0])


def expand(self, *sizes):
    """Return a view of ``self`` broadcast to ``sizes`` (-1 keeps a dimension)."""
    sizes = _sizes(sizes)
    shp = self._data.shape
    lead = len(sizes) - len(shp)
    if lead < 0:
        raise RuntimeError(
            f"expand(torch.FloatTensor{{{list(shp)}}}, size={list(sizes)}): the number of sizes "
            "provided (%d) must be greater or equal to the number of dimensions in the tensor "
            "(%d)" % (len(sizes), len(shp))
        )
    out = []
    for i, s in enumerate(sizes):
        if i < lead:
            if s < 0:
                raise RuntimeError(
                    f"The expanded size of the tensor ({s}) isn't allowed in a leading, "
                    "non-existing dimension 0"
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
    out = tuple(out)
    return dispatch(_expand, (self,), {"shape": out})


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
    return np.squeeze(x, dim) if x.shape[dim] == 1 else x.view()


@op("squeeze", grad_fn="SqueezeBackward2", view=True)
def _squeeze_dims(x, dims):
    return np.squeeze(x, tuple(d for d in dims if x.shape[d] == 1))


for _o in (_squeeze_all, _squeeze_dim, _squeeze_dims):
    _o.backward(_squeeze_backward)


def squeeze(input, dim=None):
    """Return a view of ``input`` with size-1 dims removed (all, or those in ``dim``)."""
    nd = input._data.ndim
    if dim is None:
        return dispatch(_squeeze_all, (input,))
    if isinstance(dim, (int, np.integer)):
        return dispatch(_squeeze_dim, (input,), {"dim": wrap_dim(int(dim), nd) if nd else 0})
    dims = tuple(wrap_dim(d, nd) for d in dim) if nd else ()
    return dispatch(_squeeze_dims, (input,), {"dims": dims})


@op("unsqueeze", grad_fn="UnsqueezeBackward0", view=True)
def _unsqueeze(x, dim):
    return np.expand_dims(x, dim)


_unsqueeze.backward(lambda ctx, g, dim: g.squeeze(dim))


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
    return x[(slice(None),) * dim + (index, Ellipsis)]


@_select.backward
def _(ctx, g, dim, index):
    return dispatch(
        _select_backward, (g,), {"shape": ctx._input_meta[0][0], "dim": dim, "index": index}
    )


@op("select_backward", grad_fn="SelectBackwardBackward0")
def _select_backward(g, shape, dim, index):
    out = np.zeros(shape, dtype=g.dtype)
    out[(slice(None),) * dim + (index, Ellipsis)] = g
    return out


_select_backward.backward(lambda ctx, gg, shape, dim, index: gg.select(dim, index))


def select(input, dim: int, index: int):
    """Return a view of the slice of ``input`` at ``index`` along ``dim`` (dim removed)."""
    nd = input._data.ndim
    if nd == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    d = wrap_dim(dim, nd)
    n = input._data.shape[d]
    index = int(index)
    if not -n <= index < n:
        raise IndexError(
            f"select(): index {index} out of range for tensor of size {list(input.shape)} at "
            f"dimension {dim}"
        )
    return dispatch(_select, (input,), {"dim": d, "index": index + n if index < 0 else index})


@op("slice", grad_fn="SliceBackward0", view=True)
def _slice(x, dim, start, end, step):
    return x[(slice(None),) * dim + (slice(start, end, step),)]


@_slice.backward
def _(ctx, g, dim, start, end, step):
    params = {"shape": ctx._input_meta[0][0], "dim": dim, "start": start, "end": end, "step": step}
    return dispatch(_slice_backward, (g,), params)


@op("slice_backward", grad_fn="SliceBackwardBackward0")
def _slice_backward(g, shape, dim, start, end, step):
    out = np.zeros(shape, dtype=g.dtype)
    out[(slice(None),) * dim + (slice(start, end, step),)] = g
    return out


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
    d = wrap_dim(dim, nd)
    n = input._data.shape[d]
    start = int(start)
    if not -n <= start <= n:
        raise IndexError(
            f"start out of range (expected to be in range of [{-n}, {n}], but got {start})"
        )
    if start < 0:
        start += n
    if length < 0 or start + length > n:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({n}).")
    return dispatch(_slice, (input,), {"dim": d, "start": start, "end": start + length, "step": 1})


# ------------------------------------------------------------------------------ diagonal, unfold


@op("diagonal", grad_fn="DiagonalBackward0", view=True)
def _diagonal(x, offset, dim1, dim2):
    shp, st = x.shape, x.strides
    n1, n2 = shp[dim1], shp[dim2]
    if offset >= 0:
        length = max(min(n1, n2 - offset), 0)
        start = offset * st[dim2] if length else 0
    else:
        length = max(min(n1 + offset, n2), 0)
        start = -offset * st[dim1] if length else 0
    rest = [d for d in range(x.ndim) if d not in (dim1, dim2)]
    shape = tuple(shp[d] for d in rest) + (length,)
    strides = tuple(st[d] for d in rest) + (st[dim1] + st[dim2],)
    if x.size == 0:
        return np.zeros(shape, dtype=x.dtype)
    return _np_as_strided(_offset_view(x, start), shape=shape, strides=strides)


def _offset_view(x: np.ndarray, byte_offset: int) -> np.ndarray:
    # an ndarray starting ``byte_offset`` bytes into x's memory, same dtype (for as_strided)
    if byte_offset == 0:
        return x
    owner = owner_of(x)
    flat = _np_as_strided(owner, shape=(owner.nbytes // owner.itemsize,), strides=(owner.itemsize,))
    start = (_ptr(x) - _ptr(owner) + byte_offset) // x.itemsize
    return flat[start:]


def _ptr(a):
    return a.__array_interface__["data"][0]


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
        return _np_as_strided(x, shape=(size,), strides=(0,)) if size == 1 else None
    w = np.lib.stride_tricks.sliding_window_view(x, size, axis=dim, writeable=True)
    return w[(slice(None),) * dim + (slice(None, None, step),)]


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
    d = wrap_dim(dimension, nd) if nd else 0
    n = self._data.shape[d] if nd else 1
    if size > n:
        raise RuntimeError(f"maximum size for tensor at dimension {d} is {n} but size is {size}")
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
def _as_strided(x, size, stride, storage_offset):
    owner = owner_of(x)
    item = x.itemsize
    flat = _np_as_strided(owner, shape=(owner.nbytes // item,), strides=(item,))
    need = storage_offset + sum((n - 1) * s for n, s in zip(size, stride)) + 1
    if all(size) and need > flat.size:
        raise RuntimeError(
            f"setStorage: sizes {list(size)}, strides {list(stride)}, storage offset "
            f"{storage_offset}, and itemsize {item} requiring a storage size of {need * item} "
            f"are out of bounds for storage of size {flat.size * item}"
        )
    return _np_as_strided(
        flat[storage_offset:], shape=size, strides=tuple(s * item for s in stride)
    )


@_as_strided.backward
def _(ctx, g, size, stride, storage_offset, _geometry):
    return dispatch(_as_strided_backward, (g,), {"geometry": _geometry})


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
    size, stride = tuple(size), tuple(stride)
    off = input.storage_offset() if storage_offset is None else int(storage_offset)
    out = dispatch(_as_strided, (input,), {"size": size, "stride": stride, "storage_offset": off})
    if out.grad_fn is not None:
        in_pos = _positions(input.shape, input.stride(), input.storage_offset())
        out_pos = _positions(size, stride, off)
        storage = int(max(in_pos.max(initial=0), out_pos.max(initial=0))) + 1
        out.grad_fn.params = dict(out.grad_fn.params, _geometry=(in_pos, out_pos, storage))
    return out


# ------------------------------------------------------------------------------ cat, stack, split


@op("cat", grad_fn="CatBackward0", promote=SAME)
def _cat(*arrays, dim):
    return np.concatenate(arrays, axis=dim)


@_cat.backward
def _(ctx, g, dim):
    out = []
    start = 0
    for need, meta in zip(ctx.needs_input_grad, ctx._input_meta):
        if meta is None:
            out.append(None)
            continue
        n = meta[0][dim] if len(meta[0]) else 0
        out.append(g.narrow(dim, start, n) if need else None)
        start += n
    return tuple(out)


def cat(tensors, dim: int = 0, *, out=None):
    """Return the concatenation of ``tensors`` along ``dim``."""
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError("torch.cat(): expected a non-empty list of Tensors")
    # torch skips legacy empty 1-D tensors of shape (0,)
    kept = [t for t in tensors if not (t._data.ndim == 1 and t._data.shape[0] == 0)]
    if not kept:
        return tensors[0].clone()
    ref = kept[0]
    if ref._data.ndim == 0:
        raise RuntimeError("zero-dimensional tensor (at position 0) cannot be concatenated")
    d = wrap_dim(dim, ref._data.ndim)
    for t in kept:
        if t._data.ndim != ref._data.ndim:
            raise RuntimeError(
                f"Tensors must have same number of dimensions: got {ref._data.ndim} and "
                f"{t._data.ndim}"
            )
        for k in range(ref._data.ndim):
            if k != d and t._data.shape[k] != ref._data.shape[k]:
                raise RuntimeError(
                    f"Sizes of tensors must match except in dimension {d}. Expected size "
                    f"{ref._data.shape[k]} but got size {t._data.shape[k]} for tensor number "
                    f"{tensors.index(t)} in the list."
                )
    return dispatch(_cat, tuple(kept), {"dim": d})


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
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError("stack expects a non-empty TensorList")
    shp = tensors[0]._data.shape
    for i, t in enumerate(tensors):
        if t._data.shape != shp:
            raise RuntimeError(
                f"stack expects each tensor to be equal size, but got {list(shp)} at entry 0 and "
                f"{list(t._data.shape)} at entry {i}"
            )
    d = wrap_dim(dim, len(shp) + 1)
    return dispatch(_stack, tuple(tensors), {"dim": d})


@op("unbind", grad_fn="UnbindBackward0", view="multi")
def _unbind(x, dim):
    return tuple(np.moveaxis(x, dim, 0))


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
    bounds = np.cumsum(sizes)[:-1]
    return tuple(np.split(x, bounds, axis=dim))


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
    nd = tensor._data.ndim
    d = wrap_dim(dim, nd)
    n = tensor._data.shape[d]
    if isinstance(split_size_or_sections, (int, np.integer)):
        size = int(split_size_or_sections)
        if size <= 0 and not (size == 0 and n == 0):
            raise RuntimeError(
                f"split_size can only be 0 if dimension size is 0, but got dimension size of {n}"
            )
        sizes = [size] * (n // size) + ([n % size] if n % size else []) if size else [0]
        return dispatch(_split, (tensor,), {"dim": d, "sizes": tuple(sizes)})
    sizes = tuple(int(s) for s in split_size_or_sections)
    if sum(sizes) != n:
        raise RuntimeError(
            f"split_with_sizes expects split_sizes to sum exactly to {n} (input tensor's size at "
            f"dimension {d}), but got split_sizes={list(sizes)}"
        )
    return dispatch(_split_sizes, (tensor,), {"dim": d, "sizes": sizes})


def chunk(input, chunks: int, dim: int = 0):
    """Return up to ``chunks`` views of ``input`` split evenly along ``dim``."""
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    n = input._data.shape[wrap_dim(dim, input._data.ndim)]
    size = -(-n // chunks) if n else 1
    return split(input, size, dim)


def contiguous(self, memory_format=None):
    """Return ``self`` if contiguous, else a contiguous copy."""
    if self._data.flags.c_contiguous:
        return self
    return self.clone()


for _f in (view, view_as, reshape_as, expand, expand_as, unfold, contiguous):
    expose(_f, function=False)
for _f in (
    reshape,
    flatten,
    unflatten,
    permute,
    transpose,
    t,
    movedim,
    squeeze,
    unsqueeze,
    select,
    narrow,
    diagonal,
    as_strided,
    unbind,
    split,
    chunk,
):
    expose(_f)
expose(movedim, "moveaxis", method="moveaxis")
expose(transpose, "swapaxes", method="swapaxes")
expose(transpose, "swapdims", method="swapdims")
for _f in (cat, stack):
    expose(_f, method=False)
expose(cat, "concat", method=False)
expose(cat, "concatenate", method=False)
Tensor.T = property(_T)
Tensor.mT = property(_mT)
Tensor.H = property(lambda self: _T(self).conj())
Tensor.mH = property(lambda self: _mT(self).conj())

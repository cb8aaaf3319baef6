"""Tensor methods real code calls that the op families above do not cover.

Mostly compositions of existing ops (their autograd comes for free): ``type_as``,
``sum_to_size``, ``dist``, ``renorm``, ``hsplit``/``vsplit``/``dsplit``, ``adjoint``,
``index_reduce``...; a few small ops of their own where torch's view semantics or grad_fn
names need it: ``real``/``imag`` (views of a complex tensor), ``unsafe_split``, ``gcd``/``lcm``.
"""

from __future__ import annotations

import warnings

import numpy as np

from ember._core import dtype as D
from ember._core.storage import array_ptr
from ember._core.tensor import Tensor, _wrap, wrap_dim
from ember._ops.registry import FLOAT, SAME, dispatch, dispatch_inplace, expose, op

# ------------------------------------------------------------------------------ small queries


def type_as(self: Tensor, other: Tensor) -> Tensor:
    """Return ``self`` cast to the dtype of ``other`` (``self`` if already that dtype)."""
    return self.to(other.dtype)


def is_nonzero(input: Tensor) -> bool:
    """Return whether the single value of ``input`` is nonzero."""
    n = input._data.size
    if n == 0:
        raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
    if n > 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    return bool(input._data.reshape(()))


def is_same_size(input: Tensor, other: Tensor) -> bool:
    """Return whether ``input`` and ``other`` have the same shape."""
    return input._data.shape == other._data.shape


def is_conj(input: Tensor) -> bool:
    """Return ``False``: ember conjugates eagerly, so no tensor carries a lazy conjugate bit."""
    return False


def is_neg(input: Tensor) -> bool:
    """Return ``False``: ember negates eagerly, so no tensor carries a lazy negative bit."""
    return False


def is_inference(input: Tensor) -> bool:
    """Return True if ``input`` was made in inference mode (or is a view of such a tensor)."""
    if input._inference:
        return True
    base = input._base
    return base is not None and base._inference


def resolve_conj(input: Tensor) -> Tensor:
    """Return ``input`` (its conjugation, if any, is already materialized)."""
    return input


def resolve_neg(input: Tensor) -> Tensor:
    """Return ``input`` (its negation, if any, is already materialized)."""
    return input


def pin_memory(self: Tensor, device=None) -> Tensor:
    """Return ``self``: pinned memory only matters for CUDA transfers."""
    return self


def new_empty_strided(
    self: Tensor, size, stride, *, dtype=None, device=None, requires_grad: bool = False, **_
) -> Tensor:
    """Return an uninitialized tensor of ``size`` and ``stride`` (in elements)."""
    size, stride = tuple(int(s) for s in size), tuple(int(s) for s in stride)
    if len(size) != len(stride):
        raise RuntimeError(f"mismatch in length of strides and shape: {len(stride)} vs {len(size)}")
    dt = self.dtype if dtype is None else dtype
    npdt = np.dtype(dt.np)
    extent = 1 + sum((n - 1) * s for n, s in zip(size, stride)) if all(size) else 0
    buf = np.empty(extent, npdt)
    arr = np.lib.stride_tricks.as_strided(
        buf, size, tuple(s * npdt.itemsize for s in stride), writeable=True
    )
    out = _wrap(arr)
    if requires_grad:
        out.requires_grad_(True)
    return out


_STORAGE_WARNED = []


class TypedStorage:
    """The elements of ``dtype`` behind a tensor, as torch's (deprecated) ``TypedStorage``:
    a typed window onto the same memory as :meth:`Tensor.untyped_storage`."""

    __slots__ = ("_untyped", "_values", "dtype")

    def __init__(self, tensor: Tensor):
        self._untyped = tensor.untyped_storage()
        self.dtype = tensor.dtype
        self._values = self._untyped._bytes.view(np.dtype(tensor.dtype.np))

    @classmethod
    def _of(cls, untyped, dtype) -> TypedStorage:
        s = object.__new__(cls)
        s._untyped, s.dtype = untyped, dtype
        s._values = untyped._bytes.view(np.dtype(dtype.np))
        return s

    def size(self) -> int:
        """Return the number of elements."""
        return self._values.size

    __len__ = size

    def element_size(self) -> int:
        """Return the size of one element in bytes."""
        return self._values.itemsize

    def nbytes(self) -> int:
        """Return the size of the storage in bytes."""
        return self._values.nbytes

    def data_ptr(self) -> int:
        """Return the address of the first element."""
        return self._untyped.data_ptr()

    @property
    def device(self):
        return self._untyped.device

    def untyped(self):
        """Return the underlying untyped storage."""
        return self._untyped

    def tolist(self) -> list:
        """Return the elements as a list of Python numbers."""
        return self._values.tolist()

    def is_shared(self) -> bool:
        """Return False: this storage object is not in shared memory."""
        return False

    def is_pinned(self, device=None) -> bool:
        """Return False: ember memory is ordinary (pageable) host memory."""
        return False

    def type(self) -> str:
        """Return the legacy storage class name (``torch.FloatStorage``...)."""
        return f"torch.{D.scalar_type_name(self.dtype)}Storage"

    def __getitem__(self, i):
        if isinstance(i, slice):
            raise RuntimeError("slices are only supported in UntypedStorage.__getitem__")
        return self._values[i].tolist()

    def __setitem__(self, i, value) -> None:
        self._values[i] = value

    def __iter__(self):
        return iter(self.tolist())

    def __repr__(self) -> str:
        tail = f"[torch.storage.TypedStorage(dtype={self.dtype}, device=cpu) of size {len(self)}]"
        return " " + "\n ".join(str(v) for v in self.tolist()) + "\n" + tail


def storage(self: Tensor) -> TypedStorage:
    """Return the typed storage of ``self`` (deprecated in torch: prefer
    :meth:`Tensor.untyped_storage`)."""
    if not _STORAGE_WARNED:
        _STORAGE_WARNED.append(True)
        warnings.warn(
            "TypedStorage is deprecated. It will be removed in the future and UntypedStorage "
            "will be the only storage class. This should only matter to you if you are using "
            "storages directly.  To access UntypedStorage directly, use "
            "tensor.untyped_storage() instead of tensor.storage()",
            UserWarning,
            stacklevel=2,
        )
    return TypedStorage(self)


def to_dense(self: Tensor, dtype=None, *, masked_grad=None) -> Tensor:
    """Return ``self`` (a strided tensor is already dense), cast to ``dtype`` if given."""
    return self if dtype is None else self.to(dtype)


def const_data_ptr(self: Tensor) -> int:
    """Return the address of the first element of ``self`` (read-only use)."""
    return self.data_ptr()


def is_set_to(self: Tensor, tensor: Tensor) -> bool:
    """Return whether ``self`` and ``tensor`` view the same memory with the same geometry."""
    a, b = self._data, tensor._data
    return (
        array_ptr(a) == array_ptr(b)
        and a.shape == b.shape
        and a.strides == b.strides
        and self.untyped_storage().data_ptr() == tensor.untyped_storage().data_ptr()
        and a.dtype == b.dtype
    )


def _elementwise_python(self: Tensor, name: str, fn, *others) -> Tensor:
    if self.requires_grad:
        raise RuntimeError(
            f"Can't call {name}() on Variable that requires grad. Use var.detach().{name}() "
            "instead."
        )
    arrays = [np.broadcast_to(o._data, self._data.shape) for o in others]
    # torch runs the Python callable once per element too: this API is a loop by definition
    out = np.frompyfunc(fn, 1 + len(arrays), 1)(self._data, *arrays)
    # torch writes through the raw data here: no version bump, as torch
    np.copyto(self._data, np.asarray(out, dtype=object).astype(self._data.dtype))
    return self


def apply_(self: Tensor, callable) -> Tensor:
    """Replace each element of ``self`` by ``callable(element)``; return ``self`` (slow: a
    Python call per element)."""
    return _elementwise_python(self, "apply_", callable)


def map_(self: Tensor, tensor: Tensor, callable) -> Tensor:
    """Replace each element ``a`` of ``self`` by ``callable(a, b)`` with ``b`` the matching
    element of ``tensor`` (broadcast); return ``self``."""
    return _elementwise_python(self, "map_", callable, tensor)


def map2_(self: Tensor, x: Tensor, y: Tensor, callable) -> Tensor:
    """Replace each element ``a`` of ``self`` by ``callable(a, b, c)`` with ``b`` and ``c`` the
    matching elements of ``x`` and ``y``; return ``self``."""
    return _elementwise_python(self, "map2_", callable, x, y)


def new(self: Tensor, *args, device=None) -> Tensor:
    """Return a new tensor of ``self``'s dtype (legacy constructor): ``new()`` is empty,
    ``new(2, 3)`` or ``new(Size)`` uninitialized, ``new(data)`` holds ``data``, ``new(tensor)``
    aliases ``tensor``."""
    from ember._core.tensor import Size
    from ember._ops.creation import empty, tensor

    if not args:
        return empty(0, dtype=self.dtype)
    if len(args) == 1 and isinstance(args[0], Tensor):
        other = args[0]
        if other.dtype is not self.dtype:
            raise TypeError(
                f"expected {D.scalar_type_name(self.dtype)} tensor (got "
                f"{D.scalar_type_name(other.dtype)} tensor)"
            )
        return other.detach()
    if all(isinstance(a, (int, np.integer)) and not isinstance(a, bool) for a in args) or (
        len(args) == 1 and isinstance(args[0], Size)
    ):
        return empty(*args, dtype=self.dtype)
    if len(args) == 1:
        return tensor(args[0], dtype=self.dtype)
    raise TypeError(f"new() received an invalid combination of arguments - got {args}")


def _false(self) -> bool:
    return False


# ------------------------------------------------------------------------------ real / imag


@op("real", grad_fn="SelectBackward0", view=True)
def _real(x):
    return x.real


@_real.backward
def _(ctx, g):
    return g * (1 + 0j)


@op("imag", grad_fn="SelectBackward0", view=True)
def _imag(x):
    return x.imag


@_imag.backward
def _(ctx, g):
    return g * 1j


def real(input: Tensor) -> Tensor:
    """Return the real part of ``input``: a view for complex tensors, ``input`` otherwise."""
    if input.dtype.is_complex:
        return dispatch(_real, (input,))
    return input


def imag(input: Tensor) -> Tensor:
    """Return the imaginary part of a complex ``input`` as a view."""
    if not input.dtype.is_complex:
        raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
    return dispatch(_imag, (input,))


def _set_part(part):
    def setter(self, value):
        view = part(self)
        view.copy_(value) if isinstance(value, Tensor) else view.fill_(value)

    return setter


@op("angle", grad_fn="AngleBackward0", save=("self",), promote=FLOAT)
def _angle(x):
    if x.dtype.kind == "c":
        return np.angle(x)
    # 0 for -0.0 (NumPy's angle would say pi), nan stays nan
    return np.where(x < 0, np.pi, 0.0).astype(x.dtype) + x * 0


@_angle.backward
def _(ctx, g):
    (x,) = ctx.saved_tensors
    if not x.dtype.is_complex:
        return g * 0
    from ember._ops.copying import where

    return where(x == 0, 0.0, g * x / x.abs().pow(2) * 1j)


def angle(input: Tensor, *, out=None) -> Tensor:
    """Return the elementwise argument of ``input`` (0 or pi for real numbers)."""
    return dispatch(_angle, (input,))


@op("conj_physical", grad_fn="ConjPhysicalBackward0")
def _conj_physical(x):
    return np.conj(x)


@_conj_physical.backward
def _(ctx, g):
    return g.conj()


@op("conj_physical_", grad_fn="ConjPhysicalBackward1")
def _conj_physical_inplace(x):
    return np.conj(x)


_conj_physical_inplace.backward(_conj_physical.backward_fn)


def conj_physical(input: Tensor) -> Tensor:
    """Return the complex conjugate of ``input`` as a new tensor (``input`` if real)."""
    if not input.dtype.is_complex:
        return input
    return dispatch(_conj_physical, (input,))


def conj_physical_(self: Tensor) -> Tensor:
    """Conjugate ``self`` in place; return ``self``."""
    return dispatch_inplace(_conj_physical_inplace, self, (self,))


def adjoint(input: Tensor) -> Tensor:
    """Return the conjugate transpose of the last two dimensions of ``input``."""
    if input._data.ndim < 2:
        raise RuntimeError(
            "tensor.adjoint() is only supported on matrices or batches of matrices. "
            f"Got {input._data.ndim}-D tensor."
        )
    t = input.transpose(-2, -1)
    return t.conj() if input.dtype.is_complex else t


# ------------------------------------------------------------------------------ reductions


def sum_to_size(self: Tensor, *size) -> Tensor:
    """Return ``self`` summed down to ``size`` (which ``self``'s shape must expand from)."""
    if not size:
        raise TypeError('sum_to_size() missing 1 required positional arguments: "size"')
    if len(size) == 1 and not isinstance(size[0], (int, np.integer)):
        size = tuple(size[0])
    size = tuple(int(s) for s in size)
    shape = self._data.shape
    lead = len(shape) - len(size)
    ok = lead >= 0 and all(s == n or s == 1 for s, n in zip(size, shape[lead:]))
    if not ok:
        raise RuntimeError(f"size {{{list(size)}}} is not expandable to size {{{list(shape)}}}.")
    dims = tuple(range(lead)) + tuple(
        lead + i for i, (s, n) in enumerate(zip(size, shape[lead:])) if s == 1 and n != 1
    )
    if not dims:
        return self
    out = self.sum(dims, keepdim=True)
    return out.view(size) if lead else out


def dist(input: Tensor, other: Tensor, p=2) -> Tensor:
    """Return the ``p``-norm of ``input - other``."""
    from ember._ops.linalg_norm import vector_norm

    return vector_norm(input - other, p)


def renorm(input: Tensor, p, dim: int, maxnorm) -> Tensor:
    """Return ``input`` with each slice along ``dim`` rescaled to ``p``-norm at most
    ``maxnorm``."""
    from ember._ops.copying import where
    from ember._ops.linalg_norm import vector_norm

    nd = input._data.ndim
    d = wrap_dim(dim, nd)
    if p <= 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    if maxnorm < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm}")
    others = tuple(i for i in range(nd) if i != d)
    norm = vector_norm(input, p, others, keepdim=True)
    factor = where(norm > maxnorm, maxnorm / (norm + 1e-7), 1.0).to(input.dtype)
    return input * factor


def renorm_(self: Tensor, p, dim: int, maxnorm) -> Tensor:
    """In-place version of :meth:`Tensor.renorm`; return ``self``."""
    return self.copy_(
        renorm(self.clone() if self.requires_grad else self.detach(), p, dim, maxnorm)
    )


def _cov_weights(name: str, w, n: int):
    if w is None:
        return None
    if w._data.ndim > 1:
        raise RuntimeError(
            f"cov(): expected {name} to have one or fewer dimensions but got {name} with "
            f"{w._data.ndim} dimensions"
        )
    if w._data.size != n:
        raise RuntimeError(
            f"cov(): expected {name} to have the same numel as there are observations in the "
            f"input but got {w._data.size} != {n}"
        )
    if name == "fweights" and (w.dtype.is_floating_point or w.dtype.is_complex):
        raise RuntimeError(
            "cov(): expected fweights to have integral dtype but got fweights with "
            f"{D.scalar_type_name(w.dtype)} dtype"
        )
    if name == "aweights" and not w.dtype.is_floating_point:
        raise RuntimeError(
            "cov(): expected aweights to have floating point dtype but got aweights with "
            f"{D.scalar_type_name(w.dtype)} dtype"
        )
    if w._data.size and (w._data < 0).any():
        raise RuntimeError(f"cov(): {name} cannot be negative")
    return w


def cov(input: Tensor, *, correction: int = 1, fweights=None, aweights=None) -> Tensor:
    """Return the covariance matrix of the variables in the rows of ``input`` (observations
    in columns), optionally weighted by ``fweights`` (counts) and ``aweights``."""
    nd = input._data.ndim
    if nd > 2:
        raise RuntimeError(
            "cov(): expected input to have two or fewer dimensions but got an input with "
            f"{nd} dimensions"
        )
    if input.dtype is D.bool:
        raise RuntimeError("cov(): bool dtype is not supported for input")
    X = input if nd == 2 else input.reshape(1, -1)
    if not (X.dtype.is_floating_point or X.dtype.is_complex):
        X = X.to(D.get_default_dtype())
    n = X._data.shape[1]
    fw = _cov_weights("fweights", fweights, n)
    aw = _cov_weights("aweights", aweights, n)
    w = fw if aw is None else (aw if fw is None else fw * aw)
    if w is None:
        w_sum = float(n)
        avg = X.sum(1) / w_sum
        norm = w_sum - correction
    else:
        w_sum = w.sum()
        if not bool(w_sum._data):
            raise RuntimeError("cov(): weights sum to zero, can't be normalized")
        avg = (X * w).sum(1) / w_sum
        if correction != 0 and aw is not None:
            norm = w_sum - correction * (w * aw).sum() / w_sum
        else:
            norm = w_sum - correction
    if bool(np.asarray(norm._data if isinstance(norm, Tensor) else norm) <= 0):
        warnings.warn(
            "cov(): degrees of freedom is <= 0. Correction should be strictly less than the "
            "number of observations.",
            UserWarning,
            stacklevel=2,
        )
        norm = norm * 0 + 0.0  # +0 as torch's zero_(), never -0 (the sign of the infs)
    Xc = X - avg.unsqueeze(1)
    c = Xc @ (Xc if w is None else Xc * w).t().conj()
    return (c / norm).squeeze()


def corrcoef(input: Tensor) -> Tensor:
    """Return the Pearson correlation coefficients of the variables in the rows of
    ``input``."""
    nd = input._data.ndim
    if nd > 2:
        raise RuntimeError(
            "corrcoef(): expected input to have two or fewer dimensions but got an input with "
            f"{nd} dimensions"
        )
    c = cov(input)
    if c._data.ndim == 0:
        return c / c
    d = c.diagonal()
    std = (real(d) if d.dtype.is_complex else d).sqrt()
    c = c / std.view(-1, 1)
    c = c / std.view(1, -1)
    if c.dtype.is_complex:
        return real(c).clip(-1, 1) + imag(c).clip(-1, 1) * 1j
    return c.clip(-1, 1)


# ------------------------------------------------------------------------------ splitting


def _dsplit_like(name: str, input: Tensor, sections, min_dims: int, dim: int):
    from ember._ops.joining import tensor_split

    nd = input._data.ndim
    if nd < min_dims:
        raise RuntimeError(
            f"torch.{name} requires a tensor with at least {min_dims} dimension, but got a "
            f"tensor with {nd} dimensions!"
        )
    if isinstance(sections, (int, np.integer)):
        n = input._data.shape[dim]
        if sections == 0 or n % sections:
            raise RuntimeError(
                f"torch.{name} attempted to split along dimension {dim}, but the size of the "
                f"dimension {n} is not divisible by the split_size {sections}!"
            )
    return tensor_split(input, sections, dim)


def hsplit(input: Tensor, sections):
    """Return views of ``input`` split along dimension 1 (0 for 1-D tensors)."""
    nd = input._data.ndim
    return _dsplit_like("hsplit", input, sections, 1, 1 if nd >= 2 else 0)


def vsplit(input: Tensor, sections):
    """Return views of ``input`` split along dimension 0."""
    return _dsplit_like("vsplit", input, sections, 2, 0)


def dsplit(input: Tensor, sections):
    """Return views of ``input`` split along dimension 2."""
    return _dsplit_like("dsplit", input, sections, 3, 2)


def _unsafe_split_op(name, grad_fn):
    from ember._ops.shape import _split_backward, _split_forward

    o = op(name, grad_fn=grad_fn)(_split_forward)
    o.backward(_split_backward)
    return o


_unsafe_split = _unsafe_split_op("unsafe_split", "UnsafeSplitBackward0")
_unsafe_split_sizes = _unsafe_split_op("unsafe_split_with_sizes", "UnsafeSplitWithSizesBackward0")


def unsafe_split(tensor: Tensor, split_size: int, dim: int = 0):
    """Return the chunks of :func:`split`, not tracked as views (in-place use is allowed)."""
    from ember._ops.shape import split

    parts = split(tensor.detach(), split_size, dim)
    d = wrap_dim(dim, tensor._data.ndim)
    sizes = tuple(int(t._data.shape[d]) for t in parts)
    return dispatch(_unsafe_split, (tensor,), {"dim": d, "sizes": sizes})


def unsafe_split_with_sizes(input: Tensor, split_sizes, dim: int = 0):
    """Return the parts of :func:`split_with_sizes`, not tracked as views."""
    from ember._ops.shape import split_with_sizes

    split_with_sizes(input.detach(), split_sizes, dim)  # torch's checks and messages
    d = wrap_dim(dim, input._data.ndim)
    sizes = tuple(int(s) for s in split_sizes)
    return dispatch(_unsafe_split_sizes, (input,), {"dim": d, "sizes": sizes})


def unsafe_chunk(input: Tensor, chunks: int, dim: int = 0):
    """Return the chunks of :func:`chunk`, not tracked as views."""
    from ember._ops.shape import chunk

    parts = chunk(input.detach(), chunks, dim)
    d = wrap_dim(dim, input._data.ndim)
    sizes = tuple(int(t._data.shape[d]) for t in parts)
    return dispatch(_unsafe_split, (input,), {"dim": d, "sizes": sizes})


# ------------------------------------------------------------------------------ integer math


@op("gcd", promote=SAME)
def _gcd(x, y):
    return np.gcd(x, y)


@op("lcm", promote=SAME)
def _lcm(x, y):
    return np.lcm(x, y)


def _check_integral(name: str, *xs) -> None:
    from ember._ops.registry import result_dtype

    dt = result_dtype(xs)
    if dt.is_floating_point or dt.is_complex or dt is D.bool:
        raise NotImplementedError(f"\"{name}_cpu\" not implemented for '{D.scalar_type_name(dt)}'")


def gcd(input: Tensor, other: Tensor) -> Tensor:
    """Return the elementwise greatest common divisor of integer tensors."""
    _check_integral("gcd", input, other)
    return dispatch(_gcd, (input, other))


def gcd_(self: Tensor, other: Tensor) -> Tensor:
    """In-place version of :meth:`Tensor.gcd`; return ``self``."""
    _check_integral("gcd", self, other)
    return dispatch_inplace(_gcd, self, (self, other))


def lcm(input: Tensor, other: Tensor) -> Tensor:
    """Return the elementwise least common multiple of integer tensors."""
    _check_integral("lcm", input, other)
    return dispatch(_lcm, (input, other))


def lcm_(self: Tensor, other: Tensor) -> Tensor:
    """In-place version of :meth:`Tensor.lcm`; return ``self``."""
    _check_integral("lcm", self, other)
    return dispatch_inplace(_lcm, self, (self, other))


# ------------------------------------------------------------------------------ indexing


def nonzero_static(input: Tensor, *, size: int, fill_value: int = -1) -> Tensor:
    """Return the indices of nonzero elements, truncated or padded with ``fill_value`` to
    exactly ``size`` rows."""
    size = int(size)
    if size < 0:
        raise RuntimeError(
            f"nonzero_static: 'size' must be an non-negative integer, but got {size}"
        )
    a = input._data
    idx = np.argwhere(a)[:size]
    out = np.full((size, a.ndim), fill_value, dtype=np.int64)
    out[: len(idx)] = idx
    return _wrap(out)


_INDEX_REDUCE = ("prod", "mean", "amax", "amin")


def _index_reduce_args(fn, input, dim, index, source, reduce):
    if reduce not in _INDEX_REDUCE:
        raise RuntimeError(
            f"{fn}(): Expected reduce to be one of prod, mean, amax or amin but got {reduce}."
        )
    nd = input._data.ndim
    d = wrap_dim(dim, max(nd, 1))
    if index._data.ndim > 1:
        raise IndexError("index_reduce_(): Index is supposed to be a vector")
    if index.dtype not in (D.int64, D.int32):
        raise RuntimeError("index_reduce_(): Expected dtype int32/int64 for index")
    if source.dtype is not input.dtype:
        raise RuntimeError(
            f"{fn}(): self ({D.scalar_type_name(input.dtype)}) and source "
            f"({D.scalar_type_name(source.dtype)}) must have the same scalar type"
        )
    if source._data.ndim != nd or (nd and source._data.shape[d] != index._data.size):
        raise RuntimeError(
            f"{fn}(): Expected source to have the same number of dimensions as self and "
            f"source.size(dim) == index.numel()"
        )
    # index_reduce is scatter_reduce with the index spread across ``source``'s other dims
    shape = [1] * max(nd, 1)
    shape[d] = -1
    idx = np.broadcast_to(index._data.astype(np.int64).reshape(shape), source._data.shape)
    return d, _wrap(np.ascontiguousarray(idx))


def _index_reduce_op():
    # scatter_reduce's forward and backward (the index spread over ``source``), under torch's
    # grad_fn name for index_reduce
    from ember._ops.scatter_reduce import _scatter_reduce as sr

    o = op(
        "index_reduce",
        grad_fn="IndexReduceBackward0",
        args=("self", "index", "source"),
        save=("self", "index", "source", "result"),
    )(sr.forward)
    o.backward(sr.backward_fn)
    return o


_index_reduce = _index_reduce_op()


def index_reduce(
    input: Tensor, dim: int, index: Tensor, source: Tensor, reduce: str, *, include_self=True
) -> Tensor:
    """Return ``input`` with the slices of ``source`` reduced (prod, mean, amax, amin) into
    the slices ``index`` names along ``dim``."""
    d, idx = _index_reduce_args("index_reduce", input, dim, index, source, reduce)
    params = {"dim": d, "reduce": reduce, "include_self": bool(include_self)}
    return dispatch(_index_reduce, (input, idx, source), params)


def index_reduce_(
    self: Tensor, dim: int, index: Tensor, source: Tensor, reduce: str, *, include_self=True
) -> Tensor:
    """In-place version of :meth:`Tensor.index_reduce`; return ``self``."""
    d, idx = _index_reduce_args("index_reduce_", self, dim, index, source, reduce)
    params = {"dim": d, "reduce": reduce, "include_self": bool(include_self)}
    return dispatch_inplace(_index_reduce, self, (self, idx, source), params)


# ------------------------------------------------------------------------------ publish

expose(type_as, function=False)
for _f in (to_dense, const_data_ptr, is_set_to, apply_, map_, map2_, new):
    expose(_f, function=False)
for _name in ("is_xla", "is_ipu", "is_maia", "is_mtia"):
    setattr(Tensor, _name, property(_false, doc="False: ember runs on the CPU."))
expose(storage, function=False)
expose(pin_memory, function=False)
expose(new_empty_strided, function=False)
expose(sum_to_size, function=False)
expose(renorm_, function=False)
expose(conj_physical_)
expose(gcd_)
expose(lcm_)
expose(index_reduce_, function=False)
for _f in (
    is_nonzero,
    is_same_size,
    is_conj,
    is_neg,
    is_inference,
    resolve_conj,
    resolve_neg,
    dist,
    renorm,
    cov,
    corrcoef,
    hsplit,
    vsplit,
    dsplit,
    angle,
    conj_physical,
    adjoint,
    gcd,
    lcm,
    nonzero_static,
    unsafe_split,
    unsafe_split_with_sizes,
    unsafe_chunk,
    index_reduce,
):
    expose(_f)
expose(real, method=False)
expose(imag, method=False)
Tensor.real = property(real, _set_part(real), doc="The real part of a complex tensor (a view).")
Tensor.imag = property(
    imag, _set_part(imag), doc="The imaginary part of a complex tensor (a view)."
)


def as_subclass(self: Tensor, cls) -> Tensor:
    """Return an alias of ``self`` (same memory, attached to the graph) of class ``cls``.

    Ops on the result return ``cls`` again (``Tensor.__torch_function__``, see
    ``ember.overrides``).
    """
    from ember._ops.creation import _alias

    if not (isinstance(cls, type) and issubclass(cls, Tensor)):
        raise TypeError(
            "Creating a Tensor subclass from a class that does not inherit from Tensor is not "
            "possible. Make sure your class inherits from Tensor."
        )
    from ember.overrides import _note_subclass

    _note_subclass(cls)
    out = dispatch(_alias, (self,))
    out.__class__ = cls
    return out


Tensor.as_subclass = as_subclass

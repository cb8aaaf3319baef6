"""Tensor methods real code calls that the op families do not cover: queries (``is_nonzero``,
``is_same_size``, ``is_conj``...), ``type_as``, ``new``/``new_empty_strided``, ``storage()``
(a ``TypedStorage``: _core/storage.py), ``apply_``/``map_``/``map2_``, ``as_subclass``; and the
reductions ``sum_to_size``, ``dist``, ``renorm``, ``cov``, ``corrcoef`` (compositions of
existing ops: their autograd comes for free). The complex parts, splits, gcd/lcm and
index_reduce live in complex_parts.py, splitting.py, integer_math.py and index_reduce.py.
"""

from __future__ import annotations

import warnings

import numpy as np

from ember._core import dtype as D
from ember._core.storage import TypedStorage, array_ptr
from ember._core.tensor import Tensor, _wrap, wrap_dim
from ember._ops.complex_parts import imag, real
from ember._ops.registry import dispatch, publish

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


# ------------------------------------------------------------------------------ publish

publish(None, type_as, function=False)
for _f in (to_dense, const_data_ptr, is_set_to, apply_, map_, map2_, new):
    publish(None, _f, function=False)
for _name in ("is_xla", "is_ipu", "is_maia", "is_mtia"):
    setattr(Tensor, _name, property(_false, doc="False: ember runs on the CPU."))
publish(None, storage, function=False)
publish(None, pin_memory, function=False)
publish(None, new_empty_strided, function=False)
publish(None, sum_to_size, function=False)
publish(None, renorm_, function=False)
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
):
    publish(None, _f)


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


publish(None, as_subclass, function=False)

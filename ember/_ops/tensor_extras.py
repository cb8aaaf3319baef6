"""Tensor methods real code calls that the op families do not cover: queries (``is_nonzero``,
``is_same_size``, ``is_conj``...), ``type_as``, ``new``/``new_empty_strided``, ``storage()``
(a ``TypedStorage``: _core/storage.py), ``apply_``/``map_``/``map2_``, ``as_subclass``. The
composed reductions (``sum_to_size``, ``dist``, ``renorm``, ``cov``, ``corrcoef``), the complex
parts, splits, gcd/lcm and index_reduce live in composite_reductions.py, complex_parts.py,
splitting.py, integer_math.py and index_reduce.py.
"""

from __future__ import annotations

import warnings

import numpy as np

from ember._core import dtype as D
from ember._core.storage import TypedStorage, array_ptr
from ember._core.tensor import Tensor, _wrap
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


# ------------------------------------------------------------------------------ publish

publish(None, type_as, function=False)
for _f in (to_dense, const_data_ptr, is_set_to, apply_, map_, map2_, new):
    publish(None, _f, function=False)
for _name in ("is_xla", "is_ipu", "is_maia", "is_mtia"):
    setattr(Tensor, _name, property(_false, doc="False: ember runs on the CPU."))
publish(None, storage, function=False)
publish(None, pin_memory, function=False)
publish(None, new_empty_strided, function=False)
for _f in (
    is_nonzero,
    is_same_size,
    is_conj,
    is_neg,
    is_inference,
    resolve_conj,
    resolve_neg,
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

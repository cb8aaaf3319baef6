"""In-place metadata ops: ``t_``, ``transpose_``/``swapdims_``/``swapaxes_``, ``squeeze_``,
``unsqueeze_``, ``as_strided_`` (the tensor itself takes the view's shape and strides), and
``fill_diagonal_``, ``resize_``, ``resize_as_``, ``set_``; ``dim_order``.

An in-place view op runs the out-of-place view op on ``self`` and then gives ``self`` the
result's geometry and history. The node is the view op's own, renamed to torch's in-place
variant (``TBackward1``...): same backward, torch's name. The version counter is bumped, as
torch does, so tensors saved before the change are caught.
"""

from __future__ import annotations

import math

import numpy as np

from ember._core.tensor import Tensor
from ember._ops.registry import OpNode, _check_inplace, publish
from ember._ops.shape import squeeze, t, transpose, unsqueeze
from ember._ops.slicing import as_strided
from ember._ops.strides import _sizes

# torch's node names for the in-place variants of the view ops
_INPLACE_NAMES = {
    "TBackward0": "TBackward1",
    "TransposeBackward0": "TransposeBackward1",
    "UnsqueezeBackward0": "UnsqueezeBackward1",
    "SqueezeBackward0": "SqueezeBackward3",
    "SqueezeBackward1": "SqueezeBackward4",
    "SqueezeBackward2": "SqueezeBackward5",
    "AsStridedBackward0": "AsStridedBackward1",
}
_RENAMED: dict = {}


def _renamed(cls: type) -> type:
    new = _RENAMED.get(cls)
    if new is None:
        name = _INPLACE_NAMES.get(cls.__name__, cls.__name__)
        new = _RENAMED[cls] = (
            type(name, (cls,), {"__slots__": ()}) if issubclass(cls, OpNode) else cls
        )
    return new


def _become(self: Tensor, view: Tensor) -> Tensor:
    """Give ``self`` the geometry and history of ``view``, a view of ``self`` just made."""
    fn = view._grad_fn
    if fn is not None:
        fn.__class__ = _renamed(type(fn))
        self._grad_fn = fn
        self._output_nr = 0
    self._data = view._data
    if self._base is not None:  # replaying self from its base now ends with this op
        self._view_fn = view._view_fn
    self._vc[0] += 1
    return self


def t_(self: Tensor) -> Tensor:
    """In-place version of :meth:`Tensor.t`; return ``self``."""
    _check_inplace(self)
    return _become(self, t(self))


def transpose_(self: Tensor, dim0: int, dim1: int) -> Tensor:
    """In-place version of :meth:`Tensor.transpose`; return ``self``."""
    _check_inplace(self)
    return _become(self, transpose(self, dim0, dim1))


def squeeze_(self: Tensor, dim=None) -> Tensor:
    """In-place version of :meth:`Tensor.squeeze`; return ``self``."""
    _check_inplace(self)
    return _become(self, squeeze(self, dim))


def unsqueeze_(self: Tensor, dim: int) -> Tensor:
    """In-place version of :meth:`Tensor.unsqueeze`; return ``self``."""
    _check_inplace(self)
    return _become(self, unsqueeze(self, dim))


def as_strided_(self: Tensor, size, stride, storage_offset=None) -> Tensor:
    """In-place version of :meth:`Tensor.as_strided`; return ``self``."""
    _check_inplace(self)
    return _become(self, as_strided(self, size, stride, storage_offset))


def fill_diagonal_(self: Tensor, fill_value, wrap: bool = False) -> Tensor:
    """Fill the main diagonal (all indices equal) with ``fill_value``; with ``wrap``, a tall
    matrix's diagonal restarts below every ``width + 1`` rows. Return ``self``."""
    nd = self.dim()
    if nd < 2:
        raise RuntimeError("dimensions must larger than 1")
    shape = tuple(self.shape)
    if nd > 2 and len(set(shape)) != 1:
        raise RuntimeError("all dimensions of input must be of equal length")
    step = sum(self.stride())
    size = min(shape)
    offset = self.storage_offset()
    self.as_strided((size,), (step,), offset).fill_(fill_value)
    height, width = shape[0], shape[-1]
    if wrap and nd == 2 and height > width + 1:
        n = (self.numel() + width) // (width + 1) - size
        self.as_strided((n,), (step,), offset + self.stride(0) * (width + 1)).fill_(fill_value)
    return self


def resize_(self: Tensor, *sizes, memory_format=None) -> Tensor:
    """Give ``self`` the shape ``sizes`` (C-contiguous), keeping its leading elements and its
    memory when that is large enough; new elements are zeros. Return ``self``."""
    if self._requires_grad:
        raise RuntimeError("cannot resize variables that require grad")
    shape = _sizes(sizes)
    if any(s < 0 for s in shape):
        raise RuntimeError(f"Trying to create tensor with negative dimension: {list(shape)}")
    n = math.prod(shape)
    old = self._data
    if old.flags.c_contiguous and n <= old.size:
        self._data = old.reshape(-1)[:n].reshape(shape)
    else:
        new = np.zeros(n, dtype=old.dtype)
        k = min(n, old.size)
        new[:k] = old.reshape(-1)[:k]
        self._data = new.reshape(shape)
    self._vc[0] += 1
    return self


def resize_as_(self: Tensor, the_template: Tensor, memory_format=None) -> Tensor:
    """Resize ``self`` to the shape of ``the_template``; return ``self``."""
    return resize_(self, tuple(the_template.shape))


def set_(self: Tensor, source=None, storage_offset: int = 0, size=None, stride=None) -> Tensor:
    """Make ``self`` use the memory of ``source`` (a tensor: its elements and geometry; a
    storage: ``size``/``stride`` elements from ``storage_offset``; nothing: an empty tensor).
    Return ``self``."""
    from ember._core.dtype import cpp_type_name
    from ember._core.storage import UntypedStorage

    _check_inplace(self)
    dt = self._data.dtype
    if source is None:
        new = np.empty((0,), dtype=dt)
    elif isinstance(source, Tensor):
        if source.dtype is not self.dtype:
            raise RuntimeError(
                f"Could not set tensor of type {cpp_type_name(source.dtype)} to a tensor of "
                f"type {cpp_type_name(self.dtype)}"
            )
        new = source._data
    else:  # an UntypedStorage, or a TypedStorage (its untyped one)
        raw = getattr(source, "_untyped", source)
        if not isinstance(raw, UntypedStorage):
            raise TypeError(f"set_(): expected a Tensor or a Storage, got {type(source).__name__}")
        elems = raw._bytes[: raw._bytes.size - raw._bytes.size % dt.itemsize].view(dt)
        shape = (elems.size - storage_offset,) if size is None else tuple(size)
        if stride is None:
            stride = tuple(math.prod(shape[i + 1 :]) for i in range(len(shape)))
        new = np.lib.stride_tricks.as_strided(
            elems[storage_offset:], shape, tuple(st * dt.itemsize for st in stride)
        )
    self._data = new
    self._vc[0] += 1
    return self


def dim_order(self: Tensor, *, ambiguity_check: bool = False) -> tuple:
    """Return the dimensions from outermost to innermost in memory (the order of decreasing
    strides; ties keep the logical order)."""
    strides = self.stride()
    return tuple(sorted(range(self.dim()), key=lambda d: -strides[d]))


for _f in (
    t_, transpose_, squeeze_, unsqueeze_, as_strided_, fill_diagonal_, resize_, resize_as_, set_,
    dim_order,
):  # fmt: skip
    publish(
        None, _f, function=False, aliases=("swapdims_", "swapaxes_") if _f is transpose_ else ()
    )

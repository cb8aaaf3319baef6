"""``Tensor.to`` and the dtype/device shorthands (``float()``, ``cpu()``, ...)."""

from __future__ import annotations

from ember._core import dtype as D
from ember._core.device import as_device
from ember._core.device import device as _device
from ember._core.tensor import Tensor
from ember._ops.pointwise import _cast


def _parse_to(args, kwargs):
    dtype = kwargs.pop("dtype", None)
    dev = kwargs.pop("device", None)
    copy = kwargs.pop("copy", False)
    kwargs.pop("non_blocking", None)
    kwargs.pop("memory_format", None)
    if kwargs:
        raise TypeError(f"to() got an unexpected keyword argument '{next(iter(kwargs))}'")
    for a in args:
        if isinstance(a, D.dtype):
            dtype = a
        elif isinstance(a, Tensor):
            dtype, dev = a.dtype, a.device
        elif isinstance(a, (str, _device, int)):
            dev = a
        elif isinstance(a, bool):
            pass  # non_blocking / copy given positionally
        else:
            raise TypeError(
                f"to() received an invalid combination of arguments - got ({type(a).__name__})"
            )
    return dtype, dev, copy


def to(self, *args, **kwargs) -> Tensor:
    """Return ``self`` converted to a dtype and/or device (``self`` if nothing changes)."""
    dtype, dev, copy = _parse_to(args, dict(kwargs))
    if dev is not None:
        as_device(dev)
    out = self if dtype is None else _cast(self, dtype)
    if copy and out is self:
        out = self.clone()
    return out


def cpu(self, memory_format=None) -> Tensor:
    """Return ``self`` (already in CPU memory)."""
    return self


def cuda(self, device=None, non_blocking: bool = False, memory_format=None) -> Tensor:
    """Raise: ember has no CUDA backend."""
    as_device("cuda")
    return self


Tensor.to = to
Tensor.cpu = cpu
Tensor.cuda = cuda


def _shorthand(name, dt):
    def method(self, memory_format=None):
        return _cast(self, dt)

    method.__name__ = name
    method.__doc__ = f"Return ``self.to({dt!r})``."
    setattr(Tensor, name, method)


for _name, _dt in (
    ("float", D.float32),
    ("double", D.float64),
    ("half", D.float16),
    ("bfloat16", D.bfloat16),
    ("long", D.int64),
    ("int", D.int32),
    ("short", D.int16),
    ("char", D.int8),
    ("byte", D.uint8),
    ("bool", D.bool),
    ("cfloat", D.complex64),
    ("cdouble", D.complex128),
):
    _shorthand(_name, _dt)

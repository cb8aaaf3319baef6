"""The arguments of ``Module.to`` / ``Tensor.to`` read as torch reads them
(``torch._C._nn._parse_to``): ``to(device=None, dtype=None, non_blocking=False)``,
``to(dtype, non_blocking=False)``, ``to(tensor, non_blocking=False)``, and ``memory_format=``."""

from __future__ import annotations

import ember
from ember._core.tensor import Tensor

_OVERLOADS = (
    " * (torch.device device = None, torch.dtype dtype = None, bool non_blocking = False, "
    "bool copy = False, *, torch.memory_format memory_format = None)\n"
    " * (torch.dtype dtype, bool non_blocking = False, bool copy = False, *, "
    "torch.memory_format memory_format = None)\n"
    " * (Tensor tensor, bool non_blocking = False, bool copy = False, *, "
    "torch.memory_format memory_format = None)\n"
)


def _type_name(x) -> str:
    if isinstance(x, Tensor):
        return "Tensor"
    if isinstance(x, (ember.dtype, ember.device, ember.memory_format)):
        return "torch." + type(x).__name__
    return type(x).__name__


def _invalid(args, kwargs) -> TypeError:
    got = [_type_name(a) for a in args] + [f"{k}={_type_name(v)}" for k, v in kwargs.items()]
    return TypeError(
        f"to() received an invalid combination of arguments - got ({', '.join(got)}), but "
        f"expected one of:\n{_OVERLOADS}"
    )


def parse_to(*args, **kwargs) -> tuple:
    """Return ``(device, dtype, non_blocking, memory_format)`` from ``to``'s arguments."""
    if "copy" in kwargs:
        raise RuntimeError(".to() does not accept copy argument")
    if set(kwargs) - {"device", "dtype", "non_blocking", "memory_format"}:
        raise _invalid(args, kwargs)
    fmt = kwargs.get("memory_format")
    first = args[0] if args else None
    if isinstance(first, (float, int)) and not isinstance(first, bool) and len(args) == 1:
        if isinstance(first, int):  # an accelerator index
            raise RuntimeError("Cannot access accelerator device when none is available.")
        first = ember.tensor(first, dtype=ember.float64)  # torch reads a number as a tensor
    if isinstance(first, (ember.dtype, Tensor)):
        if "dtype" in kwargs or "device" in kwargs or len(args) > 2:
            raise _invalid(args, kwargs)
        rest = args[1:]
        if isinstance(first, Tensor):
            device, dtype = first.device, first.dtype
        else:
            device, dtype = None, first
    else:
        if len(args) > 3:
            raise _invalid(args, kwargs)
        device = first if args else kwargs.get("device")
        dtype = args[1] if len(args) > 1 else kwargs.get("dtype")
        rest = args[2:]
        if (args and "device" in kwargs) or (len(args) > 1 and "dtype" in kwargs):
            raise _invalid(args, kwargs)
        if device is not None and not isinstance(device, (str, ember.device)):
            raise _invalid(args, kwargs)
        if dtype is not None and not isinstance(dtype, ember.dtype):
            raise _invalid(args, kwargs)
        device = None if device is None else ember.device(device)
    non_blocking = rest[0] if rest else kwargs.get("non_blocking", False)
    if not isinstance(non_blocking, bool):
        raise _invalid(args, kwargs)
    return device, dtype, non_blocking, fmt

"""``Tensor.to`` and the dtype/device shorthands (``float()``, ``cpu()``, ...)."""

from __future__ import annotations

import math
from collections import abc as _abc

import numpy as np

from ember._core import dtype as D
from ember._core.device import as_device
from ember._core.device import device as _device
from ember._core.tensor import (
    Tensor,
    contiguous_format,
    preserve_format,
)
from ember._ops.copying import check_memory_format, copy_in_format, suggest_memory_format
from ember._ops.pointwise import _cast, _to_copy
from ember._ops.registry import dispatch, publish


def _parse_to(args, kwargs):
    dtype = D.as_dtype(kwargs.pop("dtype", None), "to")
    dev = kwargs.pop("device", None)
    copy = kwargs.pop("copy", False)
    kwargs.pop("non_blocking", None)
    fmt = kwargs.pop("memory_format", None)
    if kwargs:
        raise TypeError(f"to() got an unexpected keyword argument '{next(iter(kwargs))}'")
    bools = 0
    for a in args:
        if isinstance(a, D.dtype):
            dtype = a
        elif isinstance(a, Tensor):
            dtype, dev = a.dtype, a.device
        elif isinstance(a, bool):
            bools += 1  # non_blocking, then copy, given positionally
            if bools == 2:
                copy = a
        elif isinstance(a, (str, _device, int)):
            dev = a
        elif isinstance(a, type) and a in (float, int, bool, complex):
            dtype = D.as_dtype(a, "to")
        else:
            raise TypeError(
                f"to() received an invalid combination of arguments - got ({type(a).__name__})"
            )
    return dtype, dev, copy, fmt


def to(self, *args, **kwargs) -> Tensor:
    """Return ``self`` converted to a dtype and/or device: ``to(dtype)``, ``to(device)``,
    ``to(device, dtype)``, ``to(other)``; ``self`` itself when nothing changes, unless
    ``copy=True``. A copy keeps ``self``'s strides (``memory_format=contiguous_format``:
    row-major)."""
    dtype, dev, copy, fmt = _parse_to(args, dict(kwargs))
    if dev is not None:
        as_device(dev)
    if dtype is None:
        dtype = self.dtype
    relayout = fmt is not None and fmt is not preserve_format
    if relayout:
        check_memory_format(self._data.ndim, fmt)
        # torch's to_will_alias: a format asked for is honoured only when it is not the one
        # the strides already suggest (a transposed matrix stays as it is)
        relayout = _suggest_memory_format(self) is not fmt
    if dtype is self.dtype and not copy and not relayout:
        return self
    out = dispatch(_to_copy, (self,), {"dtype": dtype})
    if fmt is contiguous_format:
        if not out._data.flags.c_contiguous:
            out._data = np.ascontiguousarray(out._data)  # a fresh copy: nothing else views it
    elif relayout:
        out._data = copy_in_format(out._data, fmt)  # (likewise)
    return out


def _suggest_memory_format(t: Tensor):
    """torch's ``suggest_memory_format`` of a tensor (``copying.suggest_memory_format``)."""
    return suggest_memory_format(t._data)


def cpu(self, memory_format=None) -> Tensor:
    """Return ``self`` (already in CPU memory)."""
    return self


def cuda(self, device=None, non_blocking: bool = False, memory_format=None) -> Tensor:
    """Raise: ember has no CUDA backend."""
    as_device("cuda")
    return self


for _fn in (to, cpu, cuda):
    publish(None, _fn, function=False)


def _shorthand(name, dt):
    def method(self, memory_format=None):
        return _cast(self, dt)

    method.__name__ = name
    method.__doc__ = f"Return ``self.to({dt!r})``."
    publish(None, method, function=False)


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


# ---------------------------------------------------------------------------------------------
# Python data -> array, as torch.tensor reads it (torch/csrc/utils/tensor_new.cpp)

_PY_NUMBERS = frozenset((float, int, bool, complex))
_MAX_DIMS = 64


def _is_sequence(obj) -> bool:
    # PySequence_Check, minus Tensors: torch reads a Tensor inside a list as one number
    if isinstance(obj, (list, tuple, np.ndarray, str, bytes, bytearray, range, memoryview)):
        return not (isinstance(obj, np.ndarray) and obj.ndim == 0)
    return isinstance(obj, _abc.Sequence)


def _scalar_type_of(obj) -> D.dtype:
    # torch's infer_scalar_type for one item that is not a list or tuple
    if isinstance(obj, Tensor):
        return obj.dtype
    if isinstance(obj, (np.ndarray, np.generic)):
        return D.from_numpy_dtype(obj.dtype)
    if isinstance(obj, bool):
        return D.bool
    if isinstance(obj, int):
        return D.int64
    if isinstance(obj, float):
        return D.get_default_dtype()
    if isinstance(obj, complex):
        return _default_complex()
    if isinstance(obj, (str, bytes)):
        raise TypeError(f"new(): invalid data type '{type(obj).__name__}'")
    if _is_sequence(obj):
        return infer_dtype(list(obj))
    raise RuntimeError(f"Could not infer dtype of {type(obj).__name__}")


def _default_complex() -> D.dtype:
    d = D.get_default_dtype()
    if d is D.bfloat16:
        raise RuntimeError("invalid default scalar type for complex")
    return d.to_complex()


def _python_numbers_dtype(types) -> D.dtype:
    if complex in types:
        return _default_complex()
    if float in types:
        return D.get_default_dtype()
    if int in types:
        return D.int64
    return D.bool


def infer_dtype(data) -> D.dtype:
    """Return the dtype ``torch.tensor(data)`` gives: Python floats take the default dtype,
    ints int64, bools bool, complex the default complex; NumPy values and Tensors their own;
    items of a sequence combine by ``promote_types``."""
    t = type(data)
    if t is not list and t is not tuple:
        return _scalar_type_of(data)
    if not data:
        return D.get_default_dtype()
    types = set(map(type, data))
    if types <= _PY_NUMBERS:  # the common case: a flat list of Python numbers
        return _python_numbers_dtype(types)
    result = None
    for item in data:
        if item is data:
            raise TypeError("new(): self-referential lists are incompatible")
        d = infer_dtype(item)
        result = d if result is None else D.promote_types(result, d)
        if result is D.complex128:
            break
    return result


def _needs_normalizing(data) -> bool:
    # True if nested data holds Tensors or sequences NumPy would read differently from torch
    types = set(map(type, data))
    if types <= _PY_NUMBERS:
        return False
    for item in data:
        t = type(item)
        if t is list or t is tuple:
            if _needs_normalizing(item):
                return True
        elif t in _PY_NUMBERS or isinstance(item, (np.ndarray, np.generic)):
            continue
        else:
            return True
    return False


def _normalize(obj):
    # Tensors inside data are numbers to torch (one element each); other sequences are lists
    if isinstance(obj, Tensor):
        if obj._data.size != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        return obj.item()
    if type(obj) in _PY_NUMBERS or isinstance(obj, (np.ndarray, np.generic)):
        return obj
    if isinstance(obj, (str, bytes)):
        return obj
    if _is_sequence(obj):
        return [_normalize(x) for x in obj]
    return obj


def torch_sizes(data) -> list:
    """Return the shape torch reads off nested data: its compute_sizes follows the first item
    down while it is a sequence (a string nests forever: "too many dimensions")."""
    sizes = []
    seq = data
    while _is_sequence(seq):
        n = len(seq)
        sizes.append(n)
        if len(sizes) > _MAX_DIMS:
            raise ValueError(f"too many dimensions '{type(seq).__name__}'")
        if n == 0:
            break
        seq = seq[0]
    return sizes


def _check_nesting(obj, sizes, dim, dt) -> None:
    # torch's recursive_store, minus the store: raise its error for ragged data
    if dim == len(sizes):
        if _is_sequence(obj):
            name = type(obj).__name__
            if dt.is_floating_point or dt.is_complex or dt is D.bool:
                raise TypeError(f"must be real number, not {name}")
            raise TypeError(f"'{name}' object cannot be interpreted as an integer")
        return
    if not _is_sequence(obj):
        raise TypeError("not a sequence")
    n = sizes[dim]
    if len(obj) != n:
        raise ValueError(f"expected sequence of length {n} at dim {dim} (got {len(obj)})")
    for item in obj:
        _check_nesting(item, sizes, dim + 1, dt)


def _overflow(dt: D.dtype) -> RuntimeError:
    return RuntimeError(f"value cannot be converted to type {dt.name} without overflow")


def _checked_cast(src: np.ndarray, dt: D.dtype) -> np.ndarray:
    """Cast numbers read from Python data to ``dt`` with torch's checks: integer dtypes reject
    out-of-range values (uint8 wraps negatives down to -255, as torch), floats reject
    complex values; floating dtypes overflow to inf silently."""
    kind = src.dtype.kind
    if kind in "OUS":
        if kind != "O":
            raise ValueError("too many dimensions 'str'")
        if not (dt.is_floating_point or dt.is_complex or dt is D.bool):
            raise ValueError("Overflow when unpacking long long")
        if dt is D.bool:  # torch tests a number's truth for bool data
            return np.vectorize(bool, otypes=[np.bool_])(src)
    elif kind == "u" and src.dtype.itemsize == 8:
        # NumPy reads Python ints in [2**63, 2**64) as uint64; torch unpacks them as int64
        if not (dt.is_floating_point or dt.is_complex or dt is D.bool):
            raise ValueError("Overflow when unpacking long long")
    if dt.is_complex or dt is D.bool:
        return src.astype(dt.np) if dt.is_complex else src != 0
    if kind == "c":
        if dt.is_floating_point:
            raise TypeError("must be real number, not complex")
        raise TypeError("'complex' object cannot be interpreted as an integer")
    if dt.is_floating_point:
        return src.astype(dt.np)
    # integer targets
    if dt is D.uint64 and src.size and kind in "if":
        if kind == "f":
            raise TypeError("an integer is required")
        if src.min() < 0:
            raise OverflowError("can't convert negative int to unsigned")
    if src.size and not (kind == "b" or (kind == "i" and dt is D.int64)):
        info = np.iinfo(dt.np)
        # unsigned targets take ints down to -max, wrapping (torch's uint8 -255 -> 1)
        lo = -int(info.max) if info.min == 0 and kind != "f" else int(info.min)
        bad = not (src.min() >= lo and src.max() <= int(info.max))
        if bad:
            raise _overflow(dt)
    return src.astype(dt.np)  # floats truncate toward zero; uint8 wraps negative ints


def array_from_data(data, dt: D.dtype) -> np.ndarray:
    """Return a new array of ``dt`` holding Python data (numbers, nested sequences, NumPy
    scalars, one-element Tensors inside lists), raising torch's errors for bad data."""
    if type(data) is int and _is_int_dtype(dt):
        return np.asarray(_int_item(data, dt), dtype=dt.np)
    if type(data) in _PY_NUMBERS or isinstance(data, np.generic):
        return _checked_cast(np.asarray(data), dt)
    if isinstance(data, (str, bytes)):
        raise TypeError(f"new(): invalid data type '{type(data).__name__}'")
    if not _is_sequence(data):
        raise RuntimeError(f"Could not infer dtype of {type(data).__name__}")
    if type(data) not in (list, tuple) or _needs_normalizing(data):
        data = _normalize(data)
    try:
        src = np.array(data)  # NumPy >= 1.24 raises ValueError for ragged data
    except (ValueError, TypeError):
        src = None
    if src is None or (src.dtype.kind == "O" and not _all_numbers(src)):
        sizes = torch_sizes(data)
        if 0 in sizes:  # torch stores nothing into an empty tensor: any nesting is accepted
            return np.empty(sizes, dtype=dt.np)
        _check_nesting(data, sizes, 0, dt)
        src = np.array(data, dtype=object)
    if _is_int_dtype(dt) and (src.dtype.kind in "fO" or src.dtype == np.uint64):
        # NumPy read the numbers as floats, objects or uint64: the Python ints among them are
        # converted one by one, as torch converts each number by its own type
        items = list(_flat_items(data))
        if any(type(v) is int for v in items):
            values = [
                _int_item(v, dt) if type(v) is int else _checked_cast(np.asarray(v), dt)
                for v in items
            ]  # in order: the first bad number raises its own error
            return np.array(values, dtype=dt.np).reshape(src.shape)
    return _checked_cast(src, dt)


def _is_int_dtype(dt: D.dtype) -> bool:
    return not (dt.is_floating_point or dt.is_complex or dt is D.bool)


def _flat_items(data):
    if isinstance(data, (list, tuple)):
        for item in data:
            yield from _flat_items(item)
    else:
        yield data


def _int_item(v: int, dt: D.dtype) -> int:
    """One Python int read into the integer dtype ``dt`` as torch reads it: unpacked as int64
    (uint64: as an unsigned 64-bit number), then range-checked (unsigned: wrapping from -max)."""
    if dt is D.uint64:
        if v < 0:
            raise OverflowError("can't convert negative int to unsigned")
        if v >= 1 << 64:
            raise OverflowError("int too big to convert")
        return v
    if not -(1 << 63) <= v < 1 << 63:
        raise ValueError("Overflow when unpacking long long")
    info = np.iinfo(dt.np)
    if info.min == 0:
        if not -int(info.max) <= v <= int(info.max):
            raise _overflow(dt)
        return v & int(info.max)
    if not int(info.min) <= v <= int(info.max):
        raise _overflow(dt)
    return v


def _all_numbers(src: np.ndarray) -> bool:
    # an object array that is not ragged: only Python ints too large for int64 put it there
    return all(type(x) in _PY_NUMBERS for x in src.flat)


# ---------------------------------------------------------------------------------------------
# one Python number -> one value of a dtype, with torch's overflow checks (c10::checked_convert)

_C_NAMES = {
    "bool": "bool",
    "uint8": "uint8_t",
    "int8": "int8_t",
    "int16": "int16_t",
    "int32": "int",
    "int64": "int64_t",
    "float16": "c10::Half",
    "bfloat16": "c10::BFloat16",
    "float32": "float",
    "float64": "double",
    "complex64": "c10::complex<float>",
    "complex128": "c10::complex<double>",
}
_F16_MAX = 65504.0
_F32_MAX = float(np.finfo(np.float32).max)


def scalar_overflow(dt: D.dtype) -> RuntimeError:
    """Return torch's error for a number that does not fit ``dt``."""
    return RuntimeError(f"value cannot be converted to type {_C_NAMES[dt.name]} without overflow")


def _real_fits(v: float, dt: D.dtype) -> bool:
    if dt.is_floating_point or dt.is_complex:
        if v != v or v in (math.inf, -math.inf):
            return True
        if dt is D.float16:
            return -_F16_MAX <= v <= _F16_MAX
        if dt is D.float64 or dt is D.complex128:
            return True
        return -_F32_MAX <= v <= _F32_MAX  # float32, complex64, bfloat16 (via float)
    info = np.iinfo(dt.np)
    return int(info.min) <= v <= int(info.max)  # False for nan and inf


def scalar_value(value, dt: D.dtype):
    """Return the Python number ``value`` converted to ``dt`` as a NumPy scalar, raising
    torch's errors when it does not fit (ints wrap into uint8 down to -255, as torch)."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, int) and not isinstance(value, bool):
        if value >= 1 << 64:
            raise OverflowError("int too big to convert")
        if value < -(1 << 63):
            raise OverflowError("can't convert negative int to unsigned")
    if dt is D.bool:
        return np.bool_(value != 0)
    if isinstance(value, bool):
        return dt.np.type(value)
    if isinstance(value, int):
        if dt.is_floating_point or dt.is_complex:
            if not _real_fits(float(value), dt):  # float16: past 65504 (torch checks ints too)
                raise scalar_overflow(dt)
            return dt.np.type(float(value))
        if dt is D.uint8:
            if not -255 <= value <= 255:
                raise scalar_overflow(dt)
            return np.uint8(value & 0xFF)
        if not _real_fits(value, dt):
            raise scalar_overflow(dt)
        return dt.np.type(value)
    if isinstance(value, complex):
        if dt.is_complex:
            if not (_real_fits(value.real, dt) and _real_fits(value.imag, dt)):
                raise scalar_overflow(dt)
            return dt.np.type(value)
        if value.imag != 0:
            raise scalar_overflow(dt)
        value = value.real
    value = float(value)
    if not _real_fits(value, dt):
        raise scalar_overflow(dt)
    if dt.is_floating_point or dt.is_complex:
        return dt.np.type(value)
    return dt.np.type(int(value))  # truncation toward zero

"""``make_tensor``: a random tensor of any shape and dtype, as torch.testing makes one."""

from __future__ import annotations

import collections.abc
import math
import warnings

import numpy as np

from ember._core import dtype as D
from ember._core.tensor import Tensor, _wrap

_INTEGRAL = ("uint8", "int8", "int16", "int32", "int64")
_FLOATING = ("float16", "bfloat16", "float32", "float64")
_COMPLEX = ("complex64", "complex128")


def _low_high(dtype, low, high, lowest, highest, default_low, default_high):
    low = default_low if low is None else low
    high = default_high if high is None else high
    if any(isinstance(v, float) and math.isnan(v) for v in (low, high)):
        raise ValueError(f"`low` and `high` cannot be NaN, but got low={low} and high={high}")
    if low == high and dtype.name in _FLOATING + _COMPLEX:
        warnings.warn(
            "Passing `low==high` to `torch.testing.make_tensor` for floating or complex types is "
            "deprecated since 2.1 and will be removed in 2.3. Use `torch.full(...)` instead.",
            FutureWarning,
            stacklevel=3,
        )
    elif low >= high:
        raise ValueError(f"`low` must be less than `high`, but got {low} >= {high}")
    elif high < lowest or low >= highest:
        raise ValueError(
            f"The value interval specified by `low` and `high` is [{low}, {high}), but {dtype} "
            f"only supports [{lowest}, {highest})"
        )
    low, high = min(max(low, lowest), highest), min(max(high, lowest), highest)
    if dtype.name in _INTEGRAL or dtype is D.bool:
        return math.ceil(low), math.ceil(high)
    return low, high


def make_tensor(
    *shape,
    dtype: D.dtype,
    device,
    low: float | None = None,
    high: float | None = None,
    requires_grad: bool = False,
    noncontiguous: bool = False,
    exclude_zero: bool = False,
    memory_format=None,
) -> Tensor:
    """Return a tensor of ``shape`` and ``dtype`` with values drawn uniformly from
    ``[low, high)`` (defaults by dtype: bool [0, 2), unsigned [0, 10), signed [-9, 10), floating
    and complex [-9, 9)); ``noncontiguous`` gives a strided view, ``exclude_zero`` replaces zeros
    by the smallest positive value of the dtype."""
    from ember._ops.registry import API, packed_items

    packed = packed_items(shape, collections.abc.Sequence)
    shape = tuple(shape) if packed is None else packed
    if noncontiguous and memory_format is not None:
        raise ValueError(
            "The parameters `noncontiguous` and `memory_format` are mutually exclusive, but got "
            f"noncontiguous={noncontiguous} and memory_format={memory_format}"
        )
    name = dtype.name
    if requires_grad and (dtype is D.bool or name in _INTEGRAL):
        raise ValueError(
            "`requires_grad=True` is not supported for boolean and integral dtypes, but got "
            f"dtype={dtype}"
        )
    noncontiguous = noncontiguous and math.prod(shape) > 1
    if noncontiguous:
        shape = (*shape[:-1], 2 * shape[-1])
    if dtype is D.bool:
        low, high = _low_high(dtype, low, high, 0, 2, 0, 2)
        result = API["randint"](low, high, shape, dtype=dtype, device=device)
    elif name in _INTEGRAL:
        info = D.iinfo(dtype)
        top = info.max + (1 if name != "int64" else 0)
        low, high = _low_high(dtype, low, high, info.min, top, -9, 10)
        result = API["randint"](low, high, shape, dtype=dtype, device=device)
    elif name in _FLOATING + _COMPLEX:
        real = D.float32 if name == "complex64" else D.float64 if name == "complex128" else dtype
        info = D.finfo(real)
        low, high = _low_high(dtype, low, high, info.min, info.max, -9, 9)
        parts = (*shape, 2) if name in _COMPLEX else shape
        result = API["empty"](parts, dtype=real, device=device)
        if high - low >= info.max:  # the width overflows: draw at half scale
            result.uniform_(low / 2, high / 2).mul_(2)
        else:
            result.uniform_(low, high)
        if name in _COMPLEX:
            result = _wrap(np.ascontiguousarray(result._data).view(dtype.np)[..., 0])
    else:
        raise TypeError(
            f"The requested dtype '{dtype}' is not supported by torch.testing.make_tensor(). To "
            "request support, file an issue at: https://github.com/pytorch/pytorch/issues"
        )
    if noncontiguous:
        result = result[..., 1::2]
    elif memory_format is not None:
        result = result.clone(memory_format=memory_format)
    if exclude_zero:
        tiny = 1 if dtype is D.bool or name in _INTEGRAL else D.finfo(dtype).tiny
        data = result._data
        data[data == 0] = tiny
    if name in _FLOATING + _COMPLEX:
        result.requires_grad = requires_grad
    return result

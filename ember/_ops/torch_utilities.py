"""torch-level utilities with no family of their own: ``is_signed``, ``typename``,
``scalar_tensor``, ``empty_strided``, ``range``, ``isin``, ``unravel_index``, ``_assert`` and
``vander``. Their former neighbours have files named for them: ``trapezoid.py``,
``histogram.py``, ``frombuffer.py``, ``linalg_lowrank.py`` (``to_dlpack`` is ``utils.dlpack``'s).
"""

from __future__ import annotations

import warnings

import numpy as np

from ember._core import dtype as D
from ember._core.tensor import Tensor, _wrap
from ember._ops.registry import API, dispatch, op, publish, result_dtype

# --- small utilities ----------------------------------------------------------------------------


def is_signed(input: Tensor) -> bool:
    """Return True if the dtype of ``input`` is a signed type."""
    return input.is_signed()


def typename(obj) -> str:
    """Return the type name of ``obj``: ``'torch.FloatTensor'`` for a tensor, else its class."""
    if isinstance(obj, Tensor):
        return obj.type()
    module = getattr(obj, "__module__", "") or ""
    if hasattr(obj, "__qualname__"):
        qualname = obj.__qualname__
    elif hasattr(obj, "__name__"):
        qualname = obj.__name__
    else:
        module = obj.__class__.__module__ or ""
        qualname = obj.__class__.__qualname__
    return qualname if module in ("", "builtins") else f"{module}.{qualname}"


def scalar_tensor(s, *, dtype=None, layout=None, device=None, pin_memory=False,
                  requires_grad: bool = False) -> Tensor:  # fmt: skip
    """Return a 0-dim tensor holding ``s`` (of the default float dtype unless ``dtype``)."""
    dt = D.get_default_dtype() if dtype is None else dtype
    if isinstance(s, Tensor):
        s = s.item()
    if isinstance(s, complex) and not dt.is_complex:
        raise RuntimeError(
            f"value cannot be converted to type {D.cpp_type_name(dt)} without overflow"
        )
    return API["tensor"](s, dtype=dt, device=device, requires_grad=requires_grad)


def empty_strided(size, stride, *, dtype=None, layout=None, device=None,
                  requires_grad: bool = False, pin_memory: bool = False) -> Tensor:  # fmt: skip
    """Return an uninitialized tensor of ``size`` laid out with ``stride`` (in elements)."""
    from ember._core.device import as_device

    as_device(device)
    size, stride = tuple(int(s) for s in size), tuple(int(s) for s in stride)
    if len(size) != len(stride):
        raise RuntimeError(
            f"dimensionality of sizes ({len(size)}) must match dimensionality of strides "
            f"({len(stride)})"
        )
    dt = D.get_default_dtype() if dtype is None else dtype
    n = 0 if 0 in size else 1 + sum((s - 1) * st for s, st in zip(size, stride))
    buf = np.empty(n, dt.np)
    arr = np.lib.stride_tricks.as_strided(buf, size, tuple(st * buf.itemsize for st in stride))
    t = _wrap(arr)
    return t.requires_grad_(True) if requires_grad else t


_RANGE_WARNING = (
    "torch.range is deprecated and will be removed in a future release because its behavior "
    "is inconsistent with Python's range builtin. Instead, use torch.arange, which produces "
    "values in [start, end)."
)


def range_(start=0, end=None, step=1, *, out=None, dtype=None, layout=None, device=None,
          requires_grad: bool = False) -> Tensor:  # fmt: skip
    """Return ``[start, start + step, ..., end]`` with ``end`` included (deprecated; warns).

    The size is ``floor((end - start) / step) + 1``; the dtype the default float dtype
    unless ``dtype``. Prefer :func:`arange`.
    """
    from ember._core.device import as_device

    if end is None:
        raise TypeError('range() missing 1 required positional arguments: "end"')
    warnings.warn(_RANGE_WARNING, UserWarning, stacklevel=2)
    dt = D.get_default_dtype() if dtype is None else dtype
    if not (dt.is_floating_point or dt.is_complex):
        start, end, step = int(start), int(end), int(step)  # torch casts the bounds first
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if (step > 0 and end < start) or (step < 0 and end > start):
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    n = int(np.floor((end - start) / step)) + 1
    values = (start + np.arange(n, dtype=np.float64) * step).astype(dt.np)
    as_device(device)
    result = API["from_numpy"](values)
    if out is not None:
        out.resize_(n).copy_(result)
        return out
    return result.requires_grad_(True) if requires_grad else result


# named ``range_`` here so the builtin ``range`` stays usable in this module
range_.__name__ = range_.__qualname__ = "range"
publish(None, range_, name="range", method=False)
for _fn in (is_signed, typename, scalar_tensor, empty_strided):
    publish(None, _fn, method=False)


# --- isin, unravel_index ------------------------------------------------------------------------


@op("isin")
def _isin(elements, test_elements, assume_unique, invert):
    return np.isin(elements, test_elements, assume_unique=assume_unique, invert=invert)


def isin(elements, test_elements, *, assume_unique: bool = False, invert: bool = False) -> Tensor:
    """Return a bool tensor: True where an element of ``elements`` is in ``test_elements``.

    Either argument may be a number (not both); ``invert`` negates the result.
    """
    from ember._ops.registry import _integer_operand, check_python_int

    tensor = API["tensor"]

    for t in (elements, test_elements):
        if type(t) is int:
            check_python_int(t)  # (torch's argument parser, before anything else)
    for t in (elements, test_elements):
        kind = t.dtype if isinstance(t, Tensor) else D.bool if type(t) is bool else None
        if kind is not None and (kind is D.bool or kind.is_complex):
            raise RuntimeError(
                "Unsupported input type encountered for isin(): " + D.scalar_type_name(kind)
            )

    def number(x, other):
        # a number past int64 is converted to the other side's integer dtype as C does
        if type(x) is int and not -(1 << 63) <= x < 1 << 63:
            if isinstance(other, Tensor) and other._data.dtype.kind in "iu":
                return tensor(_integer_operand(x, other._data.dtype).item())
            return tensor(float(x))
        return tensor(x)

    a = elements if isinstance(elements, Tensor) else number(elements, test_elements)
    b = test_elements if isinstance(test_elements, Tensor) else number(test_elements, elements)
    dt = result_dtype((a, b))
    a, b = a.to(dt), b.to(dt)
    return dispatch(_isin, (a, b), {"assume_unique": assume_unique, "invert": invert})


def unravel_index(indices, shape) -> tuple:
    """Return a tuple of int64 tensors: the coordinates in ``shape`` of the flat ``indices``.

    As torch, out-of-range indices wrap (no error).
    """
    import itertools
    import operator

    if not isinstance(indices, Tensor):
        raise AttributeError(f"'{type(indices).__name__}' object has no attribute 'is_complex'")
    if indices.dtype is D.bool or indices.dtype.is_floating_point or indices.dtype.is_complex:
        raise TypeError(f"expected 'indices' to be integer dtype, but got {indices.dtype}")
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    for dim in shape:
        if not isinstance(dim, int):
            raise TypeError(f"expected 'shape' sequence to only contain ints, but got {type(dim)}")
    if any(dim < 0 for dim in shape):
        raise ValueError(f"'shape' cannot have negative values, but got {shape}")
    coefs = list(reversed(list(itertools.accumulate(reversed(shape[1:] + (1,)), operator.mul))))
    res = indices.unsqueeze(-1).floor_divide(API["tensor"](coefs, dtype=D.int64))
    return (res % API["tensor"](shape, dtype=D.int64)).unbind(-1)


def _assert(condition, message: str) -> None:
    """A wrapper around Python's assert which is symbolically traceable (``torch._assert``)."""
    if not condition:
        raise AssertionError(message)


publish(None, isin, method=False)
publish(None, unravel_index, method=False)
publish(None, _assert, method=False)


# --- vander ---------------------------------------------------------------------------------------


def vander(x: Tensor, N: int | None = None, increasing: bool = False) -> Tensor:
    """Return the Vandermonde matrix of the 1-d ``x``: columns ``x**(N-1), ..., x, 1``
    (``increasing`` reverses them); integer and bool inputs give int64."""
    if x.dim() != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    n = x.shape[0] if N is None else N
    if n < 0:
        raise RuntimeError("N must be non-negative.")
    dt = D.promote_types(x.dtype, D.int64)
    result = API["empty"]((x.shape[0], n), dtype=dt)
    if n > 0:
        result.fill_(1)
        if n > 1:
            result[:, 1:].copy_(x.unsqueeze(1))
            result[:, 1:].copy_(API["cumprod"](result[:, 1:], 1))
    return result if increasing else API["flip"](result, (1,))


publish(None, vander, method=False)

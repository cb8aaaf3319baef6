"""Where, clone, copy_, dtype conversion (``_to_copy``), fill_ and zero_."""

from __future__ import annotations

import warnings

import numpy as np

from ember._core import dtype as D
from ember._core.tensor import (
    Tensor,
    channels_last,
    channels_last_3d,
    contiguous_format,
    preserve_format,
)
from ember._ops.registry import dispatch, dispatch_inplace, op, publish


@op("where", grad_fn="WhereBackward0", args=("condition", "self", "other"), save=("condition",))
def _where(cond, x, y):
    return np.where(cond, x, y)


@_where.backward
def _(ctx, g):
    (cond,) = ctx.saved_tensors
    need = ctx.needs_input_grad
    zero = g.new_zeros(())
    return (
        None,
        where(cond, g, zero) if need[1] else None,
        where(cond, zero, g) if need[2] else None,
    )


def where(condition, input=None, other=None):
    """Return elements of ``input`` where ``condition`` is True, else of ``other``.

    With only ``condition``, return ``condition.nonzero(as_tuple=True)``.
    """
    if input is None and other is None:
        return condition.nonzero(as_tuple=True)
    if condition.dtype is not D.bool:
        raise RuntimeError(
            f"where expected condition to be a boolean tensor, but got a tensor "
            f"with dtype {_type_word(condition.dtype)}"
        )
    dt = _result(input, other)
    x = input if not isinstance(input, Tensor) else input
    arrays = (condition, _cast_operand(x, dt), _cast_operand(other, dt))
    return dispatch(_where, arrays)


def _type_word(dt):
    from ember._ops.registry import _type_name

    return _type_name(dt)


def _result(*xs):
    from ember._ops.registry import result_dtype

    return result_dtype(xs)


def _cast_operand(x, dt):
    # tensors keep their identity (the engine casts their gradient back); scalars become 0-d
    if isinstance(x, Tensor):
        return x if x.dtype is dt else x.to(dt)
    from ember._core.tensor import _wrap
    from ember._ops.convert import scalar_value

    if dt is D.float16 or dt is D.bfloat16:
        # torch casts where's number to a half type unchecked (1e10 -> inf)
        if type(x) is int:
            from ember._ops.registry import check_python_int

            check_python_int(x)
        return _wrap(np.asarray(float(x) if type(x) is not complex else x).astype(dt.np))
    return _wrap(np.asarray(scalar_value(x, dt)))


def _where_method(self, condition, other):
    """``Tensor.where(condition, y)`` is ``torch.where(condition, self, y)``."""
    return where(condition, self, other)


_where_method.__name__ = "where"
publish(None, where, method=False)
publish(None, _where_method, name="where", function=False)


def check_memory_format(ndim: int, memory_format) -> None:
    """Raise torch's error when a channels-last format is asked of a tensor of the wrong rank."""
    if memory_format is channels_last and ndim != 4:
        raise RuntimeError("required rank 4 tensor to use channels_last format")
    if memory_format is channels_last_3d and ndim != 5:
        raise RuntimeError("required rank 5 tensor to use channels_last_3d format")


def copy_in_format(x: np.ndarray, memory_format) -> np.ndarray:
    """Return a copy of ``x`` laid out in ``memory_format``: row-major, or channels-last (the
    channel dimension innermost: NHWC / NDHWC memory behind an NCHW / NCDHW shape)."""
    if memory_format is channels_last or memory_format is channels_last_3d:
        last = x.ndim - 1
        inner = np.ascontiguousarray(x.transpose(0, *range(2, x.ndim), 1))
        return inner.transpose(0, last, *range(1, last))
    return np.array(x, copy=True, order="C")


def suggest_memory_format(a: np.ndarray):
    """torch's ``suggest_memory_format`` of an array: channels-last when the strides order C,
    W, H (, D), N from the innermost out (``is_channels_last_strides_2d/3d``), else
    contiguous."""
    if a.ndim not in (4, 5):
        return contiguous_format
    sizes, strides = a.shape, a.strides
    if strides[1] == 0:
        return contiguous_format
    order = (1, 3, 2, 0) if a.ndim == 4 else (1, 4, 3, 2, 0)
    low = 0
    for d in order:
        if sizes[d] == 0 or strides[d] < low:
            return contiguous_format
        if d == 0 and low == strides[1]:
            return contiguous_format
        low = strides[d] * sizes[d] if sizes[d] > 1 else strides[d]
    return channels_last if a.ndim == 4 else channels_last_3d


def keep_layout_of(out: np.ndarray, *inputs: np.ndarray) -> np.ndarray:
    """Return ``out`` (a fresh row-major result) channels-last when an input's layout suggests
    it, as torch's convolution, pooling, interpolation and normalization kernels do."""
    if out.ndim in (4, 5):
        for a in inputs:
            if a is not None and a.ndim == out.ndim:
                fmt = suggest_memory_format(a)
                if fmt is not contiguous_format:
                    return copy_in_format(out, fmt)
    return out


@op("clone", grad_fn="CloneBackward0")
def _clone(x, memory_format=None):
    # torch's default (preserve_format) keeps a dense tensor's layout; broadcast (stride-0)
    # dims, and contiguous_format, give a row-major copy
    if memory_format is not None and memory_format is not preserve_format:
        return copy_in_format(x, memory_format)
    if any(s == 0 and n > 1 for s, n in zip(x.strides, x.shape)):
        return np.array(x, copy=True, order="C")
    return x.copy(order="K")


_clone.backward(lambda ctx, g, memory_format=None: g)


def clone(input, *, memory_format=None):
    """Return a copy of ``input`` (differentiable), keeping its memory layout unless
    ``memory_format=torch.contiguous_format``."""
    if memory_format is None or memory_format is preserve_format:
        return dispatch(_clone, (input,))
    check_memory_format(input._data.ndim, memory_format)
    return dispatch(_clone, (input,), {"memory_format": memory_format})


publish(None, clone)


@op("copy_", grad_fn="CopyBackwards")
def _copy(dst, src):
    return src


@_copy.backward
def _(ctx, g):
    # the old values of ``dst`` are overwritten: their gradient is zero (torch returns zeros)
    return (g.new_zeros(g.shape) if ctx.needs_input_grad[0] else None), g


def _copy_(self, src, non_blocking=False):
    """Copy the elements of ``src`` into ``self`` (broadcast, cast); return ``self``."""
    if not isinstance(src, Tensor):
        raise TypeError(
            f"copy_(): argument 'src' (position 1) must be Tensor, not {type(src).__name__}"
        )
    return dispatch_inplace(_copy, self, (self, src))


publish(_copy, _copy_, name="copy_", function=False)


COMPLEX_CAST_WARNING = "Casting complex values to real discards the imaginary part"
_WARNED_COMPLEX_CAST: list = []


@op("_to_copy", grad_fn="ToCopyBackward0")
def _to_copy(x, dtype):
    if x.dtype.kind == "c" and dtype.np.kind != "c":
        # torch's warning (a UserWarning, once per process), where NumPy would raise its own
        # ComplexWarning every time
        if not _WARNED_COMPLEX_CAST:
            _WARNED_COMPLEX_CAST.append(True)
            warnings.warn(COMPLEX_CAST_WARNING, UserWarning, stacklevel=2)
        x = x.real
    return x.astype(dtype.np)


_to_copy.backward(lambda ctx, g, dtype: g)


def _cast(t, dtype):
    """Return ``t`` converted to ``dtype`` (differentiable; self when already of that dtype)."""
    if t.dtype is dtype:
        return t
    return dispatch(_to_copy, (t,), {"dtype": dtype})


@op("fill_", grad_fn="FillBackward2")
def _fill_scalar(x, value):
    return np.asarray(value)


_fill_scalar.backward(lambda ctx, g, value: g.new_zeros(g.shape))


@op("fill_", grad_fn="FillBackward3")
def _fill_tensor(x, value):
    return value


@_fill_tensor.backward
def _(ctx, g):
    need = ctx.needs_input_grad
    return (g.new_zeros(g.shape) if need[0] else None), (g.sum() if need[1] else None)


@op("fill_", grad_fn="ZeroBackward0")
def _zero(x):
    return np.zeros((), dtype=x.dtype)


_zero.backward(lambda ctx, g: g.new_zeros(g.shape))


def _fill_(self, value):
    """Fill ``self`` with ``value`` (a number or a 0-dim tensor); return self."""
    if isinstance(value, Tensor):
        if value._data.ndim:
            raise RuntimeError(
                "fill_ only supports 0-dimension value tensor but got tensor with "
                f"{value._data.ndim} dimensions."
            )
        return dispatch_inplace(_fill_tensor, self, (self, value))
    from ember._ops.convert import scalar_value

    return dispatch_inplace(_fill_scalar, self, (self,), {"value": scalar_value(value, self.dtype)})


def _zero_(self):
    """Fill ``self`` with zeros; return self."""
    return dispatch_inplace(_zero, self, (self,))


publish(None, _fill_, name="fill_", function=False)  # (two ops: a number or a 0-d tensor)
publish(_zero, _zero_, name="zero_", function=False)

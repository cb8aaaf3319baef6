"""Pointwise arithmetic: add, sub, mul, div (rounding modes), fmod, remainder, floor_divide, pow,
float_power, square, reciprocal, and their in-place forms; the helpers shared by the pointwise
families (``out=`` handling, argument checks, in-place variants computing into the tensor).

Forward: NumPy on arrays already promoted by dispatch. Backward: ember ops on Tensors, so it
is itself differentiable. Gradients of broadcast inputs are summed back by the engine. Hot
backward formulas (mul, sin, cos, tanh, sigmoid) also declare an ``array_backward`` (see
``registry.py``), built with ``fast_backward``: NumPy on float32/float64 arrays, taken when
backward records no graph (no ``create_graph``).
The family's other files: ``operators.py`` (``+ - * /``... and temporaries), ``unary.py``,
``special.py`` and ``special_more.py`` (kernels in ``special_math.py``), ``binary.py``,
``ternary.py`` (clamp, lerp, addcmul, addcdiv), ``compare.py``; ``copying.py`` holds where,
clone, copy_ and the casts.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from ember._core import dtype as D
from ember._core.grad_mode import STATE
from ember._core.tensor import Tensor, _wrap
from ember._ops.copying import _cast, _clone, _to_copy, where  # noqa: F401 - re-exported
from ember._ops.registry import (
    _EMPTY,
    FLOAT,
    SAME,
    _requires_grad,
    _type_name,
    dispatch,
    dispatch_inplace,
    op,
    publish,
)


def _conj(t):
    if isinstance(t, Tensor):
        return t.conj() if t.dtype.is_complex else t
    # a Python complex operand (z * 1j) is conjugated in the gradient too
    return t.conjugate() if isinstance(t, (complex, np.complexfloating)) else t


# ------------------------------------------------------------------------------ shared helpers


def dkind(a) -> str:
    """Return the NumPy kind letter of an array's dtype, ``f`` for bfloat16 (NumPy says ``V``)."""
    k = a.dtype.kind
    return "f" if k == "V" else k


def keep_layout(r: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Return ``r`` (computed from ``x``) laid out in memory as NumPy's ufuncs (and torch) lay
    out the result of a unary op on ``x``: a transposed input gives a transposed result."""
    if x.flags.c_contiguous or r.ndim < 2:
        return r
    out = np.empty_like(x, dtype=r.dtype)
    np.copyto(out, r)
    return out


def type_name(a: np.ndarray) -> str:
    """Return torch's ScalarType name (``Float``, ``Long``...) of a NumPy array's dtype."""
    return D.scalar_type_name(D.FROM_NP[a.dtype])


def not_implemented(kernel: str, a: np.ndarray) -> NotImplementedError:
    """Return torch's error for a kernel that has no implementation for ``a``'s dtype."""
    return NotImplementedError(f"\"{kernel}\" not implemented for '{type_name(a)}'")


def need_tensor(fn: str, x, arg: str = "input", pos: int = 1) -> None:
    """Raise torch's TypeError unless ``x`` is a Tensor."""
    if not isinstance(x, Tensor):
        raise TypeError(
            f"{fn}(): argument '{arg}' (position {pos}) must be Tensor, not {type(x).__name__}"
        )


def with_out(
    name: str, op_, inputs: tuple, params: dict, out, exact: bool = False, autograd: bool = True
) -> Tensor:
    """Run ``op_`` and write its result into ``out=`` with torch's checks and resize rules.

    ``exact``: ``out`` must have the result's dtype (ops that do no type promotion).
    ``autograd=False``: no error when an input requires grad (torch's floor_divide).
    """
    if not isinstance(out, Tensor):
        raise TypeError(f"{name}(): argument 'out' must be Tensor, not {type(out).__name__}")
    if autograd and STATE.grad_enabled and (out._requires_grad or _requires_grad(inputs)):
        raise RuntimeError(
            f"{name}(): functions with out=... arguments don't support automatic "
            "differentiation, but one of the arguments requires grad."
        )
    res = dispatch(op_, inputs, params)
    if exact and res.dtype is not out.dtype:
        raise RuntimeError(
            f"Found dtype {_type_name(out.dtype)} but expected {_type_name(res.dtype)}"
        )
    return copy_out(res, out)


def copy_out(res: Tensor, out: Tensor, check_dtype: bool = True) -> Tensor:
    """Write ``res`` into ``out``: castable dtype, resized (with torch's warning) if needed."""
    if check_dtype and not D.can_cast(res.dtype, out.dtype):
        raise RuntimeError(
            f"result type {_type_name(res.dtype)} can't be cast to the desired output type "
            f"{_type_name(out.dtype)}"
        )
    arr = res._data
    if out._data.shape != arr.shape:
        if out._data.size:
            warnings.warn(
                f"An output with one or more elements was resized since it had shape "
                f"{list(out._data.shape)}, which does not match the required output shape "
                f"{list(arr.shape)}. This behavior is deprecated, and in a future PyTorch "
                "release outputs will not be resized unless they have zero elements. You can "
                "explicitly reuse an out tensor t by resizing it, inplace, to zero elements with "
                "t.resize_(0).",
                UserWarning,
                stacklevel=3,
            )
        out._data = np.empty(arr.shape, dtype=out.dtype.np)
    np.copyto(out._data, arr, casting="unsafe")
    out._vc[0] += 1
    return out


def _out(res, out):
    # kept for the other op families, which write ``out=`` after computing
    if out is None:
        return res
    if out._data.shape != res._data.shape:
        out._data = np.empty(res._data.shape, dtype=out.dtype.np)
    out.copy_(res.detach())
    return out


def zeros_like(t: Tensor) -> Tensor:
    """Return a new tensor of zeros shaped as ``t`` (a gradient that is a constant)."""
    return _wrap(np.zeros(t._data.shape, t._data.dtype))


def like(x: np.ndarray, v):
    """Return the Python number ``v`` as a scalar of ``x``'s float dtype (ml_dtypes' bfloat16
    does not treat Python floats as weak scalars, as NumPy's own dtypes do)."""
    return x.dtype.type(v) if dkind(x) == "f" and type(v) is not complex else v


# ------------------------------------------------------------------------------ fast backward

_FAST_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))

# Python floats met by float32/float64 arrays, as 0-d arrays of the array's dtype: NumPy
# converts a Python number on every ufunc call (a weak scalar, cast to the array's dtype), which
# costs as much as the arithmetic on a small array; the same value as a read-only 0-d array of
# that dtype gives the same result (torch's scalar is cast to the tensor's dtype too). Zeros
# (-0.0 == 0.0), NaN and values beyond float32's range are left as they are.
_NUMBER_ARRAYS: dict = {}
_NUMBER_ARRAYS_MAX = 256


def number_operand(x, y):
    """Return ``y`` for ``np_fn(x, y)``: a Python float beside a float32/float64 array as a
    cached 0-d array of the array's dtype (the same value, read-only), else ``y`` itself."""
    if type(y) is not float or type(x) is not np.ndarray:
        return y
    dt = x.dtype
    if not (dt in _FAST_DTYPES and 0.0 < abs(y) <= 1e30):
        return y
    key = (y, dt)
    a = _NUMBER_ARRAYS.get(key)
    if a is None:
        if len(_NUMBER_ARRAYS) >= _NUMBER_ARRAYS_MAX:
            _NUMBER_ARRAYS.clear()
        a = _NUMBER_ARRAYS[key] = np.array(y, dt)
        a.flags.writeable = False
    return a


def fast_backward(np_fn):
    """Return an op's ``array_backward`` running ``np_fn(ctx, g, *saved_arrays)`` when the
    gradient and the saved arrays are real float32/float64 arrays of one dtype (0-d ones too
    small to matter: NumPy returns scalars for them), else ``NotImplemented``, so that the
    op's backward in ember ops runs. ``np_fn`` may update in place the temporaries it creates
    (fewer passes over memory and fresh pages)."""

    def run(ctx, g, **params):
        if g is None or not g.ndim or g.dtype not in _FAST_DTYPES:
            return NotImplemented
        arrays = ctx.saved_arrays
        dt = g.dtype
        for a in arrays:
            if type(a) is np.ndarray and a.dtype != dt:
                return NotImplemented
        return np_fn(ctx, g, *arrays, **params)

    run.np_fn = np_fn  # (a compiled backward calls it directly: its checks hold statically)
    return run


def lone_value(g: np.ndarray, shape: tuple):
    """Return ``g`` as a NumPy scalar when it is one value broadcast to ``shape`` (the gradient
    ``sum`` hands back), else ``g``: ``x * scalar`` reads one array instead of two."""
    if g.ndim and g.shape == shape and not any(g.strides) and g.size:
        return g[(0,) * g.ndim]
    return g


def times(g: np.ndarray, d: np.ndarray) -> np.ndarray:
    """Return ``g * d`` written into ``d``, a temporary of ``g``'s shape the caller owns."""
    return np.multiply(d, lone_value(g, d.shape), out=d)


def _is_int(a) -> bool:
    return dkind(np.asarray(a)) in "iub"


def _check_int_zero(y) -> None:
    # integer division by zero is an error in torch (NumPy returns 0 with a warning)
    if _is_int(y) and np.any(np.asarray(y) == 0):
        raise RuntimeError("ZeroDivisionError")


# ------------------------------------------------------------------------------ add, sub, mul


def _scaled(y, x, alpha):
    # alpha * y in x's dtype: two Python ints would multiply to a (strong) int64
    if x.dtype.kind in "iub":
        if not isinstance(y, np.ndarray):
            y = np.asarray(y, dtype=x.dtype)
        # (sub's alpha was checked negated: int8 takes 128, which wraps as C does)
        return np.multiply(y, np.asarray(alpha).astype(x.dtype))
    return np.multiply(y, like(x, alpha))


@op("add", grad_fn="AddBackward0", promote=SAME)
def _add(x, y, alpha=1):
    return np.add(x, number_operand(x, y)) if alpha == 1 else np.add(x, _scaled(y, x, alpha))


@_add.backward
def _(ctx, g, alpha=1):
    if not ctx.needs_input_grad[1]:  # (a number, or a tensor not requiring grad)
        return g, None
    return g, (g if alpha == 1 else g * alpha)


@op("sub", grad_fn="SubBackward0", promote=SAME)
def _sub(x, y, alpha=1):
    return (
        np.subtract(x, number_operand(x, y)) if alpha == 1 else np.subtract(x, _scaled(y, x, alpha))
    )


@_sub.backward
def _(ctx, g, alpha=1):
    if not ctx.needs_input_grad[1]:  # no negated gradient for a number
        return g, None
    return g, (-g if alpha == 1 else g * -alpha)


@op("rsub", grad_fn="RsubBackward1", promote=SAME)
def _rsub(x, y, alpha=1):
    return np.subtract(y, x) if alpha == 1 else np.subtract(y, np.multiply(x, like(x, alpha)))


def _check_sub(a, b) -> None:
    # torch rejects bool operands of a subtraction (before any promotion, after parsing)
    from ember._ops.registry import check_python_int

    for x in (a, b):
        if type(x) is int:
            check_python_int(x)
    ab = a.dtype is D.bool if isinstance(a, Tensor) else type(a) is bool
    bb = b.dtype is D.bool if isinstance(b, Tensor) else type(b) is bool
    if ab and bb:
        raise RuntimeError(
            "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` "
            "or `logical_xor()` operator instead."
        )
    if ab or bb:
        raise RuntimeError(
            "Subtraction, the `-` operator, with a bool tensor is not supported. If you are "
            "trying to invert a mask, use the `~` or `logical_not()` operator instead."
        )


_BOOL = D.bool


@_rsub.backward
def _(ctx, g, alpha=1):
    return (-g if alpha == 1 else g * -alpha), None


@op("rsub", grad_fn="RsubBackward0", promote=SAME)
def _rsub_tensor(x, y, alpha=1):
    return _rsub.forward(x, y, alpha)


@_rsub_tensor.backward
def _(ctx, g, alpha=1):
    return (-g if alpha == 1 else g * -alpha), g


_F32 = np.float32


def _reduced(dt: np.dtype) -> bool:
    """float16 or bfloat16 (ml_dtypes' is a 2-byte kind-"V" dtype; asking by shape keeps
    ml_dtypes unimported until a bfloat16 tensor exists)."""
    return dt.itemsize == 2 and dt.kind in "fV"


def _scalar_in_float32(np_fn):
    """``np_fn(x, y)``, where a float16/bfloat16 array beside a Python number computes in
    float32 with the number as a float32 (torch's mul/div kernels: ``float16 0 * 2**31`` is
    0, not nan; ``1e-4 * 65536`` is not inf); a number divided by such an array is the
    array's (half) reciprocal times the number in float32, as torch computes it."""

    def forward(x, y, out=None):
        ty = type(y)
        if (ty is float or ty is int) and type(x) is np.ndarray and _reduced(x.dtype):
            r = np_fn(x.astype(_F32), _F32(y)).astype(x.dtype)
        elif (
            np_fn is np.true_divide
            and type(x) in (float, int)
            and type(y) is np.ndarray
            and _reduced(y.dtype)
        ):
            r = (np.reciprocal(y).astype(_F32) * _F32(x)).astype(y.dtype)
        else:
            y = number_operand(x, y)
            return np_fn(x, y) if out is None else np_fn(x, y, out=out)
        if out is None:
            return r
        out[...] = r
        return out

    return forward


_np_multiply = _scalar_in_float32(np.multiply)
_np_true_divide = _scalar_in_float32(np.true_divide)
_np_floor_divide = _scalar_in_float32(np.floor_divide)


@op(
    "mul",
    grad_fn="MulBackward0",
    save=("self", "other"),
    promote=SAME,
    save_if={"self": "other", "other": "self"},
)
def _mul(x, y):
    return _np_multiply(x, y)


def _np_mul_backward(ctx, g, x, y):
    need = ctx.needs_input_grad
    if (
        x is y
        and need[0]
        and need[1]
        and ctx.next_functions[0] == ctx.next_functions[1]
        and ctx._post_hooks is None
    ):
        # x * x: one gradient 2 * g * x (the engine would add two halves: two more passes)
        s = lone_value(g, x.shape)
        if type(s) is not np.ndarray:
            return np.multiply(x, s + s), None
        r = np.multiply(g, x)
        return np.add(r, r, out=r), None
    return (
        np.multiply(g, number_operand(g, y)) if need[0] else None,
        np.multiply(g, number_operand(g, x)) if need[1] else None,
    )


@_mul.backward
def _(ctx, g):
    x, y = ctx.saved_tensors
    need = ctx.needs_input_grad
    return (g * _conj(y) if need[0] else None, g * _conj(x) if need[1] else None)


_mul.array_backward(fast_backward(_np_mul_backward))


def _alpha(alpha, inputs=(), negated=False):
    if type(alpha) is int and alpha == 1:
        return _EMPTY
    from ember._ops.registry import check_python_int, result_dtype

    for x in (alpha, *inputs):
        if type(x) is int:
            check_python_int(x)  # torch's argument parser: before any other check

    dt = result_dtype(inputs)
    if type(alpha) is bool and dt is not D.bool:
        raise RuntimeError("Boolean alpha only supported for Boolean results.")
    if isinstance(alpha, float) and not (dt.is_floating_point or dt.is_complex):
        raise RuntimeError(
            "For integral input tensors, argument alpha must not be a floating point number."
        )
    if negated and type(alpha) is int:  # torch subtracts by adding -alpha: int8 takes 128
        return {"alpha": -checked_scalar(-alpha, dt)}
    return {"alpha": checked_scalar(alpha, dt)}


def checked_scalar(value, dt: D.dtype, half_as_float: bool = False):
    """Return a scale (alpha, value) as torch converts it to the result's dtype: checked for
    overflow, and an int (a bool for bool results) for integral results. ``half_as_float``:
    a half type's scale is checked as a float's (addcmul's value)."""
    from ember._ops.convert import scalar_value

    half = dt is D.float16 or dt is D.bfloat16
    checked = scalar_value(value, D.float32 if half and half_as_float else dt)
    if dt.is_floating_point or dt.is_complex:
        return value
    return checked.item()


_DEPRECATED_WARNED = []


def deprecated_scalar_first(name: str, first, rest: tuple, old: str, new: str, stacklevel=3):
    """Resolve torch's deprecated overloads that take the scale first (``add_(alpha, other)``,
    ``addcmul_(value, t1, t2)``, still common in pre-1.5 optimizer code): return the scale and
    the tensor arguments, warning once per process as torch does."""
    if len(rest) != old.count("Tensor") or isinstance(first, Tensor) and first.ndim:
        raise TypeError(f"{name}() received an invalid combination of arguments")
    if not _DEPRECATED_WARNED:
        _DEPRECATED_WARNED.append(True)
        warnings.warn(
            f"This overload of {name} is deprecated:\n\t{name}({old})\nConsider using one of "
            f"the following signatures instead:\n\t{name}({new})",
            UserWarning,
            stacklevel=stacklevel,
        )
    return (first.item() if isinstance(first, Tensor) else first), rest


def _alpha_first(name: str, other, rest: tuple):
    alpha, (other,) = deprecated_scalar_first(
        name, other, rest, "Number alpha, Tensor other", "Tensor other, *, Number alpha = 1", 4
    )
    return alpha, other


def add(input: Tensor, other, *args, alpha=1, out: Tensor | None = None) -> Tensor:
    """Return ``input + alpha * other``."""
    if args:
        alpha, other = _alpha_first("add", other, args)
    params = _alpha(alpha, (input, other))
    if out is None:
        return dispatch(_add, (input, other), params)
    return with_out("add", _add, (input, other), params, out)


def sub(input: Tensor, other, *args, alpha=1, out: Tensor | None = None) -> Tensor:
    """Return ``input - alpha * other``."""
    if args:
        alpha, other = _alpha_first("sub", other, args)
    _check_sub(input, other)
    params = _alpha(alpha, (input, other), negated=True)
    if out is None:
        return dispatch(_sub, (input, other), params)
    return with_out("sub", _sub, (input, other), params, out)


def mul(input: Tensor, other, *, out: Tensor | None = None) -> Tensor:
    """Return ``input * other`` elementwise."""
    if out is None:
        return dispatch(_mul, (input, other))
    return with_out("mul", _mul, (input, other), _EMPTY, out)


def rsub(input: Tensor, other, *, alpha=1) -> Tensor:
    """Return ``other - alpha * input``."""
    _check_sub(other, input)
    rop = _rsub_tensor if isinstance(other, Tensor) else _rsub
    return dispatch(rop, (input, other), _alpha(alpha, (input, other)))


# ------------------------------------------------------------------------------ division


@op("div", grad_fn="DivBackward0", save=("self", "other"), promote=FLOAT, save_if={"self": "other"})
def _div(x, y):
    return _np_true_divide(x, y)


@_div.backward
def _(ctx, g):
    x, y = ctx.saved_tensors
    need = ctx.needs_input_grad
    gx = g / _conj(y) if need[0] else None
    gy = -g * _conj(x) / _conj(y * y) if need[1] else None
    return gx, gy


@op("reciprocal", grad_fn="ReciprocalBackward0", save=("result",), promote=FLOAT)
def _reciprocal(x):
    return np.reciprocal(x)


@_reciprocal.backward
def _(ctx, g):
    (r,) = ctx.saved_tensors
    return -g * _conj(r * r)


def _div_floor(x, y):
    _check_int_zero(y)
    # NumPy's floor_divide is Python's (and torch's) floor division: 1 // 0.1 == 9
    return _np_floor_divide(x, y)


def _div_trunc(x, y):
    if _is_int(x) and _is_int(y):
        _check_int_zero(y)
        q = np.floor_divide(x, y)
        return q + ((np.remainder(x, y) != 0) & ((np.asarray(x) < 0) != (np.asarray(y) < 0)))
    return np.trunc(_np_true_divide(x, y))


def _check_rounding(x, y, mode):
    a = x if isinstance(x, np.ndarray) else np.asarray(y)
    if a.dtype == np.bool_:
        raise not_implemented(f"div_{mode}_cpu", a)
    if dkind(a) == "c":
        raise not_implemented(f"div_{mode}_cpu", a)


@op("div", grad_fn="DivBackward2", promote=SAME)
def _div_rounded(x, y, mode):
    _check_rounding(x, y, mode)
    return _div_floor(x, y) if mode == "floor" else _div_trunc(x, y)


@_div_rounded.backward
def _(ctx, g, mode):
    return zeros_like(g), zeros_like(g)


def div(input: Tensor, other, *, rounding_mode: str | None = None, out: Tensor | None = None):
    """Return ``input / other`` (true division; ``rounding_mode`` 'trunc' or 'floor')."""
    if rounding_mode is None:
        if out is None:
            return dispatch(_div, (input, other))
        return with_out("div", _div, (input, other), _EMPTY, out)
    if rounding_mode not in ("trunc", "floor"):
        raise RuntimeError(
            "div expected rounding_mode to be one of None, 'trunc', or 'floor' but found "
            f"'{rounding_mode}'"
        )
    params = {"mode": rounding_mode}
    if out is None:
        return dispatch(_div_rounded, (input, other), params)
    return with_out("div", _div_rounded, (input, other), params, out)


def true_divide(input: Tensor, other, *, out: Tensor | None = None) -> Tensor:
    """Alias of :func:`div` with no rounding."""
    return div(input, other, out=out)


@op("floor_divide", grad_fn="NotImplemented", promote=SAME)
def _floor_divide(x, y):
    _check_rounding(x, y, "floor")
    return _div_floor(x, y)


@_floor_divide.backward
def _(ctx, g):
    raise RuntimeError("derivative for aten::floor_divide is not implemented")


def floor_divide(input: Tensor, other, *, out: Tensor | None = None) -> Tensor:
    """Return ``input // other`` rounded toward negative infinity (not differentiable)."""
    if out is None:
        return dispatch(_floor_divide, (input, other))
    return with_out("floor_divide", _floor_divide, (input, other), _EMPTY, out, autograd=False)


def reciprocal(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    """Return ``1 / input`` elementwise (integers give the default float dtype)."""
    need_tensor("reciprocal", input)
    if out is None:
        return dispatch(_reciprocal, (input,))
    return with_out("reciprocal", _reciprocal, (input,), _EMPTY, out)


# ------------------------------------------------------------------------------ fmod, remainder


def _mod_forward(kernel, np_fn):
    def forward(x, y):
        a = x if isinstance(x, np.ndarray) else np.asarray(y)
        if a.dtype == np.bool_ or dkind(a) == "c":
            raise not_implemented(kernel, a)
        _check_int_zero(y)
        return np_fn(x, y)

    return forward


_fmod_kernel = _mod_forward("fmod_cpu", np.fmod)


def _np_remainder(x, y):
    if dkind(x if isinstance(x, np.ndarray) else np.asarray(y)) != "f":
        return np.remainder(x, y)
    # floats: fmod moved into the divisor's sign; a zero keeps the dividend's sign (torch's),
    # where NumPy's remainder gives it the divisor's
    r = np.fmod(x, y)
    return np.where((r != 0) & ((r < 0) != (np.asarray(y) < 0)), r + y, r)


_remainder_kernel = _mod_forward("remainder_cpu", _np_remainder)
_fmod_s = op("fmod", grad_fn="FmodBackward0", promote=SAME)(_fmod_kernel)
_fmod_t = op("fmod", grad_fn="FmodBackward1", save=("self", "other"), promote=SAME)(_fmod_kernel)
_rem_s = op("remainder", grad_fn="RemainderBackward0", promote=SAME)(_remainder_kernel)
_rem_t = op("remainder", grad_fn="RemainderBackward1", save=("self", "other"), promote=SAME)(
    _remainder_kernel
)
_rem_rs = op("remainder", grad_fn="NotImplemented", promote=SAME)(_remainder_kernel)
_fmod_s.backward(lambda ctx, g: (g, None))
_rem_s.backward(lambda ctx, g: (g, None))


@_rem_rs.backward
def _(ctx, g):
    raise RuntimeError("derivative for aten::remainder is not implemented")


@_fmod_t.backward
def _(ctx, g):
    x, y = ctx.saved_tensors
    need = ctx.needs_input_grad
    return (g if need[0] else None, -g * div(x, y, rounding_mode="trunc") if need[1] else None)


@_rem_t.backward
def _(ctx, g):
    x, y = ctx.saved_tensors
    need = ctx.needs_input_grad
    return (g if need[0] else None, -g * div(x, y, rounding_mode="floor") if need[1] else None)


def fmod(input: Tensor, other, *, out: Tensor | None = None) -> Tensor:
    """Return the C-style remainder of ``input / other`` (the sign of ``input``)."""
    need_tensor("fmod", input)
    fop = _fmod_t if isinstance(other, Tensor) else _fmod_s
    if out is None:
        return dispatch(fop, (input, other))
    return with_out("fmod", fop, (input, other), _EMPTY, out)


def overload(fn: str, input, other, tensor_tensor, scalar_tensor, tensor_scalar):
    """Return the op of torch's overload for ``(input, other)``: Tensor-Tensor, Scalar-Tensor
    (``other`` must then be a Tensor) or Tensor-Scalar (their grad_fn names differ)."""
    if not isinstance(input, Tensor):
        need_tensor(fn, other, "other", 2)
        return scalar_tensor
    return tensor_tensor if isinstance(other, Tensor) else tensor_scalar


def remainder(input, other, *, out: Tensor | None = None) -> Tensor:
    """Return the Python-style remainder of ``input / other`` (the sign of ``other``)."""
    rop = overload("remainder", input, other, _rem_t, _rem_rs, _rem_s)
    if out is None:
        return dispatch(rop, (input, other))
    return with_out("remainder", rop, (input, other), _EMPTY, out)


# ------------------------------------------------------------------------------ pow


def _int_power(x, e):
    # torch: an integer to a negative integer power is 1 for base 1, +-1 for base -1, else 0
    if isinstance(e, np.ndarray) and dkind(e) in "iu" and (e < 0).any():
        neg = e < 0
        r = np.power(x, np.where(neg, 0, e))
        odd = np.remainder(e, 2) != 0
        special = np.where(x == 1, 1, np.where(x == -1, np.where(odd, -1, 1), 0))
        return np.where(neg, special, r).astype(r.dtype, copy=False)
    if isinstance(x, np.ndarray) or type(e) is not int or e >= 0:
        return np.power(x, e)
    return _int_power(np.asarray(x), np.asarray(e))


def _power(x, e):
    if _is_int(x) and _is_int(e):
        if np.asarray(x).dtype == np.bool_ and np.asarray(e).dtype == np.bool_:
            raise not_implemented("pow", np.asarray(x))
        return _int_power(x, e)
    return np.power(x, e)


@op(
    "pow",
    grad_fn="PowBackward0",
    args=("self", "exponent"),
    save=("self", "exponent"),
    scalar_args=("exponent",),
    promote=SAME,
)
def _pow_scalar(x, e):
    if isinstance(e, (bool, np.bool_)) and np.asarray(x).dtype == np.bool_:
        # torch answers x ** 1 and x ** 0 without its kernel, which has no bool ** bool
        return np.array(x, copy=True) if e else np.ones_like(x)
    return _power(x, e)


@_pow_scalar.backward
def _(ctx, g):
    x, e = ctx.saved_tensors
    if e == 0:
        return zeros_like(g), None
    if e == 2:  # x ** 1 is x: skip the power (the common square)
        return g * _conj(x * 2), None
    return g * _conj(e * x ** (e - 1)), None


@op(
    "pow",
    grad_fn="PowBackward1",
    args=("self", "exponent"),
    save=("self", "exponent", "result"),
    promote=SAME,
)
def _pow_tensor(x, y):
    return _power(x, y)


@_pow_tensor.backward
def _(ctx, g):
    x, y, r = ctx.saved_tensors
    need = ctx.needs_input_grad
    gx = gy = None
    if need[0]:
        gx = g * _conj(where(y == 0, 0.0, y * x ** (y - 1)))
    if need[1]:
        cond = _wrap((x._data == 0) & (np.real(y._data) >= 0))
        gy = g * _conj(where(cond, 0.0, r * x.log()))
    return gx, gy


@op(
    "pow",
    grad_fn="PowBackward2",
    args=("exponent", "self"),
    save=("exponent", "self", "result"),
    scalar_args=("self",),
    promote=SAME,
)
def _rpow(y, base):
    return _power(base, y)


@_rpow.backward
def _(ctx, g):
    y, base, r = ctx.saved_tensors
    if base == 0:
        # d/dy 0**y is 0 where y >= 0 and -inf where 0**y is inf
        # torch's form r * log(0), whose own derivative is nan where the branch is not taken
        return g * where(_wrap(np.real(y._data) >= 0), 0.0, r * -math.inf), None
    log_base = np.log(complex(base) if isinstance(base, complex) else float(base))
    return g * _conj(r * log_base.item()), None


def _float_int_pow_check(x, e):
    if (
        isinstance(x, Tensor)
        and (x.dtype is D.float16 or x.dtype is D.bfloat16)
        and type(e) in (int, float)
    ):
        from ember._ops.convert import scalar_value

        scalar_value(e, x.dtype)  # torch reads the exponent as the base's reduced float
    if (
        isinstance(x, Tensor)
        and not (x.dtype.is_floating_point or x.dtype.is_complex)
        and type(e) is int
    ):
        from ember._ops.registry import check_python_int

        check_python_int(e)
        if e < 0:
            raise RuntimeError("Integers to negative integer powers are not allowed.")
        from ember._ops.convert import scalar_value

        # torch reads the exponent as an int64, then converts it to the base's dtype
        e = scalar_value(e, D.int64).item()
        if x.dtype is not D.bool:
            scalar_value(e, x.dtype)


def pow(input, exponent, *, out: Tensor | None = None):  # noqa: A001 - torch.pow
    """Return ``input ** exponent`` elementwise (either may be a scalar)."""
    if isinstance(input, Tensor):
        if isinstance(exponent, Tensor):
            pop, args = _pow_tensor, (input, exponent)
        else:
            _float_int_pow_check(input, exponent)
            pop, args = _pow_scalar, (input, exponent)
    else:
        need_tensor("pow", exponent, "exponent", 2)
        pop, args = _rpow, (exponent, input)
    if out is None:
        return dispatch(pop, args)
    return with_out("pow", pop, args, _EMPTY, out)


def float_power(input, exponent, *, out: Tensor | None = None) -> Tensor:
    """Return ``input ** exponent`` computed in double precision (float64 or complex128)."""
    if not isinstance(input, Tensor):
        need_tensor("float_power", exponent, "exponent", 2)
    cplx = any(
        (x.dtype.is_complex if isinstance(x, Tensor) else isinstance(x, complex))
        for x in (input, exponent)
    )
    dt = D.complex128 if cplx else D.float64
    input, exponent = (_to_double(x, dt) for x in (input, exponent))
    return pow(input, exponent, out=out)


def _to_double(x, dt):
    if isinstance(x, Tensor):
        return _cast(x, dt)
    return complex(x) if dt.is_complex else float(x)


def square(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    """Return ``input ** 2`` elementwise (bool gives int64, as ``pow``)."""
    need_tensor("square", input)
    return pow(input, 2, out=out)


def _pow_(self, exponent):
    if isinstance(exponent, Tensor):
        return dispatch_inplace(_pow_tensor, self, (self, exponent))
    _float_int_pow_check(self, exponent)
    return dispatch_inplace(_pow_scalar, self, (self, exponent))


def _float_power_(self, exponent):
    cplx = self.dtype.is_complex or (
        exponent.dtype.is_complex if isinstance(exponent, Tensor) else isinstance(exponent, complex)
    )
    dt = D.complex128 if cplx else D.float64
    if self.dtype is not dt:
        raise RuntimeError(
            f"the base given to float_power_ has dtype {_type_name(self.dtype)} but the "
            f"operation's result requires dtype {_type_name(dt)}"
        )
    return _pow_(self, _to_double(exponent, dt))


def _square_(self):
    return _pow_(self, 2)


def _np_add(x, y, alpha=1, out=None):
    return np.add(x, y if alpha == 1 else np.multiply(y, like(x, alpha)), out=out)


def _np_sub(x, y, alpha=1, out=None):
    return np.subtract(x, y if alpha == 1 else np.multiply(y, like(x, alpha)), out=out)


def _np_rsub(x, y, alpha=1, out=None):
    return np.subtract(y, x if alpha == 1 else np.multiply(x, like(x, alpha)), out=out)


_add_into = _add.into(_np_add)
_sub_into = _sub.into(_np_sub)
_rsub_into = _rsub.into(_np_rsub)
_mul_into = _mul.into(_np_multiply)
_div_into = _div.into(_np_true_divide)
_reciprocal_into = _reciprocal.into(np.reciprocal)


def _add_(self, other, *args, alpha=1):
    if args:
        alpha, other = _alpha_first("add_", other, args)
    params = _alpha(alpha, (self, other))
    return dispatch_inplace(_add_into, self, (self, other), {**params, "out": self._data})


def _isub(self, other, *args, alpha=1):
    if args:
        alpha, other = _alpha_first("sub_", other, args)
    _check_sub(self, other)
    params = _alpha(alpha, (self, other))
    return dispatch_inplace(_sub_into, self, (self, other), {**params, "out": self._data})


def _mul_(self, other):
    return dispatch_inplace(_mul_into, self, (self, other), {"out": self._data})


def _reciprocal_(self):
    return dispatch_inplace(_reciprocal_into, self, (self,), {"out": self._data})


def _div_(self, other, *, rounding_mode=None):
    if rounding_mode is None:
        return dispatch_inplace(_div_into, self, (self, other), {"out": self._data})
    return dispatch_inplace(_div_rounded, self, (self, other), {"mode": rounding_mode})


def _fmod_(self, other):
    return dispatch_inplace(_fmod_t if isinstance(other, Tensor) else _fmod_s, self, (self, other))


def _remainder_(self, other):
    rop = _rem_t if isinstance(other, Tensor) else _rem_s
    return dispatch_inplace(rop, self, (self, other))


def _floor_divide_(self, other):
    return dispatch_inplace(_floor_divide, self, (self, other))


# ------------------------------------------------------------------------------ publishing
# each op's members: ember.<name>, Tensor.<name>, the in-place Tensor.<name>_ (operators.py
# declares the Python operators)

publish(_add, add, inplace=_add_)
publish(_sub, sub, aliases=("subtract",), inplace=_isub)
publish(_rsub, rsub, method=False)
publish(_mul, mul, aliases=("multiply",), inplace=_mul_)
publish(_div, div, aliases=("divide",), inplace=_div_)
publish(_div, true_divide, inplace=_div_)
publish(_floor_divide, floor_divide, inplace=_floor_divide_)
publish(_reciprocal, reciprocal, inplace=_reciprocal_)
publish(_fmod_t, fmod, inplace=_fmod_)
publish(_rem_t, remainder, inplace=_remainder_)
publish(_pow_tensor, pow, inplace=_pow_)
publish(None, float_power, inplace=_float_power_)
publish(None, square, inplace=_square_)

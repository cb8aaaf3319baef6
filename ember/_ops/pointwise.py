"""Pointwise ops: arithmetic, unary math, where, clone, casts.

Forward: NumPy on arrays already promoted by dispatch. Backward: ember ops on Tensors, so it
is itself differentiable. Gradients of broadcast inputs are summed back by the engine.
"""

from __future__ import annotations

import numpy as np

from ember._core import dtype as D
from ember._core.tensor import Tensor
from ember._ops.registry import (
    COMPARE,
    FLOAT,
    SAME,
    dispatch,
    dispatch_inplace,
    expose,
    inplace_method,
    op,
)


def _conj(t):
    return t.conj() if isinstance(t, Tensor) and t.dtype.is_complex else t


# ------------------------------------------------------------------------------ arithmetic


@op("add", grad_fn="AddBackward0", promote=SAME)
def _add(x, y, alpha=1):
    return np.add(x, y) if alpha == 1 else np.add(x, np.multiply(y, alpha))


@_add.backward
def _(ctx, g, alpha=1):
    return g, (g if alpha == 1 else g * alpha)


@op("sub", grad_fn="SubBackward0", promote=SAME)
def _sub(x, y, alpha=1):
    if isinstance(x, np.ndarray) and x.dtype == np.bool_:
        raise RuntimeError(
            "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` "
            "or `logical_xor()` operator instead."
        )
    return np.subtract(x, y) if alpha == 1 else np.subtract(x, np.multiply(y, alpha))


@_sub.backward
def _(ctx, g, alpha=1):
    return g, (-g if alpha == 1 else g * -alpha)


@op("rsub", grad_fn="RsubBackward1", promote=SAME)
def _rsub(x, y, alpha=1):
    return np.subtract(y, x) if alpha == 1 else np.subtract(y, np.multiply(x, alpha))


@_rsub.backward
def _(ctx, g, alpha=1):
    return (-g if alpha == 1 else g * -alpha), None


@op("mul", grad_fn="MulBackward0", save=(0, 1), promote=SAME)
def _mul(x, y):
    return np.multiply(x, y)


@_mul.backward
def _(ctx, g):
    x, y = ctx.saved_tensors
    need = ctx.needs_input_grad
    return (g * _conj(y) if need[0] else None, g * _conj(x) if need[1] else None)


@op("div", grad_fn="DivBackward0", save=(0, 1), promote=FLOAT)
def _div(x, y):
    return np.true_divide(x, y)


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


@op("pow", grad_fn="PowBackward0", save=(0, 1), promote=SAME)
def _pow_scalar(x, e):
    return np.power(x, e)


@_pow_scalar.backward
def _(ctx, g):
    x, e = ctx.saved_tensors
    if e == 0:
        return g * 0, None
    return g * (e * x ** (e - 1)), None


@op("pow", grad_fn="PowBackward1", save=(0, 1, "result"), promote=SAME)
def _pow_tensor(x, y):
    return np.power(x, y)


@_pow_tensor.backward
def _(ctx, g):
    x, y, r = ctx.saved_tensors
    need = ctx.needs_input_grad
    gx = gy = None
    if need[0]:
        gx = g * where(y == 0, 0.0, y * x ** (y - 1))
    if need[1]:
        gy = g * where((x == 0) & (y >= 0), 0.0, r * x.log())
    return gx, gy


@op("pow", grad_fn="PowBackward2", save=(1, "result"), promote=SAME)
def _rpow(y, base):
    return np.power(base, y)


@_rpow.backward
def _(ctx, g):
    base, r = ctx.saved_tensors
    if base == 0:
        return g * where(r == 0, 0.0, r * 0), None
    return g * r * float(np.log(base)), None


def _float_int_pow_check(x, e):
    if (
        isinstance(x, Tensor)
        and not (x.dtype.is_floating_point or x.dtype.is_complex)
        and type(e) is int
        and e < 0
    ):
        raise RuntimeError("Integers to negative integer powers are not allowed.")


def pow(input, exponent):  # noqa: A001 - torch.pow
    """Return ``input ** exponent`` elementwise (either may be a scalar)."""
    if isinstance(input, Tensor):
        if isinstance(exponent, Tensor):
            return dispatch(_pow_tensor, (input, exponent))
        _float_int_pow_check(input, exponent)
        return dispatch(_pow_scalar, (input, exponent))
    return dispatch(_rpow, (exponent, input))


def add(input, other, *, alpha=1, out=None):
    """Return ``input + alpha * other``."""
    return _out(dispatch(_add, (input, other), _alpha(alpha)), out)


def sub(input, other, *, alpha=1, out=None):
    """Return ``input - alpha * other``."""
    return _out(dispatch(_sub, (input, other), _alpha(alpha)), out)


def mul(input, other, *, out=None):
    """Return ``input * other`` elementwise."""
    return _out(dispatch(_mul, (input, other)), out)


def div(input, other, *, rounding_mode=None, out=None):
    """Return ``input / other`` (true division; ``rounding_mode`` 'trunc' or 'floor')."""
    if rounding_mode is None:
        return _out(dispatch(_div, (input, other)), out)
    if rounding_mode not in ("trunc", "floor"):
        raise ValueError(
            "div expected rounding_mode to be one of None, 'trunc', or 'floor' but found "
            f"'{rounding_mode}'"
        )
    return _out(dispatch(_div_rounded, (input, other), {"mode": rounding_mode}), out)


@op("div", grad_fn="DivBackward2", promote=SAME)
def _div_rounded(x, y, mode):
    if np.issubdtype(np.result_type(x, y), np.integer):
        if np.any(np.asarray(y) == 0):
            raise RuntimeError("ZeroDivisionError")
        q = np.floor_divide(x, y)
        if mode == "trunc":
            q = q + ((np.remainder(x, y) != 0) & ((np.asarray(x) < 0) != (np.asarray(y) < 0)))
        return q
    q = np.true_divide(x, y)
    return np.trunc(q) if mode == "trunc" else np.floor(q)


@_div_rounded.backward
def _(ctx, g, mode):
    return g * 0, g * 0


@op("floor_divide", grad_fn="NotImplemented", promote=SAME)
def _floor_divide(x, y):
    return _div_rounded.forward(x, y, "floor")


@_floor_divide.backward
def _(ctx, g):
    raise RuntimeError("derivative for aten::floor_divide is not implemented")


def floor_divide(input, other):
    """Return ``input // other`` rounded toward negative infinity (not differentiable)."""
    return dispatch(_floor_divide, (input, other))


def rsub(input, other, *, alpha=1):
    """Return ``other - alpha * input``."""
    return dispatch(_rsub, (input, other), _alpha(alpha))


def true_divide(input, other):
    """Alias of :func:`div` with no rounding."""
    return dispatch(_div, (input, other))


def _alpha(alpha):
    return {} if alpha == 1 else {"alpha": alpha}


def _out(res, out):
    if out is None:
        return res
    if out._data.shape != res._data.shape:
        out._data = np.empty(res._data.shape, dtype=out.dtype.np)
    out.copy_(res.detach())
    return out


multiply = expose(mul, "multiply", method="multiply")
subtract = expose(sub, "subtract", method="subtract")
divide = expose(div, "divide", method="divide")
for _fn in (add, sub, mul, div, pow, true_divide, rsub, floor_divide):
    expose(_fn)


inplace_method(_add, "add_", 2, alpha=True)
inplace_method(_sub, "sub_", 2, alpha=True)
inplace_method(_mul, "mul_", 2)
Tensor.multiply_ = Tensor.mul_
Tensor.subtract_ = Tensor.sub_


def _div_(self, other, *, rounding_mode=None):
    if rounding_mode is None:
        return dispatch_inplace(_div, self, (self, other))
    return dispatch_inplace(_div_rounded, self, (self, other), {"mode": rounding_mode})


def _pow_(self, exponent):
    if isinstance(exponent, Tensor):
        return dispatch_inplace(_pow_tensor, self, (self, exponent))
    _float_int_pow_check(self, exponent)
    return dispatch_inplace(_pow_scalar, self, (self, exponent))


Tensor.div_ = Tensor.divide_ = Tensor.true_divide_ = _div_
Tensor.pow_ = _pow_


# operators: the hot path goes straight to dispatch
def _binary_dunders():
    T = Tensor
    T.__add__ = T.__radd__ = lambda self, other: dispatch(_add, (self, other))
    T.__sub__ = lambda self, other: dispatch(_sub, (self, other))
    T.__rsub__ = lambda self, other: dispatch(_rsub, (self, other))
    T.__mul__ = T.__rmul__ = lambda self, other: dispatch(_mul, (self, other))
    T.__truediv__ = lambda self, other: dispatch(_div, (self, other))
    T.__rtruediv__ = lambda self, other: dispatch(_reciprocal, (self,)) * other
    T.__pow__ = lambda self, other: pow(self, other)
    T.__rpow__ = lambda self, other: dispatch(_rpow, (self, other))
    T.__iadd__ = lambda self, other: dispatch_inplace(_add, self, (self, other))
    T.__isub__ = lambda self, other: dispatch_inplace(_sub, self, (self, other))
    T.__imul__ = lambda self, other: dispatch_inplace(_mul, self, (self, other))
    T.__itruediv__ = lambda self, other: dispatch_inplace(_div, self, (self, other))
    T.__ipow__ = _pow_
    T.__floordiv__ = lambda self, other: dispatch(_floor_divide, (self, other))
    T.__rfloordiv__ = lambda self, other: dispatch(_floor_divide, (other, self))
    T.__ifloordiv__ = lambda self, other: dispatch_inplace(_floor_divide, self, (self, other))
    T.__neg__ = lambda self: dispatch(_neg, (self,))
    T.__pos__ = lambda self: self
    T.__abs__ = lambda self: dispatch(_abs, (self,))


# ------------------------------------------------------------------------------ unary


def _unary(name, grad_fn, np_fn, promote=FLOAT, save=(0,)):
    """Declare a unary op; its backward is declared with ``@<op>.backward`` right after."""
    return op(name, grad_fn=grad_fn, save=save, promote=promote)(np_fn)


def _publish_unary(uop, name, doc):
    def fn(input, *, out=None):
        return _out(dispatch(uop, (input,)), out)

    fn.__name__ = name
    fn.__doc__ = doc
    expose(fn)
    inplace_method(uop, name + "_")
    return fn


_neg = _unary("neg", "NegBackward0", np.negative, promote=None, save=())
_neg.backward(lambda ctx, g: -g)

_exp = _unary("exp", "ExpBackward0", np.exp, save=("result",))
_exp.backward(lambda ctx, g: g * _conj(ctx.saved_tensors[0]))

_log = _unary("log", "LogBackward0", np.log)
_log.backward(lambda ctx, g: g / _conj(ctx.saved_tensors[0]))

_sqrt = _unary("sqrt", "SqrtBackward0", np.sqrt, save=("result",))
_sqrt.backward(lambda ctx, g: g / (2 * _conj(ctx.saved_tensors[0])))

_tanh = _unary("tanh", "TanhBackward0", np.tanh, save=("result",))


@_tanh.backward
def _(ctx, g):
    (y,) = ctx.saved_tensors
    return g * (1 - _conj(y * y))


def _np_sigmoid(x):
    # exp(-x) overflows to inf for very negative x, and 1 / (1 + inf) is the right 0
    e = np.exp(np.negative(x))
    if type(e) is not np.ndarray:  # 0-d input: NumPy returned a scalar
        return np.asarray(np.reciprocal(e + 1))
    e += 1
    return np.reciprocal(e, out=e)


_sigmoid = _unary("sigmoid", "SigmoidBackward0", _np_sigmoid, save=("result",))


@_sigmoid.backward
def _(ctx, g):
    (y,) = ctx.saved_tensors
    return g * _conj(y * (1 - y))


def _np_relu(x):
    if x.dtype == np.bool_:
        raise RuntimeError("\"clamp_min_scalar_cpu\" not implemented for 'Bool'")
    return np.maximum(x, 0).astype(x.dtype, copy=False)


_relu = _unary("relu", "ReluBackward0", _np_relu, promote=None, save=("result",))


@_relu.backward
def _(ctx, g):
    (y,) = ctx.saved_tensors
    return g * (y > 0)


def _np_abs(x):
    if x.dtype == np.bool_:
        raise NotImplementedError("\"abs_cpu\" not implemented for 'Bool'")
    return np.abs(x)


_abs = _unary("abs", "AbsBackward0", _np_abs, promote=None)


@_abs.backward
def _(ctx, g):
    (x,) = ctx.saved_tensors
    return g * x.sign()


_sign = _unary("sign", "SignBackward0", np.sign, promote=None, save=())
_sign.backward(lambda ctx, g: g * 0)

neg = _publish_unary(_neg, "neg", "Return ``-input``.")
negative = expose(neg, "negative", method="negative")
exp = _publish_unary(_exp, "exp", "Return the exponential of the elements of ``input``.")
log = _publish_unary(_log, "log", "Return the natural logarithm of the elements of ``input``.")
sqrt = _publish_unary(_sqrt, "sqrt", "Return the square root of the elements of ``input``.")
tanh = _publish_unary(_tanh, "tanh", "Return the hyperbolic tangent of the elements.")
sigmoid = _publish_unary(_sigmoid, "sigmoid", "Return the logistic sigmoid of the elements.")
relu = _publish_unary(_relu, "relu", "Return ``max(input, 0)`` elementwise.")
abs = _publish_unary(_abs, "abs", "Return the absolute value of the elements.")  # noqa: A001
absolute = expose(abs, "absolute", method="absolute")
sign = _publish_unary(_sign, "sign", "Return the sign (-1, 0, 1) of the elements.")
Tensor.negative_ = Tensor.neg_
Tensor.absolute_ = Tensor.abs_


def conj(input):
    """Return the complex conjugate (the tensor itself for real dtypes)."""
    if not input.dtype.is_complex:
        return input
    return dispatch(_conj_op, (input,))


@op("conj", grad_fn="ConjBackward0")
def _conj_op(x):
    return np.conj(x)


_conj_op.backward(lambda ctx, g: g.conj())
expose(conj)

# ------------------------------------------------------------------------------ comparisons


def _ordered(name, np_fn):
    # torch has no ordering on complex numbers; NumPy compares them lexicographically
    def f(x, y):
        if np.iscomplexobj(x) or np.iscomplexobj(y):
            kind = "ComplexDouble" if np.result_type(x, y) == np.complex128 else "ComplexFloat"
            raise NotImplementedError(f"\"{name}_cpu\" not implemented for '{kind}'")
        return np_fn(x, y)

    return f


def _compare(name, np_fn, dunder, rdunder=None):
    if rdunder:
        np_fn = _ordered(name, np_fn)
    cop = op(name, promote=COMPARE, differentiable=False)(np_fn)

    def fn(input, other, *, out=None):
        return _out(dispatch(cop, (input, other)), out)

    fn.__name__ = name
    fn.__doc__ = f"Return the boolean tensor of ``input {dunder} other`` elementwise."
    expose(fn)
    setattr(Tensor, f"__{name}__", lambda self, other: dispatch(cop, (self, other)))
    if rdunder:
        setattr(Tensor, f"__{rdunder}__", lambda self, other: dispatch(cop, (self, other)))
    inplace_method(cop, name + "_", 2)
    return fn


eq = _compare("eq", np.equal, "==")
ne = _compare("ne", np.not_equal, "!=")
lt = _compare("lt", np.less, "<", "gt")
le = _compare("le", np.less_equal, "<=", "ge")
gt = _compare("gt", np.greater, ">", "lt")
ge = _compare("ge", np.greater_equal, ">=", "le")
Tensor.__rgt__ = Tensor.__lt__
Tensor.__lt__ = lambda self, other: lt(self, other)
Tensor.__gt__ = lambda self, other: gt(self, other)
Tensor.__le__ = lambda self, other: le(self, other)
Tensor.__ge__ = lambda self, other: ge(self, other)


def _bitwise(name, np_fn, dunder):
    bop = op(name, promote=SAME, differentiable=False)(np_fn)

    def fn(input, other):
        return dispatch(bop, (input, other))

    fn.__name__ = name
    fn.__doc__ = f"Return ``input {dunder} other`` elementwise (integral and bool tensors)."
    expose(fn)
    inplace_method(bop, name + "_", 2)
    return fn, bop


def _int_only(np_fn):
    def f(x, y):
        if np.result_type(x, y).kind == "f":
            raise RuntimeError(f"\"{np_fn.__name__}_cpu\" not implemented for 'Float'")
        return np_fn(x, y)

    f.__name__ = np_fn.__name__
    return f


bitwise_and, _and = _bitwise("bitwise_and", _int_only(np.bitwise_and), "&")
bitwise_or, _or = _bitwise("bitwise_or", _int_only(np.bitwise_or), "|")
bitwise_xor, _xor = _bitwise("bitwise_xor", _int_only(np.bitwise_xor), "^")
Tensor.__and__ = Tensor.__rand__ = lambda self, other: dispatch(_and, (self, other))
Tensor.__or__ = Tensor.__ror__ = lambda self, other: dispatch(_or, (self, other))
Tensor.__xor__ = Tensor.__rxor__ = lambda self, other: dispatch(_xor, (self, other))
Tensor.__iand__ = lambda self, other: dispatch_inplace(_and, self, (self, other))
Tensor.__ior__ = lambda self, other: dispatch_inplace(_or, self, (self, other))
Tensor.__ixor__ = lambda self, other: dispatch_inplace(_xor, self, (self, other))


@op("bitwise_not", differentiable=False)
def _invert(x):
    if x.dtype.kind == "f":
        raise RuntimeError("\"bitwise_not_cpu\" not implemented for 'Float'")
    return np.invert(x)


def bitwise_not(input):
    """Return the bitwise NOT (logical NOT for bool tensors)."""
    return dispatch(_invert, (input,))


expose(bitwise_not)
Tensor.__invert__ = bitwise_not


@op("logical_not", differentiable=False)
def _logical_not(x):
    return np.logical_not(x)


def logical_not(input):
    """Return the elementwise logical NOT as a bool tensor."""
    return dispatch(_logical_not, (input,))


expose(logical_not)

# ------------------------------------------------------------------------------ where, clone, casts


@op("where", grad_fn="WhereBackward0", save=(0,))
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

    return _wrap(np.asarray(x, dtype=dt.np))


expose(where)


@op("clone", grad_fn="CloneBackward0")
def _clone(x, memory_format=None):
    return np.array(x, copy=True, order="C" if memory_format != "preserve" else "K")


_clone.backward(lambda ctx, g, memory_format=None: g)


def clone(input, *, memory_format=None):
    """Return a copy of ``input`` (differentiable; contiguous unless ``memory_format`` says)."""
    return dispatch(_clone, (input,))


expose(clone)


@op("copy_", grad_fn="CopyBackwards")
def _copy(dst, src):
    return src


@_copy.backward
def _(ctx, g):
    return None, g


def _copy_(self, src, non_blocking=False):
    if not isinstance(src, Tensor):
        raise TypeError(
            f"copy_(): argument 'src' (position 1) must be Tensor, not {type(src).__name__}"
        )
    return dispatch_inplace(_copy, self, (self, src))


Tensor.copy_ = _copy_


@op("_to_copy", grad_fn="ToCopyBackward0")
def _to_copy(x, dtype):
    return x.astype(dtype.np)


_to_copy.backward(lambda ctx, g, dtype: g)


def _cast(t, dtype):
    """Return ``t`` converted to ``dtype`` (differentiable; self when already of that dtype)."""
    if t.dtype is dtype:
        return t
    return dispatch(_to_copy, (t,), {"dtype": dtype})


@op("fill_", differentiable=False)
def _fill(x, value):
    return np.asarray(value)


def _fill_(self, value):
    if isinstance(value, Tensor):
        if value._data.ndim:
            raise RuntimeError(
                "fill_ only supports 0-dimension value tensor but got tensor with "
                f"{value._data.ndim} dimensions."
            )
        value = value._data
    return dispatch_inplace(_fill_diff, self, (self,), {"value": value})


@op("fill_", grad_fn="FillBackward0")
def _fill_diff(x, value):
    return np.asarray(value)


_fill_diff.backward(lambda ctx, g, value: g * 0)


def _zero_(self):
    return _fill_(self, 0)


Tensor.fill_ = _fill_
Tensor.zero_ = _zero_

_binary_dunders()

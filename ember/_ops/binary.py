"""Binary pointwise math: maximum/minimum, fmax/fmin, atan2, hypot, logaddexp, xlogy,
copysign, heaviside, nextafter, ldexp, frexp (clamp, lerp, addcmul, addcdiv: ``ternary.py``).

Gradients at ties follow torch: maximum splits a tie 0.5/0.5, fmax gives it to ``input``.
"""

from __future__ import annotations

import math

import numpy as np

from ember import return_types
from ember._core import dtype as D
from ember._core.tensor import Tensor, _wrap
from ember._ops.pointwise import (
    _conj,
    dkind,
    need_tensor,
    not_implemented,
    overload,
    where,
    with_out,
    zeros_like,
)
from ember._ops.pointwise import pow as _pow
from ember._ops.registry import (
    _EMPTY,
    FLOAT,
    SAME,
    dispatch,
    dispatch_inplace,
    op,
    publish,
)

_LN2 = math.log(2.0)


def _mask(a) -> Tensor:
    return _wrap(np.asarray(a))


def _publish2(name, bop, doc, *, scalar_other=None, inplace=True, check=None, aliases=()):
    """Publish ``ember.<name>(input, other, *, out=None)``, its method and in-place method.

    Both arguments must be Tensors unless ``scalar_other`` (an op taking a scalar ``other``)
    is given. ``check(input, other)`` runs first (checks on the dtypes before promotion).
    """

    def fn(input: Tensor, other, *, out: Tensor | None = None) -> Tensor:
        need_tensor(name, input)
        if check is not None:
            check(input, other)
        o = bop
        if not isinstance(other, Tensor):
            if scalar_other is None:
                need_tensor(name, other, "other", 2)
            o = scalar_other
        if out is None:
            return dispatch(o, (input, other))
        return with_out(name, o, (input, other), _EMPTY, out)

    def inplace_fn(self, other):
        if check is not None:
            check(self, other)
        o = bop if isinstance(other, Tensor) or scalar_other is None else scalar_other
        if o is bop:
            need_tensor(name + "_", other, "other", 1)
        return dispatch_inplace(o, self, (self, other))

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    inplace_fn.__name__ = name + "_"
    return publish(bop, fn, aliases=aliases, inplace=inplace_fn if inplace else None)


def _no_complex(message):
    def check(x, y):
        if np.iscomplexobj(x) or np.iscomplexobj(y):
            raise RuntimeError(message)

    return check


# ------------------------------------------------------------------------------ maximum, fmax


def _extremum(name, np_fn):
    check = _no_complex(f"{name} not implemented for complex tensors.")

    def forward(x, y):
        check(x, y)
        return np_fn(x, y)

    return op(name, grad_fn=name.capitalize() + "Backward0", save=("self", "other"), promote=SAME)(
        forward
    )


_maximum = _extremum("maximum", np.maximum)
_minimum = _extremum("minimum", np.minimum)
_fmax = _extremum("fmax", np.fmax)
_fmin = _extremum("fmin", np.fmin)


def _split_tie(ctx, g, first_wins):
    # maximum / minimum: a tie gives each input half the gradient
    x, y = ctx.saved_tensors
    xa, ya = x._data, y._data
    need = ctx.needs_input_grad
    half = where(_mask(xa == ya), g / 2, g)
    gx = where(_mask(first_wins(ya, xa)), 0.0, half) if need[0] else None
    gy = where(_mask(first_wins(xa, ya)), 0.0, half) if need[1] else None
    return gx, gy


_maximum.backward(lambda ctx, g: _split_tie(ctx, g, np.greater))
_minimum.backward(lambda ctx, g: _split_tie(ctx, g, np.less))


def _fmax_backward(keep):
    # fmax / fmin: the gradient goes to input where it is kept (ties too) or other is NaN
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        xa, ya = x._data, y._data
        to_x = keep(xa, ya) | np.isnan(ya)
        need = ctx.needs_input_grad
        return (
            where(_mask(to_x), g, 0.0) if need[0] else None,
            where(_mask(to_x), 0.0, g) if need[1] else None,
        )

    return backward


_fmax.backward(_fmax_backward(np.greater_equal))
_fmin.backward(_fmax_backward(np.less_equal))

maximum = _publish2(
    "maximum", _maximum, "Return the elementwise maximum (NaN propagates).", inplace=False
)
minimum = _publish2(
    "minimum", _minimum, "Return the elementwise minimum (NaN propagates).", inplace=False
)
fmax = _publish2("fmax", _fmax, "Return the elementwise maximum, ignoring NaN.", inplace=False)
fmin = _publish2("fmin", _fmin, "Return the elementwise minimum, ignoring NaN.", inplace=False)

# ------------------------------------------------------------------------------ atan2, hypot


def _float_only(kernel, np_fn, complex_ok=False):
    """Wrap a binary NumPy function: integer (and complex) inputs raise torch's error."""

    def forward(x, y):
        a = x if isinstance(x, np.ndarray) else np.asarray(y)
        if dkind(a) in "biu" or (dkind(a) == "c" and not complex_ok):
            raise not_implemented(kernel, a)
        return np_fn(x, y)

    return forward


def _float_result(kernel, np_fn):
    """Wrap a binary NumPy function on inputs promoted to float (complex raises)."""

    def forward(x, y):
        a = x if isinstance(x, np.ndarray) else np.asarray(y)
        if dkind(a) == "c":
            raise not_implemented(kernel, a)
        # a Python number computes in the tensor's dtype (NumPy's log of it is float64)
        dt = np.result_type(x, y)
        x, y = np.asarray(x, dtype=dt), np.asarray(y, dtype=dt)
        return np_fn(x, y)

    return forward


_atan2 = op("atan2", grad_fn="Atan2Backward0", save=("self", "other"), promote=FLOAT)(
    _float_result("atan2_cpu", np.arctan2)
)


@_atan2.backward
def _(ctx, g):
    x, y = ctx.saved_tensors
    need = ctx.needs_input_grad
    recip = (x * x + y * y).reciprocal()
    return (g * y * recip if need[0] else None, g * -x * recip if need[1] else None)


atan2 = _publish2(
    "atan2",
    _atan2,
    "Return the elementwise arctangent of ``input / other`` "
    "with the quadrant given by the signs of both.",
    aliases=("arctan2",),
)
arctan2 = atan2

_hypot = op("hypot", grad_fn="HypotBackward0", save=("self", "other", "result"), promote=SAME)(
    _float_only("hypot_cpu", np.hypot)
)


@_hypot.backward
def _(ctx, g):
    x, y, r = ctx.saved_tensors
    need = ctx.needs_input_grad
    return (g * x / r if need[0] else None, g * y / r if need[1] else None)


hypot = _publish2("hypot", _hypot, "Return ``sqrt(input**2 + other**2)`` without overflow.")

# ------------------------------------------------------------------------------ logaddexp


def _np_logaddexp(x, y):
    if np.iscomplexobj(x):
        # log(exp(x) + exp(y)) around the operand with the larger real part
        big = np.where(x.real >= y.real, x, y)
        small = np.where(x.real >= y.real, y, x)
        return big + np.log1p(np.exp(small - big))
    return np.logaddexp(x, y)


_logaddexp = op("logaddexp", grad_fn="LogaddexpBackward0", save=("self", "other"), promote=SAME)(
    _float_only("logaddexp_cpu", _np_logaddexp, complex_ok=True)
)
_logaddexp2 = op("logaddexp2", grad_fn="Logaddexp2Backward0", save=("self", "other"), promote=SAME)(
    _float_only("logaddexp2_cpu", np.logaddexp2)
)


@_logaddexp.backward
def _(ctx, g):
    x, y = ctx.saved_tensors
    need = ctx.needs_input_grad
    return (
        g / _conj(1 + (y - x).exp()) if need[0] else None,
        g / _conj(1 + (x - y).exp()) if need[1] else None,
    )


@_logaddexp2.backward
def _(ctx, g):
    x, y = ctx.saved_tensors
    need = ctx.needs_input_grad
    return (
        g / (1 + (y - x).exp2()) if need[0] else None,
        g / (1 + (x - y).exp2()) if need[1] else None,
    )


logaddexp = _publish2(
    "logaddexp",
    _logaddexp,
    "Return ``log(exp(input) + exp(other))``, computed without overflow.",
    inplace=False,
)
logaddexp2 = _publish2(
    "logaddexp2",
    _logaddexp2,
    "Return ``log2(2**input + 2**other)``, computed without overflow.",
    inplace=False,
)

# ------------------------------------------------------------------------------ xlogy


def x_times_log_ops(name: str, grad_fn: str, np_log, kernel: str, shift: int, public):
    """Return torch's three overloads (Tensor-Tensor, Scalar-Tensor, Tensor-Scalar) of
    ``x * np_log(y)``, 0 where ``x`` is 0 unless ``y`` is NaN: xlogy (``np.log``, ``shift`` 0)
    and special.xlog1py (``np.log1p``, 1). ``public()`` returns the public function."""

    def forward(x, y):
        a = x if isinstance(x, np.ndarray) else np.asarray(y)
        if dkind(a) == "c":
            raise not_implemented(kernel, a)
        # a Python number computes in the tensor's dtype (NumPy's log of it is float64)
        dt = np.result_type(x, y)
        x, y = np.asarray(x, dtype=dt), np.asarray(y, dtype=dt)
        r = np.multiply(x, np_log(y))
        r = np.where(np.asarray(x) == 0, 0, r)
        return np.where(np.isnan(y), np.nan, r).astype(r.dtype, copy=False)

    def backward(ctx, g):
        x, y = ctx.saved_tensors
        need = ctx.needs_input_grad
        gx = gy = None
        if need[0]:
            # torch: xlogy(grad, other), zeroed where self == 0 and other <= -shift
            ya = y._data if isinstance(y, Tensor) else y
            zero = _mask((x._data == 0) & (ya <= -shift))
            gx = where(zero, 0.0, public()(g, y))
        if need[1]:
            gy = g * x / (y + shift if shift else y)
        return gx, gy

    # 0: two tensors; 1: a number ``self`` (torch's Scalar); 2: a number ``other``
    ops = tuple(
        op(name, grad_fn=f"{grad_fn}{i}", save=("self", "other"), scalar_args=s, promote=FLOAT)(
            forward
        )
        for i, s in enumerate(((), ("self",), ("other",)))
    )
    for o in ops:
        o.backward(backward)
    return ops


_xlogy, _xlogy_ss, _xlogy_so = x_times_log_ops(
    "xlogy", "XlogyBackward", np.log, "xlogy_cpu", 0, lambda: xlogy
)


def _xlogy_op(input, other):
    return overload("xlogy", input, other, _xlogy, _xlogy_ss, _xlogy_so)


def xlogy(input, other, *, out: Tensor | None = None) -> Tensor:
    """Return ``input * log(other)``, 0 where ``input`` is 0 (unless ``other`` is NaN)."""
    xop = _xlogy_op(input, other)
    if out is None:
        return dispatch(xop, (input, other))
    return with_out("xlogy", xop, (input, other), _EMPTY, out)


publish(
    _xlogy,
    xlogy,
    inplace=lambda self, other: dispatch_inplace(_xlogy_op(self, other), self, (self, other)),
)

# ------------------------------------------------------------------------------ copysign


def _np_copysign(x, y):
    a = x if isinstance(x, np.ndarray) else np.asarray(y)
    if dkind(a) == "c":
        raise not_implemented("copysign_cpu", a)
    return np.copysign(x, y)


_copysign = op("copysign", grad_fn="CopysignBackward0", save=("self", "result"), promote=FLOAT)(
    _np_copysign
)
_copysign_s = op("copysign", grad_fn="CopysignBackward1", save=("self", "result"), promote=FLOAT)(
    _np_copysign
)


def _copysign_backward(ctx, g):
    x, r = ctx.saved_tensors
    need = ctx.needs_input_grad
    gx = None
    if need[0]:
        zero = _mask(x._data == 0)
        gx = g * where(zero, 0.0, r / where(zero, 1.0, x))
    return gx, (zeros_like(g) if len(need) > 1 and need[1] else None)


_copysign.backward(_copysign_backward)
_copysign_s.backward(_copysign_backward)
copysign = _publish2(
    "copysign",
    _copysign,
    "Return the magnitude of ``input`` with the sign of ``other``.",
    scalar_other=_copysign_s,
)

# ------------------------------------------------------------------------------ heaviside


@op("heaviside", grad_fn="NotImplemented", promote=None)
def _heaviside(x, values):
    if x.dtype != values.dtype:
        raise RuntimeError("heaviside is not yet implemented for tensors with different dtypes.")
    if dkind(x) == "c":
        raise RuntimeError("heaviside is not yet implemented for complex tensors.")
    # torch: values at 0, else (x > 0) -- NaN gives 0
    return np.where(x == 0, values, (x > 0).astype(x.dtype))


@_heaviside.backward
def _(ctx, g):
    raise RuntimeError("derivative for aten::heaviside is not implemented")


def heaviside(input: Tensor, values: Tensor, *, out: Tensor | None = None) -> Tensor:
    """Return the Heaviside step of ``input``: 0 below zero, ``values`` at zero, 1 above."""
    need_tensor("heaviside", input)
    need_tensor("heaviside", values, "values", 2)
    if out is None:
        return dispatch(_heaviside, (input, values))
    return with_out("heaviside", _heaviside, (input, values), _EMPTY, out)


publish(
    _heaviside,
    heaviside,
    inplace=lambda self, values: dispatch_inplace(_heaviside, self, (self, values)),
)

# ------------------------------------------------------------------------------ nextafter


_nextafter = op("nextafter", grad_fn="NextafterBackward0", promote=SAME)(
    _float_only("nextafter_cpu", np.nextafter)
)


@_nextafter.backward
def _(ctx, g):
    need = ctx.needs_input_grad
    return (g if need[0] else None, zeros_like(g) if need[1] else None)


nextafter = _publish2(
    "nextafter",
    _nextafter,
    "Return the next representable value after ``input`` towards ``other``.",
)

# ------------------------------------------------------------------------------ ldexp, frexp


@op("ldexp", grad_fn="LdexpBackward0", save=("_self", "other"), promote=FLOAT)
def _ldexp(x, e):
    return np.multiply(x, np.exp2(e))


@_ldexp.backward
def _(ctx, g):
    x, e = ctx.saved_tensors
    need = ctx.needs_input_grad
    # torch takes pow(2, other): for an integer ``other`` an integer power, 0 for negative
    # exponents (so the gradient there is 0, as torch's)
    scale = e.exp2() if e.dtype.is_floating_point else _pow(2, e)
    return (g * _conj(scale) if need[0] else None, g * _conj(x * scale * _LN2) if need[1] else None)


def _ldexp_check(input, other):
    # torch's kernel for a float input and an integral exponent has no bool version
    if isinstance(other, Tensor) and other.dtype is D.bool and input.dtype.is_floating_point:
        raise NotImplementedError("\"ldexp_cpu_exp\" not implemented for 'Bool'")


ldexp = _publish2("ldexp", _ldexp, "Return ``input * 2 ** other``.", check=_ldexp_check)


@op("frexp", grad_fn="FrexpBackward0", save=("_self",), nondiff_outputs=(1,))
def _frexp(x):
    if dkind(x) != "f":
        raise RuntimeError("torch.frexp() only supports floating-point dtypes")
    m, e = np.frexp(x)
    return np.asarray(m), np.asarray(e, dtype=np.int32)


@_frexp.backward
def _(ctx, g, _g_exponent=None):
    (x,) = ctx.saved_tensors
    e = _wrap(np.frexp(x._data)[1].astype(np.int32))
    return g / e.exp2()


def frexp(input: Tensor, *, out=None):
    """Return ``(mantissa, exponent)`` with ``input = mantissa * 2 ** exponent``."""
    need_tensor("frexp", input)
    if out is None:
        return return_types.frexp(dispatch(_frexp, (input,)))
    from ember._core.grad_mode import STATE

    if STATE.grad_enabled and input._requires_grad:
        raise RuntimeError(
            "frexp(): functions with out=... arguments don't support automatic "
            "differentiation, but one of the arguments requires grad."
        )
    m, e = dispatch(_frexp, (input,))
    from ember._ops.pointwise import copy_out

    return return_types.frexp_out((copy_out(m, out[0]), copy_out(e, out[1])))


publish(_frexp, frexp)

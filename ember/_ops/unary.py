"""Unary pointwise math: abs, neg, sign, exp/log families, powers and roots, trigonometric and
hyperbolic functions, sigmoid, logit, rounding, frac, nan_to_num, deg2rad, conj.

Each op is one declaration (forward on arrays, then its backward in ember ops) published as
``ember.<name>``, ``Tensor.<name>`` and ``Tensor.<name>_``. Ops that torch computes in floating
point (``exp``, ``sin``...) take integer and bool inputs to the default float dtype.
"""

from __future__ import annotations

import math

import numpy as np

from ember._core import dtype as D
from ember._core.tensor import Tensor
from ember._ops.pointwise import (
    _conj,
    dkind,
    fast_backward,
    keep_layout,
    need_tensor,
    not_implemented,
    times,
    where,
    with_out,
    zeros_like,
)
from ember._ops.registry import (
    _EMPTY,
    FLOAT,
    MEMBERS,
    dispatch,
    dispatch_inplace,
    op,
    publish,
)

_LN2 = math.log(2.0)
_LN10 = math.log(10.0)
_HALF_TYPES = D.HALF_NP


def unary(
    name, grad_fn, forward, *, promote=FLOAT, save=("self",), doc="", inplace=True, exact_out=None
):
    """Declare the unary op ``name`` and publish it; return (op, public function).

    Its backward is declared right after with ``@<op>.backward``. Ops without type promotion
    (``promote=None``) want an ``out=`` of exactly the result's dtype, as torch.
    """
    exact = promote is None if exact_out is None else exact_out
    uop = op(name, grad_fn=grad_fn, save=save, promote=promote, differentiable=grad_fn is not None)(
        forward
    )

    def fn(input: Tensor, *, out: Tensor | None = None) -> Tensor:
        if not isinstance(input, Tensor):
            need_tensor(name, input)
        if out is None:
            return dispatch(uop, (input,))
        return with_out(name, uop, (input,), _EMPTY, out, exact)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    method = inplace or None  # True: generated from the op
    if inplace and isinstance(forward, np.ufunc):
        # a plain ufunc computes straight into the tensor's memory
        iop = uop.into(forward)

        def method(self):
            return dispatch_inplace(iop, self, (self,), {"out": self._data})

        method.__name__ = name + "_"
        method.__doc__ = f"In-place version of :meth:`Tensor.{name}`."
    publish(uop, fn, inplace=method, arity=1)
    return uop, fn


def alias(fn, name: str, inplace: bool = True):
    """Publish ``fn`` under torch's alias ``name`` (``arcsin`` for ``asin``)."""
    own = MEMBERS[f"ember.{fn.__name__}"][0]
    return publish(
        own, fn, name=name, inplace=getattr(Tensor, fn.__name__ + "_") if inplace else None
    )


def in_float32(np_fn):
    """Wrap ``np_fn`` to compute float16 / bfloat16 in float32 (torch's opmath type)."""

    def f(x):
        if x.dtype in _HALF_TYPES:
            return np_fn(x.astype(np.float32)).astype(x.dtype)
        return np_fn(x)

    f.__name__ = getattr(np_fn, "__name__", "f")
    return f


# ------------------------------------------------------------------------------ abs, neg, sign


def _np_abs(x):
    if x.dtype == np.bool_:
        raise not_implemented("abs_cpu", x)
    return np.abs(x)


_abs, abs = unary(  # noqa: A001 - torch.abs
    "abs",
    "AbsBackward0",
    _np_abs,
    promote=None,
    doc="Return the absolute value of the elements of ``input``.",
)


@_abs.backward
def _(ctx, g):
    (x,) = ctx.saved_tensors
    return g * sgn(x)


def _np_neg(x):
    if x.dtype == np.bool_:
        raise RuntimeError(
            "Negation, the `-` operator, on a bool tensor is not supported. If you are trying "
            "to invert a mask, use the `~` or `logical_not()` operator instead."
        )
    return np.negative(x)


_neg, neg = unary(
    "neg", "NegBackward0", _np_neg, promote=None, save=(), doc="Return ``-input`` elementwise."
)
_neg.backward(lambda ctx, g: -g)


def _np_sign(x):
    if dkind(x) == "c":
        raise NotImplementedError(
            "Unlike NumPy, torch.sign is not intended to support complex numbers. Please use "
            "torch.sgn instead."
        )
    if x.dtype == np.bool_:
        return x.copy(order="K")
    r = np.asarray(np.sign(x))
    if dkind(x) == "f":
        r[np.isnan(x)] = 0  # torch: sign(nan) is 0
    return r


_sign, sign = unary(
    "sign",
    "SignBackward0",
    _np_sign,
    promote=None,
    save=(),
    doc="Return the sign (-1, 0 or 1) of the elements of ``input``.",
)
_sign.backward(lambda ctx, g: zeros_like(g))


def _np_sgn(x):
    if dkind(x) != "c":
        return _np_sign(x)
    a = np.abs(x)
    return keep_layout(np.where(a == 0, 0, x / np.where(a == 0, 1, a)).astype(x.dtype), x)


_sgn, sgn = unary(
    "sgn",
    "SgnBackward0",
    _np_sgn,
    promote=None,
    save=("self", "result"),
    doc="Return ``input / |input|`` (the sign for real tensors; 0 at 0).",
)


@_sgn.backward
def _(ctx, g):
    x, s = ctx.saved_tensors
    if not x.dtype.is_complex:
        return zeros_like(g)
    a = x.abs()
    zero = a == 0
    return where(zero, 0.0, (g - s * s * g.conj()) / (2 * where(zero, 1.0, a)))


def positive(input: Tensor) -> Tensor:
    """Return ``input`` itself (an error for bool tensors, as torch)."""
    need_tensor("positive", input)
    if input.dtype is D.bool:
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return input


publish(None, positive)
alias(abs, "absolute")
alias(neg, "negative")

# ------------------------------------------------------------------------------ exp and log


def _exp_backward(scale=None):
    def backward(ctx, g):
        (r,) = ctx.saved_tensors
        return g * _conj(r if scale is None else r * scale)

    return backward


_exp, exp = unary(
    "exp",
    "ExpBackward0",
    np.exp,
    save=("result",),
    doc="Return the exponential of the elements of ``input``.",
)
_exp.backward(_exp_backward())
_exp2, exp2 = unary(
    "exp2", "Exp2Backward0", np.exp2, save=("result",), doc="Return ``2 ** input`` elementwise."
)
_exp2.backward(_exp_backward(_LN2))
_expm1, expm1 = unary(
    "expm1",
    "Expm1Backward0",
    np.expm1,
    save=("result",),
    doc="Return ``exp(input) - 1``, accurate for small ``input``.",
)


@_expm1.backward
def _(ctx, g):
    (r,) = ctx.saved_tensors
    return g * _conj(r + 1)


def _log_backward(scale=None):
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g / _conj(x if scale is None else x * scale)

    return backward


_log, log = unary(
    "log", "LogBackward0", np.log, doc="Return the natural logarithm of the elements of ``input``."
)
_log.backward(_log_backward())
_log2, log2 = unary(
    "log2",
    "Log2Backward0",
    np.log2,
    doc="Return the base-2 logarithm of the elements of ``input``.",
)
_log2.backward(_log_backward(_LN2))
_log10, log10 = unary(
    "log10",
    "Log10Backward0",
    np.log10,
    doc="Return the base-10 logarithm of the elements of ``input``.",
)
_log10.backward(_log_backward(_LN10))
_log1p, log1p = unary(
    "log1p",
    "Log1PBackward0",
    np.log1p,
    doc="Return ``log(1 + input)``, accurate for small ``input``.",
)


@_log1p.backward
def _(ctx, g):
    (x,) = ctx.saved_tensors
    return g / _conj(x + 1)


# ------------------------------------------------------------------------------ roots

_sqrt, sqrt = unary(
    "sqrt",
    "SqrtBackward0",
    np.sqrt,
    save=("result",),
    doc="Return the square root of the elements of ``input``.",
)


@_sqrt.backward
def _(ctx, g):
    (r,) = ctx.saved_tensors
    return g / (2 * _conj(r))


def _np_rsqrt(x):
    r = np.sqrt(x)
    if type(r) is not np.ndarray:
        return np.asarray(np.reciprocal(r))
    return np.reciprocal(r, out=r)


_rsqrt, rsqrt = unary(
    "rsqrt",
    "RsqrtBackward0",
    _np_rsqrt,
    save=("result",),
    doc="Return ``1 / sqrt(input)`` elementwise.",
)


@_rsqrt.backward
def _(ctx, g):
    (r,) = ctx.saved_tensors
    return -0.5 * g * _conj(r * r * r)


# ------------------------------------------------------------------------------ trigonometric

_sin, sin = unary("sin", "SinBackward0", np.sin, doc="Return the sine of the elements.")
_sin.backward(lambda ctx, g: g * _conj(ctx.saved_tensors[0].cos()))
_sin.array_backward(fast_backward(lambda ctx, g, x: times(g, np.cos(x))))
_cos, cos = unary("cos", "CosBackward0", np.cos, doc="Return the cosine of the elements.")
_cos.backward(lambda ctx, g: g * -_conj(ctx.saved_tensors[0].sin()))
_cos.array_backward(fast_backward(lambda ctx, g, x: times(g, np.negative(np.sin(x)))))
_tan, tan = unary(
    "tan", "TanBackward0", np.tan, save=("result",), doc="Return the tangent of the elements."
)


@_tan.backward
def _(ctx, g):
    (r,) = ctx.saved_tensors
    return g * _conj(1 + r * r)


_asin, asin = unary("asin", "AsinBackward0", np.arcsin, doc="Return the arcsine of the elements.")
_asin.backward(lambda ctx, g: g * _conj((1 - ctx.saved_tensors[0].square()).rsqrt()))
_acos, acos = unary("acos", "AcosBackward0", np.arccos, doc="Return the arccosine of the elements.")
_acos.backward(lambda ctx, g: g * -_conj((1 - ctx.saved_tensors[0].square()).rsqrt()))
_atan, atan = unary(
    "atan", "AtanBackward0", np.arctan, doc="Return the arctangent of the elements."
)
_atan.backward(lambda ctx, g: g / _conj(ctx.saved_tensors[0].square() + 1))

# ------------------------------------------------------------------------------ hyperbolic

_sinh, sinh = unary(
    "sinh", "SinhBackward0", np.sinh, doc="Return the hyperbolic sine of the elements."
)
_sinh.backward(lambda ctx, g: g * _conj(ctx.saved_tensors[0].cosh()))
_cosh, cosh = unary(
    "cosh", "CoshBackward0", np.cosh, doc="Return the hyperbolic cosine of the elements."
)
_cosh.backward(lambda ctx, g: g * _conj(ctx.saved_tensors[0].sinh()))
_tanh, tanh = unary(
    "tanh",
    "TanhBackward0",
    np.tanh,
    save=("result",),
    doc="Return the hyperbolic tangent of the elements.",
)


def _np_tanh_backward(ctx, g, y):
    d = np.multiply(y, y)
    return times(g, np.subtract(1, d, out=d))


@_tanh.backward
def _(ctx, g):
    (r,) = ctx.saved_tensors
    return g * _conj(1 - r * r)


_tanh.array_backward(fast_backward(_np_tanh_backward))


_asinh, asinh = unary(
    "asinh", "AsinhBackward0", np.arcsinh, doc="Return the inverse hyperbolic sine of the elements."
)
_asinh.backward(lambda ctx, g: g * _conj((ctx.saved_tensors[0].square() + 1).rsqrt()))
_acosh, acosh = unary(
    "acosh",
    "AcoshBackward0",
    np.arccosh,
    doc="Return the inverse hyperbolic cosine of the elements.",
)
_acosh.backward(lambda ctx, g: g * _conj((ctx.saved_tensors[0].square() - 1).rsqrt()))
_atanh, atanh = unary(
    "atanh",
    "AtanhBackward0",
    np.arctanh,
    doc="Return the inverse hyperbolic tangent of the elements.",
)
_atanh.backward(lambda ctx, g: g / _conj(1 - ctx.saved_tensors[0].square()))


def _inplace_not_implemented(uop, name):
    iop = op(name, grad_fn=uop.node_cls.__name__[:-1] + "1", promote=FLOAT)(uop.forward)

    @iop.backward
    def _(ctx, g):
        raise NotImplementedError(
            f"the derivative for 'inplace version of {name}' is not implemented."
        )

    publish(iop, name=name, function=False, method=False, inplace=True, arity=1)


for _o, _name in ((_asinh, "asinh"), (_acosh, "acosh"), (_atanh, "atanh")):
    _inplace_not_implemented(_o, _name)

for _name, _fn in (
    ("arcsin", asin),
    ("arccos", acos),
    ("arctan", atan),
    ("arcsinh", asinh),
    ("arccosh", acosh),
    ("arctanh", atanh),
):
    alias(_fn, _name)

# ------------------------------------------------------------------------------ sigmoid, logit


def _np_sigmoid(x):
    # exp(-x) overflows to inf for very negative x, and 1 / (1 + inf) is the right 0
    e = np.exp(np.negative(x))
    if type(e) is not np.ndarray:  # 0-d input: NumPy returned a scalar
        return np.asarray(np.reciprocal(e + 1))
    e += 1
    return np.reciprocal(e, out=e)


_sigmoid, sigmoid = unary(
    "sigmoid",
    "SigmoidBackward0",
    in_float32(_np_sigmoid),
    save=("result",),
    doc="Return the logistic sigmoid of the elements.",
)


def _np_sigmoid_backward(ctx, g, y):
    d = np.subtract(1, y)
    return times(g, np.multiply(d, y, out=d))


@_sigmoid.backward
def _(ctx, g):
    (y,) = ctx.saved_tensors
    return g * _conj((1 - y) * y)


_sigmoid.array_backward(fast_backward(_np_sigmoid_backward))


@op("logit", grad_fn="LogitBackward0", save=("self",), promote=FLOAT)
def _logit(x, eps=None):
    if dkind(x) == "c":
        raise not_implemented("logit_cpu", x)
    if eps is not None:
        lo = x.dtype.type(eps)
        x = np.clip(x, lo, x.dtype.type(1) - lo)
    return np.log(x / (1 - x))


@_logit.backward
def _(ctx, g, eps=None):
    (x,) = ctx.saved_tensors
    d = g / (x * (1 - x))
    if eps is None:
        return where(_mask((x._data < 0) | (x._data > 1)), math.nan, d)
    lo = x._data.dtype.type(eps)
    hi = x._data.dtype.type(1) - lo
    return where(_mask((x._data < lo) | (x._data > hi)), 0.0, d)


def _mask(a) -> Tensor:
    from ember._core.tensor import _wrap

    return _wrap(np.asarray(a))


def logit(input: Tensor, eps: float | None = None, *, out: Tensor | None = None) -> Tensor:
    """Return ``log(p / (1 - p))``, with ``p`` clamped to ``[eps, 1 - eps]`` when given."""
    need_tensor("logit", input)
    params = _EMPTY if eps is None else {"eps": float(eps)}
    if out is None:
        return dispatch(_logit, (input,), params)
    return with_out("logit", _logit, (input,), params, out)


def _logit_(self, eps=None):
    return dispatch_inplace(_logit, self, (self,), _EMPTY if eps is None else {"eps": float(eps)})


publish(_logit, logit, inplace=_logit_)

# ------------------------------------------------------------------------------ relu


def _np_relu(x):
    if x.dtype == np.bool_:
        raise RuntimeError("Boolean inputs not supported for relu")
    if dkind(x) == "c":
        raise NotImplementedError("clamp is not supported for complex types")
    return np.maximum(x, 0).astype(x.dtype, copy=False)


_relu, relu = unary(
    "relu",
    "ReluBackward0",
    _np_relu,
    promote=None,
    save=("result",),
    doc="Return ``max(input, 0)`` elementwise.",
)


@_relu.backward
def _(ctx, g):
    (y,) = ctx.saved_tensors
    return g * (y > 0)


def _np_relu_backward(ctx, g, y):
    out = np.greater(y, 0)
    return np.multiply(g, out, out=np.empty_like(g))


_relu.array_backward(fast_backward(_np_relu_backward))


# ------------------------------------------------------------------------------ rounding


def _rounding(name, np_fn, kernel):
    def f(x):
        if x.dtype == np.bool_:
            raise not_implemented(kernel, x)
        if dkind(x) == "c":
            raise NotImplementedError(f"{name} is not supported for complex inputs")
        return x.copy(order="K") if dkind(x) in "iu" else np_fn(x)

    return f


_floor, floor = unary(
    "floor",
    "FloorBackward0",
    _rounding("floor", np.floor, "floor_vml_cpu"),
    promote=None,
    save=(),
    doc="Return the largest integer <= each element.",
)
_ceil, ceil = unary(
    "ceil",
    "CeilBackward0",
    _rounding("ceil", np.ceil, "ceil_vml_cpu"),
    promote=None,
    save=(),
    doc="Return the smallest integer >= each element.",
)
_trunc, trunc = unary(
    "trunc",
    "TruncBackward0",
    _rounding("trunc", np.trunc, "trunc_vml_cpu"),
    promote=None,
    save=(),
    doc="Return the elements rounded toward zero.",
)
for _o in (_floor, _ceil, _trunc):
    _o.backward(lambda ctx, g: zeros_like(g))
alias(trunc, "fix")


def _np_round(x):
    if x.dtype == np.bool_ or dkind(x) == "c":
        raise not_implemented("round_vml_cpu", x)
    return x.copy(order="K") if dkind(x) in "iu" else np.rint(x)


_round = op("round", grad_fn="RoundBackward0", promote=None)(_np_round)
_round.backward(lambda ctx, g: zeros_like(g))


@op("round", grad_fn="RoundBackward1", promote=None)
def _round_decimals(x, decimals):
    if dkind(x) not in "f":
        raise not_implemented("round_cpu" if dkind(x) in "iu" else "round_vml_cpu", x)
    if x.dtype in _HALF_TYPES:
        return _round_decimals.forward(x.astype(np.float32), decimals).astype(x.dtype)
    # torch: nearbyint(x * 10**d) / 10**d, or nearbyint(x / 10**-d) * 10**-d for d < 0
    p = x.dtype.type(10.0 ** (-decimals if decimals < 0 else decimals))
    if decimals < 0:
        return np.rint(x / p) * p
    return np.rint(x * p) / p


_round_decimals.backward(lambda ctx, g, decimals: zeros_like(g))


def round(input: Tensor, *, decimals: int | None = None, out: Tensor | None = None):  # noqa: A001
    """Return the elements rounded to the nearest integer (half to even), or to ``decimals``."""
    need_tensor("round", input)
    if decimals is None:
        rop, params = _round, _EMPTY
    else:
        rop, params = _round_decimals, {"decimals": decimals}
    if out is None:
        return dispatch(rop, (input,), params)
    return with_out("round", rop, (input,), params, out, exact=True)


def _round_(self, *, decimals=None):
    if decimals is None:
        return dispatch_inplace(_round, self, (self,))
    return dispatch_inplace(_round_decimals, self, (self,), {"decimals": decimals})


publish(_round, round, inplace=_round_)


def _np_frac(x):
    if dkind(x) != "f":
        raise not_implemented("frac_cpu", x)
    return x - np.trunc(x)


_frac, frac = unary(
    "frac",
    "FracBackward0",
    _np_frac,
    promote=None,
    save=(),
    doc="Return the fractional part ``input - trunc(input)`` of the elements.",
)
_frac.backward(lambda ctx, g: g)

# ------------------------------------------------------------------------------ nan_to_num


@op("nan_to_num", grad_fn="NanToNumBackward0", save=("self",))
def _nan_to_num(x, nan=0.0, posinf=None, neginf=None):
    if dkind(x) == "c":
        parts = [
            _nan_to_num.forward(np.ascontiguousarray(p), nan, posinf, neginf)
            for p in (x.real, x.imag)
        ]
        return keep_layout((parts[0] + 1j * parts[1]).astype(x.dtype), x)
    if dkind(x) != "f":
        return x.copy(order="K")
    info = D.finfo(D.FROM_NP[x.dtype])
    out = x.copy(order="K")
    np.copyto(out, x.dtype.type(nan), where=np.isnan(x))
    np.copyto(out, x.dtype.type(info.max if posinf is None else posinf), where=x == np.inf)
    np.copyto(out, x.dtype.type(info.min if neginf is None else neginf), where=x == -np.inf)
    return out


@_nan_to_num.backward
def _(ctx, g, **params):
    (x,) = ctx.saved_tensors
    return g * _mask(np.isfinite(x._data))


def _nan_params(nan, posinf, neginf):
    params = {}
    if nan is not None and nan != 0.0:
        params["nan"] = float(nan)
    if posinf is not None:
        params["posinf"] = float(posinf)
    if neginf is not None:
        params["neginf"] = float(neginf)
    return params or _EMPTY


def nan_to_num(
    input: Tensor,
    nan: float | None = 0.0,
    posinf: float | None = None,
    neginf: float | None = None,
    *,
    out: Tensor | None = None,
) -> Tensor:
    """Return ``input`` with NaN, +inf and -inf replaced (by 0 and the dtype's extremes)."""
    need_tensor("nan_to_num", input)
    params = _nan_params(nan, posinf, neginf)
    if out is None:
        return dispatch(_nan_to_num, (input,), params)
    if isinstance(out, Tensor) and out.dtype is not input.dtype:
        raise RuntimeError(
            f"nan_to_num: dtype of out: {D.scalar_type_name(out.dtype)} should be same as "
            f"input: {D.scalar_type_name(input.dtype)}"
        )
    return with_out("nan_to_num", _nan_to_num, (input,), params, out)


def _nan_to_num_(self, nan=0.0, posinf=None, neginf=None):
    return dispatch_inplace(_nan_to_num, self, (self,), _nan_params(nan, posinf, neginf))


publish(_nan_to_num, nan_to_num, inplace=_nan_to_num_)

# ------------------------------------------------------------------------------ angles


def _angle_scale(name, factor):
    def f(x):
        if dkind(x) == "c":
            raise RuntimeError(f"{name} is not supported for complex tensors.")
        return np.multiply(x, factor)

    return in_float32(f)


_deg2rad, deg2rad = unary(
    "deg2rad",
    "Deg2RadBackward0",
    _angle_scale("deg2rad", math.pi / 180),
    save=(),
    doc="Return the elements converted from degrees to radians.",
)
_deg2rad.backward(lambda ctx, g: g * (math.pi / 180))
_rad2deg, rad2deg = unary(
    "rad2deg",
    "Rad2DegBackward0",
    _angle_scale("rad2deg", 180 / math.pi),
    save=(),
    doc="Return the elements converted from radians to degrees.",
)
_rad2deg.backward(lambda ctx, g: g * (180 / math.pi))

# ------------------------------------------------------------------------------ conj


@op("conj", grad_fn="ConjBackward0")
def _conj_op(x):
    return np.conj(x)


_conj_op.backward(lambda ctx, g: g.conj())


def conj(input: Tensor) -> Tensor:
    """Return the complex conjugate (the tensor itself for real dtypes)."""
    if not input.dtype.is_complex:
        return input
    return dispatch(_conj_op, (input,))


publish(_conj_op, conj)

# ------------------------------------------------------------------------------ operators

publish(_neg, operators=("__neg__",))
publish(_abs, operators=("__abs__",))
publish(None, operators={"__pos__": positive})
del _o, _name, _fn

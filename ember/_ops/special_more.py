"""The ops of ``torch.special`` that the top-level namespace does not have: erfcx, ndtr,
ndtri, log_ndtr, i0e, i1, i1e, entr, xlog1py.

Kernels in ``special_math.py`` (float64, rounded to the input's dtype) or composed of NumPy
ufuncs; backward formulas in ember ops (double backward works), with torch's node names.
"""

from __future__ import annotations

import math

import numpy as np

from ember._core.tensor import Tensor, _wrap
from ember._ops import special_math as S
from ember._ops.binary import x_times_log_ops
from ember._ops.pointwise import (
    dkind,
    keep_layout,
    need_tensor,
    not_implemented,
    overload,
    where,
    with_out,
)
from ember._ops.registry import _EMPTY, FLOAT, dispatch, op
from ember._ops.special import _erf, _i1
from ember._ops.special_single import blocked
from ember._ops.unary import log

_SQRT_2PI = math.sqrt(2.0 * math.pi)
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


def _kernel(fn, kname):
    """Wrap a float64 kernel: torch's error for complex input, the result in the input dtype."""

    def forward(x):
        if dkind(x) == "c":
            raise not_implemented(kname, x)
        return keep_layout(blocked(fn, x, x.dtype, 16384), x)

    return forward


def _unary(name, grad_fn, forward, save=("self",)):
    uop = op(name, grad_fn=grad_fn, save=save, promote=FLOAT)(forward)

    def fn(input: Tensor, *, out: Tensor | None = None) -> Tensor:
        need_tensor(name, input)
        if out is None:
            return dispatch(uop, (input,))
        return with_out(name, uop, (input,), _EMPTY, out)

    fn.__name__ = fn.__qualname__ = name
    return uop, fn


# ------------------------------------------------------------------------------ error functions

_erfcx, erfcx = _unary(
    "erfcx", "SpecialErfcxBackward0", _kernel(S.erfcx, "erfcx_cpu"), save=("self", "result")
)
erfcx.__doc__ = "Return the scaled complementary error function ``exp(x**2) * erfc(x)``."


@_erfcx.backward
def _(ctx, g):
    x, r = ctx.saved_tensors
    return g * (2 * x * r - _TWO_OVER_SQRT_PI)


def _np_ndtr(x):
    if dkind(x) == "c":
        raise not_implemented("erf_vml_cpu", x)
    # torch's composite, in the input's dtype: (1 + erf(x / sqrt 2)) * 0.5 (so, as torch, it
    # loses the lower tail below about -8, where 1 + erf rounds to 0)
    t = np.multiply(x, x.dtype.type(math.sqrt(0.5)))
    e = _erf.forward(t)
    return np.multiply(np.add(e, x.dtype.type(1)), x.dtype.type(0.5))


# torch computes ndtr as a composite whose last node is a multiplication by 0.5
_ndtr, ndtr = _unary("ndtr", "MulBackward1", _np_ndtr, save=("_self",))
ndtr.__doc__ = "Return the area under the standard Gaussian density from -inf to ``input``."


@_ndtr.backward
def _(ctx, g):
    (x,) = ctx.saved_tensors
    return g * (x * x * -0.5).exp() * (1.0 / _SQRT_2PI)


def _log_ndtr64(x):
    x = np.asarray(x, dtype=np.float64)
    # above -1: log1p(-ndtr(-x)); below: log(erfcx(-x / sqrt 2) / 2) - x^2 / 2, no underflow
    hi = np.log1p(-0.5 * S.erfc(x / math.sqrt(2.0)))
    lo = np.log(0.5 * S.erfcx(-x / math.sqrt(2.0))) - 0.5 * x * x
    return np.where(x > -1.0, hi, lo)


def _np_log_ndtr(x):
    if dkind(x) == "c":
        raise not_implemented("log_ndtr_cpu", x)
    return keep_layout(blocked(_log_ndtr64, x, x.dtype, 16384), x)


_log_ndtr, log_ndtr = _unary(
    "log_ndtr", "SpecialLogNdtrBackward0", _np_log_ndtr, save=("self", "result")
)
log_ndtr.__doc__ = "Return the log of the area under the standard Gaussian density up to ``x``."


@_log_ndtr.backward
def _(ctx, g):
    x, r = ctx.saved_tensors
    # torch's form: grad / sqrt(2 pi) * exp(-(result + x^2 / 2))
    return g * (1.0 / _SQRT_2PI) * (-(r + x * x * 0.5)).exp()


_ndtri, ndtri = _unary(
    "ndtri", "SpecialNdtriBackward0", _kernel(S.ndtri, "ndtri_cpu"), save=("result",)
)
ndtri.__doc__ = "Return the argument at which the standard Gaussian CDF equals ``input``."


@_ndtri.backward
def _(ctx, g):
    (r,) = ctx.saved_tensors
    return g * _SQRT_2PI * (r * r * 0.5).exp()


# ------------------------------------------------------------------------------ Bessel


def i1(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    """Return the modified Bessel function of the first kind, order 1."""
    need_tensor("i1", input)
    if out is None:
        return dispatch(_i1, (input,))
    return with_out("i1", _i1, (input,), _EMPTY, out)


_i0e, i0e = _unary("i0e", "SpecialI0EBackward0", _kernel(S.i0e, "i0e_cpu"), save=("self", "result"))
i0e.__doc__ = "Return the exponentially scaled Bessel function ``exp(-|x|) * i0(x)``."
_i1e, i1e = _unary("i1e", "SpecialI1EBackward0", _kernel(S.i1e, "i1e_cpu"), save=("self", "result"))
i1e.__doc__ = "Return the exponentially scaled Bessel function ``exp(-|x|) * i1(x)``."


@_i0e.backward
def _(ctx, g):
    x, r = ctx.saved_tensors
    return g * (i1e(x) - x.sgn() * r)


@_i1e.backward
def _(ctx, g):
    x, r = ctx.saved_tensors
    # i0e(x) - i1e(x) (sgn(x) + 1 / x), whose limit at 0 is 1/2 (torch's form)
    tiny = _wrap(np.abs(x._data) <= np.finfo(x._data.dtype).eps)
    safe = where(tiny, 1.0, x)
    return g * where(tiny, 0.5, i0e(x) - r * (x.sgn() + safe.reciprocal()))


# ------------------------------------------------------------------------------ entr, xlog1py


def _np_entr(x):
    if dkind(x) == "c":
        raise not_implemented("entr_cpu", x)
    r = -x * np.log(np.where(x > 0, x, 1))
    r = np.where(x < 0, -np.inf, r)
    return np.where(np.isnan(x), np.nan, r).astype(x.dtype, copy=False)


_entr, entr = _unary("entr", "SpecialEntrBackward0", _np_entr)
entr.__doc__ = "Return the elementwise entropy ``-x * log(x)`` (0 at 0, -inf below)."


@_entr.backward
def _(ctx, g):
    (x,) = ctx.saved_tensors
    return g * -(log(x) + 1)


_xlog1py, _xlog1py_ss, _xlog1py_so = x_times_log_ops(
    "xlog1py", "SpecialXlog1PyBackward", np.log1p, "xlog1py_cpu", 1, lambda: xlog1py
)


def xlog1py(input, other, *, out: Tensor | None = None) -> Tensor:
    """Return ``input * log1p(other)``, 0 where ``input`` is 0 (unless ``other`` is NaN)."""
    xop = overload("xlog1py", input, other, _xlog1py, _xlog1py_ss, _xlog1py_so)
    if out is None:
        return dispatch(xop, (input, other))
    return with_out("xlog1py", xop, (input, other), _EMPTY, out)

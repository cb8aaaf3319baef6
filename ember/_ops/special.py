"""Special functions as ops: erf, erfc, erfinv, lgamma, digamma, polygamma, mvlgamma, i0, sinc.

The numerical kernels are in ``special_math.py`` (vectorised NumPy, float64); here they get
torch's dtype handling (integers to the default float dtype, float16/bfloat16/float32 computed
in float64 and rounded back, errors for complex input) and their derivatives, written in ember
ops so that higher derivatives work: lgamma' = digamma, digamma' = polygamma(1), ...
"""

from __future__ import annotations

import math

import numpy as np

from ember._core import dtype as D
from ember._core.tensor import Tensor, _wrap
from ember._ops import special_math as S
from ember._ops.pointwise import (
    _conj,
    dkind,
    keep_layout,
    need_tensor,
    not_implemented,
    where,
    with_out,
)
from ember._ops.registry import FLOAT, dispatch, dispatch_inplace, op, publish
from ember._ops.special_single import blocked, erf_single, erfc_single, lgamma_single
from ember._ops.unary import in_float32, unary

_SQRT_PI = math.sqrt(math.pi)


_F32 = np.dtype(np.float32)


def _real_kernel(kernel, kname, single=None):
    """Wrap a float64 kernel: raise torch's error for complex input, round to the input dtype.

    ``single(x, dtype)``, if given, computes float32 and the half types (torch computes
    those in float32) faster, to single precision.
    """

    def forward(x):
        if dkind(x) == "c":
            raise not_implemented(kname, x)
        if single is not None and (x.dtype == _F32 or x.dtype in D.HALF_NP):
            return keep_layout(single(x, x.dtype), x)
        # blocks: the float64 kernels' masks and polynomials run on data in cache
        return keep_layout(blocked(kernel, x, x.dtype, 16384), x)

    return forward


# ------------------------------------------------------------------------------ error functions

_erf, erf = unary(
    "erf",
    "ErfBackward0",
    _real_kernel(S.erf, "erf_vml_cpu", erf_single),
    doc="Return the error function of the elements of ``input``.",
)
_erfc, erfc = unary(
    "erfc",
    "ErfcBackward0",
    _real_kernel(S.erfc, "erfc_vml_cpu", erfc_single),
    doc="Return the complementary error function ``1 - erf(input)``.",
)
_erfinv, erfinv = unary(
    "erfinv",
    "ErfinvBackward0",
    _real_kernel(S.erfinv, "erfinv_vml_cpu"),
    save=("_result",),
    doc="Return the inverse error function of the elements.",
)


def _gauss(x: Tensor) -> Tensor:
    return (-(x * x)).exp()


_erf.backward(lambda ctx, g: (2.0 / _SQRT_PI) * _gauss(ctx.saved_tensors[0]) * g)
_erfc.backward(lambda ctx, g: (-2.0 / _SQRT_PI) * _gauss(ctx.saved_tensors[0]) * g)


@_erfinv.backward
def _(ctx, g):
    (r,) = ctx.saved_tensors
    return (0.5 * _SQRT_PI) * (r * r).exp() * g


# ------------------------------------------------------------------------------ gamma family

_lgamma, lgamma = unary(
    "lgamma",
    "LgammaBackward0",
    _real_kernel(S.lgamma, "lgamma_vml_cpu", lgamma_single),
    doc="Return the log of the absolute value of the gamma function.",
)
_lgamma.backward(lambda ctx, g: g * digamma(ctx.saved_tensors[0]))
_digamma, digamma = unary(
    "digamma",
    "DigammaBackward0",
    _real_kernel(S.digamma, "digamma"),
    doc="Return the logarithmic derivative of the gamma function.",
)
_digamma.backward(lambda ctx, g: g * polygamma(1, ctx.saved_tensors[0]))


def _np_polygamma(x, n):
    if dkind(x) == "c":
        raise not_implemented(("digamma", "trigamma")[n] if n < 2 else "polygamma", x)
    sin_dtype = np.float64 if x.dtype == np.float64 else np.float32
    return keep_layout(S.polygamma(n, x, sin_dtype).astype(x.dtype, copy=False), x)


_polygamma = op("polygamma", grad_fn="PolygammaBackward0", save=("self",), promote=FLOAT)(
    _np_polygamma
)
# torch records the in-place form under its own node name
_polygamma_inplace = op("polygamma", grad_fn="PolygammaBackward1", save=("self",), promote=FLOAT)(
    _np_polygamma
)
for _o in (_polygamma, _polygamma_inplace):
    _o.backward(lambda ctx, g, n: g * polygamma(n + 1, ctx.saved_tensors[0]))
del _o


def _check_n(n):
    if type(n) is not int and not isinstance(n, np.integer):
        raise TypeError(
            f"polygamma(): argument 'n' (position 1) must be int, not {type(n).__name__}"
        )
    if n < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")
    return {"n": int(n)}


def polygamma(n: int, input: Tensor, *, out: Tensor | None = None) -> Tensor:
    """Return the ``n``-th derivative of the digamma function at the elements of ``input``."""
    params = _check_n(n)
    need_tensor("polygamma", input, "input", 2)
    if out is None:
        return dispatch(_polygamma, (input,), params)
    return with_out("polygamma", _polygamma, (input,), params, out)


def _polygamma_method(self, n: int) -> Tensor:
    """Return the ``n``-th derivative of the digamma function of the elements."""
    return polygamma(n, self)


publish(
    _polygamma,
    polygamma,
    method=_polygamma_method,
    inplace=lambda self, n: dispatch_inplace(_polygamma_inplace, self, (self,), _check_n(n)),
)


@op("mvlgamma", grad_fn="MvlgammaBackward0", save=("self",), promote=FLOAT)
def _mvlgamma(x, p):
    if dkind(x) == "c":
        raise not_implemented("arange_cpu", x)
    # sum_{j < p} lgamma(x - j / 2) + p (p - 1) / 4 log(pi)
    args = x[..., None].astype(np.float64) + np.arange(-(p - 1) / 2, 0.25, 0.5)
    res = S.lgamma(args).sum(-1) + p * (p - 1) * math.log(math.pi) / 4
    return keep_layout(res.astype(x.dtype, copy=False), x)


@_mvlgamma.backward
def _(ctx, g, p):
    (x,) = ctx.saved_tensors
    acc = digamma(x - (p - 1) / 2)
    for j in range(1, p):
        acc = acc + digamma(x + (j - (p - 1)) / 2)
    return g * acc


def _check_p(p, input=None):
    if input is not None and input.dtype is D.bool:
        raise RuntimeError("The input tensor may not be a boolean tensor.")
    if p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    return {"p": int(p)}


def mvlgamma(input: Tensor, p: int, *, out: Tensor | None = None) -> Tensor:
    """Return the multivariate log-gamma function of dimension ``p`` elementwise."""
    need_tensor("mvlgamma", input)
    params = _check_p(p, input)
    if out is None:
        return dispatch(_mvlgamma, (input,), params)
    return with_out("mvlgamma", _mvlgamma, (input,), params, out)


publish(
    _mvlgamma,
    mvlgamma,
    inplace=lambda self, p: dispatch_inplace(_mvlgamma, self, (self,), _check_p(p)),
)

# ------------------------------------------------------------------------------ Bessel i0

_i0, i0 = unary(
    "i0",
    "I0Backward0",
    _real_kernel(S.i0, "i0_vml_cpu"),
    doc="Return the modified Bessel function of the first kind, order 0.",
)


@op("special_i1", grad_fn="SpecialI1Backward0", save=("self", "result"), promote=FLOAT)
def _i1(x):
    if dkind(x) == "c":
        raise not_implemented("i1_cpu", x)
    return keep_layout(S.i1(x).astype(x.dtype, copy=False), x)


_i0.backward(lambda ctx, g: g * dispatch(_i1, (ctx.saved_tensors[0],)))


@_i1.backward
def _(ctx, g):
    x, r = ctx.saved_tensors
    # i1'(x) = i0(x) - i1(x) / x, whose limit at 0 is 1/2 (torch's form, safe at 0)
    eps = D.finfo(x.dtype).eps
    big = _wrap(np.abs(x._data) > eps)
    safe = where(big, x, eps)
    return g * where(big, i0(safe) - r * safe.reciprocal(), 0.5)


# ------------------------------------------------------------------------------ sinc


def _np_sinc(x):
    p = np.multiply(x, math.pi)
    r = np.sin(p) / p
    return keep_layout(np.where(x == 0, 1, r).astype(x.dtype, copy=False), x)


_sinc, sinc = unary(
    "sinc",
    "SincBackward0",
    in_float32(_np_sinc),
    doc="Return the normalized sinc ``sin(pi x) / (pi x)`` of the elements.",
)


@_sinc.backward
def _(ctx, g):
    (x,) = ctx.saved_tensors
    xp = x * math.pi
    xxp = x * x * math.pi
    d = g * ((xp * xp.cos()) - xp.sin()) / _conj(xxp)
    return where(_wrap(xxp._data == 0), 0.0, d)

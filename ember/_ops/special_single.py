"""Special-function kernels for single precision, and block-by-block evaluation.

torch computes float32 (and float16/bfloat16) special functions in float32; these kernels give
single-precision results with fewer passes than the float64 kernels of ``special_math.py``:
erf and erfc from rational fits (within 1 ulp of the true value), lgamma from Stirling's
series (the float64 kernel's values, rounded). ``blocked`` runs any elementwise kernel block
by block, so that its many passes run on data in the CPU's cache.

Credit (see NOTICE): lgamma here rounds ``special_math.lgamma``, whose coefficients are the
Cephes Math Library (Copyright 1984-2000 Stephen L. Moshier, BSD licence)'s.
"""

from __future__ import annotations

import numpy as np

from ember._ops.special_math import _LOGPI, _LS2PI, _PI, lgamma

# ------------------------------------------------------------------------------ erf, erfc

# Rational approximations fitted for single precision (relative error < 3e-9, so the float64
# evaluation rounds to within 1 ulp of the true value): erf(x) = x P(x^2) / Q(x^2) on |x| <= 4
# (|erf| rounds to 1 beyond), erfc(x) = exp(-x^2) R(x) / S(x) on 0 <= x <= 10.1 (erfc(x)
# exp(x^2) is smooth there; erfc underflows float32 beyond). Coefficients lowest power first.
_ERF32_P = (
    1.1283791699596204,
    0.185053514936997,
    0.054369392425604575,
    0.003853090832079012,
    0.00038265604272445114,
    4.768405014181574e-06,
    -1.361890816563174e-08,
)
_ERF32_Q = (
    1.0,
    0.49733283897883035,
    0.11396060979104883,
    0.015479382526813053,
    0.001312413145547975,
    6.390792800179446e-05,
)
_ERFCX32_P = (
    0.9999999999022758,
    1.438346363385319,
    1.0059230313790493,
    0.4056069219459235,
    0.09387356348309485,
    0.010175099408117345,
)
_ERFCX32_Q = (
    1.0,
    2.5667255174609007,
    2.9021629119212813,
    1.8658720124601356,
    0.7279586057895308,
    0.16638554291467128,
    0.018034915436197924,
)
_BLOCK = 4096  # elements per block: a block's float64 temporaries stay in the CPU's cache


def _horner_up(x, coefs):
    """Return sum(coefs[i] * x**i) (lowest power first), in place on one new array."""
    r = x * coefs[-1]
    r += coefs[-2]
    for c in coefs[-3::-1]:
        r *= x
        r += c
    return r


def _erf32_block(x):
    x = np.clip(x, -4.0, 4.0, dtype=np.float64)
    u = x * x
    r = _horner_up(u, _ERF32_P)
    r /= _horner_up(u, _ERF32_Q)
    r *= x
    return r


def _erfc32_block(x):
    a = np.abs(x, dtype=np.float64)
    e = np.square(a)
    np.negative(e, out=e)
    np.exp(e, out=e)
    np.minimum(a, 10.1, out=a)
    r = _horner_up(a, _ERFCX32_P)
    r /= _horner_up(a, _ERFCX32_Q)
    r *= e
    return np.where(x < 0, 2.0 - r, r)


def blocked(kernel, x: np.ndarray, dtype, block: int = _BLOCK) -> np.ndarray:
    """Return the elementwise ``kernel`` applied to ``x`` block by block, as an array of
    ``dtype`` shaped as ``x``: the many passes of a kernel run on data in cache, not memory."""
    flat = np.ascontiguousarray(x).reshape(-1)
    if flat.size <= block:
        return np.asarray(kernel(flat)).astype(dtype, copy=False).reshape(x.shape)
    out = np.empty(flat.shape, dtype)
    for i in range(0, flat.size, block):
        out[i : i + block] = kernel(flat[i : i + block])
    return out.reshape(x.shape)


def erf_single(x: np.ndarray, dtype=np.float32) -> np.ndarray:
    """Return erf(x) elementwise to single precision (within 1 ulp), as an array of ``dtype``."""
    return blocked(_erf32_block, x, dtype)


def erfc_single(x: np.ndarray, dtype=np.float32) -> np.ndarray:
    """Return erfc(x) elementwise to single precision (within 1 ulp, relative, into the
    subnormals), as an array of ``dtype``."""
    return blocked(_erfc32_block, x, dtype)


# ------------------------------------------------------------------------------ lgamma


def _lgamma_stirling(x):
    """Return lgamma(x) for x >= 0.5: Stirling's series at x + 8 (or x), shifted back by the
    log of the product x (x + 1) ... (x + 7)."""
    small = x < 8.0
    z = np.where(small, x + 8.0, x)
    p = np.ones_like(x)
    t = x.copy()
    for _ in range(8):
        p *= t
        t += 1.0
    zi = 1.0 / z
    zi2 = zi * zi
    ser = zi * (1 / 12 + zi2 * (-1 / 360 + zi2 * (1 / 1260 + zi2 * (-1 / 1680 + zi2 / 1188))))
    r = (z - 0.5) * np.log(z) - z + _LS2PI + ser
    return np.where(small, r - np.log(p), r)


def _lgamma32_block(x):
    x = x.astype(np.float64)
    neg = x < 0.5
    r = _lgamma_stirling(np.where(neg, 1.0 - x, x))
    # reflection below 1/2: log(pi / |sin(pi x)|) - lgamma(1 - x); x - round(x) is exact
    s = np.abs(np.sin(_PI * (x - np.round(x))))
    out = np.where(neg, _LOGPI - np.log(s) - r, r)
    out[np.isinf(x)] = np.inf
    # next to the zeros 1 and 2 the shifted series cancels (its absolute error, ~1e-15, is
    # then more than a float32 ulp of the result): Cephes' kernel there
    near = (np.abs(x - 1.0) < 0.01) | (np.abs(x - 2.0) < 0.01)
    if near.any():
        out[near] = lgamma(x[near])
    return out


def lgamma_single(x: np.ndarray, dtype=np.float32) -> np.ndarray:
    """Return lgamma(x) elementwise for single-precision (and half) inputs, as an array of
    ``dtype``: the same values as the float64 kernel rounded, with fewer passes."""
    return blocked(_lgamma32_block, x, dtype, 16384)

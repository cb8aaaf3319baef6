"""Array kernels of torch.special's Bessel, Airy and orthogonal-polynomial functions.

Ports of ATen's ``native/Math.h`` (Cephes): each kernel runs in its input's precision (float32
or float64, as torch instantiates the template for the tensor's dtype), evaluating the same
polynomials in the same order; branches are boolean masks, loops that stop per element stop
per element. Coefficients live in ``special_tables.py``.

Credit (see NOTICE): the algorithms are those of the Cephes Math Library (Copyright
1984-2000 Stephen L. Moshier, BSD licence), as ATen (PyTorch, BSD 3-Clause) implements them.
"""

from __future__ import annotations

import math

import numpy as np

from ember._core.fma import fma, fma32
from ember._ops import special_tables as C

_PIO4 = 0.785398163397448309615660845819875721
_3PIO4 = 2.356194490192344928846982537459627163
_SQ2OPI = 0.797884560802865355879892119868763737
_TWOOPI = 0.636619772367581343075535053490057448


# torch's kernels are compiled with floating-point contraction: ``a * b + c`` is one fused
# multiply-add (rounded once). Their exp/sin/cos/log are glibc's, correctly rounded in nearly
# all cases: float32 ones are computed here in double and rounded, float64 exp in extended
# precision (NumPy's own float64 exp and arccos differ from glibc's in the last bit; its sin,
# cos and log agree). With both, the kernels reproduce torch's bits almost everywhere (float64:
# > 99.9% of arguments; float32: > 99%, its trigonometric forms ~95%). The emulated float64
# fused multiply-add costs ~5x the plain NumPy evaluation.


def _mad(a, b, c):
    """``a * b + c`` rounded once, in the operands' precision (Python numbers are weak)."""
    if np.result_type(a, b, c) == np.float32:
        return fma32(a, b, c)
    return fma(a, b, c)


def _exp(x):
    if x.dtype == np.float32:
        return np.exp(x.astype(np.float64)).astype(np.float32)
    return np.exp(x.astype(np.longdouble)).astype(np.float64)


def _via64(fn):
    def f(x):
        if x.dtype == np.float32:
            return fn(x.astype(np.float64)).astype(np.float32)
        return fn(x)

    return f


def _acos(x):
    # NumPy's float64 arccos differs from glibc's in the last bit for ~10% of arguments
    if x.dtype == np.float32:
        return np.arccos(x.astype(np.float64)).astype(np.float32)
    return np.arccos(x.astype(np.longdouble)).astype(np.float64)


_sin, _cos, _log = _via64(np.sin), _via64(np.cos), _via64(np.log)


def _horner(y, coefs):
    """Return ``r = r * y + c`` over ``coefs`` from ``r = 0`` (torch's loops, highest first)."""
    r = np.zeros_like(y)
    for c in coefs:
        r = _mad(r, y, y.dtype.type(c))
    return r


def _clenshaw(y, coefs):
    """Return (a, p) of torch's Chebyshev loops: the result is ``0.5 * (a - p)``."""
    p = np.zeros_like(y)
    q = np.zeros_like(y)
    a = np.full_like(y, coefs[0])
    for c in coefs[1:]:
        p = q
        q = a
        a = _mad(y, q, -p) + y.dtype.type(c)
    return a, p


# ------------------------------------------------------------------------------ Bessel J, Y


def _j_asymptotic(x, pp, pq, qp, qq, shift, ysign, sq):
    # (P cos(x - shift) - 5/x Q sin(x - shift)) sqrt(2/pi) / sqrt(x) for J (ysign 0); Y swaps
    # sin and cos. ``sq``: J0/Y0 use 25 / x^2, J1/Y1 5 / x * (5 / x)
    z = 25.0 / (x * x) if sq else 5.0 / x * (5.0 / x)
    p = _horner(z, pp) / _horner(z, pq)
    q = _horner(z, qp) / _horner(z, qq)
    t = x - shift
    # the first product fuses with the sum (GCC contracts the first multiplication it meets)
    if ysign:
        r = _mad(p, _sin(t), 5.0 / x * q * _cos(t))
    else:
        r = _mad(p, _cos(t), -(5.0 / x * q * _sin(t)))
    return r * _SQ2OPI / np.sqrt(x)


def bessel_j0(x: np.ndarray) -> np.ndarray:
    """Return J0(x) elementwise in x's precision (torch's kernel)."""
    x = np.abs(x)
    out = np.empty_like(x)
    near = x <= 5.0
    tiny = x < 0.00001
    m = near & ~tiny
    t = x[tiny]
    out[tiny] = 1.0 - t * t / 4.0
    t = x[m]
    z = t * t
    out[m] = (
        (z - 5.78318596294678452118e00)
        * (z - 3.04712623436620863991e01)
        * _horner(z, C.BESSEL_J0_RP)
        / _horner(z, C.BESSEL_J0_RQ)
    )
    far = ~near
    out[far] = _j_asymptotic(
        x[far], C.BESSEL_J0_PP, C.BESSEL_J0_PQ, C.BESSEL_J0_QP, C.BESSEL_J0_QQ, _PIO4, 0, True
    )
    return out


def bessel_j1(x: np.ndarray) -> np.ndarray:
    """Return J1(x) elementwise in x's precision (torch's kernel; odd in x)."""
    neg = x < 0
    a = np.abs(x)
    out = np.empty_like(a)
    near = a <= 5.0
    t = a[near]
    z = t * t
    out[near] = (
        _horner(z, C.BESSEL_J1_RP)
        / _horner(z, C.BESSEL_J1_RQ)
        * t
        * (z - 1.46819706421238932572e01)
        * (z - 4.92184563216946036703e01)
    )
    far = ~near
    out[far] = _j_asymptotic(
        a[far], C.BESSEL_J1_PP, C.BESSEL_J1_PQ, C.BESSEL_J1_QP, C.BESSEL_J1_QQ, _3PIO4, 0, False
    )
    np.negative(out, out=out, where=neg)
    return out


def bessel_y0(x: np.ndarray) -> np.ndarray:
    """Return Y0(x) elementwise in x's precision (torch's kernel; NaN below 0)."""
    out = np.empty_like(x)
    near = x <= 5.0
    out[near & (x == 0)] = -np.inf
    out[near & (x < 0)] = np.nan
    m = near & (x > 0)
    t = x[m]
    z = t * t
    out[m] = _mad(
        _TWOOPI * _log(t), bessel_j0(t), _horner(z, C.BESSEL_Y0_YP) / _horner(z, C.BESSEL_Y0_YQ)
    )
    far = ~near
    out[far] = _j_asymptotic(
        x[far], C.BESSEL_J0_PP, C.BESSEL_J0_PQ, C.BESSEL_J0_QP, C.BESSEL_J0_QQ, _PIO4, 1, True
    )
    return out


def bessel_y1(x: np.ndarray) -> np.ndarray:
    """Return Y1(x) elementwise in x's precision (torch's kernel; NaN below 0)."""
    out = np.empty_like(x)
    near = x <= 5.0
    out[near & (x == 0)] = -np.inf
    out[near & (x < 0)] = np.nan
    m = near & (x > 0)
    t = x[m]
    z = t * t
    out[m] = _mad(
        t,
        _horner(z, C.BESSEL_Y1_YP) / _horner(z, C.BESSEL_Y1_YQ),
        _TWOOPI * _mad(bessel_j1(t), _log(t), -(1.0 / t)),
    )
    far = ~near
    out[far] = _j_asymptotic(
        x[far], C.BESSEL_J1_PP, C.BESSEL_J1_PQ, C.BESSEL_J1_QP, C.BESSEL_J1_QQ, _3PIO4, 1, False
    )
    return out


# ------------------------------------------------------------------------------ modified Bessel


def modified_bessel_i0(x: np.ndarray) -> np.ndarray:
    """Return I0(x) elementwise in x's precision (torch's kernel)."""
    a = np.abs(x)
    out = np.empty_like(a)
    near = a <= 8.0
    t = a[near]
    s, p = _clenshaw(t / 2.0 - 2.0, C.MODIFIED_BESSEL_I0_A)
    out[near] = _exp(t) * (0.5 * (s - p))
    far = ~near
    t = a[far]
    s, p = _clenshaw(32.0 / t - 2.0, C.MODIFIED_BESSEL_I0_B)
    out[far] = _exp(t) * (0.5 * (s - p)) / np.sqrt(t)
    return out


def modified_bessel_i1(x: np.ndarray) -> np.ndarray:
    """Return I1(x) elementwise in x's precision (torch's kernel; odd in x)."""
    a = np.abs(x)
    out = np.empty_like(a)
    near = a <= 8.0
    t = a[near]
    s, p = _clenshaw(t / 2.0 - 2.0, C.MODIFIED_BESSEL_I1_A)
    out[near] = 0.5 * (s - p) * t * _exp(t)
    far = ~near
    t = a[far]
    s, p = _clenshaw(32.0 / t - 2.0, C.MODIFIED_BESSEL_I1_B)
    out[far] = _exp(t) * (0.5 * (s - p)) / np.sqrt(t)
    np.negative(out, out=out, where=x < 0)
    return out


def _k(x, order, scaled):
    out = np.empty_like(x)
    out[x == 0] = np.inf
    out[x < 0] = np.nan
    near = (x > 0) & (x <= 2.0)
    t = x[near]
    if order == 0:
        s, p = _clenshaw(_mad(t, t, t.dtype.type(-2.0)), C.MODIFIED_BESSEL_K0_A)
        if scaled:
            r = _mad(-_log(0.5 * t), modified_bessel_i0(t), 0.5 * (s - p)) * _exp(t)
        elif t.dtype == np.float64:
            r = _mad(-_log(0.5 * t), modified_bessel_i0(t), 0.5 * (s - p))
        else:
            # torch writes log(0.5 * x) with a double 0.5: that term (and the difference) is
            # computed in double, then rounded
            t64 = t.astype(np.float64)
            i0 = modified_bessel_i0(t).astype(np.float64)
            r = fma(-np.log(0.5 * t64), i0, (0.5 * (s - p)).astype(np.float64))
    else:
        s, p = _clenshaw(_mad(t, t, t.dtype.type(-2.0)), C.MODIFIED_BESSEL_K1_A)
        r = _mad(_log(0.5 * t), modified_bessel_i1(t), 0.5 * (s - p) / t)
        if scaled:
            r = r * _exp(t)
    out[near] = r
    far = x > 2.0
    t = x[far]
    s, p = _clenshaw(
        8.0 / t - 2.0, C.MODIFIED_BESSEL_K0_B if order == 0 else C.MODIFIED_BESSEL_K1_B
    )
    if scaled:
        out[far] = 0.5 * (s - p) / np.sqrt(t)
    else:
        out[far] = _exp(-t) * (0.5 * (s - p)) / np.sqrt(t)
    out[np.isnan(x)] = np.nan
    return out


def modified_bessel_k0(x: np.ndarray) -> np.ndarray:
    """Return K0(x) elementwise in x's precision (torch's kernel)."""
    return _k(x, 0, False)


def modified_bessel_k1(x: np.ndarray) -> np.ndarray:
    """Return K1(x) elementwise in x's precision (torch's kernel)."""
    return _k(x, 1, False)


def scaled_modified_bessel_k0(x: np.ndarray) -> np.ndarray:
    """Return exp(x) K0(x) elementwise in x's precision (torch's kernel)."""
    return _k(x, 0, True)


def scaled_modified_bessel_k1(x: np.ndarray) -> np.ndarray:
    """Return exp(x) K1(x) elementwise in x's precision (torch's kernel)."""
    return _k(x, 1, True)


def spherical_bessel_j0(x: np.ndarray) -> np.ndarray:
    """Return sin(x) / x elementwise in x's precision (its series below 1/2, 0 at infinity)."""
    out = np.empty_like(x)
    small = np.abs(x) < 0.5
    t = x[small]
    z = t * t
    f = x.dtype.type
    s = np.full_like(z, f(1.0) / f(6227020800.0))
    for c in (39916800.0, 362880.0, 5040.0, 120.0, 6.0):
        sign = -1.0 if c in (39916800.0, 5040.0, 6.0) else 1.0
        s = _mad(z, s, f(sign) / f(c))
    out[small] = _mad(z, s, f(1.0))
    big = ~small
    t = x[big]
    out[big] = _sin(t) / t
    out[np.isinf(x)] = 0.0
    return out


# ------------------------------------------------------------------------------ Airy Ai


def airy_ai(x: np.ndarray) -> np.ndarray:
    """Return the Airy function Ai(x) elementwise in x's precision (torch's kernel)."""
    f = x.dtype.type
    out = np.empty_like(x)
    done = np.isinf(x)
    out[done] = np.nan
    m = ~done & (x > 103.892)
    out[m] = 0.0
    done |= m
    neg = ~done & (x < -2.09)
    t = x[neg]
    if t.size:
        zeta = -2.0 * t * np.sqrt(-t) / 3.0
        z = 1.0 / zeta
        zz = z * z
        afn = _horner(zz, C.AIRY_AI_AFN)
        afd = _horner(zz, C.AIRY_AI_AFD)
        agn = _horner(zz, C.AIRY_AI_AGN)
        agd = _horner(zz, C.AIRY_AI_AGD)
        th = -2.0 * t * np.sqrt(-t) / 3.0 + f(0.25) * f(math.pi)
        out[neg] = (
            5.64189583547756286948e-01
            / np.sqrt(np.sqrt(-t))
            * _mad(_sin(th), 1.0 + zz * afn / afd, -(_cos(th) * (z * agn / agd)))
        )
    done |= neg
    pos = ~done & (x >= 2.09)
    t = x[pos]
    if t.size:
        zeta = 2.0 * t * np.sqrt(t) / 3.0
        iz = 1.0 / zeta
        an = _horner(iz, C.AIRY_AI_AN)
        ad = _horner(iz, C.AIRY_AI_AD)
        out[pos] = 5.64189583547756286948e-01 * (an / ad) / (2.0 * np.sqrt(np.sqrt(t)) * _exp(zeta))
    done |= pos
    idx = np.flatnonzero(~done)
    if idx.size:
        out.reshape(-1)[idx] = _airy_series(x.reshape(-1)[idx])
    return out


def _airy_series(x):
    # Maclaurin series f, g until |m / f| <= eps, per element
    eps = np.finfo(x.dtype).eps
    f = np.ones_like(x)
    g = x.copy()
    m = np.ones_like(x)
    n = x.copy()
    z = x * x * x
    k = x.dtype.type(1.0)
    res_f = np.empty_like(x)
    res_g = np.empty_like(x)
    idx = np.arange(x.size)
    while idx.size:
        m = m * z
        k += 1.0
        m = m / k
        n = n * z
        k += 1.0
        n = n / k
        m = m / k
        f = f + m
        k += 1.0
        n = n / k
        g = g + n
        stop = ~(np.abs(m / f) > eps)
        if stop.any():
            res_f[idx[stop]] = f[stop]
            res_g[idx[stop]] = g[stop]
            keep = ~stop
            idx, f, g, m, n, z = idx[keep], f[keep], g[keep], m[keep], n[keep], z[keep]
    f = x.dtype.type
    return _mad(f(0.355028053887817239260), res_f, -(f(0.258819403792806798405) * res_g))


# ------------------------------------------------------------------------------ polynomials


def as_degree(n: np.ndarray) -> np.ndarray:
    """Return the int64 degrees torch casts ``n`` to (non-finite and huge values: negative)."""
    if n.dtype.kind in "iub":
        return n.astype(np.int64)
    ok = np.isfinite(n) & (np.abs(n) < 2.0**63)
    return np.where(ok, n, -1).astype(np.int64)


def _recurrence(out, todo, x, n, p, q, step):
    """Run ``r = step(k, p, q)`` for k = first.. per element while k <= its bound, writing the
    last ``r`` into ``out[todo]``. ``n`` holds each element's last k; elements stop early on NaN."""
    idx = np.flatnonzero(todo)
    x, n, p, q = x[idx], n[idx], p[idx], q[idx]
    k = 2
    while idx.size:
        go = (n >= k) & ~np.isnan(q)
        if not go.all():
            stop = ~go
            out[idx[stop]] = q[stop]
            idx, x, n, p, q = idx[go], x[go], n[go], p[go], q[go]
            if not idx.size:
                break
        r = step(k, x, p, q)
        p, q = q, r
        k += 1


def _poly_setup(x, n):
    x, n = np.broadcast_arrays(x, as_degree(n))
    return np.ascontiguousarray(x).reshape(-1), np.ascontiguousarray(n).reshape(-1)


def _cheb_step(k, y, p, q):
    return _mad(y + y, q, -p)


def chebyshev(x, n, kind: str, shifted: bool) -> np.ndarray:
    """Return the Chebyshev polynomial of ``kind`` (t, u, v, w) of degree ``n`` at ``x``,
    shifted to [0, 1] if ``shifted`` (torch's kernels, in x's precision)."""
    shape = np.broadcast_shapes(np.shape(x), np.shape(n))
    x, n = _poly_setup(x, n)
    f = x.dtype.type
    out = np.full(x.shape, np.nan, x.dtype)
    done = n < 0
    out[done] = 0.0
    y = (x + x - f(1.0)) if shifted else x
    even = n % 2 == 0
    nf = n.astype(x.dtype)
    # the values at the ends of the interval
    if shifted:
        top, bottom = x == 1.0, x == 0.0
    else:
        top = (np.abs(x) == 1.0) & (x > 0)
        bottom = (np.abs(x) == 1.0) & ~(x > 0)
    ends = ~done & (top | bottom)
    if kind == "t":
        end_top, end_bottom = np.ones_like(nf), np.where(even, 1.0, -1.0)
    elif kind == "u":
        end_top, end_bottom = nf + 1, np.where(even, nf + 1, -(nf + 1))
    elif kind == "v":
        end_top, end_bottom = np.ones_like(nf), np.where(even, nf + nf + 1, -(nf + nf + 1))
    else:
        end_top, end_bottom = nf + nf + 1, np.where(even, 1.0, -1.0)
    out[ends & top] = end_top[ends & top]
    out[ends & bottom] = end_bottom[ends & bottom]
    done |= ends
    # the trigonometric forms inside the interval for high degrees
    limit = {"t": 6, "u": 8, "v": 8, "w": 8}[kind] if not shifted else (4 if kind == "w" else 6)
    trig = ~done & (n > limit) & (np.abs(y) < 1.0)
    if trig.any():
        yt, nt = y[trig], nf[trig]
        th = _acos(yt)
        ev = even[trig]
        if kind == "t":
            r = _cos(nt * th)
        elif kind == "u":
            s = _sin(th)
            with np.errstate(all="ignore"):
                r = np.where(s != 0, _sin((nt + 1) * th) / s, (nt + 1) * _cos((nt + 1) * th) / yt)
        elif kind == "v":
            r = np.where(
                _sin(th / 2.0) != 1.0,
                _cos((nt + f(0.5)) * th) / _cos(th / 2.0),
                np.where(ev, nt + nt + 1, -(nt + nt + 1)),
            )
        else:
            alt = np.where(ev, 1.0, -1.0)
            if not shifted:
                alt = np.where(yt > 0, nt + nt + 1, alt)
            r = np.where(_cos(th / 2.0) != 1.0, _sin((nt + f(0.5)) * th) / _sin(th / 2.0), alt)
        out[trig] = r
        done |= trig
    m = ~done & (n == 0)
    out[m] = 1.0
    done |= m
    q = {"t": y, "u": y + y, "v": y + y - f(1.0), "w": y + y + f(1.0)}[kind]
    m = ~done & (n == 1)
    out[m] = q[m]
    done |= m
    _recurrence(out, ~done, y, n, np.ones_like(y), q, _cheb_step)
    return out.reshape(shape)


def hermite(x, n, physicists: bool) -> np.ndarray:
    """Return the Hermite polynomial H_n (``physicists``) or He_n at ``x`` (torch's kernels)."""
    shape = np.broadcast_shapes(np.shape(x), np.shape(n))
    x, n = _poly_setup(x, n)
    out = np.full(x.shape, np.nan, x.dtype)
    limit = 128 if x.dtype == np.float32 else 512
    out[n < 0] = 0.0
    out[n == 0] = 1.0
    q = (x + x) if physicists else x.copy()
    one = n == 1
    out[one] = q[one]
    todo = (n > 1) & (n <= limit)
    if physicists:

        def step(k, x, p, q):
            kk = 2 * (k - 1)
            return _mad(x + x, q, -(kk * p))
    else:

        def step(k, x, p, q):
            return _mad(x, q, -((k - 1) * p))

    # torch stops early only on NaN in the Chebyshev, Laguerre and Legendre loops
    _recurrence_all(out, todo, x, n, np.ones_like(x), q, step)
    return out.reshape(shape)


def _recurrence_all(out, todo, x, n, p, q, step):
    # as _recurrence, without the early stop on NaN (which changes nothing but speed)
    idx = np.flatnonzero(todo)
    x, n, p, q = x[idx], n[idx], p[idx], q[idx]
    k = 2
    while idx.size:
        go = n >= k
        if not go.all():
            stop = ~go
            out[idx[stop]] = q[stop]
            idx, x, n, p, q = idx[go], x[go], n[go], p[go], q[go]
            if not idx.size:
                break
        p, q = q, step(k, x, p, q)
        k += 1


def laguerre(x, n) -> np.ndarray:
    """Return the Laguerre polynomial L_n at ``x`` (torch's kernel)."""
    shape = np.broadcast_shapes(np.shape(x), np.shape(n))
    x, n = _poly_setup(x, n)
    f = x.dtype.type
    out = np.full(x.shape, np.nan, x.dtype)
    done = n < 0
    out[done] = 0.0
    m = ~done & ((np.abs(x) == 0.0) | (n == 0))
    out[m] = 1.0
    done |= m
    q = f(1.0) - x
    m = ~done & (n == 1)
    out[m] = q[m]
    done |= m

    def step(k, x, p, q):
        j = k - 1
        return _mad((j + j) + (f(1.0) - x), q, -(j * p)) / (j + 1)

    _recurrence(out, ~done, x, n, np.ones_like(x), q, step)
    return out.reshape(shape)


def legendre(x, n) -> np.ndarray:
    """Return the Legendre polynomial P_n at ``x`` (torch's kernel)."""
    shape = np.broadcast_shapes(np.shape(x), np.shape(n))
    x, n = _poly_setup(x, n)
    out = np.full(x.shape, np.nan, x.dtype)
    done = n < 0
    out[done] = 0.0
    ends = ~done & (np.abs(x) == 1.0)
    out[ends] = np.where((x > 0) | (n % 2 == 0), 1.0, -1.0)[ends]
    done |= ends
    m = ~done & (n == 0)
    out[m] = 1.0
    done |= m
    m = ~done & (n == 1)
    out[m] = x[m]
    done |= m

    def step(k, x, p, q):
        j = k - 1
        return _mad((j + j + 1) * x, q, -(j * p)) / (j + 1)

    _recurrence(out, ~done, x, n, np.ones_like(x), x.copy(), step)
    return out.reshape(shape)

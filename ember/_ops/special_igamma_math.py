"""Array kernels of the regularized incomplete gamma functions.

Ports of ATen's ``calc_igamma`` / ``calc_igammac`` (Cephes, with SciPy's asymptotic series) in
the input's precision (Hurwitz's zeta, which torch.special.zeta computes with the same
kernels, lives in special_math.py). Branches are masks; series stop per element as torch's
loops do.

Credit (see NOTICE): the algorithms of the Cephes Math Library (Copyright 1984-2000
Stephen L. Moshier, BSD licence) and SciPy's series (BSD 3-Clause), as ATen (PyTorch,
BSD 3-Clause) implements them.
"""

from __future__ import annotations

import numpy as np

from ember._ops import special_math as S
from ember._ops import special_tables as C
from ember._ops.special_bessel_math import _exp, _log, _mad, _via64

_log1p, _expm1 = _via64(np.log1p), _via64(np.expm1)


def _pow(x, y):
    if x.dtype == np.float32:
        return np.power(x.astype(np.float64), y).astype(np.float32)
    return np.power(x, y)


_LANCZOS_NUM = (
    0.006061842346248906525783753964555936883222,
    0.5098416655656676188125178644804694509993,
    19.51992788247617482847860966235652136208,
    449.9445569063168119446858607650988409623,
    6955.999602515376140356310115515198987526,
    75999.29304014542649875303443598909137092,
    601859.6171681098786670226533699352302507,
    3481712.15498064590882071018964774556468,
    14605578.08768506808414169982791359218571,
    43338889.32467613834773723740590533316085,
    86363131.28813859145546927288977868422342,
    103794043.1163445451906271053616070238554,
    56906521.91347156388090791033559122686859,
)
_LANCZOS_DEN = (
    1.0,
    66.0,
    1925.0,
    32670.0,
    357423.0,
    2637558.0,
    13339535.0,
    45995730.0,
    105258076.0,
    150917976.0,
    120543840.0,
    39916800.0,
    0.0,
)
_LANCZOS_G = 6.024680040776729583740234375
_EXP1 = 2.718281828459045
_PI_F = float(np.float32(np.pi))  # torch writes c10::pi<float> in the asymptotic series


def _consts(dt):
    if dt == np.float64:
        return 1.11022302462515654042e-16, 7.09782712893383996843e2, 4.503599627370496e15
    return 5.9604644775390625e-8, 88.72283905206835, 16777216.0


def _lgamma(x):
    return S.lgamma(x.astype(np.float64)).astype(x.dtype)


def _erfc(x):
    return S.erfc(x.astype(np.float64)).astype(x.dtype)


def _lanczos_sum_expg_scaled(a):
    # ratevl with M = N = 12: coefficients reversed at 1 / a for a > 1
    big = np.abs(a) > 1
    y = np.where(big, 1.0 / a, a)
    num = np.where(big, _LANCZOS_NUM[-1], _LANCZOS_NUM[0]).astype(a.dtype)
    den = np.where(big, _LANCZOS_DEN[-1], _LANCZOS_DEN[0]).astype(a.dtype)
    for i in range(1, 13):
        num = _mad(num, y, np.where(big, _LANCZOS_NUM[12 - i], _LANCZOS_NUM[i]).astype(a.dtype))
        den = _mad(den, y, np.where(big, _LANCZOS_DEN[12 - i], _LANCZOS_DEN[i]).astype(a.dtype))
    return num / den


def _fac(a, x):
    """x^a e^-x / Gamma(a), torch's ``_igam_helper_fac``."""
    _, maxlog, _ = _consts(a.dtype)
    out = np.empty_like(a)
    far = np.abs(a - x) > 0.4 * np.abs(a)
    aa, xx = a[far], x[far]
    ax = _mad(aa, _log(xx), -xx) - _lgamma(aa)
    out[far] = np.where(ax < -maxlog, 0.0, _exp(ax))
    near = ~far
    aa, xx = a[near], x[near]
    f = aa + _LANCZOS_G - 0.5
    res = np.sqrt(f / _EXP1) / _lanczos_sum_expg_scaled(aa)
    small = (aa < 200) & (xx < 200)
    r1 = _exp(aa - xx) * _pow(xx / f, aa)
    num = xx - aa - _LANCZOS_G + 0.5
    nf = num / f
    r2 = _exp(_mad(aa, _log1p(nf) - nf, xx * (0.5 - a.dtype.type(_LANCZOS_G)) / f))
    out[near] = res * np.where(small, r1, r2)
    return out


def _loop(state, body, maxiter=2000):
    """Run ``body(i, state) -> (state, stop)`` on shrinking per-element state dicts; return the
    final state of every element (in input order)."""
    n = next(iter(state.values())).size
    idx = np.arange(n)
    final = {k: np.empty_like(v) for k, v in state.items()}
    for i in range(maxiter):
        if not idx.size:
            break
        state, stop = body(i, state)
        if stop.any():
            for k, v in state.items():
                final[k][idx[stop]] = v[stop]
            keep = ~stop
            idx = idx[keep]
            state = {k: v[keep] for k, v in state.items()}
    for k, v in state.items():
        final[k][idx] = v
    return final


def _series(a, x):
    """torch's ``_igam_helper_series``: the lower function by its power series."""
    eps, _, _ = _consts(a.dtype)
    ax = _fac(a, x)
    out = np.zeros_like(a)
    nz = ax != 0.0
    if not nz.any():
        return out
    aa = a[nz]

    def body(i, s):
        r = s["r"] + 1.0
        c = s["c"] * (s["x"] / r)
        ans = s["ans"] + c
        return {"r": r, "c": c, "ans": ans, "x": s["x"]}, c <= eps * ans

    st = _loop({"r": aa.copy(), "c": np.ones_like(aa), "ans": np.ones_like(aa), "x": x[nz]}, body)
    out[nz] = st["ans"] * ax[nz] / aa
    return out


def _igamc_series(a, x):
    """torch's ``_igamc_helper_series`` (small x)."""
    eps, _, _ = _consts(a.dtype)

    def body(i, s):
        n = i + 1
        fac = s["fac"] * (-s["x"] / n)
        term = fac / (s["a"] + n)
        tot = s["sum"] + term
        return {"fac": fac, "sum": tot, "x": s["x"], "a": s["a"]}, np.abs(term) <= eps * np.abs(tot)

    st = _loop(
        {"fac": np.ones_like(a), "sum": np.zeros_like(a), "x": x, "a": a}, body, maxiter=1999
    )
    logx = _log(x)
    term = -_expm1(_mad(a, logx, -_lgamma(1 + a)))
    return term - _exp(_mad(a, logx, -_lgamma(a))) * st["sum"]


def _asymptotic(a, x, igam):
    """torch's ``_igam_helper_asymptotic_series`` (Temme's expansion near x = a)."""
    eps, _, _ = _consts(a.dtype)
    dt = a.dtype.type
    lam = x / a
    sigma = (x - a) / a
    e = np.sqrt(-2 * (_log1p(sigma) - sigma))
    eta = np.where(lam > 1, e, np.where(lam < 1, -e, 0.0)).astype(a.dtype)
    sgn = -1 if igam else 1
    res = 0.5 * _erfc(sgn * eta * np.sqrt(a / 2))
    etapow = [np.ones_like(a)]
    for _ in range(1, 25):
        etapow.append(eta * etapow[-1])
    total = np.zeros_like(a)
    afac = np.ones_like(a)
    absold = np.full_like(a, np.inf)
    live = np.ones(a.shape, bool)
    for k in range(25):
        d = C.IGAM_D[k]
        ck = np.full_like(a, d[0])
        inner = np.ones(a.shape, bool)
        for n in range(1, 25):
            term = dt(d[n]) * etapow[n]
            ck = np.where(inner, _mad(dt(d[n]), etapow[n], ck), ck)
            inner &= ~(np.abs(term) < eps * np.abs(ck))
            if not inner.any():
                break
        term = ck * afac
        absterm = np.abs(term)
        live &= ~(absterm > absold)
        total = np.where(live, total + term, total)
        live &= ~(absterm < eps * np.abs(total))
        if not live.any():
            break
        absold = np.where(live, absterm, absold)
        afac = np.where(live, afac / a, afac)
    return res + sgn * _exp(-0.5 * a * eta * eta) * total / np.sqrt(2 * _PI_F * a)


def _contfrac(a, x):
    """torch's ``_igamc_helper_continued_fraction`` (the upper function for large x)."""
    eps, _, big = _consts(a.dtype)
    biginv = 2.22044604925031308085e-16 if a.dtype == np.float64 else 5.9604644775390625e-8
    ax = _fac(a, x)
    out = np.zeros_like(a)
    nz = ax != 0.0
    if not nz.any():
        return out
    aa, xx = a[nz], x[nz]
    y = 1.0 - aa
    z = xx + y + 1.0
    pkm1 = xx + 1.0
    qkm1 = z * xx

    def body(i, s):
        c = s["c"] + 1.0
        y = s["y"] + 1.0
        z = s["z"] + 2.0
        yc = y * c
        pk = _mad(s["pkm1"], z, -(s["pkm2"] * yc))
        qk = _mad(s["qkm1"], z, -(s["qkm2"] * yc))
        ok = qk != 0
        r = pk / np.where(ok, qk, 1.0)
        t = np.where(ok, np.abs((s["ans"] - r) / r), 1.0)
        ans = np.where(ok, r, s["ans"])
        pkm2, pkm1, qkm2, qkm1 = s["pkm1"], pk, s["qkm1"], qk
        scale = np.abs(pk) > big
        f = np.where(scale, biginv, 1.0).astype(a.dtype)
        st = {
            "c": c,
            "y": y,
            "z": z,
            "pkm2": pkm2 * f,
            "pkm1": pkm1 * f,
            "qkm2": qkm2 * f,
            "qkm1": qkm1 * f,
            "ans": ans,
        }
        return st, t <= eps

    st = _loop(
        {
            "c": np.zeros_like(aa),
            "y": y,
            "z": z,
            "pkm2": np.ones_like(aa),
            "pkm1": pkm1,
            "qkm2": xx.copy(),
            "qkm1": qkm1,
            "ans": pkm1 / qkm1,
        },
        body,
    )
    out[nz] = st["ans"] * ax[nz]
    return out


def _edges(a, x, upper):
    """Return (out, done): torch's special cases in its order (NaN for NaN inputs)."""
    out = np.full(a.shape, np.nan, a.dtype)
    done = (x < 0) | (a < 0)
    m = ~done & (a == 0)
    out[m & (x > 0)] = 0.0 if upper else 1.0
    done |= m
    m = ~done & (x == 0)
    out[m] = 1.0 if upper else 0.0
    done |= m
    m = ~done & np.isinf(a)
    out[m & ~np.isinf(x)] = 1.0 if upper else 0.0
    done |= m
    m = ~done & np.isinf(x)
    out[m] = 0.0 if upper else 1.0
    done |= m
    done |= np.isnan(a) | np.isnan(x)
    return out, done


def _asymptotic_mask(a, x):
    r = np.abs(x - a) / a
    return ((a > 20.0) & (a < 200.0) & (r < 0.3)) | ((a > 200.0) & (r < 4.5 / np.sqrt(a)))


def _igammac_core(a, x):
    out = np.empty_like(a)
    asym = _asymptotic_mask(a, x)
    out[asym] = _asymptotic(a[asym], x[asym], False)
    rest = ~asym
    big = rest & (x > 1.1)
    lower = big & (x < a)
    out[lower] = 1.0 - _series(a[lower], x[lower])
    cf = big & ~(x < a)
    out[cf] = _contfrac(a[cf], x[cf])
    small = rest & (x <= 0.5)
    with np.errstate(divide="ignore"):
        lo = small & (-0.4 / np.log(x.astype(np.float64)) < a)
    out[lo] = 1.0 - _series(a[lo], x[lo])
    s2 = small & ~lo
    out[s2] = _igamc_series(a[s2], x[s2])
    mid = rest & ~big & ~small
    lo = mid & (x * 1.1 < a)
    out[lo] = 1.0 - _series(a[lo], x[lo])
    s2 = mid & ~lo
    out[s2] = _igamc_series(a[s2], x[s2])
    return out


def _work_dtype(a):
    return a.dtype if a.dtype in (np.float32, np.float64) else np.dtype(np.float32)


def igammac(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Return the regularized upper incomplete gamma function Q(a, x) (torch's kernel)."""
    dt = a.dtype
    w = _work_dtype(a)
    a, x = np.broadcast_arrays(a.astype(w), x.astype(w))
    shape = a.shape
    a, x = a.reshape(-1), x.reshape(-1)
    out, done = _edges(a, x, True)
    i = np.flatnonzero(~done)
    out[i] = _igammac_core(a[i], x[i])
    return out.reshape(shape).astype(dt, copy=False)


def igamma(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Return the regularized lower incomplete gamma function P(a, x) (torch's kernel)."""
    dt = a.dtype
    w = _work_dtype(a)
    a, x = np.broadcast_arrays(a.astype(w), x.astype(w))
    shape = a.shape
    a, x = a.reshape(-1), x.reshape(-1)
    out, done = _edges(a, x, False)
    i = np.flatnonzero(~done)
    aa, xx = a[i], x[i]
    r = np.empty_like(aa)
    asym = _asymptotic_mask(aa, xx)
    r[asym] = _asymptotic(aa[asym], xx[asym], True)
    up = ~asym & (xx > 1.0) & (xx > aa)
    r[up] = 1.0 - _igammac_core(aa[up], xx[up])
    ser = ~asym & ~up
    r[ser] = _series(aa[ser], xx[ser])
    out[i] = r
    return out.reshape(shape).astype(dt, copy=False)

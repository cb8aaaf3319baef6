"""torch's CPU random numbers: its Mersenne Twister stream and its sampling kernels.

torch's CPU generator is a 32-bit MT19937 seeded as ``std::mt19937(seed)`` (the low 32 bits of
the seed). NumPy's ``MT19937`` bit generator is the same engine: seeded the same way (through
``RandomState``'s classic seeding) it yields the same 32-bit words. On top of that stream,
the kernels here redo what torch's CPU kernels do with the words, in the same order:

- ``random()`` is one word, ``random64()`` two (``first << 32 | second``);
- uniform floats take the low ``digits`` bits of a word (24 for float32 and the half types,
  53 of a ``random64`` for float64) scaled to [0, 1), then ``x * (to - from) + from`` with
  one rounding (torch's compiler fuses it into an FMA);
- normal samples: fewer than 16 elements draw one at a time from torch's Box-Muller
  ``normal_distribution<double>`` (two float64 uniforms per pair, the second value cached in
  the generator); 16 or more are filled with uniforms and transformed 16 at a time (the first
  8 with the last 8), the last 16 redrawn when the size is not a multiple of 16; for float32
  (and the half types, computed in float) torch's AVX2 kernel evaluates log, sin and cos with
  its own Cephes polynomials, reproduced here step by step;
- integers in [from, to) are ``word % range + from`` (``random64`` when the range needs more
  than 32 bits), a permutation is torch's Fisher-Yates swap loop, Bernoulli draws compare a
  float64 uniform (scalar ``p``) or a uniform of ``p``'s dtype (tensor ``p``) with ``p``, on
  every CPU (checked against torch 2.13 on AMD EPYC and on an AVX-512 Intel Xeon with MKL).

So ``manual_seed(s)`` followed by these calls gives torch's numbers: bit for bit for integers,
permutations, Bernoulli masks (dropout), uniforms and float32/half normals; float64 normals of
16 or more elements now and then differ in the last bit (torch calls the C library's log, sin
and cos, ember NumPy's).

Everything here takes the generator (for its bit generator and normal cache) and returns
NumPy arrays of ``n`` elements in the order torch fills a contiguous tensor.

Credit (see NOTICE): the sampling transformations are PyTorch's (BSD 3-Clause), its float32
log/sin/cos the Cephes polynomials it uses (Stephen L. Moshier, BSD licence).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from ember._core.fma import fma as _fma
from ember._core.fma import fma32 as _fma32

if TYPE_CHECKING:
    from ember.random import Generator

_U32 = np.uint32
_U64 = np.uint64
_MASK53 = _U64((1 << 53) - 1)
_MASK24 = _U32((1 << 24) - 1)
_TWO_PI = 2.0 * math.pi


def mt19937_key(seed: int) -> np.ndarray:
    """The 624-word state of ``std::mt19937(seed)`` (torch seeds with the low 32 bits)."""
    return np.random.RandomState(seed & 0xFFFFFFFF).get_state()[1]


def words32(bitgen: np.random.MT19937, n: int) -> np.ndarray:
    """``n`` calls of torch's ``random()``: uint32 words."""
    return bitgen.random_raw(n).astype(_U32)


def words64(bitgen: np.random.MT19937, n: int) -> np.ndarray:
    """``n`` calls of torch's ``random64()``: two words each, the first one high."""
    r = bitgen.random_raw(2 * n)
    return (r[0::2] << _U64(32)) | r[1::2]


def uniform01(gen: Generator, n: int, dt: np.dtype) -> np.ndarray:
    """torch's ``uniform_real_distribution<dt>(0, 1)`` draws, as float64 (float64 dtype) or
    float32 values (every other floating dtype)."""
    if dt == np.float64:
        return (words64(gen._bitgen, n) & _MASK53).astype(np.float64) * 2.0**-53
    return (words32(gen._bitgen, n) & _MASK24).astype(np.float32) * np.float32(2.0**-24)


def uniform(gen: Generator, n: int, low: float, high: float, dt: np.dtype) -> np.ndarray:
    """torch's ``uniform_(from, to)`` of a real floating dtype ``dt``."""
    if dt == np.float64:
        return _fma(uniform01(gen, n, dt), high - low, low)
    lo, hi = np.float32(low), np.float32(high)  # (the half types too: torch works in float)
    width = float(hi - lo)
    x = uniform01(gen, n, dt).astype(np.float64)
    return (x * width + float(lo)).astype(np.float32).astype(dt)  # exact product: one rounding


_F = np.float32
_LOG_POLY = (
    7.0376836292e-2, -1.1514610310e-1, 1.1676998740e-1, -1.2420140846e-1, 1.4249322787e-1,
    -1.6668057665e-1, 2.0000714765e-1, -2.4999993993e-1, 3.3333331174e-1,
)  # fmt: skip


def _log_f32(x: np.ndarray) -> np.ndarray:
    """torch's AVX2 ``log256_ps`` for x in (0, 1] (the Cephes logf polynomial, float32 steps,
    multiply-adds fused as GCC fuses them)."""
    bits = x.view(np.int32)
    e = ((bits >> 23) - 0x7F).astype(_F) + _F(1)
    m = ((bits & ~0x7F800000) | np.int32(0x3F000000)).view(_F)  # mantissa in [0.5, 1)
    small = m < _F(0.707106781186547524)
    m = m - _F(1) + np.where(small, m, _F(0))
    e -= small.astype(_F)
    z = m * m
    y = np.full_like(m, _F(_LOG_POLY[0]))
    for c in _LOG_POLY[1:]:
        y = _fma32(y, m, _F(c))
    y = y * m
    y = _fma32(y, z, e * _F(-2.12194440e-4))
    y = _fma32(z, _F(-0.5), y)
    return _fma32(e, _F(0.693359375), m + y)


def _sincos_f32(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """torch's AVX2 ``sincos256_ps`` for x >= 0 (Cephes sinf/cosf, float32 steps)."""
    j = (x * _F(1.27323954473516)).astype(np.int32)
    j = (j + 1) & ~1
    y = j.astype(_F)
    for c in (-0.78515625, -2.4187564849853515625e-4, -3.77489497744594108e-8):
        x = _fma32(y, _F(c), x)  # x - j * pi/4 in three parts
    z = x * x
    cos = _fma32(np.full_like(x, _F(2.443315711809948e-5)), z, _F(-1.388731625493765e-3))
    cos = _fma32(cos, z, _F(4.166664568298827e-2)) * z
    cos = _fma32(cos, z, -(z * _F(0.5))) + _F(1)
    sin = _fma32(np.full_like(x, _F(-1.9515295891e-4)), z, _F(8.3321608736e-3))
    sin = _fma32(sin, z, _F(-1.6666654611e-1)) * z
    sin = _fma32(sin, x, x)
    swap = (j & 2) != 0
    s, c = np.where(swap, cos, sin), np.where(swap, sin, cos)
    s = np.where((j & 4) != 0, -s, s)
    c = np.where(((~(j - 2)) & 4) != 0, -c, c)
    return s, c


def _box_muller16(u: np.ndarray, mean: float, std: float, dt: np.dtype) -> np.ndarray:
    """torch's ``NormalFill16`` on rows of 16 uniforms: the first 8 with the last 8 (float64:
    the scalar template; float: the AVX2 kernel, whose log/sincos are emulated bit for bit)."""
    if dt == np.float64:
        radius = np.sqrt(-2.0 * np.log(1.0 - u[:, :8]))
        theta = _TWO_PI * u[:, 8:]
        out = np.concatenate([radius * np.cos(theta), radius * np.sin(theta)], axis=1)
        return out if (mean, std) == (0.0, 1.0) else _fma(out, std, mean)
    radius = np.sqrt(_F(-2.0) * _log_f32(_F(1.0) - u[:, :8]))
    sin, cos = _sincos_f32(_F(_TWO_PI) * u[:, 8:])
    out = np.concatenate([radius * cos, radius * sin], axis=1)
    return _fma32(out, _F(std), _F(mean)).astype(dt)


def fill_order(a: np.ndarray) -> tuple | None:
    """The axes of ``a`` from outermost to innermost in memory when that is not C order (a
    permuted view): torch's kernels fill a tensor in memory order. None for C order."""
    if a.ndim < 2 or a.flags.c_contiguous:
        return None
    order = tuple(sorted(range(a.ndim), key=lambda i: -abs(a.strides[i]) if a.shape[i] > 1 else 0))
    return None if order == tuple(range(a.ndim)) else order


def dense(a: np.ndarray) -> bool:
    """True when ``a`` covers its memory without gaps (torch's non-overlapping-and-dense)."""
    expect = a.itemsize
    for i in sorted(range(a.ndim), key=lambda i: abs(a.strides[i])):
        if a.shape[i] == 1:
            continue
        if abs(a.strides[i]) != expect:
            return False
        expect *= a.shape[i]
    return True


def normal(
    gen: Generator, n: int, mean: float, std: float, dt: np.dtype, serial: bool = False
) -> np.ndarray:
    """torch's ``normal_(mean, std)`` of a real floating dtype ``dt`` (``serial``: the tensor is
    not contiguous, so torch draws element by element)."""
    if n < 16 or serial:
        return _normal_scalar(gen, n, mean, std).astype(dt)
    m = n // 16 * 16
    # float/double fill the whole tensor with uniforms first; the half types draw only the
    # full blocks of 16 (into a float buffer) before the redrawn tail
    data = uniform01(gen, n if dt in (np.float32, np.float64) else m, dt)
    out = np.empty(n, dtype=dt)
    out[:m] = _box_muller16(data[:m].reshape(-1, 16), mean, std, dt).reshape(-1)
    if n != m:  # torch redraws the last 16 values
        tail = uniform01(gen, 16, dt)
        out[n - 16 :] = _box_muller16(tail.reshape(1, 16), mean, std, dt).reshape(-1)
    return out


def _normal_scalar(gen: Generator, n: int, mean: float, std: float) -> np.ndarray:
    """torch's ``normal_distribution<double>``: Box-Muller pairs, the sine half cached."""
    out = np.empty(n, dtype=np.float64)
    i = 0
    if n and gen._normal_cache is not None:
        out[0] = gen._normal_cache * std + mean
        gen._normal_cache = None
        i = 1
    pairs = (n - i + 1) // 2
    if pairs:
        u = uniform01(gen, 2 * pairs, np.dtype(np.float64))
        radius = np.sqrt(-2.0 * np.log1p(-u[1::2]))
        theta = _TWO_PI * u[0::2]
        both = np.empty(2 * pairs, dtype=np.float64)
        both[0::2] = radius * np.cos(theta)
        both[1::2] = radius * np.sin(theta)
        out[i:] = both[: n - i] * std + mean
        if (n - i) % 2:  # the last pair's sine waits for the next call
            gen._normal_cache = float(both[-1])
    return out


def randint(gen: Generator, n: int, low: int, high: int) -> np.ndarray:
    """torch's ``random_(from, to)``: int64 values ``word % (to - from) + from``."""
    span = high - low
    if span >= 1 << 32:
        return (words64(gen._bitgen, n) % _U64(span)).astype(np.int64) + low
    return (words32(gen._bitgen, n).astype(np.int64) % span) + low


def randperm(gen: Generator, n: int) -> np.ndarray:
    """torch's CPU ``randperm``: the Fisher-Yates swaps ``i <-> i + word % (n - i)``."""
    if n < 2:
        return np.arange(n, dtype=np.int64)
    steps = np.arange(n - 1, dtype=np.int64)
    if n < 1 << 32:
        z = words32(gen._bitgen, n - 1).astype(np.int64) % (n - steps)
    else:
        z = (words64(gen._bitgen, n - 1) % (n - steps).astype(_U64)).astype(np.int64)
    perm = list(range(n))
    for i, j in enumerate((z + steps).tolist()):
        perm[i], perm[j] = perm[j], perm[i]
    return np.array(perm, dtype=np.int64)


def bernoulli(gen: Generator, p, shape: tuple) -> np.ndarray:
    """torch's ``bernoulli_(p)``: True where a uniform draw is below ``p`` (a float64 draw
    for a scalar ``p``, one of ``p``'s dtype per element for an array ``p``)."""
    n = math.prod(shape)
    if isinstance(p, np.ndarray):
        dt = np.dtype(np.float64) if p.dtype == np.float64 else np.dtype(np.float32)
        u = uniform01(gen, n, dt).reshape(shape)
        return u < np.broadcast_to(p, shape).astype(dt, copy=False)
    return (uniform01(gen, n, np.dtype(np.float64)) < p).reshape(shape)


# ---------------------------------------------------------------------------------------------
# element-by-element samplers (torch's serial CPU kernels): plain Python floats, glibc's math


def _uniform_double(gen: Generator) -> float:
    """One ``uniform_real_distribution<double>(0, 1)`` draw."""
    hi, lo = gen._bitgen.random_raw(2).tolist()
    return (((hi << 32) | lo) & ((1 << 53) - 1)) * 2.0**-53


def _normal_double(gen: Generator) -> float:
    """One ``normal_distribution<double>(0, 1)`` draw (sharing the generator's cache)."""
    cached = gen._normal_cache
    if cached is not None:
        gen._normal_cache = None
        return cached
    u1, u2 = _uniform_double(gen), _uniform_double(gen)
    r = math.sqrt(-2.0 * math.log1p(-u2))
    theta = _TWO_PI * u1
    gen._normal_cache = r * math.sin(theta)
    return r * math.cos(theta)


_THIRD_F32 = float(np.float32(1.0) / np.float32(3.0))
_C0331_F32 = float(np.float32(0.0331))


def _gamma_one(gen: Generator, alpha: float) -> float:
    """torch's ``sample_gamma``: Marsaglia and Tsang's method, alpha < 1 boosted by a power of
    a uniform."""
    scale = 1.0
    if alpha < 1.0:
        if alpha == 0.0:
            return 0.0
        scale *= (1.0 - _uniform_double(gen)) ** (1.0 / alpha)
        alpha += 1.0
    d = alpha - _THIRD_F32  # (torch writes float literals: 1.0f / 3.0f, 0.0331f)
    c = 1.0 / math.sqrt(9.0 * d)
    while True:
        while True:
            x = _normal_double(gen)
            y = 1.0 + c * x
            if y > 0:
                break
        v = y * y * y
        u = 1.0 - _uniform_double(gen)
        xx = x * x
        if u < 1.0 - _C0331_F32 * xx * xx:
            return scale * d * v
        if math.log(u) < 0.5 * xx + d * (1.0 - v + math.log(v)):
            return scale * d * v


def standard_gamma(gen: Generator, alpha: np.ndarray) -> np.ndarray:
    """torch's ``_standard_gamma`` (and the gamma draws of ``_sample_dirichlet``): float64
    Gamma(alpha, 1) samples, one element after the other, at least the smallest normal float."""
    flat = np.asarray(alpha, dtype=np.float64).reshape(-1).tolist()
    out = [max(_gamma_one(gen, a), 2.2250738585072014e-308) for a in flat]
    return np.array(out, dtype=np.float64).reshape(np.shape(alpha))


def _poisson_one(gen: Generator, lam: float) -> int:
    """torch's ``sample_poisson``: Hoermann's transformed rejection for lambda >= 10, else the
    product of uniforms."""
    if lam >= 10.0:
        slam = math.sqrt(lam)
        loglam = math.log(lam)
        b = 0.931 + 2.53 * slam
        a = -0.059 + 0.02483 * b
        invalpha = 1.1239 + 1.1328 / (b - 3.4)
        vr = 0.9277 - 3.6224 / (b - 2.0)
        while True:
            u = _uniform_double(gen) - 0.5
            v = _uniform_double(gen)
            us = 0.5 - abs(u)
            k = math.floor((2.0 * a / us + b) * u + lam + 0.43)
            if us >= 0.07 and v <= vr:
                return k
            if k < 0 or (us < 0.013 and v > us):
                continue
            lhs = math.log(v) + math.log(invalpha) - math.log(a / (us * us) + b)
            if lhs <= -lam + k * loglam - math.lgamma(k + 1.0):
                return k
    if lam == 0.0:
        return 0
    enlam = math.exp(-lam)
    x, prod = 0, 1.0
    while True:
        prod *= _uniform_double(gen)
        if prod > enlam:
            x += 1
        else:
            return x


def poisson(gen: Generator, lam: np.ndarray) -> np.ndarray:
    """torch's ``poisson``: float64 counts, one element after the other."""
    flat = np.asarray(lam, dtype=np.float64).reshape(-1).tolist()
    return np.array([_poisson_one(gen, x) for x in flat], dtype=np.float64).reshape(np.shape(lam))


_STIRLING_TAIL = (
    0.0810614667953272, 0.0413406959554092, 0.0276779256849983, 0.02079067210376509,
    0.0166446911898211, 0.0138761288230707, 0.0118967099458917, 0.0104112652619720,
    0.00925546218271273, 0.00833056343336287,
)  # fmt: skip


def _stirling_tail(k: float) -> float:
    if k <= 9:
        return _STIRLING_TAIL[int(k)]
    kp1sq = (k + 1) * (k + 1)
    return (1.0 / 12 - (1.0 / 360 - 1.0 / 1260 / kp1sq) / kp1sq) / (k + 1)


def _binomial_inversion(gen: Generator, count: float, prob: float) -> float:
    geom_sum, num = 0.0, 0.0
    logprob = math.log1p(-prob)
    while True:
        u = _uniform_double(gen)
        geom_sum += math.ceil(math.log(u) / logprob) if u > 0 else math.inf
        if geom_sum > count:
            return num
        num += 1


def _btrs(gen: Generator, count: float, prob: float, fr) -> float:
    """Hoermann's transformed rejection (BTRS), as torch writes it (``fr`` rounds what torch
    computes in the inputs' dtype)."""
    stddev = math.sqrt(fr(fr(count * prob) * fr(1 - prob)))
    b = 1.15 + 2.53 * stddev
    a = -0.0873 + 0.0248 * b + 0.01 * prob
    c = fr(count * prob) + 0.5
    v_r = 0.92 - 4.2 / b
    r = fr(prob / fr(1 - prob))
    alpha = (2.83 + 5.1 / b) * stddev
    m = math.floor(fr(fr(count + 1) * prob))
    while True:
        u = _uniform_double(gen) - 0.5
        v = _uniform_double(gen)
        us = 0.5 - abs(u)
        k = math.floor((2 * a / us + b) * u + c)
        if k < 0 or k > count:
            continue
        if us >= 0.07 and v <= v_r:
            return k
        v = math.log(v * alpha / (a / (us * us) + b))
        upper = (
            (m + 0.5) * math.log((m + 1) / (r * (count - m + 1)))
            + (count + 1) * math.log((count - m + 1) / (count - k + 1))
            + (k + 0.5) * math.log(r * (count - k + 1) / (k + 1))
            + _stirling_tail(m)
            + _stirling_tail(count - m)
            - _stirling_tail(k)
            - _stirling_tail(count - k)
        )
        if v <= upper:
            return k


def _binomial_one(gen: Generator, count: float, prob: float, fr) -> float:
    """torch's ``sample_binomial``: BTRS when the mean is 10 or more, else inversion."""
    if count <= 0.0 or prob <= 0.0:
        return 0.0
    if prob >= 1.0:
        return count
    if prob <= 0.5:
        if fr(count * prob) >= 10.0:
            return _btrs(gen, count, prob, fr)
        return _binomial_inversion(gen, count, prob)
    if prob > 0.5:
        q = fr(1.0 - prob)
        if fr(count * q) >= 10.0:
            return count - _btrs(gen, count, q, fr)
        return count - _binomial_inversion(gen, count, q)
    return math.nan


def binomial(gen: Generator, count: np.ndarray, prob: np.ndarray) -> np.ndarray:
    """torch's ``binomial``: counts drawn element by element (in the inputs' dtype)."""
    shape = np.broadcast_shapes(np.shape(count), np.shape(prob))
    c = np.broadcast_to(count, shape).reshape(-1)
    p = np.broadcast_to(prob, shape).reshape(-1)
    dt = np.result_type(c, p)
    fr = float if dt == np.float64 else (lambda v: float(dt.type(v)))
    out = [_binomial_one(gen, float(n), float(q), fr) for n, q in zip(c.tolist(), p.tolist())]
    return np.array(out, dtype=np.float64).reshape(shape)

"""Ranges: ``arange``, ``linspace``, ``logspace``, value for value as torch's CPU kernels.

``arange`` computes ``start + i * step`` with a fused multiply-add, in 32-byte vector lanes
(``base + j * step``) and a scalar tail, split across threads as ``at::parallel_for`` splits
it; ``linspace`` fills the first half forward from ``start`` and the second half backward from
``end``, in the output dtype's arithmetic; ``logspace`` raises ``base`` to those exponents with
libm's ``pow``.
"""

from __future__ import annotations

import math
import operator
import os

import numpy as np

from ember._core import dtype as D
from ember._core.device import as_device
from ember._core.dtype import scalar_type_name
from ember._core.fma import SPLIT
from ember._core.fma import fma as _fma
from ember._core.fma import fma32 as _fma32
from ember._core.tensor import Tensor
from ember._ops.convert import scalar_overflow, scalar_value
from ember._ops.creation import _finish, _out_dtype, _result, _type_name
from ember._ops.registry import composite, publish

# ------------------------------------------------------------------------------ ranges

_VEC_BYTES = 32  # torch's arange kernel writes 32-byte vectors (AVX2 and the generic build)
_GRAIN = 32768  # at::internal::GRAIN_SIZE: below it parallel_for runs on one thread
_INT_FAST = 1 << 61  # integer aranges within this range cannot overflow int64


def _torch_threads() -> int:
    # torch's default intra-op thread count decides where parallel_for splits a range, and so
    # which elements of a long arange fall in vector lanes
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        v = os.environ.get(var, "")
        if v.isdigit() and int(v) > 0:
            return int(v)
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


_threads = [None]


def _fma_index(a: float, i: np.ndarray, c) -> np.ndarray:
    """``_fma(a, i, c)`` for a scalar ``a`` and integer ``i`` below 2**26: splitting ``a`` in
    two halves of 26 bits makes both partial products exact, which saves most of the work."""
    if not (math.isfinite(a) and abs(a) < 1e290) or (i.size and i.max() >= 1 << 26):
        return _fma(a, i, c)
    t = a * SPLIT
    ah = t - (t - a)
    al = a - ah
    fi = i.astype(np.float64)
    p = ah * fi  # exact
    q = al * fi  # exact
    s = p + c
    z = s - p
    r = s + (((p - (s - z)) + (c - z)) + q)
    return r if np.isfinite(r).all() else np.where(np.isfinite(r), r, p + q + c)


def _as_scalar(fn: str, name: str, v):
    """Return a range bound as a Python number (0-dim tensors and NumPy scalars included)."""
    if isinstance(v, Tensor):
        if v._data.size != 1:
            raise RuntimeError(
                f"a Tensor with {v._data.size} elements cannot be converted to Scalar"
            )
        return v.item()
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, (int, float, complex)):
        return v
    raise TypeError(f"{fn}(): argument '{name}' must be Number, not {_type_name(v)}")


def _to_double(v) -> float:
    if isinstance(v, complex):
        if v.imag != 0:
            raise scalar_overflow(D.float64)
        v = v.real
    return float(v)


def _lanes(n: int, dt: D.dtype):
    """Return (index, in_vector, lane) of each element of a length-``n`` arange kernel run."""
    idx = np.arange(n, dtype=np.int64)
    v = _VEC_BYTES // dt.itemsize
    if _threads[0] is None:
        _threads[0] = _torch_threads()
    nt = min(_threads[0], -(-n // _GRAIN)) if n > _GRAIN else 1
    chunk = -(-n // nt)
    k = idx % chunk
    m = np.minimum(n - (idx - k), chunk)
    in_vec = k < (m // (2 * v)) * (2 * v)
    return idx, in_vec, k % v


def _product_is_exact(step: float, n: int) -> bool:
    # step * i is exact in float64 for every i < n: then fma(step, i, c) == step * i + c
    num, den = float(step).as_integer_ratio()
    num = abs(num)
    if num:
        num >>= (num & -num).bit_length() - 1
    return num.bit_length() + max(n - 1, 1).bit_length() <= 53


def _arange_values(start, step, n: int, dt: D.dtype) -> np.ndarray:
    if not dt.is_floating_point:
        s = int(scalar_value(start, D.int64))
        st = int(scalar_value(step, D.int64))
        return (s + st * np.arange(n, dtype=np.int64)).astype(dt.np)
    idx = np.arange(n, dtype=np.int64)
    if n >= 2 * (_VEC_BYTES // dt.itemsize):
        _, in_vec, lane = _lanes(n, dt)
        lane = np.where(in_vec, lane, 0)  # the scalar tail: lane 0 of its own base
    else:
        lane = None  # too short for a vector: all scalar
    if dt.itemsize == 2:  # half and bfloat16 accumulate in float32
        s, st = scalar_value(start, D.float32), scalar_value(step, D.float32)
        if lane is None:
            return _fma32(st, idx.astype(np.float32), s).astype(dt.np)
        base = _fma32(st, (idx - lane).astype(np.float32), s).astype(dt.np).astype(np.float32)
        return _fma32(lane.astype(np.float32), st, base).astype(dt.np)
    s, st = _to_double(start), _to_double(step)
    if _product_is_exact(st, n):
        fma = lambda a, i, c: a * i + c  # noqa: E731 - exact products need no fusing
    else:
        fma = _fma_index
    if lane is None:
        out = fma(st, idx, s)
    else:
        base = fma(st, idx - lane, s)
        if dt is D.float32:
            base = base.astype(np.float32).astype(np.float64)
        out = fma(st, lane, base)
    return out.astype(dt.np, copy=False)


def _trunc_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def _arange_size(start, end, step, dt: D.dtype) -> int:
    ds, de, dstep = _to_double(start), _to_double(end), _to_double(step)
    if not (dstep > 0 or dstep < 0):
        raise RuntimeError("step must be nonzero")
    if not (math.isfinite(ds) and math.isfinite(de)):
        raise RuntimeError(f"unsupported range: {ds:g} -> {de:g}")
    if not ((dstep > 0 and de >= ds) or (dstep < 0 and de <= ds)):
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    if dt is D.int64:
        xs, xe, xstep = (int(scalar_value(v, D.int64)) for v in (start, end, step))
        if xstep == 0:
            raise ValueError("step must be nonzero")
        num = xe - xs + xstep - (1 if xstep > 0 else -1)
        num = (num + (1 << 63)) % (1 << 64) - (1 << 63)  # int64 arithmetic wraps
        size = float(_trunc_div(num, xstep))
    else:
        size = math.ceil((de - ds) / dstep)
    if not 0 <= size <= 9.223372036854775807e18:
        raise RuntimeError("invalid size, possible overflow?")
    return int(size)


def _is_integral(v) -> bool:
    if isinstance(v, Tensor):
        return not (v.dtype.is_floating_point or v.dtype.is_complex)
    return isinstance(v, (int, np.integer, np.bool_))


def arange(
    start=0,
    end=None,
    step=1,
    *,
    out=None,
    dtype=None,
    layout=None,
    device=None,
    requires_grad=False,
    pin_memory=False,
) -> Tensor:
    """Return the 1-D tensor ``[start, start + step, ...)`` up to ``end`` (exclusive): int64
    when every bound is an integer, else the default float dtype."""
    if end is None:
        start, end = 0, start
    if (
        type(start) is int
        and type(end) is int
        and type(step) is int
        and dtype is None
        and out is None
        and device is None
        and step
        and -_INT_FAST < start < _INT_FAST
        and -_INT_FAST < end < _INT_FAST
        and -_INT_FAST < step < _INT_FAST
        and (end >= start if step > 0 else end <= start)
    ):
        # the common arange(n): NumPy's integer arange is torch's, value for value
        return _finish(np.arange(start, end, step, dtype=np.int64), requires_grad)
    if dtype is None and out is None:
        integral = all(_is_integral(v) for v in (start, end, step))
        dt = D.int64 if integral else D.get_default_dtype()
    else:
        dt = _out_dtype(dtype, out, "arange")
    start = _as_scalar("arange", "start", start)
    end = _as_scalar("arange", "end", end)
    step = _as_scalar("arange", "step", step)
    as_device(device)
    if dt is D.bool or dt.is_complex:
        raise NotImplementedError(f"\"arange_cpu\" not implemented for '{scalar_type_name(dt)}'")
    n = _arange_size(start, end, step, dt)
    return _result(_arange_values(start, step, n, dt), requires_grad, out)


def _space_args(fn: str, start, end, steps):
    zs, ze = (isinstance(v, Tensor) and v._data.ndim != 0 for v in (start, end))
    if zs or ze:
        what = []
        if zs:
            what.append(f"start with {start._data.ndim} dimension(s)")
        if ze:
            what.append(f"end with {end._data.ndim} dimension(s)")
        raise RuntimeError(
            f"{fn} only supports 0-dimensional start and end tensors, but got "
            + " and ".join(what)
            + "."
        )
    if isinstance(steps, (bool, float, np.floating)) or not hasattr(steps, "__index__"):
        raise TypeError(f"{fn}(): argument 'steps' must be int, not {_type_name(steps)}")
    steps = operator.index(steps)
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    return _as_scalar(fn, "start", start), _as_scalar(fn, "end", end), steps


def _space_dtype(fn, start, end, dtype, out) -> D.dtype:
    if dtype is None and out is None:
        if isinstance(start, complex) or isinstance(end, complex):
            return D.get_default_dtype().to_complex()
        return D.get_default_dtype()
    return _out_dtype(dtype, out, fn)


def _round_to(x, dt: D.dtype) -> np.ndarray:
    # one value of half/bfloat16 arithmetic: computed in float32, rounded to the dtype
    return np.asarray(x, np.float32).astype(dt.np).astype(np.float32)


def _linspace_values(start, end, steps: int, dt: D.dtype) -> np.ndarray:
    # torch's linspace kernel: the first half counts up from start, the second down from end
    i = np.arange(steps, dtype=np.int64)
    k = steps - 1 - i
    first = i < steps // 2
    if dt.is_complex:
        s, e = complex(scalar_value(start, dt)), complex(scalar_value(end, dt))
        real = D.float32 if dt is D.complex64 else D.float64
        parts = []
        for ps, pe in ((s.real, e.real), (s.imag, e.imag)):
            parts.append(_linspace_values(ps, pe, steps, real).astype(np.float64))
        return (parts[0] + 1j * parts[1]).astype(dt.np)
    if dt is D.float64:
        s, e = _to_double(start), _to_double(end)
        step = (e - s) / (steps - 1)
        return np.where(first, _fma(step, i, s), _fma(-step, k, e))
    if dt is D.float32:
        s, e = scalar_value(start, dt), scalar_value(end, dt)
        step = np.float32(e - s) / np.float32(steps - 1)
        fi, fk = i.astype(np.float32), k.astype(np.float32)
        return np.where(first, _fma32(step, fi, s), _fma32(-step, fk, e))
    if dt.is_floating_point:  # c10::Half / c10::BFloat16: every operation rounds
        s = np.float32(scalar_value(start, dt))
        e = np.float32(scalar_value(end, dt))
        step = _round_to(_round_to(e - s, dt) / _round_to(steps - 1, dt), dt)
        up = _round_to(s + _round_to(step * _round_to(i, dt), dt), dt)
        down = _round_to(e - _round_to(step * _round_to(k, dt), dt), dt)
        return np.where(first, up, down).astype(dt.np)
    s, e = int(scalar_value(start, dt)), int(scalar_value(end, dt))
    step = (float(e) - float(s)) / (steps - 1)
    vals = np.where(first, _fma(step, i, float(s)), _fma(-step, k, float(e)))
    return vals.astype(np.int64).astype(dt.np)


def linspace(
    start,
    end,
    steps,
    *,
    out=None,
    dtype=None,
    layout=None,
    device=None,
    requires_grad=False,
    pin_memory=False,
) -> Tensor:
    """Return ``steps`` points evenly spaced from ``start`` to ``end`` inclusive."""
    start, end, steps = _space_args("linspace", start, end, steps)
    dt = _space_dtype("linspace", start, end, dtype, out)
    as_device(device)
    if dt is D.bool and steps > 1:
        raise NotImplementedError("\"linspace_cpu\" not implemented for 'Bool'")
    if steps <= 1:
        arr = np.full(steps, scalar_value(start, dt), dtype=dt.np)
    else:
        arr = np.asarray(_linspace_values(start, end, steps, dt), dtype=dt.np)
    return _result(arr, requires_grad, out)


def _float_to_int(x: np.ndarray, dt: D.dtype) -> np.ndarray:
    # C++'s double -> integer conversion on x86: out of range and nan give INT_MIN; types
    # narrower than int convert through int, then wrap
    wide = np.int64 if dt is D.int64 else np.int32
    lim = 9.223372036854775807e18 if wide is np.int64 else 2147483648.0
    ok = (x > -lim - 1) & (x < lim)
    r = np.where(ok, x, 0).astype(wide)
    r[~ok] = np.iinfo(wide).min
    return r.astype(dt.np)


def _pow(x: float, y: float) -> float:
    # libm's pow, as std::pow (NumPy's vectorised power may differ in the last bit)
    try:
        return math.pow(x, y)
    except OverflowError:
        return math.inf if x > 0 or float(y).is_integer() and int(y) % 2 == 0 else -math.inf
    except ValueError:
        return math.nan


def logspace(
    start,
    end,
    steps,
    base: float = 10.0,
    *,
    out=None,
    dtype=None,
    layout=None,
    device=None,
    requires_grad=False,
    pin_memory=False,
) -> Tensor:
    """Return ``steps`` points ``base ** linspace(start, end, steps)``."""
    start, end, steps = _space_args("logspace", start, end, steps)
    base = _as_scalar("logspace", "base", base)
    dt = _space_dtype("logspace", start, end, dtype, out)
    as_device(device)
    if dt is D.bool and steps > 1:
        raise NotImplementedError("\"logspace_cpu\" not implemented for 'Bool'")
    if steps <= 1:
        if dt.is_complex:
            value = complex(np.exp(complex(start) * np.log(complex(base))))
        else:
            value = _pow(float(base), _to_double(start))
        arr = np.full(steps, scalar_value(value, dt), dtype=dt.np)
        return _result(arr, requires_grad, out)
    i = np.arange(steps, dtype=np.int64)
    k = steps - 1 - i
    first = i < steps // 2
    if dt.is_complex:
        # complex<T> arithmetic; std::pow(complex, complex) is exp(y * log(x))
        cdt = dt.np
        s, e = cdt.type(scalar_value(start, dt)), cdt.type(scalar_value(end, dt))
        step = (e - s) * (dt.to_real().np.type(1) / dt.to_real().np.type(steps - 1))
        exps = np.where(first, s + step * i.astype(cdt), e - step * k.astype(cdt))
        arr = np.exp(exps.astype(cdt) * np.log(cdt.type(base))).astype(cdt)
        return _result(arr, requires_grad, out)
    s, e = scalar_value(start, dt), scalar_value(end, dt)
    if dt.is_floating_point:
        diff = float(e - s) if dt.itemsize != 2 else float(_round_to(np.float32(e) - s, dt))
    else:
        diff = float(int(e) - int(s))
    step = diff / (steps - 1)
    exps = np.where(first, float(s) + step * i, float(e) - step * k)
    vals = np.array([_pow(float(base), x) for x in exps.tolist()], dtype=np.float64)
    arr = vals.astype(dt.np) if dt.is_floating_point else _float_to_int(vals, dt)
    return _result(arr, requires_grad, out)


publish(None, composite("aten::arange", profiled=False)(arange), name="arange", method=False)
for _f in (linspace, logspace):
    publish(None, _f, method=False)

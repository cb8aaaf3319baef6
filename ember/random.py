"""Random number generation: ember's ``torch.Generator`` and ``torch.random``.

Every :class:`Generator` is torch's CPU generator: a 32-bit Mersenne Twister (NumPy's
``MT19937`` bit generator) seeded as torch seeds it, sampled by torch's kernels
(``ember/_torch_rng.py``). ``manual_seed(s)`` then gives torch's numbers for ``rand``,
``randn``, ``randint``, ``randperm``, ``bernoulli``/dropout, ``normal_``/``uniform_`` (so
``nn.init`` and every layer's default initialisation), ``random_``, ``multinomial``, the
``exponential_``/``cauchy_``/``log_normal_``/``geometric_`` fillers and the gamma, Dirichlet,
Poisson and binomial samplers (see that module for the last-bit exceptions).

:meth:`Generator.get_state` is torch's 5056-byte ``CPUGeneratorImplState``: the seed, the
twister's position and 624 words (stored as uint64), the cached Box-Muller sample; states
move between ember and torch in both directions.

The ``_``-prefixed sampler methods of :class:`Generator` are the array-level
primitives used by the tensor creation functions and in-place fillers: they take
NumPy shapes and dtypes and return ``numpy.ndarray`` objects.
"""

from __future__ import annotations

import contextlib
import math
import os
import struct
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

from ember import _torch_rng as _rng

if TYPE_CHECKING:
    from ember._core.tensor import Tensor

__all__ = [
    "Generator",
    "default_generator",
    "fork_rng",
    "get_rng_state",
    "initial_seed",
    "manual_seed",
    "seed",
    "set_rng_state",
]

# Seed of a freshly constructed ``Generator()`` (torch's ``default_rng_seed_val``).
_DEFAULT_SEED = 67280421310721
_UINT64_MASK = (1 << 64) - 1

# torch's CPUGeneratorImplState: THGeneratorState (seed, left, seeded, next, state[624] as
# uint64, normal_x, normal_y, normal_rho, normal_is_valid) + the float normal cache
_STATE_SIZE = 5056
_STATE_HEAD = struct.Struct("<QiiQ")  # the_initial_seed, left, seeded, next
_STATE_WORDS = 624
_STATE_NORMAL = struct.Struct("<dddi")  # normal_x, normal_y (the cached sample), rho, valid
_STATE_FLOAT = struct.Struct("<f?")  # next_float_normal_sample, its valid flag
_NORMAL_AT = _STATE_HEAD.size + 8 * _STATE_WORDS
_FLOAT_AT = 5048

# ---------------------------------------------------------------------------
# dtype helpers
# ---------------------------------------------------------------------------

# Mantissa digits (std::numeric_limits<T>::digits) of the floating dtypes.
_FLOAT_DIGITS = {"float16": 11, "bfloat16": 8, "float32": 24, "float64": 53}


def _scalar_type_name(dt: np.dtype) -> str:
    from ember._core.dtype import _SCALAR_NAMES

    return _SCALAR_NAMES.get(dt.name, dt.name)


def _type_meta_name(dt: np.dtype) -> str:
    from ember._core.dtype import _CPP_NAMES

    return _CPP_NAMES.get(dt.name, dt.name)


def _is_bf16(dt: np.dtype) -> bool:
    # (by name: bfloat16's NumPy dtype comes from ml_dtypes, imported on first use)
    return dt.kind == "V" and dt.name == "bfloat16"


def _is_float(dt: np.dtype) -> bool:
    """Real floating dtype, bfloat16 included."""
    return dt.kind == "f" or _is_bf16(dt)


def _real_dtype(dt: np.dtype) -> np.dtype:
    """Component dtype of a complex dtype (``dt`` itself otherwise)."""
    if dt.kind == "c":
        return np.dtype(np.float32) if dt == np.complex64 else np.dtype(np.float64)
    return dt


def _float_limits(dt: np.dtype) -> tuple[float, float]:
    if _is_bf16(dt):
        import ml_dtypes

        info = ml_dtypes.finfo(dt)
    else:
        info = np.finfo(dt)
    return float(info.min), float(info.max)


def _fmt(x: Any) -> str:
    """Format a number as C++'s default ``operator<<`` does for a double."""
    return f"{float(x):g}"


def _as_param(x: Any) -> Any:
    """Keep 0-d parameters as Python scalars (NEP 50 weak) so float32 math stays float32."""
    if np.ndim(x) == 0:
        x = np.asarray(x).item()
        return x if isinstance(x, complex) else float(x)
    return np.asarray(x)


# ---------------------------------------------------------------------------
# seeds and devices
# ---------------------------------------------------------------------------


def _shape_tuple(shape: Any) -> tuple:
    if shape is None:
        return ()
    if isinstance(shape, (int, np.integer)):
        return (int(shape),)
    return tuple(int(d) for d in shape)


def _check_seed(seed: Any) -> int:
    """Validate a seed as ``torch.Generator.manual_seed`` does and map it to uint64."""
    if isinstance(seed, bool) or not isinstance(seed, int):
        if isinstance(seed, np.integer):
            raise TypeError("an integer is required")
        raise RuntimeError(  # noqa: TRY004 - torch raises RuntimeError here
            f"manual_seed expected a long, but got {type(seed).__name__}"
        )
    if not -(1 << 63) <= seed <= _UINT64_MASK:
        raise ValueError("Overflow when unpacking long long")
    return seed & _UINT64_MASK


def _nondeterministic_seed() -> int:
    return int.from_bytes(os.urandom(8), "little")


def _check_device(device: Any) -> None:
    """Accept only the CPU device: ``'cpu'``, ``'cpu:0'`` or a device object of type cpu."""
    if device is None:
        return
    try:
        from ember._core.device import as_device
    except ImportError:  # ember's device module not available: plain string check
        kind = device.split(":", 1)[0] if isinstance(device, str) else getattr(device, "type", None)
        if kind != "cpu":
            raise RuntimeError(
                f"ember only supports CPU generators, but got device '{device}'"
            ) from None
        return
    if as_device(device).type == "meta":
        raise RuntimeError("META device type not an accelerator.")


def _cpu_device() -> Any:
    """``ember.device('cpu')`` (the string ``'cpu'`` if ember's device module is missing)."""
    try:
        from ember._core.device import CPU
    except ImportError:
        return "cpu"
    return CPU


def _wrap_tensor(arr: np.ndarray) -> Tensor:
    """A Tensor around ``arr`` (``Tensor._wrap``, or the module-level ``_wrap``)."""
    from ember._core import tensor as _tensor_mod

    wrap = getattr(_tensor_mod.Tensor, "_wrap", None) or _tensor_mod._wrap
    return wrap(arr)


# ---------------------------------------------------------------------------
# Generator
# ---------------------------------------------------------------------------


class Generator:
    r"""Creates and returns a generator object that manages the state of the algorithm
    which produces pseudo random numbers.

    Args:
        device (str or device, optional): the desired device for the generator.
            Only ``'cpu'`` is supported. Default: ``'cpu'``.

    Example::

        >>> g_cpu = ember.Generator()
        >>> g_cpu.manual_seed(2147483647)
    """

    def __init__(self, device: Any = "cpu") -> None:
        _check_device(device)
        self._bitgen = np.random.MT19937(0)
        self._reseed(_DEFAULT_SEED)

    def _reseed(self, seed: int) -> None:
        # std::mt19937(seed): the classic seeding of the low 32 bits, the stream at its start
        self._bitgen.state = {
            "bit_generator": "MT19937",
            "state": {"key": _rng.mt19937_key(seed), "pos": _STATE_WORDS},
        }
        self._initial_seed = seed
        self._normal_cache: float | None = None  # torch's next_double_normal_sample
        self._float_normal_cache: float | None = None  # next_float_normal_sample

    # -- torch.Generator API ------------------------------------------------

    @property
    def device(self) -> Any:
        """The device of the generator (always CPU)."""
        return _cpu_device()

    def manual_seed(self, seed: int) -> Generator:
        """Seed this generator with ``seed`` and return it.

        ``seed`` is an int from ``-2**63`` to ``2**64 - 1``; a negative one counts modulo 2**64.
        """
        self._reseed(_check_seed(seed))
        return self

    def seed(self) -> int:
        """Gets a non-deterministic random number from the OS and uses it to seed the
        generator. Returns the seed."""
        s = _nondeterministic_seed()
        self.manual_seed(s)
        return s

    def initial_seed(self) -> int:
        """Returns the initial seed for generating random numbers."""
        return self._initial_seed

    def get_state(self) -> Tensor:
        """Returns the generator state as a ``uint8`` tensor."""
        data = np.frombuffer(self._get_state_bytes(), dtype=np.uint8).copy()
        return _wrap_tensor(data)

    def set_state(self, new_state: Tensor) -> Generator:
        """Sets the generator state.

        Args:
            new_state (Tensor): The desired state, a ``uint8`` tensor as returned by
                :meth:`get_state`.
        """
        from ember._core.tensor import Tensor

        if not isinstance(new_state, Tensor):
            raise TypeError(f"expected a torch.ByteTensor, but got {type(new_state).__name__}")
        data = np.asarray(new_state._data)
        if data.dtype != np.uint8:
            raise TypeError("RNG state must be a torch.ByteTensor")
        self._set_state_bytes(data)
        return self

    def clone_state(self) -> Generator:
        """Returns a new generator holding a copy of this generator's current state."""
        other = Generator()
        other._set_state_bytes(self._get_state_bytes())
        return other

    def graphsafe_get_state(self) -> Generator:
        """Returns a new generator holding a copy of the current state (as
        :meth:`clone_state`: CPU generators have no graph-safe state of their own)."""
        return self.clone_state()

    def graphsafe_set_state(self, state: Generator) -> Generator:
        """Sets this generator's state to that of the generator ``state``."""
        self._set_state_bytes(state._get_state_bytes())
        return self

    # -- raw state ------------------------------------------------------------

    def _get_state_bytes(self) -> bytes:
        """The state as torch's ``CPUGeneratorImplState`` (layout in the module docstring)."""
        inner = self._bitgen.state["state"]
        pos = int(inner["pos"])
        # torch's twister counts ``left`` down to the next regeneration and ``next`` up
        head = _STATE_HEAD.pack(self._initial_seed, _STATE_WORDS + 1 - pos, 1, pos % _STATE_WORDS)
        words = np.asarray(inner["key"], dtype="<u8").tobytes()
        cache = self._normal_cache
        normal = _STATE_NORMAL.pack(0.0, cache or 0.0, 0.0, cache is not None)
        fcache = self._float_normal_cache
        tail = _STATE_FLOAT.pack(fcache or 0.0, fcache is not None)
        return b"".join((head, words, normal, bytes(4), tail, bytes(3)))

    def _set_state_bytes(self, data: bytes | bytearray | memoryview | np.ndarray) -> None:
        """Restore a state produced by :meth:`_get_state_bytes` (or by torch)."""
        if isinstance(data, np.ndarray):
            if data.dtype != np.uint8:
                raise TypeError("RNG state must be a torch.ByteTensor")
            raw = np.ascontiguousarray(data).reshape(-1).tobytes()
        else:
            raw = bytes(data)
        if len(raw) != _STATE_SIZE:
            raise RuntimeError(
                f"Expected a CPUGeneratorImplState of size {_STATE_SIZE} but found the "
                f"input RNG state size to be {len(raw)}"
            )
        seed, left, _seeded, _next = _STATE_HEAD.unpack_from(raw, 0)
        if not 0 < left <= _STATE_WORDS + 1:
            raise RuntimeError("The legacy_pod.left value is invalid: it must be in (0, 625]")
        words = np.frombuffer(raw, dtype="<u8", count=_STATE_WORDS, offset=_STATE_HEAD.size)
        _x, normal_y, _rho, normal_valid = _STATE_NORMAL.unpack_from(raw, _NORMAL_AT)
        fsample, fvalid = _STATE_FLOAT.unpack_from(raw, _FLOAT_AT)
        self._bitgen.state = {
            "bit_generator": "MT19937",
            "state": {"key": words.astype(np.uint32), "pos": _STATE_WORDS + 1 - left},
        }
        self._initial_seed = seed
        self._normal_cache = normal_y if normal_valid else None
        self._float_normal_cache = fsample if fvalid else None

    # pickle / copy.deepcopy (torch generators support both)
    def __getstate__(self) -> dict[str, Any]:
        return {"state": self._get_state_bytes()}

    def __setstate__(self, d: dict[str, Any]) -> None:
        self.__init__()
        self._set_state_bytes(d["state"])

    # -- array-level samplers ------------------------------------------------

    def _uniform(self, shape: Any, low: float, high: float, np_dtype: Any) -> np.ndarray:
        """Uniform floats in ``[low, high)`` (``low`` itself when ``low == high``).

        float16/bfloat16 are sampled in float32 and cast; a value that rounds up to
        ``high`` is replaced by the largest value of the dtype below ``high``. Complex
        dtypes draw the real and imaginary parts independently.
        """
        dt = np.dtype(np_dtype)
        comp = _real_dtype(dt)
        if not _is_float(comp):
            raise NotImplementedError(
                f"\"check_uniform_bounds\" not implemented for '{_scalar_type_name(dt)}'"
            )
        low, high = float(low), float(high)
        lo_lim, hi_lim = _float_limits(comp)
        if not lo_lim <= low <= hi_lim:
            raise RuntimeError(f"from is out of bounds for {_type_meta_name(comp)}")
        if not lo_lim <= high <= hi_lim:
            raise RuntimeError(f"to is out of bounds for {_type_meta_name(comp)}")
        if low > high:
            raise RuntimeError(
                "uniform_ expects to return a [from, to) range, but found "
                f"from={_fmt(low)} > to={_fmt(high)}"
            )
        if high - low > hi_lim:
            raise RuntimeError(
                f"uniform_ expects to-from <= std::numeric_limits<{_scalar_type_name(comp)}>"
                f"::max(), but found to={_fmt(high)} and from={_fmt(low)} which result in "
                "to-from to exceed the limit"
            )
        n = math.prod(_shape_tuple(shape))
        if dt.kind == "c":  # torch fills the real view: (re, im) pairs in order
            n *= 2
        out = _rng.uniform(self, n, low, high, comp)
        if low < high:  # torch: a value that rounds up to ``high`` becomes ``low``
            top = np.asarray(high).astype(comp)
            out[out >= top] = np.asarray(low).astype(comp)
        return out.view(dt).reshape(shape)

    def _normal(
        self, shape: Any, mean: Any, std: Any, np_dtype: Any, contiguous: bool = True
    ) -> np.ndarray:
        """Normal samples ``mean + std * z``; ``mean``/``std`` may be arrays broadcasting
        against ``shape`` (``shape=None`` takes their broadcast shape).

        Complex dtypes draw real and imaginary parts each with variance ``std**2 / 2``.
        """
        dt = np.dtype(np_dtype)
        if not (_is_float(dt) or dt.kind == "c"):
            raise NotImplementedError(
                f"\"normal_kernel_cpu\" not implemented for '{_scalar_type_name(dt)}'"
            )
        mean, std = _as_param(mean), _as_param(std)
        if isinstance(std, np.ndarray):
            if not np.all(std >= 0):
                raise RuntimeError("normal expects all elements of std >= 0.0")
        elif not std >= 0:
            raise RuntimeError(f"normal expects std >= 0.0, but found std {_fmt(std)}")
        if shape is None:
            shape = np.broadcast_shapes(np.shape(mean), np.shape(std))
        shape = _shape_tuple(shape)
        n = math.prod(shape)
        arrays = isinstance(mean, np.ndarray) or isinstance(std, np.ndarray)
        # tensor mean/std: torch draws standard normals, then ``mul_(std).add_(mean)``
        m, s = (0.0, 1.0) if arrays else (float(mean), float(std))
        serial = not contiguous
        if dt.kind == "c":  # the real view, with std / sqrt(2) per part
            z = _rng.normal(self, 2 * n, m, s / math.sqrt(2.0), _real_dtype(dt), serial).view(dt)
        else:
            z = _rng.normal(self, n, m, s, dt, serial)
        z = z.reshape(shape)
        if not arrays:
            return z
        if dt.kind == "c":
            std = np.asarray(std) / math.sqrt(2.0)
        return np.asarray(z * np.asarray(std, dtype=dt) + np.asarray(mean, dtype=dt)).astype(
            dt, copy=False
        )

    def _randint(self, low: int, high: int, shape: Any, np_dtype: Any) -> np.ndarray:
        """Integers uniform in ``[low, high)`` drawn as int64 and cast to ``np_dtype``
        (integer, bool or floating)."""
        dt = np.dtype(np_dtype)
        low, high = int(low), int(high)
        if low >= high:
            raise RuntimeError(
                f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}"
            )
        _check_from_to_in_range(low, high - 1, dt)
        shape = _shape_tuple(shape)
        out = _rng.randint(self, math.prod(shape), low, high).reshape(shape)
        return out.astype(dt, copy=False)

    def _randperm(self, n: int, np_dtype: Any) -> np.ndarray:
        """A random permutation of ``0 .. n-1``."""
        dt = np.dtype(np_dtype)
        n = int(n)
        if n < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {n}: [{n}]")
        if dt.kind == "b" or dt.kind == "c" or dt.name in ("uint16", "uint32", "uint64"):
            raise NotImplementedError(f"\"randperm\" not implemented for '{_scalar_type_name(dt)}'")
        if dt == np.float16 and n > 2049:
            raise RuntimeError("n cannot be greater than 2049 for Half type.")
        if dt == np.float32 and n > (1 << 24) + 1:
            raise RuntimeError("n cannot be greater than 2^24+1 for Float type.")
        if dt.kind in "iu" and n > 0 and n - 1 > np.iinfo(dt).max:
            raise RuntimeError(f"value cannot be converted to type {dt.name}_t without overflow")
        return _rng.randperm(self, n).astype(dt, copy=False)

    def _bernoulli(self, p: Any, shape: Any, np_dtype: Any) -> np.ndarray:
        """Draws ``1`` with probability ``p`` (float or array broadcasting to ``shape``;
        ``shape=None`` takes ``p``'s shape), else ``0``."""
        dt = np.dtype(np_dtype)
        p = _as_param(p)
        if isinstance(p, np.ndarray):
            if not np.all((p >= 0) & (p <= 1)):
                raise RuntimeError(
                    "Expected p_in >= 0 && p_in <= 1 to be true, but got false.  "
                    "(Could this error message be improved?  If so, please report an "
                    "enhancement request to PyTorch.)"
                )
        elif not 0 <= p <= 1:
            raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={_fmt(p)}")
        if shape is None:
            shape = np.shape(p)
        return _rng.bernoulli(self, p, _shape_tuple(shape)).astype(dt, copy=False)

    def _multinomial(self, probs: Any, num_samples: int, replacement: bool = False) -> np.ndarray:
        """Indices sampled from the rows of ``probs`` (1-D or 2-D, unnormalised
        non-negative weights). Returns int64 of shape ``(rows, num_samples)``
        (``(num_samples,)`` for 1-D input).

        Without replacement the categories are distinct, in sampling order (the
        exponential race ``argsort(-p / Exp(1))``). As in torch, once every category
        of nonzero weight has been drawn, zero-weight categories fill the rest.
        """
        probs = np.asarray(probs)
        if probs.ndim not in (1, 2):
            raise RuntimeError("prob_dist must be 1 or 2 dim")
        if not _is_float(probs.dtype):
            raise RuntimeError(
                "multinomial only supports floating-point dtypes for input, got: "
                f"{_scalar_type_name(probs.dtype)}"
            )
        n = int(num_samples)
        if n <= 0:
            raise RuntimeError("cannot sample n_sample <= 0 samples")
        k = probs.shape[-1]
        if not replacement and n > k:
            raise RuntimeError(
                "cannot sample n_sample > prob_dist.size(-1) samples without replacement"
            )
        if k > 1 << 24:
            raise RuntimeError("number of categories cannot exceed 2^24")
        one_d = probs.ndim == 1
        p = probs.reshape(1, k) if one_d else probs
        rows = p.shape[0]
        if rows == 0:
            out = np.empty((0, n), dtype=np.int64)
        elif k == 0:
            raise RuntimeError(
                "aminmax(): cannot compute aminmax over an empty dimension as the "
                "operation has no identity."
            )
        elif not replacement or n == 1:
            out = self._multinomial_race(p, n)
        else:
            out = self._multinomial_cdf(p, n)
        return out[0] if one_d else out

    def _multinomial_race(self, p: np.ndarray, n: int) -> np.ndarray:
        """Without replacement (or a single draw): top-``n`` of ``p / Exp(1)`` per row."""
        if not (np.all(p >= 0) and np.all(p < np.inf)):
            raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
        if np.any(p.sum(axis=1) == 0):
            raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
        # torch's Gumbel-max form: the top-n of p / q, q ~ Exp(1) in p's dtype
        q = self._exponential(p.shape, 1.0, p.dtype)
        with np.errstate(divide="ignore", invalid="ignore"):
            keys = p / q
        k = p.shape[1]
        if n == 1:
            return np.argmax(keys, axis=1).reshape(-1, 1).astype(np.int64)
        if n < k:
            part = np.argpartition(-keys, n - 1, axis=1)[:, :n]
            order = np.argsort(-np.take_along_axis(keys, part, axis=1), axis=1, kind="stable")
            return np.take_along_axis(part, order, axis=1).astype(np.int64)
        return np.argsort(-keys, axis=1, kind="stable").astype(np.int64)

    def _multinomial_cdf(self, p: np.ndarray, n: int) -> np.ndarray:
        """With replacement: inverse-CDF lookup, vectorised over rows."""
        bad = ~(p >= 0) | ~np.isfinite(p)
        sums = p.sum(axis=1)
        row_bad = bad.any(axis=1) | ~(sums > 0)
        if row_bad.any():
            r = int(np.argmax(row_bad))
            if bad[r].any():
                v = p[r, int(np.argmax(bad[r]))]
                if not v >= 0:
                    raise RuntimeError(
                        "invalid multinomial distribution (encountering probability entry < 0)"
                    )
                raise RuntimeError(
                    "invalid multinomial distribution (encountering probability entry = "
                    "infinity or NaN)"
                )
            raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
        rows, k = p.shape
        cdf = np.cumsum(p, axis=1, dtype=np.float64)
        cdf /= cdf[:, -1:]
        # torch: one float64 uniform per sample, row by row; the first slot whose
        # cumulative probability reaches it
        u = _rng.uniform01(self, rows * n, np.dtype(np.float64)).reshape(rows, n)
        idx = np.empty((rows, n), dtype=np.int64)
        for r in range(rows):
            idx[r] = np.searchsorted(cdf[r], u[r], side="left")
        # Rounding can push u past the last cumulative value: use the last nonzero category.
        last = k - 1 - np.argmax(p[:, ::-1] > 0, axis=1)
        return np.minimum(idx, last[:, None]).astype(np.int64)

    def _exponential(self, shape: Any, lambd: float, np_dtype: Any) -> np.ndarray:
        """Exponential samples with rate ``lambd``."""
        dt = np.dtype(np_dtype)
        if not _is_float(dt):
            raise RuntimeError(
                "Exponential distribution is a continuous probability distribution. dtype "
                f"must be a floating point but you specified {_scalar_type_name(dt)}"
            )
        lambd = float(lambd)
        if not lambd > 0:
            raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={_fmt(lambd)}")
        # torch: -log(1 - u) / lambda from a float64 uniform, rounded to the dtype
        u = _rng.uniform01(self, math.prod(_shape_tuple(shape)), np.dtype(np.float64))
        return (-np.log1p(-u) / lambd).reshape(shape).astype(dt, copy=False)

    def _geometric(self, shape: Any, p: float, np_dtype: Any) -> np.ndarray:
        """Geometric samples: the number of Bernoulli(``p``) trials up to the first
        success (values ``1, 2, ...``)."""
        dt = np.dtype(np_dtype)
        p = float(p)
        if not 0 < p < 1:
            raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={_fmt(p)}")
        # torch: ceil(log(u) / log1p(-p)), u a float64 uniform
        u = _rng.uniform01(self, math.prod(_shape_tuple(shape)), np.dtype(np.float64))
        with np.errstate(divide="ignore"):
            k = np.ceil(np.log(u) / np.log1p(-p))
        return k.reshape(shape).astype(dt, copy=False)

    def _cauchy(self, shape: Any, median: float, sigma: float, np_dtype: Any) -> np.ndarray:
        """Cauchy samples ``median + sigma * tan(pi * (u - 1/2))``."""
        dt = np.dtype(np_dtype)
        if not _is_float(dt):
            raise RuntimeError(
                "Cauchy distribution is a continuous probability distribution. dtype must "
                f"be a floating point but you specified {_type_meta_name(dt)}"
            )
        median, sigma = float(median), float(sigma)
        if not sigma > 0:
            raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={_fmt(sigma)}")
        # torch: median + sigma * tan(pi * (u - 1/2)), u a float64 uniform
        u = _rng.uniform01(self, math.prod(_shape_tuple(shape)), np.dtype(np.float64))
        z = median + sigma * np.tan(np.pi * (u - 0.5))
        return z.reshape(shape).astype(dt, copy=False)

    def _log_normal(self, shape: Any, mean: float, std: float, np_dtype: Any) -> np.ndarray:
        """Log-normal samples ``exp(mean + std * z)``."""
        dt = np.dtype(np_dtype)
        if not _is_float(dt):
            raise NotImplementedError(
                f"\"log_normal_cpu\" not implemented for '{_scalar_type_name(dt)}'"
            )
        mean, std = float(mean), float(std)
        if not std > 0:
            raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={_fmt(std)}")
        # torch: exp of a scalar-path float64 normal (Box-Muller, cached pairs) per element
        z = _rng._normal_scalar(self, math.prod(_shape_tuple(shape)), mean, std)
        with np.errstate(over="ignore"):
            return np.exp(z).reshape(shape).astype(dt, copy=False)


def _check_from_to_in_range(low: int, high_inc: int, dt: np.dtype) -> None:
    """torch's bounds check of ``random_(from, to)`` for the output dtype."""
    name = _type_meta_name(dt)
    if _is_float(dt):
        lo_lim, hi_lim = _float_limits(dt)
        if not lo_lim <= low <= hi_lim:
            raise RuntimeError(f"from is out of bounds for {name}")
        if not lo_lim <= high_inc <= hi_lim:
            raise RuntimeError(f"to - 1 is out of bounds for {name}")
        digits = _FLOAT_DIGITS.get(dt.name)
        if digits is not None:
            import warnings

            for var, label in ((low, "from"), (high_inc, "to - 1")):
                if not -(1 << digits) <= var <= 1 << digits:
                    warnings.warn(
                        f"{label} is out of bounds [-(2^{digits}), 2^{digits}]. Due to "
                        f"precision limitations {name} can support discrete uniform "
                        "distribution only within this range. This warning will become an "
                        "error in version 1.7 release, please fix the code in advance",
                        UserWarning,
                        stacklevel=4,
                    )
    elif dt.kind == "b":
        lo_lim, hi_lim = 0, 1
    elif dt.kind in "iu":
        info = np.iinfo(dt)
        lo_lim, hi_lim = int(info.min), min(int(info.max), (1 << 63) - 1)
    else:
        return
    if not _is_float(dt):
        if not lo_lim <= low <= hi_lim:
            raise RuntimeError(f"from is out of bounds for {name}")
        if not lo_lim <= high_inc <= hi_lim:
            raise RuntimeError(f"to - 1 is out of bounds for {name}")


# ---------------------------------------------------------------------------
# default generator and module-level functions (torch.random)
# ---------------------------------------------------------------------------

default_generator = Generator()
# Like torch, the default CPU generator starts from a non-deterministic seed; a fresh
# ``Generator()`` starts from the fixed seed 67280421310721.
default_generator.seed()


def manual_seed(seed: int) -> Generator:
    """Seed the default generator with ``seed`` (as ``Generator.manual_seed``) and return it."""
    return default_generator.manual_seed(int(seed))


def seed() -> int:
    """Sets the seed for generating random numbers to a non-deterministic random number.
    Returns the 64 bit number used to seed the RNG."""
    return default_generator.seed()


def initial_seed() -> int:
    """Returns the initial seed for generating random numbers as a Python ``int``."""
    return default_generator.initial_seed()


def get_rng_state() -> Tensor:
    """Returns the random number generator state as a ``uint8`` tensor."""
    return default_generator.get_state()


def set_rng_state(new_state: Tensor) -> None:
    """Sets the random number generator state.

    Args:
        new_state (Tensor): The desired state, as returned by :func:`get_rng_state`.
    """
    default_generator.set_state(new_state)


@contextlib.contextmanager
def fork_rng(
    devices: Iterable[Any] | None = None,
    enabled: bool = True,
    device_type: str | None = None,
) -> Iterator[None]:
    """Forks the RNG, so that when you return, the RNG is reset to the state that it was
    previously in.

    Args:
        devices (iterable of Device IDs): accepted for compatibility; ember only has
            the CPU generator, which is always forked.
        enabled (bool): if ``False``, the RNG is not forked.
        device_type (str): accepted for compatibility and ignored.
    """
    if devices is not None:
        devices = list(devices)
    if not enabled:
        yield
        return
    state = default_generator._get_state_bytes()
    try:
        yield
    finally:
        default_generator._set_state_bytes(state)

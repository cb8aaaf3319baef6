"""Tensor creation: from data, filled, ranges, random; ``*_like``, ``new_*``, in-place fillers."""

from __future__ import annotations

import math

import numpy as np

from ember import random as _random
from ember._core import dtype as D
from ember._core.device import as_device
from ember._core.grad_mode import STATE
from ember._core.tensor import Tensor, _wrap
from ember._ops.registry import expose
from ember._ops.shape import _sizes


def _finish(arr: np.ndarray, requires_grad: bool = False, device=None) -> Tensor:
    if device is not None:
        as_device(device)
    t = _wrap(arr)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _infer_dtype(data) -> D.dtype:
    """Return the dtype torch infers for nested Python data (floats -> default dtype)."""
    if isinstance(data, Tensor):
        return data.dtype
    if isinstance(data, np.ndarray):
        return D.from_numpy_dtype(data.dtype)
    if isinstance(data, (bool, np.bool_)):
        return D.bool
    if isinstance(data, (int, np.integer)):
        return D.int64 if not isinstance(data, np.integer) else D.FROM_NP[np.dtype(type(data))]
    if isinstance(data, complex):
        if isinstance(data, np.complexfloating):
            return D.FROM_NP[np.dtype(type(data))]
        if D.get_default_dtype() is D.bfloat16:
            raise RuntimeError("invalid default scalar type for complex")
        return D.get_default_dtype().to_complex()
    if isinstance(data, float):
        return (
            D.get_default_dtype()
            if not isinstance(data, np.floating)
            else D.FROM_NP[np.dtype(type(data))]
        )
    if isinstance(data, (list, tuple)):
        result = None
        for item in data:
            d = _infer_dtype(item)
            result = d if result is None else D.promote_types(result, d)
        return result or D.get_default_dtype()
    if hasattr(data, "__array__"):
        return D.from_numpy_dtype(np.asarray(data).dtype)
    raise TypeError(f"Could not infer dtype of {type(data).__name__}")


def _to_array(data, dtype: D.dtype) -> np.ndarray:
    if isinstance(data, Tensor):
        return data._data.astype(dtype.np)
    if isinstance(data, (list, tuple)) and any(isinstance(x, Tensor) for x in _flat(data)):
        data = _untensor(data)
    try:
        return np.array(data, dtype=dtype.np)
    except (ValueError, TypeError) as e:
        raise ValueError(f"could not convert data to a tensor: {e}") from None


def _flat(data):
    for x in data:
        if isinstance(x, (list, tuple)):
            yield from _flat(x)
        else:
            yield x


def _untensor(data):
    if isinstance(data, Tensor):
        if data._data.ndim:
            return data._data
        return data._data.item()
    if isinstance(data, (list, tuple)):
        return [_untensor(x) for x in data]
    return data


def tensor(
    data, *, dtype=None, device=None, requires_grad: bool = False, pin_memory: bool = False
) -> Tensor:
    """Return a new tensor holding a copy of ``data`` (nested lists, numbers, arrays)."""
    if isinstance(data, Tensor):
        import warnings

        warnings.warn(
            "To copy construct from a tensor, it is recommended to use sourceTensor.detach()."
            "clone() or sourceTensor.detach().clone().requires_grad_(True), rather than "
            "torch.tensor(sourceTensor).",
            UserWarning,
            stacklevel=2,
        )
    dt = dtype if dtype is not None else _infer_dtype(data)
    return _finish(np.array(_to_array(data, dt), copy=True), requires_grad, device)


def as_tensor(data, dtype=None, device=None) -> Tensor:
    """Return ``data`` as a tensor, sharing memory with a tensor or array when possible."""
    if isinstance(data, Tensor):
        return data if dtype is None or dtype is data.dtype else data.to(dtype)
    if isinstance(data, np.ndarray):
        t = from_numpy(data)
        return t if dtype is None or dtype is t.dtype else t.to(dtype)
    return tensor(data, dtype=dtype, device=device)


def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad: bool = False) -> Tensor:
    """Return ``obj`` as a tensor, sharing memory unless ``copy=True`` or a cast is needed."""
    if isinstance(obj, Tensor):
        t = obj if dtype is None or dtype is obj.dtype else obj.to(dtype)
        if copy:
            t = t.clone()
    elif isinstance(obj, np.ndarray) or hasattr(obj, "__array_interface__"):
        arr = np.asarray(obj)
        t = from_numpy(arr.copy() if copy else arr)
        if dtype is not None and dtype is not t.dtype:
            if copy is False:
                raise ValueError("asarray: copy=False but a cast is needed")
            t = t.to(dtype)
    else:
        t = tensor(obj, dtype=dtype)
    if requires_grad:
        t.requires_grad_(True)
    return t


def from_numpy(ndarray: np.ndarray) -> Tensor:
    """Return a tensor sharing memory with ``ndarray`` (writes show on both sides)."""
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(ndarray).__name__})")
    D.from_numpy_dtype(ndarray.dtype)
    if any(s < 0 for s in ndarray.strides):
        raise ValueError(
            "At least one stride in the given numpy array is negative, and tensors with negative "
            "strides are not currently supported. (You can probably work around this by making a "
            "copy of your array  with array.copy().) "
        )
    if not ndarray.dtype.isnative:
        raise ValueError(
            "given numpy array has byte order different from the native byte order. "
            "Conversion between byte orders is currently not supported."
        )
    return _wrap(ndarray)


def _dt(dtype) -> D.dtype:
    return D.get_default_dtype() if dtype is None else dtype


def _filled(fill, size, dtype, device, requires_grad, out=None):
    shape = _sizes(size)
    for s in shape:
        if s < 0:
            raise RuntimeError(
                f"Trying to create tensor with negative dimension {s}: {list(shape)}"
            )
    arr = fill(shape, _dt(dtype).np)
    if out is not None:
        out._data = arr
        out.dtype = D.FROM_NP[arr.dtype]
        return out
    return _finish(arr, requires_grad, device)


def zeros(
    *size,
    out=None,
    dtype=None,
    layout=None,
    device=None,
    requires_grad=False,
    pin_memory=False,
    memory_format=None,
) -> Tensor:
    """Return a tensor of zeros of the given size."""
    return _filled(np.zeros, size, dtype, device, requires_grad, out)


def ones(
    *size,
    out=None,
    dtype=None,
    layout=None,
    device=None,
    requires_grad=False,
    pin_memory=False,
    memory_format=None,
) -> Tensor:
    """Return a tensor of ones of the given size."""
    return _filled(np.ones, size, dtype, device, requires_grad, out)


def empty(
    *size,
    out=None,
    dtype=None,
    layout=None,
    device=None,
    requires_grad=False,
    pin_memory=False,
    memory_format=None,
) -> Tensor:
    """Return an uninitialized tensor of the given size."""
    return _filled(np.empty, size, dtype, device, requires_grad, out)


def full(
    size,
    fill_value,
    *,
    out=None,
    dtype=None,
    layout=None,
    device=None,
    requires_grad=False,
    pin_memory=False,
) -> Tensor:
    """Return a tensor of the given size filled with ``fill_value``."""
    if dtype is None:
        dtype = D.scalar_dtype(fill_value.item() if isinstance(fill_value, Tensor) else fill_value)
    value = fill_value._data if isinstance(fill_value, Tensor) else fill_value
    return _filled(
        lambda s, d: np.full(s, value, dtype=d), (tuple(size),), dtype, device, requires_grad, out
    )


def _like(fill):
    def like(
        input, *, dtype=None, layout=None, device=None, requires_grad=False, memory_format=None
    ):
        return _filled(fill, input._data.shape, dtype or input.dtype, device, requires_grad)

    return like


zeros_like = _like(np.zeros)
ones_like = _like(np.ones)
empty_like = _like(np.empty)
zeros_like.__doc__ = "Return a tensor of zeros with the shape (and dtype) of ``input``."
ones_like.__doc__ = "Return a tensor of ones with the shape (and dtype) of ``input``."
empty_like.__doc__ = "Return an uninitialized tensor with the shape (and dtype) of ``input``."


def full_like(
    input,
    fill_value,
    *,
    dtype=None,
    layout=None,
    device=None,
    requires_grad=False,
    memory_format=None,
) -> Tensor:
    """Return a tensor with the shape (and dtype) of ``input`` filled with ``fill_value``."""
    return full(
        input._data.shape, fill_value, dtype=dtype or input.dtype, requires_grad=requires_grad
    )


def _new(fill):
    def new(
        self, *size, dtype=None, device=None, requires_grad=False, layout=None, pin_memory=False
    ):
        return _filled(fill, size, dtype or self.dtype, device, requires_grad)

    return new


Tensor.new_zeros = _new(np.zeros)
Tensor.new_ones = _new(np.ones)
Tensor.new_empty = _new(np.empty)


def _new_full(
    self,
    size,
    fill_value,
    *,
    dtype=None,
    device=None,
    requires_grad=False,
    layout=None,
    pin_memory=False,
):
    return full(size, fill_value, dtype=dtype or self.dtype, requires_grad=requires_grad)


def _new_tensor(
    self, data, *, dtype=None, device=None, requires_grad=False, layout=None, pin_memory=False
):
    if isinstance(data, Tensor):
        data = data.detach()._data
    return tensor(data, dtype=dtype or self.dtype, requires_grad=requires_grad)


Tensor.new_full = _new_full
Tensor.new_tensor = _new_tensor


def eye(
    n: int,
    m: int | None = None,
    *,
    out=None,
    dtype=None,
    layout=None,
    device=None,
    requires_grad=False,
    pin_memory=False,
) -> Tensor:
    """Return a 2-D tensor with ones on the diagonal."""
    if n < 0:
        raise RuntimeError(f"n must be greater or equal to 0, got {n}")
    if m is not None and m < 0:
        raise RuntimeError(f"m must be greater or equal to 0, got {m}")
    return _finish(np.eye(n, m, dtype=_dt(dtype).np), requires_grad, device)


def _num(x):
    return x.item() if isinstance(x, Tensor) else x


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
    """Return the 1-D tensor ``[start, start+step, ...)`` up to ``end`` (exclusive)."""
    start, end, step = _num(start), _num(end), _num(step)
    if end is None:
        start, end = 0, start
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if (end - start) / step < 0:
        raise RuntimeError("upper bound and larger bound inconsistent with step sign")
    if dtype is None:
        dtype = (
            D.int64
            if all(
                isinstance(v, (int, np.integer)) and not isinstance(v, bool)
                for v in (start, end, step)
            )
            else D.get_default_dtype()
        )
    n = math.ceil((end - start) / step)
    if dtype.is_floating_point:
        # torch computes in double then casts
        arr = (start + np.arange(n, dtype=np.float64) * step).astype(dtype.np)
    else:
        arr = np.arange(start, start + n * step, step, dtype=np.int64)[:n].astype(dtype.np)
    return _finish(arr, requires_grad, device)


def linspace(
    start, end, steps: int, *, out=None, dtype=None, layout=None, device=None, requires_grad=False
) -> Tensor:
    """Return ``steps`` points evenly spaced from ``start`` to ``end`` inclusive."""
    start, end = _num(start), _num(end)
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    dt = _dt(dtype)
    if dt.is_floating_point or dt.is_complex:
        # torch fills the first half forward from start and the second half backward from end
        step = (end - start) / (steps - 1) if steps > 1 else 0.0
        i = np.arange(steps, dtype=np.float64)
        half = steps // 2
        arr = np.where(i < half, start + step * i, end - step * (steps - 1 - i))
        arr = arr.astype(dt.np)
    else:
        arr = np.linspace(start, end, steps).astype(dt.np)
    return _finish(arr, requires_grad, device)


def logspace(
    start,
    end,
    steps: int,
    base: float = 10.0,
    *,
    out=None,
    dtype=None,
    layout=None,
    device=None,
    requires_grad=False,
) -> Tensor:
    """Return ``steps`` points ``base ** linspace(start, end, steps)``."""
    exps = linspace(start, end, steps, dtype=D.float64)._data
    return _finish(np.power(base, exps).astype(_dt(dtype).np), requires_grad, device)


# ------------------------------------------------------------------------------ random


def _gen(generator):
    return _random.default_generator if generator is None else generator


def rand(
    *size,
    generator=None,
    out=None,
    dtype=None,
    layout=None,
    device=None,
    requires_grad=False,
    pin_memory=False,
) -> Tensor:
    """Return a tensor of samples from the uniform distribution on [0, 1)."""
    shape = _sizes(size)
    return _finish(_gen(generator)._uniform(shape, 0.0, 1.0, _dt(dtype).np), requires_grad, device)


def randn(
    *size,
    generator=None,
    out=None,
    dtype=None,
    layout=None,
    device=None,
    requires_grad=False,
    pin_memory=False,
) -> Tensor:
    """Return a tensor of samples from the standard normal distribution."""
    shape = _sizes(size)
    return _finish(_gen(generator)._normal(shape, 0.0, 1.0, _dt(dtype).np), requires_grad, device)


def randint(
    low=0,
    high=None,
    size=None,
    *,
    generator=None,
    out=None,
    dtype=None,
    layout=None,
    device=None,
    requires_grad=False,
    pin_memory=False,
) -> Tensor:
    """Return a tensor of random integers in [low, high) (int64 unless ``dtype``)."""
    if size is None:
        if high is None or isinstance(high, (tuple, list)):
            low, high, size = 0, low, high
        else:
            raise TypeError("randint() missing 1 required positional argument: 'size'")
    if high is None:
        low, high = 0, low
    dt = D.int64 if dtype is None else dtype
    arr = _gen(generator)._randint(int(low), int(high), tuple(size), dt.np)
    return _finish(arr, requires_grad, device)


def randperm(
    n: int,
    *,
    generator=None,
    out=None,
    dtype=None,
    layout=None,
    device=None,
    requires_grad=False,
    pin_memory=False,
) -> Tensor:
    """Return a random permutation of ``0..n-1``."""
    dt = D.int64 if dtype is None else dtype
    return _finish(_gen(generator)._randperm(int(n), dt.np), requires_grad, device)


def rand_like(
    input, *, dtype=None, layout=None, device=None, requires_grad=False, memory_format=None
) -> Tensor:
    """Return uniform [0, 1) samples with the shape (and dtype) of ``input``."""
    return rand(input._data.shape, dtype=dtype or input.dtype, requires_grad=requires_grad)


def randn_like(
    input, *, dtype=None, layout=None, device=None, requires_grad=False, memory_format=None
) -> Tensor:
    """Return standard normal samples with the shape (and dtype) of ``input``."""
    return randn(input._data.shape, dtype=dtype or input.dtype, requires_grad=requires_grad)


def randint_like(
    input,
    low=0,
    high=None,
    *,
    dtype=None,
    layout=None,
    device=None,
    requires_grad=False,
    memory_format=None,
) -> Tensor:
    """Return random integers in [low, high) with the shape (and dtype) of ``input``."""
    if high is None:
        low, high = 0, low
    return randint(
        low, high, input._data.shape, dtype=dtype or input.dtype, requires_grad=requires_grad
    )


def normal(
    mean=0.0,
    std=1.0,
    size=None,
    *,
    generator=None,
    out=None,
    dtype=None,
    layout=None,
    device=None,
    requires_grad=False,
    pin_memory=False,
) -> Tensor:
    """Return samples from normal distributions with the given mean(s) and std(s)."""
    m = mean._data if isinstance(mean, Tensor) else mean
    s = std._data if isinstance(std, Tensor) else std
    if size is not None:
        shape = tuple(size)
        dt = _dt(dtype)
    else:
        if not isinstance(mean, Tensor) and not isinstance(std, Tensor):
            raise TypeError(
                "normal() received an invalid combination of arguments: size is "
                "required when mean and std are numbers"
            )
        shape = np.broadcast_shapes(np.shape(m), np.shape(s))
        dts = [t.dtype for t in (mean, std) if isinstance(t, Tensor)]
        dt = dts[0] if len(dts) == 1 else D.promote_types(*dts)
    return _finish(_gen(generator)._normal(shape, m, s, dt.np), requires_grad, device)


def bernoulli(input, p=None, *, generator=None, out=None) -> Tensor:
    """Return 0/1 samples, each 1 with probability ``input`` (or the scalar ``p``)."""
    prob = input._data if p is None else p
    return _wrap(_gen(generator)._bernoulli(prob, input._data.shape, input.dtype.np))


def multinomial(
    input, num_samples: int, replacement: bool = False, *, generator=None, out=None
) -> Tensor:
    """Return indices sampled from the (unnormalised) rows of ``input``."""
    probs = input._data
    arr = _gen(generator)._multinomial(
        probs.reshape(-1, probs.shape[-1]) if probs.ndim else probs, num_samples, replacement
    )
    if probs.ndim == 1:
        arr = arr.reshape(-1)
    return _wrap(np.asarray(arr, dtype=np.int64))


def _fill_inplace(self: Tensor, arr: np.ndarray) -> Tensor:
    # random fillers are leaf writes: allowed under no_grad, an error on a leaf needing grad
    if STATE.grad_enabled and self._requires_grad and self.grad_fn is None:
        raise RuntimeError(
            "a leaf Variable that requires grad is being used in an in-place operation."
        )
    np.copyto(self._data, arr, casting="unsafe")
    self._vc[0] += 1
    return self


def _uniform_(self, a: float = 0.0, b: float = 1.0, *, generator=None):
    return _fill_inplace(self, _gen(generator)._uniform(self._data.shape, a, b, self.dtype.np))


def _normal_(self, mean: float = 0.0, std: float = 1.0, *, generator=None):
    return _fill_inplace(self, _gen(generator)._normal(self._data.shape, mean, std, self.dtype.np))


def _random_(self, from_=0, to=None, *, generator=None):
    if to is None:
        if from_ != 0:
            from_, to = 0, from_
        elif self.dtype.is_floating_point:
            to = 2 ** (np.finfo(np.float32).nmant + 1) if self.dtype is not D.float64 else 2**53
            to = to + 1
        elif self.dtype is D.bool:
            to = 2
        else:
            to = int(np.iinfo(self.dtype.np).max) + 1
    return _fill_inplace(
        self, _gen(generator)._randint(int(from_), int(to), self._data.shape, self.dtype.np)
    )


def _bernoulli_(self, p=0.5, *, generator=None):
    prob = p._data if isinstance(p, Tensor) else p
    return _fill_inplace(self, _gen(generator)._bernoulli(prob, self._data.shape, self.dtype.np))


def _exponential_(self, lambd: float = 1.0, *, generator=None):
    return _fill_inplace(self, _gen(generator)._exponential(self._data.shape, lambd, self.dtype.np))


def _geometric_(self, p: float, *, generator=None):
    return _fill_inplace(self, _gen(generator)._geometric(self._data.shape, p, self.dtype.np))


def _cauchy_(self, median: float = 0.0, sigma: float = 1.0, *, generator=None):
    return _fill_inplace(
        self, _gen(generator)._cauchy(self._data.shape, median, sigma, self.dtype.np)
    )


def _log_normal_(self, mean: float = 1.0, std: float = 2.0, *, generator=None):
    return _fill_inplace(
        self, _gen(generator)._log_normal(self._data.shape, mean, std, self.dtype.np)
    )


Tensor.uniform_ = _uniform_
Tensor.normal_ = _normal_
Tensor.random_ = _random_
Tensor.bernoulli_ = _bernoulli_
Tensor.exponential_ = _exponential_
Tensor.geometric_ = _geometric_
Tensor.cauchy_ = _cauchy_
Tensor.log_normal_ = _log_normal_
Tensor.bernoulli = lambda self, p=None, *, generator=None: bernoulli(self, p, generator=generator)
Tensor.multinomial = multinomial

for _f in (
    tensor,
    as_tensor,
    asarray,
    from_numpy,
    zeros,
    ones,
    empty,
    full,
    zeros_like,
    ones_like,
    empty_like,
    full_like,
    eye,
    arange,
    linspace,
    logspace,
    rand,
    randn,
    randint,
    randperm,
    rand_like,
    randn_like,
    randint_like,
    normal,
    bernoulli,
    multinomial,
):
    expose(_f, method=False)

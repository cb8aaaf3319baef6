"""Random sampling: ``rand``, ``randn``, ``randint``, ``randperm``, ``normal``, ``bernoulli``,
``multinomial``, the ``*_like`` samplers and the in-place fillers (``uniform_``, ``normal_``,
``random_``, ``bernoulli_``...). The numbers come from :mod:`ember.random`'s generators; this
file gives them torch's signatures, dtypes, layouts, errors and autograd behaviour (a filler
cuts a tensor's history: the gradient through it is zero).
"""

from __future__ import annotations

import operator

import numpy as np

from ember import _torch_rng
from ember import random as _random
from ember._core import dtype as D
from ember._core.device import as_device
from ember._core.dtype import scalar_type_name
from ember._core.tensor import Tensor
from ember._ops.creation import (
    _check_input,
    _dt,
    _empty_like,
    _finish,
    _into_out,
    _number,
    _out_dtype,
    _result,
    _size,
    _type_name,
    zeros_like,
)
from ember._ops.registry import composite, dispatch, dispatch_inplace, op, publish

# ------------------------------------------------------------------------------ random


def _gen(fn: str, generator):
    if generator is None:
        return _random.default_generator
    if not isinstance(generator, _random.Generator):
        raise TypeError(
            f"{fn}(): argument 'generator' must be torch.Generator, not {_type_name(generator)}"
        )
    return generator


@composite("aten::rand")  # the profiler's aten::rand range
def rand(
    *args,
    size=None,
    generator=None,
    out=None,
    dtype=None,
    layout=None,
    device=None,
    requires_grad=False,
    pin_memory=False,
) -> Tensor:
    """Return a tensor of samples from the uniform distribution on [0, 1)."""
    dt = _out_dtype(dtype, out, "rand")
    as_device(device)
    shape = _size("rand", args, size)
    arr = _gen("rand", generator)._uniform(shape, 0.0, 1.0, dt.np)
    return _result(arr, requires_grad, out)


@composite("aten::randn")  # the profiler's aten::randn range
def randn(
    *args,
    size=None,
    generator=None,
    out=None,
    dtype=None,
    layout=None,
    device=None,
    requires_grad=False,
    pin_memory=False,
) -> Tensor:
    """Return a tensor of samples from the standard normal distribution."""
    dt = _out_dtype(dtype, out, "randn")
    as_device(device)
    shape = _size("randn", args, size)
    arr = _gen("randn", generator)._normal(shape, 0.0, 1.0, dt.np)
    return _result(arr, requires_grad, out)


def _int_arg(fn: str, name: str, v) -> int:
    if isinstance(v, (bool, float, np.floating, complex)) or not hasattr(v, "__index__"):
        raise TypeError(f"{fn}(): argument '{name}' must be int, not {_type_name(v)}")
    return operator.index(v)


def _check_random_dtype(dt: D.dtype) -> None:
    if dt.is_complex:
        raise RuntimeError(
            "check_random_bounds handles only integral, floating-point and boolean types"
        )


@composite("aten::randint")  # the profiler's aten::randint range
def randint(
    *args,
    size=None,
    generator=None,
    out=None,
    dtype=None,
    layout=None,
    device=None,
    requires_grad=False,
    pin_memory=False,
    low=None,
    high=None,
) -> Tensor:
    """Return a tensor of random integers in [low, high): ``randint(high, size)`` or
    ``randint(low, high, size)`` (int64 unless ``dtype``)."""
    args = list(args)
    if size is None and args and isinstance(args[-1], (tuple, list)):
        size = args.pop()
    if high is None:
        if not args:
            raise TypeError("randint() missing required argument 'high'")
        high = args.pop()
    if args:
        if low is not None:
            raise TypeError("randint() got multiple values for argument 'low'")
        low = args.pop()
    if args or size is None:
        raise TypeError(
            "randint() received an invalid combination of arguments: expected "
            "(int high, tuple of ints size) or (int low, int high, tuple of ints size)"
        )
    low = 0 if low is None else _int_arg("randint", "low", low)
    high = _int_arg("randint", "high", high)
    dt = D.int64 if dtype is None and out is None else _out_dtype(dtype, out, "randint")
    as_device(device)
    shape = _size("randint", (size,), single_int=False)
    _check_random_dtype(dt)
    arr = _gen("randint", generator)._randint(low, high, shape, dt.np)
    return _result(arr, requires_grad, out)


@composite("aten::randperm")  # the profiler's aten::randperm range
def randperm(
    n,
    *,
    generator=None,
    out=None,
    dtype=None,
    layout=None,
    device=None,
    requires_grad=False,
    pin_memory=False,
) -> Tensor:
    """Return a random permutation of ``0 .. n-1`` (int64 unless ``dtype``)."""
    n = _int_arg("randperm", "n", n)
    dt = D.int64 if dtype is None and out is None else _out_dtype(dtype, out, "randperm")
    as_device(device)
    arr = _gen("randperm", generator)._randperm(n, dt.np)
    return _result(np.ascontiguousarray(arr), requires_grad, out)


def _like_random(fn: str, input, dtype, device, requires_grad, memory_format, sample):
    _check_input(fn, input)
    dt = input.dtype if dtype is None else _dt(dtype, fn)
    as_device(device)
    arr = _empty_like(input._data, dt.np, memory_format)
    arr[...] = sample(input._data.shape, dt)
    return _finish(arr, requires_grad)


@composite("aten::rand_like")  # the profiler's aten::rand_like range
def rand_like(
    input,
    *,
    generator=None,
    dtype=None,
    layout=None,
    device=None,
    requires_grad=False,
    memory_format=None,
) -> Tensor:
    """Return uniform [0, 1) samples with the shape, dtype and layout of ``input``."""
    g = _gen("rand_like", generator)
    return _like_random(
        "rand_like",
        input,
        dtype,
        device,
        requires_grad,
        memory_format,
        lambda shape, dt: g._uniform(shape, 0.0, 1.0, dt.np),
    )


@composite("aten::randn_like")  # the profiler's aten::randn_like range
def randn_like(
    input,
    *,
    generator=None,
    dtype=None,
    layout=None,
    device=None,
    requires_grad=False,
    memory_format=None,
) -> Tensor:
    """Return standard normal samples with the shape, dtype and layout of ``input``."""
    g = _gen("randn_like", generator)
    return _like_random(
        "randn_like",
        input,
        dtype,
        device,
        requires_grad,
        memory_format,
        lambda shape, dt: g._normal(shape, 0.0, 1.0, dt.np),
    )


@composite("aten::randint_like")  # the profiler's aten::randint_like range
def randint_like(
    input,
    *args,
    low=None,
    high=None,
    generator=None,
    dtype=None,
    layout=None,
    device=None,
    requires_grad=False,
    memory_format=None,
) -> Tensor:
    """Return random integers in [low, high) with the shape, dtype and layout of ``input``:
    ``randint_like(input, high)`` or ``randint_like(input, low, high)``."""
    args = list(args)
    if high is None:
        if not args:
            raise TypeError("randint_like() missing required argument 'high'")
        high = args.pop()
    if args:
        low = args.pop()
    if args:
        raise TypeError("randint_like() takes at most 3 positional arguments")
    low = 0 if low is None else _int_arg("randint_like", "low", low)
    high = _int_arg("randint_like", "high", high)
    g = _gen("randint_like", generator)

    def sample(shape, dt):
        _check_random_dtype(dt)
        return g._randint(low, high, shape, dt.np)

    return _like_random("randint_like", input, dtype, device, requires_grad, memory_format, sample)


def _broadcast_shape(a: tuple, b: tuple) -> tuple:
    """Return the broadcast of two shapes, or raise torch's RuntimeError."""
    n = max(len(a), len(b))
    a = (1,) * (n - len(a)) + tuple(a)
    b = (1,) * (n - len(b)) + tuple(b)
    out = []
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y and x != 1 and y != 1:
            raise RuntimeError(
                f"The size of tensor a ({x}) must match the size of tensor b ({y}) at "
                f"non-singleton dimension {i}"
            )
        out.append(y if x == 1 else x)
    return tuple(out)


@op("normal", grad_fn="NormalBackward1")
def _normal_t_f(mean, std, gen):
    return gen._normal(None, mean, std, mean.dtype)


@op("normal", grad_fn="NormalBackward2")
def _normal_f_t(std, mean, gen):
    return gen._normal(None, mean, std, std.dtype)


@op("normal", grad_fn="NormalBackward3")
def _normal_t_t(mean, std, gen):
    shape = _broadcast_shape(mean.shape, std.shape)
    return gen._normal(shape, mean, std, mean.dtype)


def _zero_grads(n: int):
    def backward(ctx, grad, **params):
        need = ctx.needs_input_grad
        return tuple(zeros_like(grad) if need[i] else None for i in range(n))

    return backward


_normal_t_f.backward(_zero_grads(1))
_normal_f_t.backward(_zero_grads(1))
_normal_t_t.backward(_zero_grads(2))


@composite("aten::normal")  # the profiler's aten::normal range
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
    """Return samples from normal distributions: ``normal(mean, std)`` with a Tensor mean
    and/or std (elementwise, broadcast), or ``normal(mean, std, size)`` with numbers."""
    g = _gen("normal", generator)
    tm, ts = isinstance(mean, Tensor), isinstance(std, Tensor)
    if tm or ts:
        if size is not None:
            raise TypeError(
                "normal() received an invalid combination of arguments: size is only "
                "accepted when mean and std are numbers"
            )
        if tm and ts:
            res = dispatch(_normal_t_t, (mean, std), {"gen": g})
        elif tm:
            res = dispatch(_normal_t_f, (mean,), {"std": _number("normal", std, "std"), "gen": g})
        else:
            res = dispatch(
                _normal_f_t, (std,), {"mean": _number("normal", mean, "mean", 1), "gen": g}
            )
        return res if out is None else _into_out(out, res._data)
    if size is None:
        raise TypeError(
            "normal() received an invalid combination of arguments: 'size' is required when "
            "mean and std are numbers"
        )
    dt = _out_dtype(dtype, out, "normal")
    as_device(device)
    shape = _size("normal", (size,), single_int=False)
    arr = g._normal(shape, _number("normal", mean, "mean", 1), _number("normal", std, "std"), dt.np)
    return _result(arr, requires_grad, out)


@op("bernoulli", grad_fn="BernoulliBackward0")
def _bernoulli_t(p, gen):
    return gen._bernoulli(p, p.shape, p.dtype)


_bernoulli_t.backward(_zero_grads(1))


@op("bernoulli", grad_fn="NotImplemented")
def _bernoulli_p(x, p, gen):
    return gen._bernoulli(p, x.shape, x.dtype)


@_bernoulli_p.backward
def _(ctx, grad, **params):
    raise RuntimeError("derivative for aten::bernoulli is not implemented")


def bernoulli(input, p=None, *, generator=None, out=None) -> Tensor:
    """Return 0/1 samples shaped as ``input``, each 1 with probability ``input`` (or ``p``)."""
    _check_input("bernoulli", input)
    g = _gen("bernoulli", generator)
    if not input.dtype.is_floating_point:
        kind = "bernoulli_tensor_cpu_p_" if p is None else "bernoulli_scalar_cpu_"
        raise NotImplementedError(
            f"\"{kind}\" not implemented for '{scalar_type_name(input.dtype)}'"
        )
    if p is None:
        res = dispatch(_bernoulli_t, (input,), {"gen": g})
    else:
        res = dispatch(_bernoulli_p, (input,), {"p": _number("bernoulli", p, "p"), "gen": g})
    return res if out is None else _into_out(out, res._data)


@op("poisson", grad_fn="PoissonBackward0")
def _poisson(rates, gen):
    return _torch_rng.poisson(gen, rates).astype(rates.dtype)  # torch's sampler


_poisson.backward(_zero_grads(1))


def poisson(input, generator=None) -> Tensor:
    """Return samples of Poisson distributions with the rates ``input`` (its dtype)."""
    _check_input("poisson", input)
    g = _gen("poisson", generator)
    if not input.dtype.is_floating_point:
        raise NotImplementedError(
            f"\"poisson_cpu\" not implemented for '{scalar_type_name(input.dtype)}'"
        )
    if np.any(input._data < 0) or np.any(np.isnan(input._data)):
        raise RuntimeError("invalid Poisson rate, expected rate to be non-negative")
    return dispatch(_poisson, (input,), {"gen": g})


@op("binomial", grad_fn="NotImplemented")
def _binomial(count, prob, gen):
    return _torch_rng.binomial(gen, count, prob).astype(count.dtype)  # torch's sampler


@_binomial.backward
def _(ctx, grad, **params):
    raise RuntimeError("derivative for aten::binomial is not implemented")


def binomial(count, prob, generator=None) -> Tensor:
    """Return samples of binomial distributions with ``count`` trials of success
    probability ``prob`` (floating tensors of one dtype)."""
    _check_input("binomial", count)
    _check_input("binomial", prob)
    if prob.dtype is not count.dtype:
        raise RuntimeError(
            f"Found dtype {scalar_type_name(prob.dtype)} but expected "
            f"{scalar_type_name(count.dtype)}"
        )
    if not count.dtype.is_floating_point:
        raise NotImplementedError(
            f"\"binomial_cpu\" not implemented for '{scalar_type_name(count.dtype)}'"
        )
    p = prob._data
    if np.any((p < 0) | (p > 1) | np.isnan(p)):
        raise RuntimeError("binomial: prob must be in [0, 1]")
    return dispatch(_binomial, (count, prob), {"gen": _gen("binomial", generator)})


def multinomial(
    input, num_samples: int, replacement: bool = False, *, generator=None, out=None
) -> Tensor:
    """Return indices sampled from the (unnormalised) rows of ``input`` (1-D or 2-D)."""
    _check_input("multinomial", input)
    n = _int_arg("multinomial", "num_samples", num_samples)
    arr = _gen("multinomial", generator)._multinomial(input._data, n, bool(replacement))
    return _result(np.asarray(arr, dtype=np.int64), False, out)


# ------------------------------------------------------------------------------ in-place fillers
# Each writes fresh samples into self; on a tensor with history the result's gradient is zero.

_FLOAT_DIGITS = {"float16": 11, "bfloat16": 8, "float32": 24, "float64": 53}


def _sampler(name: str, grad_fn: str, sample):
    """An in-place filler op: ``sample(shape, x, **params)`` draws in C order of ``shape``;
    a permuted ``x`` gets its samples in memory order, as torch's kernels write them."""

    def fill(x, **params):
        order = _torch_rng.fill_order(x)
        if order is None:
            return sample(x.shape, x, **params)
        drawn = sample(tuple(x.shape[i] for i in order), x, **params)
        return drawn.transpose(np.argsort(order))

    fwd = op(name, grad_fn=grad_fn)(fill)
    fwd.backward(_zero_grads(1))
    return fwd


_uniform_op = _sampler(
    "uniform_", "UniformBackward0", lambda sh, x, gen, a, b: gen._uniform(sh, a, b, x.dtype)
)
_normal_op = _sampler(
    "normal_",
    "NormalBackward0",
    lambda sh, x, gen, m, s: gen._normal(sh, m, s, x.dtype, x.flags.c_contiguous),
)
_random_ops = [
    _sampler(
        "random_",
        f"RandomBackward{i}",
        lambda sh, x, gen, lo, hi: gen._randint(lo, hi, sh, x.dtype),
    )
    for i in range(3)
]
_bernoulli_f_op = _sampler(
    "bernoulli_",
    "BernoulliBackward2",
    lambda sh, x, gen, p: gen._bernoulli(p, sh, x.dtype),
)
_exponential_op = _sampler(
    "exponential_",
    "ExponentialBackward0",
    lambda sh, x, gen, lambd: gen._exponential(sh, lambd, x.dtype),
)
_geometric_op = _sampler(
    "geometric_", "GeometricBackward0", lambda sh, x, gen, p: gen._geometric(sh, p, x.dtype)
)
_cauchy_op = _sampler(
    "cauchy_", "CauchyBackward0", lambda sh, x, gen, m, s: gen._cauchy(sh, m, s, x.dtype)
)
_log_normal_op = _sampler(
    "log_normal_",
    "LogNormalBackward0",
    lambda sh, x, gen, m, s: gen._log_normal(sh, m, s, x.dtype),
)


@op("bernoulli_", grad_fn="BernoulliBackward1")
def _bernoulli_tensor_op(x, p, gen):
    return gen._bernoulli(p, x.shape, x.dtype)


_bernoulli_tensor_op.backward(_zero_grads(2))


def _parse(fn: str, args: tuple, kwargs: dict, spec: tuple) -> list:
    """Bind positional and keyword arguments (``from`` is a Python keyword) to ``spec``:
    ``((name, default), ...)``; raise TypeError for unknown or repeated ones."""
    if len(args) > len(spec):
        raise TypeError(f"{fn}() takes at most {len(spec)} arguments ({len(args)} given)")
    values = list(args) + [d for _, d in spec[len(args) :]]
    names = [n for n, _ in spec]
    for k, v in kwargs.items():
        if k not in names:
            raise TypeError(f"{fn}() got an unexpected keyword argument '{k}'")
        i = names.index(k)
        if i < len(args):
            raise TypeError(f"{fn}() got multiple values for argument '{k}'")
        values[i] = v
    return values


def _uniform_(self, *args, generator=None, **kwargs):
    """Fill ``self`` with samples from the uniform distribution on [from, to); return self."""
    lo, hi = _parse("uniform_", args, kwargs, (("from", 0.0), ("to", 1.0)))
    g = _gen("uniform_", generator)
    return dispatch_inplace(_uniform_op, self, (self,), {"gen": g, "a": lo, "b": hi})


def _normal_(self, mean=0.0, std=1.0, *, generator=None):
    """Fill ``self`` with samples from N(mean, std**2); return self."""
    g = _gen("normal_", generator)
    return dispatch_inplace(_normal_op, self, (self,), {"gen": g, "m": mean, "s": std})


def _random_(self, *args, generator=None, **kwargs):
    """Fill ``self`` with integers uniform on [from, to - 1] (``random_(to)``,
    ``random_(from, to)``; without bounds, every integer the dtype holds exactly)."""
    g = _gen("random_", generator)
    if len(args) == 1 and not kwargs:
        kwargs = {"to": args[0]}
        args = ()
    if "from" in kwargs and "to" not in kwargs and not args:
        raise TypeError(
            "random_() received an invalid combination of arguments - got (from=int, ), but "
            "expected one of: (*, Generator generator), (int from, int to, *, Generator "
            "generator), (int to, *, Generator generator)"
        )
    if "from" not in kwargs and not args and "to" not in kwargs:
        which, lo, hi = 2, 0, None
    elif "from" not in kwargs and not args:
        which, lo, hi = 1, 0, kwargs["to"]
    else:
        lo, hi = _parse("random_", args, kwargs, (("from", 0), ("to", None)))
        which = 0
    dt = self.dtype
    if dt.is_complex:
        raise NotImplementedError(
            f"\"random_kernel_cpu\" not implemented for '{scalar_type_name(dt)}'"
        )
    lo = _int_arg("random_", "from", lo)
    if hi is None:
        if dt.is_floating_point:
            hi = (1 << _FLOAT_DIGITS[dt.name]) + 1
        elif dt is D.bool:
            hi = 2
        else:
            hi = int(np.iinfo(dt.np).max) + 1
    hi = _int_arg("random_", "to", hi)
    params = {"gen": g, "lo": lo, "hi": hi}
    return dispatch_inplace(_random_ops[which], self, (self,), params)


def _bernoulli_(self, p=0.5, *, generator=None):
    """Fill ``self`` with 0/1 draws, each 1 with probability ``p`` (number or Tensor)."""
    g = _gen("bernoulli_", generator)
    if self.dtype.is_complex:
        kind = "bernoulli_tensor_cpu_self_" if isinstance(p, Tensor) else "bernoulli_scalar_cpu_"
        raise NotImplementedError(
            f"\"{kind}\" not implemented for '{scalar_type_name(self.dtype)}'"
        )
    if isinstance(p, Tensor):
        try:
            np.broadcast_to(np.empty(p._data.shape, dtype=np.bool_), self._data.shape)
        except ValueError:
            raise RuntimeError(
                f"expand({p.type()}{{{list(p.shape)}}}, size={list(self.shape)}): the number "
                "of sizes provided must be greater or equal to the number of dimensions in the "
                "tensor, and every size must match"
            ) from None
        return dispatch_inplace(_bernoulli_tensor_op, self, (self, p), {"gen": g})
    p = _number("bernoulli_", p, "p", 1)
    return dispatch_inplace(_bernoulli_f_op, self, (self,), {"gen": g, "p": p})


def _exponential_(self, lambd=1.0, *, generator=None):
    """Fill ``self`` with samples from the exponential distribution of rate ``lambd``."""
    g = _gen("exponential_", generator)
    return dispatch_inplace(_exponential_op, self, (self,), {"gen": g, "lambd": lambd})


def _geometric_(self, p, *, generator=None):
    """Fill ``self`` with samples from the geometric distribution (trials to a success)."""
    g = _gen("geometric_", generator)
    if self.dtype is D.bool or self.dtype.is_complex:
        raise NotImplementedError(
            f"\"geometric_cpu\" not implemented for '{scalar_type_name(self.dtype)}'"
        )
    return dispatch_inplace(_geometric_op, self, (self,), {"gen": g, "p": p})


def _cauchy_(self, median=0.0, sigma=1.0, *, generator=None):
    """Fill ``self`` with samples from the Cauchy distribution."""
    g = _gen("cauchy_", generator)
    return dispatch_inplace(_cauchy_op, self, (self,), {"gen": g, "m": median, "s": sigma})


def _log_normal_(self, mean=1.0, std=2.0, *, generator=None):
    """Fill ``self`` with samples ``exp(N(mean, std**2))``."""
    g = _gen("log_normal_", generator)
    return dispatch_inplace(_log_normal_op, self, (self,), {"gen": g, "m": mean, "s": std})


def _bernoulli_method(self, p=None, *, generator=None):
    """Return :func:`bernoulli` of ``self``."""
    return bernoulli(self, p, generator=generator)


# the in-place samplers: Tensor methods only (``name`` without its ``_``)
for _o, _m in (
    (_uniform_op, _uniform_),
    (_normal_op, _normal_),
    (_random_ops[0], _random_),
    (_bernoulli_f_op, _bernoulli_),
    (_exponential_op, _exponential_),
    (_geometric_op, _geometric_),
    (_cauchy_op, _cauchy_),
    (_log_normal_op, _log_normal_),
):
    publish(_o, name=_m.__name__[1:-1], function=False, method=False, inplace=_m)


for _f in (
    rand,
    randn,
    randint,
    randperm,
    rand_like,
    randn_like,
    randint_like,
    normal,
    poisson,
    binomial,
):
    publish(None, _f, method=False)
publish(None, bernoulli, method=_bernoulli_method)
publish(None, multinomial)

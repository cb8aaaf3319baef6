"""Pointwise ops of up to three tensors: clamp (clip, clamp_min, clamp_max), lerp, addcmul,
addcdiv.

clamp passes the gradient at a boundary to ``input``, as torch; the bounds may be numbers or
tensors (with torch's overload rules for mixing them).
"""

from __future__ import annotations

import numpy as np

from ember._core import dtype as D
from ember._core.tensor import Tensor, _wrap
from ember._ops.convert import scalar_value
from ember._ops.pointwise import (
    _cast,
    _conj,
    _reduced,
    checked_scalar,
    deprecated_scalar_first,
    dkind,
    like,
    need_tensor,
    not_implemented,
    where,
    with_out,
)
from ember._ops.registry import (
    _EMPTY,
    SAME,
    check_python_int,
    dispatch,
    dispatch_inplace,
    op,
    publish,
    result_dtype,
)


def _mask(a) -> Tensor:
    return _wrap(np.asarray(a))


# ------------------------------------------------------------------------------ clamp


def _clamp_check(x, kernel):
    if dkind(x) == "c":
        raise NotImplementedError("clamp is not supported for complex types")
    if x.dtype == np.bool_:
        raise not_implemented(kernel, x)


def _bounded(np_fn, x, b, out=None):
    """``np_fn`` (maximum/minimum) of ``x`` and a bound, NaN propagating; where ``x`` equals
    the bound, ``x`` is kept (torch's clamp: ``clamp(0.0, min=-0.0)`` is ``0.0``). Equal floats
    differ only in the sign of zero, so only zero ties are looked at."""
    if dkind(x) != "f" or (np.ndim(b) == 0 and b != 0):
        return np_fn(x, b, out=out)
    tie = (x == 0) & (np.asarray(b) == 0)
    if not tie.any():
        return np_fn(x, b, out=out)
    r = np.where(tie, x, np_fn(x, b))
    if out is None:
        return r
    out[...] = r
    return out


@op("clamp", grad_fn="ClampBackward1", save=("self",))
def _clamp_scalar(x, min=None, max=None):  # noqa: A002 - torch's names
    if max is None:
        kernel = "clamp_min_scalar_cpu"
    else:
        kernel = "clamp_max_scalar_cpu" if min is None else "clamp_scalar_cpu"
    _clamp_check(x, kernel)
    # NaN in x or in a bound propagates (maximum/minimum, as torch's clamp)
    if min is not None:
        x = _bounded(np.maximum, x, _like(x, min))
    if max is not None:
        x = _bounded(np.minimum, x, _like(x, max))
    return x


_like = like


def _np_clamp_into(x, min=None, max=None, out=None):  # noqa: A002
    _clamp_scalar.forward(x.reshape(-1)[:0], min, max)  # the dtype checks
    r = x
    if min is not None:
        r = _bounded(np.maximum, r, _like(x, min), out=out)
    if max is not None:
        r = _bounded(np.minimum, r, _like(x, max), out=out)
    return r


@_clamp_scalar.backward
def _(ctx, g, min=None, max=None):  # noqa: A002
    (x,) = ctx.saved_tensors
    xa = x._data
    keep = np.ones(xa.shape, bool)
    if min is not None:
        keep &= xa >= min
    if max is not None:
        keep &= xa <= max
    return where(_mask(keep), g, 0.0)


@op("clamp", grad_fn="ClampBackward0", args=("self", "min", "max"), save=("self", "min", "max"))
def _clamp_tensor(x, lo, hi):
    if dkind(x) == "c":
        raise NotImplementedError("clamp is not supported for complex types")
    if lo is not None:
        x = _bounded(np.maximum, x, lo)
    if hi is not None:
        x = _bounded(np.minimum, x, hi)
    return x


@_clamp_tensor.backward
def _(ctx, g):
    x, lo, hi = ctx.saved_tensors
    need = ctx.needs_input_grad
    xa = x._data
    la = None if lo is None else lo._data
    ha = None if hi is None else hi._data
    gx = glo = ghi = None
    if need[0]:
        keep = np.ones(xa.shape, bool)
        if la is not None:
            keep = keep & (xa >= la)
        if ha is not None:
            keep = keep & (xa <= ha)
        gx = where(_mask(keep), g, 0.0)
    if la is not None and need[1]:
        to_lo = xa < la if ha is None else (xa < la) & (la < ha)
        glo = where(_mask(to_lo), g, 0.0)
    if ha is not None and need[2]:
        to_hi = xa > ha if la is None else (xa > ha) | (ha < la)
        ghi = where(_mask(to_hi), g, 0.0)
    return gx, glo, ghi


_clamp_into = _clamp_scalar.into(_np_clamp_into)


def _bound_tensor(b):
    # a scalar bound next to a Tensor bound becomes a 0-d tensor of the scalar's dtype
    if b is None or isinstance(b, Tensor):
        return b
    return _wrap(np.asarray(b, dtype=D.scalar_dtype(b).np))


def _clamp_plan(name, input, lo, hi, inplace=False):
    """Return (op, inputs, params) for clamp-like calls, inputs cast to the result dtype."""
    need_tensor(name, input)
    for b in (hi, lo):  # (torch's parser reads max first)
        if type(b) is int:
            check_python_int(b)
    if lo is None and hi is None:
        raise RuntimeError(f"torch.{name}: At least one of 'min' or 'max' must not be None")
    tensors = isinstance(lo, Tensor) or isinstance(hi, Tensor)
    if tensors and any(b is not None and not isinstance(b, Tensor) for b in (lo, hi)):
        # a number next to a tensor: torch's Scalar overload, which takes 0-d tensors only
        if any(isinstance(b, Tensor) and b._data.ndim for b in (lo, hi)):
            got = ", ".join(
                f"{k}={type(b).__name__}" for k, b in (("max", hi), ("min", lo)) if b is not None
            )
            raise TypeError(
                f"{name}() received an invalid combination of arguments - got (Tensor, {got}), "
                "but expected one of: (Tensor input, Tensor min, Tensor max) or (Tensor input, "
                "Number min, Number max)"
            )
        lo, hi = (b.item() if isinstance(b, Tensor) else b for b in (lo, hi))
        tensors = False
    if tensors:
        lo, hi = _bound_tensor(lo), _bound_tensor(hi)
    dt = result_dtype((input, lo, hi))
    if inplace and not D.can_cast(dt, input.dtype):
        raise RuntimeError(
            f"result type {D.scalar_type_name(dt)} can't be cast to the desired output type "
            # (torch names the output type by its C++ name in this message: 'signed char')
            f"{D.cpp_type_name(input.dtype)}"
        )
    if tensors:
        args = tuple(None if t is None else _cast(t, dt) for t in (input, lo, hi))
        return _clamp_tensor, args, _EMPTY
    params = {}
    if lo is not None:
        params["min"] = _bound_value(lo, dt)
    if hi is not None:
        params["max"] = _bound_value(hi, dt)
    return _clamp_scalar, (_cast(input, dt),), params


def _bound_value(b, dt):
    # an integer tensor's bound is converted to its dtype as torch converts it: raising when it
    # does not fit (uint8 wraps down to -255); float bounds were promoted to a float dtype
    if dt.is_floating_point or dt.is_complex or dt is D.bool:
        if dt is not D.bool:
            scalar_value(b, dt)  # a float32 bound past its range raises, as torch
        return b
    return scalar_value(b, dt).item()


_NUMBERS = (float, int, type(None))
_F32_BOUND = 9.2e18  # numbers within it fit every dtype but float16, and int64 (else: checked)


def clamp(input: Tensor, min=None, max=None, *, out: Tensor | None = None) -> Tensor:  # noqa: A002
    """Return ``input`` with its elements clamped into ``[min, max]`` (scalars or tensors)."""
    if (
        out is None
        and type(min) in _NUMBERS
        and type(max) in _NUMBERS
        and (min is not None or max is not None)
        and isinstance(input, Tensor)
        and input.dtype.is_floating_point
        and input.dtype is not D.float16
        and (min is None or -_F32_BOUND < min < _F32_BOUND)
        and (max is None or -_F32_BOUND < max < _F32_BOUND)
    ):
        # the common case: numbers on a float tensor need no promotion
        if max is None:
            return dispatch(_clamp_scalar, (input,), {"min": min})
        if min is None:
            return dispatch(_clamp_scalar, (input,), {"max": max})
        return dispatch(_clamp_scalar, (input,), {"min": min, "max": max})
    cop, args, params = _clamp_plan("clamp", input, min, max)
    if out is None:
        return dispatch(cop, args, params)
    return with_out("clamp", cop, args, params, out)


def _clamp_(self, min=None, max=None):  # noqa: A002
    cop, args, params = _clamp_plan("clamp", self, min, max, inplace=True)
    if cop is _clamp_scalar and args[0] is self:
        return dispatch_inplace(_clamp_into, self, args, {**params, "out": self._data})
    return dispatch_inplace(cop, self, args, params)


def _one_sided(name, kind, grad_scalar, grad_tensor):
    # clamp_min / clamp_max: their own grad_fn names, and a Tensor bound is required or a number
    scalar_op = op(name, grad_fn=grad_scalar, save=("self",))(
        lambda x, bound: _clamp_scalar.forward(x, **{kind: bound})
    )
    scalar_op.backward(lambda ctx, g, bound: _clamp_scalar.backward_fn(ctx, g, **{kind: bound}))
    tensor_op = op(name, grad_fn=grad_tensor, args=("self", kind), save=("self", kind))(
        lambda x, b: _clamp_tensor.forward(x, *((b, None) if kind == "min" else (None, b)))
    )

    @tensor_op.backward
    def _(ctx, g):
        x, b = ctx.saved_tensors
        need = ctx.needs_input_grad
        xa, ba = x._data, b._data
        inside, outside = (xa >= ba, xa < ba) if kind == "min" else (xa <= ba, xa > ba)
        return (
            where(_mask(inside), g, 0.0) if need[0] else None,
            where(_mask(outside), g, 0.0) if need[1] else None,
        )

    def plan(input, bound, inplace=False):
        if bound is None:
            raise TypeError(
                f"{name}() received an invalid combination of arguments - got (Tensor, "
                f"NoneType), but expected one of: (Tensor input, Tensor {kind}) or (Tensor "
                f"input, Number {kind})"
            )
        lo, hi = (bound, None) if kind == "min" else (None, bound)
        cop, args, params = _clamp_plan(name, input, lo, hi, inplace)
        if cop is _clamp_tensor:
            return tensor_op, (args[0], args[1] if kind == "min" else args[2]), _EMPTY
        return scalar_op, args, {"bound": params.get(kind, bound)}  # converted as clamp's

    def fn(input: Tensor, bound, *, out: Tensor | None = None) -> Tensor:
        o, args, params = plan(input, bound)
        if out is None:
            return dispatch(o, args, params)
        return with_out(name, o, args, params, out)

    def inplace(self, bound):
        o, args, params = plan(self, bound, True)
        return dispatch_inplace(o, self, args, params)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Return ``input`` clamped {'below' if kind == 'min' else 'above'} by ``{kind}``."
    inplace.__name__ = name + "_"
    return publish(scalar_op, fn, inplace=inplace)


publish(_clamp_scalar, clamp, aliases=("clip",), inplace=_clamp_)
clip = clamp
clamp_min = _one_sided("clamp_min", "min", "ClampMinBackward0", "ClampMinBackward1")
clamp_max = _one_sided("clamp_max", "max", "ClampMaxBackward0", "ClampMaxBackward1")

# ------------------------------------------------------------------------------ lerp


def _lerp_kernel(x, end, w):
    # torch's form: exact at both ends, whichever side the weight is on
    small = np.abs(w) < 0.5
    return np.where(small, x + w * (end - x), end - (end - x) * (1 - w))


def _lerp_forward(kernel):
    def forward(x, end, weight):
        if dkind(x) not in "fc":
            raise not_implemented(kernel, x)
        wdt = np.float32 if x.dtype in _HALF else x.dtype
        w = weight.astype(wdt) if isinstance(weight, np.ndarray) else weight
        if x.dtype in _HALF:
            return _lerp_kernel(x.astype(wdt), end.astype(wdt), w).astype(x.dtype)
        return _lerp_kernel(x, end, w).astype(x.dtype, copy=False)

    return forward


_HALF = D.HALF_NP
_lerp_s = op("lerp", grad_fn="LerpBackward0")(_lerp_forward("lerp_kernel_scalar"))
_lerp_t = op(
    "lerp", grad_fn="LerpBackward1", args=("self", "end", "weight"), save=("self", "end", "weight")
)(_lerp_forward("lerp_kernel_tensor"))


@_lerp_s.backward
def _(ctx, g, weight):
    need = ctx.needs_input_grad
    return (g * _conj(1 - weight) if need[0] else None, g * _conj(weight) if need[1] else None)


@_lerp_t.backward
def _(ctx, g):
    x, end, w = ctx.saved_tensors
    need = ctx.needs_input_grad
    return (
        g * _conj(1 - w) if need[0] else None,
        g * _conj(w) if need[1] else None,
        g * _conj(end - x) if need[2] else None,
    )


def _lerp_plan(input, end, weight):
    need_tensor("lerp", input)
    need_tensor("lerp", end, "end", 2)
    want = D.cpp_type_name(input.dtype)
    if end.dtype is not input.dtype:
        raise RuntimeError(
            f"expected dtype {want} for `end` but got dtype {D.cpp_type_name(end.dtype)}"
        )
    if isinstance(weight, Tensor):
        if weight.dtype is not input.dtype and weight._data.ndim:
            raise RuntimeError(
                f"expected dtype {want} for `weight` but got dtype {D.cpp_type_name(weight.dtype)}"
            )
        # a 0-d weight takes part in the promotion (int inputs with a float weight: float)
        dt = result_dtype((input, end, weight))
        if not (dt.is_floating_point or dt.is_complex):
            raise NotImplementedError(
                f"\"lerp_kernel_tensor\" not implemented for '{D.scalar_type_name(dt)}'"
            )
        return _lerp_t, (_cast(input, dt), _cast(end, dt), _cast(weight, dt)), _EMPTY
    # a number weight is checked as a scale of the result (half types: as a float's)
    checked_scalar(weight, result_dtype((input, end)), half_as_float=True)
    return _lerp_s, (input, end), {"weight": weight}


def lerp(input: Tensor, end: Tensor, weight, *, out: Tensor | None = None) -> Tensor:
    """Return ``input + weight * (end - input)`` (``weight`` a number or a tensor)."""
    lop, args, params = _lerp_plan(input, end, weight)
    if out is None:
        return dispatch(lop, args, params)
    return with_out("lerp", lop, args, params, out)


def _lerp_(self, end, weight):
    lop, args, params = _lerp_plan(self, end, weight)
    return dispatch_inplace(lop, self, args, params)


publish(_lerp_t, lerp, inplace=_lerp_)

# ------------------------------------------------------------------------------ addcmul, addcdiv


def _addc_value(value, inputs):
    # torch casts ``value`` to the result's type: a float value on integers truncates
    dt = result_dtype(inputs)
    return checked_scalar(value, dt, half_as_float=True)


@op(
    "addcmul",
    grad_fn="AddcmulBackward0",
    args=("self", "tensor1", "tensor2"),
    save=("tensor1", "tensor2"),
    promote=SAME,
)
def _addcmul(x, t1, t2, value=1):
    if _reduced(x.dtype):
        # torch computes float16/bfloat16 in float32: value * t1 in float32, then one fused
        # multiply-add with t2 and x (float64 holds that product and sum exactly but for rare
        # cancellations), rounded to float32 and then to the half type
        scaled = np.multiply(t1, _F32(value), dtype=_F32)
        fused = np.add(np.multiply(scaled, t2, dtype=np.float64), x, dtype=np.float64)
        return fused.astype(_F32).astype(x.dtype)
    prod = np.multiply(t1, _like(t1, value)) if value != 1 else t1
    return np.add(x, np.multiply(prod, t2))


_F32 = np.float32


@_addcmul.backward
def _(ctx, g, value=1):
    t1, t2 = ctx.saved_tensors
    need = ctx.needs_input_grad
    return (
        g if need[0] else None,
        g * _conj(t2 * value) if need[1] else None,
        g * _conj(t1 * value) if need[2] else None,
    )


@op(
    "addcdiv",
    grad_fn="AddcdivBackward0",
    args=("self", "tensor1", "tensor2"),
    save=("tensor1", "tensor2"),
    promote=SAME,
)
def _addcdiv(x, t1, t2, value=1):
    prod = np.multiply(t1, _like(t1, value)) if value != 1 else t1
    return np.add(x, np.true_divide(prod, t2))


@_addcdiv.backward
def _(ctx, g, value=1):
    t1, t2 = ctx.saved_tensors
    need = ctx.needs_input_grad
    return (
        g if need[0] else None,
        g * _conj(value / t2) if need[1] else None,
        -g * _conj(value * t1 / (t2 * t2)) if need[2] else None,
    )


_ADDCDIV_INT = (
    "Integer division with addcdiv is no longer supported, and in a future  release addcdiv "
    "will perform a true division of tensor1 and tensor2. The historic addcdiv behavior can be "
    "implemented as (input + value * torch.trunc(tensor1 / tensor2)).to(input.dtype) for "
    "integer inputs and as (input + value * tensor1 / tensor2) for float inputs. The future "
    "addcdiv behavior is just the latter implementation: (input + value * tensor1 / tensor2), "
    "for all dtypes."
)


def _addc_plan(name, input, tensor1, tensor2, value):
    need_tensor(name, input)
    need_tensor(name, tensor1, "tensor1", 2)
    need_tensor(name, tensor2, "tensor2", 3)
    if name == "addcdiv":
        ints = [not (t.dtype.is_floating_point or t.dtype.is_complex) for t in (tensor1, tensor2)]
        if all(ints):
            raise RuntimeError(_ADDCDIV_INT)
    args = (input, tensor1, tensor2)
    if name == "addcmul" and all(t.dtype is D.bool for t in args):
        raise NotImplementedError("\"addcmul_cpu_out\" not implemented for 'Bool'")
    v = _addc_value(value, args)
    return (_addcmul if name == "addcmul" else _addcdiv), args, (_EMPTY if v == 1 else {"value": v})


def _value_first(name: str, tensor1, rest: tuple):
    value, (tensor1, tensor2) = deprecated_scalar_first(
        name,
        tensor1,
        rest,
        "Number value, Tensor tensor1, Tensor tensor2",
        "Tensor tensor1, Tensor tensor2, *, Number value = 1",
        4,
    )
    return value, tensor1, tensor2


def addcmul(
    input: Tensor, tensor1: Tensor, tensor2: Tensor, *args, value=1, out: Tensor | None = None
) -> Tensor:
    """Return ``input + value * tensor1 * tensor2``."""
    if args:
        value, tensor1, tensor2 = _value_first("addcmul", tensor1, (tensor2, *args))
    aop, args, params = _addc_plan("addcmul", input, tensor1, tensor2, value)
    if out is None:
        return dispatch(aop, args, params)
    return with_out("addcmul", aop, args, params, out)


def addcdiv(
    input: Tensor, tensor1: Tensor, tensor2: Tensor, *args, value=1, out: Tensor | None = None
) -> Tensor:
    """Return ``input + value * tensor1 / tensor2``."""
    if args:
        value, tensor1, tensor2 = _value_first("addcdiv", tensor1, (tensor2, *args))
    aop, args, params = _addc_plan("addcdiv", input, tensor1, tensor2, value)
    if out is None:
        return dispatch(aop, args, params)
    return with_out("addcdiv", aop, args, params, out)


def _addcmul_(self, tensor1, tensor2, *args, value=1):
    if args:
        value, tensor1, tensor2 = _value_first("addcmul_", tensor1, (tensor2, *args))
    aop, args, params = _addc_plan("addcmul", self, tensor1, tensor2, value)
    return dispatch_inplace(aop, self, args, params)


def _addcdiv_(self, tensor1, tensor2, *args, value=1):
    if args:
        value, tensor1, tensor2 = _value_first("addcdiv_", tensor1, (tensor2, *args))
    aop, args, params = _addc_plan("addcdiv", self, tensor1, tensor2, value)
    return dispatch_inplace(aop, self, args, params)


publish(_addcmul, addcmul, inplace=_addcmul_)
publish(_addcdiv, addcdiv, inplace=_addcdiv_)

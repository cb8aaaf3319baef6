"""Comparisons, closeness and classification tests, logical and bitwise ops.

None of these is differentiable: the results are bool (or integer) tensors. Comparisons promote
their inputs as arithmetic does, then compare; ``==``/``!=`` with a non-number give False/True
(Python's fallback), as torch.
"""

from __future__ import annotations

import numpy as np

from ember._core import dtype as D
from ember._core.tensor import Tensor, _wrap
from ember._ops.pointwise import dkind, need_tensor, not_implemented, with_out
from ember._ops.registry import (
    _EMPTY,
    COMPARE,
    SAME,
    dispatch,
    dispatch_inplace,
    op,
    publish,
)

# ------------------------------------------------------------------------------ comparisons


def _ordered(name, np_fn):
    # torch has no ordering on complex numbers; NumPy compares them lexicographically. The
    # inputs are promoted to one dtype: the array operand tells.
    def f(x, y):
        a = x if type(x) is np.ndarray else y
        if a.dtype.kind == "c":
            kind = "ComplexDouble" if a.dtype == np.complex128 else "ComplexFloat"
            raise NotImplementedError(f"\"{name}_cpu\" not implemented for '{kind}'")
        return np_fn(x, y)

    return f


def _compare(name, np_fn, symbol, ordered, aliases=()):
    cop = op(name, promote=COMPARE, differentiable=False)(
        _ordered(name, np_fn) if ordered else np_fn
    )

    def fn(input: Tensor, other, *, out: Tensor | None = None) -> Tensor:
        if out is None:
            return dispatch(cop, (input, other))
        return with_out(name, cop, (input, other), _EMPTY, out)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Return the bool tensor of ``input {symbol} other`` elementwise."
    publish(cop, fn, aliases=aliases, inplace=True)
    return cop, fn


_eq, eq = _compare("eq", np.equal, "==", False)
_ne, ne = _compare("ne", np.not_equal, "!=", False, ("not_equal",))
_lt, lt = _compare("lt", np.less, "<", True, ("less",))
_le, le = _compare("le", np.less_equal, "<=", True, ("less_equal",))
_gt, gt = _compare("gt", np.greater, ">", True, ("greater",))
_ge, ge = _compare("ge", np.greater_equal, ">=", True, ("greater_equal",))


def _compare_op(cop, arrays: bool):
    def f(self, other):
        try:
            return dispatch(cop, (self, other))
        except TypeError:
            if arrays and type(other) is np.ndarray:  # torch's == reads it as a tensor
                return dispatch(cop, (self, _wrap(other)))
            # None, strings...: Python falls back to identity for ==/!= and raises
            # "'<' not supported between ..." for the orderings
            return NotImplemented

    return f


publish(_eq, operators={"__eq__": _compare_op(_eq, True)})
publish(_ne, operators={"__ne__": _compare_op(_ne, False)})  # (torch: != of an array: True)
publish(_lt, operators={"__lt__": _compare_op(_lt, False)})
publish(_le, operators={"__le__": _compare_op(_le, False)})
publish(_gt, operators={"__gt__": _compare_op(_gt, False)})
publish(_ge, operators={"__ge__": _compare_op(_ge, False)})


def equal(input: Tensor, other: Tensor) -> bool:
    """Return True if both tensors have the same shape and the same elements."""
    need_tensor("equal", input)
    need_tensor("equal", other, "other", 2)
    if input._data.shape != other._data.shape:
        return False
    return bool(np.all(_eq(input, other)._data))


publish(None, equal)


# ------------------------------------------------------------------------------ closeness


def _check_tol(name, value):
    if value < 0:
        raise RuntimeError(f"{name} must be greater than or equal to zero, but got {value}")


@op("isclose", differentiable=False)
def _isclose(x, y, rtol, atol, equal_nan):
    close = x == y
    if equal_nan and dkind(x) in "fc":
        close |= np.isnan(x) & np.isnan(y)
    if rtol == 0 and atol == 0:
        return close
    # torch computes the errors in the inputs' dtype (bool: the default float dtype)
    if dkind(x) in "biu":
        fdt = D.get_default_dtype().np
        if x.dtype == np.bool_:
            x, y = x.astype(fdt), y.astype(fdt)
        allowed = np.abs(y.astype(fdt) * fdt.type(rtol)) + fdt.type(atol)
        actual = np.abs(x - y)
    else:
        real = x.real.dtype.type
        allowed = np.abs(y * real(rtol))
        allowed += real(atol)
        actual = np.subtract(x, y)
        if type(actual) is np.ndarray and actual.dtype.kind != "c":
            np.abs(actual, out=actual)
        else:  # (a 0-d operation gives a NumPy scalar; complex differences have real moduli)
            actual = np.abs(actual)
    with np.errstate(invalid="ignore"):
        within = np.less_equal(actual, allowed)
        within &= np.isfinite(actual)  # (an infinite error is never close; equality was)
        close |= within
    return close


def isclose(
    input: Tensor, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False
) -> Tensor:
    """Return the bool tensor of ``|input - other| <= atol + rtol * |other|`` elementwise."""
    need_tensor("isclose", input)
    need_tensor("isclose", other, "other", 2)
    if input.dtype is not other.dtype:
        raise RuntimeError(
            f"{D.scalar_type_name(input.dtype)} did not match {D.scalar_type_name(other.dtype)}"
        )
    _check_tol("rtol", rtol)
    _check_tol("atol", atol)
    params = {"rtol": rtol, "atol": atol, "equal_nan": bool(equal_nan)}
    return dispatch(_isclose, (input, other), params)


def allclose(
    input: Tensor, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False
) -> bool:
    """Return True if every element of ``input`` is close to ``other`` (see :func:`isclose`)."""
    return bool(np.all(isclose(input, other, rtol, atol, equal_nan)._data))


publish(None, isclose)
publish(None, allclose)


# ------------------------------------------------------------------------------ classification


def _classify(name, forward, out=False):
    cop = op(name, differentiable=False)(forward)

    if out:

        def fn(input: Tensor, *, out: Tensor | None = None) -> Tensor:
            need_tensor(name, input)
            if out is None:
                return dispatch(cop, (input,))
            return with_out(name, cop, (input,), _EMPTY, out)
    else:

        def fn(input: Tensor) -> Tensor:
            need_tensor(name, input)
            return dispatch(cop, (input,))

    fn.__name__ = fn.__qualname__ = name
    publish(cop, fn)
    return fn


def _false(x):
    return np.zeros(x.shape, dtype=np.bool_)


def _np_isnan(x):
    return np.isnan(x) if dkind(x) in "fc" else _false(x)


def _np_isinf(x):
    return np.isinf(x) if dkind(x) in "fc" else _false(x)


def _np_isfinite(x):
    return np.isfinite(x) if dkind(x) in "fc" else np.ones(x.shape, dtype=np.bool_)


def _signed_inf(name, sign):
    def f(x):
        if dkind(x) == "c":
            raise RuntimeError(f"{name} does not support complex inputs.")
        return x == sign * np.inf if dkind(x) == "f" else _false(x)

    return f


def _np_isreal(x):
    return x.imag == 0 if dkind(x) == "c" else np.ones(x.shape, dtype=np.bool_)


def _np_signbit(x):
    if dkind(x) == "c":
        raise NotImplementedError("signbit is not implemented for complex tensors.")
    if dkind(x) == "f":
        return np.signbit(x)
    return x < 0 if dkind(x) == "i" else _false(x)


isnan = _classify("isnan", _np_isnan)
isnan.__doc__ = "Return the bool tensor of the NaN elements of ``input``."
isinf = _classify("isinf", _np_isinf)
isinf.__doc__ = "Return the bool tensor of the infinite elements of ``input``."
isposinf = _classify("isposinf", _signed_inf("isposinf", 1), out=True)
isposinf.__doc__ = "Return the bool tensor of the elements of ``input`` equal to +inf."
isneginf = _classify("isneginf", _signed_inf("isneginf", -1), out=True)
isneginf.__doc__ = "Return the bool tensor of the elements of ``input`` equal to -inf."
isfinite = _classify("isfinite", _np_isfinite)
isfinite.__doc__ = "Return the bool tensor of the finite elements of ``input``."
isreal = _classify("isreal", _np_isreal)
isreal.__doc__ = "Return the bool tensor of the elements of ``input`` with no imaginary part."
signbit = _classify("signbit", _np_signbit, out=True)
signbit.__doc__ = "Return the bool tensor of the elements of ``input`` with the sign bit set."

# ------------------------------------------------------------------------------ logical


def _logical(name, np_fn):
    lop = op(name, promote=None, differentiable=False)(np_fn)

    def fn(input: Tensor, other: Tensor, *, out: Tensor | None = None) -> Tensor:
        need_tensor(name, input)
        need_tensor(name, other, "other", 2)
        if out is None:
            return dispatch(lop, (input, other))
        return with_out(name, lop, (input, other), _EMPTY, out)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Return the elementwise {name[8:].upper()} of the truth of the elements."

    def inplace(self, other):
        need_tensor(name + "_", other, "other", 1)
        return dispatch_inplace(lop, self, (self, other))

    inplace.__name__ = name + "_"
    return publish(lop, fn, inplace=inplace)


logical_and = _logical("logical_and", np.logical_and)
logical_or = _logical("logical_or", np.logical_or)
logical_xor = _logical("logical_xor", np.logical_xor)


@op("logical_not", differentiable=False)
def _logical_not(x):
    return np.logical_not(x)


def logical_not(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    """Return the elementwise logical NOT as a bool tensor."""
    need_tensor("logical_not", input)
    if out is None:
        return dispatch(_logical_not, (input,))
    return with_out("logical_not", _logical_not, (input,), _EMPTY, out)


publish(_logical_not, logical_not, inplace=True, arity=1)

# ------------------------------------------------------------------------------ bitwise


def _integral(kernel, np_fn, allow_bool=True):
    def f(x, y):
        for a in (x, y):
            a = np.asarray(a)
            if dkind(a) in "fc" or (a.dtype == np.bool_ and not allow_bool):
                raise not_implemented(kernel, a)
        return np_fn(x, y)

    return f


def _same_type(x, y):
    # a Python int shift keeps the tensor's dtype (NumPy would widen a 0-d array to int64)
    dt = np.result_type(x, y)
    return np.asarray(x, dtype=dt), np.asarray(y, dtype=dt)


def _shift_left(x, y):
    x, y = _same_type(x, y)
    bits = x.dtype.itemsize * 8
    bad = (y < 0) | (y >= bits)
    r = np.left_shift(x, np.where(bad, 0, y).astype(y.dtype))
    return np.where(bad, 0, r).astype(r.dtype, copy=False)


def _shift_right(x, y):
    a, y = _same_type(x, y)
    x = a
    bits = a.dtype.itemsize * 8
    bad = (y < 0) | (y >= bits)
    if dkind(a) == "u":
        r = np.right_shift(x, np.where(bad, 0, y).astype(y.dtype))
        return np.where(bad, 0, r).astype(r.dtype, copy=False)
    # a signed shift by the width or more fills with the sign bit
    return np.right_shift(x, np.where(bad, bits - 1, y).astype(y.dtype))


def _bitwise(name, forward, symbol):
    bop = op(name, promote=SAME, differentiable=False)(forward)

    def fn(input, other, *, out: Tensor | None = None) -> Tensor:
        if not isinstance(input, Tensor):
            need_tensor(name, other, "other", 2)
        if out is None:
            return dispatch(bop, (input, other))
        return with_out(name, bop, (input, other), _EMPTY, out)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Return ``input {symbol} other`` elementwise (integral and bool tensors)."
    publish(bop, fn, inplace=True)
    return bop, fn


_and, bitwise_and = _bitwise("bitwise_and", _integral("bitwise_and_cpu", np.bitwise_and), "&")
_or, bitwise_or = _bitwise("bitwise_or", _integral("bitwise_or_cpu", np.bitwise_or), "|")
_xor, bitwise_xor = _bitwise("bitwise_xor", _integral("bitwise_xor_cpu", np.bitwise_xor), "^")
_lshift, bitwise_left_shift = _bitwise(
    "bitwise_left_shift", _integral("lshift_cpu", _shift_left, allow_bool=False), "<<"
)
_rshift, bitwise_right_shift = _bitwise(
    "bitwise_right_shift", _integral("rshift_cpu", _shift_right, allow_bool=False), ">>"
)


@op("bitwise_not", differentiable=False)
def _invert(x):
    if dkind(x) in "fc":
        raise not_implemented("bitwise_not_cpu", x)
    return np.invert(x)


def bitwise_not(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    """Return the bitwise NOT (logical NOT for bool tensors)."""
    need_tensor("bitwise_not", input)
    if out is None:
        return dispatch(_invert, (input,))
    return with_out("bitwise_not", _invert, (input,), _EMPTY, out)


publish(_invert, bitwise_not, inplace=True, arity=1)


def _operators():
    for bop, name in (
        (_and, "and"),
        (_or, "or"),
        (_xor, "xor"),
        (_lshift, "lshift"),
        (_rshift, "rshift"),
    ):
        publish(
            bop,
            operators={
                f"__{name}__": lambda self, other, _op=bop: dispatch(_op, (self, other)),
                f"__r{name}__": lambda self, other, _op=bop: dispatch(_op, (other, self)),
                f"__i{name}__": lambda self, other, _op=bop: dispatch_inplace(
                    _op, self, (self, other)
                ),
            },
        )
    publish(_invert, operators={"__invert__": _invert_operator})


def _invert_operator(self):
    if self.dtype.is_floating_point or self.dtype.is_complex:
        raise TypeError(
            "~ (operator.invert) is only implemented on integer and Boolean-type tensors"
        )
    return dispatch(_invert, (self,))


_operators()

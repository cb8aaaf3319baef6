"""Tensor's Python operators (``+ - * / // % **`` and their reflected and in-place forms) for
the arithmetic ops of ``pointwise.py``, and the reuse of temporaries' memory.

The operators go straight to dispatch: they are the hot path. Like NumPy, they reuse the memory
of a temporary operand: in ``(x * 2.5 + 1.0) / y`` the product is referenced by nothing but the
expression, so the sum is written into its buffer instead of a fresh allocation (for large
arrays, allocation and page faults cost as much as the arithmetic). A temporary is recognised by
its reference count, the test NumPy makes; it must own its (large, writable) array alone, hold
no autograd history, and already have the result's dtype.
"""

from __future__ import annotations

import sys

import numpy as np

from ember._core.tensor import Tensor, _wrap
from ember._ops.pointwise import (
    _BOOL,
    _add,
    _add_,
    _add_into,
    _check_sub,
    _div,
    _div_,
    _div_into,
    _floor_divide,
    _floor_divide_,
    _isub,
    _mul,
    _mul_,
    _mul_into,
    _pow_,
    _pow_tensor,
    _reciprocal,
    _rem_rs,
    _rem_t,
    _remainder_,
    _rpow,
    _rsub,
    _rsub_into,
    _sub,
    _sub_into,
    pow,  # noqa: A004 - torch.pow
    remainder,
)
from ember._ops.registry import dispatch, publish

ELIDE_TEMPORARIES = True
_ELIDE_SIZE = 1 << 16  # elements; below this, allocating is cheaper than the checks
_refcount = sys.getrefcount


class _Probe:
    # measures the reference count of an operand that exists only in the expression
    def __add__(self, other):
        return _refcount(self) if type(other) is int else _refcount(other)

    def __radd__(self, other):
        return _refcount(self)


def _array_refs(t):
    a = t._data
    return _refcount(a)


_TEMP_REFS = _Probe() + 0
_TEMP_RREFS = 0 + _Probe()
_TEMP_OTHER_REFS = _Probe() + _Probe()
_OWN_ARRAY_REFS = _array_refs(_wrap(np.empty(1)))
_NUMBER = (float, int)


def _reusable(t, other) -> bool:
    """Whether ``t`` (a temporary, already checked) may receive ``t <op> other`` in place."""
    a = t._data
    if (
        not ELIDE_TEMPORARIES
        or _refcount(a) != _OWN_ARRAY_REFS
        or a.base is not None
        or t._base is not None
        or not a.flags.writeable
        or t._requires_grad
        or not t.dtype.is_floating_point
    ):
        return False
    if type(other) in _NUMBER:
        return True
    return (
        isinstance(other, Tensor)
        and other.dtype is t.dtype
        and not other._requires_grad
        and other._data.ndim <= a.ndim
    )


def _foreign(other) -> bool:
    """Whether ``other`` is no operand of ours (None, str, list...): the operator then returns
    NotImplemented, as torch's do, and Python raises its own "unsupported operand" error."""
    return not isinstance(other, (Tensor, float, int, complex, np.generic, np.ndarray))


def _unsupported(other, retry):
    """Inside ``except TypeError``: a NumPy array operand is read as a tensor, as torch reads it
    (``retry(tensor)`` runs the operator again); NotImplemented for a foreign ``other``; else
    re-raise. (The operators keep their ``try`` inline: an extra call frame would change the
    reference counts that temporary elision reads.)"""
    if type(other) is np.ndarray:
        return retry(_wrap(other))
    if _foreign(other):
        return NotImplemented
    raise  # noqa: PLE0704  (re-raises the TypeError being handled)


def _binop(plain, into, reflected):
    if reflected:

        def dunder(self, other):
            if (
                self._data.size >= _ELIDE_SIZE
                and _refcount(self) == _TEMP_RREFS
                and _reusable(self, other)
            ):
                return dispatch(into, (self, other), {"out": self._data})
            try:
                return dispatch(plain, (self, other))
            except TypeError:
                return _unsupported(other, lambda o: dispatch(plain, (self, o)))
    else:

        def dunder(self, other):
            if self._data.size >= _ELIDE_SIZE:
                if _refcount(self) == _TEMP_REFS and _reusable(self, other):
                    return dispatch(into, (self, other), {"out": self._data})
                if (
                    type(other) is Tensor
                    and _refcount(other) == _TEMP_OTHER_REFS
                    and _reusable(other, self)
                ):
                    return dispatch(into, (self, other), {"out": other._data})
            try:
                return dispatch(plain, (self, other))
            except TypeError:
                return _unsupported(other, lambda o: dispatch(plain, (self, o)))

    return dunder


def _or_not_implemented(fn):
    """``fn(self, other)`` returning NotImplemented for a foreign ``other`` it rejects."""

    def dunder(self, other):
        try:
            return fn(self, other)
        except TypeError:
            return _unsupported(other, lambda o: fn(self, o))

    return dunder


def _sub_dunder(self, other):
    if (
        self.dtype is _BOOL
        or type(other) is bool
        or (isinstance(other, Tensor) and other.dtype is _BOOL)
    ):
        _check_sub(self, other)
    if self._data.size >= _ELIDE_SIZE and _refcount(self) == _TEMP_REFS and _reusable(self, other):
        return dispatch(_sub_into, (self, other), {"out": self._data})
    try:
        return dispatch(_sub, (self, other))
    except TypeError:
        return _unsupported(other, lambda o: dispatch(_sub, (self, o)))


def _rsub_dunder(self, other):
    if self.dtype is _BOOL or type(other) is bool:
        _check_sub(other, self)
    if self._data.size >= _ELIDE_SIZE and _refcount(self) == _TEMP_RREFS and _reusable(self, other):
        return dispatch(_rsub_into, (self, other), {"out": self._data})
    try:
        return dispatch(_rsub, (self, other))
    except TypeError:
        return _unsupported(other, lambda o: dispatch(_rsub, (self, o)))


def _rtruediv(self, other):
    if _foreign(other):  # before the reciprocal: no work for an operand we reject
        raise TypeError
    return dispatch(_reciprocal, (self,)) * other


# each operator declared on its op (``publish``): the reflected and in-place forms with it
publish(
    _add,
    operators={
        "__add__": _binop(_add, _add_into, False),
        "__radd__": _binop(_add, _add_into, True),
        "__iadd__": _add_,
    },
)
publish(_sub, operators={"__sub__": _sub_dunder, "__rsub__": _rsub_dunder, "__isub__": _isub})
publish(
    _mul,
    operators={
        "__mul__": _binop(_mul, _mul_into, False),
        "__rmul__": _binop(_mul, _mul_into, True),
        "__imul__": _mul_,
    },
)
_truediv = _binop(_div, _div_into, False)
_rtruediv_op = _or_not_implemented(_rtruediv)
publish(
    _div,
    operators={
        "__truediv__": _truediv,
        "__rtruediv__": _rtruediv_op,
        "__itruediv__": _div_,
        "__div__": _truediv,
        "__rdiv__": _rtruediv_op,
        "__idiv__": _div_,
    },
)
publish(
    _pow_tensor,
    operators={
        "__pow__": _or_not_implemented(pow),
        "__rpow__": _or_not_implemented(lambda self, other: dispatch(_rpow, (self, other))),
        "__ipow__": _pow_,
    },
)
publish(
    _floor_divide,
    operators={
        "__floordiv__": _or_not_implemented(
            lambda self, other: dispatch(_floor_divide, (self, other))
        ),
        "__rfloordiv__": _or_not_implemented(
            lambda self, other: dispatch(_floor_divide, (other, self))
        ),
        "__ifloordiv__": _floor_divide_,
    },
)
publish(
    _rem_t,
    operators={
        "__mod__": _or_not_implemented(remainder),
        "__rmod__": _or_not_implemented(lambda self, other: dispatch(_rem_rs, (other, self))),
        "__imod__": _remainder_,
    },
)

"""Integer math: ``gcd`` and ``lcm`` (and in place), integral dtypes only."""

from __future__ import annotations

import numpy as np

from ember._core import dtype as D
from ember._core.tensor import Tensor
from ember._ops.registry import SAME, dispatch, dispatch_inplace, op, publish


@op("gcd", promote=SAME)
def _gcd(x, y):
    return np.gcd(x, y)


@op("lcm", promote=SAME)
def _lcm(x, y):
    return np.lcm(x, y)


def _check_integral(name: str, *xs) -> None:
    from ember._ops.registry import result_dtype

    dt = result_dtype(xs)
    if dt.is_floating_point or dt.is_complex or dt is D.bool:
        raise NotImplementedError(f"\"{name}_cpu\" not implemented for '{D.scalar_type_name(dt)}'")


def gcd(input: Tensor, other: Tensor) -> Tensor:
    """Return the elementwise greatest common divisor of integer tensors."""
    _check_integral("gcd", input, other)
    return dispatch(_gcd, (input, other))


def gcd_(self: Tensor, other: Tensor) -> Tensor:
    """In-place version of :meth:`Tensor.gcd`; return ``self``."""
    _check_integral("gcd", self, other)
    return dispatch_inplace(_gcd, self, (self, other))


def lcm(input: Tensor, other: Tensor) -> Tensor:
    """Return the elementwise least common multiple of integer tensors."""
    _check_integral("lcm", input, other)
    return dispatch(_lcm, (input, other))


def lcm_(self: Tensor, other: Tensor) -> Tensor:
    """In-place version of :meth:`Tensor.lcm`; return ``self``."""
    _check_integral("lcm", self, other)
    return dispatch_inplace(_lcm, self, (self, other))


publish(None, gcd_)
publish(None, lcm_)
for _f in (gcd, lcm):
    publish(None, _f)

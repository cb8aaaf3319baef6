"""Von Mises distribution (torch.distributions.VonMises).

The normalizer needs log I_0 and the circular variance log I_1 - log I_0 (modified Bessel
functions of the first kind). They use the polynomial approximations of Abramowitz & Stegun,
Handbook of Mathematical Functions, 9.8.1-9.8.4 (the coefficient tables below, as published
there; torch uses the same). Sampling is Best & Fisher's rejection scheme.
"""

from __future__ import annotations

import math
from functools import reduce

import ember
from ember._core.tensor import Tensor
from ember.distributions import constraints
from ember.distributions.distribution import Distribution
from ember.distributions.utils import _store_broadcast, lazy_property

__all__ = ["VonMises"]

# A&S 9.8.1 / 9.8.3 (|x| < 3.75, in powers of (x / 3.75)^2) and 9.8.2 / 9.8.4 (x >= 3.75, in
# powers of 3.75 / x, for sqrt(x) e^-x I_n(x))
_I0_COEF_SMALL = [
    1.0,
    3.5156229,
    3.0899424,
    1.2067492,
    0.2659732,
    0.360768e-1,
    0.45813e-2,
]
_I0_COEF_LARGE = [
    0.39894228,
    0.1328592e-1,
    0.225319e-2,
    -0.157565e-2,
    0.916281e-2,
    -0.2057706e-1,
    0.2635537e-1,
    -0.1647633e-1,
    0.392377e-2,
]
_I1_COEF_SMALL = [
    0.5,
    0.87890594,
    0.51498869,
    0.15084934,
    0.2658733e-1,
    0.301532e-2,
    0.32411e-3,
]
_I1_COEF_LARGE = [
    0.39894228,
    -0.3988024e-1,
    -0.362018e-2,
    0.163801e-2,
    -0.1031555e-1,
    0.2282967e-1,
    -0.2895312e-1,
    0.1787654e-1,
    -0.420059e-2,
]

_TABLES = {
    0: (_I0_COEF_SMALL, _I0_COEF_LARGE),
    1: (_I1_COEF_SMALL, _I1_COEF_LARGE),
}


def _horner(y, coefficients):
    """sum_k coefficients[k] * y^k."""
    return reduce(lambda acc, c: c + y * acc, reversed(coefficients[:-1]), coefficients[-1])


def _log_modified_bessel_fn(x, order=0):
    """Returns ``log(I_order(x))`` for ``x > 0``, where ``order`` is either 0 or 1."""
    if order not in (0, 1):
        raise AssertionError(f"order must be 0 or 1, got {order}")
    near, far = _TABLES[order]
    # near 0: I_0 = P((x / 3.75)^2), I_1 = |x| P((x / 3.75)^2)
    series = _horner((x / 3.75) ** 2, near)
    if order == 1:
        series = x.abs() * series
    # far: I_n = e^x / sqrt(x) * Q(3.75 / x)
    asymptotic = x - 0.5 * x.log() + _horner(3.75 / x, far).log()
    return ember.where(x < 3.75, series.log(), asymptotic)


def _rejection_sample(loc, concentration, proposal_r, x):
    """Best & Fisher (1979): wrapped-Cauchy proposals accepted with a cheap test or its exact
    fallback. Every round draws three uniforms per entry; entries accepted in a round take that
    round's value (also when an earlier round accepted them), until all have one."""
    done = ember.zeros(x.shape, dtype=ember.bool)
    r = proposal_r
    while not done.all():
        u1, u2, u3 = ember.rand((3,) + x.shape, dtype=loc.dtype).unbind()
        z = ember.cos(math.pi * u1)
        f = (1 + r * z) / (r + z)
        c = concentration * (r - f)
        quick = c * (2 - c) - u2 > 0
        accept = quick | ((c / u2).log() + 1 - c >= 0)
        if accept.any():
            x = ember.where(accept, (u3 - 0.5).sign() * f.acos(), x)
            done = done | accept
    # centre on loc and wrap into [-pi, pi)
    return (x + math.pi + loc) % (2 * math.pi) - math.pi


class VonMises(Distribution):
    """A circular von Mises distribution."""

    arg_constraints = {"loc": constraints.real, "concentration": constraints.positive}
    support = constraints.real
    has_rsample = False

    def __init__(
        self,
        loc: Tensor,
        concentration: Tensor,
        validate_args: bool | None = None,
    ) -> None:
        shape = _store_broadcast(self, loc=loc, concentration=concentration)
        super().__init__(shape, (), validate_args)

    def _log_i(self, order):
        return _log_modified_bessel_fn(self.concentration, order=order)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        # kappa cos(x - mu) - log(2 pi I_0(kappa))
        return (
            self.concentration * ember.cos(value - self.loc)
            - math.log(2 * math.pi)
            - self._log_i(0)
        )

    # the sampler runs in float64 whatever the parameters' dtype
    @lazy_property
    def _loc(self) -> Tensor:
        return self.loc.to(ember.double)

    @lazy_property
    def _concentration(self) -> Tensor:
        return self.concentration.to(ember.double)

    @lazy_property
    def _proposal_r(self) -> Tensor:
        # the wrapped-Cauchy parameter of Best & Fisher; 1 / kappa + kappa to second order at 0
        k = self._concentration
        tau = 1 + (1 + 4 * k * k).sqrt()
        rho = (tau - (2 * tau).sqrt()) / (2 * k)
        return ember.where(k < 1e-5, 1 / k + k, (1 + rho * rho) / (2 * rho))

    @ember.no_grad()
    def sample(self, sample_shape=()):
        """The sampling algorithm for the von Mises distribution is based on the following paper:
        D.J. Best and N.I. Fisher, "Efficient simulation of the von Mises distribution." Applied
        Statistics (1979): 152-157."""
        start = ember.empty(self._extended_shape(sample_shape), dtype=self._loc.dtype)
        draws = _rejection_sample(self._loc, self._concentration, self._proposal_r, start)
        return draws.to(self.loc.dtype)

    def expand(self, batch_shape, _instance=None):
        # rebuilt through the constructor, as torch's (the sampler's caches are lazy)
        return type(self)(
            self.loc.expand(batch_shape),
            self.concentration.expand(batch_shape),
            validate_args=self.__dict__.get("_validate_args"),
        )

    @property
    def mean(self) -> Tensor:
        """The provided mean is the circular one."""
        return self.loc

    @property
    def mode(self) -> Tensor:
        return self.loc

    @lazy_property
    def variance(self) -> Tensor:
        """The provided variance is the circular one."""
        return 1 - (self._log_i(1) - self._log_i(0)).exp()  # 1 - I_1 / I_0

"""Cauchy distribution (torch.distributions.Cauchy)."""

from __future__ import annotations

import math

import ember
from ember.distributions import constraints
from ember.distributions.distribution import Distribution
from ember.distributions.utils import _store_broadcast

__all__ = ["Cauchy"]


class Cauchy(Distribution):
    """Cauchy (Lorentz) distribution with ``loc`` and ``scale``."""

    arg_constraints = constraints._loc_scale_args()
    support = constraints.real
    has_rsample = True

    def __init__(self, loc, scale, validate_args: bool | None = None) -> None:
        shape = _store_broadcast(self, loc=loc, scale=scale)
        super().__init__(shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(Cauchy, batch_shape, _instance, ("loc", "scale"))

    @property
    def mean(self):
        return ember.full(self._extended_shape(), math.nan, dtype=self.loc.dtype)

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        return ember.full(self._extended_shape(), math.inf, dtype=self.loc.dtype)

    def rsample(self, sample_shape=()):
        eps = ember.empty(self._extended_shape(sample_shape), dtype=self.loc.dtype).cauchy_()
        return self.loc + eps * self.scale

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        # -log(pi scale (1 + z^2))
        z = self._z(value)
        return -_LOG_PI - self.scale.log() - (z**2).log1p()

    def _z(self, value):
        return (value - self.loc) / self.scale

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return 0.5 + ember.atan(self._z(value)) / math.pi

    def icdf(self, value):
        return self.loc + self.scale * ember.tan(math.pi * (value - 0.5))

    def entropy(self):
        return _LOG_4PI + self.scale.log()


_LOG_PI = math.log(math.pi)
_LOG_4PI = math.log(4 * math.pi)

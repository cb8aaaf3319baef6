"""Normal distribution (torch.distributions.Normal)."""

from __future__ import annotations

import math

import ember
from ember.distributions import constraints
from ember.distributions.exp_family import ExponentialFamily
from ember.distributions.utils import _store_broadcast

__all__ = ["Normal"]

_SQRT2 = math.sqrt(2)
_HALF_LOG_2PI_E = 0.5 * (1 + math.log(2 * math.pi))


class Normal(ExponentialFamily):
    """Normal (Gaussian) distribution parameterized by ``loc`` and ``scale``."""

    arg_constraints = constraints._loc_scale_args()
    support = constraints.real
    has_rsample = True

    def __init__(self, loc, scale, validate_args: bool | None = None) -> None:
        super().__init__(_store_broadcast(self, loc=loc, scale=scale), validate_args=validate_args)

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def stddev(self):
        return self.scale

    @property
    def variance(self):
        return self.stddev.pow(2)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(Normal, batch_shape, _instance, ("loc", "scale"))

    def sample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        with ember.no_grad():
            return ember.normal(self.loc.expand(shape), self.scale.expand(shape))

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        eps = ember.randn(shape, dtype=self.loc.dtype)
        return self.loc + eps * self.scale

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        var = self.scale**2
        log_scale = self.scale.log()
        return -((value - self.loc) ** 2) / (2 * var) - log_scale - math.log(math.sqrt(2 * math.pi))

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return 0.5 * (1 + ember.erf((value - self.loc) * self.scale.reciprocal() / math.sqrt(2)))

    def icdf(self, value):
        # Phi^-1(u) = sqrt(2) erfinv(2u - 1)
        return self.loc + self.scale * (_SQRT2 * ember.erfinv(2 * value - 1))

    def entropy(self):
        return _HALF_LOG_2PI_E + self.scale.log()  # (1/2) log(2 pi e sigma^2)

    _mean_carrier_measure = 0

    @property
    def _natural_params(self):
        # eta = (mu / sigma^2, -1 / (2 sigma^2))
        var = self.scale**2
        return (self.loc / var, -1 / (2 * var))

    def _log_normalizer(self, x, y):
        # A(eta) = -eta1^2 / (4 eta2) + (1/2) log(-pi / eta2)
        return -(x**2) / (4 * y) + 0.5 * (-math.pi / y).log()

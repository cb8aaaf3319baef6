"""Generalized Pareto distribution (torch.distributions.GeneralizedPareto).

With z = (x - loc) / scale and shape xi = ``concentration``, the survival function is
S(z) = (1 + xi z)^(-1 / xi), which tends to exp(-z) as xi -> 0. Every formula has that xi = 0
limit as a separate branch; the general branch is evaluated with xi replaced by a stand-in
there, so that the discarded branch stays finite (and so do its gradients).
"""

from __future__ import annotations

import math
from math import inf, nan
from numbers import Real

import ember
from ember.distributions import constraints
from ember.distributions.distribution import Distribution
from ember.distributions.utils import _store_broadcast

__all__ = ["GeneralizedPareto"]


class GeneralizedPareto(Distribution):
    """Creates a Generalized Pareto distribution parameterized by ``loc``, ``scale``, and
    ``concentration``."""

    arg_constraints = {
        "loc": constraints.real,
        "scale": constraints.positive,
        "concentration": constraints.real,
    }
    has_rsample = True

    def __init__(self, loc, scale, concentration, validate_args=None):
        shape = _store_broadcast(self, loc=loc, scale=scale, concentration=concentration)
        super().__init__(shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(
            GeneralizedPareto, batch_shape, _instance, ("loc", "scale", "concentration")
        )

    def _shape_split(self):
        """(where xi is numerically 0, xi with those entries replaced by 1)."""
        xi = self.concentration
        at_zero = ember.isclose(xi, ember.zeros_like(xi))
        return at_zero, ember.where(at_zero, 1.0, xi)

    def rsample(self, sample_shape=()):
        u = ember.rand(self._extended_shape(sample_shape), dtype=self.loc.dtype)
        return self.icdf(u)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        # log f = -log scale - (1 + 1/xi) log(1 + xi z); -log scale - z at xi = 0
        z = self._z(value)
        at_zero, xi = self._shape_split()
        power = 1 / xi + 1
        # xi = -1 is the uniform law: its power is 0 and the log term drops, even at the edge
        general = ember.where(power == 0, power, power * ember.log1p(xi * z))
        log_scale = math.log(self.scale) if isinstance(self.scale, Real) else self.scale.log()
        return -log_scale - ember.where(at_zero, z, general)

    def log_survival_function(self, value):
        if self._validate_args:
            self._validate_sample(value)
        z = self._z(value)
        at_zero, xi = self._shape_split()
        return ember.where(at_zero, -z, -ember.log1p(xi * z) / xi)

    def log_cdf(self, value):
        return ember.log1p(-self.log_survival_function(value).exp())

    def cdf(self, value):
        return self.log_cdf(value).exp()

    def icdf(self, value):
        # invert S: z = ((1 - u)^(-xi) - 1) / xi, or -log(1 - u) at xi = 0
        at_zero, xi = self._shape_split()
        log_tail = ember.log1p(-value)
        general = self.loc + self.scale / xi * ember.expm1(-xi * log_tail)
        return ember.where(at_zero, self.loc - self.scale * log_tail, general)

    def _z(self, x):
        return (x - self.loc) / self.scale

    def _moment(self, limit, stand_in, formula):
        """``formula(xi)`` where xi < ``limit`` (the moment exists), nan elsewhere."""
        exists = self.concentration < limit
        return ember.where(exists, formula(ember.where(exists, self.concentration, stand_in)), nan)

    @property
    def mean(self):
        return self._moment(1, 0.5, lambda xi: self.loc + self.scale / (1 - xi))

    @property
    def variance(self):
        return self._moment(0.5, 0.25, lambda xi: self.scale**2 / ((1 - xi) ** 2 * (1 - 2 * xi)))

    def entropy(self):
        return ember.broadcast_to(self.scale.log() + self.concentration + 1, self._batch_shape)

    @property
    def mode(self):
        return self.loc

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        # bounded above by loc - scale / xi when xi < 0
        xi = self.concentration
        top = ember.where(xi < 0, self.loc - self.scale / xi, inf)
        return constraints.interval(self.loc, top)

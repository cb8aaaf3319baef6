"""Uniform distribution (torch.distributions.Uniform)."""

from __future__ import annotations

from math import nan

import ember
from ember.distributions import constraints
from ember.distributions.distribution import Distribution
from ember.distributions.utils import _store_broadcast

__all__ = ["Uniform"]


class Uniform(Distribution):
    """Uniform distribution on the half-open interval ``[low, high)``."""

    has_rsample = True

    @property
    def arg_constraints(self):
        return {
            "low": constraints.less_than(self.high),
            "high": constraints.greater_than(self.low),
        }

    def __init__(self, low, high, validate_args: bool | None = None) -> None:
        shape = _store_broadcast(self, low=low, high=high)
        super().__init__(shape, validate_args=validate_args)

    @property
    def mean(self):
        return (self.high + self.low) / 2

    @property
    def mode(self):
        return nan * self.high

    @property
    def stddev(self):
        return (self.high - self.low) / 12**0.5

    @property
    def variance(self):
        return (self.high - self.low).pow(2) / 12

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(Uniform, batch_shape, _instance, ("low", "high"))

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        return constraints.interval(self.low, self.high)

    @property
    def _width(self):
        return self.high - self.low

    def rsample(self, sample_shape=()):
        u = ember.rand(self._extended_shape(sample_shape), dtype=self.low.dtype)
        return self.low + u * self._width

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        # -log(width) on [low, high), -inf (log 0) outside
        inside = ((value >= self.low) & (value < self.high)).type_as(self.low)
        return inside.log() - self._width.log()

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return ((value - self.low) / self._width).clamp(min=0, max=1)

    def icdf(self, value):
        return self.low + value * self._width

    def entropy(self):
        return ember.log(self.high - self.low)

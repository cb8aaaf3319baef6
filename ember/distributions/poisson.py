"""Poisson distribution (torch.distributions.Poisson)."""

from __future__ import annotations

import ember
from ember.distributions import constraints
from ember.distributions.exp_family import ExponentialFamily
from ember.distributions.utils import _store_broadcast, broadcast_all

__all__ = ["Poisson"]


def _sample_poisson(rate):
    """Return Poisson(rate) draws from ember's default generator, in ``rate``'s dtype."""
    return ember.poisson(rate.detach())


class Poisson(ExponentialFamily):
    """Poisson distribution parameterized by ``rate``."""

    arg_constraints = {"rate": constraints.nonnegative}
    support = constraints.nonnegative_integer

    def __init__(self, rate, validate_args: bool | None = None) -> None:
        super().__init__(_store_broadcast(self, rate=rate), validate_args=validate_args)

    @property
    def mean(self):
        return self.rate

    @property
    def mode(self):
        return self.rate.floor()

    @property
    def variance(self):
        return self.rate

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(Poisson, batch_shape, _instance, ("rate",))

    def sample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        with ember.no_grad():
            return _sample_poisson(self.rate.expand(shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        # k log(rate) - rate - log k!, with 0 log 0 = 0 for a zero rate
        lam, k = broadcast_all(self.rate, value)
        return ember.xlogy(k, lam) - lam - (k + 1).lgamma()

    @property
    def _natural_params(self):
        return (ember.log(self.rate),)

    def _log_normalizer(self, x):
        return ember.exp(x)

"""Laplace distribution (torch.distributions.Laplace)."""

from __future__ import annotations

import ember
from ember.distributions import constraints
from ember.distributions.distribution import Distribution
from ember.distributions.utils import _store_broadcast

__all__ = ["Laplace"]


class Laplace(Distribution):
    """Laplace distribution parameterized by ``loc`` and ``scale``."""

    arg_constraints = constraints._loc_scale_args()
    support = constraints.real
    has_rsample = True

    def __init__(self, loc, scale, validate_args: bool | None = None) -> None:
        shape = _store_broadcast(self, loc=loc, scale=scale)
        super().__init__(shape, validate_args=validate_args)

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        return 2 * self.scale.pow(2)

    @property
    def stddev(self):
        return (2**0.5) * self.scale

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(Laplace, batch_shape, _instance, ("loc", "scale"))

    def _from_signed_uniform(self, u):
        """The quantile map on (-1, 1): loc - scale sign(u) log(1 - |u|)."""
        return self.loc - self.scale * u.sign() * (-u.abs()).log1p()

    def rsample(self, sample_shape=()):
        # u uniform on (-1, 1), kept off -1 so the logarithm stays finite
        dtype = self.loc.dtype
        u = ember.empty(self._extended_shape(sample_shape), dtype=dtype)
        return self._from_signed_uniform(u.uniform_(ember.finfo(dtype).eps - 1, 1))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return -(2 * self.scale).log() - (value - self.loc).abs() / self.scale

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        # 1/2 + sign(d) (1 - e^(-|d| / scale)) / 2 for d = x - loc
        gap = value - self.loc
        return 0.5 - 0.5 * gap.sign() * (-gap.abs() / self.scale).expm1()

    def icdf(self, value):
        return self._from_signed_uniform(2 * (value - 0.5))

    def entropy(self):
        return 1 + (2 * self.scale).log()

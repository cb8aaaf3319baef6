"""LogNormal: ``exp`` of a Normal."""

from __future__ import annotations

from ember.distributions import constraints
from ember.distributions.normal import Normal
from ember.distributions.transformed_distribution import TransformedDistribution
from ember.distributions.transforms import ExpTransform

__all__ = ["LogNormal"]


class LogNormal(TransformedDistribution):
    """``X = exp(Y)`` with ``Y ~ Normal(loc, scale)``."""

    arg_constraints = constraints._loc_scale_args()
    support = constraints.positive
    has_rsample = True

    def __init__(self, loc, scale, validate_args: bool | None = None) -> None:
        base_dist = Normal(loc, scale, validate_args=validate_args)
        super().__init__(base_dist, ExpTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_family(LogNormal, batch_shape, _instance)

    @property
    def loc(self):
        return self.base_dist.loc

    @property
    def scale(self):
        return self.base_dist.scale

    # with s2 = scale^2: E = e^(mu + s2 / 2), mode e^(mu - s2), Var = (e^s2 - 1) e^(2 mu + s2)
    @property
    def mean(self):
        return (self.loc + 0.5 * self.scale**2).exp()

    @property
    def mode(self):
        return (self.loc - self.scale**2).exp()

    @property
    def variance(self):
        s2 = self.scale**2
        return s2.expm1() * (s2 + 2 * self.loc).exp()

    def entropy(self):
        """Return the differential entropy."""
        return self.base_dist.entropy() + self.loc

"""Inverse gamma distribution (torch.distributions.InverseGamma)."""

from __future__ import annotations

import ember
from ember._core.tensor import Tensor
from ember.distributions import constraints
from ember.distributions.gamma import Gamma
from ember.distributions.transformed_distribution import TransformedDistribution
from ember.distributions.transforms import PowerTransform

__all__ = ["InverseGamma"]


class InverseGamma(TransformedDistribution):
    """Inverse gamma distribution: ``1 / X`` for ``X ~ Gamma(concentration, rate)``."""

    arg_constraints = {
        "concentration": constraints.positive,
        "rate": constraints.positive,
    }
    support = constraints.positive
    has_rsample = True
    base_dist: Gamma

    def __init__(
        self,
        concentration: Tensor | float,
        rate: Tensor | float,
        validate_args: bool | None = None,
    ) -> None:
        # 1 / G for G ~ Gamma(concentration, rate)
        gamma = Gamma(concentration, rate, validate_args=validate_args)
        reciprocal = PowerTransform(-gamma.rate.new_ones(()))
        super().__init__(gamma, reciprocal, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_family(InverseGamma, batch_shape, _instance)

    @property
    def concentration(self) -> Tensor:
        return self.base_dist.concentration

    @property
    def rate(self) -> Tensor:
        return self.base_dist.rate

    def _if_moment(self, order, value):
        """``value`` where the ``order``-th moment exists (alpha > order), inf elsewhere."""
        return ember.where(self.concentration > order, value, ember.inf)

    @property
    def mean(self) -> Tensor:
        a, b = self.concentration, self.rate
        return self._if_moment(1, b / (a - 1))

    @property
    def mode(self) -> Tensor:
        return self.rate / (self.concentration + 1)

    @property
    def variance(self) -> Tensor:
        a, b = self.concentration, self.rate
        return self._if_moment(2, b**2 / ((a - 1) ** 2 * (a - 2)))

    def entropy(self):
        # alpha + log(beta) + log Gamma(alpha) - (1 + alpha) psi(alpha)
        a = self.concentration
        return a + self.rate.log() + a.lgamma() - (1 + a) * a.digamma()

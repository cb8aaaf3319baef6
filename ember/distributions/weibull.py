"""Weibull distribution (torch.distributions.Weibull)."""

from __future__ import annotations

import ember
from ember._core.tensor import Tensor
from ember.distributions import constraints
from ember.distributions.exponential import Exponential
from ember.distributions.transformed_distribution import TransformedDistribution
from ember.distributions.transforms import AffineTransform, PowerTransform
from ember.distributions.utils import _store_broadcast, euler_constant

__all__ = ["Weibull"]


class Weibull(TransformedDistribution):
    """Samples from a two-parameter Weibull distribution."""

    arg_constraints = {
        "scale": constraints.positive,
        "concentration": constraints.positive,
    }
    support = constraints.positive

    def __init__(
        self,
        scale: Tensor | float,
        concentration: Tensor | float,
        validate_args: bool | None = None,
    ) -> None:
        _store_broadcast(self, scale=scale, concentration=concentration)
        self.concentration_reciprocal = self.concentration.reciprocal()
        base = Exponential(ember.ones_like(self.scale), validate_args=validate_args)
        super().__init__(base, self._chain(), validate_args=validate_args)

    def _chain(self):
        # X = scale * E^(1 / k) for E ~ Exponential(1)
        return [
            PowerTransform(exponent=self.concentration_reciprocal),
            AffineTransform(loc=0, scale=self.scale),
        ]

    def expand(self, batch_shape, _instance=None):
        new = self._expand_family(Weibull, batch_shape, _instance, ("scale", "concentration"))
        # the chain carries the parameters: rebuilt from the expanded ones
        new.concentration_reciprocal = 1 / new.concentration
        new.transforms = new._chain()
        return new

    def _gamma_moment(self, m):
        """Gamma(1 + m / k), from which E[X^m] = scale^m Gamma(1 + m / k)."""
        return (1 + m * self.concentration_reciprocal).lgamma().exp()

    @property
    def mean(self) -> Tensor:
        return self.scale * self._gamma_moment(1)

    @property
    def mode(self) -> Tensor:
        k = self.concentration
        return self.scale * ((k - 1) / k) ** k.reciprocal()

    @property
    def variance(self) -> Tensor:
        # written with exp(2 lgamma) for the square, as the first moment itself
        second = self._gamma_moment(2)
        first_sq = (2 * (1 + self.concentration_reciprocal).lgamma()).exp()
        return self.scale**2 * (second - first_sq)

    def entropy(self):
        inv_k = self.concentration_reciprocal
        return euler_constant * (1 - inv_k) + (self.scale * inv_k).log() + 1

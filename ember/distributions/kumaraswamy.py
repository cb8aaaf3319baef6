"""Kumaraswamy distribution (torch.distributions.Kumaraswamy)."""

from __future__ import annotations

from math import nan

import ember
from ember._core.tensor import Tensor
from ember.distributions import constraints
from ember.distributions.transformed_distribution import TransformedDistribution
from ember.distributions.transforms import AffineTransform, PowerTransform
from ember.distributions.uniform import Uniform
from ember.distributions.utils import _store_broadcast, euler_constant

__all__ = ["Kumaraswamy"]


def _moments(a, b, n):
    """E[X^n] = b B(1 + n / a, b), the n-th moment."""
    shifted = 1 + n / a
    return b * (shifted.lgamma() + b.lgamma() - (shifted + b).lgamma()).exp()


class Kumaraswamy(TransformedDistribution):
    """Samples from a Kumaraswamy distribution."""

    arg_constraints = {
        "concentration1": constraints.positive,
        "concentration0": constraints.positive,
    }
    support = constraints.unit_interval
    has_rsample = True

    def __init__(
        self,
        concentration1: Tensor | float,
        concentration0: Tensor | float,
        validate_args: bool | None = None,
    ) -> None:
        _store_broadcast(self, concentration1=concentration1, concentration0=concentration0)
        a, b = self.concentration1, self.concentration0
        # inversion of the cdf 1 - (1 - x^a)^b: X = (1 - U^(1 / b))^(1 / a)
        unit = Uniform(ember.zeros_like(b), ember.ones_like(b), validate_args=validate_args)
        chain = [
            PowerTransform(exponent=b.reciprocal()),
            AffineTransform(loc=1.0, scale=-1.0),
            PowerTransform(exponent=a.reciprocal()),
        ]
        super().__init__(unit, chain, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_family(
            Kumaraswamy, batch_shape, _instance, ("concentration1", "concentration0")
        )

    @property
    def mean(self) -> Tensor:
        return _moments(self.concentration1, self.concentration0, 1)

    @property
    def mode(self) -> Tensor:
        # torch's expression, kept for its values: log1p(-b) / b - log1p(-a b), nan for b > 1
        # (the textbook mode is ((a - 1) / (a b - 1))^(1 / a)); nan also where a < 1 or b < 1
        a, b = self.concentration1, self.concentration0
        log_mode = (-b).log1p() / b - (-b * a).log1p()
        return ember.where((b < 1) | (a < 1), nan, log_mode).exp()

    @property
    def variance(self) -> Tensor:
        return _moments(self.concentration1, self.concentration0, 2) - self.mean**2

    def entropy(self):
        # (1 - 1 / b) + (1 - 1 / a) H_b - log a - log b, H_b = digamma(b + 1) + gamma
        a, b = self.concentration1, self.concentration0
        harmonic = (b + 1).digamma() + euler_constant
        return (1 - b.reciprocal()) + (1 - a.reciprocal()) * harmonic - a.log() - b.log()

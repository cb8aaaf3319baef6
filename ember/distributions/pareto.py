"""Pareto Type 1 distribution (torch.distributions.Pareto)."""

from __future__ import annotations

from ember._core.tensor import Tensor
from ember.distributions import constraints
from ember.distributions.exponential import Exponential
from ember.distributions.transformed_distribution import TransformedDistribution
from ember.distributions.transforms import AffineTransform, ExpTransform
from ember.distributions.utils import _store_broadcast
from ember.types import _size

__all__ = ["Pareto"]


class Pareto(TransformedDistribution):
    """Samples from a Pareto Type 1 distribution."""

    arg_constraints = {"alpha": constraints.positive, "scale": constraints.positive}

    def __init__(
        self,
        scale: Tensor | float,
        alpha: Tensor | float,
        validate_args: bool | None = None,
    ) -> None:
        _store_broadcast(self, scale=scale, alpha=alpha)
        # X = scale e^E with E ~ Exponential(alpha)
        tail = Exponential(self.alpha, validate_args=validate_args)
        chain = [ExpTransform(), AffineTransform(loc=0, scale=self.scale)]
        super().__init__(tail, chain, validate_args=validate_args)

    def expand(self, batch_shape: _size, _instance: Pareto | None = None) -> Pareto:
        return self._expand_family(Pareto, batch_shape, _instance, ("scale", "alpha"))

    # the k-th moment is finite only for alpha > k: clamping alpha to k there gives inf
    @property
    def mean(self) -> Tensor:
        a = self.alpha.clamp(min=1)
        return a * self.scale / (a - 1)

    @property
    def mode(self) -> Tensor:
        return self.scale

    @property
    def variance(self) -> Tensor:
        a = self.alpha.clamp(min=2)
        return a * self.scale**2 / ((a - 2) * (a - 1) ** 2)

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self) -> constraints.Constraint:
        return constraints.greater_than_eq(self.scale)  # [scale, inf)

    def entropy(self) -> Tensor:
        # log(scale / alpha) + 1 / alpha + 1
        inv = self.alpha.reciprocal()
        return (self.scale / self.alpha).log() + (1 + inv)

"""Logistic-normal distribution (torch.distributions.LogisticNormal)."""

from __future__ import annotations

from ember._core.tensor import Tensor
from ember.distributions import constraints
from ember.distributions.independent import Independent
from ember.distributions.normal import Normal
from ember.distributions.transformed_distribution import TransformedDistribution
from ember.distributions.transforms import StickBreakingTransform

__all__ = ["LogisticNormal"]


class LogisticNormal(TransformedDistribution):
    """Logistic-normal distribution: ``StickBreakingTransform`` of ``Normal(loc, scale)``
    draws (a distribution on the simplex)."""

    arg_constraints = constraints._loc_scale_args()
    support = constraints.simplex
    has_rsample = True
    base_dist: Independent[Normal]

    def __init__(
        self,
        loc: Tensor | float,
        scale: Tensor | float,
        validate_args: bool | None = None,
    ) -> None:
        base_dist = Normal(loc, scale, validate_args=validate_args)
        if not base_dist.batch_shape:
            base_dist = base_dist.expand([1])
        super().__init__(base_dist, StickBreakingTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_family(LogisticNormal, batch_shape, _instance)

    @property
    def loc(self) -> Tensor:
        return self.base_dist.base_dist.loc

    @property
    def scale(self) -> Tensor:
        return self.base_dist.base_dist.scale

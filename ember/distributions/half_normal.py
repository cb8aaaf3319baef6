"""Half-normal distribution (torch.distributions.HalfNormal)."""

from __future__ import annotations

import math

from ember.distributions.normal import Normal
from ember.distributions.transformed_distribution import _FoldedAtZero
from ember.distributions.transforms import AbsTransform

__all__ = ["HalfNormal"]


class HalfNormal(_FoldedAtZero):
    """``|X|`` for ``X ~ Normal(0, scale)``."""

    def __init__(self, scale, validate_args: bool | None = None) -> None:
        super().__init__(Normal(0, scale, validate_args=False), AbsTransform(), validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_family(HalfNormal, batch_shape, _instance)

    @property
    def mean(self):
        return self.scale * _ROOT_2_OVER_PI  # E|X| = sigma sqrt(2 / pi)

    @property
    def variance(self):
        return self.scale**2 * (1 - 2 / math.pi)


_ROOT_2_OVER_PI = math.sqrt(2 / math.pi)

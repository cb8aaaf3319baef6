"""Half-Cauchy distribution (torch.distributions.HalfCauchy)."""

from __future__ import annotations

from math import inf

import ember
from ember._core.tensor import Tensor
from ember.distributions.cauchy import Cauchy
from ember.distributions.transformed_distribution import _FoldedAtZero
from ember.distributions.transforms import AbsTransform

__all__ = ["HalfCauchy"]


class HalfCauchy(_FoldedAtZero):
    """Half-Cauchy distribution with ``scale``: ``|X|`` for ``X ~ Cauchy(0, scale)``."""

    base_dist: Cauchy

    def __init__(
        self,
        scale: Tensor | float,
        validate_args: bool | None = None,
    ) -> None:
        super().__init__(Cauchy(0, scale, validate_args=False), AbsTransform(), validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_family(HalfCauchy, batch_shape, _instance)

    @property
    def mean(self) -> Tensor:
        return ember.full(self._extended_shape(), inf, dtype=self.scale.dtype)  # no mean

    @property
    def variance(self) -> Tensor:
        return self.base_dist.variance

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        # without validation a number is accepted too, as torch's
        return self._folded_log_prob(ember.as_tensor(value, dtype=self.scale.dtype))

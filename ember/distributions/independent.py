"""Independent: reinterpret batch dims of a distribution as event dims."""

from __future__ import annotations

import ember
from ember.distributions import constraints
from ember.distributions.distribution import Distribution
from ember.distributions.utils import _sum_rightmost

__all__ = ["Independent"]


class Independent(Distribution):
    """Reinterpret the rightmost ``reinterpreted_batch_ndims`` batch dims as event dims."""

    arg_constraints: dict = {}

    def __init__(
        self,
        base_distribution: Distribution,
        reinterpreted_batch_ndims: int,
        validate_args: bool | None = None,
    ) -> None:
        if reinterpreted_batch_ndims > len(base_distribution.batch_shape):
            raise ValueError(
                "Expected reinterpreted_batch_ndims <= len(base_distribution.batch_shape), "
                f"actual {reinterpreted_batch_ndims} vs {len(base_distribution.batch_shape)}"
            )
        # the last event_dim dims of the base's full shape become this distribution's event
        full = base_distribution.batch_shape + base_distribution.event_shape
        split = len(full) - (reinterpreted_batch_ndims + len(base_distribution.event_shape))
        batch_shape, event_shape = full[:split], full[split:]
        self.base_dist = base_distribution
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        batch_shape = ember.Size(batch_shape)
        dims = self.reinterpreted_batch_ndims
        return self._expand_params(
            Independent,
            batch_shape,
            _instance,
            base_dist=self.base_dist.expand(batch_shape + self.event_shape[:dims]),
            reinterpreted_batch_ndims=dims,
        )

    @property
    def has_rsample(self) -> bool:
        return self.base_dist.has_rsample

    @property
    def has_enumerate_support(self) -> bool:
        # enumerating a product of supports is not offered
        return not self.reinterpreted_batch_ndims and self.base_dist.has_enumerate_support

    @constraints.dependent_property
    def support(self):
        inner = self.base_dist.support
        dims = self.reinterpreted_batch_ndims
        return constraints.independent(inner, dims) if dims else inner

    @property
    def mean(self):
        return self.base_dist.mean

    @property
    def mode(self):
        return self.base_dist.mode

    @property
    def variance(self):
        return self.base_dist.variance

    def sample(self, sample_shape=()):
        return self.base_dist.sample(sample_shape)

    def rsample(self, sample_shape=()):
        return self.base_dist.rsample(sample_shape)

    # independence: densities multiply, entropies add over the reinterpreted dims
    def log_prob(self, value):
        return _sum_rightmost(self.base_dist.log_prob(value), self.reinterpreted_batch_ndims)

    def entropy(self):
        return _sum_rightmost(self.base_dist.entropy(), self.reinterpreted_batch_ndims)

    def enumerate_support(self, expand: bool = True):
        if self.reinterpreted_batch_ndims:
            raise NotImplementedError("Enumeration over cartesian product is not implemented")
        return self.base_dist.enumerate_support(expand=expand)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.base_dist}, {self.reinterpreted_batch_ndims})"

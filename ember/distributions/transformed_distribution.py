"""TransformedDistribution: a base distribution pushed through a sequence of transforms."""

from __future__ import annotations

import math

import ember
from ember.distributions import constraints
from ember.distributions.distribution import Distribution
from ember.distributions.independent import Independent, _sum_rightmost
from ember.distributions.transforms import ComposeTransform, Transform

__all__ = ["TransformedDistribution"]


class TransformedDistribution(Distribution):
    """The distribution of ``transforms(x)`` for ``x ~ base_distribution``; ``log_prob``
    adds the log-det-Jacobians of the inverse transforms."""

    arg_constraints: dict = {}

    def __init__(
        self, base_distribution: Distribution, transforms, validate_args: bool | None = None
    ) -> None:
        if isinstance(transforms, Transform):
            transforms = [transforms]
        elif not isinstance(transforms, list):
            raise ValueError(f"transforms must be a Transform or list, but was {transforms}")
        elif any(not isinstance(t, Transform) for t in transforms):
            raise ValueError("transforms must be a Transform or a list of Transforms")
        self.transforms = transforms
        chain = ComposeTransform(transforms)
        shape_in = base_distribution.batch_shape + base_distribution.event_shape
        inner_event = len(base_distribution.event_shape)
        if len(shape_in) < chain.domain.event_dim:
            raise ValueError(
                "base_distribution needs to have shape with size at least "
                f"{chain.domain.event_dim}, but got {shape_in}."
            )
        shape_out = chain.forward_shape(shape_in)
        # transforms with broadcasting parameters can need a larger base batch
        needed_in = chain.inverse_shape(shape_out)
        if needed_in != shape_in:
            base_distribution = base_distribution.expand(needed_in[: len(needed_in) - inner_event])
        # the chain may treat more dims as one event than the base does
        if chain.domain.event_dim > inner_event:
            base_distribution = Independent(base_distribution, chain.domain.event_dim - inner_event)
        self.base_dist = base_distribution
        grown = inner_event + chain.codomain.event_dim - chain.domain.event_dim
        n_event = max(chain.codomain.event_dim, grown)
        split = len(shape_out) - n_event
        super().__init__(
            ember.Size(shape_out[:split]),
            ember.Size(shape_out[split:]),
            validate_args=validate_args,
        )

    def expand(self, batch_shape, _instance=None):
        batch_shape = ember.Size(batch_shape)
        shape_in = ComposeTransform(self.transforms).inverse_shape(batch_shape + self.event_shape)
        base_batch = shape_in[: len(shape_in) - len(self.base_dist.event_shape)]
        return self._expand_params(
            TransformedDistribution,
            batch_shape,
            _instance,
            base_dist=self.base_dist.expand(base_batch),
            transforms=self.transforms,
        )

    def _expand_family(self, cls, batch_shape, _instance, names=()):
        """``expand`` of a family built on this class: its own tensor parameters ``names`` are
        expanded, the base distribution and transforms are re-derived by ``expand`` above."""
        mine = self._get_checked_instance(cls, _instance)
        for name in names:
            setattr(mine, name, getattr(self, name).expand(batch_shape))
        return TransformedDistribution.expand(self, batch_shape, _instance=mine)

    @constraints.dependent_property(is_discrete=False)
    def support(self):
        if not self.transforms:
            return self.base_dist.support
        last = self.transforms[-1].codomain
        extra = len(self.event_shape) - last.event_dim
        return constraints.independent(last, extra) if extra > 0 else last

    @property
    def has_rsample(self) -> bool:
        return self.base_dist.has_rsample

    def sample(self, sample_shape=()):
        """Return a sample (no gradient): a base sample pushed through the transforms."""
        with ember.no_grad():
            x = self.base_dist.sample(sample_shape)
            for transform in self.transforms:
                x = transform(x)
            return x

    def rsample(self, sample_shape=()):
        """Return a reparameterized sample (gradients flow to the parameters)."""
        x = self.base_dist.rsample(sample_shape)
        for transform in self.transforms:
            x = transform(x)
        return x

    def log_prob(self, value):
        """Return the log density of ``value`` (change of variables)."""
        if self._validate_args:
            self._validate_sample(value)
        # walk back from the value: log p(y) = log p_base(x) - sum log|dy/dx| along the chain,
        # each term summed over the dims that are event dims here but not for its transform
        n_event = len(self.event_shape)
        total = 0.0
        y = value
        for t in self.transforms[::-1]:
            x = t.inv(y)
            n_event -= t.codomain.event_dim - t.domain.event_dim
            total = total - _sum_rightmost(
                t.log_abs_det_jacobian(x, y), n_event - t.domain.event_dim
            )
            y = x
        base = _sum_rightmost(self.base_dist.log_prob(y), n_event - len(self.base_dist.event_shape))
        return total + base

    def _monotonize_cdf(self, value):
        # a decreasing chain reverses the cdf: F_y(v) = 1 - F_base(x)
        sign = math.prod((t.sign for t in self.transforms), start=1)
        if isinstance(sign, int) and sign == 1:
            return value
        return sign * (value - 0.5) + 0.5

    def cdf(self, value):
        """Return the cumulative distribution function at ``value``."""
        for transform in self.transforms[::-1]:
            value = transform.inv(value)
        if self._validate_args:
            self.base_dist._validate_sample(value)
        return self._monotonize_cdf(self.base_dist.cdf(value))

    def icdf(self, value):
        """Return the inverse cumulative distribution function at ``value``."""
        value = self.base_dist.icdf(self._monotonize_cdf(value))
        for transform in self.transforms:
            value = transform(value)
        return value


class _FoldedAtZero(TransformedDistribution):
    """|X| for X symmetric about 0 (HalfNormal, HalfCauchy): the mass of -x joins x, so the
    density doubles on [0, inf), F(x) = 2 F_X(x) - 1, and the entropy loses log 2."""

    arg_constraints = {"scale": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    def _folded_log_prob(self, value):
        doubled = self.base_dist.log_prob(value) + _LOG_2
        return ember.where(value >= 0, doubled, -math.inf)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return self._folded_log_prob(value)

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return 2 * self.base_dist.cdf(value) - 1

    def icdf(self, prob):
        return self.base_dist.icdf((1 + prob) / 2)

    def entropy(self):
        return self.base_dist.entropy() - _LOG_2

    @property
    def scale(self):
        return self.base_dist.scale

    @property
    def mode(self):
        return ember.zeros_like(self.scale)


_LOG_2 = math.log(2)

"""MixtureSameFamily: a Categorical mixture of components from one distribution family."""

from __future__ import annotations

import ember
from ember.distributions import constraints
from ember.distributions.categorical import Categorical
from ember.distributions.distribution import Distribution

__all__ = ["MixtureSameFamily"]


class MixtureSameFamily(Distribution):
    """Mixture over the rightmost batch dim of ``component_distribution``, weighted by
    ``mixture_distribution`` (a Categorical)."""

    arg_constraints: dict = {}
    has_rsample = False

    def __init__(
        self,
        mixture_distribution: Categorical,
        component_distribution: Distribution,
        validate_args: bool | None = None,
    ) -> None:
        if not isinstance(mixture_distribution, Categorical):
            raise ValueError(
                " The Mixture distribution needs to be an  instance of "
                "torch.distributions.Categorical"
            )
        if not isinstance(component_distribution, Distribution):
            raise ValueError(
                "The Component distribution needs to be an instance of "
                "torch.distributions.Distribution"
            )
        self._mixture_distribution = mixture_distribution
        self._component_distribution = component_distribution
        # the components' rightmost batch dim is the mixture dim; the rest must broadcast with
        # the mixing weights' batch
        mix_batch = mixture_distribution.batch_shape
        batch = component_distribution.batch_shape[:-1]
        if any(a != b and 1 not in (a, b) for a, b in zip(mix_batch[::-1], batch[::-1])):
            raise ValueError(
                f"`mixture_distribution.batch_shape` ({mix_batch}) is not compatible with "
                f"`component_distribution.batch_shape`({batch})"
            )
        n_weights = mixture_distribution.logits.shape[-1]
        n_components = component_distribution.batch_shape[-1]
        if n_weights != n_components:
            raise ValueError(
                f"`mixture_distribution component` ({n_weights}) does not equal "
                f"`component_distribution.batch_shape[-1]` ({n_components})"
            )
        self._num_component = n_weights
        event_shape = component_distribution.event_shape
        self._event_ndims = len(event_shape)
        super().__init__(batch_shape=batch, event_shape=event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        batch_shape = ember.Size(batch_shape)
        components = self._component_distribution.expand(batch_shape + (self._num_component,))
        return self._expand_params(
            MixtureSameFamily,
            batch_shape,
            _instance,
            event_shape=components.event_shape,
            _component_distribution=components,
            _mixture_distribution=self._mixture_distribution.expand(batch_shape),
            _num_component=self._num_component,
            _event_ndims=self._event_ndims,
        )

    @constraints.dependent_property
    def support(self):
        return constraints.MixtureSameFamilyConstraint(self._component_distribution.support)

    @property
    def mixture_distribution(self) -> Categorical:
        return self._mixture_distribution

    @property
    def component_distribution(self) -> Distribution:
        return self._component_distribution

    @property
    def _mix_dim(self) -> int:
        return -1 - self._event_ndims

    def _weighted(self, per_component):
        """sum_k w_k * per_component[k] over the mixture dim."""
        weights = self._pad_mixture_dimensions(self._mixture_distribution.probs)
        return (weights * per_component).sum(self._mix_dim)

    @property
    def mean(self):
        return self._weighted(self._component_distribution.mean)

    @property
    def variance(self):
        # law of total variance: E[Var(X | k)] + Var(E[X | k])
        comps = self._component_distribution
        spread = (comps.mean - self._pad(self.mean)) ** 2.0
        return self._weighted(comps.variance) + self._weighted(spread)

    def cdf(self, x):
        """Return the mixture's cumulative distribution function at ``x``."""
        per_component = self._component_distribution.cdf(self._pad(x))
        return (per_component * self._mixture_distribution.probs).sum(-1)

    def log_prob(self, x):
        """Return ``log sum_k p_k f_k(x)``."""
        if self._validate_args:
            self._validate_sample(x)
        log_f = self._component_distribution.log_prob(self._pad(x))
        log_w = ember.log_softmax(self._mixture_distribution.logits, dim=-1)
        return ember.logsumexp(log_f + log_w, dim=-1)

    def sample(self, sample_shape=()):
        """Return samples: a component drawn per sample, then a draw from it."""
        with ember.no_grad():
            sample_shape = ember.Size(sample_shape)
            # the component index first, then every component's draw (torch's stream order);
            # the index picks one draw along the mixture dim
            which = self._mixture_distribution.sample(sample_shape)
            draws = self._component_distribution.sample(sample_shape)
            mix_dim = len(sample_shape) + len(self.batch_shape)
            index = which.reshape(which.shape + (1,) * (self._event_ndims + 1))
            index = index.expand(which.shape + (1,) + self.event_shape)
            return draws.gather(mix_dim, index).squeeze(mix_dim)

    def _pad(self, x):
        return x.unsqueeze(self._mix_dim)

    def _pad_mixture_dimensions(self, x):
        # the weights broadcast against per-component statistics: batch dims the weights lack
        # are inserted before the mixture dim (torch inserts none when the weights have exactly
        # one batch dim), and the event dims after it
        n_batch = len(self._mixture_distribution.batch_shape)
        missing = 0 if n_batch == 1 else len(self.batch_shape) - n_batch
        shape = x.shape
        return x.reshape(shape[:-1] + (1,) * missing + shape[-1:] + (1,) * self._event_ndims)

    def __repr__(self) -> str:
        return (
            f"MixtureSameFamily(\n  {self._mixture_distribution},\n  "
            f"{self._component_distribution})"
        )

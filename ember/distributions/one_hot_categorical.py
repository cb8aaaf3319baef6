"""OneHotCategorical distribution (torch.distributions.OneHotCategorical)."""

from __future__ import annotations

import ember
import ember.nn.functional as F
from ember.distributions import constraints
from ember.distributions.categorical import Categorical, _support_column
from ember.distributions.distribution import Distribution

__all__ = ["OneHotCategorical", "OneHotCategoricalStraightThrough"]


class OneHotCategorical(Distribution):
    """Categorical distribution whose samples are one-hot vectors of size ``probs.size(-1)``."""

    arg_constraints = constraints._categorical_odds_args()
    support = constraints.one_hot
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args: bool | None = None) -> None:
        # a Categorical over the same weights does the work; samples are its labels one-hot
        self._categorical = Categorical(probs, logits)
        cat = self._categorical
        super().__init__(cat.batch_shape, cat.param_shape[-1:], validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(
            OneHotCategorical,
            batch_shape,
            _instance,
            _categorical=self._categorical.expand(batch_shape),
        )

    def _new(self, *args, **kwargs):
        return self._param.new(*args, **kwargs)

    @property
    def _param(self):
        return self._categorical._param

    @property
    def probs(self):
        return self._categorical.probs

    @property
    def logits(self):
        return self._categorical.logits

    @property
    def mean(self):
        return self.probs

    def _one_hot(self, labels):
        return F.one_hot(labels, self._categorical._num_events).to(self.probs)

    @property
    def mode(self):
        return self._one_hot(self.probs.argmax(dim=-1))

    @property
    def variance(self):
        p = self.probs
        return p * (1 - p)  # each coordinate is a Bernoulli(p_k)

    @property
    def param_shape(self) -> ember.Size:
        return self._categorical.param_shape

    def sample(self, sample_shape=()):
        return self._one_hot(self._categorical.sample(ember.Size(sample_shape)))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return self._categorical.log_prob(value.max(-1)[1])

    def entropy(self):
        return self._categorical.entropy()

    def enumerate_support(self, expand: bool = True):
        n = self.event_shape[0]
        return _support_column(ember.eye(n, dtype=self._param.dtype), self.batch_shape, expand)


class OneHotCategoricalStraightThrough(OneHotCategorical):
    """A reparameterizable ``OneHotCategorical`` (the straight-through gradient estimator)."""

    has_rsample = True

    def rsample(self, sample_shape=()):
        samples = self.sample(sample_shape)
        probs = self._categorical.probs  # cached via lazy_property
        return samples + (probs - probs.detach())

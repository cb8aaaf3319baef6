"""Relaxed one-hot categorical distribution (torch.distributions.RelaxedOneHotCategorical)."""

from __future__ import annotations

import ember
from ember._core.tensor import Tensor
from ember.distributions import constraints
from ember.distributions.categorical import Categorical
from ember.distributions.distribution import Distribution
from ember.distributions.transformed_distribution import TransformedDistribution
from ember.distributions.transforms import ExpTransform
from ember.distributions.utils import _logits_with, clamp_probs
from ember.types import _size

__all__ = ["ExpRelaxedCategorical", "RelaxedOneHotCategorical"]


class ExpRelaxedCategorical(Distribution):
    """Creates a ExpRelaxedCategorical parameterized by ``temperature``, and either ``probs`` or
    ``logits`` (but not both). Returns the log of a point in the simplex. Based on the interface to
    ``OneHotCategorical``."""

    arg_constraints = constraints._categorical_odds_args()
    support = constraints.real_vector  # The true support is actually a submanifold of this.
    has_rsample = True

    def __init__(
        self,
        temperature: Tensor,
        probs: Tensor | None = None,
        logits: Tensor | None = None,
        validate_args: bool | None = None,
    ) -> None:
        self._categorical = Categorical(probs, logits)
        self.temperature = temperature
        cat = self._categorical
        super().__init__(cat.batch_shape, cat.param_shape[-1:], validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(
            ExpRelaxedCategorical,
            batch_shape,
            _instance,
            temperature=self.temperature,
            _categorical=self._categorical.expand(batch_shape),
        )

    def _new(self, *args, **kwargs):
        return self._categorical._new(*args, **kwargs)

    @property
    def param_shape(self) -> ember.Size:
        return self._categorical.param_shape

    @property
    def logits(self) -> Tensor:
        return self._categorical.logits

    @property
    def probs(self) -> Tensor:
        return self._categorical.probs

    def rsample(self, sample_shape: _size = ()) -> Tensor:
        # Gumbel-softmax in log space: log_softmax((logits + G) / t), G = -log(-log U)
        u = clamp_probs(ember.rand(self._extended_shape(sample_shape), dtype=self.logits.dtype))
        scores = (self.logits - (-u.log()).log()) / self.temperature
        return scores - scores.logsumexp(dim=-1, keepdim=True)

    def log_prob(self, value):
        k = self._categorical._num_events
        # Maddison et al. (2017): log (K - 1)! + (K - 1) log t + sum_i log_softmax(s)_i with
        # s = logits - t x
        logits, value = _logits_with(self, value)
        t = self.temperature
        s = logits - value * t
        log_norm = ember.full_like(t, float(k)).lgamma() + (k - 1) * t.log()
        return (s - s.logsumexp(dim=-1, keepdim=True)).sum(-1) + log_norm


class RelaxedOneHotCategorical(TransformedDistribution):
    """Creates a RelaxedOneHotCategorical distribution parametrized by ``temperature``, and either
    ``probs`` or ``logits``. This is a relaxed version of the ``OneHotCategorical`` distribution, so
    its samples are on simplex, and are reparametrizable."""

    arg_constraints = constraints._categorical_odds_args()
    support = constraints.simplex
    has_rsample = True
    base_dist: ExpRelaxedCategorical

    def __init__(
        self,
        temperature: Tensor,
        probs: Tensor | None = None,
        logits: Tensor | None = None,
        validate_args: bool | None = None,
    ) -> None:
        # the exponential of an ExpRelaxedCategorical, which lives in log space
        log_dist = ExpRelaxedCategorical(temperature, probs, logits, validate_args=validate_args)
        super().__init__(log_dist, ExpTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_family(RelaxedOneHotCategorical, batch_shape, _instance)

    @property
    def temperature(self) -> Tensor:
        return self.base_dist.temperature

    @property
    def logits(self) -> Tensor:
        return self.base_dist.logits

    @property
    def probs(self) -> Tensor:
        return self.base_dist.probs

"""Bernoulli distribution (torch.distributions.Bernoulli)."""

from __future__ import annotations

from math import nan
from numbers import Number

import ember
import ember.nn.functional as F
from ember.distributions import constraints
from ember.distributions.categorical import _support_column
from ember.distributions.exp_family import ExponentialFamily
from ember.distributions.utils import (
    _BinaryOdds,
    _log1p_exp,
    _logits_with,
    _probs_xor_logits,
    broadcast_all,
)

__all__ = ["Bernoulli"]


class Bernoulli(_BinaryOdds, ExponentialFamily):
    """Bernoulli distribution parameterized by ``probs`` or ``logits`` (not both)."""

    arg_constraints = constraints._binary_odds_args()
    support = constraints.boolean
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args: bool | None = None) -> None:
        given_probs = _probs_xor_logits(probs, logits)
        given = probs if given_probs else logits
        (param,) = broadcast_all(given)
        setattr(self, "probs" if given_probs else "logits", param)
        self._param = param
        shape = ember.Size() if isinstance(given, Number) else param.size()
        super().__init__(shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._expand_params(Bernoulli, batch_shape, _instance, ("probs", "logits"))
        new._param = new.__dict__["probs" if "probs" in self.__dict__ else "logits"]
        return new

    def _new(self, *args, **kwargs):
        return self._param.new(*args, **kwargs)

    @property
    def mean(self):
        return self.probs

    @property
    def mode(self):
        p = self.probs
        return ember.where(p == 0.5, nan, (p >= 0.5).to(p))  # a tie has no mode

    @property
    def variance(self):
        p = self.probs
        return p * (1 - p)

    @property
    def param_shape(self) -> ember.Size:
        return self._param.size()

    def sample(self, sample_shape=()):
        with ember.no_grad():
            return ember.bernoulli(self.probs.expand(self._extended_shape(sample_shape)))

    def log_prob(self, value):
        # minus the cross-entropy: x log p + (1 - x) log(1 - p) = -(log(1 + e^logit) - x logit)
        logits, value = _logits_with(self, value)
        return -(_log1p_exp(logits) - value * logits)

    def entropy(self):
        # the cross-entropy of the distribution with itself (ember's fused op keeps the grad_fn
        # torch reports)
        return F.binary_cross_entropy_with_logits(self.logits, self.probs, reduction="none")

    def enumerate_support(self, expand: bool = True):
        return _support_column(ember.arange(2, dtype=self._param.dtype), self._batch_shape, expand)

    _mean_carrier_measure = 0

    @property
    def _natural_params(self):
        return (ember.logit(self.probs),)

    def _log_normalizer(self, x):
        return ember.log1p(ember.exp(x))

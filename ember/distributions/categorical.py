"""Categorical distribution (torch.distributions.Categorical)."""

from __future__ import annotations

import math
from math import nan

import ember
from ember.distributions import constraints
from ember.distributions.distribution import Distribution
from ember.distributions.utils import (
    _probs_xor_logits,
    lazy_property,
    logits_to_probs,
    probs_to_logits,
)

__all__ = ["Categorical"]


class Categorical(Distribution):
    """Categorical distribution over ``{0, ..., K-1}`` from ``probs`` or ``logits`` (not both)."""

    arg_constraints = constraints._categorical_odds_args()
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args: bool | None = None) -> None:
        name = "probs" if _probs_xor_logits(probs, logits) else "logits"
        given = probs if name == "probs" else logits
        if given.dim() < 1:
            raise ValueError(f"`{name}` parameter must be at least one-dimensional.")
        # stored normalized: probs summing to 1, logits with logsumexp 0
        if name == "probs":
            given = given / given.sum(-1, keepdim=True)
        else:
            given = given - given.logsumexp(dim=-1, keepdim=True)
        setattr(self, name, given)
        self._param = given
        self._num_events = given.shape[-1]
        super().__init__(given.shape[:-1], validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._expand_params(
            Categorical,
            batch_shape,
            _instance,
            ("probs", "logits"),
            _num_events=self._num_events,
        )
        new._param = new.__dict__["probs" if "probs" in self.__dict__ else "logits"]
        return new

    def _new(self, *args, **kwargs):
        return self._param.new(*args, **kwargs)

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        return constraints.integer_interval(0, self._num_events - 1)

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits)

    @property
    def param_shape(self) -> ember.Size:
        return self._param.size()

    def _undefined(self):
        return ember.full(self._extended_shape(), nan, dtype=self.probs.dtype)

    @property
    def mean(self):
        return self._undefined()  # categories are labels, not numbers

    @property
    def mode(self):
        return self.probs.argmax(dim=-1)

    @property
    def variance(self):
        return self._undefined()

    def sample(self, sample_shape=()):
        sample_shape = ember.Size(sample_shape)
        # one multinomial row per batch member, all draws at once, then draws in front
        rows = self.probs.reshape(-1, self._num_events)
        draws = ember.multinomial(rows, math.prod(sample_shape), True)
        return draws.T.reshape(self._extended_shape(sample_shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        index = value.long().unsqueeze(-1)
        index, table = ember.broadcast_tensors(index, self.logits)
        return table.gather(-1, index[..., :1]).squeeze(-1)

    def entropy(self):
        # -sum p log p; -inf logits (p = 0) are floored so that 0 * log 0 counts as 0
        floor = ember.finfo(self.logits.dtype).min
        return -(self.logits.clamp(min=floor) * self.probs).sum(-1)

    def enumerate_support(self, expand: bool = True):
        labels = ember.arange(self._num_events, dtype=ember.long)
        return _support_column(labels, self._batch_shape, expand)


def _support_column(values, batch_shape, expand: bool):
    """``values`` (support points along dim 0, then any event dims) laid out to broadcast
    against ``batch_shape``: singleton batch dims, or expanded to it."""
    event = tuple(values.shape[1:])
    n = values.shape[0]
    column = values.reshape((n,) + (1,) * len(batch_shape) + event)
    return column.expand((n,) + tuple(batch_shape) + event) if expand else column

"""Binomial, Geometric and Multinomial distributions (counts of Bernoulli trials)."""

from __future__ import annotations

from numbers import Number

import ember
from ember.distributions import constraints
from ember.distributions.categorical import Categorical
from ember.distributions.distribution import Distribution
from ember.distributions.utils import (
    _BinaryOdds,
    _log1p_exp,
    _logits_with,
    _probs_xor_logits,
    broadcast_all,
)

__all__ = ["Binomial", "Geometric", "Multinomial"]


def _log_choose(n, k):
    """log of the binomial coefficient n! / (k! (n - k)!)."""
    return (n + 1).lgamma() - (k + 1).lgamma() - (n - k + 1).lgamma()


def _common_count(total_count, what: str) -> int:
    """The single trial count shared by every batch member (entropy and the support need it)."""
    n = int(total_count.max())
    if n != total_count.min():
        raise NotImplementedError(f"Inhomogeneous total count not supported by `{what}`.")
    return n


class Binomial(_BinaryOdds, Distribution):
    """Number of successes in ``total_count`` trials of success probability ``probs``
    (or log-odds ``logits``)."""

    arg_constraints = {
        "total_count": constraints.nonnegative_integer,
        "probs": constraints.unit_interval,
        "logits": constraints.real,
    }
    has_enumerate_support = True

    def __init__(
        self, total_count=1, probs=None, logits=None, validate_args: bool | None = None
    ) -> None:
        name = "probs" if _probs_xor_logits(probs, logits) else "logits"
        count, param = broadcast_all(total_count, probs if name == "probs" else logits)
        setattr(self, name, param)
        self.total_count = count.type_as(param)  # counts take the parameter's float dtype
        self._param = param
        super().__init__(param.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._expand_params(
            Binomial, batch_shape, _instance, ("total_count", "probs", "logits")
        )
        new._param = new.__dict__["probs" if "probs" in self.__dict__ else "logits"]
        return new

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        return constraints.integer_interval(0, self.total_count)

    @property
    def mean(self):
        return self.total_count * self.probs

    @property
    def mode(self):
        # the largest k with P(k) >= P(k - 1) is floor((n + 1) p), at most n
        return ((self.total_count + 1) * self.probs).floor().clamp(max=self.total_count)

    @property
    def variance(self):
        p = self.probs
        return self.total_count * p * (1 - p)

    @property
    def param_shape(self) -> ember.Size:
        return self._param.size()

    def sample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        with ember.no_grad():
            return ember.binomial(self.total_count.expand(shape), self.probs.expand(shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        # log C(n, k) + k log p + (n - k) log(1 - p), written with the log-odds:
        # k logit - n log(1 + e^logit)
        n = self.total_count
        return _log_choose(n, value) + value * self.logits - n * _log1p_exp(self.logits)

    def entropy(self):
        _common_count(self.total_count, "entropy")
        log_p = self.log_prob(self.enumerate_support(False))
        return -(log_p.exp() * log_p).sum(0)

    def enumerate_support(self, expand: bool = True):
        n = _common_count(self.total_count, "enumerate_support")
        counts = ember.arange(n + 1, dtype=self._param.dtype)
        counts = counts.reshape((n + 1,) + (1,) * len(self._batch_shape))
        return counts.expand((n + 1,) + tuple(self._batch_shape)) if expand else counts


class Geometric(_BinaryOdds, Distribution):
    """Number of failures before the first success, success probability ``probs``."""

    arg_constraints = constraints._binary_odds_args()
    support = constraints.nonnegative_integer

    def __init__(self, probs=None, logits=None, validate_args: bool | None = None) -> None:
        given_probs = _probs_xor_logits(probs, logits)
        given = probs if given_probs else logits
        (param,) = broadcast_all(given)
        setattr(self, "probs" if given_probs else "logits", param)
        shape = ember.Size() if isinstance(given, Number) else given.size()
        super().__init__(shape, validate_args=validate_args)
        if self._validate_args and given_probs:
            valid = self.probs > 0  # a zero success probability never stops
            if not valid.all():
                raise ValueError(
                    f"Expected parameter probs ({type(self.probs).__name__} of shape "
                    f"{tuple(self.probs.shape)}) of distribution {self!r} to be positive but "
                    f"found invalid values:\n{self.probs.data[~valid]}"
                )

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(Geometric, batch_shape, _instance, ("probs", "logits"))

    @property
    def mean(self):
        return 1.0 / self.probs - 1.0

    @property
    def mode(self):
        return ember.zeros_like(self.probs)

    @property
    def variance(self):
        return (1.0 / self.probs - 1.0) / self.probs

    def sample(self, sample_shape=()):
        # inversion: K = floor(log U / log(1 - p)) for U uniform on (0, 1]
        shape = self._extended_shape(sample_shape)
        p = self.probs
        with ember.no_grad():
            u = ember.empty(shape, dtype=p.dtype).uniform_(ember.finfo(p.dtype).tiny, 1)
            return (u.log() / (-p).log1p()).floor()

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        # k log(1 - p) + log p; xlog1py makes 0 failures certain when p = 1
        value, p = broadcast_all(value, self.probs)
        return ember.special.xlog1py(value, -p) + self.probs.log()

    def entropy(self):
        # H / p with H the Bernoulli entropy = softplus(logit) - p logit, per success
        p, logit = self.probs, self.logits
        return (_log1p_exp(logit) - p * logit) / p


class Multinomial(Distribution):
    """Counts of ``total_count`` draws from a Categorical over the last dim of ``probs``."""

    arg_constraints = constraints._categorical_odds_args()

    def __init__(
        self, total_count: int = 1, probs=None, logits=None, validate_args: bool | None = None
    ) -> None:
        if not isinstance(total_count, int):
            raise NotImplementedError("inhomogeneous total_count is not supported")
        self.total_count = total_count
        self._categorical = Categorical(probs, logits)
        cat = self._categorical
        super().__init__(cat.batch_shape, cat.param_shape[-1:], validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(
            Multinomial,
            batch_shape,
            _instance,
            total_count=self.total_count,
            _categorical=self._categorical.expand(batch_shape),
        )

    @property
    def mean(self):
        return self.probs * self.total_count

    @property
    def variance(self):
        p = self.probs
        return self.total_count * p * (1 - p)

    @constraints.dependent_property(is_discrete=True, event_dim=1)
    def support(self):
        return constraints.multinomial(self.total_count)

    @property
    def logits(self):
        return self._categorical.logits

    @property
    def probs(self):
        return self._categorical.probs

    @property
    def param_shape(self) -> ember.Size:
        return self._categorical.param_shape

    def sample(self, sample_shape=()):
        sample_shape = ember.Size(sample_shape)
        draws = self._categorical.sample(ember.Size((self.total_count,)) + sample_shape)
        draws = draws.movedim(0, -1)  # the n draws of one sample along the last dim
        counts = ember.zeros(self._extended_shape(sample_shape), dtype=draws.dtype)
        counts.scatter_add_(-1, draws, ember.ones_like(draws))
        return counts.type_as(self.probs)

    def entropy(self):
        # H = n H(categorical) - log n! + sum_i E[log X_i!], X_i ~ Binomial(n, p_i)
        n = ember.tensor(self.total_count)
        # each category's count is Binomial(n, p_i), built here from the current probs (torch
        # keeps one from __init__, so an expanded Multinomial has none and its entropy raises)
        counts = Binomial(total_count=self.total_count, probs=self.probs, validate_args=False)
        k = counts.enumerate_support(expand=False)[1:]  # log 0! = 0
        expected_log_fact = (counts.log_prob(k).exp() * (k + 1).lgamma()).sum([0, -1])
        return n * self._categorical.entropy() - (n + 1).lgamma() + expected_log_fact

    def log_prob(self, value):
        logits, value = _logits_with(self, value)
        # a category of probability 0 contributes nothing when it is not drawn
        logits = logits.masked_fill((value == 0) & (logits == -float("inf")), 0.0)
        weighted = (logits * value).sum(-1)
        return (value.sum(-1) + 1).lgamma() - (value + 1).lgamma().sum(-1) + weighted

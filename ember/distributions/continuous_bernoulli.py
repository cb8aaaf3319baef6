"""Continuous Bernoulli distribution (torch.distributions.ContinuousBernoulli).

The density on [0, 1] is ``C(p) p^x (1 - p)^(1 - x)`` with the normalizer
``C(p) = |log(1 - p) - log p| / |1 - 2 p|`` (2 at p = 1/2). Every closed form below divides by a
quantity that vanishes at p = 1/2, so inside ``lims`` around 1/2 ember switches to the Taylor
series of the same quantity in ``p - 1/2``; the closed-form branch is fed a harmless stand-in for
p there, so that its (discarded) gradient stays finite.
"""

from __future__ import annotations

import math

import ember
from ember._core.tensor import Tensor
from ember.distributions import constraints
from ember.distributions.exp_family import ExponentialFamily
from ember.distributions.utils import (
    _BinaryOdds,
    _log1p_exp,
    _logits_with,
    _probs_xor_logits,
    broadcast_all,
    clamp_probs,
    lazy_property,
    logits_to_probs,
)
from ember.types import Number, _Number, _size

__all__ = ["ContinuousBernoulli"]

_LOG_2 = math.log(2.0)


def _log_odds_against(p):
    """log(1 - p) - log(p)."""
    return ember.log1p(-p) - ember.log(p)


class ContinuousBernoulli(_BinaryOdds, ExponentialFamily):
    """Creates a continuous Bernoulli distribution parameterized by ``probs`` or ``logits`` (but not
    both)."""

    arg_constraints = constraints._binary_odds_args()
    support = constraints.unit_interval
    _mean_carrier_measure = 0
    has_rsample = True

    def __init__(
        self,
        probs: Tensor | Number | None = None,
        logits: Tensor | Number | None = None,
        lims: tuple[float, float] = (0.499, 0.501),
        validate_args: bool | None = None,
    ) -> None:
        given_probs = _probs_xor_logits(probs, logits)
        given = probs if given_probs else logits
        (param,) = broadcast_all(given)
        if given_probs:
            # probs are clamped away from 0 and 1 below, after which they would always pass the
            # constraint: an explicit validate_args checks them first
            if validate_args is not None and not self.arg_constraints["probs"].check(param).all():
                raise ValueError("The parameter probs has invalid values")
            param = clamp_probs(param)
        setattr(self, "probs" if given_probs else "logits", param)
        self._param = param
        self._lims = lims
        shape = () if isinstance(given, _Number) else param.size()
        super().__init__(shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._expand_params(
            ContinuousBernoulli, batch_shape, _instance, ("probs", "logits"), _lims=self._lims
        )
        new._param = new.__dict__["probs" if "probs" in self.__dict__ else "logits"]
        return new

    def _new(self, *args, **kwargs):
        return self._param.new(*args, **kwargs)

    def _outside_unstable_region(self):
        low, high = self._lims
        return (self.probs <= low) | (self.probs > high)

    def _cut_probs(self):
        """probs where the closed forms are used, ``lims[0]`` (a safe stand-in) elsewhere."""
        return ember.where(self._outside_unstable_region(), self.probs, self._lims[0])

    def _closed_or_series(self, closed, series):
        """``closed(cut probs)`` off the region around 1/2, ``series(probs - 1/2)`` on it."""
        return ember.where(
            self._outside_unstable_region(), closed(self._cut_probs()), series(self.probs - 0.5)
        )

    def _cont_bern_log_norm(self):
        """computes the log normalizing constant as a function of the 'probs' parameter"""

        def closed(p):
            # |1 - 2p| = 1 - 2 min(p, 1 - p): log1p keeps both tails accurate
            return ember.log(ember.abs(_log_odds_against(p))) - ember.log1p(
                -2.0 * ember.minimum(p, 1.0 - p)
            )

        def series(d):
            d2 = d * d
            return _LOG_2 + (4.0 / 3.0 + 104.0 / 45.0 * d2) * d2

        return self._closed_or_series(closed, series)

    @property
    def mean(self) -> Tensor:
        def closed(p):
            return p / (2.0 * p - 1.0) + 1.0 / _log_odds_against(p)

        def series(d):
            return 0.5 + (1.0 / 3.0 + 16.0 / 45.0 * d * d) * d

        return self._closed_or_series(closed, series)

    @property
    def stddev(self) -> Tensor:
        return self.variance.sqrt()

    @property
    def variance(self) -> Tensor:
        def closed(p):
            return p * (p - 1.0) / (1.0 - 2.0 * p) ** 2 + 1.0 / _log_odds_against(p) ** 2

        def series(d):
            d2 = d * d
            return 1.0 / 12.0 - (1.0 / 15.0 - 128.0 / 945.0 * d2) * d2

        return self._closed_or_series(closed, series)

    @lazy_property
    def probs(self) -> Tensor:
        # (the logits are _BinaryOdds'; the probability is kept off 0 and 1, the normalizer's poles)
        return clamp_probs(logits_to_probs(self.logits, is_binary=True))

    @property
    def param_shape(self) -> ember.Size:
        return self._param.size()

    def sample(self, sample_shape=()):
        u = ember.rand(self._extended_shape(sample_shape), dtype=self.probs.dtype)
        with ember.no_grad():
            return self.icdf(u)

    def rsample(self, sample_shape: _size = ()) -> Tensor:
        # inversion of the cdf is differentiable in the parameter
        return self.icdf(ember.rand(self._extended_shape(sample_shape), dtype=self.probs.dtype))

    def log_prob(self, value):
        # x log p + (1 - x) log(1 - p) = x logit - log(1 + e^logit)
        logits, value = _logits_with(self, value)
        return value * logits - _log1p_exp(logits) + self._cont_bern_log_norm()

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        p = self._cut_probs()
        # F(x) = (p^x (1 - p)^(1 - x) + p - 1) / (2p - 1), the identity near p = 1/2
        closed = (p**value * (1.0 - p) ** (1.0 - value) + p - 1.0) / (2.0 * p - 1.0)
        inside = ember.where(self._outside_unstable_region(), closed, value)
        return ember.where(value <= 0.0, 0.0, ember.where(value >= 1.0, 1.0, inside))

    def icdf(self, value):
        p = self._cut_probs()
        # solve F(x) = u for x
        closed = (ember.log1p(-p + value * (2.0 * p - 1.0)) - ember.log1p(-p)) / (
            ember.log(p) - ember.log1p(-p)
        )
        return ember.where(self._outside_unstable_region(), closed, value)

    def entropy(self):
        # -E[log density] = -log C - E[x] (log p - log(1 - p)) - log(1 - p)
        log_q, log_p = ember.log1p(-self.probs), ember.log(self.probs)
        return self.mean * (log_q - log_p) - self._cont_bern_log_norm() - log_q

    @property
    def _natural_params(self) -> tuple[Tensor]:
        return (self.logits,)

    def _log_normalizer(self, x):
        """computes the log normalizing constant as a function of the natural parameter"""
        # A(eta) = log((e^eta - 1) / eta); torch's unstable band for eta is lims - 1/2
        low, high = self._lims[0] - 0.5, self._lims[1] - 0.5
        stable = (x <= low) | (x > high)
        eta = ember.where(stable, x, low)
        closed = ember.log(ember.abs(ember.special.expm1(eta))) - ember.log(ember.abs(eta))
        series = 0.5 * x + x**2 / 24.0 - x**4 / 2880.0
        return ember.where(stable, closed, series)

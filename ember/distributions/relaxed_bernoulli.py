"""Relaxed Bernoulli distribution (torch.distributions.RelaxedBernoulli)."""

from __future__ import annotations

import ember
from ember._core.tensor import Tensor
from ember.distributions import constraints
from ember.distributions.distribution import Distribution
from ember.distributions.transformed_distribution import TransformedDistribution
from ember.distributions.transforms import SigmoidTransform
from ember.distributions.utils import (
    _BinaryOdds,
    _logits_with,
    _probs_xor_logits,
    broadcast_all,
    clamp_probs,
)
from ember.types import Number, _Number, _size

__all__ = ["LogitRelaxedBernoulli", "RelaxedBernoulli"]


class LogitRelaxedBernoulli(_BinaryOdds, Distribution):
    """Creates a LogitRelaxedBernoulli distribution parameterized by ``probs`` or ``logits`` (but
    not both), which is the logit of a RelaxedBernoulli distribution."""

    arg_constraints = constraints._binary_odds_args()
    support = constraints.real

    def __init__(
        self,
        temperature: Tensor,
        probs: Tensor | Number | None = None,
        logits: Tensor | Number | None = None,
        validate_args: bool | None = None,
    ) -> None:
        self.temperature = temperature
        given_probs = _probs_xor_logits(probs, logits)
        given = probs if given_probs else logits
        (param,) = broadcast_all(given)
        setattr(self, "probs" if given_probs else "logits", param)
        self._param = param
        shape = () if isinstance(given, _Number) else param.size()
        super().__init__(shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._expand_params(
            LogitRelaxedBernoulli,
            batch_shape,
            _instance,
            ("probs", "logits"),
            temperature=self.temperature,
        )
        new._param = new.__dict__["probs" if "probs" in self.__dict__ else "logits"]
        return new

    def _new(self, *args, **kwargs):
        return self._param.new(*args, **kwargs)

    @property
    def param_shape(self) -> ember.Size:
        return self._param.size()

    def rsample(self, sample_shape: _size = ()) -> Tensor:
        # the binary Concrete: (logit(U) + logit(p)) / temperature, U uniform; both clamped
        # inside (0, 1) so that the logits stay finite
        shape = self._extended_shape(sample_shape)
        p = clamp_probs(self.probs.expand(shape))
        u = clamp_probs(ember.rand(shape, dtype=p.dtype))
        return (_logit(u) + _logit(p)) / self.temperature

    def log_prob(self, value):
        # log t + s - 2 log(1 + e^s), s = logit - t x: the logistic density of t x - logit
        logits, value = _logits_with(self, value)
        s = logits - value * self.temperature
        return self.temperature.log() + s - 2 * s.exp().log1p()


def _logit(p):
    return p.log() - (-p).log1p()


class RelaxedBernoulli(TransformedDistribution):
    """Creates a RelaxedBernoulli distribution, parametrized by ``temperature``, and either
    ``probs`` or ``logits`` (but not both). This is a relaxed version of the ``Bernoulli``
    distribution, so the values are in (0, 1), and has reparametrizable samples."""

    arg_constraints = constraints._binary_odds_args()
    support = constraints.unit_interval
    has_rsample = True
    base_dist: LogitRelaxedBernoulli

    def __init__(
        self,
        temperature: Tensor,
        probs: Tensor | Number | None = None,
        logits: Tensor | Number | None = None,
        validate_args: bool | None = None,
    ) -> None:
        # the sigmoid of a LogitRelaxedBernoulli
        logit_dist = LogitRelaxedBernoulli(temperature, probs, logits)
        super().__init__(logit_dist, SigmoidTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_family(RelaxedBernoulli, batch_shape, _instance)

    @property
    def temperature(self) -> Tensor:
        return self.base_dist.temperature

    @property
    def logits(self) -> Tensor:
        return self.base_dist.logits

    @property
    def probs(self) -> Tensor:
        return self.base_dist.probs

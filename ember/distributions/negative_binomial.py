"""Negative binomial distribution (torch.distributions.NegativeBinomial)."""

from __future__ import annotations

import ember
import ember.nn.functional as F
from ember._core.tensor import Tensor
from ember.distributions import constraints
from ember.distributions.distribution import Distribution
from ember.distributions.gamma import Gamma
from ember.distributions.utils import _BinaryOdds, _probs_xor_logits, broadcast_all, lazy_property

__all__ = ["NegativeBinomial"]


class NegativeBinomial(_BinaryOdds, Distribution):
    """Negative binomial distribution: the number of successes of Bernoulli(``probs``) trials
    before ``total_count`` failures."""

    arg_constraints = {
        "total_count": constraints.greater_than_eq(0),
        "probs": constraints.half_open_interval(0.0, 1.0),
        "logits": constraints.real,
    }
    support = constraints.nonnegative_integer

    def __init__(
        self,
        total_count: Tensor | float,
        probs: Tensor | None = None,
        logits: Tensor | None = None,
        validate_args: bool | None = None,
    ) -> None:
        name = "probs" if _probs_xor_logits(probs, logits) else "logits"
        count, param = broadcast_all(total_count, probs if name == "probs" else logits)
        setattr(self, name, param)
        self.total_count = count.type_as(param)
        self._param = param
        super().__init__(param.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._expand_params(
            NegativeBinomial, batch_shape, _instance, ("total_count", "probs", "logits")
        )
        new._param = new.__dict__["probs" if "probs" in self.__dict__ else "logits"]
        return new

    def _new(self, *args, **kwargs):
        return self._param.new(*args, **kwargs)

    # with odds r = p / (1 - p) = e^logit: mean n r, variance n r / (1 - p)
    @property
    def mean(self) -> Tensor:
        return self.total_count * self.logits.exp()

    @property
    def mode(self) -> Tensor:
        return ((self.total_count - 1) * self.logits.exp()).floor().clamp(min=0.0)

    @property
    def variance(self) -> Tensor:
        return self.mean / ember.sigmoid(-self.logits)

    @property
    def param_shape(self) -> ember.Size:
        return self._param.size()

    @lazy_property
    def _gamma(self) -> Gamma:
        # the Gamma-Poisson mixture: K ~ Poisson(G), G ~ Gamma(n, rate = e^-logit); not
        # validated, since a total_count of 0 is allowed here
        return Gamma(concentration=self.total_count, rate=(-self.logits).exp(), validate_args=False)

    def sample(self, sample_shape=()):
        with ember.no_grad():
            return ember.poisson(self._gamma.sample(sample_shape=sample_shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        n = self.total_count
        # log C(n + k - 1, k) + n log(1 - p) + k log p; the coefficient is 1 when n = k = 0
        log_choose = (n + value).lgamma() - (value + 1.0).lgamma() - n.lgamma()
        log_choose = log_choose.masked_fill(n + value == 0.0, 0.0)
        return n * F.logsigmoid(-self.logits) + value * F.logsigmoid(self.logits) + log_choose

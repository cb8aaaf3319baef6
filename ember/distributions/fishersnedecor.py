"""Fisher-Snedecor distribution (torch.distributions.FisherSnedecor)."""

from __future__ import annotations

from math import nan

import ember
from ember._core.tensor import Tensor
from ember.distributions import constraints
from ember.distributions.distribution import Distribution
from ember.distributions.gamma import Gamma
from ember.distributions.utils import _store_broadcast
from ember.types import _size

__all__ = ["FisherSnedecor"]


class FisherSnedecor(Distribution):
    """Creates a Fisher-Snedecor distribution parameterized by ``df1`` and ``df2``."""

    arg_constraints = {"df1": constraints.positive, "df2": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(
        self,
        df1: Tensor | float,
        df2: Tensor | float,
        validate_args: bool | None = None,
    ) -> None:
        shape = _store_broadcast(self, df1=df1, df2=df2)
        # F = (X1 / d1) / (X2 / d2) with Xi ~ chi2(di), i.e. the ratio of Gamma(di / 2, di) draws
        self._gamma1 = Gamma(self.df1 * 0.5, self.df1)
        self._gamma2 = Gamma(self.df2 * 0.5, self.df2)
        super().__init__(shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(
            FisherSnedecor,
            batch_shape,
            _instance,
            ("df1", "df2"),
            _gamma1=self._gamma1.expand(batch_shape),
            _gamma2=self._gamma2.expand(batch_shape),
        )

    @staticmethod
    def _nan_unless(ok, t):
        return ember.where(ok, t, nan)

    @property
    def mean(self) -> Tensor:
        d2 = self.df2
        return self._nan_unless(d2 > 2, d2 / (d2 - 2))

    @property
    def mode(self) -> Tensor:
        d1, d2 = self.df1, self.df2
        return self._nan_unless(d1 > 2, (d1 - 2) / d1 * d2 / (d2 + 2))

    @property
    def variance(self) -> Tensor:
        d1, d2 = self.df1, self.df2
        value = 2 * d2**2 * (d1 + d2 - 2) / (d1 * (d2 - 2) ** 2 * (d2 - 4))
        return self._nan_unless(d2 > 4, value)

    def rsample(self, sample_shape: _size = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        tiny = ember.finfo(self.df1.dtype).tiny
        top = self._gamma1.rsample(sample_shape).reshape(shape)
        bottom = self._gamma2.rsample(sample_shape).reshape(shape).clamp(min=tiny)
        return (top / bottom).clamp(min=tiny)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        # log B(a, b)^-1 + a log(d1 / d2) + (a - 1) log x - (a + b) log(1 + d1 x / d2),
        # with a = d1 / 2, b = d2 / 2
        a, b = self.df1 * 0.5, self.df2 * 0.5
        ratio = self.df1 / self.df2
        log_inv_beta = (a + b).lgamma() - a.lgamma() - b.lgamma()
        return (
            log_inv_beta
            + a * ratio.log()
            + (a - 1) * value.log()
            - (a + b) * ember.log1p(ratio * value)
        )

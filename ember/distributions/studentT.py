"""Student's t-distribution (torch.distributions.StudentT)."""

from __future__ import annotations

import math
from math import inf, nan

import ember
from ember._core.tensor import Tensor
from ember.distributions import constraints
from ember.distributions.chi2 import Chi2
from ember.distributions.distribution import Distribution
from ember.distributions.utils import _standard_normal, _store_broadcast
from ember.types import _size

__all__ = ["StudentT"]


class StudentT(Distribution):
    """Creates a Student's t-distribution parameterized by degree of freedom ``df``, mean ``loc``
    and scale ``scale``."""

    arg_constraints = {
        "df": constraints.positive,
        "loc": constraints.real,
        "scale": constraints.positive,
    }
    support = constraints.real
    has_rsample = True

    @property
    def mean(self) -> Tensor:
        return ember.where(self.df > 1, self.loc, nan)  # undefined for df <= 1

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        # scale^2 df / (df - 2) for df > 2, infinite for 1 < df <= 2, undefined below
        df = self.df
        finite = df > 2
        safe = ember.where(finite, df, 3.0)
        value = ember.where(finite, self.scale**2 * safe / (safe - 2), inf)
        return ember.where(df > 1, value, nan)

    def __init__(
        self,
        df: Tensor | float,
        loc: Tensor | float = 0.0,
        scale: Tensor | float = 1.0,
        validate_args: bool | None = None,
    ) -> None:
        shape = _store_broadcast(self, df=df, loc=loc, scale=scale)
        self._chi2 = Chi2(self.df)
        super().__init__(shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(
            StudentT,
            batch_shape,
            _instance,
            ("df", "loc", "scale"),
            _chi2=self._chi2.expand(batch_shape),
        )

    def rsample(self, sample_shape: _size = ()) -> Tensor:
        # T = N / sqrt(V / df) with N standard normal, V ~ chi2(df): the normal draw first
        shape = self._extended_shape(sample_shape)
        normal = _standard_normal(shape, dtype=self.df.dtype)
        chi2 = self._chi2.rsample(sample_shape)
        return self.loc + self.scale * (normal * ember.rsqrt(chi2 / self.df))

    def _log_norm(self):
        """log(scale sqrt(df pi) Gamma(df / 2) / Gamma((df + 1) / 2))."""
        half = 0.5 * self.df
        return (
            self.scale.log()
            + 0.5 * (self.df.log() + _LOG_PI)
            + half.lgamma()
            - (half + 0.5).lgamma()
        )

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        z = (value - self.loc) / self.scale
        return -0.5 * (self.df + 1.0) * (z**2.0 / self.df).log1p() - self._log_norm()

    def entropy(self):
        # log scale + (df + 1)/2 (psi((df + 1)/2) - psi(df/2)) + log(sqrt(df) B(df/2, 1/2))
        half = 0.5 * self.df
        log_beta = half.lgamma() + math.lgamma(0.5) - (half + 0.5).lgamma()
        gap = (half + 0.5).digamma() - half.digamma()
        return self.scale.log() + (half + 0.5) * gap + 0.5 * self.df.log() + log_beta


_LOG_PI = math.log(math.pi)

"""Student's t-distribution (torch.distributions.StudentT)."""

from __future__ import annotations

import math
from math import inf, nan

import ember
from ember._core.tensor import Tensor
from ember.distributions import constraints
from ember.distributions.chi2 import Chi2
from ember.distributions.distribution import Distribution
from ember.distributions.utils import _standard_normal, broadcast_all
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
        m = self.loc.clone(memory_format=ember.contiguous_format)
        m[self.df <= 1] = nan
        return m

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        m = self.df.clone(memory_format=ember.contiguous_format)
        m[self.df > 2] = (
            self.scale[self.df > 2].pow(2) * self.df[self.df > 2] / (self.df[self.df > 2] - 2)
        )
        m[(self.df <= 2) & (self.df > 1)] = inf
        m[self.df <= 1] = nan
        return m

    def __init__(
        self,
        df: Tensor | float,
        loc: Tensor | float = 0.0,
        scale: Tensor | float = 1.0,
        validate_args: bool | None = None,
    ) -> None:
        self.df, self.loc, self.scale = broadcast_all(df, loc, scale)
        self._chi2 = Chi2(self.df)
        batch_shape = self.df.size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(
            StudentT,
            batch_shape,
            _instance,
            ("df", "loc", "scale"),
            _chi2=self._chi2.expand(batch_shape),
        )

    def rsample(self, sample_shape: _size = ()) -> Tensor:

        #   X ~ Normal(0, 1)
        #   Z ~ Chi2(df)
        #   Y = X / sqrt(Z / df) ~ StudentT(df)
        shape = self._extended_shape(sample_shape)
        X = _standard_normal(shape, dtype=self.df.dtype)
        Z = self._chi2.rsample(sample_shape)
        Y = X * ember.rsqrt(Z / self.df)
        return self.loc + self.scale * Y

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        y = (value - self.loc) / self.scale
        Z = (
            self.scale.log()
            + 0.5 * self.df.log()
            + 0.5 * math.log(math.pi)
            + ember.lgamma(0.5 * self.df)
            - ember.lgamma(0.5 * (self.df + 1.0))
        )
        return -0.5 * (self.df + 1.0) * ember.log1p(y**2.0 / self.df) - Z

    def entropy(self):
        lbeta = ember.lgamma(0.5 * self.df) + math.lgamma(0.5) - ember.lgamma(0.5 * (self.df + 1))
        return (
            self.scale.log()
            + 0.5
            * (self.df + 1)
            * (ember.digamma(0.5 * (self.df + 1)) - ember.digamma(0.5 * self.df))
            + 0.5 * self.df.log()
            + lbeta
        )

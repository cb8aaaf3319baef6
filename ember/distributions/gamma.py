"""Gamma distribution (torch.distributions.Gamma)."""

from __future__ import annotations

import numpy as np

import ember
from ember import _torch_rng
from ember._core.tensor import _wrap
from ember._ops.registry import dispatch, op
from ember._ops.special_math import digamma
from ember.distributions import constraints
from ember.distributions.dirichlet import _sample_gamma
from ember.distributions.exp_family import ExponentialFamily
from ember.distributions.utils import _shape_of_params, broadcast_all

__all__ = ["Gamma"]


# --------------------------------------------------------------------------- reparameterized draws

_RATIONAL = np.array(
    [
        [0.16009398, -0.094634809, 0.025146376, -0.0030648343,
         1, 0.32668115, 0.10406089, 0.0014179084],
        [0.53487893, 0.1298071, 0.065735949, -0.0015649758,
         0.16639465, 0.020070113, -0.0035938915, -0.00058392623],
        [0.040121004, -0.0065914022, -0.0026286047, -0.0013441777,
         0.017050642, -0.0021309326, 0.00085092367, -1.5247877e-07],
    ]
)  # fmt: skip


def standard_gamma_grad(alpha: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Return ``dx/dalpha`` for ``x ~ Gamma(alpha, 1)`` (implicit reparameterization), as
    torch's ``_standard_gamma_grad``: a Taylor series for small ``x``, Rice's saddle point
    expansion for large ``alpha``, a bivariate rational approximation otherwise."""
    alpha, x = np.broadcast_arrays(np.asarray(alpha, np.float64), np.asarray(x, np.float64))
    out = np.empty(alpha.shape)
    small = x < 0.8
    a, xs = alpha[small], x[small]
    numer, denom = np.ones_like(xs), a.copy()
    series1, series2 = numer / denom, numer / (denom * denom)
    for i in range(1, 6):
        numer = numer * (-xs / i)
        denom = denom + 1
        series1 = series1 + numer / denom
        series2 = series2 + numer / (denom * denom)
    pow_x_alpha = xs**a
    pdf = xs ** (a - 1) * np.exp(-xs)
    cdf_alpha = (np.log(xs) - digamma(a)) * pow_x_alpha * series1 - pow_x_alpha * series2
    r = -cdf_alpha / pdf
    out[small] = np.where(np.isnan(r), 0.0, r)
    big = ~small & (alpha > 8.0)
    a, xb = alpha[big], x[big]
    near = (0.9 * a <= xb) & (xb <= 1.1 * a)
    numer_1 = 1 + 24 * a * (1 + 12 * a)
    numer_2 = 1440 * (a * a) + 6 * xb * (53 - 120 * xb) - 65 * xb * xb / a + a * (107 + 3600 * xb)
    r_near = numer_1 * numer_2 / (1244160 * (a * a) * (a * a))
    denom = np.sqrt(8 * a)
    term2 = denom / (a - xb)
    term3 = (xb - a - a * np.log(xb / a)) ** -1.5
    term23 = np.where(xb < a, term2 - term3, term2 + term3)
    term1 = np.log(xb / a) * term23 - np.sqrt(2 / a) * (a + xb) / ((a - xb) * (a - xb))
    stirling = 1 + 1 / (12 * a) * (1 + 1 / (24 * a))
    out[big] = np.where(near, r_near, -stirling * (xb * term1) / denom)
    mid = ~small & ~(alpha > 8.0)
    a, xm = alpha[mid], x[mid]
    u, v = np.log(xm / a), np.log(a)
    c = _RATIONAL[0][:, None] + u * (_RATIONAL[1][:, None] + u * _RATIONAL[2][:, None])
    p = c[0] + v * (c[1] + v * (c[2] + v * c[3]))
    q = c[4] + v * (c[5] + v * (c[6] + v * c[7]))
    out[mid] = np.exp(p / q)
    return out


@op("_standard_gamma", grad_fn="StandardGammaBackward0", save=("self", "result"))
def _standard_gamma(alpha):
    draws = _torch_rng.standard_gamma(ember.default_generator, alpha.astype(np.float64))
    out = draws.astype(alpha.dtype)
    return np.maximum(out, np.finfo(out.dtype).tiny)


@_standard_gamma.backward
def _(ctx, g):
    # like torch's, this gradient is not itself differentiable
    alpha, x = ctx.saved_tensors
    grad = standard_gamma_grad(alpha._data, x._data).astype(alpha._data.dtype)
    return (g * _wrap(grad),)


def rsample_gamma(concentration):
    """Return Gamma(concentration, 1) draws, differentiable with respect to ``concentration``
    (torch's ``_standard_gamma``: the same numbers as ``sample`` for the same seed)."""
    return dispatch(_standard_gamma, (concentration,))


class Gamma(ExponentialFamily):
    """Gamma distribution parameterized by shape ``concentration`` and ``rate``.

    ``sample`` and ``rsample`` draw torch's numbers from ember's generator; ``rsample``'s
    gradient is torch's implicit reparameterization (``standard_gamma_grad``).
    """

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _mean_carrier_measure = 0

    def __init__(self, concentration, rate, validate_args: bool | None = None) -> None:
        params = broadcast_all(concentration, rate)
        self.concentration, self.rate = params
        shape = _shape_of_params((concentration, rate), params)
        super().__init__(shape, validate_args=validate_args)

    @property
    def mean(self):
        return self.concentration / self.rate

    @property
    def mode(self):
        return ((self.concentration - 1) / self.rate).clamp(min=0)  # 0 for shapes below 1

    @property
    def variance(self):
        return self.concentration / self.rate.pow(2)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(Gamma, batch_shape, _instance, ("concentration", "rate"))

    def sample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        with ember.no_grad():
            value = _sample_gamma(self.concentration.expand(shape)) / self.rate.expand(shape)
            return value.clamp(min=ember.finfo(value.dtype).tiny)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        value = rsample_gamma(self.concentration.expand(shape)) / self.rate.expand(shape)
        value.detach().clamp_(min=ember.finfo(value.dtype).tiny)
        return value

    def log_prob(self, value):
        value = ember.as_tensor(value, dtype=self.rate.dtype)
        if self._validate_args:
            self._validate_sample(value)
        return (
            ember.xlogy(self.concentration, self.rate)
            + ember.xlogy(self.concentration - 1, value)
            - self.rate * value
            - ember.lgamma(self.concentration)
        )

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        # the regularized lower incomplete gamma function P(k, rate x)
        k = self.concentration
        return ember.special.gammainc(k, self.rate * value)

    def entropy(self):
        # k - log rate + log Gamma(k) + (1 - k) psi(k)
        k = self.concentration
        return k - self.rate.log() + k.lgamma() + (1.0 - k) * k.digamma()

    @property
    def _natural_params(self):
        return (self.concentration - 1, -self.rate)

    def _log_normalizer(self, x, y):
        # A = log Gamma(k) - k log(rate) with k = x + 1, rate = -y
        k = x + 1
        return k.lgamma() + k * (-y).reciprocal().log()

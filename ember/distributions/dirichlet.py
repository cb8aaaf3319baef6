"""Dirichlet distribution (torch.distributions.Dirichlet)."""

from __future__ import annotations

import numpy as np

import ember
import ember.nn.functional as F
from ember import _torch_rng
from ember.distributions import constraints
from ember.distributions.exp_family import ExponentialFamily

__all__ = ["Dirichlet"]


def _sample_gamma(concentration):
    """Return Gamma(concentration, 1) draws from ember's default generator (no gradient): torch's
    ``_standard_gamma``, the same numbers for the same seed."""
    alpha = concentration.detach().to(ember.float64).numpy()
    draws = _torch_rng.standard_gamma(ember.default_generator, alpha)
    out = draws.astype(concentration.detach().numpy().dtype)
    return ember.from_numpy(np.maximum(out, np.finfo(out.dtype).tiny))


def _sample_dirichlet(concentration):
    """torch's ``_sample_dirichlet``: float64 gamma draws normalised in float64, then cast and
    kept inside (0, 1)."""
    alpha = concentration.detach().to(ember.float64).numpy()
    gammas = _torch_rng.standard_gamma(ember.default_generator, alpha)
    dt = concentration.detach().numpy().dtype
    out = (gammas / gammas.sum(-1, keepdims=True)).astype(dt)
    top = np.nextafter(np.ones((), dt), np.zeros((), dt))
    return ember.from_numpy(np.clip(out, np.finfo(dt).tiny, top))


def _log_multi_beta(a):
    """log B(a) = sum log Gamma(a_i) - log Gamma(sum a_i) over the last dim."""
    return a.lgamma().sum(-1) - a.sum(-1).lgamma()


class Dirichlet(ExponentialFamily):
    """Dirichlet distribution parameterized by ``concentration`` (last dim = categories).

    ``sample`` draws torch's numbers from ember's generator; ``rsample`` normalises
    reparameterized gamma draws (see ``rsample``).
    """

    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, concentration, validate_args: bool | None = None) -> None:
        if concentration.dim() < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        *batch, k = concentration.shape
        super().__init__(ember.Size(batch), ember.Size((k,)), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(Dirichlet, batch_shape, _instance, ("concentration",))

    def sample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        with ember.no_grad():
            return _sample_dirichlet(self.concentration.expand(shape))

    def rsample(self, sample_shape=()):
        # normalised reparameterized gamma draws (the same numbers as ``sample``); the gradient
        # flows through the gammas' implicit gradients, an unbiased pathwise estimator like
        # torch's, though torch differentiates the Dirichlet draw directly (``_dirichlet_grad``)
        from ember.distributions.gamma import rsample_gamma

        shape = self._extended_shape(sample_shape)
        gammas = rsample_gamma(self.concentration.expand(shape))
        value = gammas / gammas.sum(-1, keepdim=True)
        dt = value.dtype
        top = float(np.nextafter(np.ones((), dt.np), np.zeros((), dt.np)))
        value.detach().clamp_(min=ember.finfo(dt).tiny, max=top)
        return value

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        # sum (a_i - 1) log x_i - log B(a); xlogy keeps x_i = 0 finite when a_i = 1
        a = self.concentration
        return ember.xlogy(a - 1.0, value).sum(-1) - _log_multi_beta(a)

    @property
    def mean(self):
        a = self.concentration
        return a / a.sum(-1, True)

    @property
    def mode(self):
        # (a_i - 1) / (sum a - K) for a_i > 1; all a_i < 1 puts the mode at a vertex (the
        # largest weight's), mixed cases keep the clamped formula (torch's choice)
        excess = (self.concentration - 1).clamp(min=0.0)
        mode = excess / excess.sum(-1, True)
        vertex = (self.concentration < 1).all(dim=-1)
        mode[vertex] = F.one_hot(mode[vertex].argmax(dim=-1), excess.shape[-1]).to(mode)
        return mode

    @property
    def variance(self):
        a = self.concentration
        total = a.sum(-1, True)
        return a * (total - a) / (total**2 * (total + 1))

    def entropy(self):
        # log B(a) + (a0 - K) psi(a0) - sum (a_i - 1) psi(a_i)
        a = self.concentration
        total, k = a.sum(-1), a.size(-1)
        return (
            _log_multi_beta(a) + (total - k) * total.digamma() - ((a - 1.0) * a.digamma()).sum(-1)
        )

    @property
    def _natural_params(self):
        return (self.concentration,)

    def _log_normalizer(self, x):
        return _log_multi_beta(x)

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
        batch_shape, event_shape = concentration.shape[:-1], concentration.shape[-1:]
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Dirichlet, _instance)
        batch_shape = ember.Size(batch_shape)
        new.concentration = self.concentration.expand(batch_shape + self.event_shape)
        super(Dirichlet, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

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
        return (
            ember.xlogy(self.concentration - 1.0, value).sum(-1)
            + ember.lgamma(self.concentration.sum(-1))
            - ember.lgamma(self.concentration).sum(-1)
        )

    @property
    def mean(self):
        return self.concentration / self.concentration.sum(-1, True)

    @property
    def mode(self):
        concentrationm1 = (self.concentration - 1).clamp(min=0.0)
        mode = concentrationm1 / concentrationm1.sum(-1, True)
        mask = (self.concentration < 1).all(dim=-1)
        mode[mask] = F.one_hot(mode[mask].argmax(dim=-1), concentrationm1.shape[-1]).to(mode)
        return mode

    @property
    def variance(self):
        con0 = self.concentration.sum(-1, True)
        return self.concentration * (con0 - self.concentration) / (con0.pow(2) * (con0 + 1))

    def entropy(self):
        k = self.concentration.size(-1)
        a0 = self.concentration.sum(-1)
        return (
            ember.lgamma(self.concentration).sum(-1)
            - ember.lgamma(a0)
            - (k - a0) * ember.digamma(a0)
            - ((self.concentration - 1.0) * ember.digamma(self.concentration)).sum(-1)
        )

    @property
    def _natural_params(self):
        return (self.concentration,)

    def _log_normalizer(self, x):
        return x.lgamma().sum(-1) - ember.lgamma(x.sum(-1))

"""ExponentialFamily base class (torch.distributions.ExponentialFamily)."""

from __future__ import annotations

import ember
from ember.distributions.distribution import Distribution

__all__ = ["ExponentialFamily"]


class ExponentialFamily(Distribution):
    """Base class for exponential-family distributions ``p(x) = h(x) exp(<t(x), θ> - F(θ))``.

    Subclasses give ``_natural_params`` (θ), ``_log_normalizer`` (F) and
    ``_mean_carrier_measure`` (E[log h(x)]); this class derives ``entropy`` from them and
    ``kl_divergence`` between two members of the same family (Bregman divergence).
    """

    @property
    def _natural_params(self):
        raise NotImplementedError

    def _log_normalizer(self, *natural_params):
        raise NotImplementedError

    @property
    def _mean_carrier_measure(self):
        raise NotImplementedError

    def entropy(self):
        result = -self._mean_carrier_measure
        nparams = [p.detach().requires_grad_() for p in self._natural_params]
        lg_normal = self._log_normalizer(*nparams)
        gradients = ember.autograd.grad(lg_normal.sum(), nparams, create_graph=True)
        result += lg_normal
        for np_, g in zip(nparams, gradients):
            result -= (np_ * g).reshape(self._batch_shape + (-1,)).sum(-1)
        return result

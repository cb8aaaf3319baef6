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

    def _normalizer_at_params(self):
        """(eta, F(eta), grad F(eta)) at this member's natural parameters; the gradient (the
        mean of the sufficient statistic) stays differentiable for higher derivatives."""
        eta = [t.detach().requires_grad_() for t in self._natural_params]
        value = self._log_normalizer(*eta)
        return eta, value, ember.autograd.grad(value.sum(), eta, create_graph=True)

    def entropy(self):
        # H = F(eta) - <eta, grad F(eta)> - E[log h(x)]
        eta, value, grads = self._normalizer_at_params()
        out = value - self._mean_carrier_measure
        for t, g in zip(eta, grads):
            out = out - (t * g).reshape(self._batch_shape + (-1,)).sum(-1)
        return out

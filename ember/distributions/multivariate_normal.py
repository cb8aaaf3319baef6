"""Multivariate normal distribution (torch.distributions.MultivariateNormal)."""

from __future__ import annotations

import math

import ember
from ember.distributions import constraints
from ember.distributions._gaussian import (
    _expand_given_matrices,
    _mat_vec,
    _pick_matrix,
    _tril_half_logdet,
    _tril_inv_quad,
    _tril_of,
    _TrilMatrices,
)
from ember.distributions.distribution import Distribution

__all__ = ["MultivariateNormal"]

_LOG_2PI = math.log(2 * math.pi)


class MultivariateNormal(_TrilMatrices, Distribution):
    """Multivariate normal parameterized by ``loc`` and one of ``covariance_matrix``,
    ``precision_matrix`` or ``scale_tril`` (lower-triangular, positive diagonal)."""

    arg_constraints = {
        "loc": constraints.real_vector,
        "covariance_matrix": constraints.positive_definite,
        "precision_matrix": constraints.positive_definite,
        "scale_tril": constraints.lower_cholesky,
    }
    support = constraints.real_vector
    has_rsample = True

    def __init__(
        self,
        loc,
        covariance_matrix=None,
        precision_matrix=None,
        scale_tril=None,
        validate_args: bool | None = None,
    ) -> None:
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        name, matrix = _pick_matrix(ValueError, covariance_matrix, precision_matrix, scale_tril)
        if matrix.dim() < 2:
            label = "scale_tril matrix" if name == "scale_tril" else name
            raise ValueError(
                f"{label} must be at least two-dimensional, with optional leading batch dimensions"
            )
        batch_shape = ember.broadcast_shapes(matrix.shape[:-2], loc.shape[:-1])
        setattr(self, name, matrix.expand(batch_shape + matrix.shape[-2:]))
        self.loc = loc.expand(batch_shape + loc.shape[-1:])
        super().__init__(batch_shape, self.loc.shape[-1:], validate_args=validate_args)
        # the factor keeps the matrix's own batch shape: solves broadcast against it
        self._unbroadcasted_scale_tril = _tril_of(name, matrix)

    def expand(self, batch_shape, _instance=None):
        batch_shape = ember.Size(batch_shape)
        new = self._expand_params(
            MultivariateNormal,
            batch_shape,
            _instance,
            ("loc",),
            _unbroadcasted_scale_tril=self._unbroadcasted_scale_tril,
        )
        _expand_given_matrices(self, new, batch_shape + self._event_shape * 2)
        return new

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        # diag(L L') is the squared norm of each row of L
        rows = (self._unbroadcasted_scale_tril**2).sum(-1)
        return rows.expand(self._batch_shape + self._event_shape)

    def rsample(self, sample_shape=()):
        # loc + L eps with eps standard normal
        eps = ember.randn(self._extended_shape(sample_shape), dtype=self.loc.dtype)
        return self.loc + _mat_vec(self._unbroadcasted_scale_tril, eps)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        tril = self._unbroadcasted_scale_tril
        quad = _tril_inv_quad(tril, value - self.loc)
        return -0.5 * (self._event_shape[0] * _LOG_2PI + quad) - _tril_half_logdet(tril)

    def entropy(self):
        # (n / 2) (1 + log 2 pi) + (1 / 2) log det S
        n = self._event_shape[0]
        out = 0.5 * n * (1.0 + _LOG_2PI) + _tril_half_logdet(self._unbroadcasted_scale_tril)
        return out.expand(self._batch_shape) if self._batch_shape else out

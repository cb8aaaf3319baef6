"""Low-rank multivariate normal (torch.distributions.LowRankMultivariateNormal).

The covariance is ``S = W W' + D`` (W: n x m ``cov_factor``, D: diagonal ``cov_diag``). Every
quantity goes through the m x m capacitance ``C = I + W' D^-1 W`` and its Cholesky factor:
det S = det C det D (matrix determinant lemma), S^-1 = D^-1 - D^-1 W C^-1 W' D^-1 (Woodbury).
"""

from __future__ import annotations

import math

import ember
from ember._core.tensor import Tensor
from ember.distributions import constraints
from ember.distributions._gaussian import _mat_vec, _tril_half_logdet, _tril_inv_quad
from ember.distributions.distribution import Distribution
from ember.distributions.utils import _standard_normal, lazy_property
from ember.types import _size

__all__ = ["LowRankMultivariateNormal"]

_LOG_2PI = math.log(2 * math.pi)


def _capacitance_tril(factor, diag):
    """Cholesky factor of ``I + W' D^-1 W``."""
    scaled = factor.mT / diag.unsqueeze(-2)  # W' D^-1
    eye = ember.eye(factor.shape[-1], dtype=factor.dtype)
    return ember.linalg.cholesky(scaled @ factor + eye)


def _lowrank_logdet(diag, cap_tril):
    return 2 * _tril_half_logdet(cap_tril) + diag.log().sum(-1)


def _lowrank_inv_quad(factor, diag, cap_tril, x):
    """``x' S^-1 x`` by Woodbury: x' D^-1 x - |L_C^-1 W' D^-1 x|^2."""
    projected = _mat_vec(factor.mT, x / diag)
    return (x * x / diag).sum(-1) - _tril_inv_quad(cap_tril, projected)


class LowRankMultivariateNormal(Distribution):
    """Multivariate normal distribution with a low-rank plus diagonal covariance
    ``cov_factor @ cov_factor.mT + diag(cov_diag)``."""

    arg_constraints = {
        "loc": constraints.real_vector,
        "cov_factor": constraints.independent(constraints.real, 2),
        "cov_diag": constraints.independent(constraints.positive, 1),
    }
    support = constraints.real_vector
    has_rsample = True

    def __init__(
        self,
        loc: Tensor,
        cov_factor: Tensor,
        cov_diag: Tensor,
        validate_args: bool | None = None,
    ) -> None:
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        event_shape = loc.shape[-1:]
        if cov_factor.dim() < 2:
            raise ValueError(
                "cov_factor must be at least two-dimensional, "
                "with optional leading batch dimensions"
            )
        if cov_factor.shape[-2:-1] != event_shape:
            raise ValueError(
                f"cov_factor must be a batch of matrices with shape {event_shape[0]} x m"
            )
        if cov_diag.shape[-1:] != event_shape:
            raise ValueError(f"cov_diag must be a batch of vectors with shape {event_shape}")

        loc_ = loc.unsqueeze(-1)
        cov_diag_ = cov_diag.unsqueeze(-1)
        try:
            loc_, self.cov_factor, cov_diag_ = ember.broadcast_tensors(loc_, cov_factor, cov_diag_)
        except RuntimeError as e:
            raise ValueError(
                f"Incompatible batch shapes: loc {loc.shape}, cov_factor {cov_factor.shape}, "
                f"cov_diag {cov_diag.shape}"
            ) from e
        self.loc = loc_[..., 0]
        self.cov_diag = cov_diag_[..., 0]
        batch_shape = self.loc.shape[:-1]

        self._unbroadcasted_cov_factor = cov_factor
        self._unbroadcasted_cov_diag = cov_diag
        self._capacitance_tril = _capacitance_tril(cov_factor, cov_diag)
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(
            LowRankMultivariateNormal,
            batch_shape,
            _instance,
            ("loc", "cov_diag", "cov_factor"),
            _unbroadcasted_cov_factor=self._unbroadcasted_cov_factor,
            _unbroadcasted_cov_diag=self._unbroadcasted_cov_diag,
            _capacitance_tril=self._capacitance_tril,
        )

    @property
    def mean(self) -> Tensor:
        return self.loc

    @property
    def mode(self) -> Tensor:
        return self.loc

    def _full(self, m):
        return m.expand(self._batch_shape + m.shape[-2:])

    @lazy_property
    def variance(self) -> Tensor:
        diag = (self._unbroadcasted_cov_factor**2).sum(-1) + self._unbroadcasted_cov_diag
        return diag.expand(self._batch_shape + self._event_shape)

    @lazy_property
    def scale_tril(self) -> Tensor:
        # S = D^1/2 (I + D^-1/2 W W' D^-1/2) D^1/2: the middle matrix has eigenvalues >= 1, a
        # safe Cholesky (Rasmussen & Williams, GPML 3.4.3), and D^1/2 keeps the factor lower
        root_d = self._unbroadcasted_cov_diag.sqrt().unsqueeze(-1)
        whitened = self._unbroadcasted_cov_factor / root_d
        eye = ember.eye(self._event_shape[0], dtype=whitened.dtype)
        return self._full(root_d * ember.linalg.cholesky(whitened @ whitened.mT + eye))

    @lazy_property
    def covariance_matrix(self) -> Tensor:
        w = self._unbroadcasted_cov_factor
        return self._full(w @ w.mT + ember.diag_embed(self._unbroadcasted_cov_diag))

    @lazy_property
    def precision_matrix(self) -> Tensor:
        # Woodbury, with A = L_C^-1 W' D^-1 so that D^-1 W C^-1 W' D^-1 = A' A
        diag = self._unbroadcasted_cov_diag
        a = ember.linalg.solve_triangular(
            self._capacitance_tril,
            self._unbroadcasted_cov_factor.mT / diag.unsqueeze(-2),
            upper=False,
        )
        return self._full(ember.diag_embed(diag.reciprocal()) - a.mT @ a)

    def rsample(self, sample_shape: _size = ()) -> Tensor:
        # loc + W e1 + D^1/2 e2: the m-dim draw first, then the n-dim one (torch's order)
        shape = self._extended_shape(sample_shape)
        e1 = _standard_normal(shape[:-1] + self.cov_factor.shape[-1:], dtype=self.loc.dtype)
        e2 = _standard_normal(shape, dtype=self.loc.dtype)
        low_rank = _mat_vec(self._unbroadcasted_cov_factor, e1)
        return self.loc + low_rank + self._unbroadcasted_cov_diag.sqrt() * e2

    def _logdet(self):
        return _lowrank_logdet(self._unbroadcasted_cov_diag, self._capacitance_tril)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        quad = _lowrank_inv_quad(
            self._unbroadcasted_cov_factor,
            self._unbroadcasted_cov_diag,
            self._capacitance_tril,
            value - self.loc,
        )
        return -0.5 * (self._event_shape[0] * _LOG_2PI + self._logdet() + quad)

    def entropy(self):
        out = 0.5 * (self._event_shape[0] * (1.0 + _LOG_2PI) + self._logdet())
        return out.expand(self._batch_shape) if self._batch_shape else out

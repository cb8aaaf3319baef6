"""Linear algebra shared by the families parameterized by a covariance: MultivariateNormal,
LowRankMultivariateNormal, Wishart (and their KL pairs).

Every covariance is held as its lower Cholesky factor ``L`` (``S = L L'``), unexpanded over the
batch; the public matrices are derived from it on first use (``_TrilMatrices``).
"""

from __future__ import annotations

import ember
from ember.distributions.utils import lazy_property

_MATRIX_NAMES = ("covariance_matrix", "precision_matrix", "scale_tril")


def _mat_vec(mat, vec):
    """``mat @ vec`` over the last dims, both batched and broadcast."""
    return (mat @ vec.unsqueeze(-1)).squeeze(-1)


def _tril_half_logdet(tril):
    """Half the log-determinant of ``L L'``: the sum of log diag(L)."""
    return tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)


def _tril_inv_quad(tril, x):
    """The Mahalanobis form ``x' (L L')^-1 x = |L^-1 x|^2`` for vectors ``x`` whose batch dims
    broadcast with ``L``'s."""
    batch = ember.broadcast_shapes(tril.shape[:-2], x.shape[:-1])
    n = x.shape[-1]
    solved = ember.linalg.solve_triangular(
        tril.expand(batch + (n, n)), x.expand(batch + (n,)).unsqueeze(-1), upper=False
    )
    return solved.squeeze(-1).pow(2).sum(-1)


def _precision_to_tril(precision):
    """The lower Cholesky factor ``L`` of ``P^-1`` without forming the inverse.

    P^-1 = L L' means P = U U' with U = L^-T upper triangular. Reversing rows and columns turns
    an upper factor into a lower one, so U is the reversed Cholesky factor of the reversed P,
    and L = (U')^-1 by one triangular solve.
    """
    both = (-2, -1)
    upper = ember.linalg.cholesky(precision.flip(both)).flip(both)
    eye = ember.eye(precision.shape[-1], dtype=precision.dtype)
    return ember.linalg.solve_triangular(upper.mT, eye, upper=False)


def _pick_matrix(error, covariance_matrix, precision_matrix, scale_tril):
    """The one given matrix parameter as ``(name, value)``; ``error`` if not exactly one."""
    given = [
        (name, m)
        for name, m in zip(_MATRIX_NAMES, (covariance_matrix, precision_matrix, scale_tril))
        if m is not None
    ]
    if len(given) != 1:
        raise error(
            "Exactly one of covariance_matrix or precision_matrix or scale_tril may be specified."
        )
    return given[0]


def _tril_of(name, matrix):
    """The Cholesky factor of the covariance from whichever matrix parameter was given."""
    if name == "scale_tril":
        return matrix
    if name == "covariance_matrix":
        return ember.linalg.cholesky(matrix)
    return _precision_to_tril(matrix)


def _expand_given_matrices(src, new, shape):
    """Copy onto ``new`` the matrix parameters ``src`` holds, expanded to ``shape``."""
    for name in _MATRIX_NAMES:
        if name in src.__dict__:
            setattr(new, name, src.__dict__[name].expand(shape))


class _TrilMatrices:
    """Mixin: ``scale_tril``, ``covariance_matrix`` and ``precision_matrix`` derived on first use
    from ``_unbroadcasted_scale_tril``, expanded over the batch."""

    def _over_batch(self, m):
        return m.expand(self._batch_shape + m.shape[-2:])

    @lazy_property
    def scale_tril(self):
        return self._over_batch(self._unbroadcasted_scale_tril)

    @lazy_property
    def covariance_matrix(self):
        tril = self._unbroadcasted_scale_tril
        return self._over_batch(tril @ tril.mT)

    @lazy_property
    def precision_matrix(self):
        return self._over_batch(ember.cholesky_inverse(self._unbroadcasted_scale_tril))

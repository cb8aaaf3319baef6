"""LKJ distribution over Cholesky factors of correlation matrices
(torch.distributions.LKJCholesky); like torch's, it follows NumPyro's implementation."""

from __future__ import annotations

import math

import ember
from ember._core.tensor import Tensor
from ember.distributions import constraints
from ember.distributions.beta import Beta
from ember.distributions.distribution import Distribution
from ember.distributions.utils import broadcast_all

__all__ = ["LKJCholesky"]


class LKJCholesky(Distribution):
    """LKJ distribution over lower Cholesky factors of correlation matrices, with density of
    the correlation matrix ``M`` proportional to ``det(M) ** (concentration - 1)``."""

    arg_constraints = {"concentration": constraints.positive}
    support = constraints.corr_cholesky

    def __init__(
        self,
        dim: int,
        concentration: Tensor | float = 1.0,
        validate_args: bool | None = None,
    ) -> None:
        if dim < 2:
            raise ValueError(
                f"Expected dim to be an integer greater than or equal to 2. Found dim={dim}."
            )
        self.dim = dim
        (self.concentration,) = broadcast_all(concentration)
        self._beta = self._row_radii(self.concentration, dim)
        super().__init__(self.concentration.size(), ember.Size((dim, dim)), validate_args)

    @staticmethod
    def _row_radii(eta, dim):
        """The onion method's laws of the squared off-diagonal norm of each row: row i (i >= 1)
        has Beta(i / 2, eta + (dim - 2) / 2 - (i - 1) / 2); row 0 (empty) gets a dummy entry so
        that one Beta covers every row."""
        steps = ember.cat([ember.zeros(1, dtype=eta.dtype), ember.arange(dim - 1, dtype=eta.dtype)])
        spare = eta + 0.5 * (dim - 2)
        return Beta(steps + 0.5, spare.unsqueeze(-1) - 0.5 * steps)

    def expand(self, batch_shape, _instance=None):
        batch_shape = ember.Size(batch_shape)
        return self._expand_params(
            LKJCholesky,
            batch_shape,
            _instance,
            ("concentration",),
            dim=self.dim,
            _beta=self._beta.expand(batch_shape + (self.dim,)),
        )

    def sample(self, sample_shape=()):
        # Onion method (Lewandowski, Kurowicka & Joe 2009, sec. 3.2), vectorized over rows and
        # batch: row i of the factor is sqrt(y_i) times a uniform direction in its first i
        # coordinates, and the diagonal takes what is left of the unit norm
        y = self._beta.sample(sample_shape).unsqueeze(-1)
        gauss = ember.randn(self._extended_shape(sample_shape), dtype=y.dtype).tril(-1)
        direction = gauss / gauss.norm(dim=-1, keepdim=True)
        direction[..., 0, :] = 0.0  # row 0 has no off-diagonal part (0 / 0 above)
        off = y.sqrt() * direction
        left = (1 - (off**2).sum(-1)).clamp(min=ember.finfo(off.dtype).tiny)
        return off + ember.diag_embed(left.sqrt())

    def log_prob(self, value):
        # density of the correlation matrix: det(M)^(eta - 1) = prod_i L_ii^(2 (eta - 1)); the
        # Jacobian of L -> L L' adds prod_i L_ii^(dim - i - 1) (0-based rows); normalizer from
        # Lewandowski et al. (2009), p. 1999
        if self._validate_args:
            self._validate_sample(value)
        d = self.dim
        powers = 2 * (self.concentration - 1).unsqueeze(-1) + d - ember.arange(2, d + 1)
        kernel = (powers * value.diagonal(dim1=-1, dim2=-2)[..., 1:].log()).sum(-1)
        a = self.concentration + 0.5 * (d - 1)
        # the paper's pi term is D (D - 1) / 4 log pi, mvlgamma's (D - 1)(D - 2) / 4 log pi
        log_norm = 0.5 * (d - 1) * math.log(math.pi) + ember.mvlgamma(a - 0.5, d - 1)
        return kernel - (log_norm - (d - 1) * ember.lgamma(a))

"""``torch.special``: special mathematical functions.

Everything here is implemented in ``ember._ops`` (the op table); this module is the public
namespace only. Most names are the top-level ops under torch.special's names (``expit`` is
``sigmoid``, ``gammaln`` is ``lgamma``); the rest live in
``ember._ops.special_more`` and ``ember._ops.special_bessel``.
"""

from __future__ import annotations

from ember._core.tensor import Tensor
from ember._ops.binary import xlogy
from ember._ops.reduce import logsumexp
from ember._ops.special import digamma, erf, erfc, erfinv, i0, lgamma, mvlgamma, polygamma, sinc
from ember._ops.special_bessel import (
    airy_ai,
    bessel_j0,
    bessel_j1,
    bessel_y0,
    bessel_y1,
    chebyshev_polynomial_t,
    chebyshev_polynomial_u,
    chebyshev_polynomial_v,
    chebyshev_polynomial_w,
    gammainc,
    gammaincc,
    hermite_polynomial_h,
    hermite_polynomial_he,
    laguerre_polynomial_l,
    legendre_polynomial_p,
    modified_bessel_i0,
    modified_bessel_i1,
    modified_bessel_k0,
    modified_bessel_k1,
    scaled_modified_bessel_k0,
    scaled_modified_bessel_k1,
    shifted_chebyshev_polynomial_t,
    shifted_chebyshev_polynomial_u,
    shifted_chebyshev_polynomial_v,
    shifted_chebyshev_polynomial_w,
    spherical_bessel_j0,
    zeta,
)
from ember._ops.special_more import (
    entr,
    erfcx,
    i0e,
    i1,
    i1e,
    log_ndtr,
    ndtr,
    ndtri,
    xlog1py,
)
from ember._ops.unary import exp2, expm1, log1p, logit, sigmoid
from ember._ops.unary import round as _round

expit = sigmoid
gammaln = lgamma
psi = digamma


def multigammaln(input: Tensor, p: int, *, out: Tensor | None = None) -> Tensor:
    """Return the multivariate log-gamma function of dimension ``p`` elementwise."""
    return mvlgamma(input, p, out=out)


def round(input: Tensor, *, decimals: int = 0, out: Tensor | None = None) -> Tensor:  # noqa: A001
    """Return ``input`` rounded to ``decimals`` decimal places (half to even)."""
    return _round(input, decimals=decimals, out=out)


def softmax(input: Tensor, dim: int, *, dtype=None) -> Tensor:
    """Return the softmax of ``input`` along ``dim``."""
    from ember.nn import functional as F

    return F.softmax(input, dim, dtype=dtype)


def log_softmax(input: Tensor, dim: int, *, dtype=None) -> Tensor:
    """Return the log of the softmax of ``input`` along ``dim``."""
    from ember.nn import functional as F

    return F.log_softmax(input, dim, dtype=dtype)


__all__ = [
    "airy_ai",
    "bessel_j0",
    "bessel_j1",
    "bessel_y0",
    "bessel_y1",
    "chebyshev_polynomial_t",
    "chebyshev_polynomial_u",
    "chebyshev_polynomial_v",
    "chebyshev_polynomial_w",
    "digamma",
    "entr",
    "erf",
    "erfc",
    "erfcx",
    "erfinv",
    "exp2",
    "expit",
    "expm1",
    "gammainc",
    "gammaincc",
    "gammaln",
    "hermite_polynomial_h",
    "hermite_polynomial_he",
    "i0",
    "i0e",
    "i1",
    "i1e",
    "laguerre_polynomial_l",
    "legendre_polynomial_p",
    "log1p",
    "log_ndtr",
    "log_softmax",
    "logit",
    "logsumexp",
    "modified_bessel_i0",
    "modified_bessel_i1",
    "modified_bessel_k0",
    "modified_bessel_k1",
    "multigammaln",
    "ndtr",
    "ndtri",
    "polygamma",
    "psi",
    "round",
    "scaled_modified_bessel_k0",
    "scaled_modified_bessel_k1",
    "shifted_chebyshev_polynomial_t",
    "shifted_chebyshev_polynomial_u",
    "shifted_chebyshev_polynomial_v",
    "shifted_chebyshev_polynomial_w",
    "sinc",
    "softmax",
    "spherical_bessel_j0",
    "xlog1py",
    "xlogy",
    "zeta",
]

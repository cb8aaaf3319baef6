"""``torch.special``: special mathematical functions.

Everything here is implemented in ``ember._ops`` (the op table); this module is the public
namespace only. Most names are the top-level ops under torch.special's names (``expit`` is
``sigmoid``, ``gammaln`` is ``lgamma``); the rest live in ``ember._ops.special_more``.
"""

from __future__ import annotations

from ember._core.tensor import Tensor
from ember._ops.binary import xlogy
from ember._ops.reduce import logsumexp
from ember._ops.special import digamma, erf, erfc, erfinv, i0, lgamma, mvlgamma, polygamma, sinc
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
    "digamma",
    "entr",
    "erf",
    "erfc",
    "erfcx",
    "erfinv",
    "exp2",
    "expit",
    "expm1",
    "gammaln",
    "i0",
    "i0e",
    "i1",
    "i1e",
    "log1p",
    "log_ndtr",
    "log_softmax",
    "logit",
    "logsumexp",
    "multigammaln",
    "ndtr",
    "ndtri",
    "polygamma",
    "psi",
    "round",
    "sinc",
    "softmax",
    "xlog1py",
    "xlogy",
]

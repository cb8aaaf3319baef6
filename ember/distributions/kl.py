"""KL divergence registry (torch.distributions.kl).

ember's layout of torch's pair table:

* the registry: ``register_kl`` stores a function per ``(type_p, type_q)``; ``kl_divergence``
  picks the most specific registration for the argument types (by MRO distance, ``p`` first)
  and warns when ranking ``q`` first would choose a different function, as torch does;
* same-family closed forms, each written from the textbook formula of its family;
* cross-family pairs through one identity, KL(p || q) = H(p, q) - H(p): the cross-entropy
  H(p, q) = E_p[-log q(X)] depends on ``q``'s log-density, which for these families is linear in a
  few statistics of X (X, X^2, log X, log(1 - X), |X - c|, exp(t X)), so one function per ``q``
  family (``_CROSS_ENTROPY``) combined with one table per statistic over ``p`` families covers
  every pair torch registers (``_CROSS_PAIRS``);
* pairs where ``p`` puts mass outside ``q``'s support are +inf (``_INFINITE``).
"""

from __future__ import annotations

import math
import warnings
from math import inf

import ember
from ember.distributions._gaussian import _tril_half_logdet
from ember.distributions.bernoulli import Bernoulli
from ember.distributions.beta import Beta
from ember.distributions.binomial import Binomial, Geometric
from ember.distributions.categorical import Categorical
from ember.distributions.cauchy import Cauchy
from ember.distributions.continuous_bernoulli import ContinuousBernoulli
from ember.distributions.dirichlet import Dirichlet
from ember.distributions.distribution import Distribution
from ember.distributions.exp_family import ExponentialFamily
from ember.distributions.exponential import Exponential
from ember.distributions.gamma import Gamma
from ember.distributions.gumbel import Gumbel
from ember.distributions.half_normal import HalfNormal
from ember.distributions.independent import Independent
from ember.distributions.laplace import Laplace
from ember.distributions.lowrank_multivariate_normal import LowRankMultivariateNormal
from ember.distributions.multivariate_normal import MultivariateNormal
from ember.distributions.normal import Normal
from ember.distributions.one_hot_categorical import OneHotCategorical
from ember.distributions.pareto import Pareto
from ember.distributions.poisson import Poisson
from ember.distributions.transformed_distribution import TransformedDistribution
from ember.distributions.uniform import Uniform
from ember.distributions.utils import _sum_rightmost, euler_constant
from ember.nn.functional import softplus

__all__ = ["kl_divergence", "register_kl"]

_KL_REGISTRY: dict = {}  # (type_p, type_q) -> fn(p, q)
_KL_MEMOIZE: dict = {}  # (type(p), type(q)) -> the chosen fn, or NotImplemented


# ----------------------------------------------------------------------------- the registry


def register_kl(type_p, type_q):
    """Return a decorator registering a pairwise KL function for ``(type_p, type_q)``."""
    # torch's observable check: a non-class raises issubclass's TypeError, while any class is
    # accepted (``register_kl(int, Normal)`` passes; tests/oracle/test_distributions_rewrite.py)
    for arg in (type_p, type_q):
        if not isinstance(arg, type):
            raise TypeError("issubclass() arg 1 must be a class")

    def decorator(fun):
        _KL_REGISTRY[type_p, type_q] = fun
        _KL_MEMOIZE.clear()
        return fun

    return decorator


def _distance(cls, base) -> int:
    """How far ``base`` sits above ``cls`` in its MRO (virtual bases rank last)."""
    mro = cls.__mro__
    return mro.index(base) if base in mro else len(mro)


def _dispatch_kl(type_p, type_q):
    candidates = [
        (_distance(type_p, bp), _distance(type_q, bq), bp, bq)
        for bp, bq in _KL_REGISTRY
        if issubclass(type_p, bp) and issubclass(type_q, bq)
    ]
    if not candidates:
        return NotImplemented
    _, _, p_first_p, p_first_q = min(candidates, key=lambda c: (c[0], c[1]))
    _, _, q_first_p, q_first_q = min(candidates, key=lambda c: (c[1], c[0]))
    chosen = _KL_REGISTRY[p_first_p, p_first_q]
    if chosen is not _KL_REGISTRY[q_first_p, q_first_q]:
        warnings.warn(
            f"Ambiguous kl_divergence({type_p.__name__}, {type_q.__name__}). "
            f"Please register_kl({p_first_p.__name__}, {q_first_q.__name__})",
            RuntimeWarning,
            stacklevel=2,
        )
    return chosen


def kl_divergence(p: Distribution, q: Distribution):
    """Return the Kullback-Leibler divergence KL(p || q), batched over the batch shape."""
    key = (type(p), type(q))
    if key not in _KL_MEMOIZE:
        _KL_MEMOIZE[key] = _dispatch_kl(*key)
    fun = _KL_MEMOIZE[key]
    if fun is NotImplemented:
        raise NotImplementedError(
            f"No KL(p || q) is implemented for p type {p.__class__.__name__} "
            f"and q type {q.__class__.__name__}"
        )
    return fun(p, q)


# ----------------------------------------------------------------------------- shared pieces

_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)


def _masked_log_ratio(weight, log_p, log_q, p_zero, q_zero):
    """``weight * (log_p - log_q)`` with the limits of x log(x / y): 0 where p has no mass,
    +inf where only q has none."""
    term = weight * (log_p - log_q)
    term[q_zero] = inf
    term[p_zero] = 0
    return term


def _log_beta_fn(a, b):
    return a.lgamma() + b.lgamma() - (a + b).lgamma()


def _inf_like_batch(p):
    return ember.full(p.batch_shape, inf, dtype=p.mean.dtype)


# ----------------------------------------------------------------------------- same family


@register_kl(Bernoulli, Bernoulli)
def _kl_bernoulli_bernoulli(p, q):
    # log p = -softplus(-logit), log(1 - p) = -softplus(logit)
    ones = _masked_log_ratio(
        p.probs, -softplus(-p.logits), -softplus(-q.logits), p.probs == 0, q.probs == 0
    )
    zeros = _masked_log_ratio(
        1 - p.probs, -softplus(p.logits), -softplus(q.logits), p.probs == 1, q.probs == 1
    )
    return ones + zeros


@register_kl(Categorical, Categorical)
def _kl_categorical_categorical(p, q):
    shape = ember.broadcast_shapes(p.logits.shape, q.logits.shape)
    per_class = _masked_log_ratio(
        p.probs, p.logits, q.logits, (p.probs == 0).expand(shape), (q.probs == 0).expand(shape)
    )
    return per_class.sum(-1)


@register_kl(OneHotCategorical, OneHotCategorical)
def _kl_onehot_onehot(p, q):
    return _kl_categorical_categorical(p._categorical, q._categorical)


@register_kl(Binomial, Binomial)
def _kl_binomial_binomial(p, q):
    # n trials of the Bernoulli divergence; a larger q.total_count is +inf (torch refuses the
    # reverse case, where p's support exceeds q's, with NotImplementedError)
    if (p.total_count < q.total_count).any():
        raise NotImplementedError(
            "KL between Binomials where q.total_count > p.total_count is not implemented"
        )
    per_trial = p.probs * (p.logits - q.logits) + ember.log1p(-p.probs) - ember.log1p(-q.probs)
    return ember.where(p.total_count > q.total_count, inf, p.total_count * per_trial)


@register_kl(Poisson, Poisson)
def _kl_poisson_poisson(p, q):
    lam_p, lam_q = p.rate, q.rate
    return lam_p * (lam_p.log() - lam_q.log()) + lam_q - lam_p


@register_kl(Normal, Normal)
def _kl_normal_normal(p, q):
    # log(s_q / s_p) + (s_p^2 + (m_p - m_q)^2) / (2 s_q^2) - 1/2
    spread = (p.scale / q.scale) ** 2
    shift = ((p.loc - q.loc) / q.scale) ** 2
    return 0.5 * (spread + shift - 1 - spread.log())


@register_kl(HalfNormal, HalfNormal)
def _kl_halfnormal_halfnormal(p, q):
    # folding both at zero keeps the divergence of the unfolded (zero-mean) normals
    spread = (p.scale / q.scale) ** 2
    return 0.5 * (spread - 1 - spread.log())


@register_kl(Cauchy, Cauchy)
def _kl_cauchy_cauchy(p, q):
    # closed form of Chyzak & Nielsen (arXiv:1905.10965)
    return ((p.scale + q.scale) ** 2 + (p.loc - q.loc) ** 2).log() - (4 * p.scale * q.scale).log()


@register_kl(Beta, Beta)
def _kl_beta_beta(p, q):
    a_p, b_p, a_q, b_q = p.concentration1, p.concentration0, q.concentration1, q.concentration0
    total_p = a_p + b_p
    return (
        _log_beta_fn(a_q, b_q)
        - _log_beta_fn(a_p, b_p)
        + (a_p - a_q) * a_p.digamma()
        + (b_p - b_q) * b_p.digamma()
        + (a_q + b_q - total_p) * total_p.digamma()
    )


@register_kl(Dirichlet, Dirichlet)
def _kl_dirichlet_dirichlet(p, q):
    alpha_p, alpha_q = p.concentration, q.concentration
    total_p = alpha_p.sum(-1)
    log_norm = total_p.lgamma() - alpha_q.sum(-1).lgamma()
    log_norm = log_norm - (alpha_p.lgamma() - alpha_q.lgamma()).sum(-1)
    expected_log = alpha_p.digamma() - total_p.digamma().unsqueeze(-1)
    return log_norm + ((alpha_p - alpha_q) * expected_log).sum(-1)


@register_kl(Gamma, Gamma)
def _kl_gamma_gamma(p, q):
    k_p, r_p, k_q, r_q = p.concentration, p.rate, q.concentration, q.rate
    return (
        (k_p - k_q) * k_p.digamma()
        - k_p.lgamma()
        + k_q.lgamma()
        + k_q * (r_p / r_q).log()
        + k_p * (r_q - r_p) / r_p
    )


@register_kl(Exponential, Exponential)
def _kl_exponential_exponential(p, q):
    ratio = q.rate / p.rate
    return ratio - ratio.log() - 1


@register_kl(Gumbel, Gumbel)
def _kl_gumbel_gumbel(p, q):
    # E_p[exp(-(X - m_q) / s_q)] = Gamma(1 + s_p / s_q) exp((m_q - m_p) / s_q)
    ratio = p.scale / q.scale
    shift = (p.loc - q.loc) / q.scale
    tail = ember.exp((1 + ratio).lgamma() - shift)
    return shift - ratio.log() + euler_constant * (ratio - 1) + tail - 1


@register_kl(Independent, Independent)
def _kl_independent_independent(p, q):
    dims = p.reinterpreted_batch_ndims
    if dims != q.reinterpreted_batch_ndims:
        raise NotImplementedError
    return _sum_rightmost(kl_divergence(p.base_dist, q.base_dist), dims)


@register_kl(TransformedDistribution, TransformedDistribution)
def _kl_transformed_transformed(p, q):
    # an invertible map leaves the divergence unchanged, when both use the same one
    if p.transforms != q.transforms or p.event_shape != q.event_shape:
        raise NotImplementedError
    return kl_divergence(p.base_dist, q.base_dist)


@register_kl(ExponentialFamily, ExponentialFamily)
def _kl_expfamily_expfamily(p, q):
    # Bregman divergence of the log-normalizer A at the natural parameters:
    # A(eta_q) - A(eta_p) - <eta_q - eta_p, grad A(eta_p)>
    if type(p) is not type(q):
        raise NotImplementedError(
            "The cross KL-divergence between different exponential families cannot \
                            be computed using Bregman divergences"
        )
    eta_p, a_p, grads = p._normalizer_at_params()
    eta_q = q._natural_params
    out = q._log_normalizer(*eta_q) - a_p
    for tp, tq, g in zip(eta_p, eta_q, grads):
        out = out - _sum_rightmost((tq - tp) * g, len(q.event_shape))
    return out


# ----------------------------------------------------------------------------- Gaussians
# One formula serves the four dense / low-rank pairs:
#   2 KL = tr(Sq^-1 Sp) + d' Sq^-1 d - n + logdet Sq - logdet Sp,   d = m_q - m_p.
# Every covariance is written S = R R' with a "root" R (the Cholesky factor, or [W, sqrt(D)] for
# W W' + D), so tr(Sq^-1 Sp) = tr(Rp' Sq^-1 Rp) is the same inverse quadratic form as the
# Mahalanobis term, applied to a matrix instead of a vector.


def _gauss_root(d):
    if isinstance(d, LowRankMultivariateNormal):
        diag = ember.diag_embed(d._unbroadcasted_cov_diag.sqrt())
        factor = d._unbroadcasted_cov_factor
        factor = factor.expand(diag.shape[:-2] + factor.shape[-2:])
        return ember.cat([factor, diag.expand(factor.shape[:-2] + diag.shape[-2:])], -1)
    return d._unbroadcasted_scale_tril


def _gauss_logdet(d):
    if isinstance(d, LowRankMultivariateNormal):
        # matrix determinant lemma: det(W W' + D) = det(I + W' D^-1 W) det(D)
        return 2 * _tril_half_logdet(d._capacitance_tril) + d._unbroadcasted_cov_diag.log().sum(-1)
    return 2 * _tril_half_logdet(d._unbroadcasted_scale_tril)


def _gauss_inv_quad(d, m):
    """tr(M' S^-1 M) for the covariance S of ``d`` and a (batch of) n x k matrices M."""
    if isinstance(d, LowRankMultivariateNormal):
        # Woodbury: S^-1 = D^-1 - D^-1 W C^-1 W' D^-1 with C = L L' the capacitance
        diag = d._unbroadcasted_cov_diag.unsqueeze(-1)
        whitened = ember.linalg.solve_triangular(
            d._capacitance_tril, d._unbroadcasted_cov_factor.mT @ (m / diag), upper=False
        )
        return (m**2 / diag).sum((-2, -1)) - (whitened**2).sum((-2, -1))
    tril = d._unbroadcasted_scale_tril
    batch = ember.broadcast_shapes(tril.shape[:-2], m.shape[:-2])
    solved = ember.linalg.solve_triangular(
        tril.expand(batch + tril.shape[-2:]), m.expand(batch + m.shape[-2:]), upper=False
    )
    return (solved**2).sum((-2, -1))


def _gauss_kl(p, q, message):
    if p.event_shape != q.event_shape:
        raise ValueError(message)
    trace = _gauss_inv_quad(q, _gauss_root(p))
    maha = _gauss_inv_quad(q, (q.loc - p.loc).unsqueeze(-1))
    half_log_ratio = 0.5 * (_gauss_logdet(q) - _gauss_logdet(p))
    return half_log_ratio + 0.5 * (trace + maha - p.event_shape[0])


_MVN_MESSAGES = {
    (MultivariateNormal, MultivariateNormal): "KL-divergence between two Multivariate Normals "
    "with                          different event shapes cannot be computed",
    (LowRankMultivariateNormal, LowRankMultivariateNormal): "KL-divergence between two Low "
    "Rank Multivariate Normals with                          different event shapes cannot be "
    "computed",
    (MultivariateNormal, LowRankMultivariateNormal): "KL-divergence between two (Low Rank) "
    "Multivariate Normals with                          different event shapes cannot be "
    "computed",
    (LowRankMultivariateNormal, MultivariateNormal): "KL-divergence between two (Low Rank) "
    "Multivariate Normals with                          different event shapes cannot be "
    "computed",
}
for (_p, _q), _msg in _MVN_MESSAGES.items():
    register_kl(_p, _q)(lambda p, q, _msg=_msg: _gauss_kl(p, q, _msg))


# ----------------------------------------------------------------------------- cross families
# Statistics of X under p, per p family (keys are the registered p types, so subclasses such
# as Chi2 use their base's entry).


def _log_antideriv(x):
    """An antiderivative of log: x log x - x (0 at x = 0)."""
    return ember.special.xlogy(x, x) - x


_MEAN_LOG = {  # E_p[log X]
    Beta: lambda p: p.concentration1.digamma() - (p.concentration1 + p.concentration0).digamma(),
    Exponential: lambda p: -p.rate.log() - euler_constant,
    Gamma: lambda p: p.concentration.digamma() - p.rate.log(),
    Pareto: lambda p: p.scale.log() + p.alpha.reciprocal(),
    Uniform: lambda p: (_log_antideriv(p.high) - _log_antideriv(p.low)) / (p.high - p.low),
}

_MEAN_LOG1M = {  # E_p[log(1 - X)]
    Uniform: lambda p: (_log_antideriv(1 - p.low) - _log_antideriv(1 - p.high)) / (p.high - p.low),
}


def _mean_exp_uniform(p, t, c):
    width = p.high - p.low
    return (ember.exp(t * (p.high - c)) - ember.exp(t * (p.low - c))) / (t * width)


_MEAN_EXP = {  # E_p[exp(t (X - c))]: the moment generating function, shifted by c
    Exponential: lambda p, t, c: ember.exp(-t * c) * p.rate / (p.rate - t),
    Gamma: lambda p, t, c: ember.exp(-t * c) * (1 - t / p.rate) ** (-p.concentration),
    Normal: lambda p, t, c: ember.exp(t * (p.loc - c) + 0.5 * (t * p.scale) ** 2),
    Uniform: _mean_exp_uniform,
    Gumbel: lambda p, t, c: ember.exp((1 - t * p.scale).lgamma() + t * (p.loc - c)),
}


def _mean_abs_normal(p, c):
    gap = p.loc - c
    z = gap / p.scale
    return p.scale * math.sqrt(2 / math.pi) * ember.exp(-0.5 * z**2) + gap * ember.erf(
        z / math.sqrt(2)
    )


_MEAN_ABS = {  # E_p|X - c|
    Normal: _mean_abs_normal,
    Laplace: lambda p, c: (p.loc - c).abs() + p.scale * ember.exp(-(p.loc - c).abs() / p.scale),
}

# Where p's density lives (None: unbounded on that side). Only bounds that can disagree matter.
_BOUNDS = {
    Beta: lambda d: (0.0, 1.0),
    ContinuousBernoulli: lambda d: (0.0, 1.0),
    Exponential: lambda d: (0.0, None),
    Gamma: lambda d: (0.0, None),
    Pareto: lambda d: (d.scale, None),
    Uniform: lambda d: (d.low, d.high),
}


# The cross-entropy H(p, q) = E_p[-log q(X)], one function per q family; P is p's registered type.


def _ce_normal(p, q, P):
    return q.scale.log() + _HALF_LOG_2PI + (p.variance + (p.mean - q.loc) ** 2) / (2 * q.scale**2)


def _ce_laplace(p, q, P):
    return (2 * q.scale).log() + _MEAN_ABS[P](p, q.loc) / q.scale


def _ce_exponential(p, q, P):
    return q.rate * p.mean - q.rate.log()


def _ce_gamma(p, q, P):
    k, r = q.concentration, q.rate
    return k.lgamma() - k * r.log() - (k - 1) * _MEAN_LOG[P](p) + r * p.mean


def _ce_gumbel(p, q, P):
    t = -q.scale.reciprocal()
    return q.scale.log() + (p.mean - q.loc) / q.scale + _MEAN_EXP[P](p, t, q.loc)


def _ce_beta(p, q, P):
    a, b = q.concentration1, q.concentration0
    return _log_beta_fn(a, b) - (a - 1) * _MEAN_LOG[P](p) - (b - 1) * _MEAN_LOG1M[P](p)


def _ce_pareto(p, q, P):
    return (q.alpha + 1) * _MEAN_LOG[P](p) - q.alpha.log() - q.alpha * q.scale.log()


def _ce_uniform(p, q, P):
    return (q.high - q.low).log()


def _ce_continuous_bernoulli(p, q, P):
    return -(q._cont_bern_log_norm() + p.mean * q.logits + ember.log1p(-q.probs))


_CROSS_ENTROPY = {
    Normal: (_ce_normal, 2),  # (function, how many moments of p it needs)
    Laplace: (_ce_laplace, 1),
    Exponential: (_ce_exponential, 1),
    Gamma: (_ce_gamma, 1),
    Gumbel: (_ce_gumbel, 1),
    Beta: (_ce_beta, 0),
    Pareto: (_ce_pareto, 0),
    Uniform: (_ce_uniform, 0),
    ContinuousBernoulli: (_ce_continuous_bernoulli, 0),
}

_CROSS_PAIRS = {  # p family -> the q families torch registers through this identity
    Beta: (ContinuousBernoulli, Exponential, Gamma, Normal, Uniform),
    ContinuousBernoulli: (ContinuousBernoulli, Exponential, Normal, Uniform),
    Exponential: (Gamma, Gumbel, Normal),
    Gamma: (Exponential, Gumbel, Normal),
    Gumbel: (Normal,),
    Laplace: (Laplace, Normal),
    Normal: (Gumbel, Laplace),
    Pareto: (Exponential, Gamma, Normal, Pareto),
    Uniform: (Beta, ContinuousBernoulli, Exponential, Gamma, Gumbel, Normal, Pareto, Uniform),
}


def _escapes(p_bounds, q_bounds, strict: bool):
    """Where p's support reaches outside q's (a bool tensor), or None when it never can."""
    out = None
    for p_end, q_end, outside in (
        (p_bounds[0], q_bounds[0], (lambda a, b: a <= b) if strict else (lambda a, b: a < b)),
        (p_bounds[1], q_bounds[1], (lambda a, b: a >= b) if strict else (lambda a, b: a > b)),
    ):
        if q_end is None:
            continue
        if p_end is None:
            return True
        if not isinstance(p_end, ember.Tensor) and not isinstance(q_end, ember.Tensor):
            continue  # fixed supports: the pair table only lists compatible ones
        hit = outside(p_end, q_end)
        out = hit if out is None else out | hit
    return out


def _cross_kl(P, Q):
    cross_entropy, moments = _CROSS_ENTROPY[Q]
    # torch treats the Uniform / ContinuousBernoulli pairs as infinite already when the two
    # supports share an end point
    strict = {P, Q} == {Uniform, ContinuousBernoulli}

    def kl(p, q):
        out = cross_entropy(p, q, P) - p.entropy()
        # masks are written in place (IndexPutBackward0, as torch's results carry), except
        # for the strict Uniform / ContinuousBernoulli pairs, which torch builds with ``where``
        if P is Pareto and moments:  # the m-th moment of a Pareto exists only for alpha > m
            out[p.alpha <= moments] = inf
        if P in _BOUNDS and Q in _BOUNDS:
            outside = _escapes(_BOUNDS[P](p), _BOUNDS[Q](q), strict)
            if outside is not None and strict:
                out = ember.where(outside, inf, out)
            elif outside is not None:
                out[outside] = inf
        return out

    kl.__name__ = f"_kl_{P.__name__.lower()}_{Q.__name__.lower()}"
    return kl


for _p, _qs in _CROSS_PAIRS.items():
    for _q in _qs:
        register_kl(_p, _q)(_cross_kl(_p, _q))


@register_kl(Geometric, Geometric)
def _kl_geometric_geometric(p, q):
    # E_p[-log q(K)] = -log q - E_p[K] log(1 - q)
    return -(q.probs.log() + p.mean * ember.log1p(-q.probs)) - p.entropy()


@register_kl(Bernoulli, Poisson)
def _kl_bernoulli_poisson(p, q):
    # log K! vanishes on {0, 1}, so E_p[-log q(K)] = rate - E_p[K] log rate
    return q.rate - p.probs * q.rate.log() - p.entropy()


# p has mass where q has none: the divergence is +inf for every parameter value
_INFINITE = {
    Beta: (Pareto,),
    ContinuousBernoulli: (Pareto,),
    Exponential: (Beta, ContinuousBernoulli, Pareto, Uniform),
    Gamma: (Beta, ContinuousBernoulli, Pareto, Uniform),
    Gumbel: (Beta, ContinuousBernoulli, Exponential, Gamma, Pareto, Uniform),
    Laplace: (Beta, ContinuousBernoulli, Exponential, Gamma, Pareto, Uniform),
    Normal: (Beta, ContinuousBernoulli, Exponential, Gamma, Pareto, Uniform),
    Pareto: (Beta, ContinuousBernoulli, Uniform),
    Poisson: (Bernoulli, Binomial),
}
for _p, _qs in _INFINITE.items():
    for _q in _qs:
        register_kl(_p, _q)(lambda p, q: _inf_like_batch(p))

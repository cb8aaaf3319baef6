"""Margin, ranking and embedding losses of ``ember.nn.functional`` (and pairwise_distance).

``multi_margin_loss`` and ``multilabel_margin_loss`` are ops with torch's grad_fn names (their
gradients are piecewise linear: constant coefficients times the upstream gradient); the others
are compositions of ember ops, as in torch.
"""

from __future__ import annotations

import numpy as np

import ember
from ember._core.tensor import Tensor, _wrap
from ember._ops.registry import AUTOCAST, autocast_inputs, dispatch, op
from ember.nn._functional.loss import _REDUCTIONS, _reduce, _reduce_np, _reduction

__all__ = [
    "cosine_embedding_loss",
    "hinge_embedding_loss",
    "margin_ranking_loss",
    "multi_margin_loss",
    "multilabel_margin_loss",
    "pairwise_distance",
    "triplet_margin_loss",
    "triplet_margin_with_distance_loss",
]


def hinge_embedding_loss(
    input: Tensor,
    target: Tensor,
    margin: float = 1.0,
    size_average=None,
    reduce=None,
    reduction: str = "mean",
) -> Tensor:
    """Return ``input`` where ``target == 1`` and ``max(0, margin - input)`` where it is -1."""
    if AUTOCAST:
        input, target = autocast_inputs("hinge_embedding_loss", (input, target))
    reduction = _reduction(size_average, reduce, reduction)
    zeros = ember.zeros_like(input)
    margin_clamp = (margin - input).clamp_min(0)
    out_margin = ember.where(target != 1, margin_clamp, zeros)
    out_self = ember.where(target != -1, input, zeros)
    return _reduce(out_margin + out_self, reduction)


def margin_ranking_loss(
    input1: Tensor,
    input2: Tensor,
    target: Tensor,
    margin: float = 0.0,
    size_average=None,
    reduce=None,
    reduction: str = "mean",
) -> Tensor:
    """Return ``max(0, -target * (input1 - input2) + margin)``, reduced."""
    if AUTOCAST:
        input1, input2, target = autocast_inputs("margin_ranking_loss", (input1, input2, target))
    reduction = _reduction(size_average, reduce, reduction)
    if input1.dim() != input2.dim() or input1.dim() != target.dim():
        raise RuntimeError(
            f"margin_ranking_loss : All input tensors should have same dimension but got sizes: "
            f"input1: {input1.shape}, input2: {input2.shape}, target: {target.shape} "
        )
    return _reduce((-target * (input1 - input2) + margin).clamp_min(0), reduction)


def cosine_embedding_loss(
    input1: Tensor,
    input2: Tensor,
    target: Tensor,
    margin: float = 0.0,
    size_average=None,
    reduce=None,
    reduction: str = "mean",
) -> Tensor:
    """Return ``1 - cos`` for pairs with target 1 and ``max(0, cos - margin)`` for -1."""
    if AUTOCAST:
        input1, input2, target = autocast_inputs("cosine_embedding_loss", (input1, input2, target))
    reduction = _reduction(size_average, reduce, reduction)
    eps = 1e-12
    d = input1.dim() - 1
    prod = (input1 * input2).sum(d)
    m1 = (input1 * input1).sum(d) + eps
    m2 = (input2 * input2).sum(d) + eps
    cos = prod / (m1 * m2).sqrt()
    zeros = ember.zeros_like(cos)
    pos = ember.where(target == 1, 1 - cos, zeros)
    neg = ember.where(target == -1, (cos - margin).clamp_min(0), zeros)
    return _reduce(pos + neg, reduction)


def pairwise_distance(
    x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False
) -> Tensor:
    """Return the ``p``-norm of ``x1 - x2 + eps`` over the last dimension."""
    nd = max(x1.dim(), x2.dim())
    d = x1 - x2 + eps
    if nd == 0:
        return d.abs()
    return d.norm(p, -1, keepdim)


def triplet_margin_loss(
    anchor: Tensor,
    positive: Tensor,
    negative: Tensor,
    margin: float = 1.0,
    p: float = 2,
    eps: float = 1e-6,
    swap: bool = False,
    size_average=None,
    reduce=None,
    reduction: str = "mean",
) -> Tensor:
    """Return ``max(d(a, p) - d(a, n) + margin, 0)`` with ``d`` the pairwise p-distance."""
    if AUTOCAST:
        anchor, positive, negative = autocast_inputs(
            "triplet_margin_loss", (anchor, positive, negative)
        )
    reduction = _reduction(size_average, reduce, reduction)
    d_ap = pairwise_distance(anchor, positive, p, eps)
    d_an = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_an = ember.minimum(d_an, pairwise_distance(positive, negative, p, eps))
    return _reduce((margin + d_ap - d_an).clamp_min(0), reduction)


def triplet_margin_with_distance_loss(
    anchor: Tensor,
    positive: Tensor,
    negative: Tensor,
    *,
    distance_function=None,
    margin: float = 1.0,
    swap: bool = False,
    reduction: str = "mean",
) -> Tensor:
    """Return the triplet margin loss under a custom ``distance_function``."""
    if margin <= 0:
        raise ValueError(f"TripletMarginLoss: expected margin to be greater than 0, got {margin}")
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    dist = distance_function if distance_function is not None else pairwise_distance
    d_ap = dist(anchor, positive)
    d_an = dist(anchor, negative)
    if swap:
        d_an = ember.minimum(d_an, dist(positive, negative))
    return _reduce((margin + d_ap - d_an).clamp_min(0), reduction)


# ------------------------------------------------------------------------------ margin losses


def _onehot(t: np.ndarray, c: int, dtype) -> np.ndarray:
    return (t[..., None] == np.arange(c)).astype(dtype)


def _mm_parts(x, t, p, margin, weight):
    """Return (z, active mask, per-sample weight, one-hot) of a multi-margin loss."""
    c = x.shape[-1]
    m = _onehot(t, c, x.dtype)
    xy = (x * m).sum(-1, keepdims=True)
    z = margin - xy + x
    active = ((z > 0) & (m == 0)).astype(x.dtype)
    w = weight[t] if weight is not None else np.ones(t.shape, x.dtype)
    return z, active, w.astype(x.dtype), m


@op(
    "multi_margin_loss",
    grad_fn="MultiMarginLossBackward0",
    args=("self", "target"),
    save=("self", "target"),
)
def _multi_margin(x, t, p=1, margin=1.0, weight=None, reduction="mean"):
    z, active, w, _ = _mm_parts(x, t, p, margin, weight)
    h = z * active
    per = (h if p == 1 else h * h).sum(-1) * w / x.shape[-1]
    return _reduce_np(per.astype(x.dtype), reduction)


@_multi_margin.backward
def _(ctx, g, p=1, margin=1.0, weight=None, reduction="mean"):
    x, t = ctx.saved_tensors
    xa, ta = x._data, t._data
    c = xa.shape[-1]
    _, active, w, m = _mm_parts(xa, ta, p, margin, weight)
    coef = _wrap(active * (w / c)[..., None])
    if p == 2:
        mt = _wrap(m)
        z = margin - (x * mt).sum(-1, keepdim=True) + x
        coef = coef * (2 * z)
    else:
        mt = _wrap(m)
    gx = coef - mt * coef.sum(-1, keepdim=True)
    if reduction == "mean":
        g = g / max(ta.size, 1)
    elif reduction == "none" and xa.ndim == 2:
        g = g.unsqueeze(1)
    return gx * g, None


def multi_margin_loss(
    input: Tensor,
    target: Tensor,
    p: int = 1,
    margin: float = 1.0,
    weight: Tensor | None = None,
    size_average=None,
    reduce=None,
    reduction: str = "mean",
) -> Tensor:
    """Return the multi-class hinge loss ``sum_j max(0, margin - x[y] + x[j])^p / C``."""
    reduction = _reduction(size_average, reduce, reduction)
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    if input.dim() not in (1, 2):
        raise RuntimeError(
            "Expected non-empty vector or matrix with optional 0-dim batch size, but got: "
            f"{list(input.shape)}"
        )
    c = input.shape[-1]
    ta = target._data
    if ta.size and (ta.min() < 0 or ta.max() >= c):
        raise RuntimeError("target out of range")
    params = {"p": p, "margin": margin, "reduction": reduction}
    if weight is not None:
        params["weight"] = weight._data
    return dispatch(_multi_margin, (input, target), params)


def _mlm_weights(t: np.ndarray, c: int, dtype) -> np.ndarray:
    """Return (N, C, C) pair weights: count of j among the targets times [k not a target]."""
    valid = np.cumprod(t >= 0, axis=-1).astype(bool)  # targets stop at the first -1
    safe = np.where(valid, t, 0)
    count = (_onehot(safe, c, dtype) * valid[..., None]).sum(-2)
    is_t = count > 0
    return count[..., :, None] * (~is_t)[..., None, :]


@op(
    "multilabel_margin_loss",
    grad_fn="MultilabelMarginLossBackward0",
    args=("self", "target"),
    save=("self", "target"),
)
def _multilabel_margin(x, t, reduction="mean"):
    c = x.shape[-1]
    pw = _mlm_weights(t, c, x.dtype)
    z = 1 - x[..., :, None] + x[..., None, :]
    per = (np.maximum(z, 0) * pw).sum((-2, -1)) / c
    return _reduce_np(per.astype(x.dtype), reduction)


@_multilabel_margin.backward
def _(ctx, g, reduction="mean"):
    x, t = ctx.saved_tensors
    xa, ta = x._data, t._data
    c = xa.shape[-1]
    pw = _mlm_weights(ta, c, xa.dtype)
    z = 1 - xa[..., :, None] + xa[..., None, :]
    act = (z > 0) * pw
    coef = (act.sum(-2) - act.sum(-1)) / c
    if reduction == "mean":
        g = g / max(ta.size // c, 1)
    elif reduction == "none" and xa.ndim == 2:
        g = g.unsqueeze(1)
    return g * _wrap(coef.astype(xa.dtype)), None


def multilabel_margin_loss(
    input: Tensor, target: Tensor, size_average=None, reduce=None, reduction: str = "mean"
) -> Tensor:
    """Return the multi-label hinge loss between targets (ended by -1) and the other classes."""
    reduction = _reduction(size_average, reduce, reduction)
    if tuple(target.shape) != tuple(input.shape):
        raise RuntimeError(
            f"inconsistent target size: {list(target.shape)} for input of size: {list(input.shape)}"
        )
    return dispatch(_multilabel_margin, (input, target), {"reduction": reduction})

"""Connectionist temporal classification loss (``F.ctc_loss``), as torch's CPU kernel.

The forward is the alpha recursion of Graves et al. in log space, vectorised over the batch and
the positions of the blank-extended label sequence (one Python step per time step); the backward
runs the beta recursion and returns torch's gradient with respect to ``log_probs``::

    grad[t, n, c] = exp(lp[t, n, c]) - exp(logsumexp_{s: l'(s) = c}(alpha + beta) + nll - lp)

(the ``exp(lp)`` term assumes ``log_probs`` comes from ``log_softmax``, as torch's does), zero
past each input length. As in torch, that gradient is not differentiable again.
"""

from __future__ import annotations

import numpy as np

import ember
from ember._core.tensor import Tensor
from ember._ops.registry import _type_name, dispatch, op

__all__ = ["ctc_loss"]

_CHECKED = " (while checking arguments for ctc_loss_allocate_outputs)"


def _lse3(a, b, c):
    """Return log(exp(a) + exp(b) + exp(c)) elementwise, -inf where all three are -inf."""
    m = np.maximum(np.maximum(a, b), c)
    m = np.where(m == -np.inf, 0.0, m)
    return m + np.log(np.exp(a - m) + np.exp(b - m) + np.exp(c - m))


def _extended(targets, tl, blank):
    """Return (labels l' of length 2S+1, may-skip-from-s-2 mask, valid-position mask)."""
    n, s = targets.shape
    ext = np.full((n, 2 * s + 1), blank, dtype=np.int64)
    ext[:, 1::2] = targets
    skip = np.zeros(ext.shape, dtype=bool)
    skip[:, 3::2] = ext[:, 3::2] != ext[:, 1:-2:2]
    valid = np.arange(2 * s + 1)[None, :] < (2 * tl + 1)[:, None]
    return ext, skip, valid


def _alpha(lpe, skip, valid):
    """Return log alpha (T, N, L): log-probability of the prefixes ending at label position s."""
    t_max, n, size = lpe.shape
    alpha = np.full((t_max, n, size), -np.inf)
    if t_max == 0:
        return alpha
    first = np.full((n, size), -np.inf)
    first[:, : min(2, size)] = lpe[0, :, : min(2, size)]
    alpha[0] = np.where(valid, first, -np.inf)
    pad = np.full((n, 2), -np.inf)
    for t in range(1, t_max):
        prev = np.concatenate([pad, alpha[t - 1]], axis=1)
        a2 = np.where(skip, prev[:, :-2], -np.inf)
        alpha[t] = np.where(valid, _lse3(prev[:, 2:], prev[:, 1:-1], a2) + lpe[t], -np.inf)
    return alpha


def _beta(lpe, skip, valid, il, tl):
    """Return log beta (T, N, L): log-probability of the suffixes starting at position s."""
    t_max, n, size = lpe.shape
    beta = np.full((t_max, n, size), -np.inf)
    pos = np.arange(size)[None, :]
    ends = (pos == 2 * tl[:, None]) | (pos == 2 * tl[:, None] - 1)
    skip_next = np.zeros(skip.shape, dtype=bool)
    skip_next[:, :-2] = skip[:, 2:]  # from s one may jump to s + 2
    pad = np.full((n, 2), -np.inf)
    nxt = np.full((n, size), -np.inf)
    for t in range(t_max - 1, -1, -1):
        if t < t_max - 1:
            nxt = np.concatenate([beta[t + 1], pad], axis=1)
            b2 = np.where(skip_next, nxt[:, 2:], -np.inf)
            nxt = _lse3(nxt[:, :-2], nxt[:, 1:-1], b2) + lpe[t]
        last = (t == il - 1)[:, None]
        inner = (t < il - 1)[:, None]
        val = np.where(last & ends, lpe[t], np.where(inner, nxt, -np.inf))
        beta[t] = np.where(valid, val, -np.inf)
    return beta


def _prepare(lp, targets, il, tl, blank):
    """Return (log_probs as float64, l', skip, valid, log_probs gathered at l')."""
    lp64 = lp.astype(np.float64, copy=False)
    ext, skip, valid = _extended(targets, tl, blank)
    lpe = np.take_along_axis(lp64, ext[None, :, :], axis=2)
    return lp64, ext, skip, valid, lpe


def _nll(alpha, il, tl):
    n = il.shape[0]
    rows = np.arange(n)
    t_last = np.maximum(il - 1, 0)
    end = alpha[t_last, rows, 2 * tl]
    before = np.where(tl > 0, alpha[t_last, rows, np.maximum(2 * tl - 1, 0)], -np.inf)
    nll = -np.logaddexp(end, before)
    # no time steps: the empty target is certain, any other impossible
    return np.where(il == 0, np.where(tl == 0, -0.0, np.inf), nll)


@op("_ctc_loss", grad_fn="CtcLossBackward0", args=("log_probs",), save=("log_probs", "_result"))
@np.errstate(divide="ignore", invalid="ignore")
def _ctc_forward(lp, targets=None, il=None, tl=None, blank=0, zero_infinity=False):
    _, _, skip, valid, lpe = _prepare(lp, targets, il, tl, blank)
    alpha = _alpha(lpe, skip, valid)
    return _nll(alpha, il, tl).astype(lp.dtype)


@op("_ctc_loss_backward", grad_fn="NotImplemented")
@np.errstate(divide="ignore", invalid="ignore")
def _ctc_backward_op(g, lp, nll, targets=None, il=None, tl=None, blank=0, zero_infinity=False):
    lp64, ext, skip, valid, lpe = _prepare(lp, targets, il, tl, blank)
    alpha = _alpha(lpe, skip, valid)
    beta = _beta(lpe, skip, valid, il, tl)
    ab = alpha + beta  # (T, N, L)
    m = ab.max(axis=2, keepdims=True) if ab.shape[2] else np.zeros(ab.shape[:2] + (1,))
    m = np.where(m == -np.inf, 0.0, m)
    # sum exp(alpha + beta) over the label positions of each class: one bincount over (T, N, C)
    t_max, n, c = lp.shape
    cols = np.arange(n)[:, None] * c + ext  # (N, L) -> flat (n, class) positions
    flat = (np.arange(t_max)[:, None, None] * (n * c) + cols[None]).ravel()
    summed = np.bincount(flat, weights=np.exp(ab - m).ravel(), minlength=t_max * n * c)
    lcab = np.log(summed.reshape(t_max, n, c)) + m  # (T, N, C)
    nll64 = nll.astype(np.float64)[None, :, None]
    grad = np.exp(lp64) - np.exp(lcab + nll64 - lp64)
    keep = np.arange(lp.shape[0])[:, None] < il[None, :]
    if zero_infinity:
        keep = keep & (nll != np.inf)[None, :]
    grad = np.where(keep[:, :, None], grad * g.astype(np.float64)[None, :, None], 0.0)
    return grad.astype(lp.dtype)


@_ctc_forward.backward
def _(ctx, g, **params):
    lp, nll = ctx.saved_tensors
    return dispatch(_ctc_backward_op, (g, lp, nll), params)


@_ctc_backward_op.backward
def _(ctx, *grads, **params):
    raise RuntimeError("derivative for aten::_ctc_loss_backward is not implemented")


def _lengths(x, name: str) -> np.ndarray:
    if isinstance(x, Tensor):
        if x.dtype.is_floating_point or x.dtype.is_complex or x.dtype is ember.bool:
            raise RuntimeError(f"{name} must be integral")
        return x._data.astype(np.int64).reshape(-1)
    return np.asarray(list(x), dtype=np.int64).reshape(-1)


def _padded_targets(targets: np.ndarray, il, tl, n: int) -> np.ndarray:
    """Check the targets against the lengths as torch does; return them padded to (N, max tl)."""
    if np.any(tl < 0):
        bad = int(tl[tl < 0][0])
        raise RuntimeError(
            f"Expected target_lengths to have value at least 0, but got value {bad}" + _CHECKED
        )
    s = int(tl.max()) if n else 0
    if targets.ndim == 1:
        total = int(tl.sum())
        if targets.shape[0] != total:
            raise RuntimeError(
                f"Expected tensor to have size {total} at dimension 0, but got size "
                f"{targets.shape[0]} for argument #2 'targets'" + _CHECKED
            )
        offsets = np.cumsum(tl) - tl
        idx = offsets[:, None] + np.arange(s)[None, :]
        inside = np.arange(s)[None, :] < tl[:, None]
        return np.where(inside, targets[np.where(inside, idx, 0)] if total else 0, 0)
    if targets.shape[0] != n:
        raise RuntimeError(
            f"Expected tensor to have size {n} at dimension 0, but got size {targets.shape[0]} "
            "for argument #2 'targets'" + _CHECKED
        )
    if targets.shape[1] < s:
        raise RuntimeError(
            f"Expected tensor to have size at least {s} at dimension 1, but got size "
            f"{targets.shape[1]} for argument #2 'targets'" + _CHECKED
        )
    return targets[:, :s]


def ctc_loss(
    log_probs: Tensor,
    targets: Tensor,
    input_lengths,
    target_lengths,
    blank: int = 0,
    reduction: str = "mean",
    zero_infinity: bool = False,
) -> Tensor:
    """Return the connectionist temporal classification loss of ``log_probs`` (T, N, C).

    ``targets`` are padded (N, S) or concatenated (sum(target_lengths),); the lengths are
    Tensors or sequences of ints. ``'mean'`` divides each loss by its target length (at least
    1) and averages over the batch; ``zero_infinity`` zeroes impossible alignments and their
    gradients.
    """
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    for name, v in (("input_lengths", input_lengths), ("target_lengths", target_lengths)):
        if not isinstance(v, (Tensor, list, tuple)):
            raise TypeError(
                f"ctc_loss(): {name} must be a Tensor or a sequence of ints, not {type(v).__name__}"
            )
    if isinstance(input_lengths, Tensor) != isinstance(target_lengths, Tensor):
        raise TypeError(
            "ctc_loss(): input_lengths and target_lengths must both be Tensors or both be "
            "sequences of ints"
        )
    il = _lengths(input_lengths, "input_lengths")
    tl = _lengths(target_lengths, "target_lengths")
    batched = log_probs.dim() == 3
    lp = log_probs if batched else log_probs.unsqueeze(1)
    tg = targets._data if batched else targets._data.reshape((1,) + targets._data.shape)
    if lp.numel() == 0:
        raise RuntimeError("log_probs tensor must not be empty")
    if not lp.dtype.is_floating_point or lp.dtype in (ember.float16, ember.bfloat16):
        raise NotImplementedError(f"\"ctc_loss_cpu\" not implemented for '{_type_name(lp.dtype)}'")
    t_max, n, c = lp.shape
    if blank < 0 or blank >= c:
        raise RuntimeError("blank must be in label range")
    if il.shape[0] != n:
        raise RuntimeError("input_lengths must be of size batch_size")
    if tl.shape[0] != n:
        raise RuntimeError("target_lengths must be of size batch_size")
    padded = _padded_targets(tg.astype(np.int64), il, tl, n)
    for i in il:
        if i < 0:
            raise RuntimeError(
                f"Expected input_lengths to have value at least 0, but got value {int(i)}"
                + _CHECKED
            )
        if i > t_max:
            raise RuntimeError(
                f"Expected input_lengths to have value at most {t_max}, but got value {int(i)}"
                + _CHECKED
            )
    params = {"targets": padded, "il": il, "tl": tl, "blank": int(blank)}
    params["zero_infinity"] = bool(zero_infinity)
    res = dispatch(_ctc_forward, (lp,), params)
    if zero_infinity:
        res = ember.where(res == float("inf"), ember.zeros((), dtype=res.dtype), res)
    if reduction == "mean":
        lengths = ember.tensor(tl.tolist(), dtype=res.dtype).clamp_min(1)
        return (res / lengths).mean()
    if reduction == "sum":
        return res.sum()
    return res if batched else res.squeeze(0)

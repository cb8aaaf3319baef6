"""Loss functions of ``ember.nn.functional``.

Losses torch computes in one kernel (``mse_loss``, ``nll_loss``, ``binary_cross_entropy``...)
are ops from the table with torch's grad_fn names, a NumPy forward and a backward in ember ops;
the others are compositions of ember ops, as in torch. ``cross_entropy`` is ``log_softmax``
(one fused op) followed by ``nll_loss``.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

import ember
from ember._core.tensor import Tensor, _wrap
from ember._ops.pointwise import like
from ember._ops.registry import (
    AUTOCAST,
    SAME,
    _type_name,
    autocast_inputs,
    dispatch,
    op,
    result_dtype,
)
from ember.nn._functional.activation import log_softmax, logsigmoid
from ember.nn._functional.activation import softplus as _softplus
from ember.nn._functional.ctc import ctc_loss

# the margin and embedding losses live in loss_margin.py
__all__ = [
    "binary_cross_entropy",
    "binary_cross_entropy_with_logits",
    "cross_entropy",
    "ctc_loss",
    "gaussian_nll_loss",
    "huber_loss",
    "kl_div",
    "l1_loss",
    "mse_loss",
    "multilabel_soft_margin_loss",
    "nll_loss",
    "poisson_nll_loss",
    "smooth_l1_loss",
    "soft_margin_loss",
]

_REDUCTIONS = ("none", "mean", "sum")


def legacy_reduction(size_average, reduce, emit_warning: bool = True) -> str:
    """Map the deprecated ``size_average``/``reduce`` pair to a ``reduction`` string."""
    # an unset flag counts as True: reduce=False keeps every element's loss, otherwise
    # size_average chooses the mean over the sum
    keep_all = reduce is not None and not reduce
    averaged = size_average is None or size_average
    ret = "none" if keep_all else ("mean" if averaged else "sum")
    if emit_warning:
        warnings.warn(
            f"size_average and reduce args will be deprecated, please use reduction='{ret}' "
            "instead.",
            UserWarning,
            stacklevel=3,
        )
    return ret


def legacy_given(size_average, reduce) -> bool:
    """Whether a call passed the deprecated pair (either of them overrides ``reduction``)."""
    return size_average is not None or reduce is not None


def _reduction(size_average, reduce, reduction: str) -> str:
    if legacy_given(size_average, reduce):
        return legacy_reduction(size_average, reduce)
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return reduction


@op("div", grad_fn="DivBackward1")
def _div_scalar(x, other):
    return x / like(x, other)


@_div_scalar.backward
def _(ctx, g, other):
    return g / other


def _check_weight(input: Tensor, weight: Tensor | None) -> None:
    if weight is not None and tuple(weight.shape) != tuple(input.shape):
        raise ValueError("Weights and input must have the same size.")


def _reduce_weighted(t: Tensor, weight: Tensor, reduction: str) -> Tensor:
    # torch's weighted mse/l1: the mean divides by the total weight
    if reduction == "mean":
        return t.sum() / weight.sum()
    return _reduce(t, reduction)


def _reduce(t: Tensor, reduction: str) -> Tensor:
    if reduction == "mean":
        return t.mean()
    if reduction == "sum":
        return t.sum()
    return t


def _reduce_np(a: np.ndarray, reduction: str) -> np.ndarray:
    if reduction == "mean":
        return np.asarray(a.mean(dtype=a.dtype) if a.size else np.nan, dtype=a.dtype)
    if reduction == "sum":
        return np.asarray(a.sum(dtype=a.dtype))
    return a


def _size_warning(input: Tensor, target: Tensor, stacklevel: int = 3) -> None:
    if target.size() != input.size():  # .size(): torch's AttributeError for a non-tensor
        warnings.warn(
            f"Using a target size ({target.shape}) that is different to the input size "
            f"({input.shape}). This will likely lead to incorrect results due to broadcasting. "
            "Please ensure they have the same size.",
            UserWarning,
            stacklevel=stacklevel,
        )


def _qualname(x) -> str:
    t = type(x)
    return t.__name__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__name__}"


def _check_float_kernel(kernel: str, input: Tensor, target: Tensor) -> None:
    """torch's error for a loss whose kernel has no integer version (both operands integral)."""
    if input.dtype.is_floating_point or target.dtype.is_floating_point:
        return
    dt = result_dtype((input, target))
    if not dt.is_complex:
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{_type_name(dt)}'")


def _mean_scale(g: Tensor, x: Tensor, y: Tensor, reduction: str) -> Tensor:
    if reduction == "mean":
        n = math.prod(np.broadcast_shapes(tuple(x.shape), tuple(y.shape)))
        return g / n
    return g


def _pointwise_loss(name: str, grad_fn: str, elem, delem):
    """Declare a two-input loss op: ``elem(x, y, **kw)`` on arrays gives the loss per element,
    ``delem(x, y, **kw)`` on Tensors its derivatives ``(d/dx, d/dy)``."""

    @op(name, grad_fn=grad_fn, args=("self", "target"), save=("self", "target"), promote=SAME)
    def fwd(x, y, reduction="mean", **kw):
        return _reduce_np(np.asarray(elem(x, y, **kw)), reduction)

    @fwd.backward
    def _(ctx, g, reduction="mean", **kw):
        x, y = ctx.saved_tensors
        g = _mean_scale(g, x, y, reduction)
        dx, dy = delem(x, y, **kw)
        return (
            g * dx if ctx.needs_input_grad[0] else None,
            g * dy if ctx.needs_input_grad[1] else None,
        )

    return fwd


# ------------------------------------------------------------------------------ regression


_mse = _pointwise_loss(
    "mse_loss",
    "MseLossBackward0",
    lambda x, y: np.square(x - y),
    lambda x, y: (2 * (x - y), 2 * (y - x)),
)


def mse_loss(
    input: Tensor,
    target: Tensor,
    size_average=None,
    reduce=None,
    reduction: str = "mean",
    weight: Tensor | None = None,
) -> Tensor:
    """Return the (reduced) squared error between ``input`` and ``target``."""
    _size_warning(input, target)
    _check_float_kernel("mse_cpu", input, target)
    reduction = _reduction(size_average, reduce, reduction)
    if weight is not None:
        _check_weight(input, weight)
        return _reduce_weighted((input - target).square() * weight, weight, reduction)
    return dispatch(_mse, (input, target), {"reduction": reduction})


def l1_loss(
    input: Tensor,
    target: Tensor,
    size_average=None,
    reduce=None,
    reduction: str = "mean",
    weight: Tensor | None = None,
) -> Tensor:
    """Return the (reduced) absolute error between ``input`` and ``target``."""
    if AUTOCAST:
        input, target, weight = autocast_inputs("l1_loss", (input, target, weight))
    _size_warning(input, target)
    reduction = _reduction(size_average, reduce, reduction)
    d = (input - target).abs()
    if weight is not None:
        _check_weight(input, weight)
        return _reduce_weighted(d * weight, weight, reduction)
    return _reduce(d, reduction)


def _np_smooth_l1(x, y, beta=1.0):
    d = np.abs(x - y)
    if beta == 0:
        return d
    b = like(d, beta)
    return np.where(d < b, like(d, 0.5) * d * d / b, d - like(d, 0.5) * b)


def _d_smooth_l1(x, y, beta=1.0):
    d = x - y
    dx = d.sign() if beta == 0 else ember.where(d.abs() < beta, d / beta, d.sign())
    return dx, -dx


_smooth_l1 = _pointwise_loss("smooth_l1_loss", "SmoothL1LossBackward0", _np_smooth_l1, _d_smooth_l1)


def smooth_l1_loss(
    input: Tensor,
    target: Tensor,
    size_average=None,
    reduce=None,
    reduction: str = "mean",
    beta: float = 1.0,
) -> Tensor:
    """Return the smooth L1 loss: quadratic below ``beta``, linear above."""
    _size_warning(input, target)
    _check_float_kernel("smooth_l1_cpu", input, target)
    reduction = _reduction(size_average, reduce, reduction)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    if beta == 0:
        return l1_loss(input, target, reduction=reduction)
    return dispatch(_smooth_l1, (input, target), {"reduction": reduction, "beta": beta})


def _np_huber(x, y, delta=1.0):
    d = np.abs(x - y)
    dl = like(d, delta)
    return np.where(d < dl, like(d, 0.5) * d * d, dl * (d - like(d, 0.5) * dl))


def _d_huber(x, y, delta=1.0):
    d = x - y
    dx = ember.where(d.abs() < delta, d, d.sign() * delta)
    return dx, -dx


_huber = _pointwise_loss("huber_loss", "HuberLossBackward0", _np_huber, _d_huber)


def huber_loss(
    input: Tensor,
    target: Tensor,
    reduction: str = "mean",
    delta: float = 1.0,
    weight: Tensor | None = None,
) -> Tensor:
    """Return the Huber loss: quadratic below ``delta``, ``delta``-linear above."""
    _size_warning(input, target)
    _check_float_kernel("huber_cpu", input, target)
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    if weight is not None:
        _check_weight(input, weight)
        per = dispatch(_huber, (input, target), {"reduction": "none", "delta": delta})
        return _reduce(per * weight, reduction)
    return dispatch(_huber, (input, target), {"reduction": reduction, "delta": delta})


def _np_soft_margin(x, y):
    return np.logaddexp(like(x, 0.0), -y * x)


def _d_soft_margin(x, y):
    s = (-y * x).sigmoid()
    return -y * s, -x * s


_soft_margin = _pointwise_loss(
    "soft_margin_loss", "SoftMarginLossBackward0", _np_soft_margin, _d_soft_margin
)


def soft_margin_loss(
    input: Tensor, target: Tensor, size_average=None, reduce=None, reduction: str = "mean"
) -> Tensor:
    """Return ``log(1 + exp(-target * input))``, reduced."""
    reduction = _reduction(size_average, reduce, reduction)
    if target.requires_grad and ember.is_grad_enabled():
        raise RuntimeError(
            "The function 'soft_margin_loss' is not differentiable with respect to argument "
            "'target'. This input cannot have requires_grad True."
        )
    return dispatch(_soft_margin, (input, target), {"reduction": reduction})


# ------------------------------------------------------------------------------ binary


def _np_bce(x, y, weight=None):
    lx = np.maximum(np.log(x), like(x, -100.0))
    l1x = np.maximum(np.log1p(-x), like(x, -100.0))
    loss = -(y * lx + (1 - y) * l1x)
    return loss * weight if weight is not None else loss


def _d_bce(x, y, weight=None):
    eps = 1e-12
    dx = (x - y) / ((1 - x) * x).clamp_min(eps)
    dy = (1 - x).log().clamp_min(-100) - x.log().clamp_min(-100)
    if weight is not None:
        w = _wrap(weight)
        dx, dy = dx * w, dy * w
    return dx, dy


_bce = _pointwise_loss("binary_cross_entropy", "BinaryCrossEntropyBackward0", _np_bce, _d_bce)


def binary_cross_entropy(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    size_average=None,
    reduce=None,
    reduction: str = "mean",
) -> Tensor:
    """Return the binary cross entropy between probabilities ``input`` and ``target``."""
    reduction = _reduction(size_average, reduce, reduction)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(
            f"Using a target size ({target.shape}) that is different to the input size "
            f"({input.shape}) is deprecated. Please ensure they have the same size."
        )
    if target.dtype is not input.dtype:
        raise RuntimeError(
            f"Found dtype {_type_name(target.dtype)} but expected {_type_name(input.dtype)}"
        )
    _check_float_kernel("binary_cross_entropy", input, target)
    x = input._data
    if x.size and not np.all((x >= 0) & (x <= 1)):
        raise RuntimeError("all elements of input should be between 0 and 1")
    params = {"reduction": reduction}
    if weight is not None:
        params["weight"] = np.broadcast_to(weight._data, x.shape).astype(x.dtype)
    return dispatch(_bce, (input, target), params)


def _np_bce_logits(x, y, weight=None, pos_weight=None):
    sp = np.logaddexp(like(x, 0.0), -x)  # softplus(-x) = -log(sigmoid(x))
    if pos_weight is not None:
        loss = (1 - y) * x + (1 + (pos_weight - 1) * y) * sp
    else:
        loss = (1 - y) * x + sp
    return loss * weight if weight is not None else loss


def _d_bce_logits(x, y, weight=None, pos_weight=None):
    s = x.sigmoid()
    if pos_weight is not None:
        pw = _wrap(pos_weight)
        dx = s * (pw * y + 1 - y) - pw * y
        dy = (pw - 1) * _softplus(-x) - x
    else:
        dx = s - y
        dy = -x
    if weight is not None:
        w = _wrap(weight)
        dx, dy = dx * w, dy * w
    return dx, dy


_bce_logits = _pointwise_loss(
    "binary_cross_entropy_with_logits",
    "BinaryCrossEntropyWithLogitsBackward0",
    _np_bce_logits,
    _d_bce_logits,
)


def _logits_target_error(input: Tensor, target: Tensor) -> None:
    # torch computes (1 - target) * input ... into a result of target's dtype
    if target.dtype is ember.bool:
        raise RuntimeError(
            "Subtraction, the `-` operator, with two bool tensors is not supported. "
            "Use the `^` or `logical_xor()` operator instead."
        )
    dt = result_dtype((input, target))
    if dt is not target.dtype and not target.dtype.is_complex:
        raise RuntimeError(
            f"result type {_type_name(dt)} can't be cast to the desired output type "
            f"{_type_name(target.dtype)}"
        )


def binary_cross_entropy_with_logits(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    size_average=None,
    reduce=None,
    reduction: str = "mean",
    pos_weight: Tensor | None = None,
) -> Tensor:
    """Return the binary cross entropy of ``sigmoid(input)`` and ``target``, computed stably."""
    reduction = _reduction(size_average, reduce, reduction)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(
            f"Target size ({target.shape}) must be the same as input size ({input.shape})"
        )
    if not target.dtype.is_floating_point:
        _logits_target_error(input, target)
    if not input.dtype.is_floating_point:
        raise NotImplementedError(
            f"\"log_sigmoid_cpu\" not implemented for '{_type_name(input.dtype)}'"
        )
    params = {"reduction": reduction}
    dt = input._data.dtype
    if weight is not None:
        params["weight"] = np.broadcast_to(weight._data, input.shape).astype(dt)
    if pos_weight is not None:
        params["pos_weight"] = np.broadcast_to(pos_weight._data, input.shape).astype(dt)
    return dispatch(_bce_logits, (input, target), params)


# ------------------------------------------------------------------------------ nll, cross entropy


def _nll_parts(x, t, weight, ignore_index):
    """Return (picked log-probabilities, per-element weights, safe targets) of an nll loss."""
    xc = np.moveaxis(x, 1, -1) if x.ndim >= 2 else x
    c = x.shape[1] if x.ndim >= 2 else x.shape[0]
    valid = t != ignore_index
    bad = valid & ((t < 0) | (t >= c))
    if np.any(bad):
        raise IndexError(f"Target {int(t[bad].flat[0])} is out of bounds.")
    safe = np.where(valid, t, 0)
    picked = np.take_along_axis(xc, safe[..., None], axis=-1)[..., 0]
    w = weight[safe] if weight is not None else np.ones(safe.shape, x.dtype)
    w = np.where(valid, w, 0).astype(x.dtype)
    return picked, w, safe


def _nll_common_case(x, t, weight, ignore_index) -> bool:
    """True for a batch of class scores (N, C), no class weights, and targets that cannot be
    ``ignore_index`` and are in range: the case with a shortcut (a few NumPy calls)."""
    return (
        x.ndim == 2
        and weight is None
        and t.size
        and (ignore_index < 0 or ignore_index >= x.shape[1])
        and 0 <= t.min()
        and t.max() < x.shape[1]
    )


def _nll_forward(x, t, reduction="mean", weight=None, ignore_index=-100):
    if _nll_common_case(x, t, weight, ignore_index):
        loss = -x[np.arange(len(t)), t]
        if reduction == "none":
            return loss
        total = loss.sum(dtype=x.dtype)
        return np.asarray(total if reduction == "sum" else total / x.dtype.type(len(t)))
    picked, w, _ = _nll_parts(x, t, weight, ignore_index)
    loss = -picked * w
    if reduction == "none":
        return loss
    if reduction == "sum":
        return np.asarray(loss.sum(dtype=x.dtype))
    return np.asarray(loss.sum(dtype=x.dtype) / w.sum(dtype=x.dtype))


def _nll_backward(ctx, g, reduction="mean", weight=None, ignore_index=-100):
    x, t = ctx.saved_tensors
    if not ctx.needs_input_grad[0]:
        return None, None
    xa, ta = x._data, t._data
    _, w, safe = _nll_parts(xa, ta, weight, ignore_index)
    if reduction == "mean":
        w = w / w.sum(dtype=xa.dtype)
    coef = np.zeros(xa.shape[:1] + xa.shape[2:] + xa.shape[1:2] if xa.ndim >= 2 else xa.shape)
    coef = coef.astype(xa.dtype)
    np.put_along_axis(coef, safe[..., None], -w[..., None], axis=-1)
    if xa.ndim >= 2:
        coef = np.moveaxis(coef, -1, 1)
    if reduction == "none" and xa.ndim >= 2:
        g = g.unsqueeze(1)
    return g * _wrap(np.ascontiguousarray(coef)), None


def _nll_array_backward(ctx, g, reduction="mean", weight=None, ignore_index=-100):
    if not ctx.needs_input_grad[0]:
        return None, None
    x, t = ctx.saved_arrays
    if not _nll_common_case(x, t, weight, ignore_index):
        return tuple(
            None if r is None else r._data
            for r in _nll_backward(ctx, _wrap(g), reduction, weight, ignore_index)
        )
    n = len(t)
    out = np.zeros_like(x)
    rows = np.arange(n)
    if reduction == "none":
        out[rows, t] = -g
    else:
        out[rows, t] = -g / n if reduction == "mean" else -g
    return out, None


_NLL_ARGS = ("self", "target")
_nll = op("nll_loss", grad_fn="NllLossBackward0", args=_NLL_ARGS, save=_NLL_ARGS)(_nll_forward)
_nll.backward(_nll_backward)
_nll.array_backward(_nll_array_backward)
_nll2d = op("nll_loss2d", grad_fn="NllLoss2DBackward0", args=_NLL_ARGS, save=_NLL_ARGS)(
    _nll_forward
)
_nll2d.backward(_nll_backward)


def nll_loss(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    size_average=None,
    ignore_index: int = -100,
    reduce=None,
    reduction: str = "mean",
) -> Tensor:
    """Return the negative log likelihood loss of log-probabilities ``input`` (class dim 1)."""
    reduction = _reduction(size_average, reduce, reduction)
    nd = input.dim()
    if nd < 1:
        raise ValueError(f"Expected 1 or more dimensions (got {nd})")
    _check_nll_shapes(input, target, nd)
    if target.dtype is not ember.int64 and target.dtype is not ember.uint8:
        raise RuntimeError(
            "expected target dtype to be Long or Byte, but got " + _scalar_name(target)
        )
    c = input.shape[1] if nd >= 2 else input.shape[0]
    if nd == 1 and target.dim() == 1:
        if target.shape[0] != 1:
            raise ValueError(
                f"For 1D input, 1D target must have size 1, but got target size: {target.shape[0]}"
            )
        target = target.reshape(())  # torch reads a 1-element target of one sample as 0-d
    params = {"reduction": reduction, "ignore_index": ignore_index}
    if weight is not None:
        if weight.numel() != c:
            if nd > 2:
                raise RuntimeError("weight tensor should be defined either for all or no classes")
            raise RuntimeError(
                f"weight tensor should be defined either for all {c} classes or no classes but "
                f"got weight tensor of shape: {list(weight.shape)}"
            )
        params["weight"] = weight._data.astype(input._data.dtype)
    if nd == 4 and tuple(target.shape[1:]) != tuple(input.shape[2:]):
        raise RuntimeError(
            f"size mismatch (got input: {list(input.shape)} , target: {list(target.shape)}"
        )
    if nd <= 2:
        return dispatch(_nll, (input, target), params)
    if nd == 4:
        return dispatch(_nll2d, (input, target), params)
    n = input.shape[0]
    out = dispatch(_nll2d, (input.reshape(n, c, 1, -1), target.reshape(n, 1, -1)), params)
    return out.view(target.shape) if reduction == "none" else out


def _check_nll_shapes(input: Tensor, target: Tensor, nd: int) -> None:
    """torch's first shape checks of nll_loss (before the dtype check), in its order."""
    ts = tuple(target.shape)
    if nd != 1 and (not ts or input.shape[0] != ts[0]):
        raise ValueError(
            f"Expected input batch_size ({input.shape[0]}) to match target batch_size "
            f"({ts[0] if ts else 0})."
        )
    if nd <= 2:
        if len(ts) > 1:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    elif nd == 4:
        if len(ts) != 3:
            raise RuntimeError(
                "only batches of spatial targets supported (3D tensors) but got targets of "
                f"dimension: {len(ts)}"
            )
    elif ts[1:] != tuple(input.shape[2:]):
        raise RuntimeError(
            f"Expected target size {[input.shape[0], *input.shape[2:]]}, got {list(ts)}"
        )


def _scalar_name(t: Tensor) -> str:
    from ember._ops.registry import _type_name

    return _type_name(t.dtype)


def cross_entropy(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    size_average=None,
    ignore_index: int = -100,
    reduce=None,
    reduction: str = "mean",
    label_smoothing: float = 0.0,
) -> Tensor:
    """Return the cross entropy of logits ``input`` and class indices or probabilities."""
    for pos, (arg, t) in enumerate((("input", input), ("target", target)), 1):
        if not isinstance(t, Tensor):
            raise TypeError(
                f"cross_entropy_loss(): argument '{arg}' (position {pos}) must be Tensor, not "
                f"{_qualname(t)}"
            )
    if AUTOCAST:
        input, target, weight = autocast_inputs("cross_entropy_loss", (input, target, weight))
    reduction = _reduction(size_average, reduce, reduction)
    if not 0.0 <= label_smoothing <= 1.0:
        raise RuntimeError(
            f"label_smoothing must be between 0.0 and 1.0. Got: {float(label_smoothing)}"
        )
    class_dim = 0 if input.dim() == 1 else 1
    logp = log_softmax(input, class_dim)
    c = input.shape[class_dim]
    wshape = [1] * input.dim()
    wshape[class_dim] = c
    if tuple(target.shape) == tuple(input.shape):  # class probabilities (torch's test)
        if not target.dtype.is_floating_point:
            raise RuntimeError(
                "Expected floating point type for target with class probabilities, got "
                + _scalar_name(target)
            )
        if ignore_index >= 0:
            raise RuntimeError("ignore_index is not supported for floating point target")
        if label_smoothing > 0:
            target = target * (1 - label_smoothing) + label_smoothing / c
        prod = logp * target
        if weight is not None:
            prod = prod * weight.view(wshape)
        if reduction == "mean":
            n = input.numel() // c if c else 0
            return dispatch(_div_scalar, (-prod.sum(),), {"other": n if n else float("nan")})
        if reduction == "sum":
            return -prod.sum()
        return -prod.sum(class_dim)
    nll = nll_loss(logp, target, weight, None, ignore_index, None, reduction)
    if label_smoothing == 0:
        return nll
    ignore = target == ignore_index
    if weight is not None:
        smooth = -(logp * weight.view(wshape)).sum(class_dim)
    else:
        smooth = -logp.sum(class_dim)
    smooth = ember.where(ignore, smooth.new_zeros(()), smooth)
    if reduction == "mean":
        if weight is not None:
            tw = weight._data[target._data[~ignore._data]].sum()
            ret = smooth.sum() / float(tw)
        else:
            ret = smooth.sum() / int((~ignore._data).sum())
    elif reduction == "sum":
        ret = smooth.sum()
    else:
        ret = smooth
    return (1 - label_smoothing) * nll + ret * (label_smoothing / c)


# ------------------------------------------------------------------------------ composites


def kl_div(
    input: Tensor,
    target: Tensor,
    size_average=None,
    reduce=None,
    reduction: str = "mean",
    log_target: bool = False,
) -> Tensor:
    """Return the Kullback-Leibler divergence of ``target`` from log-probabilities ``input``."""
    if AUTOCAST:
        input, target = autocast_inputs("kl_div", (input, target))
    if legacy_given(size_average, reduce):
        reduction = legacy_reduction(size_average, reduce)
    elif reduction == "mean":
        warnings.warn(
            "reduction: 'mean' divides the total loss by both the batch size and the support "
            "size.'batchmean' divides only by the batch size, and aligns with the KL div math "
            "definition.'mean' will be changed to behave the same as 'batchmean' in the next "
            "major release.",
            UserWarning,
            stacklevel=2,
        )
    if log_target:
        pointwise = target.exp() * (target - input)
    else:
        pointwise = ember.xlogy(target, target) - target * input
    if reduction == "batchmean":
        if input.dim() == 0:
            return pointwise.sum()
        return pointwise.sum() / input.shape[0]
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return _reduce(pointwise, reduction)


def poisson_nll_loss(
    input: Tensor,
    target: Tensor,
    log_input: bool = True,
    full: bool = False,
    size_average=None,
    eps: float = 1e-8,
    reduce=None,
    reduction: str = "mean",
) -> Tensor:
    """Return the negative log likelihood of ``target`` under Poisson(``input``)."""
    if AUTOCAST:
        input, target = autocast_inputs("poisson_nll_loss", (input, target))
    reduction = _reduction(size_average, reduce, reduction)
    if log_input:
        loss = input.exp() - target * input
    else:
        loss = input - target * (input + eps).log()
    if full:
        t = target
        stirling = t * t.log() - t + 0.5 * (2 * math.pi * t).log()
        loss = loss + ember.where(t <= 1, stirling.new_zeros(()), stirling)
    return _reduce(loss, reduction)


def gaussian_nll_loss(
    input: Tensor,
    target: Tensor,
    var: Tensor | float,
    full: bool = False,
    eps: float = 1e-6,
    reduction: str = "mean",
) -> Tensor:
    """Return the negative log likelihood of ``target`` under N(``input``, ``var``)."""
    if not isinstance(var, Tensor):
        var = ember.full(tuple(input.shape), float(var), dtype=input.dtype)
    if tuple(var.shape) != tuple(input.shape):
        if tuple(input.shape[:-1]) == tuple(var.shape):
            var = var.unsqueeze(-1)
        elif tuple(input.shape[:-1]) == tuple(var.shape[:-1]) and var.shape[-1] == 1:
            pass
        else:
            raise ValueError("var is of incorrect size")
    if reduction not in _REDUCTIONS:
        raise ValueError(reduction + " is not valid")
    if bool((var._data < 0).any()):
        raise ValueError("var has negative entry/entries")
    var = var.clone()
    with ember.no_grad():
        var.clamp_(min=eps)
    loss = 0.5 * (var.log() + (input - target) ** 2 / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


def multilabel_soft_margin_loss(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    size_average=None,
    reduce=None,
    reduction: str = "mean",
) -> Tensor:
    """Return the multi-label one-versus-all logistic loss."""
    reduction = _reduction(size_average, reduce, reduction)
    loss = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    loss = loss.sum(dim=input.dim() - 1) / input.shape[-1]
    return _reduce(loss, reduction)

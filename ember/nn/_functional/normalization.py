"""Normalization functions of ``ember.nn.functional``: batch_norm, instance_norm, layer_norm,
group_norm, rms_norm, normalize.

``batch_norm``, ``layer_norm`` and ``group_norm`` are single ops (torch's ``NativeBatchNorm``,
``NativeLayerNorm``, ``NativeGroupNorm`` nodes): a fused NumPy forward and an explicit backward
in ember ops (the usual closed form, which recomputes the statistics from the saved input so
that it is itself differentiable).
"""

from __future__ import annotations

import math

import numpy as np

import ember
from ember._core.tensor import Tensor, _wrap
from ember._ops.array_kernels import array_kernel
from ember._ops.copying import keep_layout_of
from ember._ops.registry import _type_name, dispatch, op

__all__ = [
    "batch_norm",
    "group_norm",
    "instance_norm",
    "layer_norm",
    "local_response_norm",
    "normalize",
    "rms_norm",
]


def _affine(y, w, b, shape):
    if w is not None:
        y = y * w.reshape(shape)
    if b is not None:
        y = y + b.reshape(shape)
    return y


def _norm_backward(g, x, w, axes, shape, eps):
    """Return (grad x, grad w-shaped-like-x-product, xhat) for normalisation over ``axes``."""
    mean = x.mean(axes, keepdim=True)
    xc = x - mean
    invstd = ((xc * xc).mean(axes, keepdim=True) + eps).rsqrt()
    xhat = xc * invstd
    gxhat = g * w.reshape(shape) if w is not None else g
    gx = invstd * (
        gxhat - gxhat.mean(axes, keepdim=True) - xhat * (gxhat * xhat).mean(axes, keepdim=True)
    )
    return gx, xhat


# ------------------------------------------------------------------------------ batch norm


@op(
    "native_batch_norm",
    grad_fn="NativeBatchNormBackward0",
    args=("input", "weight"),
    save=("input", "weight"),
)
def _batch_norm(x, w, b, mean, invstd, training, eps):
    # torch's CPU kernel: per channel alpha = invstd * w, beta = b - mean * alpha, then one
    # multiply-add over the input (two passes instead of four)
    shape = (1, -1) + (1,) * (x.ndim - 2)
    alpha = invstd if w is None else invstd * w
    beta = -mean * alpha if b is None else b - mean * alpha
    y = np.multiply(x, alpha.astype(x.dtype, copy=False).reshape(shape))
    y += beta.astype(x.dtype, copy=False).reshape(shape)
    return y


@_batch_norm.backward
def _(ctx, g, mean, invstd, training, eps):
    x, w = ctx.saved_tensors
    nd = x.dim()
    axes = (0,) + tuple(range(2, nd))
    shape = (1, -1) + (1,) * (nd - 2)
    if training:
        gx, xhat = _norm_backward(g, x, w, axes, shape, eps)
    else:
        # (wrapped before reshaping: a capture sees the statistics kernel's own arrays)
        inv = _wrap(invstd).reshape(shape)
        xhat = (x - _wrap(mean).reshape(shape)) * inv
        gx = g * (w.reshape(shape) * inv if w is not None else inv)
    need = ctx.needs_input_grad
    gw = (g * xhat).sum(axes) if need[1] else None
    gb = g.sum(axes) if need[2] else None
    return (gx if need[0] else None), gw, gb


def _batch_stats(x: np.ndarray):
    axes = (0,) + tuple(range(2, x.ndim))
    acc = np.float64 if x.dtype == np.float64 else np.float32
    mean = x.mean(axis=axes, dtype=acc)
    var = np.square(x - mean.reshape((1, -1) + (1,) * (x.ndim - 2))).mean(axis=axes, dtype=acc)
    return mean, var, x.size // max(x.shape[1], 1)


def _ema(buf: np.ndarray, value: np.ndarray, momentum: float) -> None:
    buf *= buf.dtype.type(1 - momentum)
    buf += (value * momentum).astype(buf.dtype)


def _check_mixed_dtype(input: Tensor, *params) -> None:
    """torch's CPU rule: parameters share the input's dtype (or are float32 for a bfloat16 /
    float16 input)."""
    dt = input.dtype
    for p in params:
        if p is not None and p.dtype is not dt:
            if dt is not ember.bfloat16 and dt is not ember.float16:
                raise RuntimeError("mixed dtype (CPU): all inputs must share same datatype.")
            if p.dtype is not ember.float32:
                raise RuntimeError(
                    "mixed dtype (CPU): expect parameter to have scalar type of Float"
                )


def _check_float_kernel(kernel: str, input: Tensor) -> None:
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{_type_name(input.dtype)}'")


def _check_bn_args(input: Tensor, running_mean, running_var, weight, bias) -> None:
    c = input.shape[1]
    for name, t in (
        ("running_mean", running_mean),
        ("running_var", running_var),
        ("weight", weight),
        ("bias", bias),
    ):
        if t is not None and t.numel() != c:
            raise RuntimeError(f"{name} should contain {c} elements not {t.numel()}")
    _check_float_kernel("batch_norm", input)
    _check_mixed_dtype(input, weight, bias, running_mean, running_var)


def batch_norm(
    input: Tensor,
    running_mean: Tensor | None,
    running_var: Tensor | None,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    training: bool = False,
    momentum: float = 0.1,
    eps: float = 1e-5,
) -> Tensor:
    """Normalise each channel (dim 1) by the batch statistics (training) or the running ones;
    in training, update the running statistics in place with ``momentum``."""
    x = input._data
    if input.dim() < 2:
        raise ValueError(f"expected 2D or 3D input (got {input.dim()}D input)")
    _check_bn_args(input, running_mean, running_var, weight, bias)
    if training:
        size = x.size // x.shape[1]
        if size == 1:
            raise ValueError(
                f"Expected more than 1 value per channel when training, got input size "
                f"{input.shape}"
            )
        mean, invstd = _train_stats(input, running_mean, running_var, momentum, eps)
    else:
        if running_mean is None or running_var is None:
            raise RuntimeError("running_mean and running_var must be defined in evaluation mode")
        mean, invstd = _eval_stats(input, running_mean, running_var, eps)
    params = {"mean": mean, "invstd": invstd, "training": training, "eps": eps}
    return dispatch(_batch_norm, (input, weight, bias), params)


# the statistics are computed on arrays, outside the op table: a compiled program records
# each as one kernel (the training one also updates the running statistics, as eager does)


@array_kernel(effects=True)
def _train_stats(x, running_mean, running_var, momentum, eps):
    mean, var, n = _batch_stats(x)
    # torch updates the running statistics inside its kernel: no version bump
    if running_mean is not None:
        _ema(running_mean, mean, momentum)
    if running_var is not None:
        _ema(running_var, var * (n / (n - 1)) if n > 1 else var, momentum)
    return _norm_params(x.dtype, mean, var, eps)


@array_kernel
def _eval_stats(x, running_mean, running_var, eps):
    return _norm_params(x.dtype, running_mean, running_var, eps)


def _norm_params(dt, mean, var, eps):
    invstd = 1.0 / np.sqrt(var + eps)
    return mean.astype(dt), invstd.astype(dt)


def instance_norm(
    input: Tensor,
    running_mean: Tensor | None = None,
    running_var: Tensor | None = None,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    use_input_stats: bool = True,
    momentum: float = 0.1,
    eps: float = 1e-5,
) -> Tensor:
    """Normalise each (sample, channel) plane by its own statistics."""
    shape = tuple(input.shape)
    n, c = shape[0], shape[1]
    if use_input_stats and math.prod(shape[2:]) == 1:
        raise ValueError(
            f"Expected more than 1 spatial element when training, got input size {input.shape}"
        )
    x = input.reshape((1, n * c) + shape[2:])
    rm = _wrap(np.tile(running_mean._data, n)) if running_mean is not None else None
    rv = _wrap(np.tile(running_var._data, n)) if running_var is not None else None
    w = ember.cat([weight] * n) if weight is not None else None
    b = ember.cat([bias] * n) if bias is not None else None
    out = batch_norm(x, rm, rv, w, b, use_input_stats, momentum, eps)
    if use_input_stats:
        with ember.no_grad():
            if running_mean is not None:
                running_mean.copy_(rm.view(n, c).mean(0))
            if running_var is not None:
                running_var.copy_(rv.view(n, c).mean(0))
    return out.view(shape)


# ------------------------------------------------------------------------------ layer norm


@op(
    "native_layer_norm",
    grad_fn="NativeLayerNormBackward0",
    args=("input", "weight"),
    save=("input", "weight"),
)
def _layer_norm(x, w, b, k, eps):
    axes = tuple(range(x.ndim - k, x.ndim))
    acc = np.float64 if x.dtype == np.float64 else np.float32
    mean = x.mean(axis=axes, keepdims=True, dtype=acc)
    xc = x - mean
    var = np.square(xc).mean(axis=axes, keepdims=True)
    y = xc / np.sqrt(var + eps)
    if w is not None:
        y *= w
    if b is not None:
        y += b
    return y.astype(x.dtype, copy=False)


@_layer_norm.backward
def _(ctx, g, k, eps):
    x, w = ctx.saved_tensors
    nd = x.dim()
    axes = tuple(range(nd - k, nd))
    gx, xhat = _norm_backward(g, x, w, axes, tuple(x.shape[nd - k :]), eps)
    need = ctx.needs_input_grad
    # the engine sums the broadcast products back to the weight's shape
    return (gx if need[0] else None), (g * xhat if need[1] else None), (g if need[2] else None)


@_layer_norm.array_backward
def _(ctx, g, k, eps):
    x, w = ctx.saved_arrays
    axes = tuple(range(x.ndim - k, x.ndim))
    acc = np.float64 if x.dtype == np.float64 else np.float32
    xhat = x - x.mean(axis=axes, keepdims=True, dtype=acc)
    invstd = np.square(xhat).mean(axis=axes, keepdims=True)
    invstd += eps
    np.sqrt(invstd, out=invstd)
    np.reciprocal(invstd, out=invstd)
    xhat *= invstd
    need = ctx.needs_input_grad
    gx = None
    if need[0]:
        gxhat = g * w if w is not None else g
        gx = gxhat - gxhat.mean(axis=axes, keepdims=True)
        gxhat = gxhat * xhat
        gx -= xhat * gxhat.mean(axis=axes, keepdims=True)
        gx *= invstd
    gw = g * xhat if need[1] else None
    return (
        None if gx is None else gx.astype(x.dtype, copy=False),
        None if gw is None else gw.astype(x.dtype, copy=False),
        g if need[2] else None,
    )


def _check_normalized_shape(input: Tensor, normalized_shape, weight) -> tuple:
    ns = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    k = len(ns)
    if k == 0 or tuple(input.shape[input.dim() - k :]) != ns or input.dim() < k:
        raise RuntimeError(
            f"Given normalized_shape={list(ns)}, expected input with shape [*, "
            f"{', '.join(str(s) for s in ns)}], but got input of size{list(input.shape)}"
        )
    if weight is not None and tuple(weight.shape) != ns:
        raise RuntimeError(
            f"Expected weight to be of same shape as normalized_shape, but got weight of shape "
            f"{list(weight.shape)} and normalized_shape = {list(ns)}"
        )
    return ns


def layer_norm(
    input: Tensor,
    normalized_shape,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    eps: float = 1e-5,
) -> Tensor:
    """Normalise over the last ``len(normalized_shape)`` dims, then scale and shift."""
    _check_mixed_dtype(input, weight, bias)
    ns = _check_normalized_shape(input, normalized_shape, weight)
    _check_float_kernel("LayerNormKernelImpl", input)
    return dispatch(_layer_norm, (input, weight, bias), {"k": len(ns), "eps": eps})


def rms_norm(
    input: Tensor,
    normalized_shape,
    weight: Tensor | None = None,
    eps: float | None = None,
) -> Tensor:
    """Divide by the root mean square over the last dims, then scale by ``weight``."""
    ns = _check_normalized_shape(input, normalized_shape, weight)
    if eps is None:
        eps = ember.finfo(input.dtype).eps
    dims = tuple(range(input.dim() - len(ns), input.dim()))
    y = input * (input.pow(2).mean(dims, keepdim=True) + eps).rsqrt()
    return y * weight if weight is not None else y


# ------------------------------------------------------------------------------ group norm


@op(
    "native_group_norm",
    grad_fn="NativeGroupNormBackward0",
    args=("input", "weight"),
    save=("input", "weight"),
)
def _group_norm(x, w, b, groups, eps):
    n, c = x.shape[:2]
    xg = x.reshape(n, groups, -1)
    acc = np.float64 if x.dtype == np.float64 else np.float32
    mean = xg.mean(axis=2, keepdims=True, dtype=acc)
    xc = xg - mean
    var = np.square(xc).mean(axis=2, keepdims=True)
    y = (xc / np.sqrt(var + eps)).reshape(x.shape)
    shape = (1, c) + (1,) * (x.ndim - 2)
    if w is not None:
        y *= w.reshape(shape)
    if b is not None:
        y += b.reshape(shape)
    return keep_layout_of(y.astype(x.dtype, copy=False), x)


@_group_norm.backward
def _(ctx, g, groups, eps):
    x, w = ctx.saved_tensors
    n, c = x.shape[:2]
    nd = x.dim()
    shape = (1, c) + (1,) * (nd - 2)
    gxhat = g * w.reshape(shape) if w is not None else g
    gx, xhat = _norm_backward(
        gxhat.reshape(n, groups, -1), x.reshape(n, groups, -1), None, (2,), None, eps
    )
    xhat = xhat.reshape(x.shape)
    axes = (0,) + tuple(range(2, nd))
    need = ctx.needs_input_grad
    gw = (g * xhat).sum(axes) if need[1] else None
    gb = g.sum(axes) if need[2] else None
    return (gx.reshape(x.shape) if need[0] else None), gw, gb


def group_norm(
    input: Tensor,
    num_groups: int,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    eps: float = 1e-5,
) -> Tensor:
    """Normalise over groups of channels, then scale and shift per channel."""
    if input.dim() < 2:
        raise RuntimeError(
            f"Expected at least 2 dimensions for input tensor but received {input.dim()}"
        )
    c = input.shape[1]
    if c % num_groups:
        raise RuntimeError(
            f"Expected number of channels in input to be divisible by num_groups, but got input "
            f"of shape {list(input.shape)} and num_groups={num_groups}"
        )
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and (t.dim() != 1 or t.numel() != c):
            raise RuntimeError(
                f"Expected {name} to be a vector of size equal to the number of channels in "
                f"input, but got {name} of shape {list(t.shape)} and input of shape "
                f"{list(input.shape)}"
            )
    _check_mixed_dtype(input, weight, bias)
    _check_float_kernel("GroupNormKernelImpl", input)
    return dispatch(_group_norm, (input, weight, bias), {"groups": num_groups, "eps": eps})


# ------------------------------------------------------------------------------ normalize


def normalize(
    input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12, out: Tensor | None = None
) -> Tensor:
    """Return ``input / max(||input||_p, eps)`` along ``dim``."""
    # the norm keeps ``dim`` (size 1) and broadcasts back over it
    denom = input.norm(p, dim, keepdim=True).clamp_min(eps)
    if out is None:
        return input / denom
    return ember.div(input, denom, out=out)


def local_response_norm(
    input: Tensor, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0
) -> Tensor:
    """Divide by ``(k + alpha * mean of squares over size neighbouring channels) ** beta``."""
    from ember.nn._functional.misc import pad

    dim = input.dim()
    if dim < 3:
        # torch's message keeps the indentation of its source line break
        raise ValueError(
            "Expected 3D or higher dimensionality" + " " * 26 + f"input (got {dim} dimensions)"
        )
    if input.numel() == 0:
        return input
    c = input.shape[1]
    sq = (input * input).movedim(1, -1)
    padded = pad(sq, (size // 2, (size - 1) // 2))
    div = padded[..., 0:c]
    for s in range(1, size):  # a sum over the window, one slice per offset
        div = div + padded[..., s : s + c]
    div = (div / size).movedim(-1, 1)
    return input / (div * alpha + k).pow(beta)

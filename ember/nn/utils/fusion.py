"""Fold an eval-mode BatchNorm into the preceding Conv or Linear layer."""

from __future__ import annotations

import copy

import ember
from ember._core.tensor import Tensor
from ember.nn.parameter import Parameter

__all__ = [
    "fuse_conv_bn_eval",
    "fuse_conv_bn_weights",
    "fuse_linear_bn_eval",
    "fuse_linear_bn_weights",
]


def _require_eval(layer, bn) -> None:
    if layer.training or bn.training:
        raise AssertionError("Fusion only for eval!")


def _folded_copy(layer, bn, fold, **options):
    """A copy of ``layer`` whose weight and bias are ``fold(...)`` of its own and ``bn``'s
    running statistics and affine parameters (the layer itself is untouched)."""
    fused = copy.deepcopy(layer)
    if bn.running_mean is None or bn.running_var is None:
        raise AssertionError("bn.running_mean and bn.running_var must not be None")
    stats = (bn.running_mean, bn.running_var, bn.eps, bn.weight, bn.bias)
    fused.weight, fused.bias = fold(fused.weight, fused.bias, *stats, **options)
    return fused


def _as_parameters(weight, bias, like_w, like_b) -> tuple[Parameter, Parameter]:
    # the fused tensors keep the original parameters' requires_grad
    return Parameter(weight, like_w.requires_grad), Parameter(bias, like_b.requires_grad)


def fuse_conv_bn_eval(conv, bn, transpose: bool = False):
    """Return a copy of ``conv`` with ``bn`` (eval mode) folded into its weight and bias."""
    _require_eval(conv, bn)
    return _folded_copy(conv, bn, fuse_conv_bn_weights, transpose=transpose)


def fuse_conv_bn_weights(
    conv_w: Tensor,
    conv_b: Tensor | None,
    bn_rm: Tensor,
    bn_rv: Tensor,
    bn_eps: float,
    bn_w: Tensor | None,
    bn_b: Tensor | None,
    transpose: bool = False,
) -> tuple[Parameter, Parameter]:
    """Return the (weight, bias) Parameters of a conv followed by an eval BatchNorm."""
    # BN(conv(x)) = gamma * (conv(x) - mean) / sqrt(var + eps) + beta: each output channel's
    # filter scales by gamma / sqrt(var + eps), its bias maps as the input would
    w_dtype = conv_w.dtype
    b_dtype = w_dtype if conv_b is None else conv_b.dtype
    conv_b = ember.zeros_like(bn_rm) if conv_b is None else conv_b
    bn_w = ember.ones_like(bn_rm) if bn_w is None else bn_w
    bn_b = ember.zeros_like(bn_rm) if bn_b is None else bn_b
    inv_std = ember.rsqrt(bn_rv + bn_eps)
    # output channels are dim 0 of a convolution's weight, dim 1 of a transposed one's
    per_channel = [1] * conv_w.dim()
    per_channel[1 if transpose else 0] = -1
    weight = (conv_w * (bn_w * inv_std).reshape(per_channel)).to(dtype=w_dtype)
    bias = ((conv_b - bn_rm) * inv_std * bn_w + bn_b).to(dtype=b_dtype)
    return _as_parameters(weight, bias, conv_w, conv_b)


def fuse_linear_bn_eval(linear, bn):
    """Return a copy of ``linear`` with ``bn`` (eval mode) folded into its weight and bias."""
    _require_eval(linear, bn)
    if bn.num_features not in (1, linear.out_features):
        raise AssertionError(
            "To fuse, linear.out_features == bn.num_features or bn.num_features == 1, "
            f"got linear.out_features={linear.out_features} and bn.num_features="
            f"{bn.num_features}"
        )
    return _folded_copy(linear, bn, fuse_linear_bn_weights)


def fuse_linear_bn_weights(
    linear_w: Tensor,
    linear_b: Tensor | None,
    bn_rm: Tensor,
    bn_rv: Tensor,
    bn_eps: float,
    bn_w: Tensor,
    bn_b: Tensor,
) -> tuple[Parameter, Parameter]:
    """Return the (weight, bias) Parameters of a Linear followed by an eval BatchNorm."""
    # as for a convolution, with the scale folded into one factor first (torch's rounding)
    w_dtype = linear_w.dtype
    b_dtype = w_dtype if linear_b is None else linear_b.dtype
    linear_b = ember.zeros_like(bn_rm) if linear_b is None else linear_b
    scale = bn_w * ember.rsqrt(bn_rv + bn_eps)
    weight = linear_w * scale.unsqueeze(-1).to(dtype=w_dtype)
    bias = ((linear_b - bn_rm) * scale + bn_b).to(dtype=b_dtype)
    return _as_parameters(weight, bias, linear_w, linear_b)

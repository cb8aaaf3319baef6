"""torch-level functions that user code calls directly: ``torch.conv2d``, ``torch.dropout``,
``torch.relu_``, ``torch.isin``, ``torch.cdist``, ``torch.compile``...

Most are aliases with torch's top-level (ATen) signatures over ``ember.nn.functional`` (losses
take ``reduction`` as an int there: 0 none, 1 mean, 2 sum) or compositions of ember ops, so
autograd and grad_fn names come from the ops they call. ``nn`` sits above ``_ops``: it is
imported on first call, never at import time.
"""

from __future__ import annotations

import warnings

import numpy as np

from ember._core import dtype as D
from ember._core.tensor import Tensor
from ember._ops.registry import API, dispatch, op, publish

_REDUCTION = {0: "none", 1: "mean", 2: "sum"}


def _F():
    from ember.nn import functional

    return functional


def _reduction(reduction) -> str:
    return _REDUCTION[int(reduction)]


def _ember():
    import ember

    return ember


# --- convolutions, pooling ----------------------------------------------------------------------


def _conv(name):
    def fn(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0,
           dilation=1, groups: int = 1) -> Tensor:  # fmt: skip
        return getattr(_F(), name)(input, weight, bias, stride, padding, dilation, groups)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Return the {name[-2:]} convolution of ``input`` (see ``nn.functional.{name}``)."
    return fn


def _conv_transpose(name):
    def fn(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0,
           output_padding=0, groups: int = 1, dilation=1) -> Tensor:  # fmt: skip
        return getattr(_F(), name)(
            input, weight, bias, stride, padding, output_padding, groups, dilation
        )

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Return the transposed convolution of ``input`` (``nn.functional.{name}``)."
    return fn


for _name in ("conv1d", "conv2d", "conv3d"):
    publish(None, _conv(_name), method=False)
for _name in ("conv_transpose1d", "conv_transpose2d", "conv_transpose3d"):
    publish(None, _conv_transpose(_name), method=False)


def _max_pool(name):
    def fn(input: Tensor, kernel_size, stride=(), padding=0, dilation=1,
           ceil_mode: bool = False) -> Tensor:  # fmt: skip
        # ATen's empty ``stride`` means "the kernel size"
        stride = None if stride is None or (not isinstance(stride, int) and not stride) else stride
        return getattr(_F(), name)(input, kernel_size, stride, padding, dilation, ceil_mode)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Return the max pooling of ``input`` (``nn.functional.{name}``)."
    return fn


for _name in ("max_pool1d", "max_pool2d", "max_pool3d"):
    publish(None, _max_pool(_name), method=False)


def max_pool1d_with_indices(input: Tensor, kernel_size, stride=(), padding=0, dilation=1,
                            ceil_mode: bool = False) -> tuple:  # fmt: skip
    """Return ``(output, indices)`` of a 1-d max pooling."""
    stride = None if stride is None or (not isinstance(stride, int) and not stride) else stride
    return _F().max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def avg_pool1d(input: Tensor, kernel_size, stride=(), padding=0, ceil_mode: bool = False,
               count_include_pad: bool = True) -> Tensor:  # fmt: skip
    """Return the 1-d average pooling of ``input``."""
    stride = None if stride is None or (not isinstance(stride, int) and not stride) else stride
    return _F().avg_pool1d(input, kernel_size, stride, padding, ceil_mode, count_include_pad)


def adaptive_avg_pool1d(input: Tensor, output_size) -> Tensor:
    """Return the 1-d adaptive average pooling of ``input``."""
    return _F().adaptive_avg_pool1d(input, output_size)


def adaptive_max_pool1d(input: Tensor, output_size) -> tuple:
    """Return ``(output, indices)`` of the 1-d adaptive max pooling of ``input``."""
    return _F().adaptive_max_pool1d(input, output_size, True)


for _fn in (max_pool1d_with_indices, avg_pool1d, adaptive_avg_pool1d, adaptive_max_pool1d):
    publish(None, _fn, method=False)


# --- normalisation ------------------------------------------------------------------------------


def batch_norm(input: Tensor, weight, bias, running_mean, running_var, training: bool,
               momentum: float, eps: float, cudnn_enabled: bool) -> Tensor:  # fmt: skip
    """Return batch normalisation of ``input`` (ATen's argument order)."""
    return _F().batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)


def instance_norm(input: Tensor, weight, bias, running_mean, running_var, use_input_stats: bool,
                  momentum: float, eps: float, cudnn_enabled: bool) -> Tensor:  # fmt: skip
    """Return instance normalisation of ``input`` (ATen's argument order)."""
    return _F().instance_norm(
        input, running_mean, running_var, weight, bias, use_input_stats, momentum, eps
    )


def layer_norm(input: Tensor, normalized_shape, weight: Tensor | None = None,
               bias: Tensor | None = None, eps: float = 1e-05,
               cudnn_enable: bool = True) -> Tensor:  # fmt: skip
    """Return layer normalisation of ``input`` over its last ``normalized_shape`` dims."""
    return _F().layer_norm(input, normalized_shape, weight, bias, eps)


def group_norm(input: Tensor, num_groups: int, weight: Tensor | None = None,
               bias: Tensor | None = None, eps: float = 1e-05,
               cudnn_enabled: bool = True) -> Tensor:  # fmt: skip
    """Return group normalisation of ``input``."""
    return _F().group_norm(input, num_groups, weight, bias, eps)


def rms_norm(input: Tensor, normalized_shape, weight: Tensor | None = None,
             eps: float | None = None) -> Tensor:  # fmt: skip
    """Return RMS normalisation of ``input`` over its last ``normalized_shape`` dims."""
    return _F().rms_norm(input, normalized_shape, weight, eps)


for _fn in (batch_norm, instance_norm, layer_norm, group_norm, rms_norm):
    publish(None, _fn, method=False)


# --- dropout ------------------------------------------------------------------------------------


def _dropout(name, inplace):
    base = name.rstrip("_")
    feature, alpha = base.startswith("feature"), "alpha" in base

    def fn(input: Tensor, p: float, train: bool) -> Tensor:
        from ember.nn._functional.dropout import _dropout_impl

        if p < 0 or p > 1:  # ATen checks before nn.functional would (a ValueError there)
            raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {p}")
        if feature and train and input.dim() < 2:
            raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
        return _dropout_impl(input, p, train, inplace, feature=feature, alpha=alpha)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (
        f"Return ``input`` with {base} applied when ``train`` (``feature``: whole channels)."
        if not inplace
        else f"In-place version of :func:`{base}`; return ``input``."
    )
    return fn


for _name in ("dropout", "alpha_dropout", "feature_dropout", "feature_alpha_dropout"):
    publish(None, _dropout(_name, False), method=False)
    publish(None, _dropout(_name + "_", True), method=False)


# --- embeddings, vision -------------------------------------------------------------------------


def embedding(weight: Tensor, indices: Tensor, padding_idx: int = -1,
              scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:  # fmt: skip
    """Return the rows of ``weight`` at ``indices`` (ATen's order; ``padding_idx < 0``: none)."""
    return _F().embedding(
        indices,
        weight,
        padding_idx if padding_idx >= 0 else None,
        scale_grad_by_freq=scale_grad_by_freq,
        sparse=sparse,
    )


def pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:
    """Return ``input`` with channels rearranged into an ``upscale_factor`` larger image."""
    return _F().pixel_shuffle(input, upscale_factor)


def pixel_unshuffle(input: Tensor, downscale_factor: int) -> Tensor:
    """Return the inverse of :func:`pixel_shuffle`."""
    return _F().pixel_unshuffle(input, downscale_factor)


def channel_shuffle(input: Tensor, groups: int) -> Tensor:
    """Return ``input`` with its channels shuffled across ``groups``."""
    return _F().channel_shuffle(input, groups)


for _fn in (embedding, pixel_shuffle, pixel_unshuffle, channel_shuffle):
    publish(None, _fn, method=False)


# --- distances ----------------------------------------------------------------------------------


def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-08) -> Tensor:
    """Return the cosine similarity of ``x1`` and ``x2`` along ``dim``."""
    return _F().cosine_similarity(x1, x2, dim, eps)


def pairwise_distance(x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-06,
                      keepdim: bool = False) -> Tensor:  # fmt: skip
    """Return the ``p``-norm of ``x1 - x2 + eps`` along the last dim."""
    return _F().pairwise_distance(x1, x2, p, eps, keepdim)


def pdist(input: Tensor, p: float = 2.0) -> Tensor:
    """Return the ``p``-norm distances between the rows of ``input`` (upper triangle)."""
    return _F().pdist(input, p)


_CDIST_MODES = {
    "use_mm_for_euclid_dist_if_necessary": 0,
    "use_mm_for_euclid_dist": 1,
    "donot_use_mm_for_euclid_dist": 2,
}


def _pairwise_diff(x1, x2):
    # (..., P, M), (..., R, M) -> (..., P, R, M)
    return x1[..., :, None, :] - x2[..., None, :, :]


@op("cdist", grad_fn="CdistBackward0", args=("x1", "x2"), save=("x1", "x2", "result"))
def _cdist(x1, x2, p):
    d = np.abs(_pairwise_diff(x1, x2))
    if p == 0:
        out = np.count_nonzero(d, axis=-1).astype(x1.dtype)
    elif p == 1:
        out = d.sum(-1)
    elif p == 2:
        out = np.sqrt(np.einsum("...m,...m->...", d, d))
    elif p == np.inf:
        out = d.max(-1, initial=0)
    else:
        out = (d**p).sum(-1) ** (1.0 / p)
    return out.astype(x1.dtype, copy=False)


@_cdist.backward
def _(ctx, g, p):
    x1, x2, dist = ctx.saved_tensors
    diff = x1[..., :, None, :] - x2[..., None, :, :]
    g, dist = g[..., None], dist[..., None]
    if p == 0 or diff.numel() == 0:
        gd = diff * 0
    elif p == 1:
        gd = g * diff.sign()
    elif p == 2:
        gd = (g * diff / dist).masked_fill(dist == 0, 0)
    elif p == np.inf:
        gd = g * diff.sign() * (diff.abs() == dist)
    else:
        gd = g * diff.sign() * diff.abs().pow(p - 1) / dist.pow(p - 1)
        gd = gd.masked_fill((dist == 0) | (diff == 0), 0)
    return (
        gd.sum(-2) if ctx.needs_input_grad[0] else None,
        -gd.sum(-3) if ctx.needs_input_grad[1] else None,
    )


def _euclidean_dist(x1: Tensor, x2: Tensor) -> Tensor:
    # ATen's _euclidean_dist: one matrix product of padded operands
    ember = _ember()
    x1_norm = x1.pow(2).sum(-1, keepdim=True)
    x2_norm = x2.pow(2).sum(-1, keepdim=True)
    x1_ = ember.cat([x1.mul(-2), x1_norm, ember.ones_like(x1_norm)], -1)
    x2_ = ember.cat([x2, ember.ones_like(x2_norm), x2_norm], -1)
    return x1_.matmul(x2_.mT).clamp_min_(0).sqrt_()


def cdist(x1: Tensor, x2: Tensor, p: float = 2.0,
          compute_mode: str = "use_mm_for_euclid_dist_if_necessary") -> Tensor:  # fmt: skip
    """Return the ``p``-norm distances between the rows of ``x1`` and of ``x2``.

    ``x1`` is ``(B..., P, M)``, ``x2`` ``(B..., R, M)`` (batch dims broadcast); the result is
    ``(B..., P, R)``. For ``p=2`` the ``compute_mode`` picks torch's matrix-product formula
    (faster, less exact) when ``P > 25`` or ``R > 25``, always, or never.
    """
    if compute_mode not in _CDIST_MODES:
        raise ValueError(f"{compute_mode} is not a valid value for compute_mode")
    mode = _CDIST_MODES[compute_mode]
    for name, t in (("X1", x1), ("X2", x2)):
        if t.dim() < 2:
            raise RuntimeError(f"cdist only supports at least 2D tensors, {name} got: {t.dim()}D")
    for name, t in (("X1", x1), ("X2", x2)):
        if not t.dtype.is_floating_point:
            raise RuntimeError(
                "cdist only supports floating-point dtypes, "
                f"{name} got: {D.scalar_type_name(t.dtype)}"
            )
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(
            f"X1 and X2 must have the same number of columns. X1: {x1.shape[-1]} X2: {x2.shape[-1]}"
        )
    if p < 0:
        raise RuntimeError("cdist only supports non-negative p values")
    ember = _ember()
    r1, r2 = x1.shape[-2], x2.shape[-2]
    if p == 2 and (mode == 1 or (mode == 0 and (r1 > 25 or r2 > 25))):
        batch = ember.broadcast_shapes(x1.shape[:-2], x2.shape[:-2])
        m = x1.shape[-1]
        a = x1.expand(*batch, r1, m).reshape(-1, r1, m)
        b = x2.expand(*batch, r2, m).reshape(-1, r2, m)
        return _euclidean_dist(a, b).view(*batch, r1, r2)
    return dispatch(_cdist, (x1, x2), {"p": float(p)})


publish(None, cdist, method=False)
for _fn in (cosine_similarity, pairwise_distance, pdist):
    publish(None, _fn, method=False)


# --- activations --------------------------------------------------------------------------------


def selu(input: Tensor) -> Tensor:
    """Return SELU of ``input``."""
    return _F().selu(input)


def selu_(input: Tensor) -> Tensor:
    """In-place version of :func:`selu`; return ``input``."""
    return _F().selu_(input)


def celu(input: Tensor, alpha: float = 1.0) -> Tensor:
    """Return CELU of ``input``."""
    return _F().celu(input, alpha)


def celu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    """In-place version of :func:`celu`; return ``input``."""
    return _F().celu_(input, alpha)


def rrelu(input: Tensor, lower: float = 0.125, upper: float = 1.0 / 3.0, training: bool = False,
          generator=None) -> Tensor:  # fmt: skip
    """Return randomized leaky ReLU of ``input`` (the mean slope unless ``training``)."""
    return _F().rrelu(input, lower, upper, training)


def rrelu_(input: Tensor, lower: float = 0.125, upper: float = 1.0 / 3.0, training: bool = False,
           generator=None) -> Tensor:  # fmt: skip
    """In-place version of :func:`rrelu`; return ``input``."""
    return _F().rrelu_(input, lower, upper, training)


def threshold(input: Tensor, threshold: float, value: float) -> Tensor:
    """Return ``input`` where it is above ``threshold``, else ``value``."""
    return _F().threshold(input, threshold, value)


def threshold_(input: Tensor, threshold: float, value: float) -> Tensor:
    """In-place version of :func:`threshold`; return ``input``."""
    return _F().threshold_(input, threshold, value)


def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """Return ``input`` where ``|input| > lambd``, else zero."""
    return _F().hardshrink(input, lambd)


def prelu(input: Tensor, weight: Tensor) -> Tensor:
    """Return PReLU of ``input`` with learnable slopes ``weight``."""
    return _F().prelu(input, weight)


for _fn in (selu, selu_, celu, celu_, rrelu, rrelu_, threshold, threshold_):
    publish(None, _fn, method=False)
publish(None, hardshrink)
publish(None, prelu)


# --- losses (ATen signatures: ``reduction`` is an int) ------------------------------------------


def bilinear(input1: Tensor, input2: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """Return ``input1^T A input2 + b``."""
    return _F().bilinear(input1, input2, weight, bias)


def kl_div(input: Tensor, target: Tensor, reduction: int = 1, *,
           log_target: bool = False) -> Tensor:  # fmt: skip
    """Return the Kullback-Leibler divergence loss (no 'batchmean' warning at this level)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "reduction: 'mean' divides", UserWarning)
        return _F().kl_div(input, target, reduction=_reduction(reduction), log_target=log_target)


def poisson_nll_loss(input: Tensor, target: Tensor, log_input: bool, full: bool, eps: float,
                     reduction: int) -> Tensor:  # fmt: skip
    """Return the Poisson negative log likelihood loss."""
    return _F().poisson_nll_loss(
        input, target, log_input, full, eps=eps, reduction=_reduction(reduction)
    )


def cosine_embedding_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0,
                          reduction: int = 1) -> Tensor:  # fmt: skip
    """Return the cosine embedding loss."""
    return _F().cosine_embedding_loss(
        input1, input2, target, margin, reduction=_reduction(reduction)
    )


def hinge_embedding_loss(input: Tensor, target: Tensor, margin: float = 1.0,
                         reduction: int = 1) -> Tensor:  # fmt: skip
    """Return the hinge embedding loss."""
    return _F().hinge_embedding_loss(input, target, margin, reduction=_reduction(reduction))


def margin_ranking_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0,
                        reduction: int = 1) -> Tensor:  # fmt: skip
    """Return the margin ranking loss."""
    return _F().margin_ranking_loss(input1, input2, target, margin, reduction=_reduction(reduction))


def triplet_margin_loss(anchor: Tensor, positive: Tensor, negative: Tensor, margin: float = 1.0,
                        p: float = 2.0, eps: float = 1e-06, swap: bool = False,
                        reduction: int = 1) -> Tensor:  # fmt: skip
    """Return the triplet margin loss."""
    return _F().triplet_margin_loss(
        anchor, positive, negative, margin, p, eps, swap, reduction=_reduction(reduction)
    )


def ctc_loss(log_probs: Tensor, targets: Tensor, input_lengths, target_lengths, blank: int = 0,
             reduction: int = 1, zero_infinity: bool = False) -> Tensor:  # fmt: skip
    """Return the connectionist temporal classification loss."""
    return _F().ctc_loss(
        log_probs, targets, input_lengths, target_lengths, blank, _reduction(reduction),
        zero_infinity,
    )  # fmt: skip


def binary_cross_entropy_with_logits(input: Tensor, target: Tensor, weight: Tensor | None = None,
                                     pos_weight: Tensor | None = None,
                                     reduction: int = 1) -> Tensor:  # fmt: skip
    """Return the binary cross entropy of ``sigmoid(input)`` against ``target``."""
    return _F().binary_cross_entropy_with_logits(
        input, target, weight, reduction=_reduction(reduction), pos_weight=pos_weight
    )


def constant_pad_nd(input: Tensor, pad, value=0) -> Tensor:
    """Return ``input`` padded with ``value`` (``pad`` as in ``nn.functional.pad``)."""
    pad = [int(p) for p in pad]
    if any(p < 0 for p in pad) and len(pad) <= 2 * input.dim():
        # negative padding crops: narrow first, then pad by the non-negative amounts
        index = [slice(None)] * input.dim()
        for i in range(len(pad) // 2):
            lo, hi = pad[2 * i], pad[2 * i + 1]
            index[-1 - i] = slice(max(-lo, 0), input.shape[-1 - i] - max(-hi, 0))
        input = input[tuple(index)]
        pad = [max(p, 0) for p in pad]
    return _F().pad(input, pad, "constant", value)


for _fn in (
    bilinear,
    kl_div,
    poisson_nll_loss,
    cosine_embedding_loss,
    hinge_embedding_loss,
    margin_ranking_loss,
    triplet_margin_loss,
    ctc_loss,
    binary_cross_entropy_with_logits,
    constant_pad_nd,
):
    publish(None, _fn, method=False)


# --- torch.X_(t, ...) is t.X_(...); torch.fill, torch.detach -----------------------------------

_INPLACE_FUNCTIONS = (
    "abs_ acos_ acosh_ addmv_ arccos_ arccosh_ arcsin_ arcsinh_ arctan_ arctanh_ as_strided_ "
    "asin_ asinh_ atan_ atanh_ ceil_ clamp_ clamp_max_ clamp_min_ clip_ cos_ cosh_ deg2rad_ "
    "detach_ erf_ erfc_ exp2_ exp_ expm1_ fill_ fix_ floor_ frac_ i0_ index_put_ ldexp_ log10_ "
    "log1p_ log2_ log_ logit_ nan_to_num_ neg_ negative_ rad2deg_ reciprocal_ relu_ resize_as_ "
    "round_ rsqrt_ sigmoid_ sin_ sinc_ sinh_ sqrt_ square_ tan_ tanh_ trunc_ xlogy_ zero_ gcd_ "
    "lcm_ conj_physical_"
).split()


def _inplace_function(name):
    def fn(input: Tensor, *args, **kwargs) -> Tensor:
        return getattr(input, name)(*args, **kwargs)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Return ``input.{name}(...)``: :meth:`Tensor.{name}` as a function."
    return fn


for _name in _INPLACE_FUNCTIONS:
    # only where the method exists and nothing else defines the function
    if hasattr(Tensor, _name) and _name not in API:
        publish(None, _inplace_function(_name), method=False)


@op("fill", grad_fn="FillBackward0")
def _fill_scalar(x, value):
    return np.full_like(x, value)


_fill_scalar.backward(lambda ctx, g, value: g.new_zeros(g.shape))


@op("fill", grad_fn="FillBackward1")
def _fill_tensor(x, value):
    return np.full_like(x, value)


@_fill_tensor.backward
def _(ctx, g):
    need = ctx.needs_input_grad
    return (g.new_zeros(g.shape) if need[0] else None), (g.sum() if need[1] else None)


def fill(input: Tensor, value) -> Tensor:
    """Return a tensor like ``input`` filled with ``value`` (a number or a 0-dim tensor)."""
    if isinstance(value, Tensor):
        if value.dim() != 0:
            raise RuntimeError(
                "fill_ only supports 0-dimension value tensor but got tensor with "
                f"{value.dim()} dimensions."
            )
        return dispatch(_fill_tensor, (input, value))
    from ember._ops.convert import scalar_value

    return dispatch(_fill_scalar, (input,), {"value": scalar_value(value, input.dtype)})


def detach(input: Tensor) -> Tensor:
    """Return ``input.detach()``: a view sharing data, cut from the graph."""
    return input.detach()


publish(None, fill, method=False)
publish(None, detach, method=False)


# --- more ATen entry points ---------------------------------------------------------------------


def convolution(input: Tensor, weight: Tensor, bias: Tensor | None, stride, padding, dilation,
                transposed: bool, output_padding, groups: int) -> Tensor:  # fmt: skip
    """Return the (transposed when ``transposed``) N-d convolution of ``input`` (ATen's
    ``convolution``; the number of spatial dims is ``weight.dim() - 2``)."""
    F, nd = _F(), weight.dim() - 2
    if transposed:
        fn = getattr(F, f"conv_transpose{nd}d")
        return fn(input, weight, bias, stride, padding, output_padding, groups, dilation)
    return getattr(F, f"conv{nd}d")(input, weight, bias, stride, padding, dilation, groups)


publish(None, convolution, method=False)

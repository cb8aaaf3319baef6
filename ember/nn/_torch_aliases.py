"""torch-level aliases of ``nn.functional`` with torch's top-level (ATen) signatures:
``torch.conv2d``, ``torch.max_pool2d``, ``torch.batch_norm``, ``torch.dropout``,
``torch.embedding``, ``torch.selu``, ``torch.kl_div``, ``torch.convolution``...

Losses take ``reduction`` as an int here (0 none, 1 mean, 2 sum), as ATen's do. Each calls the
``nn.functional`` function, so autograd and grad_fn names come from the ops it calls. They
belong to ``nn`` (above the op table), which publishes them into the op table's namespace
when it is imported; so do ``torch.cosine_similarity``, ``torch.pairwise_distance`` and
``torch.pdist`` (``cdist`` is an op of ``_ops/distances.py``).
"""

from __future__ import annotations

import warnings

from ember._core.tensor import Tensor
from ember._ops.registry import publish
from ember.nn import functional as F
from ember.nn._functional.dropout import _dropout_impl

_REDUCTION = {0: "none", 1: "mean", 2: "sum"}


def _reduction(reduction) -> str:
    return _REDUCTION[int(reduction)]


# --- convolutions, pooling ----------------------------------------------------------------------


def _conv(name):
    def fn(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0,
           dilation=1, groups: int = 1) -> Tensor:  # fmt: skip
        return getattr(F, name)(input, weight, bias, stride, padding, dilation, groups)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Return the {name[-2:]} convolution of ``input`` (see ``nn.functional.{name}``)."
    return fn


def _conv_transpose(name):
    def fn(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0,
           output_padding=0, groups: int = 1, dilation=1) -> Tensor:  # fmt: skip
        return getattr(F, name)(
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
        return getattr(F, name)(input, kernel_size, stride, padding, dilation, ceil_mode)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Return the max pooling of ``input`` (``nn.functional.{name}``)."
    return fn


for _name in ("max_pool1d", "max_pool2d", "max_pool3d"):
    publish(None, _max_pool(_name), method=False)


def max_pool1d_with_indices(input: Tensor, kernel_size, stride=(), padding=0, dilation=1,
                            ceil_mode: bool = False) -> tuple:  # fmt: skip
    """Return ``(output, indices)`` of a 1-d max pooling."""
    stride = None if stride is None or (not isinstance(stride, int) and not stride) else stride
    return F.max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def avg_pool1d(input: Tensor, kernel_size, stride=(), padding=0, ceil_mode: bool = False,
               count_include_pad: bool = True) -> Tensor:  # fmt: skip
    """Return the 1-d average pooling of ``input``."""
    stride = None if stride is None or (not isinstance(stride, int) and not stride) else stride
    return F.avg_pool1d(input, kernel_size, stride, padding, ceil_mode, count_include_pad)


def adaptive_avg_pool1d(input: Tensor, output_size) -> Tensor:
    """Return the 1-d adaptive average pooling of ``input``."""
    return F.adaptive_avg_pool1d(input, output_size)


def adaptive_max_pool1d(input: Tensor, output_size) -> tuple:
    """Return ``(output, indices)`` of the 1-d adaptive max pooling of ``input``."""
    return F.adaptive_max_pool1d(input, output_size, True)


for _fn in (max_pool1d_with_indices, avg_pool1d, adaptive_avg_pool1d, adaptive_max_pool1d):
    publish(None, _fn, method=False)


# --- normalisation ------------------------------------------------------------------------------


def batch_norm(input: Tensor, weight, bias, running_mean, running_var, training: bool,
               momentum: float, eps: float, cudnn_enabled: bool) -> Tensor:  # fmt: skip
    """Return batch normalisation of ``input`` (ATen's argument order)."""
    return F.batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)


def instance_norm(input: Tensor, weight, bias, running_mean, running_var, use_input_stats: bool,
                  momentum: float, eps: float, cudnn_enabled: bool) -> Tensor:  # fmt: skip
    """Return instance normalisation of ``input`` (ATen's argument order)."""
    return F.instance_norm(
        input, running_mean, running_var, weight, bias, use_input_stats, momentum, eps
    )


def layer_norm(input: Tensor, normalized_shape, weight: Tensor | None = None,
               bias: Tensor | None = None, eps: float = 1e-05,
               cudnn_enable: bool = True) -> Tensor:  # fmt: skip
    """Return layer normalisation of ``input`` over its last ``normalized_shape`` dims."""
    return F.layer_norm(input, normalized_shape, weight, bias, eps)


def group_norm(input: Tensor, num_groups: int, weight: Tensor | None = None,
               bias: Tensor | None = None, eps: float = 1e-05,
               cudnn_enabled: bool = True) -> Tensor:  # fmt: skip
    """Return group normalisation of ``input``."""
    return F.group_norm(input, num_groups, weight, bias, eps)


def rms_norm(input: Tensor, normalized_shape, weight: Tensor | None = None,
             eps: float | None = None) -> Tensor:  # fmt: skip
    """Return RMS normalisation of ``input`` over its last ``normalized_shape`` dims."""
    return F.rms_norm(input, normalized_shape, weight, eps)


for _fn in (batch_norm, instance_norm, layer_norm, group_norm, rms_norm):
    publish(None, _fn, method=False)


# --- dropout ------------------------------------------------------------------------------------


def _dropout(name, inplace):
    base = name.rstrip("_")
    feature, alpha = base.startswith("feature"), "alpha" in base

    def fn(input: Tensor, p: float, train: bool) -> Tensor:
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
    return F.embedding(
        indices,
        weight,
        padding_idx if padding_idx >= 0 else None,
        scale_grad_by_freq=scale_grad_by_freq,
        sparse=sparse,
    )


def pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:
    """Return ``input`` with channels rearranged into an ``upscale_factor`` larger image."""
    return F.pixel_shuffle(input, upscale_factor)


def pixel_unshuffle(input: Tensor, downscale_factor: int) -> Tensor:
    """Return the inverse of :func:`pixel_shuffle`."""
    return F.pixel_unshuffle(input, downscale_factor)


def channel_shuffle(input: Tensor, groups: int) -> Tensor:
    """Return ``input`` with its channels shuffled across ``groups``."""
    return F.channel_shuffle(input, groups)


for _fn in (embedding, pixel_shuffle, pixel_unshuffle, channel_shuffle):
    publish(None, _fn, method=False)


# --- activations --------------------------------------------------------------------------------


def selu(input: Tensor) -> Tensor:
    """Return SELU of ``input``."""
    return F.selu(input)


def selu_(input: Tensor) -> Tensor:
    """In-place version of :func:`selu`; return ``input``."""
    return F.selu_(input)


def celu(input: Tensor, alpha: float = 1.0) -> Tensor:
    """Return CELU of ``input``."""
    return F.celu(input, alpha)


def celu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    """In-place version of :func:`celu`; return ``input``."""
    return F.celu_(input, alpha)


def rrelu(input: Tensor, lower: float = 0.125, upper: float = 1.0 / 3.0, training: bool = False,
          generator=None) -> Tensor:  # fmt: skip
    """Return randomized leaky ReLU of ``input`` (the mean slope unless ``training``)."""
    return F.rrelu(input, lower, upper, training)


def rrelu_(input: Tensor, lower: float = 0.125, upper: float = 1.0 / 3.0, training: bool = False,
           generator=None) -> Tensor:  # fmt: skip
    """In-place version of :func:`rrelu`; return ``input``."""
    return F.rrelu_(input, lower, upper, training)


def threshold(input: Tensor, threshold: float, value: float) -> Tensor:
    """Return ``input`` where it is above ``threshold``, else ``value``."""
    return F.threshold(input, threshold, value)


def threshold_(input: Tensor, threshold: float, value: float) -> Tensor:
    """In-place version of :func:`threshold`; return ``input``."""
    return F.threshold_(input, threshold, value)


def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """Return ``input`` where ``|input| > lambd``, else zero."""
    return F.hardshrink(input, lambd)


def prelu(input: Tensor, weight: Tensor) -> Tensor:
    """Return PReLU of ``input`` with learnable slopes ``weight``."""
    return F.prelu(input, weight)


for _fn in (selu, selu_, celu, celu_, rrelu, rrelu_, threshold, threshold_):
    publish(None, _fn, method=False)
publish(None, hardshrink)
publish(None, prelu)


# --- losses (ATen signatures: ``reduction`` is an int) ------------------------------------------


def bilinear(input1: Tensor, input2: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """Return ``input1^T A input2 + b``."""
    return F.bilinear(input1, input2, weight, bias)


def kl_div(input: Tensor, target: Tensor, reduction: int = 1, *,
           log_target: bool = False) -> Tensor:  # fmt: skip
    """Return the Kullback-Leibler divergence loss (no 'batchmean' warning at this level)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "reduction: 'mean' divides", UserWarning)
        return F.kl_div(input, target, reduction=_reduction(reduction), log_target=log_target)


def poisson_nll_loss(input: Tensor, target: Tensor, log_input: bool, full: bool, eps: float,
                     reduction: int) -> Tensor:  # fmt: skip
    """Return the Poisson negative log likelihood loss."""
    return F.poisson_nll_loss(
        input, target, log_input, full, eps=eps, reduction=_reduction(reduction)
    )


def cosine_embedding_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0,
                          reduction: int = 1) -> Tensor:  # fmt: skip
    """Return the cosine embedding loss."""
    return F.cosine_embedding_loss(input1, input2, target, margin, reduction=_reduction(reduction))


def hinge_embedding_loss(input: Tensor, target: Tensor, margin: float = 1.0,
                         reduction: int = 1) -> Tensor:  # fmt: skip
    """Return the hinge embedding loss."""
    return F.hinge_embedding_loss(input, target, margin, reduction=_reduction(reduction))


def margin_ranking_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0,
                        reduction: int = 1) -> Tensor:  # fmt: skip
    """Return the margin ranking loss."""
    return F.margin_ranking_loss(input1, input2, target, margin, reduction=_reduction(reduction))


def triplet_margin_loss(anchor: Tensor, positive: Tensor, negative: Tensor, margin: float = 1.0,
                        p: float = 2.0, eps: float = 1e-06, swap: bool = False,
                        reduction: int = 1) -> Tensor:  # fmt: skip
    """Return the triplet margin loss."""
    return F.triplet_margin_loss(
        anchor, positive, negative, margin, p, eps, swap, reduction=_reduction(reduction)
    )


def ctc_loss(log_probs: Tensor, targets: Tensor, input_lengths, target_lengths, blank: int = 0,
             reduction: int = 1, zero_infinity: bool = False) -> Tensor:  # fmt: skip
    """Return the connectionist temporal classification loss."""
    return F.ctc_loss(
        log_probs, targets, input_lengths, target_lengths, blank, _reduction(reduction),
        zero_infinity,
    )  # fmt: skip


def binary_cross_entropy_with_logits(input: Tensor, target: Tensor, weight: Tensor | None = None,
                                     pos_weight: Tensor | None = None,
                                     reduction: int = 1) -> Tensor:  # fmt: skip
    """Return the binary cross entropy of ``sigmoid(input)`` against ``target``."""
    return F.binary_cross_entropy_with_logits(
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
    return F.pad(input, pad, "constant", value)


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


# --- more ATen entry points ---------------------------------------------------------------------


def convolution(input: Tensor, weight: Tensor, bias: Tensor | None, stride, padding, dilation,
                transposed: bool, output_padding, groups: int) -> Tensor:  # fmt: skip
    """Return the (transposed when ``transposed``) N-d convolution of ``input`` (ATen's
    ``convolution``; the number of spatial dims is ``weight.dim() - 2``)."""
    nd = weight.dim() - 2
    if transposed:
        fn = getattr(F, f"conv_transpose{nd}d")
        return fn(input, weight, bias, stride, padding, output_padding, groups, dilation)
    return getattr(F, f"conv{nd}d")(input, weight, bias, stride, padding, dilation, groups)


publish(None, convolution, method=False)


# --- distances ----------------------------------------------------------------------------------


def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-08) -> Tensor:
    """Return the cosine similarity of ``x1`` and ``x2`` along ``dim``."""
    return F.cosine_similarity(x1, x2, dim, eps)


def pairwise_distance(x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-06,
                      keepdim: bool = False) -> Tensor:  # fmt: skip
    """Return the ``p``-norm of ``x1 - x2 + eps`` along the last dim."""
    return F.pairwise_distance(x1, x2, p, eps, keepdim)


def pdist(input: Tensor, p: float = 2.0) -> Tensor:
    """Return the ``p``-norm distances between the rows of ``input`` (upper triangle)."""
    return F.pdist(input, p)


for _fn in (cosine_similarity, pairwise_distance, pdist):
    publish(None, _fn, method=False)

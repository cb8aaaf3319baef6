"""Translations keyed by IR node kind (``aten::linear``...), on the node's positional arguments
as torch's schema orders them. Kinds whose arguments match an op-table translation's reuse
it (``aten::add(self, other, alpha)`` is ``add``'s); the composites torch records as one node
(linear, convolution, batch norm, layer norm, dropout, pooling) have their own here."""

from __future__ import annotations

import numpy as np

from ember.onnx import _symbolic as S
from ember.onnx import _symbolic_more as M
from ember.onnx import _symbolic_shape  # noqa: F401  (registers the shape ops' translations)
from ember.onnx._context import onnx_type
from ember.onnx.errors import OnnxExporterError

ATEN: dict = {}


def aten(*kinds):
    def register(fn):
        for k in kinds:
            ATEN[k] = fn
        return fn

    return register


# kinds whose positional arguments are the op-table translation's own, in order
for _name in (
    "mul div add sub rsub gt lt ge le eq ne matmul addmm gelu t transpose permute unsqueeze "
    "select slice"
).split():
    ATEN[f"aten::{_name}"] = S.SYMBOLICS[_name]


def _unary(fn):
    # one tensor argument (a scripted F.relu's node also carries its ``inplace`` flag)
    def sym(ctx, node, x, *flags):
        return fn(ctx, node, x)

    return sym


for _name in (
    "relu tanh sigmoid exp log neg abs sqrt rsqrt sin cos reciprocal floor ceil sign erf"
).split():
    ATEN[f"aten::{_name}"] = _unary(S.SYMBOLICS[_name])
ATEN["aten::log1p"] = _unary(M._log1p)
ATEN["aten::expm1"] = _unary(M._expm1)


@aten("aten::square")
def _square(ctx, node, x):
    return [ctx.add1("Mul", [x, x])]


@aten("aten::contiguous", "aten::clone")
def _identity(ctx, node, x, *rest):
    return [ctx.add1("Identity", [x])]


@aten("aten::dropout")
def _dropout(ctx, node, x, p, train, *_):
    if train:
        raise OnnxExporterError(
            "ember exports evaluation-mode graphs only: export with training=TrainingMode.EVAL"
        )
    return [ctx.add1("Identity", [x])]


def _random(op_type: str, like: bool):
    # torch's: the sampler ONNX has, shaped by the sizes (or the input), of the output's dtype
    def sym(ctx, node, first, *rest):
        dt = onnx_type(node.outputs[0].dtype)
        if like:
            return [ctx.add1(op_type + "Like", [first], dtype=dt)]
        return [ctx.add1(op_type, [], dtype=dt, shape=[int(s) for s in first])]

    return sym


ATEN["aten::rand"] = _random("RandomUniform", False)
ATEN["aten::randn"] = _random("RandomNormal", False)
ATEN["aten::rand_like"] = _random("RandomUniform", True)
ATEN["aten::randn_like"] = _random("RandomNormal", True)


@aten("aten::linear")
def _linear(ctx, node, x, w, b=None):
    # torch's: Gemm for a 2-D input, else MatMul by the transposed weight (then Add)
    if len(node.inputs[0].shape) == 2 and len(node.inputs[1].shape) == 2:
        ins = [x, w] + ([b] if b is not None else [])
        return [ctx.add1("Gemm", ins, alpha=1.0, beta=1.0, transB=1)]
    y = ctx.add1("MatMul", [x, ctx.add1("Transpose", [w], perm=[1, 0])])
    return [ctx.add1("Add", [y, b]) if b is not None else y]


@aten("aten::_convolution")
def _convolution(ctx, node, x, w, b, stride, padding, dilation, transposed, out_pad, groups, *_):
    pads = [(p, p) for p in padding]
    if transposed:
        sizes = node.outputs[0].shape[2:]
        return S._convolution(ctx, node, x, w, b, stride, pads, dilation, True, sizes, groups)
    return S._convolution(ctx, node, x, w, b, stride, pads, dilation, False, None, groups)


@aten("aten::batch_norm")
def _batch_norm(ctx, node, x, w, b, mean, var, training, momentum, eps, *_):
    if training or mean is None or var is None:
        raise OnnxExporterError(
            "ember exports batch normalization in evaluation mode only (its running statistics); "
            "export with training=TrainingMode.EVAL"
        )
    channels = node.inputs[0].shape[1]
    dt = node.outputs[0].dtype.np
    if w is None:
        w = ctx.const(np.ones(channels, dtype=dt))
    if b is None:
        b = ctx.const(np.zeros(channels, dtype=dt))
    return [ctx.add1("BatchNormalization", [x, w, b, mean, var], epsilon=float(eps),
                     momentum=1.0 - float(momentum))]  # fmt: skip


@aten("aten::layer_norm")
def _layer_norm(ctx, node, x, shape, w, b, eps, *_):
    return S._layer_norm(ctx, node, x, w, b, len(shape), eps)


@aten("aten::max_pool2d")
def _max_pool2d(ctx, node, x, kernel, stride, padding, dilation, ceil_mode):
    unbatched = len(node.inputs[0].shape) == 3
    if unbatched:
        x = ctx.add1("Unsqueeze", [x, ctx.ints([0])])
    y = ctx.add1(
        "MaxPool",
        [x],
        kernel_shape=list(kernel),
        strides=list(stride) if stride else list(kernel),
        pads=list(padding) * 2,
        dilations=list(dilation),
        ceil_mode=int(bool(ceil_mode)),
    )
    return [ctx.add1("Squeeze", [y, ctx.ints([0])]) if unbatched else y]


def _adaptive_matrix(n_in: int, n_out: int) -> np.ndarray:
    """The averaging matrix of adaptive pooling along one dim: row i averages the inputs from
    floor(i * n_in / n_out) to ceil((i + 1) * n_in / n_out)."""
    m = np.zeros((n_out, n_in))
    for i in range(n_out):
        lo, hi = (i * n_in) // n_out, -((-(i + 1) * n_in) // n_out)
        m[i, lo:hi] = 1.0 / (hi - lo)
    return m


@aten("aten::adaptive_avg_pool2d")
def _adaptive_avg_pool2d(ctx, node, x, size):
    src = node.inputs[0].shape[-2:]
    out = [int(s) for s in size]
    if out == [1, 1]:
        return [ctx.add1("GlobalAveragePool", [x])]
    if all(i % o == 0 for i, o in zip(src, out)) and len(node.inputs[0].shape) == 4:
        k = [i // o for i, o in zip(src, out)]
        return [ctx.add1("AveragePool", [x], kernel_shape=k, strides=k)]
    return S._separable(ctx, node, x, [_adaptive_matrix(i, o) for i, o in zip(src, out)])


@aten("aten::Bool")
def _bool(ctx, node, x):
    # a condition on the data (a scripted ``if``): the one-element tensor as bool
    from onnx import TensorProto

    return [ctx.add1("Cast", [x], to=TensorProto.BOOL)]


# F.interpolate's nodes: (mode, spatial dims) by kind
_UPSAMPLE_MODES = {
    **{f"aten::upsample_nearest{n}d": ("nearest", n) for n in (1, 2, 3)},
    **{f"aten::_upsample_nearest_exact{n}d": ("nearest-exact", n) for n in (1, 2, 3)},
    "aten::upsample_linear1d": ("linear", 1),
    "aten::upsample_bilinear2d": ("bilinear", 2),
    "aten::upsample_bicubic2d": ("bicubic", 2),
    "aten::upsample_trilinear3d": ("trilinear", 3),
}
_RESIZE_MODE = {"nearest": "nearest", "nearest-exact": "nearest", "linear": "linear",
                "bilinear": "linear", "trilinear": "linear", "bicubic": "cubic"}  # fmt: skip


@aten(*_UPSAMPLE_MODES)
def _upsample(ctx, node, x, output_size, *rest):
    """ONNX ``Resize`` with ``scales`` (the output follows the input's size, as torch's
    export) or ``sizes`` (the batch and channels the input's)."""
    mode, nd = _UPSAMPLE_MODES[node.ir_kind]
    scales = rest[-1]
    align = bool(rest[0]) if len(rest) == 2 else None
    coords = "align_corners" if align else "pytorch_half_pixel"
    attrs = {"mode": _RESIZE_MODE[mode], "coordinate_transformation_mode": coords}
    if mode == "nearest":
        attrs.update(coordinate_transformation_mode="asymmetric", nearest_mode="floor")
    if mode == "nearest-exact":  # floor((dst + 0.5) / scale), as torch's
        attrs.update(coordinate_transformation_mode="half_pixel", nearest_mode="round_prefer_ceil")
    if mode == "bicubic":
        attrs["cubic_coeff_a"] = -0.75
    empty = ctx.const(np.zeros(0, dtype=np.float32))
    if scales is not None:
        factors = ctx.const(np.array([1.0, 1.0, *scales], dtype=np.float32))
        return [ctx.add1("Resize", [x, empty, factors], **attrs)]
    lead = ctx.add1("Slice", [ctx.add1("Shape", [x]), ctx.ints([0]), ctx.ints([2])])
    sizes = ctx.add1("Concat", [lead, ctx.ints([int(o) for o in output_size])], axis=0)
    return [ctx.add1("Resize", [x, empty, empty, sizes], **attrs)]


@aten("aten::scaled_dot_product_attention")
def _sdpa(ctx, node, q, k, v, mask, dropout_p, is_causal, scale, enable_gqa):
    """softmax(q k^T * scale + mask) v; eval graphs only (no dropout), no causal flag."""
    if is_causal or enable_gqa or dropout_p:
        raise OnnxExporterError(
            "ember exports scaled_dot_product_attention without is_causal, enable_gqa or "
            "dropout (pass an explicit mask; export in eval mode)"
        )
    q_in = node.inputs[0]
    dt = q_in.dtype
    factor = 1.0 / float(np.sqrt(q_in.shape[-1])) if scale is None else float(scale)
    nd = len(q_in.shape)
    perm = list(range(nd - 2)) + [nd - 1, nd - 2]
    kt = ctx.add1("Transpose", [k], perm=perm)
    qs = ctx.add1("Mul", [q, ctx.const(np.asarray(factor, dtype=dt.np))])
    w = ctx.add1("MatMul", [qs, kt])
    if mask is not None:
        if str(node.inputs[3].dtype) == "torch.bool":
            neg = ctx.const(np.asarray(-np.inf, dtype=dt.np))
            zero = ctx.const(np.asarray(0, dtype=dt.np))
            mask = ctx.add1("Where", [mask, zero, neg])
        w = ctx.add1("Add", [w, mask])
    w = ctx.add1("Softmax", [w], axis=-1)
    return [ctx.add1("MatMul", [w, v])]

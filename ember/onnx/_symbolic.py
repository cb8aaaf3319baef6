"""The op-to-ONNX translation table: one function per op-table entry (by op name), for the IR
nodes the tracer records without a schema (the op and its parameters ride on the node), and
reused by node kind where the IR's positional arguments are the same (``_symbolic_aten.py``).

Each symbolic receives the ``Context``, the read ``Node`` and its inputs (the ONNX names of
tensor inputs, plain Python values otherwise) and returns one ONNX name per node output.
"""

from __future__ import annotations

import numpy as np

from ember.onnx._context import Context, onnx_type
from ember.onnx._graph import Value
from ember.onnx.errors import OnnxExporterError, UnsupportedOperatorError

SYMBOLICS: dict = {}


def symbolic(*names):
    def register(fn):
        for n in names:
            SYMBOLICS[n] = fn
        return fn

    return register


def unsupported(node, opset: int, hint: str = "", since: int | None = None):
    err = UnsupportedOperatorError(f"aten::{node.name}", opset, since)
    if hint:
        err.args = (f"{err.args[0]}. {hint}",)
    return err


# ---------------------------------------------------------------------------------------------
# helpers


def _out(node, i=0):
    return node.outputs[i]


def _as(ctx: Context, node, i: int, name, dtype):
    """Input ``i`` as an ONNX tensor of ``dtype``: scalars become constants, others are cast."""
    v = node.inputs[i]
    if not isinstance(v, Value):
        return ctx.const(np.asarray(v, dtype=dtype.np))
    if v.dtype is not dtype:
        return ctx.add1("Cast", [name], to=onnx_type(dtype))
    return name


def _pointwise(op_type, post=None):
    def sym(ctx, node, *args, **params):
        dt = _out(node).dtype
        ins = [_as(ctx, node, i, a, dt) for i, a in enumerate(args)]
        y = ctx.add1(op_type, ins)
        return [post(ctx, y) if post else y]

    return sym


for _name, _type in {
    "mul": "Mul",
    "div": "Div",
    "maximum": "Max",
    "minimum": "Min",
    "relu": "Relu",
    "sigmoid": "Sigmoid",
    "tanh": "Tanh",
    "exp": "Exp",
    "log": "Log",
    "sqrt": "Sqrt",
    "abs": "Abs",
    "neg": "Neg",
    "reciprocal": "Reciprocal",
    "erf": "Erf",
    "sin": "Sin",
    "cos": "Cos",
    "floor": "Floor",
    "ceil": "Ceil",
    "sign": "Sign",
}.items():
    SYMBOLICS[_name] = _pointwise(_type)


def _scaled(ctx, node, i, name, dt, alpha):
    x = _as(ctx, node, i, name, dt)
    return x if alpha == 1 else ctx.add1("Mul", [x, ctx.const(np.asarray(alpha, dtype=dt.np))])


@symbolic("add", "sub")
def _add(ctx, node, a, b, alpha=1, out=None):
    dt = _out(node).dtype
    op_type = "Add" if node.name == "add" else "Sub"
    return [ctx.add1(op_type, [_as(ctx, node, 0, a, dt), _scaled(ctx, node, 1, b, dt, alpha)])]


@symbolic("rsub")
def _rsub(ctx, node, a, b, alpha=1):
    dt = _out(node).dtype
    return [ctx.add1("Sub", [_as(ctx, node, 1, b, dt), _scaled(ctx, node, 0, a, dt, alpha)])]


@symbolic("pow")
def _pow(ctx, node, a, b):
    dt = _out(node).dtype
    ins = [_as(ctx, node, 0, a, dt), _as(ctx, node, 1, b, dt)]
    if node.target.node_cls.__name__ == "PowBackward2":  # number ** tensor: (exponent, base)
        ins.reverse()
    return [ctx.add1("Pow", ins)]


@symbolic("rsqrt")
def _rsqrt(ctx, node, x):
    return [ctx.add1("Reciprocal", [ctx.add1("Sqrt", [x])])]


@symbolic("silu")
def _silu(ctx, node, x):
    return [ctx.add1("Mul", [x, ctx.add1("Sigmoid", [x])])]


@symbolic("gelu")
def _gelu(ctx, node, x, approximate="none"):
    if ctx.opset >= 20:
        return [ctx.add1("Gelu", [x], approximate=approximate)]
    dt = _out(node).dtype.np
    c = lambda v: ctx.const(np.asarray(v, dtype=dt))
    if approximate == "tanh":
        x3 = ctx.add1("Mul", [ctx.add1("Mul", [x, x]), x])
        inner = ctx.add1("Add", [x, ctx.add1("Mul", [x3, c(0.044715)])])
        t = ctx.add1("Tanh", [ctx.add1("Mul", [inner, c(np.sqrt(2 / np.pi))])])
    else:
        t = ctx.add1("Erf", [ctx.add1("Mul", [x, c(1 / np.sqrt(2))])])
    return [ctx.add1("Mul", [ctx.add1("Mul", [x, c(0.5)]), ctx.add1("Add", [t, c(1.0)])])]


@symbolic("leaky_relu")
def _leaky_relu(ctx, node, x, negative_slope=0.01):
    return [ctx.add1("LeakyRelu", [x], alpha=float(negative_slope))]


@symbolic("hardtanh", "clamp")
def _clip(ctx, node, x, min_val=None, max_val=None, min=None, max=None):
    lo = min_val if min_val is not None else min
    hi = max_val if max_val is not None else max
    if isinstance(lo, Value) or isinstance(hi, Value):
        raise unsupported(node, ctx.opset, "clamp with tensor bounds is not exported")
    dt = _out(node).dtype.np
    bounds = ["" if b is None else ctx.const(np.asarray(b, dtype=dt)) for b in (lo, hi)]
    return [ctx.add1("Clip", [x, *bounds])]


@symbolic("hardswish")
def _hardswish(ctx, node, x):
    if ctx.opset < 14:
        return [ctx.add1("Mul", [x, ctx.add1("HardSigmoid", [x], alpha=1 / 6, beta=0.5)])]
    return [ctx.add1("HardSwish", [x])]


@symbolic("_softmax", "_log_softmax")
def _softmax(ctx, node, x, dim, **params):
    op_type = "Softmax" if node.name == "_softmax" else "LogSoftmax"
    nd = len(node.inputs[0].shape)
    dim = int(dim) % max(nd, 1)
    if ctx.opset >= 13 or dim == nd - 1 or nd == 0:
        return [ctx.add1(op_type, [x], axis=dim if nd else 0)]
    # before opset 13 softmax flattened the dims from ``axis`` on: move the dim last
    perm = list(range(nd))
    perm[dim], perm[-1] = perm[-1], perm[dim]
    y = ctx.add1(op_type, [ctx.add1("Transpose", [x], perm=perm)], axis=nd - 1)
    return [ctx.add1("Transpose", [y], perm=perm)]


_COMPARE = {
    "gt": "Greater",
    "lt": "Less",
    "ge": "GreaterOrEqual",
    "le": "LessOrEqual",
    "eq": "Equal",
}


@symbolic("gt", "lt", "ge", "le", "eq", "ne")
def _compare(ctx, node, a, b, **params):
    from ember._core import dtype as D

    dts = [v.dtype for v in node.inputs if isinstance(v, Value)]
    dt = dts[0] if len(dts) == 1 else D.promote_types(*dts)
    if not isinstance(node.inputs[1], Value) and isinstance(b, float) and not dt.is_floating_point:
        dt = D.get_default_dtype()
    ins = [_as(ctx, node, 0, a, dt), _as(ctx, node, 1, b, dt)]
    if node.name == "ne":
        return [ctx.add1("Not", [ctx.add1("Equal", ins)])]
    if ctx.opset < 12 and node.name in ("ge", "le"):
        return [ctx.add1("Not", [ctx.add1("Less" if node.name == "ge" else "Greater", ins)])]
    return [ctx.add1(_COMPARE[node.name], ins)]


@symbolic("where")
def _where(ctx, node, cond, a, b):
    dt = _out(node).dtype
    return [ctx.add1("Where", [cond, _as(ctx, node, 1, a, dt), _as(ctx, node, 2, b, dt)])]


@symbolic("masked_fill")
def _masked_fill(ctx, node, x, mask, value):
    dt = _out(node).dtype
    fill = ctx.const(np.asarray(value, dtype=dt.np)) if not isinstance(value, str) else value
    if isinstance(node.params.get("value"), Value):
        fill = _as(ctx, node, 2, value, dt)
    return [ctx.add1("Where", [mask, fill, x])]


# ---------------------------------------------------------------------------------------------
# linear algebra


@symbolic("matmul", "mm", "bmm")
def _matmul(ctx, node, a, b):
    return [ctx.add1("MatMul", [a, b])]


def _untransposed(ctx, node, i):
    """If input ``i`` is ``t(w)`` of a 2-D tensor, return ``w``'s ONNX name (Gemm's transB)."""
    v = node.inputs[i]
    src = v.node if isinstance(v, Value) else None
    if src is not None and src.kind == "op" and src.name == "t" and len(v.shape) == 2:
        w = src.inputs[0]
        if isinstance(w, Value):
            return ctx.name(w)
    return None


@symbolic("addmm")
def _addmm(ctx, node, bias, a, b, beta=1, alpha=1):
    wt = _untransposed(ctx, node, 2)
    ins = [a, wt if wt is not None else b, bias]
    return [
        ctx.add1(
            "Gemm", ins, alpha=float(alpha), beta=float(beta), transB=1 if wt is not None else None
        )
    ]


@symbolic("baddbmm", "addbmm")
def _baddbmm(ctx, node, bias, a, b, beta=1, alpha=1):
    if node.name != "baddbmm":
        raise unsupported(node, ctx.opset)
    dt = _out(node).dtype.np
    prod = ctx.add1("MatMul", [a, b])
    if alpha != 1:
        prod = ctx.add1("Mul", [prod, ctx.const(np.asarray(alpha, dtype=dt))])
    if beta != 1:
        bias = ctx.add1("Mul", [bias, ctx.const(np.asarray(beta, dtype=dt))])
    return [ctx.add1("Add", [bias, prod])]


@symbolic("convolution")
def _convolution(ctx, node, x, w, b, stride, padding, dilation, transposed, output_size, groups):
    nd = len(stride)
    kernel = list(node.inputs[1].shape[2:])
    pads = [p[0] for p in padding] + [p[1] for p in padding]
    ins = [x, w] + ([b] if b is not None else [])
    attrs = dict(
        strides=list(stride),
        dilations=list(dilation),
        group=int(groups),
        kernel_shape=kernel,
        pads=pads,
    )
    if not transposed:
        return [ctx.add1("Conv", ins, **attrs)]
    in_sizes = node.inputs[0].shape[-nd:]
    out_sizes = output_size
    natural = [
        (i - 1) * s - p[0] - p[1] + d * (k - 1) + 1
        for i, s, p, d, k in zip(in_sizes, stride, padding, dilation, kernel)
    ]
    attrs["output_padding"] = [o - n for o, n in zip(out_sizes, natural)]
    return [ctx.add1("ConvTranspose", ins, **attrs)]


@symbolic("embedding")
def _embedding(ctx, node, weight, indices, padding_idx=-1, **params):
    return [ctx.add1("Gather", [weight, indices], axis=0)]


# ---------------------------------------------------------------------------------------------
# normalization and pooling


@symbolic("native_batch_norm")
def _batch_norm(ctx, node, x, w, b, mean, invstd, training, eps):
    if training:
        raise OnnxExporterError(
            "ember exports batch normalization in evaluation mode only (its running statistics); "
            "export with training=TrainingMode.EVAL"
        )
    nd = len(node.inputs[0].shape)
    shape = (-1,) + (1,) * (nd - 2)
    dt = _out(node).dtype.np
    y = ctx.add1("Sub", [x, ctx.const(mean.reshape(shape).astype(dt))])
    y = ctx.add1("Mul", [y, ctx.const(invstd.reshape(shape).astype(dt))])
    rshape = ctx.ints(shape) if (w is not None or b is not None) else None
    if w is not None:
        y = ctx.add1("Mul", [y, ctx.add1("Reshape", [w, rshape])])
    if b is not None:
        y = ctx.add1("Add", [y, ctx.add1("Reshape", [b, rshape])])
    return [y]


@symbolic("native_layer_norm")
def _layer_norm(ctx, node, x, w, b, k, eps):
    dt = _out(node).dtype
    norm_shape = node.inputs[0].shape[-k:]
    if w is None:
        w = ctx.const(np.ones(norm_shape, dtype=dt.np))
    ins = [x, w] + ([b] if b is not None else [])
    if ctx.opset >= 17:
        return [ctx.add1("LayerNormalization", ins, axis=-int(k), epsilon=float(eps))]
    axes = ctx.ints(list(range(-int(k), 0)))
    d = ctx.add1("Sub", [x, ctx.add1("ReduceMean", [x, axes], keepdims=1)])
    var = ctx.add1("ReduceMean", [ctx.add1("Mul", [d, d]), axes], keepdims=1)
    eps_c = ctx.const(np.asarray(eps, dtype=dt.np))
    y = ctx.add1("Div", [d, ctx.add1("Sqrt", [ctx.add1("Add", [var, eps_c])])])
    y = ctx.add1("Mul", [y, w])
    return [ctx.add1("Add", [y, b]) if b is not None else y]


@symbolic("avg_pool1d", "avg_pool2d", "avg_pool3d")
def _avg_pool(
    ctx, node, x, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override=None
):
    if divisor_override is not None:
        raise unsupported(node, ctx.opset, "divisor_override is not exported")
    pads = list(padding) * 2
    return [
        ctx.add1(
            "AveragePool",
            [x],
            kernel_shape=list(kernel),
            strides=list(stride),
            pads=pads,
            ceil_mode=int(ceil_mode),
            count_include_pad=int(count_include_pad),
        )
    ]


@symbolic("adaptive_avg_pool2d", "adaptive_avg_pool3d")
def _separable(ctx, node, x, mats, nearest=False):
    # adaptive average pooling and interpolation are one fixed matrix per spatial dim
    dt = _out(node).dtype.np
    nd_x = len(node.inputs[0].shape)
    for i, m in enumerate(mats):
        axis = nd_x - len(mats) + i
        if nearest:
            x = ctx.add1("Gather", [x, ctx.const(m.argmax(1).astype(np.int64))], axis=axis)
        elif axis == nd_x - 1:
            x = ctx.add1("MatMul", [x, ctx.const(m.T.astype(dt))])
        elif axis == nd_x - 2:
            x = ctx.add1("MatMul", [ctx.const(m.astype(dt)), x])
        else:
            perm = list(range(nd_x))
            perm[axis], perm[-1] = perm[-1], perm[axis]
            x = ctx.add1("Transpose", [x], perm=perm)
            x = ctx.add1("MatMul", [x, ctx.const(m.T.astype(dt))])
            x = ctx.add1("Transpose", [x], perm=perm)
    return [x]


PREFIXES = {"upsample_": _separable}


def lookup(name: str):
    """Return the symbolic of op ``name``, or None."""
    fn = SYMBOLICS.get(name)
    if fn is None:
        fn = next((f for p, f in PREFIXES.items() if name.startswith(p)), None)
    return fn


@symbolic("max_pool1d_with_indices", "max_pool2d_with_indices", "max_pool3d_with_indices")
def _max_pool_fn(ctx, node, *args, **params):
    raise unsupported(
        node,
        ctx.opset,
        "ember exports max pooling from F.max_pool2d without indices and the nn.MaxPool1d/2d/3d "
        "modules (the other functional forms pick their indices outside the traced ops)",
    )


# ---------------------------------------------------------------------------------------------
# reductions


def _axes(ctx, dims):
    return ctx.ints(dims)


@symbolic("sum", "mean")
def _reduce(ctx, node, x, dims=None, keepdim=False, dtype=None):
    op_type = "ReduceSum" if node.name == "sum" else "ReduceMean"
    nd = len(node.inputs[0].shape)
    out_dt = _out(node).dtype
    if node.inputs[0].dtype is not out_dt:
        x = ctx.add1("Cast", [x], to=onnx_type(out_dt))
    if dims is None or len(dims) == 0:
        dims = tuple(range(nd))
    dims = tuple(sorted(d % nd for d in dims)) if nd else ()
    if op_type == "ReduceMean" and keepdim and nd >= 3 and dims == tuple(range(2, nd)):
        return [ctx.add1("GlobalAveragePool", [x])]
    if nd == 0:
        return [ctx.add1("Identity", [x])]
    return [ctx.add1(op_type, [x, _axes(ctx, dims)], keepdims=int(bool(keepdim)))]


@symbolic("amax", "amin")
def _amax(ctx, node, x, dims=(), keepdim=False, all_dims=False):
    nd = len(node.inputs[0].shape)
    dims = tuple(range(nd)) if all_dims or not dims else tuple(d % nd for d in dims)
    op_type = "ReduceMax" if node.name == "amax" else "ReduceMin"
    return [ctx.add1(op_type, [x, _axes(ctx, dims)], keepdims=int(bool(keepdim)))]


@symbolic("max", "min")
def _max(ctx, node, x, dim=None, keepdim=False):
    big = node.name == "max"
    if dim is None:
        return [ctx.add1("ReduceMax" if big else "ReduceMin", [x], keepdims=0)]
    nd = len(node.inputs[0].shape)
    d = dim % nd
    values = ctx.add1(
        "ReduceMax" if big else "ReduceMin", [x, _axes(ctx, [d])], keepdims=int(bool(keepdim))
    )
    idx = ctx.add1("ArgMax" if big else "ArgMin", [x], axis=d, keepdims=int(bool(keepdim)))
    return [values, idx]


@symbolic("argmax", "argmin")
def _argmax(ctx, node, x, dim=None, keepdim=False):
    op_type = "ArgMax" if node.name == "argmax" else "ArgMin"
    if dim is None:
        flat = ctx.add1("Reshape", [x, ctx.ints([-1])])
        return [ctx.add1(op_type, [flat], axis=0, keepdims=0)]
    nd = len(node.inputs[0].shape)
    return [ctx.add1(op_type, [x], axis=dim % nd, keepdims=int(bool(keepdim)))]

"""More ONNX translations: statistics, norms, logical ops, less common activations."""

from __future__ import annotations

import math

import numpy as np

from ember.onnx._symbolic import _as, _out, symbolic, unsupported


def _c(ctx, node, v):
    return ctx.const(np.asarray(v, dtype=_out(node).dtype.np))


def _dims(node, dims):
    nd = len(node.inputs[0].shape)
    if dims is None or (isinstance(dims, (tuple, list)) and len(dims) == 0):
        return list(range(nd))
    if isinstance(dims, int):
        dims = (dims,)
    return sorted(d % nd for d in dims)


@symbolic("var", "std")
def _var(ctx, node, x, dims=None, correction=1, keepdim=False, rnumel=None):
    axes = _dims(node, dims)
    n = math.prod(node.inputs[0].shape[d] for d in axes)
    ax = ctx.ints(axes)
    d = ctx.add1("Sub", [x, ctx.add1("ReduceMean", [x, ax], keepdims=1)])
    ss = ctx.add1("ReduceSum", [ctx.add1("Mul", [d, d]), ax], keepdims=int(bool(keepdim)))
    y = ctx.add1("Div", [ss, _c(ctx, node, max(n - correction, 0))])
    return [ctx.add1("Sqrt", [y]) if node.name == "std" else y]


@symbolic("linalg_vector_norm")
def _norm(ctx, node, x, ord=2.0, dims=None, keepdim=False, dtype=None):
    ax = ctx.ints(_dims(node, dims))
    k = int(bool(keepdim))
    if ord == 2:
        return [ctx.add1("ReduceL2", [x, ax], keepdims=k)]
    if ord == 1:
        return [ctx.add1("ReduceL1", [x, ax], keepdims=k)]
    if ord == float("inf"):
        return [ctx.add1("ReduceMax", [ctx.add1("Abs", [x]), ax], keepdims=k)]
    raise unsupported(node, ctx.opset, f"only norms of order 1, 2 and inf are exported, not {ord}")


@symbolic("clamp_min", "clamp_max")
def _clamp_bound(ctx, node, x, bound):
    op_type = "Max" if node.name == "clamp_min" else "Min"
    return [
        ctx.add1(
            op_type,
            [
                x,
                _as(ctx, node, 1, bound, _out(node).dtype)
                if len(node.inputs) > 1
                else _c(ctx, node, bound),
            ],
        )
    ]


@symbolic("logsumexp")
def _logsumexp(ctx, node, x, dims=None, keepdim=False):
    ax = ctx.ints(_dims(node, dims))
    return [ctx.add1("ReduceLogSumExp", [x, ax], keepdims=int(bool(keepdim)))]


@symbolic("prod")
def _prod(ctx, node, x, dim=None, keepdim=False, dtype=None):
    ax = ctx.ints(_dims(node, dim))
    return [ctx.add1("ReduceProd", [x, ax], keepdims=int(bool(keepdim)))]


@symbolic("cumsum")
def _cumsum(ctx, node, x, dim, dtype=None):
    nd = len(node.inputs[0].shape)
    return [ctx.add1("CumSum", [x, ctx.const(np.asarray(dim % max(nd, 1), dtype=np.int64))])]


@symbolic("tril", "triu")
def _trilu(ctx, node, x, diagonal=0):
    if ctx.opset < 14:
        raise unsupported(node, ctx.opset, since=14)
    k = ctx.const(np.asarray(diagonal, dtype=np.int64))
    return [ctx.add1("Trilu", [x, k], upper=int(node.name == "triu"))]


_LOGICAL = {"and": "And", "or": "Or", "xor": "Xor"}


@symbolic("logical_and", "logical_or", "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor")
def _logical(ctx, node, a, b):
    from ember._core import dtype as D

    if node.name.startswith("bitwise") and _out(node).dtype is not D.bool:
        raise unsupported(node, ctx.opset, "bitwise ops are exported on bool tensors only")
    ins = [_as(ctx, node, i, v, D.bool) for i, v in enumerate((a, b))]
    return [ctx.add1(_LOGICAL[node.name.split("_")[1]], ins)]


@symbolic("logical_not", "bitwise_not")
def _not(ctx, node, x):
    from ember._core import dtype as D

    if node.name == "bitwise_not" and _out(node).dtype is not D.bool:
        raise unsupported(node, ctx.opset, "bitwise ops are exported on bool tensors only")
    return [ctx.add1("Not", [_as(ctx, node, 0, x, D.bool)])]


@symbolic("log_sigmoid")
def _log_sigmoid(ctx, node, x):
    return [ctx.add1("Neg", [ctx.add1("Softplus", [ctx.add1("Neg", [x])])])]


@symbolic("mish")
def _mish(ctx, node, x):
    if ctx.opset < 18:
        return [ctx.add1("Mul", [x, ctx.add1("Tanh", [ctx.add1("Softplus", [x])])])]
    return [ctx.add1("Mish", [x])]


@symbolic("elu")
def _elu(ctx, node, x, alpha=1.0, scale=1.0, input_scale=1.0):
    if input_scale != 1.0:
        x = ctx.add1("Mul", [x, _c(ctx, node, input_scale)])
    y = ctx.add1("Elu", [x], alpha=float(alpha))
    return [y if scale == 1.0 else ctx.add1("Mul", [y, _c(ctx, node, scale)])]


@symbolic("celu")
def _celu(ctx, node, x, alpha=1.0, input_scale=1.0):
    if input_scale == 1.0 and ctx.opset >= 12:
        return [ctx.add1("Celu", [x], alpha=float(alpha))]
    # alpha * (exp(x * input_scale) - 1) below zero, x above
    e = ctx.add1("Exp", [ctx.add1("Mul", [x, _c(ctx, node, input_scale)])])
    neg = ctx.add1("Mul", [ctx.add1("Sub", [e, _c(ctx, node, 1)]), _c(ctx, node, alpha)])
    pos = ctx.add1("Greater", [x, _c(ctx, node, 0)])
    return [ctx.add1("Where", [pos, x, neg])]


@symbolic("hardsigmoid")
def _hardsigmoid(ctx, node, x):
    return [ctx.add1("HardSigmoid", [x], alpha=1 / 6, beta=0.5)]


@symbolic("log1p")
def _log1p(ctx, node, x):
    return [ctx.add1("Log", [ctx.add1("Add", [x, _c(ctx, node, 1)])])]


@symbolic("expm1")
def _expm1(ctx, node, x):
    return [ctx.add1("Sub", [ctx.add1("Exp", [x]), _c(ctx, node, 1)])]


@symbolic("round")
def _round(ctx, node, x, decimals=0):
    if decimals:
        raise unsupported(node, ctx.opset, "round(decimals=...) is not exported")
    return [ctx.add1("Round", [x])]


@symbolic("_prelu_kernel")
def _prelu(ctx, node, x, w):
    return [ctx.add1("PRelu", [x, w])]


@symbolic("topk")
def _topk(ctx, node, x, k, dim=-1, largest=True, sorted=True):
    nd = len(node.inputs[0].shape)
    return ctx.add(
        "TopK", [x, ctx.ints([k])], n_out=2, axis=dim % nd, largest=int(bool(largest)), sorted=1
    )


@symbolic("addcmul", "addcdiv")
def _addc(ctx, node, x, t1, t2, value=1):
    dt = _out(node).dtype
    a, b = _as(ctx, node, 1, t1, dt), _as(ctx, node, 2, t2, dt)
    y = ctx.add1("Mul" if node.name == "addcmul" else "Div", [a, b])
    if value != 1:
        y = ctx.add1("Mul", [y, _c(ctx, node, value)])
    return [ctx.add1("Add", [_as(ctx, node, 0, x, dt), y])]


@symbolic("pixel_shuffle")
def _pixel_shuffle(ctx, node, x, r):
    if len(node.inputs[0].shape) != 4:
        raise unsupported(node, ctx.opset, "pixel_shuffle is exported for 4-D inputs only")
    return [ctx.add1("DepthToSpace", [x], blocksize=int(r), mode="CRD")]


@symbolic("native_group_norm")
def _group_norm(ctx, node, x, w, b, groups, eps):
    shape = node.inputs[0].shape
    xr = ctx.add1("Reshape", [x, ctx.ints([0, groups, -1])])
    ax = ctx.ints([2])
    d = ctx.add1("Sub", [xr, ctx.add1("ReduceMean", [xr, ax], keepdims=1)])
    var = ctx.add1("ReduceMean", [ctx.add1("Mul", [d, d]), ax], keepdims=1)
    y = ctx.add1("Div", [d, ctx.add1("Sqrt", [ctx.add1("Add", [var, _c(ctx, node, eps)])])])
    y = ctx.add1("Reshape", [y, ctx.add1("Shape", [x])])
    rshape = ctx.ints([-1] + [1] * (len(shape) - 2))
    if w is not None:
        y = ctx.add1("Mul", [y, ctx.add1("Reshape", [w, rshape])])
    if b is not None:
        y = ctx.add1("Add", [y, ctx.add1("Reshape", [b, rshape])])
    return [y]


@symbolic("adaptive_max_pool2d", "adaptive_max_pool3d")
def _adaptive_max(ctx, node, *args, **params):
    raise unsupported(
        node,
        ctx.opset,
        "adaptive max pooling picks its indices outside the "
        "traced ops; only output size 1 could be exported and is not yet",
    )


@symbolic("threshold")
def _threshold(ctx, node, x, threshold, value):
    above = ctx.add1("Greater", [x, _c(ctx, node, threshold)])
    return [ctx.add1("Where", [above, x, _c(ctx, node, value)])]


@symbolic("hardshrink", "softshrink")
def _shrink(ctx, node, x, lambd=0.5):
    bias = 0.0 if node.name == "hardshrink" else float(lambd)
    return [ctx.add1("Shrink", [x], lambd=float(lambd), bias=bias)]


@symbolic("glu")
def _glu(ctx, node, x, dim=-1):
    nd = len(node.inputs[0].shape)
    half = node.inputs[0].shape[dim] // 2
    a, b = ctx.add("Split", [x, ctx.ints([half, half])], n_out=2, axis=dim % nd)
    return [ctx.add1("Mul", [a, ctx.add1("Sigmoid", [b])])]


@symbolic("softplus")
def _softplus(ctx, node, x, beta=1.0, threshold=20.0):
    bx = x if beta == 1 else ctx.add1("Mul", [x, _c(ctx, node, beta)])
    y = ctx.add1("Softplus", [bx])
    if beta != 1:
        y = ctx.add1("Div", [y, _c(ctx, node, beta)])
    # torch returns x itself where beta * x > threshold
    linear = ctx.add1("Greater", [bx, _c(ctx, node, threshold)])
    return [ctx.add1("Where", [linear, x, y])]


@symbolic("einsum")
def _einsum(ctx, node, *xs, labels, output, **params):
    if ctx.opset < 12:
        raise unsupported(node, ctx.opset, since=12)
    return [ctx.add1("Einsum", list(xs), equation=f"{','.join(labels)}->{output}")]


@symbolic("channel_shuffle")
def _channel_shuffle(ctx, node, x, groups):
    n, c, *rest = node.inputs[0].shape
    y = ctx.add1("Reshape", [x, ctx.ints([0, groups, c // groups, *rest])])
    perm = [0, 2, 1] + list(range(3, 3 + len(rest)))
    y = ctx.add1("Transpose", [y], perm=perm)
    return [ctx.add1("Reshape", [y, ctx.ints([0, c, *rest])])]

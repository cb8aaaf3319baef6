"""Conv-BN folding: a convolution (or linear) followed by an eval-mode ``aten::batch_norm``
with constant weights becomes one convolution with folded weight and bias."""

from __future__ import annotations

import numpy as np

from ember.jit.passes.dce import eliminate_dead_code

__all__ = ["fold_conv_bn"]

_CONVS = ("aten::_convolution", "aten::conv1d", "aten::conv2d", "aten::conv3d", "aten::linear")


def _const(v):
    n = v.node()
    if n.kind() != "prim::Constant":
        return None, False
    return (n._attrs["value"][1] if "value" in n._attrs else None), True


def _array(t):
    return None if t is None else np.asarray(t._data)


def fold_conv_bn(graph) -> int:
    """Fold each conv/linear -> batch_norm pair with constant parameters (in place); return
    how many were folded."""
    from ember._core.tensor import _wrap

    folded = 0
    for bn in graph.findAllNodes("aten::batch_norm"):
        ins = bn.inputs()
        conv = ins[0].node()
        if conv.kind() not in _CONVS or len(ins[0].uses()) != 1:
            continue
        consts = [_const(v) for v in (ins[1], ins[2], ins[3], ins[4], ins[5], ins[7])]
        if not all(ok for _, ok in consts):
            continue
        gamma, beta, mean, var, training, eps = (c for c, _ in consts)
        w_val, w_ok = _const(conv.inputs()[1])
        b_val, b_ok = _const(conv.inputs()[2])
        if training or not (w_ok and b_ok) or mean is None or var is None or w_val is None:
            continue
        w = _array(w_val)
        dt = w.dtype
        mean, var = _array(mean).astype(np.float64), _array(var).astype(np.float64)
        gamma = np.ones_like(mean) if gamma is None else _array(gamma).astype(np.float64)
        beta = np.zeros_like(mean) if beta is None else _array(beta).astype(np.float64)
        b = np.zeros_like(mean) if b_val is None else _array(b_val).astype(np.float64)
        scale = gamma / np.sqrt(var + eps)
        transposed = conv.kind() == "aten::_convolution" and conv.inputs()[6].toIValue()
        if transposed:
            groups = conv.inputs()[8].toIValue()
            shape = (1, -1) + (1,) * (w.ndim - 2)
            if groups != 1:
                continue
            new_w = w.astype(np.float64) * scale.reshape(shape)
        else:
            new_w = w.astype(np.float64) * scale.reshape((-1,) + (1,) * (w.ndim - 1))
        new_b = (b - mean) * scale + beta
        with graph.insert_point_guard(conv):
            wv = graph.insertConstant(_wrap(np.ascontiguousarray(new_w.astype(dt))))
            bv = graph.insertConstant(_wrap(new_b.astype(dt)))
        conv.replaceInput(1, wv)
        conv.replaceInput(2, bv)
        bn.output().replaceAllUsesWith(conv.output())
        bn.destroy()
        folded += 1
    eliminate_dead_code(graph)
    return folded

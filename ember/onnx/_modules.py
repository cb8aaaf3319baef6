"""ONNX translations of whole modules (layers the tracer records as one node)."""

from __future__ import annotations

import numpy as np

from ember.onnx.errors import UnsupportedOperatorError

MODULE_SYMBOLICS: dict = {}


def leaf_modules() -> tuple:
    """Return the module classes recorded as one node each."""
    from ember import nn

    return (nn.MaxPool1d, nn.MaxPool2d, nn.MaxPool3d, nn.LSTM, nn.GRU, nn.RNN)


def module_symbolic(*names):
    def register(fn):
        for n in names:
            MODULE_SYMBOLICS[n] = fn
        return fn

    return register


def _tuple(v, n):
    return tuple(v) if isinstance(v, (tuple, list)) else (v,) * n


@module_symbolic("MaxPool1d", "MaxPool2d", "MaxPool3d")
def _max_pool(ctx, node, x):
    m = node.target
    nd = int(type(m).__name__[-2])
    if m.return_indices:
        raise UnsupportedOperatorError("aten::max_pool_with_indices", ctx.opset, None)
    kernel = _tuple(m.kernel_size, nd)
    stride = _tuple(m.stride if m.stride not in (None, (), []) else m.kernel_size, nd)
    pad = _tuple(m.padding, nd)
    dil = _tuple(m.dilation, nd)
    in_nd = len(node.inputs[0].shape)
    if in_nd == nd + 1:  # unbatched input
        x = ctx.add1("Unsqueeze", [x, ctx.ints([0])])
    y = ctx.add1(
        "MaxPool",
        [x],
        kernel_shape=list(kernel),
        strides=list(stride),
        pads=list(pad) * 2,
        dilations=list(dil),
        ceil_mode=int(bool(m.ceil_mode)),
    )
    if in_nd == nd + 1:
        y = ctx.add1("Squeeze", [y, ctx.ints([0])])
    return [y]


# ---------------------------------------------------------------------------------------------
# recurrent layers: ONNX's LSTM/GRU take the weights of all gates of one layer and direction
# stacked, in their own gate order (LSTM: i o f c, torch's i f g o; GRU: z r h, torch's r z n)


def _gates(w: np.ndarray, order, n: int) -> np.ndarray:
    parts = np.split(w, n, axis=0)
    return np.concatenate([parts[i] for i in order], axis=0)


def _rnn(ctx, node, x, *state):
    m = node.target
    kind = type(m).__name__
    lstm = kind == "LSTM"
    if getattr(m, "proj_size", 0):
        raise UnsupportedOperatorError("aten::lstm (proj_size > 0)", ctx.opset, None)
    n_gates, order = {"LSTM": (4, (0, 3, 1, 2)), "GRU": (3, (1, 0, 2)), "RNN": (1, (0,))}[kind]
    dirs = 2 if m.bidirectional else 1
    hidden = m.hidden_size
    in_shape = node.inputs[0].shape
    unbatched = len(in_shape) == 2
    dt = node.outputs[0].dtype.np
    if unbatched:
        x = ctx.add1("Unsqueeze", [x, ctx.ints([1])])
    elif m.batch_first:
        x = ctx.add1("Transpose", [x], perm=[1, 0, 2])
    h0 = c0 = ""
    if state:
        h0 = state[0]
        if lstm:
            c0 = state[1]
        if unbatched:
            h0 = ctx.add1("Unsqueeze", [h0, ctx.ints([1])])
            c0 = ctx.add1("Unsqueeze", [c0, ctx.ints([1])]) if lstm else ""
    hs, cs = [], []
    for layer in range(m.num_layers):
        ws, rs, bs = [], [], []
        for d in range(dirs):
            sfx = f"_l{layer}" + ("_reverse" if d else "")
            w_ih = getattr(m, "weight_ih" + sfx)._data
            w_hh = getattr(m, "weight_hh" + sfx)._data
            b_ih = getattr(m, "bias_ih" + sfx, None) if m.bias else None
            b_hh = getattr(m, "bias_hh" + sfx, None) if m.bias else None
            zeros = np.zeros(n_gates * hidden, dtype=dt)
            b_ih = zeros if b_ih is None else b_ih._data
            b_hh = zeros if b_hh is None else b_hh._data
            ws.append(_gates(w_ih, order, n_gates))
            rs.append(_gates(w_hh, order, n_gates))
            bs.append(np.concatenate([_gates(b_ih, order, n_gates), _gates(b_hh, order, n_gates)]))
        ins = [
            x,
            ctx.const(np.stack(ws).astype(dt)),
            ctx.const(np.stack(rs).astype(dt)),
            ctx.const(np.stack(bs).astype(dt)),
            "",
        ]
        sl = [ctx.ints([layer * dirs]), ctx.ints([(layer + 1) * dirs]), ctx.ints([0])]
        ins.append(ctx.add1("Slice", [h0, *sl]) if h0 else "")
        if lstm:
            ins.append(ctx.add1("Slice", [c0, *sl]) if c0 else "")
        attrs = dict(hidden_size=hidden, direction="bidirectional" if dirs == 2 else "forward")
        if kind == "GRU":
            attrs["linear_before_reset"] = 1
        if kind == "RNN":
            act = "Tanh" if m.nonlinearity == "tanh" else "Relu"
            attrs["activations"] = [act] * dirs
        outs = ctx.add(kind, ins, n_out=3 if lstm else 2, **attrs)
        # Y: [seq, dirs, batch, hidden] -> [seq, batch, dirs * hidden]
        y = ctx.add1("Transpose", [outs[0]], perm=[0, 2, 1, 3])
        x = ctx.add1("Reshape", [y, ctx.ints([0, 0, -1])])
        hs.append(outs[1])
        if lstm:
            cs.append(outs[2])
    out = x
    if unbatched:
        out = ctx.add1("Squeeze", [out, ctx.ints([1])])
    elif m.batch_first:
        out = ctx.add1("Transpose", [out], perm=[1, 0, 2])
    h = hs[0] if len(hs) == 1 else ctx.add1("Concat", hs, axis=0)
    if unbatched:
        h = ctx.add1("Squeeze", [h, ctx.ints([1])])
    if not lstm:
        return [out, h]
    c = cs[0] if len(cs) == 1 else ctx.add1("Concat", cs, axis=0)
    if unbatched:
        c = ctx.add1("Squeeze", [c, ctx.ints([1])])
    return [out, h, c]


MODULE_SYMBOLICS["LSTM"] = _rnn
MODULE_SYMBOLICS["GRU"] = _rnn
MODULE_SYMBOLICS["RNN"] = _rnn

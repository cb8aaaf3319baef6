"""Specialised kernels: for a few hot ops the code generator writes the NumPy calls the op's
kernel would make, inline, with the checks the kernel makes at run time decided once at
compile time (dtypes, ranks and strides are fixed by the entry's guards), and the result
written into a reused buffer where the plan allows.

Each emitter mirrors its op's kernel call for call, so the results are eager's bit for bit
(the compile-time verification and tests/test_compile.py check it). An emitter returns the
lines computing its outputs, or None to leave the node to the generic path.
"""

from __future__ import annotations

import math

import numpy as np

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


class Site:
    """What an emitter sees of one node: ``args`` (source expressions), ``ins`` (the capture
    Value of each input, None for a constant), ``outs`` (the output names, ``"_"`` for an
    unused one), ``params``; ``out(k)`` is ``", out=<buffer>"`` when output ``k`` may be
    written into a reused buffer (else ""); ``number(i, dtype)`` is input ``i`` as a 0-d
    array of ``dtype`` when it is a Python number (the operand NumPy would convert it to)."""

    __slots__ = ("args", "ins", "outs", "out_meta", "params", "out", "number", "env")

    def __init__(self, args, ins, outs, out_meta, params, out, number, env=None):
        self.env = env  # the generated source's globals (an emitter may add constants)
        self.number = number
        self.args = args
        self.ins = ins
        self.outs = outs
        self.out_meta = out_meta
        self.params = params
        self.out = out


def _float(*vals) -> bool:
    dt = {v.dtype for v in vals if v is not None}
    return len(dt) == 1 and dt.pop() in _FLOATS and all(v is not None for v in vals)


# --- forwards (by op)


def _relu(s: Site):
    # unary._np_relu on a float array: np.maximum(x, 0) (the astype is a no-op)
    if not _float(s.ins[0]):
        return None
    return [f"{s.outs[0]} = np.maximum({s.args[0]}, 0{s.out(0, reuse=(0,))})"]


def _addmm(s: Site):
    # linalg addmm with beta = alpha = 1: the product, then the bias added into it in place
    inp, a, b = s.ins
    if s.params or not _float(inp, a, b) or inp.shape.__len__() > 2 or len(a.shape) != 2:
        return None
    o, x, y, z = s.outs[0], s.args[1], s.args[2], s.args[0]
    return [
        f"{o} = np.matmul({x}, {y}{s.out(0)})",
        f"np.add({o}, {z}, out={o}, casting='unsafe')",
    ]


def _view(s: Site):
    # shape._view of a row-major array: NumPy's reshape, a view (the shape is the result's)
    if s.ins[0] is None or not _c_contiguous(s.ins[0]) or s.out_meta[0] is None:
        return None
    return [f"{s.outs[0]} = {s.args[0]}.reshape({tuple(s.out_meta[0].shape)!r})"]


def _t(s: Site):
    return [f"{s.outs[0]} = {s.args[0]}.T"]


# --- array-level backwards (by the NumPy formula a fast backward runs)


def _lone(s: Site, i: int, shape) -> str:
    # pointwise.lone_value, decided statically: a broadcast scalar reads as one value
    g = s.ins[i]
    if len(g.shape) and g.shape == shape and not any(g.strides) and np.prod(g.shape):
        return f"{s.args[i]}[{(0,) * len(g.shape)!r}]"
    return s.args[i]


def _sin_backward(s: Site):
    # times(g, np.cos(x)): the cosine, then multiplied by g in place
    g, x = s.ins
    if not _float(g, x):
        return None
    o = s.outs[0]
    return [
        f"{o} = np.cos({s.args[1]}{s.out(0)})",
        f"np.multiply({o}, {_lone(s, 0, x.shape)}, {o})",
    ]


def _mul_backward(ctx):
    # _np_mul_backward when x * x's shortcut does not apply: np.multiply(g, other) per need
    need = ctx.needs_input_grad

    def emit(s: Site):
        if need[0] and need[1] and ctx.next_functions[0] == ctx.next_functions[1]:
            return None
        g, x, y = s.ins
        if g is None or g.dtype not in _FALSE_SAFE:
            return None
        lines = []
        if need[0]:
            if s.outs[0] == "_":
                return None
            y = s.number(2, g.dtype) if s.ins[2] is None else s.args[2]
            lines.append(f"{s.outs[0]} = np.multiply({s.args[0]}, {y}{s.out(0)})")
        if need[1]:
            if s.outs[1] == "_":
                return None
            x = s.number(1, g.dtype) if s.ins[1] is None else s.args[1]
            lines.append(f"{s.outs[1]} = np.multiply({s.args[0]}, {x}{s.out(1)})")
        return lines

    return emit


_FALSE_SAFE = _FLOATS

_FORWARD: dict = {}
_BACKWARD: dict = {}


def _tables():
    if not _FORWARD:
        from ember._ops import linalg as L
        from ember._ops import pointwise as P
        from ember._ops import shape as S
        from ember._ops import unary as U
        from ember.nn._functional import conv as K

        _FORWARD[U._relu] = _relu
        _FORWARD[L._addmm] = _addmm
        _FORWARD[S._t] = _t
        _FORWARD[S._view] = _view
        _FORWARD[K._convolution] = _convolution
        _BACKWARD[U._sin.array_backward_fn.np_fn] = lambda ctx: _sin_backward
        _BACKWARD[P._mul.array_backward_fn.np_fn] = _mul_backward
    return _FORWARD, _BACKWARD


def forward_emitter(op):
    """The emitter of ``op``'s forward, or None."""
    return _tables()[0].get(op)


def backward_emitter(payload):
    """The emitter of a directly called array backward (``partial(np_fn, ctx)``), or None."""
    func = getattr(payload, "func", None)
    make = _tables()[1].get(func) if func is not None else None
    if make is None or payload.keywords:
        return None
    return make(payload.args[0])


# --- convolution and max pooling (the paths eager's kernels take, decided at compile time)


def _c_contiguous(v) -> bool:
    want, acc = [], v.dtype.itemsize
    for s in reversed(v.shape):
        want.append(acc)
        acc *= s
    return all(s == 1 or a == b for s, a, b in zip(v.shape, v.strides, reversed(want)))


_CONV_COLS_MAX = 512 * 1024  # bytes of im2col this kernel keeps a buffer for


def _convolution(s: Site):
    # conv._convolution, non-transposed and ungrouped, on row-major float arrays, where eager
    # takes _conv_forward (per sample, or one GEMM over the folded batch): the input is copied
    # into a persistent padded buffer whose window view (made once) is copied to a persistent
    # im2col buffer; then the same GEMM and bias add as eager's
    from ember.nn._functional import conv as K

    x, w, b = s.ins
    p = s.params or {}
    if (
        p.get("transposed") is not False
        or p.get("groups") != 1
        or not _float(x, w)
        or (b is None and s.args[2] != "None")
        or (b is not None and b.dtype != x.dtype)
        or not all(_c_contiguous(v) for v in (x, w) + ((b,) if b is not None else ()))
    ):
        return None
    stride, padding, dilation = p["stride"], p["padding"], p["dilation"]
    xa = np.empty(x.shape, x.dtype)
    if K._rows_apply(xa, w.shape[-1], w.shape[0], padding, stride, dilation, 1):
        return None
    n, o, kernel = x.shape[0], w.shape[0], w.shape[2:]
    nd = len(kernel)
    out = K._conv_out(x.shape[2:], kernel, stride, padding, dilation)
    if n * w.shape[1] * math.prod(kernel) * math.prod(out) * x.dtype.itemsize > _CONV_COLS_MAX:
        return None  # (large: the copies dominate, and the buffers would hold the memory)
    env = s.env
    k = len([key for key in env if key.startswith("_cpad")])
    pad = K._pad_array(np.zeros(x.shape, x.dtype), padding)  # (the border stays zero)
    inner = pad[(...,) + tuple(slice(lo, lo + sz) for sz, (lo, _) in zip(x.shape[2:], padding))]
    win = K._windows(pad, kernel, stride, dilation, out)
    env[f"_cpad{k}"] = inner
    lines = [f"np.copyto(_cpad{k}, {s.args[0]})"]
    y = s.outs[0]
    bias = s.args[2] if b is not None else None
    if K._per_sample(xa, kernel, out, 1):
        col = np.empty(win.shape, x.dtype)
        env[f"_cwin{k}"], env[f"_ccol{k}"] = win, col
        env[f"_cmat{k}"] = col.reshape(n, -1, math.prod(out))
        lines.append(f"np.copyto(_ccol{k}, _cwin{k})")
        lines.append(f"{y} = np.matmul({s.args[1]}.reshape({o}, -1), _cmat{k})")
        if bias is not None:
            lines.append(f"np.add({y}, {bias}.reshape(-1, 1), out={y})")
        lines.append(f"{y} = {y}.reshape({(n, o) + tuple(out)!r})")
    else:
        perm = (1,) + tuple(range(2, 2 + nd)) + (0,) + tuple(range(2 + nd, 2 + 2 * nd))
        wt = win.transpose(perm)
        col = np.empty(wt.shape, x.dtype)
        env[f"_cwin{k}"], env[f"_ccol{k}"] = wt, col
        env[f"_cmat{k}"] = col.reshape(1, -1, n * math.prod(out))
        env.setdefault("_nchw", K._nchw)
        lines.append(f"np.copyto(_ccol{k}, _cwin{k})")
        lines.append(f"{y} = np.matmul({s.args[1]}.reshape(1, {o}, -1), _cmat{k})")
        lines.append(f"{y} = _nchw({y}.reshape({(o, n) + tuple(out)!r}), {bias})")
    return lines


def window_max(x: str, y: str, out: str, xv, consts) -> list | None:
    """The lines computing max pooling's values without its indices (no gradient needs them):
    the running ``np.maximum`` over the window offsets that pooling._max_indices makes, in its
    order, on strided views of ``x`` (no padding); None when the pooling pads."""
    from ember.nn._functional import pooling as PL

    kernel, stride, padding, dilation, ceil_mode = consts
    if xv is None or xv.dtype not in _FLOATS:
        return None
    nd = len(kernel)
    size = xv.shape[-nd:]
    res = PL._max_plan(
        size, tuple(kernel), tuple(stride), tuple(padding), tuple(dilation), ceil_mode
    )
    outs, pads, offsets = res[0], res[1], res[2]
    if any(lo or hi for lo, hi in pads):
        return None

    def view(k):
        sl = ", ".join(
            f"{ki * d}:{ki * d + t * (o - 1) + 1}:{t}"
            for ki, d, t, o in zip(k, dilation, stride, outs)
        )
        return f"{x}[..., {sl}]"

    if len(offsets) == 1:
        return [f"{y} = {view(offsets[0])}.copy()"]
    lines = [f"{y} = np.maximum({view(offsets[0])}, {view(offsets[1])}{out})"]
    lines += [f"np.maximum({y}, {view(k)}, out={y})" for k in offsets[2:]]
    return lines

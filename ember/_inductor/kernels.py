"""Specialised kernels: for a few hot ops the code generator writes the NumPy calls the op's
kernel would make, inline, with the checks the kernel makes at run time decided once at
compile time (dtypes, ranks and strides are fixed by the entry's guards), and the result
written into a reused buffer where the plan allows.

Each emitter mirrors its op's kernel call for call, so the results are eager's bit for bit
(the compile-time verification and tests/test_compile.py check it). An emitter returns the
lines computing its outputs, or None to leave the node to the generic path.
"""

from __future__ import annotations

import numpy as np

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


class Site:
    """What an emitter sees of one node: ``args`` (source expressions), ``ins`` (the capture
    Value of each input, None for a constant), ``outs`` (the output names, ``"_"`` for an
    unused one), ``params``; ``out(k)`` is ``", out=<buffer>"`` when output ``k`` may be
    written into a reused buffer (else ""); ``number(i, dtype)`` is input ``i`` as a 0-d
    array of ``dtype`` when it is a Python number (the operand NumPy would convert it to)."""

    __slots__ = ("args", "ins", "outs", "out_meta", "params", "out", "number")

    def __init__(self, args, ins, outs, out_meta, params, out, number):
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
    return [f"{s.outs[0]} = np.maximum({s.args[0]}, 0{s.out(0)})"]


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

        _FORWARD[U._relu] = _relu
        _FORWARD[L._addmm] = _addmm
        _FORWARD[S._t] = _t
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

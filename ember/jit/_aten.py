"""torch's aten schemas for the ops ember's graphs hold: how a recorded op-table call becomes a
node's positional arguments (``record``) and how a node runs on ember (``RUN``).

A recorder maps ``(inputs, params)`` of an op-table call to ``(kind, args)``; ``args`` holds
Tensors, Python constants, ``Wrapped`` numbers (a scalar operand torch records as a 0-d tensor
constant) and lists (a ``prim::ListConstruct``). Runners take the positional arguments and
call ember's public functions, the same kernels eager code runs.
"""

from __future__ import annotations

import numpy as np

import ember
from ember.jit.ir.graph import DTYPE_CODES

__all__ = [
    "RUN",
    "record_op",
    "record_composite",
    "Wrapped",
    "Scalar",
    "DTYPE_OF_CODE",
    "FACTORIES",
]

DTYPE_OF_CODE = {code: name for name, code in DTYPE_CODES.items()}


class Wrapped:
    """A Python number operand recorded as a 0-d tensor constant (torch's wrapped number)."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value


def _dtype(code):
    if code is None or not isinstance(code, int):
        return code
    return getattr(ember, DTYPE_OF_CODE[code].replace("torch.", ""))


def _scalar(x):
    if isinstance(x, np.generic):
        x = x.item()
    return Wrapped(x) if isinstance(x, (int, float, bool)) else x


def _alpha(inputs, params):
    return [inputs[0], _scalar(inputs[1]), params.get("alpha", 1)]


_BINARY = ("mul", "div")
_ALPHA = ("add", "sub", "rsub")
_COMPARE = ("gt", "lt", "ge", "le", "eq", "ne")
_UNARY = (
    "relu",
    "tanh",
    "sigmoid",
    "exp",
    "log",
    "neg",
    "abs",
    "sqrt",
    "rsqrt",
    "sin",
    "cos",
    "t",
    "reciprocal",
    "floor",
    "ceil",
    "sign",
    "erf",
    "log1p",
    "expm1",
    "square",
)


def _record_sum(name):
    def rec(inputs, params):
        dims = params.get("dims", params.get("dim"))
        if dims is None:
            return f"aten::{name}", [inputs[0], params.get("dtype")]
        dims = [dims] if isinstance(dims, int) else list(dims)
        return f"aten::{name}", [inputs[0], dims, bool(params.get("keepdim", False)),
                                 params.get("dtype")]  # fmt: skip

    return rec


_RECORD = {
    "view": lambda i, p: ("aten::view", [i[0], list(p["shape"])]),
    "transpose": lambda i, p: ("aten::transpose", [i[0], p["dim0"], p["dim1"]]),
    "permute": lambda i, p: ("aten::permute", [i[0], list(p["dims"])]),
    "unsqueeze": lambda i, p: ("aten::unsqueeze", [i[0], p["dim"]]),
    "select": lambda i, p: ("aten::select", [i[0], p["dim"], p["index"]]),
    "slice": lambda i, p: ("aten::slice", [i[0], p["dim"], p["start"], p["end"], p["step"]]),
    "matmul": lambda i, p: ("aten::matmul", [i[0], i[1]]),
    "addmm": lambda i, p: (
        "aten::addmm",
        [i[0], i[1], i[2], p.get("beta", 1), p.get("alpha", 1)],
    ),
    "cat": lambda i, p: ("aten::cat", [list(i), p["dim"]]),
    "stack": lambda i, p: ("aten::stack", [list(i), p["dim"]]),
    "_softmax": lambda i, p: ("aten::softmax", [i[0], p["dim"], None]),
    "_to_copy": lambda i, p: (
        "aten::to",
        [i[0], DTYPE_CODES.get(str(p.get("dtype")), p.get("dtype")), False, False, None],
    ),
    "sum": _record_sum("sum"),
    "mean": _record_sum("mean"),
}


def _default_gen(params) -> bool:
    return params.get("gen") is ember.default_generator


def _sampler(*names):
    """An in-place sampler ``aten::uniform_(self, from, to, generator)`` (``normal_``'s
    mean and std, ``bernoulli_``'s p): its parameters as floats (a Tensor p as itself)."""

    def rec(i, p):
        if not _default_gen(p):
            return None
        vals = [i[1] if len(i) > 1 else float(p[n]) for n in names]
        return f"aten::{rec.name}", [i[0], *vals, None]

    return rec


def _rec_bernoulli(i, p):
    """``aten::bernoulli(self, generator)`` or ``aten::bernoulli(self, p, generator)``."""
    if not _default_gen(p):
        return None
    return "aten::bernoulli", [i[0], *([float(p["p"])] if "p" in p else []), None]


def _rec_normal(i, p):
    """``aten::normal(mean, std, generator)`` with a Tensor mean and/or std."""
    if not _default_gen(p):
        return None
    if len(i) == 2:
        return "aten::normal", [i[0], i[1], None]
    if "std" in p:
        return "aten::normal", [i[0], float(p["std"]), None]
    return "aten::normal", [float(p["mean"]), i[0], None]


def _rec_clone(i, p):
    return None if p.get("memory_format") is not None else ("aten::clone", [i[0], None])


for _n, _names in (("uniform_", ("a", "b")), ("normal_", ("m", "s")), ("bernoulli_", ("p",))):
    _RECORD[_n] = _sampler(*_names)
    _RECORD[_n].name = _n
_RECORD.update({"bernoulli": _rec_bernoulli, "normal": _rec_normal, "clone": _rec_clone})
for _n in _BINARY:
    _RECORD[_n] = lambda i, p, _n=_n: (f"aten::{_n}", [i[0], _scalar(i[1])])
for _n in _ALPHA:
    _RECORD[_n] = lambda i, p, _n=_n: (f"aten::{_n}", _alpha(i, p))
for _n in _COMPARE:
    _RECORD[_n] = lambda i, p, _n=_n: (f"aten::{_n}", [i[0], _scalar(i[1])])
for _n in _UNARY:
    _RECORD[_n] = lambda i, p, _n=_n: (f"aten::{_n}", [i[0]])


def record_op(op, inputs, params, inplace: bool):
    """Return ``(kind, args)`` for an op-table call, or None when the op has no schema here
    (the tracer then records it with the op itself attached)."""
    rec = _RECORD.get(op.name)
    if rec is None:
        return None
    params = {k: v for k, v in params.items() if k != "out"}
    try:
        got = rec(inputs, params)
    except (KeyError, IndexError):
        return None
    if got is None:
        return None
    kind, args = got
    return (kind + "_" if inplace and not kind.endswith("_") else kind), args


# --- composites: the public function's arguments (bound by name) -> the node's arguments


def _pair(v, n):
    return [int(e) for e in v] if isinstance(v, (list, tuple)) else [int(v)] * n


def _rec_conv(a):
    n = a["weight"].dim() - 2
    if isinstance(a["padding"], str):
        return None
    return [
        a["input"],
        a["weight"],
        a["bias"],
        _pair(a["stride"], n),
        _pair(a["padding"], n),
        _pair(a["dilation"], n),
        False,
        [0] * n,
        int(a["groups"]),
        False,
        False,
        True,
        True,
    ]


_COMPOSITE = {
    "aten::linear": lambda a: [a["input"], a["weight"], a["bias"]],
    "aten::_convolution": _rec_conv,
    "aten::batch_norm": lambda a: [
        a["input"],
        a["weight"],
        a["bias"],
        a["running_mean"],
        a["running_var"],
        bool(a["training"]),
        float(a["momentum"]),
        float(a["eps"]),
        True,
    ],
    "aten::layer_norm": lambda a: [
        a["input"],
        _pair(a["normalized_shape"], 1),
        a["weight"],
        a["bias"],
        float(a["eps"]),
        True,
    ],
    "aten::dropout": lambda a: None
    if a["inplace"]
    else [a["input"], float(a["p"]), bool(a["training"])],
    "aten::relu": lambda a: None if a["inplace"] else [a["input"]],
    "aten::softmax": lambda a: None if a["dim"] is None else [a["input"], a["dim"], a["dtype"]],
    "aten::log_softmax": lambda a: None if a["dim"] is None else [a["input"], a["dim"], a["dtype"]],
    "aten::gelu": lambda a: [a["input"], a["approximate"]],
    "aten::max_pool2d": lambda a: None
    if a["return_indices"]
    else [
        a["input"],
        _pair(a["kernel_size"], 2),
        _pair(a["stride"] if a["stride"] not in (None, []) else a["kernel_size"], 2),
        _pair(a["padding"], 2),
        _pair(a["dilation"], 2),
        bool(a["ceil_mode"]),
    ],
}  # fmt: skip


def _sizes(a):
    args, size = a.get("args", ()), a.get("size")
    if size is not None:
        return list(size)
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        return list(args[0])
    return list(args)


def _dtype_code(dt):
    return None if dt is None else DTYPE_CODES.get(str(dt), dt)


def _device(dev):
    return ember.device("cpu" if dev is None else str(dev))


def _rec_factory(a):
    """``aten::rand(size, dtype, layout, device, pin_memory)`` as torch's tracer records it."""
    if a.get("generator") is not None or a.get("out") is not None or a.get("requires_grad"):
        return None
    tail = [_dtype_code(a["dtype"]), None, _device(a["device"]), bool(a["pin_memory"])]
    return [_sizes(a), *tail]


def _rec_randint(a):
    """``aten::randint([low,] high, size, dtype=Long, layout, device, pin_memory)``."""
    if a.get("generator") is not None or a.get("out") is not None or a.get("requires_grad"):
        return None
    args = list(a["args"])
    size = a["size"]
    if size is None and args and isinstance(args[-1], (tuple, list)):
        size = args.pop()
    if a["high"] is not None:
        args.append(a["high"])
    if a["low"] is not None:
        args.insert(0, a["low"])
    if size is None or not 1 <= len(args) <= 2:
        return None
    dt = _dtype_code(a["dtype"] if a["dtype"] is not None else ember.int64)
    return [*args, list(size), dt, None, _device(a["device"]), bool(a["pin_memory"])]


def _rec_like(a):
    """``aten::rand_like(input, dtype, layout, device, pin_memory, memory_format)``."""
    if a.get("generator") is not None or a.get("requires_grad"):
        return None
    dev = None if a["device"] is None else _device(a["device"])
    return [a["input"], _dtype_code(a["dtype"]), None, dev, False, None]


class Scalar:
    """A ``Scalar`` argument (``arange``'s bounds): a traced size passed as one is
    ``aten::ScalarImplicit`` of the size's tensor, as torch records it."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value


def _rec_filled(a):
    """``aten::zeros(size, dtype, layout, device, pin_memory)`` (``ones``); ``empty`` adds
    ``memory_format``."""
    if a.get("memory_format") is not None:
        return None
    args = _rec_factory(a)
    if args is None or not all(isinstance(e, int) for e in args[0]):
        return None
    return [*args, None] if "memory_format" in a else args


def _rec_full(a):
    """``aten::full(size, fill_value, dtype, layout, device, pin_memory)``."""
    if a["out"] is not None or a["requires_grad"] or not isinstance(a["size"], (list, tuple)):
        return None
    fill = a["fill_value"]
    if not isinstance(fill, (bool, int, float)):
        return None
    tail = [_dtype_code(a["dtype"]), None, _device(a["device"]), bool(a["pin_memory"])]
    return [list(a["size"]), fill, *tail]


def _rec_arange(a):
    """``aten::arange(end, ...)``, ``(start, end, ...)`` or ``(start, end, step, ...)`` as
    called, then ``dtype, layout, device, pin_memory``."""
    if a["out"] is not None or a["requires_grad"]:
        return None
    given = a["_given"]
    bounds = [a["start"]] if a["end"] is None else [a["start"], a["end"]]
    if "step" in given:
        bounds.append(a["step"])
    if not all(isinstance(b, (int, float)) and not isinstance(b, bool) for b in bounds):
        return None
    tail = [_dtype_code(a["dtype"]), None, _device(a["device"]), bool(a["pin_memory"])]
    return [*(Scalar(b) for b in bounds), *tail]


def _rec_filled_like(a):
    """``aten::zeros_like(input, dtype, layout, device, pin_memory, memory_format)``
    (``ones_like``, ``empty_like``; ``full_like`` has ``fill_value`` after ``input``)."""
    if a["requires_grad"] or a["memory_format"] is not None:
        return None
    dev = None if a["device"] is None else _device(a["device"])
    tail = [_dtype_code(a["dtype"]), None, dev, False, None]
    if "fill_value" not in a:
        return [a["input"], *tail]
    fill = a["fill_value"]
    return None if not isinstance(fill, (bool, int, float)) else [a["input"], fill, *tail]


def _rec_sdpa(a):
    """``aten::scaled_dot_product_attention(query, key, value, attn_mask, dropout_p,
    is_causal, scale, enable_gqa)``."""
    scale = a["scale"]
    return [a["query"], a["key"], a["value"], a["attn_mask"], float(a["dropout_p"]),
            bool(a["is_causal"]), None if scale is None else float(scale),
            bool(a["enable_gqa"])]  # fmt: skip


# deterministic factories: recorded only where user code calls them (library code may
# write into what it makes)
FACTORIES = frozenset(
    {"aten::zeros", "aten::ones", "aten::empty", "aten::full", "aten::arange",
     "aten::zeros_like", "aten::ones_like", "aten::empty_like", "aten::full_like"}
)  # fmt: skip

_COMPOSITE.update({
    "aten::zeros": _rec_filled,
    "aten::ones": _rec_filled,
    "aten::empty": _rec_filled,
    "aten::full": _rec_full,
    "aten::arange": _rec_arange,
    "aten::zeros_like": _rec_filled_like,
    "aten::ones_like": _rec_filled_like,
    "aten::empty_like": _rec_filled_like,
    "aten::full_like": _rec_filled_like,
    "aten::scaled_dot_product_attention": _rec_sdpa,
    "aten::rand": _rec_factory,
    "aten::randn": _rec_factory,
    "aten::randint": _rec_randint,
    "aten::rand_like": _rec_like,
    "aten::randn_like": _rec_like,
})  # fmt: skip


def record_composite(kind: str, bound: dict):
    """Return the node's arguments for composite ``kind`` called with ``bound`` (names ->
    values, defaults applied), or None to record the ops inside instead."""
    rec = _COMPOSITE.get(kind)
    return None if rec is None else rec(bound)


# --- running nodes


def _F():
    import ember.nn.functional as F

    return F


def _conv(x, w, b, stride, padding, dilation, transposed, output_padding, groups, *_):
    F = _F()
    n = len(stride)
    if transposed:
        fn = getattr(F, f"conv_transpose{n}d")
        return fn(x, w, b, stride, padding, output_padding, groups, dilation)
    return getattr(F, f"conv{n}d")(x, w, b, stride, padding, dilation, groups)


def _reduce(name):
    def run(x, *args):
        fn = getattr(ember, name)
        if len(args) <= 1:
            return fn(x, dtype=_dtype(args[0])) if args and args[0] is not None else fn(x)
        dims, keepdim, dtype = args
        if dtype is not None:
            return fn(x, dims, keepdim, dtype=_dtype(dtype))
        return fn(x, dims, keepdim)

    return run


def _inplace(name):
    def run(self, *args):
        if name in _ALPHA:
            return getattr(self, name + "_")(args[0], alpha=args[1])
        return getattr(self, name + "_")(*args)

    return run


def _factory(fn):
    def run(sizes, dtype, layout, device, pin_memory):
        return fn(sizes, dtype=_dtype(dtype))

    return run


def _randint(*args):
    *bounds, sizes, dtype, _layout, _device, _pin = args
    return ember.randint(*bounds, tuple(sizes), dtype=_dtype(dtype))


def _like(fn):
    def run(x, dtype, layout, device, pin_memory, memory_format):
        return fn(x, dtype=_dtype(dtype))

    return run


def _arange(*args):
    *bounds, dtype, _layout, _device, _pin = args
    return ember.arange(*bounds, dtype=_dtype(dtype))


def _empty(sizes, dtype, layout, device, pin_memory, memory_format):
    return ember.empty(sizes, dtype=_dtype(dtype))


def _full(sizes, fill, dtype, layout, device, pin_memory):
    return ember.full(sizes, fill, dtype=_dtype(dtype))


def _full_like(x, fill, dtype, layout, device, pin_memory, memory_format):
    return ember.full_like(x, fill, dtype=_dtype(dtype))


def _new(name):
    def run(x, sizes, *rest):
        *fill, dtype, _layout, _device, _pin = rest
        return getattr(x, name)(sizes, *fill, dtype=_dtype(dtype))

    return run


RUN = {
    **{f"aten::{k}": _new(k) for k in ("new_zeros", "new_ones", "new_empty", "new_full")},
    "aten::zeros": _factory(ember.zeros),
    "aten::ones": _factory(ember.ones),
    "aten::empty": _empty,
    "aten::full": _full,
    "aten::arange": _arange,
    "aten::ScalarImplicit": lambda t: t.item(),
    "aten::zeros_like": _like(ember.zeros_like),
    "aten::ones_like": _like(ember.ones_like),
    "aten::empty_like": _like(ember.empty_like),
    "aten::full_like": _full_like,
    "aten::rand": _factory(ember.rand),
    "aten::randn": _factory(ember.randn),
    "aten::randint": _randint,
    "aten::rand_like": _like(ember.rand_like),
    "aten::randn_like": _like(ember.randn_like),
    "aten::mul": ember.mul,
    "aten::div": ember.div,
    "aten::add": lambda a, b, alpha=1: ember.add(a, b) if alpha == 1
    else ember.add(a, b, alpha=alpha),
    "aten::sub": lambda a, b, alpha=1: ember.sub(a, b) if alpha == 1
    else ember.sub(a, b, alpha=alpha),
    "aten::rsub": lambda a, b, alpha=1: ember.rsub(a, b, alpha=alpha),
    "aten::view": lambda x, shape: x.view(shape),
    "aten::reshape": lambda x, shape: x.reshape(shape),
    "aten::transpose": ember.transpose,
    "aten::permute": lambda x, dims: x.permute(dims),
    "aten::unsqueeze": ember.unsqueeze,
    "aten::select": ember.select,
    "aten::slice": lambda x, dim, start, end, step: x[
        (slice(None),) * (dim % x.dim()) + (slice(start, end, step),)
    ],
    "aten::matmul": ember.matmul,
    "aten::addmm": lambda b, x, y, beta=1, alpha=1: ember.addmm(b, x, y, beta=beta, alpha=alpha),
    "aten::cat": ember.cat,
    "aten::stack": ember.stack,
    "aten::softmax": lambda x, dim, dtype=None: _F().softmax(x, dim, dtype=_dtype(dtype)),
    "aten::log_softmax": lambda x, dim, dtype=None: _F().log_softmax(x, dim, dtype=_dtype(dtype)),
    "aten::to": lambda x, dtype, *rest: x.to(_dtype(dtype)),
    "aten::sum": _reduce("sum"),
    "aten::mean": _reduce("mean"),
    "aten::linear": lambda x, w, b=None: _F().linear(x, w, b),
    "aten::_convolution": _conv,
    "aten::conv1d": lambda x, w, b, s, p, d, g: _F().conv1d(x, w, b, s, p, d, g),
    "aten::conv2d": lambda x, w, b, s, p, d, g: _F().conv2d(x, w, b, s, p, d, g),
    "aten::conv3d": lambda x, w, b, s, p, d, g: _F().conv3d(x, w, b, s, p, d, g),
    "aten::batch_norm": lambda x, w, b, rm, rv, training, momentum, eps, *_: _F().batch_norm(
        x, rm, rv, w, b, training, momentum, eps
    ),
    "aten::layer_norm": lambda x, shape, w, b, eps, *_: _F().layer_norm(x, shape, w, b, eps),
    "aten::scaled_dot_product_attention": lambda q, k, v, mask, p, causal, scale, gqa: _F()
    .scaled_dot_product_attention(q, k, v, mask, p, causal, scale=scale, enable_gqa=gqa),
    "aten::dropout": lambda x, p, train: _F().dropout(x, p, train),
    "aten::gelu": lambda x, approximate="none": _F().gelu(x, approximate=approximate),
    "aten::max_pool2d": lambda x, k, s, p, d, c: _F().max_pool2d(x, k, s, p, d, c),
    "aten::uniform_": lambda x, a, b, generator: x.uniform_(a, b),
    "aten::normal_": lambda x, m, s, generator: x.normal_(m, s),
    "aten::bernoulli_": lambda x, p, generator: x.bernoulli_(p),
    "aten::bernoulli": lambda x, *p: ember.bernoulli(x, *p[:-1]),
    "aten::normal": lambda m, s, generator: ember.normal(m, s),
    "aten::fill_": lambda x, value: x.fill_(value),
    "aten::contiguous": lambda x, memory_format=None: x.contiguous(),
    "aten::clone": lambda x, memory_format=None: x.clone(),
    "aten::flatten": lambda x, start=0, end=-1: ember.flatten(x, start, end),
    "aten::size": lambda x, dim=None: x.size() if dim is None else x.size(dim),
    "aten::dim": lambda x: x.dim(),
    "aten::len": len,
    "aten::Bool": bool,
    "aten::Int": int,
    "aten::Float": float,
    "aten::__getitem__": lambda xs, i: xs[i],
    "aten::neg": ember.neg,
}  # fmt: skip
for _n in _COMPARE + _UNARY:
    RUN.setdefault(f"aten::{_n}", getattr(ember, _n))
for _n in _BINARY + _ALPHA + _UNARY:
    RUN[f"aten::{_n}_"] = _inplace(_n)

"""The ops a TorchScript archive's code may call (``torch.X``, ``ops.aten.X``, ``ops.prim.X``):
for each, its parameters (names and defaults, as torch's schema has them, so keyword and
omitted arguments bind at load time) and the function running it on ember.

A name not in this table is an op ember lacks: loading an archive that calls it fails at load
time, naming the op and the source line. Runners call ember's public functions, so results and
gradients are eager ember's.
"""

from __future__ import annotations

import ast
import math
import string
import warnings

import ember
from ember.jit._aten import _dtype

__all__ = ["OPS", "Schema", "lookup"]

_MISSING = object()


class Schema:
    """One op: ``kind`` (``aten::add``), parameter names, defaults, the runner."""

    __slots__ = ("kind", "names", "defaults", "varargs", "run", "out")

    def __init__(self, kind: str, params: str, run, out: str = "Tensor"):
        self.kind = kind
        self.run = run
        self.out = out  # the result's type annotation (for printing graphs)
        self.varargs = params.strip() == "*"
        self.names: list[str] = []
        self.defaults: list = []
        if self.varargs:
            return
        fn = ast.parse(f"def f({params}): pass").body[0].args
        self.names = [a.arg for a in fn.args]
        first = len(fn.args) - len(fn.defaults)
        self.defaults = [_MISSING] * first + [ast.literal_eval(d) for d in fn.defaults]

    def bind(self, args: list, kwargs: dict) -> list:
        """Return the full positional argument list (defaults filled); raise on a mismatch."""
        if self.varargs:
            if kwargs:
                raise TypeError(f"{self.kind} takes no keyword arguments here")
            return list(args)
        if len(args) > len(self.names):
            raise TypeError(
                f"{self.kind} takes at most {len(self.names)} arguments, got {len(args)}"
            )
        out = list(args) + [_MISSING] * (len(self.names) - len(args))
        for k, v in kwargs.items():
            if k not in self.names:
                raise TypeError(f"{self.kind} has no argument named '{k}'")
            i = self.names.index(k)
            if out[i] is not _MISSING:
                raise TypeError(f"{self.kind} got argument '{k}' twice")
            out[i] = v
        for i, v in enumerate(out):
            if v is _MISSING:
                if self.defaults[i] is _MISSING:
                    raise TypeError(f"{self.kind} is missing argument '{self.names[i]}'")
                out[i] = self.defaults[i]
        return out


def _F():
    import ember.nn.functional as F

    return F


def _is_tensor(x) -> bool:
    return isinstance(x, ember.Tensor)


def _binary(tensor_fn, py_fn):
    def run(a, b, *rest):
        if not _is_tensor(a) and not _is_tensor(b):
            return py_fn(a, b)
        return tensor_fn(a, b, *rest)

    return run


def _add(a, b, alpha=1):
    if not _is_tensor(a) and not _is_tensor(b):
        return a + b  # numbers, lists, strings
    return ember.add(a, b) if alpha == 1 else ember.add(a, b, alpha=alpha)


def _sub(a, b, alpha=1):
    if not _is_tensor(a) and not _is_tensor(b):
        return a - b
    return ember.sub(a, b) if alpha == 1 else ember.sub(a, b, alpha=alpha)


def _div(a, b, rounding_mode=None):
    if not _is_tensor(a) and not _is_tensor(b):
        return a / b
    if rounding_mode is None:
        return ember.div(a, b)
    return ember.div(a, b, rounding_mode=rounding_mode)


def _cmp(name, py):
    def run(a, b):
        if _is_tensor(a) or _is_tensor(b):
            return getattr(ember, name)(a, b)
        return py(a, b)

    return run


def _reduce(name):
    def run(x, dim=None, keepdim=False, dtype=None):
        if isinstance(x, list):  # sum.int / sum.float of a list of numbers
            return sum(x)
        fn = getattr(ember, name)
        kw = {} if dtype is None else {"dtype": _dtype(dtype)}
        if isinstance(dim, int) and not isinstance(dim, bool) and name == "sum":
            dim = [dim]
        if dim is None:
            return fn(x, **kw)
        return fn(x, dim, keepdim, **kw)

    return run


def _conv(x, w, b, stride, padding, dilation, transposed, output_padding, groups, *_):
    F = _F()
    n = w.dim() - 2
    if transposed:
        fn = getattr(F, f"conv_transpose{n}d")
        return fn(x, w, b, stride, padding, output_padding, groups, dilation)
    return getattr(F, f"conv{n}d")(x, w, b, stride, padding, dilation, groups)


def _to(x, *args):
    # to(dtype, non_blocking, copy, memory_format) | to(device, dtype, ...) | to(other, ...)
    for a in args[:2]:
        if _is_tensor(a):
            return x.to(a.dtype)
        if isinstance(a, int) and not isinstance(a, bool):
            return x.to(_dtype(a))
    return x


def _zeros(fn):
    def run(size, dtype=None, layout=None, device=None, pin_memory=None):
        return fn(list(size), dtype=_dtype(dtype) if dtype is not None else None)

    return run


def _stacked_recurrence(cell, x, states, params, has_biases, num_layers, dropout, train,
                        bidirectional, batch_first):  # fmt: skip
    """The driver the input versions of ``aten::lstm``/``gru``/``rnn_*`` share: layers, then
    directions (the reverse one walks the steps backwards), ``cell(x_t, state, w_ih, w_hh,
    b_ih, b_hh)`` per step returning the new state tuple (its first element the step's
    output), dropout between layers. ``states`` are the initial stacked states (``(h0,)`` or
    ``(h0, c0)``); returns the output and each final state stacked over layers and
    directions."""
    per = 4 if has_biases else 2
    dirs = 2 if bidirectional else 1
    layer_in = x.transpose(0, 1) if batch_first else x
    finals = [[] for _ in states]
    for layer in range(num_layers):
        outs = []
        for d in range(dirs):
            k = (layer * dirs + d) * per
            w_ih, w_hh = params[k], params[k + 1]
            b_ih, b_hh = (params[k + 2], params[k + 3]) if has_biases else (None, None)
            state = tuple(s[layer * dirs + d] for s in states)
            steps = range(layer_in.shape[0])
            ys = [None] * layer_in.shape[0]
            for t in reversed(steps) if d == 1 else steps:
                state = cell(layer_in[t], state, w_ih, w_hh, b_ih, b_hh)
                ys[t] = state[0]
            outs.append(ember.stack(ys, 0))
            for acc, v in zip(finals, state):
                acc.append(v)
        layer_in = outs[0] if dirs == 1 else ember.cat(outs, 2)
        if dropout and train and layer < num_layers - 1:
            layer_in = _F().dropout(layer_in, dropout, True)
    out = layer_in.transpose(0, 1) if batch_first else layer_in
    return (out, *(ember.stack(acc, 0) for acc in finals))


def _lstm_cell(x, state, w_ih, w_hh, b_ih, b_hh):
    h, c = state
    gates = _F().linear(x, w_ih, b_ih) + _F().linear(h, w_hh, b_hh)
    i, f, g, o = gates.chunk(4, 1)
    c = ember.sigmoid(f) * c + ember.sigmoid(i) * ember.tanh(g)
    return ember.sigmoid(o) * ember.tanh(c), c


def _gru_cell(x, state, w_ih, w_hh, b_ih, b_hh):
    (h,) = state
    ir, iz, in_ = _F().linear(x, w_ih, b_ih).chunk(3, 1)
    hr, hz, hn = _F().linear(h, w_hh, b_hh).chunk(3, 1)
    r = ember.sigmoid(ir + hr)
    z = ember.sigmoid(iz + hz)
    n = ember.tanh(in_ + r * hn)
    return ((1 - z) * n + z * h,)


def _lstm(x, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first):
    """``aten::lstm`` (input version): stacked, optionally bidirectional LSTM on ember ops."""
    args = (params, has_biases, num_layers, dropout, train, bidirectional, batch_first)
    return _stacked_recurrence(_lstm_cell, x, tuple(hx), *args)


def _gru(x, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first):
    """``aten::gru`` (input version): stacked, optionally bidirectional GRU on ember ops."""
    args = (params, has_biases, num_layers, dropout, train, bidirectional, batch_first)
    return _stacked_recurrence(_gru_cell, x, (hx,), *args)


def _minmax(name):
    def run(x, *args):
        fn = getattr(ember, name)
        if not args:
            return fn(x)
        if _is_tensor(args[0]):
            return getattr(ember, "maximum" if name == "max" else "minimum")(x, args[0])
        values, indices = fn(x, args[0], bool(args[1]) if len(args) > 1 else False)
        return values, indices

    return run


def _like(fn):
    def run(x, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
        return fn(x, dtype=_dtype(dtype) if dtype is not None else None)

    return run


def _full(size, value, dtype=None, layout=None, device=None, pin_memory=None):
    return ember.full(list(size), value, dtype=_dtype(dtype) if dtype is not None else None)


def _additive_mask(mask, dtype):
    if mask is None or mask.dtype is not ember.bool:
        return mask
    return ember.zeros(mask.shape, dtype=dtype).masked_fill(mask, float("-inf"))


def _attention(q, k, v, heads, mask, mask_type):
    """Multi-head attention of projected (B, L, E) q/k/v; returns (B, L, E) and the per-head
    weights (B, H, L, S). ``mask`` is a (B, S) key padding mask (``mask_type`` 1) or an
    (L, S) / (B, H, L, S) attention mask."""
    b, L, e = q.shape
    s_len = k.shape[1]
    d = e // heads

    def split(x, n):
        return x.reshape([b, n, heads, d]).transpose(1, 2)

    q, k, v = split(q, L), split(k, s_len), split(v, s_len)
    scores = ember.matmul(q, k.transpose(-2, -1)) / math.sqrt(d)
    if mask is not None:
        m = _additive_mask(mask, scores.dtype)
        if mask_type == 1 or (m.dim() == 2 and m.shape[0] == b and m.shape[0] != L):
            m = m.reshape([b, 1, 1, s_len])
        scores = scores + m
    w = _F().softmax(scores, -1)
    out = ember.matmul(w, v).transpose(1, 2).reshape([b, L, e])
    return out, w


def _encoder_layer_fwd(src, embed_dim, num_heads, qkv_w, qkv_b, proj_w, proj_b, use_gelu,
                       norm_first, eps, n1_w, n1_b, n2_w, n2_b, f1_w, f1_b, f2_w, f2_b,
                       mask=None, mask_type=None):  # fmt: skip
    """``aten::_transformer_encoder_layer_fwd`` (torch's fused inference path) from ember ops."""
    F = _F()

    def sa(x):
        q, k, v = F.linear(x, qkv_w, qkv_b).chunk(3, -1)
        out, _ = _attention(q, k, v, num_heads, mask, mask_type)
        return F.linear(out, proj_w, proj_b)

    def ff(x):
        h = F.linear(x, f1_w, f1_b)
        return F.linear(F.gelu(h) if use_gelu else F.relu(h), f2_w, f2_b)

    def ln(x, w, b):
        return F.layer_norm(x, [embed_dim], w, b, eps)

    x = src
    if norm_first:
        x = x + sa(ln(x, n1_w, n1_b))
        return x + ff(ln(x, n2_w, n2_b))
    x = ln(x + sa(x), n1_w, n1_b)
    return ln(x + ff(x), n2_w, n2_b)


def _native_mha(query, key, value, embed_dim, num_head, qkv_w, qkv_b, proj_w, proj_b,
                mask=None, need_weights=True, average_attn_weights=True,
                mask_type=None):  # fmt: skip
    """``aten::_native_multi_head_attention`` (batch-first inputs) from ember ops."""
    F = _F()
    wq, wk, wv = qkv_w.chunk(3, 0)
    bq, bk, bv = qkv_b.chunk(3, 0) if qkv_b is not None else (None, None, None)
    out, w = _attention(
        F.linear(query, wq, bq), F.linear(key, wk, bk), F.linear(value, wv, bv), num_head,
        mask, mask_type,
    )  # fmt: skip
    out = F.linear(out, proj_w, proj_b)
    if not need_weights:
        return out, None
    return out, (w.mean(1) if average_attn_weights else w)


def _logical(name, py):
    def run(x, dim=None, keepdim=False):
        if not _is_tensor(x):
            return py(x)  # the bool[] overload
        fn = getattr(ember, name)
        return fn(x) if dim is None else fn(x, dim, keepdim)

    return run


def _no_nested(name):
    def run(*args):
        raise RuntimeError(
            f"ember cannot run {name}: it has no nested tensors (the archive took torch's "
            "nested-tensor fast path)"
        )

    return run


def _rnn(nonlinearity):
    act = ember.tanh if nonlinearity == "tanh" else ember.relu

    def cell(x, state, w_ih, w_hh, b_ih, b_hh):
        return (act(_F().linear(x, w_ih, b_ih) + _F().linear(state[0], w_hh, b_hh)),)

    def run(x, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first):
        """``aten::rnn_tanh`` / ``aten::rnn_relu`` (input version) on ember ops."""
        args = (params, has_biases, num_layers, dropout, train, bidirectional, batch_first)
        return _stacked_recurrence(cell, x, (hx,), *args)

    return run


def _upsample(mode, with_align):
    def run(x, size, *rest):
        align = None
        if with_align:
            align, rest = rest[0], rest[1:]
        scales = rest[0] if rest else None
        if scales is not None and not isinstance(scales, (list, tuple)):
            scales = list(rest)  # the per-dimension scales overload
            if all(s is None for s in scales):
                scales = None
        return _F().interpolate(
            x, size=None if size is None else list(size), scale_factor=scales, mode=mode,
            align_corners=align,
        )  # fmt: skip

    return run


def _upsample_aa(mode):
    def run(x, size, align, scales):
        return _F().interpolate(
            x, size=None if size is None else list(size), scale_factor=scales, mode=mode,
            align_corners=align, antialias=True,
        )  # fmt: skip

    return run


def _no_kernel(name):
    def run(*args):
        raise RuntimeError(f"ember has no kernel for {name}")

    return run


def _new(fn):
    def run(x, size, dtype=None, layout=None, device=None, pin_memory=None):
        return fn(list(size), dtype=_dtype(dtype) if dtype is not None else x.dtype)

    return run


def _new_full(x, size, value, dtype=None, layout=None, device=None, pin_memory=None):
    return ember.full(list(size), value, dtype=_dtype(dtype) if dtype is not None else x.dtype)


_TAIL = "dtype=None, layout=None, device=None, pin_memory=None"


def _std_var(name):
    def run(x, dim=None, unbiased=True, keepdim=False, correction=None):
        fn = getattr(ember, name)
        if correction is not None:
            return fn(x, dim, keepdim=keepdim, correction=correction)
        if dim is None:
            return fn(x, unbiased=unbiased)
        return fn(x, dim, unbiased, keepdim)

    return run


def _inplace_f(name):
    def run(x, *args):
        return x.copy_(getattr(_F(), name)(x, *args))

    return run


def _embedding(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    return _F().embedding(indices, weight, None if padding_idx == -1 else padding_idx)


def _max_pool(n):
    def run(x, k, stride=(), padding=0, dilation=1, ceil_mode=False):
        fn = getattr(_F(), f"max_pool{n}d")
        return fn(x, k, list(stride) or None, padding, dilation, ceil_mode)

    return run


def _avg_pool2d(x, k, stride=(), padding=0, ceil_mode=False, count_include_pad=True, div=None):
    return _F().avg_pool2d(x, k, list(stride) or None, padding, ceil_mode, count_include_pad, div)


def _slice(x, dim=0, start=None, end=None, step=1):
    if not _is_tensor(x):
        return x[start:end:step]
    return x[(slice(None),) * (dim % x.dim()) + (slice(start, end, step),)]


def _size(x, dim=None):
    return list(x.shape) if dim is None else x.shape[dim]


def _getitem(xs, i):
    return xs[i]


def _set_item(xs, i, v):
    xs[i] = v
    return xs


def _append(xs, v):
    xs.append(v)
    return xs


def _raise(msg="Exception", cls=None):
    raise RuntimeError(f"The following operation failed in the TorchScript interpreter.\n{msg}")


def _warn(message, stacklevel=2):
    warnings.warn(str(message), stacklevel=2)


def check_format(fmt) -> None:
    """Allow only positional fields (``{}``, ``{0}``): ``{0.__class__}`` would reach into the
    objects formatted."""
    if type(fmt) is not str:
        raise RuntimeError(f"torch.format: the format is a {type(fmt).__name__}, not a str")
    for _, field, _, _ in string.Formatter().parse(fmt):
        if field and not field.isdigit():
            raise RuntimeError(f"torch.format: the format field {{{field}}} is not allowed")


def _format(fmt, *args):
    check_format(fmt)
    return fmt.format(*(_fmt_value(a) for a in args))


def _fmt_value(a):
    if isinstance(a, list):
        return "[" + ", ".join(str(x) for x in a) + "]"
    return a


def _int(x):
    return int(x.item()) if _is_tensor(x) else int(x)


def _float(x):
    return float(x.item()) if _is_tensor(x) else float(x)


def _bool(x):
    return bool(x.item()) if _is_tensor(x) else bool(x)


def _tensor(data, dtype=None, device=None, requires_grad=False):
    return ember.tensor(data, dtype=_dtype(dtype) if dtype is not None else None)


def _contiguous(x, memory_format=0):
    return x.contiguous()


def _sdpa(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    return _F().scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal, scale=scale)


def _layer_norm(x, shape, w=None, b=None, eps=1e-5, cudnn_enable=True):
    return _F().layer_norm(x, list(shape), w, b, eps)


def _batch_norm(x, w, b, rm, rv, training, momentum, eps, cudnn_enabled=True):
    return _F().batch_norm(x, rm, rv, w, b, training, momentum, eps)


def _inplace(name):
    def run(self, *args):
        return getattr(self, name)(*args)

    return run


def _alpha_inplace(name):
    def run(self, other, alpha=1):
        fn = getattr(self, name)
        return fn(other) if alpha == 1 else fn(other, alpha=alpha)

    return run


def _dict(*args):
    return dict(args[0]) if args else {}


def _dict_construct(*kv):
    return {kv[i]: kv[i + 1] for i in range(0, len(kv), 2)}


def _unary(name):
    def run(x):
        if not _is_tensor(x):  # the float overloads (math.sqrt...)
            return _MATH[name](x)
        return getattr(ember, name)(x)

    return run


_MATH = {
    "relu": lambda x: max(x, 0),
    "sigmoid": lambda x: 1 / (1 + math.exp(-x)),
    "tanh": math.tanh,
    "exp": math.exp,
    "log": math.log,
    "sqrt": math.sqrt,
    "rsqrt": lambda x: 1 / math.sqrt(x),
    "abs": abs,
    "sin": math.sin,
    "cos": math.cos,
    "erf": math.erf,
}


_TABLE: list[tuple] = [
    # arithmetic (Tensor or Python numbers)
    ("add", "self, other, alpha=1", _add),
    ("sub", "self, other, alpha=1", _sub),
    ("mul", "self, other", _binary(ember.mul, lambda a, b: a * b)),
    ("div", "self, other, rounding_mode=None", _div),
    ("rsub", "self, other, alpha=1", lambda a, b, alpha=1: ember.rsub(a, b, alpha=alpha)),
    ("floordiv", "self, other", _binary(ember.floor_divide, lambda a, b: a // b)),
    ("floor_divide", "self, other", ember.floor_divide),
    ("remainder", "self, other", _binary(ember.remainder, lambda a, b: a % b)),
    ("pow", "self, exponent", _binary(ember.pow, lambda a, b: a**b)),
    ("neg", "self", lambda x: -x),
    ("matmul", "self, other", ember.matmul),
    ("mm", "self, mat2", ember.mm),
    ("bmm", "self, mat2", ember.bmm),
    ("addmm", "self, mat1, mat2, beta=1, alpha=1",
     lambda b, x, y, beta=1, alpha=1: ember.addmm(b, x, y, beta=beta, alpha=alpha)),
    ("linear", "input, weight, bias=None", lambda x, w, b=None: _F().linear(x, w, b)),
    ("t", "self", ember.t),
    # comparisons and logic
    ("gt", "self, other", _cmp("gt", lambda a, b: a > b), "bool"),
    ("lt", "self, other", _cmp("lt", lambda a, b: a < b), "bool"),
    ("ge", "self, other", _cmp("ge", lambda a, b: a >= b), "bool"),
    ("le", "self, other", _cmp("le", lambda a, b: a <= b), "bool"),
    ("eq", "self, other", _cmp("eq", lambda a, b: a == b), "bool"),
    ("ne", "self, other", _cmp("ne", lambda a, b: a != b), "bool"),
    ("__is__", "self, obj", lambda a, b: a is b, "bool"),
    ("__isnot__", "self, obj", lambda a, b: a is not b, "bool"),
    ("__not__", "self", lambda a: not a, "bool"),
    ("__and__", "self, other", _binary(ember.logical_and, lambda a, b: a and b)),
    ("__or__", "self, other", _binary(ember.logical_or, lambda a, b: a or b)),
    ("__contains__", "dict, key", lambda d, k: k in d, "bool"),
    # activations, normalisation, convolution, pooling
    ("softmax", "self, dim, dtype=None",
     lambda x, dim, dtype=None: _F().softmax(x, dim, dtype=_dtype(dtype))),
    ("log_softmax", "self, dim, dtype=None",
     lambda x, dim, dtype=None: _F().log_softmax(x, dim, dtype=_dtype(dtype))),
    ("gelu", "self, approximate='none'", lambda x, a="none": _F().gelu(x, approximate=a)),
    ("silu", "self", lambda x: _F().silu(x)),
    ("hardtanh", "self, min_val=-1.0, max_val=1.0", lambda x, a, b: _F().hardtanh(x, a, b)),
    ("leaky_relu", "self, negative_slope=0.01", lambda x, s: _F().leaky_relu(x, s)),
    ("dropout", "input, p, train", lambda x, p, train: _F().dropout(x, p, train)),
    ("dropout_", "input, p, train", lambda x, p, train: _F().dropout(x, p, train, inplace=True)),
    ("_convolution", "input, weight, bias, stride, padding, dilation, transposed, "
     "output_padding, groups, benchmark, deterministic, cudnn_enabled, allow_tf32", _conv),
    ("conv1d", "input, weight, bias=None, stride=[1], padding=[0], dilation=[1], groups=1",
     lambda *a: _F().conv1d(*a)),
    ("conv2d", "input, weight, bias=None, stride=[1, 1], padding=[0, 0], dilation=[1, 1], "
     "groups=1", lambda *a: _F().conv2d(*a)),
    ("batch_norm", "input, weight, bias, running_mean, running_var, training, momentum, eps, "
     "cudnn_enabled", _batch_norm),
    ("layer_norm", "input, normalized_shape, weight=None, bias=None, eps=1e-05, "
     "cudnn_enable=True", _layer_norm),
    ("max_pool1d", "self, kernel_size, stride=[], padding=[0], dilation=[1], ceil_mode=False",
     _max_pool(1)),
    ("max_pool2d", "self, kernel_size, stride=[], padding=[0, 0], dilation=[1, 1], "
     "ceil_mode=False", _max_pool(2)),
    ("avg_pool2d", "self, kernel_size, stride=[], padding=[0, 0], ceil_mode=False, "
     "count_include_pad=True, divisor_override=None", _avg_pool2d),
    ("adaptive_avg_pool2d", "self, output_size",
     lambda x, s: _F().adaptive_avg_pool2d(x, list(s))),
    ("embedding", "weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False",
     _embedding),
    ("lstm", "input, hx, params, has_biases, num_layers, dropout, train, bidirectional, "
     "batch_first", _lstm, "Tuple[Tensor, Tensor, Tensor]"),
    ("gru", "input, hx, params, has_biases, num_layers, dropout, train, bidirectional, "
     "batch_first", _gru, "Tuple[Tensor, Tensor]"),
    ("scaled_dot_product_attention", "query, key, value, attn_mask=None, dropout_p=0.0, "
     "is_causal=False, scale=None, enable_gqa=False", _sdpa),
    # shapes and views
    ("view", "self, size", lambda x, s: x.view(list(s))),
    ("reshape", "self, shape", lambda x, s: x.reshape(list(s))),
    ("flatten", "self, start_dim=0, end_dim=-1", lambda x, a, b: ember.flatten(x, a, b)),
    ("unflatten", "self, dim, sizes", lambda x, d, s: x.unflatten(d, list(s))),
    ("transpose", "self, dim0, dim1", ember.transpose),
    ("permute", "self, dims", lambda x, d: x.permute(list(d))),
    ("contiguous", "self, memory_format=0", _contiguous),
    ("unsqueeze", "self, dim", ember.unsqueeze),
    ("squeeze", "self, dim=None", lambda x, d=None: x.squeeze() if d is None else x.squeeze(d)),
    ("select", "self, dim, index", ember.select),
    ("slice", "self, dim=0, start=None, end=None, step=1", _slice),
    ("expand", "self, size, implicit=False", lambda x, s, i=False: x.expand(*s)),
    ("cat", "tensors, dim=0", lambda ts, d: ember.cat(list(ts), d)),
    ("stack", "tensors, dim=0", lambda ts, d: ember.stack(list(ts), d)),
    ("chunk", "self, chunks, dim=0", lambda x, c, d: list(ember.chunk(x, c, d)), "List[Tensor]"),
    ("split", "self, split_size, dim=0",
     lambda x, s, d: list(ember.split(x, s if isinstance(s, int) else list(s), d)), "List[Tensor]"),
    ("split_with_sizes", "self, split_sizes, dim=0",
     lambda x, s, d: list(ember.split(x, list(s), d)), "List[Tensor]"),
    ("unbind", "self, dim=0", lambda x, d: list(ember.unbind(x, d)), "List[Tensor]"),
    ("size", "self, dim=None", _size, "List[int]"),
    ("dim", "self", lambda x: x.dim(), "int"),
    ("numel", "self", lambda x: x.numel(), "int"),
    ("is_floating_point", "self", lambda x: x.is_floating_point(), "bool"),
    ("is_complex", "self", lambda x: x.is_complex(), "bool"),
    ("len", "a", len, "int"),
    ("masked_fill", "self, mask, value", ember.masked_fill),
    ("conv_transpose1d", "input, weight, bias=None, stride=[1], padding=[0], output_padding=[0], "
     "groups=1, dilation=[1]", lambda *a: _F().conv_transpose1d(*a)),
    ("conv_transpose2d", "input, weight, bias=None, stride=[1, 1], padding=[0, 0], "
     "output_padding=[0, 0], groups=1, dilation=[1, 1]", lambda *a: _F().conv_transpose2d(*a)),
    ("adaptive_max_pool2d", "self, output_size",
     lambda x, s: _F().adaptive_max_pool2d(x, list(s), return_indices=True),
     "Tuple[Tensor, Tensor]"),
    ("group_norm", "input, num_groups, weight=None, bias=None, eps=1e-05, cudnn_enabled=True",
     lambda x, g, w, b, eps, c=True: _F().group_norm(x, g, w, b, eps)),
    ("instance_norm", "input, weight, bias, running_mean, running_var, use_input_stats, "
     "momentum, eps, cudnn_enabled",
     lambda x, w, b, rm, rv, use, mom, eps, c: _F().instance_norm(x, rm, rv, w, b, use, mom, eps)),
    ("prelu", "self, weight", lambda x, w: _F().prelu(x, w)),
    ("hardswish", "self", lambda x: _F().hardswish(x)),
    ("hardsigmoid", "self", lambda x: _F().hardsigmoid(x)),
    ("mish", "self", lambda x: _F().mish(x)),
    ("pixel_shuffle", "self, upscale_factor", lambda x, r: _F().pixel_shuffle(x, r)),
    ("upsample_nearest1d", "*", _upsample("nearest", False)),
    ("upsample_nearest2d", "*", _upsample("nearest", False)),
    ("upsample_nearest3d", "*", _upsample("nearest", False)),
    ("_upsample_nearest_exact1d", "*", _upsample("nearest-exact", False)),
    ("upsample_trilinear3d", "*", _upsample("trilinear", True)),
    ("_upsample_bilinear2d_aa", "*", _upsample_aa("bilinear")),
    ("_upsample_bicubic2d_aa", "*", _upsample_aa("bicubic")),
    ("_upsample_lanczos2d_aa", "*", _no_kernel("_upsample_lanczos2d_aa")),
    ("adaptive_avg_pool1d", "self, output_size",
     lambda x, s: _F().adaptive_avg_pool1d(x, list(s))),
    ("adaptive_avg_pool3d", "self, output_size",
     lambda x, s: _F().adaptive_avg_pool3d(x, list(s))),
    ("new_zeros", f"self, size, {_TAIL}", _new(ember.zeros)),
    ("new_ones", f"self, size, {_TAIL}", _new(ember.ones)),
    ("new_full", f"self, size, fill_value, {_TAIL}", _new_full),
    ("_upsample_nearest_exact2d", "*", _upsample("nearest-exact", False)),
    ("_upsample_nearest_exact3d", "*", _upsample("nearest-exact", False)),
    ("upsample_linear1d", "*", _upsample("linear", True)),
    ("upsample_bilinear2d", "*", _upsample("bilinear", True)),
    ("upsample_bicubic2d", "*", _upsample("bicubic", True)),
    ("rnn_tanh", "input, hx, params, has_biases, num_layers, dropout, train, bidirectional, "
     "batch_first", _rnn("tanh"), "Tuple[Tensor, Tensor]"),
    ("rnn_relu", "input, hx, params, has_biases, num_layers, dropout, train, bidirectional, "
     "batch_first", _rnn("relu"), "Tuple[Tensor, Tensor]"),
    ("std", "self, dim=None, unbiased=True, keepdim=False, correction=None", _std_var("std")),
    ("var", "self, dim=None, unbiased=True, keepdim=False, correction=None", _std_var("var")),
    ("cumsum", "self, dim, dtype=None",
     lambda x, d, dt=None: ember.cumsum(x, d, dtype=_dtype(dt) if dt is not None else None)),
    ("linalg_vector_norm", "self, ord=2, dim=None, keepdim=False, dtype=None",
     lambda x, o=2, d=None, k=False, dt=None: ember.linalg.vector_norm(x, o, d, k)),
    ("__range_length", "lo, hi, step",
     lambda lo, hi, step: max(0, (hi - lo + step - (1 if step > 0 else -1)) // step), "int"),
    ("__derive_index", "index, start, step", lambda i, start, step: start + i * step, "int"),
    ("masked_fill_", "self, mask, value", lambda x, m, v: x.masked_fill_(m, v)),
    ("logical_not", "self", ember.logical_not),
    ("all", "self, dim=None, keepdim=False", _logical("all", all)),
    ("any", "self, dim=None, keepdim=False", _logical("any", any)),
    ("baddbmm", "self, batch1, batch2, beta=1, alpha=1",
     lambda s, a, b, beta=1, alpha=1: ember.baddbmm(s, a, b, beta=beta, alpha=alpha)),
    ("pad", "self, pad, mode='constant', value=None",
     lambda x, p, m="constant", v=None: _F().pad(x, list(p), m, v)),
    ("is_autocast_enabled", "", lambda: False, "bool"),
    ("is_grad_enabled", "", lambda: ember.is_grad_enabled(), "bool"),
    ("_transformer_encoder_layer_fwd", "src, embed_dim, num_heads, qkv_weight, qkv_bias, "
     "proj_weight, proj_bias, use_gelu, norm_first, eps, norm_weight_1, norm_bias_1, "
     "norm_weight_2, norm_bias_2, ffn_weight_1, ffn_bias_1, ffn_weight_2, ffn_bias_2, "
     "mask=None, mask_type=None", _encoder_layer_fwd),
    ("_native_multi_head_attention", "query, key, value, embed_dim, num_head, qkv_weight, "
     "qkv_bias, proj_weight, proj_bias, mask=None, need_weights=True, "
     "average_attn_weights=True, mask_type=None", _native_mha, "Tuple[Tensor, Tensor]"),
    ("_nested_tensor_from_mask", "*", _no_nested("_nested_tensor_from_mask")),
    ("_nested_tensor_from_mask_left_aligned", "*",
     _no_nested("_nested_tensor_from_mask_left_aligned"), "bool"),
    ("to_padded_tensor", "*", _no_nested("to_padded_tensor")),
    ("flip", "self, dims", lambda x, d: ember.flip(x, list(d))),
    ("clamp", "self, min=None, max=None", lambda x, a=None, b=None: ember.clamp(x, a, b)),
    ("argmax", "self, dim=None, keepdim=False", lambda x, d=None, k=False: ember.argmax(x, d, k)),
    ("max", "*", _minmax("max"), "Any"),
    ("min", "*", _minmax("min"), "Any"),
    ("index_select", "self, dim, index", ember.index_select),
    ("gather", "self, dim, index, sparse_grad=False",
     lambda x, d, i, s=False: ember.gather(x, d, i)),
    ("repeat", "self, repeats", lambda x, r: x.repeat(*r)),
    ("type_as", "self, other", lambda x, o: x.to(o.dtype)),
    ("expand_as", "self, other", lambda x, o: x.expand(*o.shape)),
    ("view_as", "self, other", lambda x, o: x.view(list(o.shape))),
    ("reshape_as", "self, other", lambda x, o: x.reshape(list(o.shape))),
    ("full", "size, fill_value, dtype=None, layout=None, device=None, pin_memory=None", _full),
    ("zeros_like", "self, dtype=None, layout=None, device=None, pin_memory=None, "
     "memory_format=None", _like(ember.zeros_like)),
    ("ones_like", "self, dtype=None, layout=None, device=None, pin_memory=None, "
     "memory_format=None", _like(ember.ones_like)),
    ("tril", "self, diagonal=0", ember.tril),
    ("triu", "self, diagonal=0", ember.triu),
    ("constant_pad_nd", "self, pad, value=0", lambda x, p, v=0: _F().pad(x, list(p), value=v)),
    ("softplus", "self, beta=1, threshold=20", lambda x, b, t: _F().softplus(x, b, t)),
    ("elu", "self, alpha=1.0, scale=1, input_scale=1", lambda x, a, *_: _F().elu(x, a)),
    ("where", "condition, self, other", ember.where),
    ("sum", "self, dim=None, keepdim=False, dtype=None", _reduce("sum")),
    ("mean", "self, dim=None, keepdim=False, dtype=None", _reduce("mean")),
    ("zeros", "size, dtype=None, layout=None, device=None, pin_memory=None", _zeros(ember.zeros)),
    ("ones", "size, dtype=None, layout=None, device=None, pin_memory=None", _zeros(ember.ones)),
    ("to", "*", _to),
    ("detach", "self", lambda x: x.detach()),
    ("clone", "self, memory_format=None", lambda x, m=None: x.clone()),
    ("tensor", "t, dtype=None, device=None, requires_grad=False", _tensor),
    ("item", "self", lambda x: x.item(), "Scalar"),
    # in place
    ("add_", "self, other, alpha=1", _alpha_inplace("add_")),
    ("sub_", "self, other, alpha=1", _alpha_inplace("sub_")),
    ("mul_", "self, other", _inplace("mul_")),
    ("div_", "self, other", _inplace("div_")),
    ("relu_", "self", _inplace("relu_")),
    ("copy_", "self, src, non_blocking=False", lambda x, s, nb=False: x.copy_(s)),
    ("zero_", "self", _inplace("zero_")),
    # Python values: lists, dicts, strings, conversions
    ("__getitem__", "self, idx", _getitem, "Any"),
    ("_set_item", "self, idx, v", _set_item, "Any"),
    ("append", "self, el", _append, "Any"),
    ("list", "l", list, "Any"),
    ("dict", "*", _dict, "Any"),
    ("keys", "self", lambda d: list(d.keys()), "Any"),
    ("values", "self", lambda d: list(d.values()), "Any"),
    ("items", "self", lambda d: list(d.items()), "Any"),
    ("format", "*", _format, "str"),
    ("str", "elem", str, "str"),
    ("Int", "a", _int, "int"),
    ("Float", "a", _float, "float"),
    ("Bool", "a", _bool, "bool"),
    ("device", "a", lambda a: ember.device(a), "Device"),
    ("warn", "message, stacklevel=2", _warn, "NoneType"),
    ("floor", "self", lambda x: math.floor(x) if not _is_tensor(x) else ember.floor(x)),
    ("ceil", "self", lambda x: math.ceil(x) if not _is_tensor(x) else ember.ceil(x)),
]  # fmt: skip
for _n in ("elu", "leaky_relu", "hardtanh", "silu", "hardswish", "hardsigmoid", "mish"):
    _TABLE.append((_n + "_", "*", _inplace_f(_n)))
for _n in ("relu", "sigmoid", "tanh", "exp", "log", "sqrt", "rsqrt", "abs", "sin", "cos", "erf"):
    _TABLE.append((_n, "self", _unary(_n)))

_PRIM: list[tuple] = [
    ("RaiseException", "msg='Exception', cls=None", _raise, "NoneType"),
    ("NumToTensor", "a", lambda a: ember.tensor(a)),
    ("dtype", "a", lambda a: _dtype_code(a), "int"),
    ("device", "a", lambda a: a.device, "Device"),
    ("type", "a", lambda d: d.type, "str"),
    ("is_nested", "a", lambda a: False, "bool"),
    ("requires_grad", "a", lambda a: a.requires_grad, "bool"),
    ("min", "*", lambda *a: min(*a), "Any"),
    ("max", "*", lambda *a: max(*a), "Any"),
    ("DictConstruct", "*", _dict_construct, "Any"),
]


def _dtype_code(t):
    from ember.jit.ir.graph import DTYPE_CODES

    return DTYPE_CODES[str(t.dtype).replace("ember.", "torch.")]


OPS: dict[str, Schema] = {}
for _entry in _TABLE:
    OPS[f"aten::{_entry[0]}"] = Schema(f"aten::{_entry[0]}", *_entry[1:])
for _entry in _PRIM:
    OPS[f"prim::{_entry[0]}"] = Schema(f"prim::{_entry[0]}", *_entry[1:])


def _arange(*args):
    *nums, dtype, layout, device, pin_memory = args
    return ember.arange(*nums, dtype=_dtype(dtype) if dtype is not None else None)


# ops whose overloads differ in their positional parameters: the first that binds wins
OVERLOADS: dict[str, list[Schema]] = {
    "aten::arange": [
        Schema("aten::arange", f"end, {_TAIL}", _arange),
        Schema("aten::arange", f"start, end, {_TAIL}", _arange),
        Schema("aten::arange", f"start, end, step, {_TAIL}", _arange),
    ],
}


def lookup(kind: str) -> Schema | None:
    """Return the schema of ``kind`` (``aten::add``), or None when ember lacks it."""
    return OPS.get(kind)


def bind(kind: str, args: list, kwargs: dict) -> tuple[Schema, list]:
    """Return the schema (the overload) that takes these arguments and the bound list;
    raise TypeError when none does."""
    schemas = OVERLOADS.get(kind) or [OPS[kind]]
    err = None
    for schema in schemas:
        try:
            return schema, schema.bind(args, kwargs)
        except TypeError as e:
            err = e
    raise err

"""``forward`` methods for ember's layers that scripted code calls but ember's compiler does
not compile (their Python runs eagerly): each layer's computation written as the torch call
it amounts to, with the layer's configuration as constants. A layer without an entry here,
or configured beyond what its entry writes, raises ``SaveError`` naming it."""

from __future__ import annotations

import math

from ember._standin import is_ember_module
from ember.jit._save._classes import SELF
from ember.jit._save._source import SaveError, literal

__all__ = ["layer_forward", "leaf_forward"]


def _method(body, arg: str = "input") -> list[str]:
    ret, extra = "Tensor", []
    if isinstance(body, tuple):  # (lines, return annotation[, more parameters[, first name]])
        body, ret, *more = body
        extra = more[0] if more else []
        arg = more[1] if len(more) > 1 else arg
    params = [f"{arg}: Tensor", *extra]
    head = [f"  def forward(self: {SELF},", *(f"    {p}," for p in params[:-1])]
    head.append(f"    {params[-1]}) -> {ret}:")
    return head + ["    " + line for line in body]


def _opt(m, name: str) -> str:
    return f"self.{name}" if getattr(m, name, None) is not None else "None"


def _ints(v, n: int) -> str:
    vals = list(v) if isinstance(v, (tuple, list)) else [v] * n
    return literal([int(e) for e in vals])


def _linear(m):
    return [f"return torch.linear(input, self.weight, {_opt(m, 'bias')})"]


def _conv(m):
    if m.padding_mode != "zeros":
        raise SaveError(
            f"ember.jit.save: {type(m).__name__} with padding_mode={m.padding_mode!r} has no "
            "TorchScript spelling here; trace the module instead"
        )
    n = m.weight.dim() - 2
    pad = literal(m.padding) if isinstance(m.padding, str) else _ints(m.padding, n)
    if getattr(m, "transposed", False):
        return [
            f"return torch.conv_transpose{n}d(input, self.weight, {_opt(m, 'bias')}, "
            f"{_ints(m.stride, n)}, {pad}, {_ints(m.output_padding, n)}, {int(m.groups)}, "
            f"{_ints(m.dilation, n)})"
        ]
    return [
        f"return torch.conv{n}d(input, self.weight, {_opt(m, 'bias')}, {_ints(m.stride, n)}, "
        f"{pad}, {_ints(m.dilation, n)}, {int(m.groups)})"
    ]


def _batch_norm(m):
    eps = literal(float(m.eps))
    if m.running_mean is None:
        return [
            f"return torch.batch_norm(input, {_opt(m, 'weight')}, {_opt(m, 'bias')}, None, "
            f"None, True, 0.0, {eps}, True)"
        ]
    body = []
    if m.momentum is None:  # cumulative average: the factor follows the batch count
        body += [
            "factor = 0.0",
            "if self.training:",
            "  _0 = self.num_batches_tracked.add_(1)",
            "  factor = 1.0 / float(self.num_batches_tracked)",
        ]
        factor = "factor"
    else:
        body += [
            "if self.training:",
            "  _0 = self.num_batches_tracked.add_(1)",
        ]
        factor = literal(float(m.momentum))
    body.append(
        f"return torch.batch_norm(input, {_opt(m, 'weight')}, {_opt(m, 'bias')}, "
        f"self.running_mean, self.running_var, self.training, {factor}, {eps}, True)"
    )
    return body


def _layer_norm(m):
    return [
        f"return torch.layer_norm(input, {literal(list(m.normalized_shape))}, "
        f"{_opt(m, 'weight')}, {_opt(m, 'bias')}, {literal(float(m.eps))}, True)"
    ]


def _max_pool(m):
    if m.return_indices:
        raise SaveError("ember.jit.save: MaxPool with return_indices has no spelling here")
    n = int(type(m).__name__[-2])
    stride = m.stride if m.stride is not None else m.kernel_size
    return [
        f"return torch.max_pool{n}d(input, {_ints(m.kernel_size, n)}, {_ints(stride, n)}, "
        f"{_ints(m.padding, n)}, {_ints(m.dilation, n)}, {literal(bool(m.ceil_mode))})"
    ]


def _avg_pool(m):
    n = int(type(m).__name__[-2])
    stride = m.stride if m.stride is not None else m.kernel_size
    tail = f"{literal(bool(m.ceil_mode))}, {literal(bool(m.count_include_pad))}"
    if n > 1:
        tail += f", {literal(m.divisor_override)}"
    return [
        f"return torch.avg_pool{n}d(input, {_ints(m.kernel_size, n)}, {_ints(stride, n)}, "
        f"{_ints(m.padding, n)}, {tail})"
    ]


def _adaptive_avg(m):
    n = int(type(m).__name__[-2])
    size = m.output_size
    if isinstance(size, (tuple, list)) and any(s is None for s in size):
        raise SaveError("ember.jit.save: an adaptive pool keeping a dimension (None) is not here")
    return [f"return torch.adaptive_avg_pool{n}d(input, {_ints(size, n)})"]


def _dropout(m):
    return [f"return torch.dropout(input, {literal(float(m.p))}, self.training)"]


def _embedding(m):
    if m.max_norm is not None:
        raise SaveError("ember.jit.save: Embedding with max_norm has no spelling here")
    pad = -1 if m.padding_idx is None else int(m.padding_idx)
    return [
        f"return torch.embedding(self.weight, input, {pad}, "
        f"{literal(bool(m.scale_grad_by_freq))}, {literal(bool(m.sparse))})"
    ]


def _flatten(m):
    return [f"return torch.flatten(input, {int(m.start_dim)}, {int(m.end_dim)})"]


def _softmax(name):
    def body(m):
        dim = literal(m.dim)
        return [f"return torch.{name}(input, {dim})"]

    return body


def _rnn(m):
    """LSTM / GRU / RNN over a full (unpacked, batched) input, with an optional initial state
    ``hx`` as the layer takes it."""
    from ember.jit._save._lower import rnn_steps
    from ember.jit._save._source import Names

    names = Names()
    names.used.update({"self", "input"})
    lines: list[str] = []
    mode = m.mode  # LSTM, GRU, RNN_TANH or RNN_RELU
    proj = getattr(m, "proj_size", 0) or 0
    hidden_out = proj if proj else m.hidden_size
    x = names.fresh("x")
    lines.append(f"{x} = torch.transpose(input, 0, 1)" if m.batch_first else f"{x} = input")
    b = names.fresh("batch")
    lines.append(f"{b} = torch.size({x}, 1)")
    finals_h, finals_c = [], []
    directions = 2 if m.bidirectional else 1
    n_states = m.num_layers * directions
    h_all, c_all = names.fresh("hx0"), names.fresh("cx0")
    lines.append("if hx is None:")  # the initial state: zeros, or the caller's (refined) hx
    lines.append(f"  {h_all} = torch.new_zeros({x}, [{n_states}, {b}, {hidden_out}])")
    if mode == "LSTM":
        lines.append(f"  {c_all} = torch.new_zeros({x}, [{n_states}, {b}, {m.hidden_size}])")
        lines += ["else:", f"  {h_all}, {c_all} = hx"]
    else:
        lines += ["else:", f"  {h_all} = hx"]
    for layer in range(m.num_layers):
        outs = []
        for d in range(directions):
            sfx = f"_l{layer}" + ("_reverse" if d else "")
            xp = names.fresh("xp")
            b_ih = f"self.bias_ih{sfx}" if m.bias else "None"
            lines.append(f"{xp} = torch.linear({x}, self.weight_ih{sfx}, {b_ih})")
            h0 = f"torch.select({h_all}, 0, {layer * directions + d})"
            c0 = f"torch.select({c_all}, 0, {layer * directions + d})"
            out, h, c = rnn_steps(
                lambda depth, line: lines.append("  " * depth + line), names.fresh, mode, xp,
                h0, c0, f"self.weight_hh{sfx}", f"self.bias_hh{sfx}" if m.bias else "None",
                f"self.weight_hr{sfx}" if proj else "None", bool(d),
            )  # fmt: skip
            outs.append(out)
            finals_h.append(h)
            finals_c.append(c)
        x = names.fresh("x")
        lines.append(f"{x} = {outs[0]}" if directions == 1 else
                     f"{x} = torch.cat([{outs[0]}, {outs[1]}], 2)")  # fmt: skip
        if m.dropout and layer < m.num_layers - 1:
            lines.append(f"{x} = torch.dropout({x}, {literal(float(m.dropout))}, self.training)")
    output = f"torch.transpose({x}, 0, 1)" if m.batch_first else x
    h_n = f"torch.stack([{', '.join(finals_h)}])"
    if mode == "LSTM":
        c_n = f"torch.stack([{', '.join(finals_c)}])"
        lines.append(f"return ({output}, ({h_n}, {c_n}))")
        return (lines, "Tuple[Tensor, Tuple[Tensor, Tensor]]",
                ["hx: Optional[Tuple[Tensor, Tensor]]=None"])  # fmt: skip
    lines.append(f"return ({output}, {h_n})")
    return lines, "Tuple[Tensor, Tensor]", ["hx: Optional[Tensor]=None"]


def _self_attention(m, x: str, attn_name: str, lines: list[str], names) -> str:
    """Append the lines of ``MultiheadAttention`` ``self.<attn_name>`` attending ``x`` to
    itself (no masks); return the name of its output."""
    return _attention(getattr(m, attn_name), f"self.{attn_name}", x, x, x, lines, names)[0]


def _attention(a, me: str, query: str, key: str, value: str, lines: list[str], names) -> tuple:
    """Append the lines of MultiheadAttention ``a`` (reached as ``me``) without masks; return
    the names of (output, attention weights averaged over the heads)."""
    if not a._qkv_same_embed_dim or a.bias_k is not None or a.add_zero_attn:
        raise SaveError(
            "ember.jit.save: a MultiheadAttention with separate key/value sizes, bias_k or "
            "add_zero_attn has no spelling here; trace the module instead"
        )
    heads, hd, e = int(a.num_heads), int(a.head_dim), int(a.embed_dim)
    same = query == key == value
    ins = []
    for src, hint in ((query, "q"), (key, "k"), (value, "v")):
        v = names.fresh(hint)
        lines.append(f"{v} = torch.transpose({src}, 0, 1)" if a.batch_first else f"{v} = {src}")
        ins.append(v)
        if same:
            break
    t, s, b = names.fresh("tgt_len"), names.fresh("src_len"), names.fresh("bsz")
    lines.append(f"{t} = torch.size({ins[0]}, 0)")
    lines.append(f"{s} = torch.size({ins[-1]}, 0)")
    lines.append(f"{b} = torch.size({ins[0]}, 1)")
    parts = names.fresh("parts")
    if same:  # one projection, split in three (as the layer computes it)
        bias = f"{me}.in_proj_bias" if a.in_proj_bias is not None else "None"
        lines.append(f"{parts} = torch.chunk(torch.linear({ins[0]}, {me}.in_proj_weight, "
                     f"{bias}), 3, -1)")  # fmt: skip
        projected = [f"{parts}[{i}]" for i in range(3)]
    else:
        w, bb = names.fresh("w"), names.fresh("b")
        lines.append(f"{w} = torch.chunk({me}.in_proj_weight, 3, 0)")
        if a.in_proj_bias is not None:
            lines.append(f"{bb} = torch.chunk({me}.in_proj_bias, 3, 0)")
        projected = [
            f"torch.linear({x}, {w}[{i}], {f'{bb}[{i}]' if a.in_proj_bias is not None else 'None'})"
            for i, x in enumerate(ins)
        ]
    heads_of = []
    for i, (hint, n) in enumerate((("qh", t), ("kh", s), ("vh", s))):
        h = names.fresh(hint)
        lines.append(
            f"{h} = torch.transpose(torch.reshape({projected[i]}, [{n}, {b} * {heads}, {hd}]), "
            "0, 1)"
        )
        heads_of.append(h)
    qh, kh, vh = heads_of
    w, o = names.fresh("weights"), names.fresh("attn")
    scale = literal(1.0 / math.sqrt(hd))
    lines.append(
        f"{w} = torch.softmax(torch.bmm(torch.mul({qh}, {scale}), torch.transpose({kh}, 1, 2)), -1)"
    )
    used = w
    if a.dropout:
        used = names.fresh("dropped")
        lines.append(f"{used} = torch.dropout({w}, {literal(float(a.dropout))}, self.training)")
    out_bias = f"{me}.out_proj.bias" if a.out_proj.bias is not None else "None"
    lines.append(f"{o} = torch.reshape(torch.transpose(torch.bmm({used}, {vh}), 0, 1), "
                 f"[{t} * {b}, {e}])")  # fmt: skip
    lines.append(f"{o} = torch.linear({o}, {me}.out_proj.weight, {out_bias})")
    lines.append(f"{o} = torch.reshape({o}, [{t}, {b}, {e}])")
    if a.batch_first:
        lines.append(f"{o} = torch.transpose({o}, 0, 1)")
    return o, w


def _mha(m):
    """MultiheadAttention(query, key, value) without masks: (output, weights averaged over
    the heads), as the layer returns them by default."""
    from ember.jit._save._source import Names

    names = Names()
    names.used.update({"self", "query", "key", "value"})
    lines: list[str] = []
    o, w = _attention(m, "self", "query", "key", "value", lines, names)
    h, t = int(m.num_heads), names.fresh("t")
    lines.append(f"{t} = torch.size({w}, 1)")
    avg = f"torch.mean(torch.reshape({w}, [-1, {h}, {t}, torch.size({w}, 2)]), [1])"
    lines.append(f"return ({o}, {avg})")
    return lines, "Tuple[Tensor, Tensor]", ["key: Tensor", "value: Tensor"], "query"


def _encoder_layer(m):
    """TransformerEncoderLayer without masks: attention and feed-forward blocks, each with
    its residual and LayerNorm (before the block with ``norm_first``)."""
    from ember.jit._save._source import Names

    act = {1: "torch.relu", 2: "torch.gelu"}.get(m.activation_relu_or_gelu)
    if act is None:
        raise SaveError("ember.jit.save: a TransformerEncoderLayer with a custom activation "
                        "has no spelling here; trace the module instead")  # fmt: skip
    names = Names()
    names.used.update({"self", "input"})
    lines: list[str] = []

    def norm(k, x):
        n = getattr(m, k)
        return (f"torch.layer_norm({x}, {literal(list(n.normalized_shape))}, "
                f"{_opt(n, 'weight').replace('self.', f'self.{k}.')}, "
                f"{_opt(n, 'bias').replace('self.', f'self.{k}.')}, {literal(float(n.eps))}, "
                "True)")  # fmt: skip

    def drop(k, x):
        return f"torch.dropout({x}, {literal(float(getattr(m, k).p))}, self.training)"

    def lin(k, x):
        n = getattr(m, k)
        bias = f"self.{k}.bias" if n.bias is not None else "None"
        return f"torch.linear({x}, self.{k}.weight, {bias})"

    def feed_forward(x):
        h = names.fresh("ff")
        lines.append(f"{h} = {act}({lin('linear1', x)})")
        return drop("dropout2", lin("linear2", drop("dropout", h)))

    x = names.fresh("x")
    lines.append(f"{x} = input")
    if m.norm_first:
        y = names.fresh("y")
        lines.append(f"{y} = {norm('norm1', x)}")
        sa = _self_attention(m, y, "self_attn", lines, names)
        lines.append(f"{x} = torch.add({x}, {drop('dropout1', sa)})")
        lines.append(f"{y} = {norm('norm2', x)}")
        lines.append(f"{x} = torch.add({x}, {feed_forward(y)})")
    else:
        sa = _self_attention(m, x, "self_attn", lines, names)
        residual = f"torch.add({x}, {drop('dropout1', sa)})"
        lines.append(f"{x} = {norm('norm1', residual)}")
        residual = f"torch.add({x}, {feed_forward(x)})"
        lines.append(f"{x} = {norm('norm2', residual)}")
    lines.append(f"return {x}")
    return lines


def _simple(call: str):
    return lambda m: [f"return {call}"]


_LAYERS = {
    "Linear": _linear,
    "Conv1d": _conv,
    "Conv2d": _conv,
    "Conv3d": _conv,
    "ConvTranspose1d": _conv,
    "ConvTranspose2d": _conv,
    "ConvTranspose3d": _conv,
    "BatchNorm1d": _batch_norm,
    "BatchNorm2d": _batch_norm,
    "BatchNorm3d": _batch_norm,
    "LayerNorm": _layer_norm,
    "MaxPool1d": _max_pool,
    "MaxPool2d": _max_pool,
    "MaxPool3d": _max_pool,
    "AvgPool1d": _avg_pool,
    "AvgPool2d": _avg_pool,
    "AvgPool3d": _avg_pool,
    "AdaptiveAvgPool1d": _adaptive_avg,
    "AdaptiveAvgPool2d": _adaptive_avg,
    "AdaptiveAvgPool3d": _adaptive_avg,
    "Dropout": _dropout,
    "Embedding": _embedding,
    "Flatten": _flatten,
    "Softmax": _softmax("softmax"),
    "LogSoftmax": _softmax("log_softmax"),
    "ReLU": lambda m: [f"return torch.relu{'_' if m.inplace else ''}(input)"],
    "Tanh": _simple("torch.tanh(input)"),
    "Sigmoid": _simple("torch.sigmoid(input)"),
    "GELU": lambda m: [f"return torch.gelu(input, approximate={literal(m.approximate)})"],
    "SiLU": _simple("torch.silu(input)"),
    "Identity": _simple("input"),
    "TransformerEncoderLayer": _encoder_layer,
    "MultiheadAttention": _mha,
    "LSTM": _rnn,
    "GRU": _rnn,
    "RNN": _rnn,
}


def layer_forward(m) -> tuple[list[str], list]:
    """Return ``(lines, called)``: the ``forward`` of layer ``m`` as a method's lines and the
    submodules it calls (whose classes then need a forward too)."""
    name = type(m).__name__
    if name == "Sequential":
        body = []
        names = [k for k, c in m._modules.items() if c is not None]
        for i, k in enumerate(names):
            read = f"self.{k}" if k.isidentifier() else f'getattr(self, "{k}")'
            body.append(f"_{i} = {read}")
            body.append(f"input = (_{i}).forward(input, )")
        body.append("return input")
        return _method(body), [c for c in m._modules.values() if c is not None]
    if name == "TransformerEncoder":
        body = ["output = input"]
        layers = [c for c in m.layers._modules.values() if c is not None]
        for i in range(len(layers)):
            body.append(f'output = (getattr(self.layers, "{i}")).forward(output, )')
        if m.norm is not None:
            body.append("output = (self.norm).forward(output, )")
        body.append("return output")
        return _method(body), layers + ([m.norm] if m.norm is not None else [])
    make = _LAYERS.get(name)
    if make is None or not is_ember_module(type(m).__module__):
        raise SaveError(
            f"ember.jit.save: the scripted code calls {name}.forward, which ember's compiler "
            "did not compile (it runs as Python) and which has no TorchScript spelling here; "
            "trace the module (ember.jit.trace) to save it"
        )
    return _method(make(m)), []


def leaf_forward(m) -> list[str] | None:
    """The ``forward`` of a leaf layer ember writes (``Linear``, ``Conv2d``...), or None: a
    traced archive gives its layers their own ``forward``, as torch's traced ones have."""
    if type(m).__name__ not in _LAYERS or not is_ember_module(type(m).__module__):
        return None
    try:
        return _method(_LAYERS[type(m).__name__](m))
    except (SaveError, AttributeError, TypeError, ValueError):
        return None

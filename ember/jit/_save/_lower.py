"""Nodes without a torch schema, written as the TorchScript torch's own code would run.

The tracer records an op-table entry that has no aten schema in ``jit._aten`` as a node whose
inputs are the op's tensor operands and whose ``_payload`` closes over the op and its other
parameters. Here those become torch calls: ``split`` -> ``torch.split_with_sizes``,
``_unsafe_view`` -> ``torch.reshape``, ember's one-layer recurrent kernel ``rnn_layer`` ->
a TorchScript loop over the time steps, and any other op ``torch.<name>(operands,
param=value)`` (ember's op parameters carry torch's argument names).
"""

from __future__ import annotations

from ember.jit._save._spell import payload_vars

__all__ = ["is_lowered", "lower", "payload_attr"]


def payload_attr(n):
    """The attribute name a compiled ``x.T``/``x.mT`` node reads."""
    return payload_vars(n).get("a")


def _op_params(n):
    found = payload_vars(n)
    op = found.get("op")
    if op is None or not hasattr(op, "name"):
        return None, None
    params = {k: v for k, v in dict(found.get("params") or {}).items() if k != "out"}
    return op.name, params


def is_lowered(n) -> bool:
    """True for a node ``lower`` writes (an op-table entry without a torch schema)."""
    return _op_params(n)[0] is not None


def lower(p, n, pad: int) -> bool:
    """Write node ``n`` with printer ``p`` if it needs more than a plain call; True if done."""
    name, params = _op_params(n)
    if name is None:
        return False
    ins = [p.ref(v) for v in n.inputs()]
    outs = n.outputs()
    if name == "rnn_layer":
        _rnn_layer(p, n, ins, params, pad)
        return True
    if "mats" in params and set(params) <= {"mats", "nearest"}:
        _separable(p, n, ins[0], params, pad)
        return True
    expr = _SPELL.get(name, _generic)(name, ins, params, n)
    if len(outs) == 1:
        p.emit(pad, f"{p.bind(outs[0])} = {expr}")
    elif outs:
        targets = [p.bind(o) for o in outs]
        p.emit(pad, ", ".join(targets) + f" = {expr}")
    else:
        p.emit(pad, expr)
    return True


def _lit(v) -> str:
    from ember.jit._save._source import literal

    cls = type(v).__name__
    if cls == "dtype":
        from ember.jit.ir import DTYPE_CODES

        return str(DTYPE_CODES[str(v)])
    if cls == "memory_format":
        return str(_MEMORY_FORMATS.get(str(v), 0))
    if cls == "Size":
        v = list(v)
    return literal(list(v) if isinstance(v, tuple) else v)


_MEMORY_FORMATS = {
    "torch.contiguous_format": 0,
    "torch.preserve_format": 1,
    "torch.channels_last": 2,
    "torch.channels_last_3d": 3,
}


def _generic(name, ins, params, n) -> str:
    from ember.jit._save._source import SaveError

    kw = []
    for k, v in params.items():
        try:
            kw.append(f"{k}={_lit(v)}")
        except SaveError:
            raise SaveError(
                f"ember.jit.save: the graph holds ember's op {name!r}, which has no TorchScript "
                f"spelling here (its parameter {k!r} is a {type(v).__name__})"
            ) from None
    return f"torch.{n.kind().partition('::')[2]}(" + ", ".join(ins + kw) + ")"


def _split(name, ins, params, n) -> str:
    sizes = params.get("sizes", params.get("split_sizes"))
    if sizes is not None:
        return f"torch.split_with_sizes({ins[0]}, {_lit(list(sizes))}, {params.get('dim', 0)})"
    return _generic(name, ins, params, n)


_REDUCTION = {"none": 0, "mean": 1, "sum": 2}


def _loss(name, ins, p, n) -> str:
    return f"torch.{name}({ins[0]}, {ins[1]}, {_REDUCTION[p.get('reduction', 'mean')]})"


def _nll(name, ins, p, n) -> str:
    weight = ins[2] if len(ins) > 2 else "None"
    return (
        f"torch.nll_loss_nd({ins[0]}, {ins[1]}, {weight}, "
        f"{_REDUCTION[p.get('reduction', 'mean')]}, {int(p.get('ignore_index', -100))})"
    )


def _pad(name, ins, p, n) -> str:
    flat = [int(e) for pair in p["pads"] for e in pair]
    value = p.get("value")
    return f"torch.pad({ins[0]}, {_lit(flat)}, {_lit(p.get('mode', 'constant'))}, {_lit(value)})"


def _var(name, ins, p, n) -> str:
    dims = p.get("dims")
    return (
        f"torch.{name}({ins[0]}, {_lit(None if dims is None else list(dims))}, "
        f"correction={_lit(p.get('correction', 1))}, keepdim={_lit(bool(p.get('keepdim')))})"
    )


def _vector_norm(name, ins, p, n) -> str:
    dims = p.get("dims")
    out = (
        f"torch.linalg_vector_norm({ins[0]}, {_lit(p.get('ord', 2.0))}, "
        f"{_lit(None if dims is None else list(dims))}, {_lit(bool(p.get('keepdim')))}"
    )
    return out + (f", dtype={_lit(p['dtype'])})" if p.get("dtype") is not None else ")")


def _avg_pool(name, ins, p, n) -> str:
    args = [ins[0], _lit(p["kernel"]), _lit(p["stride"]), _lit(p["padding"]),
            _lit(bool(p["ceil_mode"])), _lit(bool(p["count_include_pad"]))]  # fmt: skip
    if name != "avg_pool1d":
        args.append(_lit(p.get("divisor_override")))
    return f"torch.{name}(" + ", ".join(args) + ")"


def _einsum(name, ins, p, n) -> str:
    equation = ",".join(p["labels"]) + "->" + p["output"]
    return f"torch.einsum({_lit(equation)}, [{', '.join(ins)}])"


_GRID_MODES = {"bilinear": 0, "nearest": 1, "bicubic": 2}
_GRID_PADDING = {"zeros": 0, "border": 1, "reflection": 2}


def _grid_sampler(name, ins, p, n) -> str:
    return (
        f"torch.{name}({ins[0]}, {ins[1]}, {_GRID_MODES[p['mode']]}, "
        f"{_GRID_PADDING[p['padding_mode']]}, {_lit(bool(p['align_corners']))})"
    )


def _fft(name, ins, p, n) -> str:
    args = [ins[0], _lit(list(p["dims"])), _lit(p["norm"])]
    if "onesided" in p:
        args.append(_lit(bool(p["onesided"])))
    if "forward" in p:
        args.append(_lit(bool(p["forward"])))
    if "last_dim_size" in p:
        args.append(_lit(p["last_dim_size"]))
    return f"torch.{name}(" + ", ".join(args) + ")"


_SPELL = {
    "gather": lambda name, ins, p, n: f"torch.gather({ins[0]}, {int(p['dim'])}, {ins[1]})",
    "pixel_shuffle": lambda name, ins, p, n: f"torch.pixel_shuffle({ins[0]}, {int(p['r'])})",
    "pixel_unshuffle": lambda name, ins, p, n: f"torch.pixel_unshuffle({ins[0]}, {int(p['r'])})",
    "grid_sampler_2d": _grid_sampler,
    "grid_sampler_3d": _grid_sampler,
    "_fft_r2c": _fft,
    "_fft_c2c": _fft,
    "_fft_c2r": _fft,
    "expand": lambda name, ins, p, n: f"torch.expand({ins[0]}, {_lit(p['shape'])})",
    "pad": _pad,
    "var": _var,
    "std": _var,
    "linalg_vector_norm": _vector_norm,
    "avg_pool1d": _avg_pool,
    "avg_pool2d": _avg_pool,
    "avg_pool3d": _avg_pool,
    "mse_loss": _loss,
    "l1_loss": _loss,
    "nll_loss": _nll,
    "_log_softmax": lambda name, ins, p, n: f"torch._log_softmax({ins[0]}, {p['dim']}, False)",
    "_softmax": lambda name, ins, p, n: f"torch._softmax({ins[0]}, {p['dim']}, False)",
    "einsum": _einsum,
    "split": _split,
    "split_with_sizes": _split,
    "_unsafe_view": lambda name, ins, p, n: f"torch.reshape({ins[0]}, {_lit(p['shape'])})",
    "clone": lambda name, ins, p, n: f"torch.clone({ins[0]})",
    "embedding": lambda name, ins, p, n: (
        f"torch.embedding({ins[0]}, {ins[1]}, {int(p.get('padding_idx', -1))}, "
        f"{_lit(bool(p.get('scale_grad_by_freq', False)))}, {_lit(bool(p.get('sparse', False)))})"
    ),
}


def _separable(p, n, x: str, params, pad: int) -> None:
    """ember's separable resampling (interpolation, adaptive pooling): one matrix per trailing
    dim, or for nearest modes the rows' chosen indices; written with the same matrices."""
    import numpy as np

    import ember

    mats = params["mats"]
    nd = len(mats)
    out = p.names.fresh("_resampled")
    p.emit(pad, f"{out} = {x}")
    dtype = p.names.fresh("_dtype")
    p.emit(pad, f"{dtype} = ops.prim.dtype({x})")
    for i, m in enumerate(mats):
        axis = f"torch.sub(torch.dim({out}), {nd - i})"
        if params.get("nearest"):
            idx = p.tensor_constant(ember.tensor(np.asarray(m).argmax(1).astype(np.int64)))
            p.emit(pad, f"{out} = torch.index_select({out}, {axis}, {idx})")
            continue
        c = p.tensor_constant(ember.tensor(np.ascontiguousarray(np.asarray(m, np.float64))))
        mat = f"torch.to({c}, {dtype})"
        if i == nd - 1:
            p.emit(pad, f"{out} = torch.matmul({out}, torch.t({mat}))")
        elif i == nd - 2:
            p.emit(pad, f"{out} = torch.matmul({mat}, {out})")
        else:
            p.emit(pad, f"{out} = torch.movedim(torch.tensordot({out}, {mat}, [{axis}], [1]), "
                        f"-1, {axis})")  # fmt: skip
    p.emit(pad, f"{p.bind(n.output())} = torch.contiguous({out})")


def _rnn_layer(p, n, ins, params, pad: int) -> None:
    """One layer and direction of an RNN over a (T, B, gates) input projection, as a loop
    (ember's kernel has no torch op: torch's ``aten::lstm`` takes the raw input)."""
    from ember.jit._save._source import SaveError

    if params.get("batch_sizes") is not None:
        raise SaveError("ember.jit.save: a packed sequence's recurrent layer cannot be saved yet")
    xp, h0, c0, w_hh, b_hh, w_hr = ins
    out, h, c = rnn_steps(
        lambda depth, line: p.emit(pad + depth, line), p.names.fresh, params["mode"],
        xp, h0, c0, w_hh, b_hh, w_hr, bool(params.get("reverse")),
    )  # fmt: skip
    outs = n.outputs()
    p.emit(pad, f"{p.bind(outs[0])} = {out}")
    p.emit(pad, f"{p.bind(outs[1])} = {h}")
    if params["mode"] == "LSTM":
        p.emit(pad, f"{p.bind(outs[2])} = {c}")


def rnn_steps(emit, fresh, mode, xp, h0, c0, w_hh, b_hh, w_hr, reverse) -> tuple:
    """Write the time loop of one RNN layer and direction: ``emit(depth, line)`` takes the
    lines, ``fresh(hint)`` makes names, the other arguments are source expressions (``xp``
    the (T, B, gates) input projection). Return the names of (output, h_n, c_n or None)."""
    h, hs, t, x, g = fresh("_h"), fresh("_hs"), fresh("_t"), fresh("_x"), fresh("_g")
    emit(0, f"{h} = {h0}")
    c = None
    if mode == "LSTM":
        c = fresh("_c")
        emit(0, f"{c} = {c0}")
    emit(0, f"{hs} = annotate(List[Tensor], [])")
    steps = fresh("_steps")
    emit(0, f"{steps} = torch.size({xp}, 0)")
    emit(0, f"for {t} in range({steps}):")
    index = f"torch.sub(torch.sub({steps}, 1), {t})" if reverse else t
    emit(1, f"{x} = torch.select({xp}, 0, {index})")
    emit(1, f"{g} = torch.linear({h}, {w_hh}, {b_hh})")
    if mode == "LSTM":
        gs = fresh("_gates")
        emit(1, f"{gs} = torch.chunk(torch.add({x}, {g}), 4, 1)")
        i, f, gg, o = (f"{gs}[{k}]" for k in range(4))
        emit(1, f"{c} = torch.add(torch.mul(torch.sigmoid({f}), {c}), "
                f"torch.mul(torch.sigmoid({i}), torch.tanh({gg})))")  # fmt: skip
        emit(1, f"{h} = torch.mul(torch.sigmoid({o}), torch.tanh({c}))")
        if w_hr != "None":
            emit(1, f"{h} = torch.linear({h}, {w_hr})")
    elif mode == "GRU":
        xs, hg, r, z, nn_ = fresh("_xs"), fresh("_hg"), fresh("_r"), fresh("_z"), fresh("_n")
        emit(1, f"{xs} = torch.chunk({x}, 3, 1)")
        emit(1, f"{hg} = torch.chunk({g}, 3, 1)")
        emit(1, f"{r} = torch.sigmoid(torch.add({xs}[0], {hg}[0]))")
        emit(1, f"{z} = torch.sigmoid(torch.add({xs}[1], {hg}[1]))")
        emit(1, f"{nn_} = torch.tanh(torch.add({xs}[2], torch.mul({r}, {hg}[2])))")
        emit(1, f"{h} = torch.add({nn_}, torch.mul({z}, torch.sub({h}, {nn_})))")
    else:
        act = "torch.tanh" if mode == "RNN_TANH" else "torch.relu"
        emit(1, f"{h} = {act}(torch.add({x}, {g}))")
    emit(1, f"{hs}.append({h})")
    out = fresh("_out")
    stacked = f"torch.stack({hs})"
    emit(0, f"{out} = torch.flip({stacked}, [0])" if reverse else f"{out} = {stacked}")
    return out, h, c

"""Scripted calls of ``nn.functional`` written as torch calls.

ember's compiler records ``F.relu(x, inplace=False)`` as a node holding the functional's own
arguments; TorchScript has no ``nn.functional`` in an archive's namespace, so each call is
written as the ``torch.*`` op the functional amounts to, with its arguments in that op's
order (``F.batch_norm(x, mean, var, w, b)`` -> ``torch.batch_norm(x, w, b, mean, var, ...)``).
"""

from __future__ import annotations

import inspect

from ember._standin import is_ember_module

__all__ = ["functional_call"]

_UNSET = object()


def _bind(fn, n, args: list[str], npos: int, names: list[str], static) -> dict | None:
    """``{parameter: (text, python value or _UNSET)}`` with defaults filled in."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    from ember.jit._save._source import literal

    params = list(sig.parameters.values())
    out: dict = {}
    ins = n.inputs()
    for p, text, v in zip(params, args[:npos], ins[:npos]):
        out[p.name] = (text, static(v))
    for name, text, v in zip(names, args[npos:], ins[npos:]):
        out[name] = (text, static(v))
    for p in params:
        if p.name not in out and p.default is not inspect.Parameter.empty:
            try:
                out[p.name] = (literal(p.default), p.default)
            except RuntimeError:
                out[p.name] = ("None", None)
    return out


def _stride(b) -> str:
    text, value = b["stride"]
    return "annotate(List[int], [])" if value is None else text


def _t(b, name: str) -> str:
    return b[name][0]


def _relu(b):
    return f"torch.relu{'_' if b['inplace'][1] is True else ''}({_t(b, 'input')})"


def _dropout(b):
    op = "dropout_" if b["inplace"][1] is True else "dropout"
    return f"torch.{op}({_t(b, 'input')}, {_t(b, 'p')}, {_t(b, 'training')})"


def _softmax(op):
    return lambda b: f"torch.{op}({_t(b, 'input')}, {_t(b, 'dim')}, {_t(b, 'dtype')})"


def _pool(op):
    def spell(b):
        args = [_t(b, "input"), _t(b, "kernel_size"), _stride(b), _t(b, "padding")]
        if op.startswith("max"):
            if b["return_indices"][1] is True:
                return None
            args += [_t(b, "dilation"), _t(b, "ceil_mode")]
        else:
            args += [_t(b, "ceil_mode"), _t(b, "count_include_pad")]
            if "divisor_override" in b:
                args.append(_t(b, "divisor_override"))
        return f"torch.{op}(" + ", ".join(args) + ")"

    return spell


def _conv(op):
    def spell(b):
        names = ("input", "weight", "bias", "stride", "padding", "dilation", "groups")
        return f"torch.{op}(" + ", ".join(_t(b, k) for k in names) + ")"

    return spell


def _batch_norm(b):
    names = ("input", "weight", "bias", "running_mean", "running_var", "training", "momentum",
             "eps")  # fmt: skip
    return "torch.batch_norm(" + ", ".join(_t(b, k) for k in names) + ", True)"


def _layer_norm(b):
    names = ("input", "normalized_shape", "weight", "bias", "eps")
    return "torch.layer_norm(" + ", ".join(_t(b, k) for k in names) + ", True)"


def _embedding(b):
    pad = b["padding_idx"][1]
    pad_text = "-1" if pad is None else _t(b, "padding_idx")
    if b.get("max_norm", ("None", None))[1] is not None:
        return None
    return (
        f"torch.embedding({_t(b, 'weight')}, {_t(b, 'input')}, {pad_text}, "
        f"{_t(b, 'scale_grad_by_freq')}, {_t(b, 'sparse')})"
    )


_SPELL = {
    "relu": _relu,
    "dropout": _dropout,
    "softmax": _softmax("softmax"),
    "log_softmax": _softmax("log_softmax"),
    "max_pool1d": _pool("max_pool1d"),
    "max_pool2d": _pool("max_pool2d"),
    "max_pool3d": _pool("max_pool3d"),
    "avg_pool1d": _pool("avg_pool1d"),
    "avg_pool2d": _pool("avg_pool2d"),
    "avg_pool3d": _pool("avg_pool3d"),
    "conv1d": _conv("conv1d"),
    "conv2d": _conv("conv2d"),
    "conv3d": _conv("conv3d"),
    "batch_norm": _batch_norm,
    "layer_norm": _layer_norm,
    "embedding": _embedding,
    "linear": lambda b: f"torch.linear({_t(b, 'input')}, {_t(b, 'weight')}, {_t(b, 'bias')})",
    "gelu": lambda b: f"torch.gelu({_t(b, 'input')}, approximate={_t(b, 'approximate')})",
    "adaptive_avg_pool1d": lambda b: (
        f"torch.adaptive_avg_pool1d({_t(b, 'input')}, {_t(b, 'output_size')})"
    ),
    "adaptive_avg_pool2d": lambda b: (
        f"torch.adaptive_avg_pool2d({_t(b, 'input')}, {_t(b, 'output_size')})"
    ),
}


def functional_call(fn, n, args: list[str], npos: int, names: list[str], static) -> str | None:
    """The torch call for a scripted call of ``nn.functional`` function ``fn``, or None when
    ``fn`` is not one (or is called in a way written nowhere here)."""
    if not is_ember_module(getattr(fn, "__module__", None), ".nn"):
        return None
    spell = _SPELL.get(fn.__name__)
    if spell is None:
        return None
    bound = _bind(fn, n, args, npos, names, static)
    if bound is None:
        return None
    try:
        return spell(bound)
    except KeyError:
        return None

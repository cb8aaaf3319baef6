"""Printing graphs, blocks and nodes in torch's text format (``str(graph)``)."""

from __future__ import annotations

import math

__all__ = ["print_graph", "print_block", "print_node", "format_float", "format_attr"]


def format_float(v: float) -> str:
    """Format a float as torch's IR does: 17 significant digits, ``1.`` for whole numbers."""
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    s = f"{v:.17g}"
    if "." not in s and "e" not in s:
        s += "."
    return s


def _quote(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _scalar_text(x) -> str:
    if isinstance(x, (bool,)) or type(x).__name__ == "bool_":
        return str(int(x))
    if isinstance(x, float) or "float" in type(x).__name__:
        return f"{float(x):g}"
    return str(int(x))


def format_tensor(t) -> str:
    """A tensor constant: ``{2.5}`` for a 0-d tensor, else its values and type."""
    import numpy as np

    a = np.asarray(t._data if hasattr(t, "_data") else t)
    if a.ndim == 0:
        return "{" + _scalar_text(a.item()) + "}"
    if a.size > 10:  # torch shows the values of small constants only
        return "<Tensor>"
    flat = a.reshape(-1)
    if a.dtype.kind == "f" and not np.all(flat == np.round(flat)):
        items = [f"{float(x):.4f}" for x in flat]
    else:
        items = [_scalar_text(x) for x in flat.tolist()]
    width = max((len(s) for s in items), default=0) + 1
    from ember.jit.ir.types import scalar_type_name

    name = scalar_type_name(getattr(t, "dtype", a.dtype))
    body = " ".join(s.rjust(width) for s in items)
    return f"{body} [ CPU{name}Type{{{','.join(str(s) for s in a.shape)}}} ]"


def _ival_text(v) -> str:
    if v is None:
        return "None"
    if isinstance(v, bool):
        return "True" if v else "False"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return format_float(v)
    if isinstance(v, str):
        return _quote(v)
    if isinstance(v, tuple):
        inner = ", ".join(_ival_text(e) for e in v)
        return f"({inner},)" if len(v) == 1 else f"({inner})"
    if isinstance(v, list):
        if any(hasattr(e, "_data") for e in v):
            return "[<Tensors>]"
        return "[" + ", ".join(_ival_text(e) for e in v) + "]"
    if hasattr(v, "_data"):
        return format_tensor(v)
    return _quote(str(v))  # devices and other objects print by name


def format_attr(kind: str, v) -> str:
    """Format one attribute value of kind ``kind`` (torch's kind chars)."""
    if kind == "i":
        return str(int(v))
    if kind == "f":
        return format_float(v)
    if kind == "s":
        return _quote(str(v))
    if kind == "t":
        return format_tensor(v)
    if kind == "is":
        return "[" + ", ".join(str(int(e)) for e in v) + "]"
    if kind == "fs":
        return "[" + ", ".join(format_float(e) for e in v) + "]"
    if kind == "ss":
        return "[" + ", ".join(_quote(e) for e in v) + "]"
    if kind == "ts":
        return "[<Tensors>]"
    if kind in ("g", "gs"):
        return "<Graph>"
    if kind in ("ty", "tys"):
        return str(v)
    return _ival_text(v)


def _value(v, typed: bool) -> str:
    return f"%{v.debugName()} : {v.type().ir_str()}" if typed else f"%{v.debugName()}"


def print_node(n, indent: int = 0, source_ranges: bool = True) -> str:
    pad = " " * indent
    outs = ", ".join(_value(o, True) for o in n._outputs)
    attrs = ""
    if n._attrs:
        attrs = "[" + ", ".join(f"{k}={format_attr(*kv)}" for k, kv in n._attrs.items()) + "]"
    ins = ", ".join(_value(v, False) for v in n._inputs)
    line = f"{pad}{outs} = {n._kind}{attrs}({ins})"
    if n._scope:
        line += f", scope: {n._scope}"
    if source_ranges and n._source:
        line += f" # {n._source}"
    lines = [line + "\n"]
    for i, b in enumerate(n._blocks):
        lines.append(print_block(b, indent + 2, i, source_ranges))
    return "".join(lines)


def print_block(b, indent: int, index: int, source_ranges: bool = True) -> str:
    pad = " " * indent
    head = ", ".join(_value(v, True) for v in b.inputs())
    lines = [f"{pad}block{index}({head}):\n"]
    for n in b.nodes():
        lines.append(print_node(n, indent + 2, source_ranges))
    outs = ", ".join(_value(v, False) for v in b.outputs())
    lines.append(f"{pad}  -> ({outs})\n")
    return "".join(lines)


def print_graph(g, source_ranges: bool = True) -> str:
    head = ",\n      ".join(_value(v, True) for v in g.inputs())
    lines = [f"graph({head}):\n"]
    for n in g.nodes():
        lines.append(print_node(n, 2, source_ranges))
    outs = ", ".join(_value(v, False) for v in g.outputs())
    lines.append(f"  return ({outs})\n")
    return "".join(lines)

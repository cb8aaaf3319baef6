"""``.code``: TorchScript-like Python source printed from a graph (one statement per node;
torch's printer also inlines single-use values, which this one does not)."""

from __future__ import annotations

from ember.jit import ir as IR
from ember.jit.ir.printer import format_attr

__all__ = ["graph_to_code"]


def _py(name: str) -> str:
    s = name.replace(".", "_")
    return "_" + s if s[0].isdigit() else s


def graph_to_code(graph, name: str = "forward", method: bool = True) -> str:
    """Return the source of ``graph`` as a function ``name`` (a method when ``method``)."""
    consts: list = []
    env: dict = {}

    def ref(v):
        if v in env:
            return env[v]
        return _py(v.debugName())

    def expr_of_constant(n):
        if "value" not in n._attrs:
            return "None"
        kind, val = n._attrs["value"]
        if kind == "t":
            consts.append(val)
            return f"CONSTANTS.c{len(consts) - 1}"
        if kind == "i" and isinstance(val, bool):
            return str(val)
        return format_attr(kind, val)

    lines: list[str] = []

    def emit_block(block, indent):
        pad = "  " * indent
        for n in block.nodes():
            k = n.kind()
            outs = n.outputs()
            args = [ref(v) for v in n.inputs()]
            if k == "prim::Constant":
                env[outs[0]] = expr_of_constant(n)
                continue
            if k == "prim::ListConstruct":
                env[outs[0]] = "[" + ", ".join(args) + "]"
                continue
            if k == "prim::TupleConstruct":
                env[outs[0]] = "(" + ", ".join(args) + ("," if len(args) == 1 else "") + ")"
                continue
            target = ", ".join(_py(o.debugName()) for o in outs)
            if k == "prim::GetAttr":
                call = f"{args[0]}.{n.s('name')}"
            elif k == "prim::CallMethod":
                call = f"({args[0]}).{n.s('name')}({', '.join(args[1:])}, )"
            elif k == "prim::If":
                for o in outs:
                    env[o] = _py(o.debugName())
                lines.append(f"{pad}if {args[0]}:")
                for b in n.blocks():
                    emit_block(b, indent + 1)
                    for o, r in zip(outs, b.outputs()):
                        lines.append(f"{pad}  {_py(o.debugName())} = {ref(r)}")
                    if not list(b.nodes()) and not outs:
                        lines.append(f"{pad}  pass")
                    if b is n.blocks()[0]:
                        lines.append(f"{pad}else:")
                continue
            elif k == "prim::Loop":
                body = n.blocks()[0]
                for o, a in zip(outs, args[2:]):
                    lines.append(f"{pad}{_py(o.debugName())} = {a}")
                    env[o] = _py(o.debugName())
                for bi, o in zip(body.inputs()[1:], outs):
                    env[bi] = _py(o.debugName())
                lines.append(f"{pad}for {_py(body.inputs()[0].debugName())} in range({args[0]}):")
                emit_block(body, indent + 1)
                for o, r in zip(outs, body.outputs()[1:]):
                    lines.append(f"{pad}  {_py(o.debugName())} = {ref(r)}")
                continue
            else:
                ns, _, op = k.partition("::")
                head = "torch" if ns == "aten" else f"ops.{ns}"
                call = f"{head}.{op}({', '.join(args)})"
            lines.append(f"{pad}{target} = {call}" if outs else f"{pad}{call}")

    params = ["self"] if method else []
    inputs = graph.inputs()[1:] if method else graph.inputs()
    params += [f"{_py(v.debugName())}: {v.type().annotation_str()}" for v in inputs]
    emit_block(graph.block(), 1)
    outs = [ref(v) for v in graph.outputs()]
    rtype = graph.outputs()[0].type().annotation_str() if len(outs) == 1 else "Any"
    if isinstance(graph.outputs()[0].type(), IR.TupleType):
        rtype = graph.outputs()[0].type().annotation_str()
    head = f"def {name}(" + ",\n    ".join(params) + f") -> {rtype}:"
    body = lines + [f"  return {outs[0] if len(outs) == 1 else '(' + ', '.join(outs) + ')'}"]
    return "\n".join([head, *body]) + "\n"

"""The executor: an interpreter over a graph's nodes calling ember's ops (the same kernels
eager code runs, so results are bit-equal to eager)."""

from __future__ import annotations

import operator

from ember.jit._aten import RUN

__all__ = ["run", "run_block", "GraphFunction"]

# Python-number arithmetic, as scripted graphs hold it (aten::add on two ints...)
_NUMBER_OPS = {
    "aten::add": operator.add,
    "aten::sub": operator.sub,
    "aten::mul": operator.mul,
    "aten::div": operator.truediv,
    "aten::floordiv": operator.floordiv,
    "aten::remainder": operator.mod,
    "aten::pow": operator.pow,
    "aten::neg": operator.neg,
    "aten::gt": operator.gt,
    "aten::lt": operator.lt,
    "aten::ge": operator.ge,
    "aten::le": operator.le,
    "aten::eq": operator.eq,
    "aten::ne": operator.ne,
    "aten::__and__": operator.and_,
    "aten::__or__": operator.or_,
    "aten::__not__": operator.not_,
    "aten::__is__": operator.is_,
    "aten::__isnot__": operator.is_not,
}


def _is_number(x) -> bool:
    return isinstance(x, (int, float, bool)) or x is None


def _constant(n):
    obj = getattr(n, "_object", None)
    if obj is not None:
        return obj
    if "value" not in n._attrs:
        return None
    v = n._attrs["value"][1]
    if getattr(n, "_wrapped", False):
        return v.item()
    return v


def run_block(block, args: list, env: dict | None = None) -> list:
    """Run ``block`` with its inputs bound to ``args``; return its outputs."""
    env = {} if env is None else env
    for v, a in zip(block.inputs(), args):
        env[v] = a
    for n in block.nodes():
        _run_node(n, env)
    return [env[v] for v in block.outputs()]


def _run_node(n, env: dict) -> None:
    kind = n._kind
    outs = n._outputs
    if kind == "prim::Constant":
        env[outs[0]] = _constant(n)
        return
    args = [env[v] for v in n._inputs]
    if kind == "prim::If":
        block = n._blocks[0] if args[0] else n._blocks[1]
        results = run_block(block, [], env)
    elif kind == "prim::Loop":
        results = _loop(n, args, env)
    else:
        results = _call(n, kind, args)
        if kind in ("prim::TupleUnpack", "prim::ListUnpack"):
            pass  # one value per output, however many
        elif len(outs) != 1:
            if len(outs) == 0:
                return
        else:
            results = [results]
    for v, r in zip(outs, results):
        env[v] = r


def _loop(n, args, env):
    trip, cond, carried = args[0], args[1], list(args[2:])
    body = n._blocks[0]
    i = 0
    while cond and i < trip:
        out = run_block(body, [i, *carried], env)
        cond, carried = out[0], out[1:]
        i += 1
    return carried


def _call(n, kind, args):
    if kind == "prim::GetAttr":
        return getattr(args[0], n._attrs["name"][1])
    if kind == "prim::SetAttr":
        setattr(args[0], n._attrs["name"][1], args[1])
        return None
    if kind == "prim::ListConstruct":
        return list(args)
    if kind == "prim::TupleConstruct":
        return tuple(args)
    if kind == "prim::DictConstruct":
        return dict(zip(args[::2], args[1::2]))
    if kind in ("prim::TupleUnpack", "prim::ListUnpack"):
        return list(args[0])
    if kind == "prim::TupleIndex":
        return args[0][args[1]]
    if kind == "prim::NumToTensor":
        import ember

        return ember.tensor(args[0])
    callee = getattr(n, "_callee", None)
    if kind == "prim::CallMethod":
        if callee is not None:
            return run(callee, args)[0]
        return getattr(args[0], n._attrs["name"][1])(*args[1:])
    if kind == "prim::CallFunction":
        if callee is not None:
            return run(callee, args[1:])[0]
        return args[0](*args[1:])
    if kind == "prim::RaiseException":
        from ember.jit._extras import Error

        # torch.jit.Error, its message ending with the exception raised in the script
        qual = args[1] if len(args) > 1 and args[1] is not None else "RuntimeError"
        raise Error(
            "The following operation failed in the TorchScript interpreter.\n"
            f"{qual}: {args[0] if args else 'Exception'}"
        )
    if kind == "prim::fork":
        from ember.jit._fork import fork_block

        return fork_block(n._blocks[0], args)
    if kind == "aten::wait":
        return args[0].wait()
    if kind == "prim::unchecked_cast" or kind == "prim::Uninitialized":
        return args[0] if args else None
    if kind == "aten::format":
        return args[0].format(*args[1:])
    if kind == "aten::__is__" or kind == "aten::__isnot__":
        return (args[0] is args[1]) == (kind == "aten::__is__")
    if kind in _NUMBER_OPS and all(_is_number(a) for a in args):
        return _NUMBER_OPS[kind](*args)
    payload = getattr(n, "_payload", None)
    if payload is not None:
        return payload(*args)
    fn = RUN.get(kind)
    if fn is None:
        raise RuntimeError(f"the executor cannot run node '{n._line().strip()}': unknown kind")
    return fn(*args)


def run(graph, inputs) -> list:
    """Run ``graph`` on ``inputs`` (one per graph input); return its outputs as a list."""
    inputs = list(inputs)
    if len(inputs) != len(graph.inputs()):
        raise RuntimeError(
            f"the graph takes {len(graph.inputs())} inputs but {len(inputs)} were given"
        )
    return run_block(graph.block(), inputs)


class GraphFunction:
    """A callable running a graph: ``GraphFunction(graph)(*inputs)`` returns its single
    output (or the tuple of its outputs)."""

    def __init__(self, graph):
        self.graph = graph

    def __call__(self, *inputs):
        outs = run(self.graph, inputs)
        return outs[0] if len(outs) == 1 else tuple(outs)

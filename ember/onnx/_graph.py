"""The exporter's reading of an ``ember.jit.ir`` graph.

``trace`` records the model with ``jit``'s tracer (the same IR ``jit.trace`` makes) and
``read`` walks that IR once on the example inputs, running every node with the executor's
kernels so each value has its concrete tensor beside it. The walk gives the translation what
it needs and the IR does not spell out:

- shapes and dtypes of every tensor (from the concrete results);
- which values are constants: nodes that read no input or parameter are folded (their result
  is known), and sizes (``aten::size``, ``prim::NumToTensor``, ``aten::Int`` and arithmetic on
  them) are always numbers here, the dynamic dims being followed by tracing again
  (``_dynamic``);
- ``prim::CallMethod`` of a submodule is read through its callee's graph with the module's
  path as the scope of the nodes inside ("/layer1/layer1.0", torch's ONNX node names), except
  for the layers translated whole (``_modules.leaf_modules``: recurrent layers, max pooling
  with other than 2 dims), which become one ``"module"`` node;
- ``prim::If`` and ``prim::Loop`` whose condition and trip count are constants are read
  through the branch taken / the iterations run; a ``prim::If`` on the data becomes one
  ``"if"`` node holding both branches (ONNX's ``If``), each branch run on the example inputs,
  and a ``prim::Loop`` on the data one ``"loop"`` node holding its body read once (ONNX's
  ``Loop``); control flow carrying other than tensors is refused (``ControlFlowError``).

The result is a small flat graph (``Graph``: inputs, parameters, constants, nodes, outputs)
whose ``Node``s are the IR's nodes: ``kind`` ``"op"`` with the IR's node kind, its positional
arguments as ``inputs``, or, for nodes the tracer recorded without a schema, the op-table entry
and its parameters (``target``, ``params``) that the node runs.
"""

from __future__ import annotations

import inspect

from ember._core.tensor import Tensor, _wrap
from ember.jit import executor as X
from ember.onnx.errors import OnnxExporterError

__all__ = ["Graph", "Node", "Value", "TracingError", "ControlFlowError", "read", "trace", "flatten"]


# kinds a graph of constants still runs at each call (random numbers): never folded
_NOT_FOLDED = ("aten::dropout", "aten::rand", "aten::randn", "aten::randint",
               "aten::rand_like", "aten::randn_like")  # fmt: skip


class TracingError(RuntimeError):
    """The traced program did something the graph cannot represent."""


class ControlFlowError(OnnxExporterError):
    """A scripted graph's branch or loop depends on the inputs."""


class Value:
    """One tensor of the exported graph: an input (``kind`` "input"), an initializer
    ("param"), a constant ("const") or the ``index``-th output of ``node`` ("node")."""

    __slots__ = ("name", "kind", "shape", "dtype", "data", "node", "index")

    def __init__(self, name, kind, shape, dtype, data=None, node=None, index=0):
        self.name, self.kind, self.shape, self.dtype = name, kind, shape, dtype
        self.data = data  # params and constants: the array
        self.node, self.index = node, index

    def __repr__(self) -> str:
        return f"%{self.name}"


class Node:
    """One IR node to translate. ``kind`` is ``"op"`` or ``"module"`` (``target`` the layer);
    ``name`` is the op's name (``"add"`` for ``aten::add`` and ``aten::add_``); ``positional``
    says whether ``inputs`` are the node's positional arguments (translated by node kind) or
    the op-table call's inputs with ``params`` beside them (translated by op name)."""

    __slots__ = (
        "kind",
        "name",
        "target",
        "inputs",
        "params",
        "outputs",
        "inplace",
        "scope",
        "dyn",
        "links",
        "positional",
        "ir_kind",
        "blocks",
        "n_loop_inputs",
    )

    def __init__(self, kind, name, target, inputs, params, positional=False):
        self.kind, self.name, self.target = kind, name, target
        self.inputs, self.params, self.positional = inputs, params, positional
        self.outputs: list = []
        self.inplace = False
        self.scope = ""
        self.ir_kind = ""
        self.blocks = None  # an "if" node: [(nodes, output Values)] for then and else
        self.dyn = None  # sizes that follow dynamic dims ({param: expression}, see _dynamic)
        # index arrays in ``params`` that are a traced tensor's data, or the positions of a
        # traced bool mask: {(param, position): ("index", Value) | ("mask", Value, ndim)}
        self.links = None


class Graph:
    """Inputs, initializers, constants, nodes and outputs of one read IR graph."""

    def __init__(self):
        self.inputs: list[Value] = []
        self.params: list[Value] = []
        self.consts: list[Value] = []
        self.nodes: list[Node] = []
        self.outputs: list[Value] = []


def flatten(x) -> list:
    """Return the leaves of nested tuples and lists."""
    if isinstance(x, (tuple, list)):
        return [e for item in x for e in flatten(item)]
    return [x]


# nodes whose result is a Python number read from a shape: always folded (see _dynamic)
_SIZE_KINDS = ("aten::size", "prim::NumToTensor", "aten::Int", "aten::dim", "aten::len")
_STRUCT = (
    "prim::ListConstruct",
    "prim::TupleConstruct",
    "prim::TupleUnpack",
    "prim::ListUnpack",
    "prim::TupleIndex",
    "aten::__getitem__",
)
# positional kinds whose arguments torch's schema names as the op table names its parameters
# (the keys ``_dynamic`` notes sizes under)
ARG_NAMES = {
    "aten::transpose": ("self", "dim0", "dim1"),
    "aten::permute": ("self", "dims"),
    "aten::unsqueeze": ("self", "dim"),
    "aten::select": ("self", "dim", "index"),
    "aten::slice": ("self", "dim", "start", "end", "step"),
    "aten::addmm": ("self", "mat1", "mat2", "beta", "alpha"),
}


def _op_style(kind, args, out):
    """Nodes with a schema whose translation reads them as the op-table call they stand for:
    ``(op name, inputs, params)``, or None."""
    if kind in ("aten::view", "aten::reshape", "aten::flatten"):
        # the traced sizes as resolved (-1 filled in): _dynamic compares them between traces
        return "view", [args[0]], {"shape": tuple(out.shape)}
    if kind in ("aten::cat", "aten::stack"):
        return kind[6:], list(args[0]), {"dim": args[1]}
    if kind in ("aten::softmax", "aten::log_softmax"):
        return "_" + kind[6:], [args[0]], {"dim": args[1]}
    if kind == "aten::to" and isinstance(args[1], int):
        return "_to_copy", [args[0]], {}
    if kind in ("aten::sum", "aten::mean"):
        if len(args) <= 2:
            return kind[6:], [args[0]], {}
        return kind[6:], [args[0]], {"dims": args[1], "keepdim": args[2]}
    return None


class _Reader:
    def __init__(self, root, params: dict, fold: bool):
        from ember.onnx._modules import leaf_modules

        self.g = Graph()
        self.fold = fold
        self.leaves = leaf_modules()
        self.param_names = {id(t): name for name, t in params.items()}
        self.param_values: dict = {}  # id(tensor) -> Value
        self.const_values: dict = {}  # id(tensor) -> Value
        self.module_names = {}
        if root is not None:
            for name, m in root.named_modules():
                if name:
                    self.module_names[id(m)] = name
                    original = m.__dict__.get("_original")  # a script/traced child's module
                    if original is not None:
                        self.module_names[id(original)] = name
        self.counter = 0
        self.const_count = 0
        self.versions: dict = {}  # id(Value) -> version of its tensor when made
        self.refs: dict = {}  # the tracer's references to values (index links) -> Value
        self.sizes: set = set()  # IR values holding a size read from a graph tensor

    # --- values
    def const(self, t: Tensor) -> Value:
        v = self.const_values.get(id(t))
        if v is None:
            name = f"constant.{self.const_count}" if self.const_count else "constant"
            self.const_count += 1
            v = Value(name, "const", tuple(t.shape), t.dtype, t._data.copy())
            self.g.consts.append(v)
            self.const_values[id(t)] = (v, t)  # keep t alive: ids are not reused
            return v
        return v[0]

    def arg(self, entry):
        """The translation's view of a value: its Value, a constant Value for a constant
        tensor, the Python value otherwise (lists element-wise)."""
        conc, sym = entry
        if sym is not None:
            return sym
        if isinstance(conc, Tensor):
            return self.const(conc)
        return conc

    def new_value(self, t: Tensor, node, i) -> Value:
        self.counter += 1
        return Value(str(self.counter), "node", tuple(t.shape), t.dtype, node=node, index=i)

    # --- the walk
    def block(self, block, env: dict, scope: str) -> None:
        for n in block.nodes():
            self.node(n, env, scope)
            token = n.__dict__.get("_ref")
            if token is not None:
                for i, o in enumerate(n.outputs()):
                    self.refs[(token, i)] = env[o][1]

    def node(self, n, env: dict, scope: str) -> None:
        kind = n.kind()
        outs = n.outputs()
        if kind == "prim::Constant":
            env[outs[0]] = (X._constant(n), None)
            return
        ins = [env[v] for v in n.inputs()]
        conc = [c for c, _ in ins]
        self._check_versions(n, ins)
        if kind == "prim::GetAttr":
            obj = getattr(conc[0], n.s("name"))
            env[outs[0]] = (obj, self._param(obj))
            return
        if kind in _STRUCT:
            self._struct(n, kind, ins, env)
            return
        if kind == "prim::CallMethod":
            self._call(n, ins, env, scope)
            return
        if kind in ("prim::If", "prim::Loop"):
            self._control(n, kind, ins, env, scope)
            return
        if kind == "aten::Bool" and isinstance(ins[0][1], Value):
            # a condition on the data: the one-element tensor, as ONNX's If takes it
            node = Node("op", "Bool", None, [ins[0][1]], {}, positional=True)
            node.scope, node.ir_kind = scope, kind
            self.g.nodes.append(node)
            from ember._core import dtype as D

            val = Value(str(self.counter + 1), "node", (), D.bool, node=node)
            self.counter += 1
            node.outputs.append(val)
            env[outs[0]] = (X._call(n, kind, conc), val)
            return
        constant = all(_constant(s) for _, s in ins) and kind not in _NOT_FOLDED
        if kind in _SIZE_KINDS or (constant and (self.fold or _is_size(ins))):
            if (kind == "aten::size" and isinstance(ins[0][1], Value)) or (
                kind in ("aten::Int", "prim::NumToTensor") and n.inputs()[0] in self.sizes
            ):
                self.sizes.add(outs[0])
            result = X._call(n, kind, conc)
            self._bind(outs, result, None, env)
            return
        result = X._call(n, kind, conc)
        node = self._make(n, kind, ins, result, scope)
        syms = self._outputs(node, result)
        self._bind(outs, result, syms, env)

    def _check_versions(self, n, ins) -> None:
        for c, s in ins:
            if isinstance(s, Value) and s.kind == "node" and isinstance(c, Tensor):
                seen = self.versions.get(id(s))
                if seen is not None and c._vc[0] != seen:
                    raise TracingError(
                        f"the traced program read a tensor ({s!r}, shape {list(c.shape)}) that "
                        "was modified in place in a way the tracer did not see (through a view "
                        "or outside ember's ops); clone it before writing to it"
                    )

    def _param(self, obj):
        if not isinstance(obj, Tensor):
            return None
        name = self.param_names.get(id(obj))
        if name is None:
            return None  # a plain tensor attribute: a constant
        v = self.param_values.get(id(obj))
        if v is None:
            v = Value(name, "param", tuple(obj.shape), obj.dtype, data=obj._data)
            self.g.params.append(v)
            self.param_values[id(obj)] = v
        return v

    def _bind(self, outs, result, syms, env) -> None:
        if len(outs) == 1:
            env[outs[0]] = (result, syms)
            return
        result = list(result) if result is not None else [None] * len(outs)
        syms = list(syms) if syms is not None else [None] * len(outs)
        for v, r, s in zip(outs, result, syms):
            env[v] = (r, s)

    def _struct(self, n, kind, ins, env) -> None:
        conc = [c for c, _ in ins]
        result = X._call(n, kind, conc)
        if all(_constant(s) for _, s in ins):
            self._bind(n.outputs(), result, None, env)
            return
        if kind in ("prim::ListConstruct", "prim::TupleConstruct"):
            syms = [self.arg(e) for e in ins]
            env[n.outputs()[0]] = (result, syms if kind == "prim::ListConstruct" else tuple(syms))
            return
        if kind in ("prim::TupleUnpack", "prim::ListUnpack"):
            src = ins[0][1]
            self._bind(n.outputs(), result, list(src), env)
            return
        index = conc[1]  # TupleIndex, __getitem__: a constant position
        env[n.outputs()[0]] = (result, ins[0][1][index])

    def _call(self, n, ins, env, scope) -> None:
        module = ins[0][0]
        callee = getattr(n, "_callee", None)
        name = self.module_names.get(id(module))
        inner = f"{scope}/{name}" if name else scope
        layer = module.__dict__.get("_original") or module  # a scripted child: its layer
        if isinstance(layer, self.leaves) or callee is None:
            conc = [c for c, _ in ins]
            result = X._call(n, "prim::CallMethod", conc)
            node = Node("module", type(layer).__name__, layer, [self.arg(e) for e in ins[1:]], {})
            node.inputs = flatten(node.inputs)
            node.scope = inner
            self.g.nodes.append(node)
            syms = self._outputs(node, result)
            self._bind(n.outputs(), result, syms, env)
            return
        sub = {}
        for v, e in zip(callee.inputs(), ins):
            sub[v] = e
        self.block(callee.block(), sub, inner)
        results = [sub[v] for v in callee.outputs()]
        for v, e in zip(n.outputs(), results):
            env[v] = e

    def _control(self, n, kind, ins, env, scope) -> None:
        if kind == "prim::If" and isinstance(ins[0][1], Value):
            self._if(n, ins, env, scope)
            return
        if kind == "prim::Loop" and not all(_constant(s) for _, s in ins[:2]):
            self._loop(n, ins, env, scope)
            return
        if (
            kind == "prim::Loop"
            and n.inputs()[0] in self.sizes
            and all(isinstance(c, Tensor) for c, _ in ins[2:])
        ):  # ``for i in range(x.size(0))``: ONNX's Loop, its trip count a size (see _dynamic)
            self._loop(n, ins, env, scope)
            self.g.nodes[-1].params = {"trip": int(ins[0][0])}
            return
        if not all(_constant(s) for _, s in ins[: 1 if kind == "prim::If" else 2]):
            raise ControlFlowError(
                f"ember's ONNX exporter reads control flow only where its condition is known "
                f"when exporting; this {kind} depends on an input ({n._line().strip()})"
            )
        if kind == "prim::If":
            block = n.blocks()[0] if ins[0][0] else n.blocks()[1]
            self.block(block, env, scope)
            results = [env[v] for v in block.outputs()]
        else:
            trip, cond = ins[0][0], ins[1][0]
            carried = ins[2:]
            body = n.blocks()[0]
            i = 0
            while cond and i < trip:
                for v, e in zip(body.inputs(), [(i, None), *carried]):
                    env[v] = e
                self.block(body, env, scope)
                out = [env[v] for v in body.outputs()]
                if not _constant(out[0][1]):
                    raise ControlFlowError(
                        "ember's ONNX exporter reads loops only where their condition is known "
                        "when exporting"
                    )
                cond, carried = out[0][0], out[1:]
                i += 1
            results = carried
        for v, e in zip(n.outputs(), results):
            env[v] = e

    def _if(self, n, ins, env, scope) -> None:
        """A branch on the data: both blocks are read (each run on the example inputs), as
        one ``"if"`` node holding their nodes and outputs (ONNX's ``If``)."""
        taken = 0 if ins[0][0] else 1
        saved = self.g.nodes
        branches, results = [], []
        for block in n.blocks():
            self.g.nodes = []
            self.block(block, env, scope)
            outs = []
            for v in block.outputs():
                conc, sym = env[v]
                if not isinstance(conc, Tensor):
                    self.g.nodes = saved
                    raise ControlFlowError(
                        "ember's ONNX exporter reads a branch on the data only where it gives "
                        f"tensors ({n._line().strip()})"
                    )
                outs.append(sym if isinstance(sym, Value) else self.const(conc))
            branches.append((self.g.nodes, outs))
            results.append([env[v][0] for v in block.outputs()])
        self.g.nodes = saved
        inner = {id(v) for nodes, _ in branches for m in nodes for v in m.outputs if v is not None}
        outer = []
        for nodes, outs in branches:
            for v in [*(a for m in nodes for a in _values_in(m)), *outs]:
                if id(v) not in inner and all(v is not u for u in outer):
                    outer.append(v)
        node = Node("if", "If", None, [ins[0][1], *outer], {})
        node.blocks = branches
        node.scope = scope
        node.ir_kind = "prim::If"
        self.g.nodes.append(node)
        for v, r in zip(n.outputs(), results[taken]):
            val = self.new_value(r, node, len(node.outputs))
            node.outputs.append(val)
            self.versions[id(val)] = r._vc[0]
            env[v] = (r, val)

    def _loop(self, n, ins, env, scope) -> None:
        """A loop on the data: the body read once, its iteration number and carried values as
        the loop's own Values, as one ``"loop"`` node (ONNX's ``Loop``); the loop itself runs
        on the example inputs for the results' shapes."""
        from ember._core import dtype as D

        carried = ins[2:]
        if not all(isinstance(c, Tensor) for c, _ in carried):
            raise ControlFlowError(
                "ember's ONNX exporter reads a loop on the data only where it carries tensors "
                f"({n._line().strip()})"
            )
        results = X._loop(n, [c for c, _ in ins], {v: e[0] for v, e in env.items()})
        body = n.blocks()[0]
        self.counter += 1
        it = Value(f"iter.{self.counter}", "loop", (), D.int64)
        env[body.inputs()[0]] = (0, it)
        own = [it]
        for v, (c, _) in zip(body.inputs()[1:], carried):
            self.counter += 1
            val = Value(f"carried.{self.counter}", "loop", tuple(c.shape), c.dtype)
            own.append(val)
            env[v] = (c, val)
        saved, self.g.nodes = self.g.nodes, []
        try:
            self.block(body, env, scope)
        finally:
            nodes, self.g.nodes = self.g.nodes, saved
        outs = []
        for v in body.outputs():
            conc, sym = env[v]
            outs.append(sym if isinstance(sym, Value) else conc)
        inner = {id(v) for m in nodes for v in m.outputs if v is not None} | {id(v) for v in own}
        outer = []
        for v in [*(a for m in nodes for a in _values_in(m)), *outs]:
            if isinstance(v, Value) and id(v) not in inner and all(v is not u for u in outer):
                outer.append(v)
        node = Node("loop", "Loop", None, [self.arg(e) for e in ins] + outer, {})
        node.n_loop_inputs = len(ins)
        node.blocks = (nodes, own, outs)
        node.scope, node.ir_kind = scope, "prim::Loop"
        self.g.nodes.append(node)
        for v, r in zip(n.outputs(), results):
            val = self.new_value(r, node, len(node.outputs))
            node.outputs.append(val)
            self.versions[id(val)] = r._vc[0]
            env[v] = (r, val)

    def _make(self, n, kind, ins, result, scope) -> Node:
        op = getattr(n, "_op", None)
        if op is not None:  # recorded without a schema: the op and its parameters
            target, params, lead = op
            args = [self.arg(e) for e in ins][lead:]
            node = Node("op", target.name, target, args, dict(params))
            node.inplace = lead > 0 or kind.endswith("_")
            links = getattr(n, "_links", None)
            if links:
                node.links = {k: (link[0], self._linked(link[1]), *link[2:])
                              for k, link in links.items()}  # fmt: skip
        else:
            args = [self.arg(e) for e in ins]
            first = result[0] if isinstance(result, (tuple, list)) else result
            style = _op_style(kind, args, first) if isinstance(first, Tensor) else None
            inplace = kind.endswith("_") and not kind.endswith("__")
            base = kind[:-1] if inplace else kind
            if style is not None:
                node = Node("op", style[0], None, style[1], style[2])
            else:
                names = ARG_NAMES.get(base)
                params = {}
                for i, a in enumerate(args):
                    if not isinstance(a, Value):
                        params[names[i] if names and i < len(names) else i] = a
                node = Node("op", base.split("::", 1)[1], None, args, params, positional=True)
            node.inplace = inplace
        node.ir_kind = kind
        node.scope = scope or _scope_of(n)
        self.g.nodes.append(node)
        return node

    def _linked(self, ref):
        return self.refs.get(ref)

    def _outputs(self, node, result):
        """Make the Values of ``node``'s tensor results; return the results' symbolic form."""
        leaves = []

        def mirror(r):
            if isinstance(r, Tensor):
                v = self.new_value(r, node, len(leaves))
                leaves.append(v)
                node.outputs.append(v)
                self.versions[id(v)] = r._vc[0]
                return v
            if isinstance(r, tuple):
                return tuple(mirror(e) for e in r)
            if isinstance(r, list):
                return [mirror(e) for e in r]
            node.outputs.append(None)
            return DYNAMIC  # a Python value computed from the inputs

        return mirror(result)


class _Dynamic:
    """The symbolic form of a Python value (a bool, an int) computed from the inputs."""

    def __repr__(self) -> str:
        return "<dynamic>"


DYNAMIC = _Dynamic()


def _values_in(node) -> list:
    """The Values ``node`` reads (its inputs, its index links, what its branches read)."""
    out = [v for v in flatten(node.inputs) if isinstance(v, Value)]
    out += [link[1] for link in (node.links or {}).values() if isinstance(link[1], Value)]
    return out


def _scope_of(n) -> str:
    """An inlined node's module path as ONNX node names show it: ``__module.a/__module.a.b``
    is ``/a/a.b``."""
    scope = n.scopeName()
    if not scope:
        return ""
    return "".join("/" + part.split("__module.", 1)[-1] for part in scope.split("/"))


def _constant(sym) -> bool:
    if sym is None:
        return True
    if isinstance(sym, Value):
        return sym.kind == "const"
    if sym is DYNAMIC:
        return False
    if isinstance(sym, (list, tuple)):
        return all(_constant(s) for s in sym)
    return True


def _is_size(ins) -> bool:
    # arithmetic on sizes (0-d int64 tensors and ints made from a shape)
    return any(isinstance(c, int) and not isinstance(c, bool) for c, _ in ins)


def read(ir_graph, inputs: list, root=None, params: dict | None = None, fold=True, names=()):
    """Walk ``ir_graph`` on ``inputs`` (its inputs' concrete values, the module first when it
    has ``%self``) and return the ``Graph`` to translate."""
    r = _Reader(root, params or {}, fold)
    env: dict = {}
    names = list(names)
    k = 0
    for v, x in zip(ir_graph.inputs(), inputs):
        if isinstance(x, Tensor):
            name = names[k] if k < len(names) else f"input.{k + 1}"
            k += 1
            val = Value(name, "input", tuple(x.shape), x.dtype)
            r.g.inputs.append(val)
            r.versions[id(val)] = x._vc[0]
            env[v] = (x, val)
            r.refs[("input", v.offset())] = val
        else:
            env[v] = (x, None)
    r.block(ir_graph.block(), env, "")
    order = {name: i for i, name in enumerate(params or {})}
    r.g.params.sort(key=lambda v: order.get(v.name, len(order)))  # state-dict order, as torch
    out = [env[v] for v in ir_graph.outputs()]
    for conc, sym in out:
        for c, s in zip(flatten(conc), _leaves(sym, conc)):
            if isinstance(c, Tensor):
                r.g.outputs.append(s if isinstance(s, Value) else r.const(c))
    return r.g


def _leaves(sym, conc) -> list:
    if sym is None:
        return [None] * len(flatten(conc))
    return flatten(sym)


def scripted(model) -> bool:
    """True for a ``jit.script``-compiled module holding its graph."""
    from ember.jit._script import RecursiveScriptModule

    return isinstance(model, RecursiveScriptModule) and model._graph is not None


def _calls_bound(g) -> bool:
    """True when every ``prim::CallMethod`` passes what its callee takes (recursively)."""
    for n in g.nodes():
        if n.kind() != "prim::CallMethod":
            continue
        callee = getattr(n, "_callee", None)
        if callee is None or len(callee.inputs()) != len(n.inputs()):
            return False
        if not _calls_bound(callee):
            return False
    return True


def trace(
    model,
    args: tuple,
    kwargs: dict | None,
    params: dict,
    input_names,
    fold: bool,
    script_graph: bool = True,
):
    """Record ``model(*args, **kwargs)`` with ``jit``'s tracer and read the IR; return the
    ``Graph``. The tensors among ``args`` and ``kwargs`` (nested in tuples and lists too) are
    the graph's inputs, in order; other arguments are fixed."""
    from ember.jit._tracer import trace_to_graph
    from ember.nn import Module

    kwargs = kwargs or {}
    leaves = flatten(list(args) + list(kwargs.values()))
    tensors: list = []
    for t in leaves:
        if isinstance(t, Tensor) and all(t is not u for u in tensors):
            tensors.append(t)

    def rebuild(x, given):
        if isinstance(x, Tensor):
            return given[next(i for i, u in enumerate(tensors) if u is x)]
        if isinstance(x, tuple):
            return tuple(rebuild(e, given) for e in x)
        if isinstance(x, list):
            return [rebuild(e, given) for e in x]
        if isinstance(x, dict):
            return {k: rebuild(e, given) for k, e in x.items()}
        return x

    def call(*given):
        a = rebuild(tuple(args), given)
        k = rebuild(kwargs, given)
        return model(*a, **k)

    call.__signature__ = inspect.Signature(
        [inspect.Parameter(f"input_{i}", inspect.Parameter.POSITIONAL_ONLY)
         for i in range(len(tensors))]
    )  # fmt: skip
    module = model if isinstance(model, Module) else None
    copies = [_wrap(t._data.copy()) for t in tensors]
    if script_graph and scripted(model) and not kwargs and all(isinstance(a, Tensor) for a in args):
        # a scripted module: its compiled graph, control flow and all
        g = model.graph
        if len(g.inputs()) == len(tensors) + 1 and _calls_bound(g):
            return read(g, [model, *copies], module, params, fold, input_names or ())
    g, _ = trace_to_graph(call, tuple(tensors), module=module, dce=False)
    if module is not None and not _calls_bound(g):
        # a trace whose calls do not split into methods cleanly: read the one inlined graph
        # (layers translated whole are then read op by op)
        g, _ = trace_to_graph(call, tuple(tensors), module=module, inline=True, dce=False)
    # the read runs the graph again: on copies, so in-place ops do not write twice to the inputs
    inputs = ([module] if module is not None else []) + copies
    return read(g, inputs, module, params, fold, input_names or ())

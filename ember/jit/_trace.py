"""The tracer: run a function once and record the ops it dispatches as a graph.

It is an op-table observer (``registry.add_observer``): every out-of-place and in-place op call
becomes a ``Node`` whose inputs are ``Value``s. A tensor is known by the identity of the Tensor
object (kept alive for the trace, so ids are not reused):

- the example inputs are the graph's inputs;
- a module's parameters and buffers are initializers, named by their state-dict keys;
- any other tensor an op reads (made by a creation function, a Python number turned into a
  tensor...) is a constant: its value at that moment;
- an in-place op makes a new Value for the tensor it writes.

Every Value remembers the version of its tensor; a tensor changed behind the tracer's back (for
instance written through a view) is caught when it is read again.

Leaf modules (``leaf_modules``) are recorded as one node each (kind ``"module"``) instead of
the ops inside them: the ONNX exporter uses this for layers whose ops hide what they compute
(max pooling reads indices computed outside the op table; recurrent layers).
"""

from __future__ import annotations

import contextlib
import warnings

import numpy as np

from ember._core.tensor import Tensor
from ember._ops import registry

_TRACING: list = []  # the active tracers, innermost last


def is_tracing() -> bool:
    """Return True while a function is being traced (``jit.trace``, ``onnx.export``)."""
    return bool(_TRACING)


class TracerWarning(Warning):
    """Warns about a trace that may not generalise (as torch.jit.TracerWarning)."""


# Tensor -> Python value conversions the graph cannot follow, and how torch's tracer names them
_LEAKS = {
    "item": "a Python number",
    "__int__": "a Python integer",
    "__float__": "a Python float",
    "__index__": "a Python index",
    "__bool__": "a Python boolean",
    "tolist": "a Python list",
    "numpy": "a NumPy array",
}


def _leak_guard(name: str, original):
    what = _LEAKS[name]

    def guarded(self, *args, **kwargs):
        tracer = _TRACING[-1] if _TRACING else None
        if tracer is not None and tracer.is_traced(self):
            warnings.warn(
                f"Converting a tensor to {what} might cause the trace to be incorrect. We can't "
                "record the data flow of Python values, so this value will be treated as a "
                "constant in the future. This means that the trace might not generalize to "
                "other inputs!",
                TracerWarning,
                stacklevel=2,
            )
        return original(self, *args, **kwargs)

    guarded.__name__ = getattr(original, "__name__", name)
    guarded.__doc__ = original.__doc__
    return guarded


@contextlib.contextmanager
def _leak_guards():
    """Warn, while tracing, when a traced tensor becomes a Python value (as torch does)."""
    saved = {name: Tensor.__dict__.get(name) for name in _LEAKS}
    for name in _LEAKS:
        setattr(Tensor, name, _leak_guard(name, getattr(Tensor, name)))
    try:
        yield
    finally:
        for name, original in saved.items():
            if original is None:
                delattr(Tensor, name)
            else:
                setattr(Tensor, name, original)


class TracingError(RuntimeError):
    """The traced program did something the graph cannot represent."""


class Value:
    """One tensor in the graph: an input (``kind`` "input"), an initializer ("param"), a
    constant ("const") or the ``index``-th output of ``node`` ("node")."""

    __slots__ = ("name", "kind", "shape", "dtype", "data", "node", "index")

    def __init__(self, name, kind, shape, dtype, data=None, node=None, index=0):
        self.name, self.kind, self.shape, self.dtype = name, kind, shape, dtype
        self.data = data  # params and constants: the array
        self.node, self.index = node, index

    def __repr__(self) -> str:
        return f"%{self.name}"


class Node:
    """One recorded call: ``kind`` is ``"op"`` (``target`` an op-table entry) or ``"module"``
    (``target`` a leaf module); ``inputs`` are Values or plain Python values; ``scope`` is the
    module path it ran in, as torch's ONNX node names ("/layer1/layer1.0")."""

    __slots__ = (
        "kind",
        "target",
        "inputs",
        "params",
        "outputs",
        "inplace",
        "scope",
        "dyn",
        "links",
    )

    def __init__(self, kind, target, inputs, params, inplace=False):
        self.kind, self.target, self.inputs, self.params = kind, target, inputs, params
        self.outputs: list = []
        self.inplace = inplace
        self.scope = ""
        self.dyn = None  # the ONNX exporter's note of sizes that follow dynamic dims
        # index arrays in ``params`` that are a traced tensor's data, or the positions of a
        # traced bool mask: {(param, position): ("index", Value) | ("mask", Value, ndim)}
        self.links = None

    @property
    def name(self) -> str:
        return self.target.name if self.kind == "op" else type(self.target).__name__


class Graph:
    """The record of one traced call: inputs, initializers, constants, nodes and outputs."""

    def __init__(self):
        self.inputs: list[Value] = []
        self.params: list[Value] = []
        self.consts: list[Value] = []
        self.nodes: list[Node] = []
        self.outputs: list[Value] = []

    def __str__(self) -> str:
        def typ(v):
            return f"{str(v.dtype).replace('torch.', '')}{list(v.shape)}"

        head = ", ".join(f"%{v.name} : {typ(v)}" for v in self.inputs + self.params)
        lines = [f"graph({head}):"]
        for v in self.consts:
            lines.append(f"  %{v.name} : {typ(v)} = constant")
        for n in self.nodes:
            outs = ", ".join(f"%{v.name} : {typ(v)}" for v in n.outputs if v is not None)
            args = [repr(v) for v in n.inputs]
            args += [f"{k}={_short(p)}" for k, p in n.params.items() if k != "out"]
            call = n.name + ("_" if n.inplace else "")
            if n.kind == "op":
                call = "aten::" + call  # torch's node kinds: aten::add, aten::tanh...
            lines.append(f"  {outs} = {call}({', '.join(args)})")
        lines.append(f"  return ({', '.join(repr(v) for v in self.outputs)})")
        return "\n".join(lines) + "\n"

    def code(self, name: str = "forward", method: bool = True) -> str:
        """Return the recorded ops as Python-like source, in the manner of torch's ``.code``
        (a listing of this trace: ember compiles nothing, and runs the original Python)."""

        def ref(v):
            if not isinstance(v, Value):
                return repr(v)
            if v.kind == "param":
                return "self." + v.name
            if v.kind == "const":
                return f"CONSTANTS.{v.name.replace('.', '_')}"
            return _py_name(v.name)

        args = ["self"] if method else []
        args += [f"{_py_name(v.name)}: Tensor" for v in self.inputs]
        lines = [f"def {name}({', '.join(args)}) -> Tensor:"]
        for n in self.nodes:
            call = [
                ref(a)
                if not isinstance(a, (list, tuple))
                else "[" + ", ".join(ref(e) for e in a) + "]"
                for a in n.inputs
            ]
            call += [f"{k}={_short(p)}" for k, p in n.params.items() if k != "out"]
            outs = ", ".join(_py_name(v.name) if v is not None else "_" for v in n.outputs)
            target = n.name + ("_" if n.inplace else "") if n.kind == "op" else f"{n.name}.forward"
            lines.append(f"  {outs} = torch.{target}({', '.join(call)})")
        result = ", ".join(ref(v) for v in self.outputs)
        lines.append(f"  return {result if len(self.outputs) == 1 else '(' + result + ')'}")
        return "\n".join(lines) + "\n"


def _py_name(name: str) -> str:
    name = name.replace(".", "_")
    return f"_{name}" if name[0].isdigit() else name


def _short(p) -> str:
    """Return a compact text for an op argument (arrays by their shape)."""
    if isinstance(p, np.ndarray):
        return f"array{list(p.shape)}"
    if isinstance(p, dict):
        return "{" + ", ".join(f"{k!r}: {_short(v)}" for k, v in p.items()) + "}"
    if isinstance(p, (tuple, list)) and any(isinstance(e, (np.ndarray, dict)) for e in p):
        inner = ", ".join(_short(e) for e in p)
        return (
            f"({inner},)"
            if isinstance(p, tuple) and len(p) == 1
            else (f"({inner})" if isinstance(p, tuple) else f"[{inner}]")
        )
    return repr(p)


class Tracer:
    """An op observer building a ``Graph``; use ``trace_graph`` rather than this directly."""

    def __init__(
        self,
        params: dict | None = None,
        leaf_modules: tuple = (),
        fold: bool = True,
        module_names: dict | None = None,
    ):
        self.graph = Graph()
        self.module_names = module_names or {}  # id(module) -> dotted name
        self.scopes: list = [""]
        self.fold = fold
        self.values: dict = {}  # id(Tensor) -> (Tensor, Value, version)
        self.arrays: dict = {}  # id(Tensor._data) -> (Tensor, Value) for inputs and op results
        self.names: dict = {}
        self.counter = 0
        self.leaf_modules = leaf_modules
        self.suppress = 0  # > 0 inside a leaf module: its ops are not recorded
        self.leaf_stack: list = []
        self.param_names = {id(t): name for name, t in (params or {}).items()}

    # --- values
    def is_traced(self, t) -> bool:
        """True when ``t`` is an input of the trace or computed from one."""
        entry = self.values.get(id(t))
        return entry is not None and entry[1].kind in ("input", "node")

    def _fresh(self, base: str) -> str:
        n = self.names.get(base, 0)
        self.names[base] = n + 1
        return f"{base}.{n}" if n else base

    def _bind(self, t: Tensor, v: Value) -> Value:
        self.values[id(t)] = (t, v, t._vc[0])
        if v.kind in ("input", "node"):
            self.arrays[id(t._data)] = (t, v)
        return v

    def add_input(self, t: Tensor, name: str) -> Value:
        v = Value(self._fresh(name), "input", tuple(t.shape), t.dtype)
        self.graph.inputs.append(v)
        return self._bind(t, v)

    def value_of(self, t: Tensor) -> Value:
        """Return the Value standing for tensor ``t`` (an initializer or a constant if new)."""
        entry = self.values.get(id(t))
        if entry is not None:
            tensor, v, version = entry
            if t._vc[0] != version:
                raise TracingError(
                    f"the traced program read a tensor ({v!r}, shape {list(t.shape)}) that was "
                    "modified in place in a way the tracer did not see (through a view or "
                    "outside ember's ops); clone it before writing to it"
                )
            return v
        alias = self._alias(t)
        if alias is not None:
            return self._bind(t, alias)
        name = self.param_names.get(id(t))
        if name is not None:
            v = Value(name, "param", tuple(t.shape), t.dtype, data=t._data)
            self.graph.params.append(v)
        else:
            v = Value(self._fresh("constant"), "const", tuple(t.shape), t.dtype, t._data.copy())
            self.graph.consts.append(v)
        return self._bind(t, v)

    def _alias(self, t: Tensor):
        # a tensor made outside the op table that is the same array as a known one (detach(),
        # .data, a Tensor re-wrapping an input's array) stands for the same Value
        a = t._data
        key = (a.__array_interface__["data"][0], a.shape, a.strides, a.dtype)
        for tensor, v, version in self.values.values():
            b = tensor._data
            if (b.__array_interface__["data"][0], b.shape, b.strides, b.dtype) == key:
                if tensor._vc[0] == version and v.kind != "const":
                    return v
        return None

    def _arg(self, x):
        if isinstance(x, Tensor):
            return self.value_of(x)
        if isinstance(x, (list, tuple)) and any(isinstance(e, Tensor) for e in x):
            return type(x)(self._arg(e) for e in x)
        return x

    def _outputs(self, node: Node, result) -> None:
        results = result if isinstance(result, (tuple, list)) else (result,)
        for i, r in enumerate(results):
            if isinstance(r, Tensor):
                self.counter += 1
                v = Value(str(self.counter), "node", tuple(r.shape), r.dtype)
                v.node, v.index = node, i
                node.outputs.append(v)
                self._bind(r, v)
            else:
                node.outputs.append(None)

    # --- the observer protocol
    def enter(self, op, inputs, params, self_):
        if self.suppress:
            return None
        node = Node(
            "op", op, [self._arg(x) for x in inputs], dict(params), inplace=self_ is not None
        )
        node.scope = self.scopes[-1]
        if op.name in _INDEXING:
            node.links = self._links(params) or None
        return (node, self_)

    def _links(self, params) -> dict:
        """Find the index arrays of an indexing op that come from traced tensors: the data of
        an integer tensor itself, or the ``nonzero()`` of a bool mask."""
        links = {}
        for key, value in params.items():
            if not isinstance(value, tuple):
                continue
            for j, a in enumerate(value):
                if isinstance(a, np.ndarray) and id(a) in self.arrays:
                    links[(key, j)] = ("index", self.arrays[id(a)][1])
            for j in range(len(value)):
                if (key, j) in links or not isinstance(value[j], np.ndarray):
                    continue
                for t, v in self.arrays.values():
                    m = t._data
                    if m.dtype != np.bool_ or m.ndim == 0 or j + m.ndim > len(value):
                        continue
                    parts = value[j : j + m.ndim]
                    if all(isinstance(a, np.ndarray) and a.shape == (int(m.sum()),) for a in parts):
                        if all(np.array_equal(a, b) for a, b in zip(parts, np.nonzero(m))):
                            links[(key, j)] = ("mask", v, m.ndim)
                            break
        return links

    def exit(self, token, result):
        if token is None or result is None:
            return
        node, self_ = token
        out = self_ if self_ is not None else result
        linked = [link[1] for link in (node.links or {}).values()]
        if self.fold and all(_is_const(v) for v in _flatten(node.inputs) + linked):
            # nothing here depends on an input: the result is a constant (constant folding)
            for r in _flatten(out):
                if isinstance(r, Tensor):
                    v = Value(
                        self._fresh("constant"), "const", tuple(r.shape), r.dtype, r._data.copy()
                    )
                    self.graph.consts.append(v)
                    self._bind(r, v)
            return
        self.graph.nodes.append(node)
        self._outputs(node, out)

    # --- leaf modules (global module hooks)
    def pre_hook(self, module, args):
        name = self.module_names.get(id(module))
        self.scopes.append(self.scopes[-1] + "/" + name if name else self.scopes[-1])
        if isinstance(module, self.leaf_modules) and not self.suppress:
            node = Node("module", module, [self._arg(a) for a in _flatten(args)], {})
            node.scope = self.scopes[-1]
            self.leaf_stack.append((module, node))
            self.suppress += 1
        return None

    def post_hook(self, module, args, result):
        if self.leaf_stack and self.leaf_stack[-1][0] is module:
            _, node = self.leaf_stack.pop()
            self.suppress -= 1
            if result is not None:
                self.graph.nodes.append(node)
                self._outputs(node, _flatten(result))
        if len(self.scopes) > 1:
            self.scopes.pop()
        return None


_INDEXING = ("index", "index_put")


def _is_const(v) -> bool:
    return not isinstance(v, Value) or v.kind == "const"


def _flatten(x) -> list:
    if isinstance(x, (tuple, list)):
        return [e for item in x for e in _flatten(item)]
    return [x]


def trace_graph(
    fn,
    args: tuple,
    kwargs: dict | None = None,
    params: dict | None = None,
    input_names=None,
    leaf_modules: tuple = (),
    fold: bool = True,
):
    """Run ``fn(*args, **kwargs)`` recording a ``Graph``; return ``(graph, result)``.

    ``params`` maps names to the tensors that become initializers (a module's parameters and
    buffers); the tensors among ``args`` (nested in tuples and lists too) are the inputs."""
    from ember.nn.modules.module import (
        Module,
        register_module_forward_hook,
        register_module_forward_pre_hook,
    )

    module_names = {}
    root = fn if isinstance(fn, Module) else getattr(fn, "__self__", None)
    if isinstance(root, Module):
        for name, m in root.named_modules():
            if name:
                module_names[id(m)] = name
                # a script/traced child stands for the module its parent's forward calls
                original = m.__dict__.get("_original")
                if original is not None:
                    module_names[id(original)] = name
    tracer = Tracer(params, leaf_modules, fold, module_names)
    flat = [
        a for a in _flatten(list(args) + list((kwargs or {}).values())) if isinstance(a, Tensor)
    ]
    names = list(input_names or [])
    for i, t in enumerate(flat):
        if id(t) in tracer.values:
            continue
        tracer.add_input(t, names[i] if i < len(names) else f"input.{i + 1}")
    handles = []
    if leaf_modules or module_names:
        handles = [
            register_module_forward_pre_hook(tracer.pre_hook),
            register_module_forward_hook(tracer.post_hook, always_call=True),
        ]
    registry.add_observer(tracer)
    _TRACING.append(tracer)
    try:
        with _leak_guards() if len(_TRACING) == 1 else contextlib.nullcontext():
            result = fn(*args, **(kwargs or {}))
    finally:
        _TRACING.pop()
        registry.remove_observer(tracer)
        for h in handles:
            h.remove()
    outs = [r for r in _flatten(result) if isinstance(r, Tensor)]
    tracer.graph.outputs = [tracer.value_of(t) for t in outs]
    return tracer.graph, result

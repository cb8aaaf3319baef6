"""Traced modules as torch shows them: one graph per module, ``prim::CallMethod`` per call.

The tracer records every op of a module trace into one graph, noting which submodule call
each node ran in (a ``Call`` tree). ``build_method_graphs`` then turns that record into the
caller's graph, where each submodule call is ``prim::CallMethod[name="forward"]`` on a
``prim::GetAttr`` of the child, and one graph per called submodule (from its first call).
Values used inside a call but made outside it become the callee's inputs, in order of first
use; parameters are read by ``prim::GetAttr`` from the callee's ``self``.

Value numbers follow torch's: the root graph keeps the numbers the trace gave its nodes
(the trace starts counting after a reserve of ``3 + #tensors`` per module), then the fix-up
of the calls takes two numbers per call, one per ``prim::GetAttr`` it makes and one per
output of the call nodes; a callee's graph numbers its own values from ``self`` (0), in
the order the copy of a block makes them.
"""

from __future__ import annotations

from ember.jit import ir as IR
from ember.jit.passes.inline import set_callee

__all__ = ["Call", "reserve_for", "build_method_graphs", "class_types"]

_TYPE_COUNT: dict = {}  # qualified class name -> how many types of that name were made


def _mangled(name: str) -> str:
    """Torch's unique type names: the second type made for a class is ``___torch_mangle_N``."""
    n = _TYPE_COUNT.get(name)
    if n is None:
        _TYPE_COUNT[name] = 0
        return name
    _TYPE_COUNT["$mangle"] = _TYPE_COUNT.get("$mangle", -1) + 1
    head, _, last = name.rpartition(".")
    return f"{head}.___torch_mangle_{_TYPE_COUNT['$mangle']}.{last}"


def class_types(root, base_type) -> dict:
    """Return ``{module path: ClassType}`` for ``root`` and its submodules, children made
    before their parent (as torch makes a traced module's types)."""
    out = {}

    def visit(m, path):
        for name, child in m._modules.items():
            if child is not None:
                visit(child, (*path, name))
        out[path] = IR.ClassType(_mangled(base_type(m).qualified_name()))

    visit(root, ())
    return out


def reserve_for(root) -> int:
    """The numbers torch's tracer uses before the first input: 3 + tensors per module."""
    total = 0
    for m in root.modules():
        total += 3 + sum(1 for t in m._parameters.values() if t is not None)
        total += sum(1 for t in m._buffers.values() if t is not None)
    return total


class Call:
    """One module call seen by the tracer: its items (nodes and child calls) in order."""

    def __init__(self, module, path: tuple, parent=None):
        self.module, self.path, self.parent = module, path, parent
        self.items: list = []  # ("node", Node) | ("call", Call)
        self.result = None  # the trace values the call returned
        self.tuple_result = False
        self.lifted: list = []
        self.passthrough = False  # returns no value made inside it
        self.attrs: dict = {}  # key -> (name, kind, payload) made for this call's block

    def preorder(self):
        for kind, x in self.items:
            if kind == "call":
                yield x
                yield from x.preorder()


def _scripted(module) -> bool:
    """A script or traced module the user put in the model: called, not retraced."""
    from ember.jit._script import ScriptModule

    return isinstance(module, ScriptModule)


def _owned(call, path: tuple) -> tuple | None:
    """The attribute path of ``path`` (a root-relative tensor path) from ``call``'s module."""
    n = len(call.path)
    if path[:n] == call.path:
        return path[n:]
    return None


def _attr_name(part: str) -> str:
    return ("_" + part) if part[0].isdigit() else part


class _NotTree(Exception):
    """A module called from outside its parent's forward: no per-module graphs."""


class _Builder:
    def __init__(self, g: IR.Graph, root_call: Call, types: dict, attr_of):
        self.g, self.root, self.types, self.attr_of = g, root_call, types, attr_of
        self.defined: dict = {}  # trace value -> the call whose block made it

    # --- which values a call needs from outside (in order of first use)
    def _scan(self, call: Call) -> None:
        seen, order = set(), []
        for kind, x in call.items:
            if kind == "node":
                for o in x.outputs():
                    self.defined[o] = call
        for kind, x in call.items:
            if kind == "node":
                uses = [v for v in x.inputs() if self.attr_of(v) is None]
            else:
                self._scan(x)
                uses = x.lifted
                x.passthrough = not _scripted(x.module) and (
                    not x.result or not all(self._inside(r, x) for r in x.result)
                )
            for v in uses:
                if v not in seen and not self._inside(v, call):
                    seen.add(v)
                    order.append(v)
        call.lifted = order

    def _inside(self, v, call) -> bool:
        c = self.defined.get(v)
        while c is not None:
            if c is call:
                return True
            c = c.parent
        return False

    # --- the GetAttr nodes each block makes, in torch's order (a walk of the nodes: a call's
    # block first, then the GetAttr of its module in the caller's block)
    def _walk(self, call: Call, names: IR.Graph) -> int:
        made = 0
        for kind, x in call.items:
            if kind == "node":
                for v in x.inputs():
                    path = self.attr_of(v)
                    if path is None:
                        continue
                    rel = _owned(call, path)
                    if rel is None:
                        raise _NotTree(path)  # another module's parameter: kept inlined
                    if ("t",) + rel in call.attrs:
                        continue
                    for i in range(len(rel)):
                        key = ("t",) + rel[: i + 1]
                        if key not in call.attrs:
                            call.attrs[key] = _name_in(names, rel[i])
                            made += 1
            else:
                made += self._walk(x, names)
                key = ("m", x.path[-1])
                if key not in call.attrs:
                    call.attrs[key] = _name_in(names, x.path[-1])
                    made += 1
        return made

    def build(self, outputs) -> tuple:
        root = self.root
        self._scan(root)
        calls = list(root.preorder())
        # names of the callees' ``self``: each call's block names one ``self`` in the root's
        # graph, so the earlier ones become self.3, self.5, ... (torch's renaming)
        selfs = IR.Graph()
        first = _fresh(selfs)
        first.setDebugName("self")
        for c in calls:
            b = _fresh(selfs)
            b.setDebugName("self")
            c.self_value = b
        base = self.g._unique
        made = self._walk(root, self.g)
        # a call returning nothing made inside it returns a None constant of its block
        counter = base + 2 * len(calls) + made + sum(1 for c in calls if c.passthrough)
        graphs: dict = {}
        top = self._block_graph(root, graphs, counter)
        return top, graphs, outputs

    def _block_graph(self, call: Call, graphs: dict, counter: int | None):
        """The graph of ``call``'s block; ``counter`` numbers the root graph's call outputs."""
        is_root = call is self.root
        g = IR.Graph()
        env: dict = {}
        if is_root:
            self_v = g.addInput("self.1", self.types[()])
            for v in self.g.inputs()[1:]:
                nv = g.addInput(v.debugName() if v.hasDebugName() else None, v.type())
                nv._unique = v._unique
                env[v] = nv
        else:
            self_v = g.addInput(None, self.types[call.path])
            self_v._name = None
            self_v.setDebugName(call.self_value.debugName())
        outer_names = self._outer_names(call)

        def new_input(v):
            nv = g.addInput(None, v.type())
            name = outer_names.get(v)
            if name:
                nv.setDebugName(name)
            env[v] = nv
            return nv

        nested = not is_root and call.parent is not self.root
        if nested:
            for v in call.lifted:
                new_input(v)
        # the GetAttr nodes, each put first in the block (the last made prints first)
        attr_vals: dict = {}

        def make(key):
            if key in attr_vals:
                return attr_vals[key]
            name = call.attrs[key].debugName()
            if key[0] == "m":
                base, part = self_v, key[1]
                t = self.types[(*call.path, part)]
            else:
                rel = key[1:]
                base = self_v if len(rel) == 1 else make(("t",) + rel[:-1])
                part = rel[-1]
                t = self.types.get((*call.path, *rel)) or IR.TensorType()
            n = g.insertNode(g.create("prim::GetAttr", [base]))
            n.s_("name", part)
            n.output().setType(t)
            n.output().setDebugName(name)
            attr_vals[key] = n.output()
            return n.output()

        for key in reversed(list(call.attrs)):
            make(key)

        def get(v):
            nv = env.get(v)
            if nv is not None:
                return nv
            path = self.attr_of(v)
            if path is not None:
                rel = _owned(call, path)
                if rel is not None and ("t",) + rel in attr_vals:
                    return attr_vals[("t",) + rel]
            return new_input(v)

        call_nodes = []
        for kind, x in call.items:
            if kind == "node":
                c = IR.Node(g, x.kind())
                c._attrs = dict(x._attrs)
                c._source, c._scope = x._source, x._scope
                for k, val in x.__dict__.items():
                    if k not in IR.graph._NODE_FIELDS:
                        setattr(c, k, val)
                for o in x.outputs():
                    no = c.addOutput(o.type())
                    if is_root:
                        no._unique = o._unique
                    if o.hasDebugName():
                        no.setDebugName(o.debugName())
                    env[o] = no
                for v in x.inputs():
                    c.addInput(get(v))
                g.insertNode(c)
                continue
            # a child call: its outputs stand in until the CallMethod replaces them
            results = [] if x.passthrough else (x.result or [])
            if not is_root:
                for _ in results:
                    g._new_unique()
            if x.path[:-1] != call.path:
                raise _NotTree(x.path)
            mod_v = attr_vals[("m", x.path[-1])]
            args = [get(v) for v in x.lifted]
            n = g.insertNode(g.create("prim::CallMethod", [mod_v, *args], 1))
            g._unique -= 1  # numbered below, after the block
            n.s_("name", "forward")
            # a module's first call is its ``forward``, the next ones ``forward1``, ...
            k = 0
            while (x.path, k) in graphs:
                k += 1
            if k:
                n.s_("name", f"forward{k}")
            graphs[(x.path, k)] = None
            graphs[(x.path, k)] = self._block_graph(x, graphs, None)
            if not _scripted(x.module):
                set_callee(n, graphs[(x.path, k)])  # a script child runs its own forward
            if x.passthrough:
                # a call returning what it was given makes no value (torch's NoneType call);
                # later reads keep the value from before the call
                n.output().setType(IR.NoneType())
                call_nodes.append((n, None))
            elif x.tuple_result:
                n.output().setType(IR.TupleType([IR.TensorType() for _ in results]))
                u = g.insertNode(g.create("prim::TupleUnpack", [n.output()], len(results)))
                g._unique -= len(results)
                for o, r in zip(u.outputs(), results):
                    o.setType(r.type())
                for o, r in zip(u.outputs(), results):
                    env[r] = o
                call_nodes.append((n, u))
            else:
                for r in results:
                    env[r] = n.output()
                call_nodes.append((n, None))
        # number the call outputs after everything else, as torch replaces the traced blocks
        if is_root:
            for _n, u in call_nodes:
                if u is not None:
                    counter += 3
                    for o in u.outputs():
                        o._unique, counter = counter, counter + 1
            for n, _ in call_nodes:
                n.output()._unique, counter = counter, counter + 1
            g._unique = counter
        else:
            for n, u in call_nodes:
                n.output()._unique = g._new_unique()
                if u is not None:
                    for o in u.outputs():
                        o._unique = g._new_unique()
        # outputs
        if is_root:
            for v in self._root_outputs:
                g.registerOutput(_map_out(g, v, env, get))
        else:
            res = [] if call.passthrough else [get(v) for v in (call.result or [])]
            if not res:
                g.registerOutput(g.insertConstant(None))
            elif call.tuple_result:
                n = g.insertNode(g.create("prim::TupleConstruct", res))
                n.output().setType(IR.TupleType([r.type() for r in res]))
                g.registerOutput(n.output())
            else:
                g.registerOutput(res[0])
        return g

    def _outer_names(self, call) -> dict:
        """The names the values a call lifts have in its caller's block (a value a sibling
        call made is that call's unnamed output there)."""
        names = {}
        parent = call.parent
        for v in call.lifted:
            names[v] = self._name_in_block(v, parent)
        return names

    def _name_in_block(self, v, call):
        c = self.defined.get(v)
        if c is call or (c is None and call is self.root):
            return v.debugName() if v.hasDebugName() else None
        if c is None or not self._inside(v, call):
            # the caller lifted it itself: its name there is the one it had outside
            return self._name_in_block(v, call.parent) if call.parent is not None else None
        return None  # made inside a child call: that call's output, unnamed


def _map_out(g, v, env, get):
    if isinstance(v, list):
        elems = [_map_out(g, e, env, get) for e in v]
        n = g.insertNode(g.create("prim::TupleConstruct", elems))
        n.output().setType(IR.TupleType([e.type() for e in elems]))
        return n.output()
    return get(v)


def _fresh(g: IR.Graph) -> IR.Value:
    return g.create("prim::Param", [], 1).output()


def _name_in(g: IR.Graph, part: str) -> IR.Value:
    v = _fresh(g)
    v.setDebugName(_attr_name(part))
    return v


def build_method_graphs(trace_graph, root_call, types, attr_of, outputs):
    """Return ``(graph, {path: graph})``: the root's graph with a ``prim::CallMethod`` per
    submodule call, and each called submodule's graph."""
    b = _Builder(trace_graph, root_call, types, attr_of)
    b._root_outputs = outputs
    top, graphs, _ = b.build(outputs)
    return top, {path: g for (path, k), g in graphs.items() if k == 0}

"""``torch.fx.Graph``: a doubly linked list of Nodes, and its Python code generator."""

from __future__ import annotations

import builtins
import functools
import inspect
import keyword
import math
import re
import warnings
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from ember.fx.node import (
    _SPELLED_IDS,
    Argument,
    Node,
    Target,
    _get_qualified_name,
    _public_names,
    _type_repr,
    map_arg,
)

__all__ = ["Graph", "PythonCode"]

_NOT_IDENTIFIER = re.compile(r"[^a-zA-Z0-9_]+")  # runs of characters a name cannot hold
_NUMBERED = re.compile(r"(.*)_(\d+)")  # "add_3": base "add", number 3
_snake_case_sub = re.compile(r"(?<=[a-z])([A-Z])")


def _snake_case(s: str) -> str:
    return _snake_case_sub.sub(r"_\1", s).lower()


def _is_magic(x: str) -> bool:
    return x[:2] == "__" == x[-2:]


@functools.cache
def _custom_builtins() -> dict[str, Any]:
    import ember

    return {
        "inf": math.inf,
        "nan": math.nan,
        "NoneType": type(None),
        "torch": ember,
        "ember": ember,
        "device": ember.device,
    }


reflectable_magic_methods = {
    "add": "{} + {}",
    "sub": "{} - {}",
    "mul": "{} * {}",
    "floordiv": "{} // {}",
    "truediv": "{} / {}",
    "div": "{} / {}",
    "mod": "{} % {}",
    "pow": "{} ** {}",
    "lshift": "{} << {}",
    "rshift": "{} >> {}",
    "and_": "{} & {}",
    "or_": "{} | {}",
    "xor": "{} ^ {}",
    "getitem": "{}[{}]",
    "matmul": "{} @ {}",
}

magic_methods = {
    "eq": "{} == {}",
    "ne": "{} != {}",
    "lt": "{} < {}",
    "gt": "{} > {}",
    "le": "{} <= {}",
    "ge": "{} >= {}",
    "pos": "+{}",
    "neg": "-{}",
    "invert": "~{}",
    **reflectable_magic_methods,
}


class _Namespace:
    """Hands out unique Python identifiers (``add``, ``add_1``, ...), as torch's."""

    def __init__(self) -> None:
        self._obj_to_name: dict[int, str] = {}
        self._used_names: set[str] = set()
        self._base_count: dict[str, int] = defaultdict(int)

    def create_name(self, candidate: str, obj: Any | None) -> str:
        if obj is not None:
            known = self._obj_to_name.get(id(obj))
            if known is not None:
                return known
        ident = _NOT_IDENTIFIER.sub("_", candidate) or "_unnamed"
        if ident[0].isdigit():
            ident = "_" + ident
        numbered = _NUMBERED.fullmatch(ident)
        if numbered is None:
            base, count = ident, 0
            name = ident
        else:  # "x_007" asks for "x_7"
            base, count = numbered.group(1), int(numbered.group(2))
            name = f"{base}_{count}"
        # a clash counts up from the highest number this base has handed out
        count = count or self._base_count[base]
        while name in self._used_names or self._is_illegal_name(name, obj):
            count += 1
            name = f"{base}_{count}"
        self._used_names.add(name)
        self._base_count[base] = count
        if obj is not None:
            self._obj_to_name[id(obj)] = name
        return name

    def associate_name_with_obj(self, name: str, obj: Any) -> None:
        self._obj_to_name[id(obj)] = name

    def _is_illegal_name(self, name: str, obj: Any) -> bool:
        if name in keyword.kwlist:
            return True
        if name in builtins.__dict__:
            return obj is not builtins.__dict__[name]
        custom = _custom_builtins()
        if name in custom:
            return obj is not custom[name]
        return False

    def _rename_object(self, obj: Any, name: str) -> None:
        self._obj_to_name[id(obj)] = name


class _NodeList:
    def __init__(self, graph: Graph, direction: str = "_next") -> None:
        self._graph = graph
        self._direction = direction

    def __len__(self) -> int:
        return self._graph._len

    def __iter__(self) -> Iterator[Node]:
        root = self._graph._root
        cur = getattr(root, self._direction)
        while cur is not root:
            nxt = getattr(cur, self._direction)
            if not cur._erased:
                yield cur
            cur = nxt

    def __reversed__(self) -> Iterator[Node]:
        return iter(_NodeList(self._graph, "_prev" if self._direction == "_next" else "_next"))

    def __repr__(self) -> str:
        return repr(list(self))


@dataclass
class PythonCode:
    """Generated source (``src``) and the globals it needs."""

    src: str
    globals: dict[str, Any]
    _lineno_map: dict[int, int | None] | None = field(default=None)


def _attr_path(owner: str, dotted: str) -> str:
    """Source reading attribute ``dotted`` of ``owner``: ``self.fc.weight``; atoms that are
    not identifiers (``Sequential``'s "0") through getattr."""

    def step(code: str, atom: str) -> str:
        return f"{code}.{atom}" if atom.isidentifier() else f'getattr({code}, "{atom}")'

    return functools.reduce(step, dotted.split("."), owner)


class Graph:
    """The intermediate representation of FX: an ordered list of :class:`Node`.

    Build one with :func:`symbolic_trace` or by hand (``placeholder``, ``call_function``,
    ``call_module``, ``call_method``, ``get_attr``, ``output``)."""

    def __init__(self, owning_module=None, tracer_cls=None, tracer_extras=None) -> None:
        self._root = Node(self, "", "root", "", (), {})
        self._used_names: dict[str, int] = {}
        self._insert = self._root.prepend
        self._len = 0
        self._graph_namespace = _Namespace()
        self._owning_module = owning_module
        self._tracer_cls = tracer_cls
        self._tracer_extras = tracer_extras
        self._co_fields: dict[str, Any] = {}

    @property
    def owning_module(self):
        """The GraphModule this graph belongs to, if any."""
        return self._owning_module

    @owning_module.setter
    def owning_module(self, mod) -> None:
        self._owning_module = mod

    @property
    def nodes(self) -> _NodeList:
        """The graph's nodes in order (supports ``len`` and ``reversed``)."""
        return _NodeList(self)

    def find_nodes(self, *, op: str, target: Target | None = None, sort: bool = True) -> list:
        """Return the nodes with opcode ``op`` (and ``target`` when given)."""
        return [n for n in self.nodes if n.op == op and (target is None or n.target == target)]

    # ------------------------------------------------------------------ building
    def create_node(
        self,
        op: str,
        target: Target,
        args: tuple | None = None,
        kwargs: dict | None = None,
        name: str | None = None,
        type_expr: Any | None = None,
    ) -> Node:
        """Create a Node and insert it at the current insert point."""
        if op not in ("call_function", "call_method", "get_attr", "call_module", "placeholder",
                      "output", "root"):  # fmt: skip
            raise AssertionError(f"Unsupported op: {op}")
        args = () if args is None else args
        kwargs = {} if kwargs is None else kwargs
        if not isinstance(args, tuple):
            raise AssertionError("args must be a tuple")
        if not isinstance(kwargs, dict):
            raise AssertionError("kwargs must be a dict")
        node = Node(self, self._unique_name(name, target), op, target, args, kwargs, type_expr)
        self._graph_namespace.associate_name_with_obj(node.name, node)
        self._insert(node)
        self._len += 1
        return node

    def _unique_name(self, wanted: str | None, target: Target) -> str:
        # the name asked for, or one made from the target, made unique in this graph
        hint = self._target_to_str(target) if wanted is None else wanted
        return self._graph_namespace.create_name(hint, None)

    def placeholder(
        self, name: str, type_expr: Any | None = None, default_value: Any = inspect.Signature.empty
    ) -> Node:
        """Insert an input of the graph named ``name``."""
        # a default value travels as the node's one argument
        has_default = default_value is not inspect.Signature.empty
        return self.create_node(
            "placeholder", name, (default_value,) if has_default else (), type_expr=type_expr
        )

    def get_attr(self, qualified_name: str, type_expr: Any | None = None) -> Node:
        """Insert a read of the module attribute ``qualified_name`` (``"fc.weight"``)."""
        if self.owning_module is not None and not _resolves(self.owning_module, qualified_name):
            warnings.warn(
                "Attempted to insert a get_attr Node with no underlying reference in "
                "the owning GraphModule! Call GraphModule.add_submodule to add the "
                "necessary submodule, GraphModule.add_parameter to add the necessary "
                "Parameter, or nn.Module.register_buffer to add the necessary buffer",
                stacklevel=2,
            )
        return self.create_node("get_attr", qualified_name, (), {}, None, type_expr)

    def call_module(
        self,
        module_name: str,
        args: tuple | None = None,
        kwargs: dict | None = None,
        type_expr: Any | None = None,
    ) -> Node:
        """Insert a call of the submodule ``module_name``."""
        mod = self.owning_module
        if mod is not None and not _has_submodule(mod, module_name):
            warnings.warn(
                "Attempted to insert a call_module Node with no underlying reference in the "
                "owning GraphModule! Call GraphModule.add_submodule to add the necessary "
                "submodule",
                stacklevel=2,
            )
        return self.create_node("call_module", module_name, args, kwargs, type_expr=type_expr)

    def call_method(
        self,
        method_name: str,
        args: tuple | None = None,
        kwargs: dict | None = None,
        type_expr: Any | None = None,
    ) -> Node:
        """Insert a call of the method ``method_name`` on ``args[0]``."""
        return self.create_node("call_method", method_name, args, kwargs, type_expr=type_expr)

    def call_function(
        self,
        the_function: Callable,
        args: tuple | None = None,
        kwargs: dict | None = None,
        type_expr: Any | None = None,
        name: str | None = None,
    ) -> Node:
        """Insert a call of the free function ``the_function``."""
        return self.create_node("call_function", the_function, args, kwargs, name, type_expr)

    def output(self, result: Argument, type_expr: Any | None = None) -> Node:
        """Insert the graph's ``output`` node returning ``result``."""
        return self.create_node("output", "output", (result,), type_expr=type_expr)

    def node_copy(self, node: Node, arg_transform: Callable[[Node], Argument] = lambda x: x):
        """Copy ``node`` (maybe of another graph) into this graph, mapping its inputs."""
        args = map_arg(node.args, arg_transform)
        kwargs = map_arg(node.kwargs, arg_transform)
        result = self.create_node(node.op, node.target, args, kwargs, node.name, node.type)
        result.meta = dict(node.meta)
        return result

    def graph_copy(self, g: Graph, val_map: dict, return_output_node: bool = False):
        """Copy every node of ``g`` but its output into this graph; return the output value."""
        copied = val_map.__getitem__
        for node in g.nodes:
            if node.op == "output" and node not in val_map:
                value = map_arg(node.args[0], copied)
                return (value, node) if return_output_node else value
            if node not in val_map:
                val_map[node] = self.node_copy(node, copied)
        return None

    def __deepcopy__(self, memo=None) -> Graph:
        memo = memo if memo else {}
        g = Graph(tracer_cls=self._tracer_cls)
        output_vals = g.graph_copy(self, val_map=memo, return_output_node=True)
        if output_vals is not None:
            out_val, old_out = output_vals
            new_out = g.output(out_val, type_expr=old_out.type)
            new_out.meta = dict(old_out.meta)
        return g

    # ------------------------------------------------------------------ insert points
    @contextmanager
    def inserting_before(self, n: Node | None = None):
        """Within the block, new nodes go before ``n`` (default: at the graph's start)."""
        if n is None:
            with self.inserting_after(self._root):
                yield
            return
        if n.graph is not self:
            raise AssertionError("Node to insert before is not in graph.")
        orig, self._insert = self._insert, n.prepend
        try:
            yield
        finally:
            self._insert = orig

    @contextmanager
    def inserting_after(self, n: Node | None = None):
        """Within the block, new nodes go after ``n`` (default: at the graph's end)."""
        if n is None:
            with self.inserting_before(self._root):
                yield
            return
        if n.graph is not self:
            raise AssertionError("Node to insert after is not in graph.")
        orig, self._insert = self._insert, n.append
        try:
            yield
        finally:
            self._insert = orig

    # ------------------------------------------------------------------ editing
    def erase_node(self, to_erase: Node) -> None:
        """Remove ``to_erase``; it must have no users left."""
        if len(to_erase.users) > 0:
            raise RuntimeError(
                f"Tried to erase Node {to_erase} but it still had {len(to_erase.users)} "
                f"users in the graph: {to_erase.users}!"
            )
        if to_erase.graph is not self:
            raise RuntimeError(f"Attempting to remove {to_erase} from wrong graph!")
        if to_erase._erased:
            warnings.warn(f"erase_node({to_erase}) on an already erased node", stacklevel=2)
            return
        to_erase._remove_from_list()
        to_erase._erased = True
        self._len -= 1
        to_erase._update_args_kwargs(
            map_arg(to_erase._args, lambda n: None), map_arg(to_erase._kwargs, lambda n: None)
        )

    def eliminate_dead_code(self, is_impure_node: Callable[[Node], bool] | None = None) -> bool:
        """Remove nodes without users that have no side effects; return whether any was."""
        self.lint()
        changed = False
        for node in reversed(self.nodes):
            impure = is_impure_node(node) if is_impure_node is not None else node.is_impure()
            if not impure and len(node.users) == 0:
                self.erase_node(node)
                changed = True
        return changed

    def lint(self) -> None:
        """Check the graph is well formed (inputs defined before use, unique names, targets)."""
        seen_values: set[Node] = set()
        seen_names: set[str] = set()
        for node in self.nodes:
            if node.op not in ("placeholder", "call_method", "call_module", "call_function",
                               "get_attr", "output"):  # fmt: skip
                raise RuntimeError(f"Node {node} had unknown opcode {node.op}!")
            if node.graph is not self:
                raise RuntimeError(f"Node '{node}' does not belong to this Graph!")
            for arg in node._input_nodes:
                context = f" of Node '{node}' "
                if arg.graph is not self:
                    raise RuntimeError(
                        f"Argument '{arg}'{context}does not belong to this Graph, but was used "
                        "as an argument! If you are copying nodes from another graph, make sure "
                        f"to use ``arg_transform`` on node_copy() to remap values\n{self}"
                    )
                if arg not in seen_values:
                    raise RuntimeError(
                        f"Argument '{arg}'{context}was used before it has been defined! Please "
                        f"check that Nodes in the graph are topologically ordered\n{self}"
                    )
            seen_values.add(node)
            if node.name in seen_names:
                raise RuntimeError(f"Node redefined name {node.name}!")
            seen_names.add(node.name)
        mod = self.owning_module
        if mod is None:
            return
        for node in self.nodes:
            if node.op not in ("get_attr", "call_module"):
                continue
            obj, seen = mod, []
            for atom in node.target.split("."):
                if not hasattr(obj, atom):
                    qual = ".".join(seen) if seen else "root"
                    raise RuntimeError(
                        f"Node {node} target {node.target} references nonexistent attribute "
                        f"{atom} of {qual}"
                    )
                obj = getattr(obj, atom)
                seen.append(atom)
            from ember.nn import Module

            if node.op == "call_module" and not isinstance(obj, Module):
                raise RuntimeError(
                    f"Node {node} target {node.target} {atom} of {'.'.join(seen[:-1]) or 'root'}"
                    " does not reference an nn.Module"
                )

    def _target_to_str(self, target: Target) -> str:
        if callable(target):
            spelled = _public_names().get(id(target))
            if spelled is not None and id(target) in _SPELLED_IDS:
                op = spelled[0].rpartition(".")[2]  # torch names the node by its binding
            else:
                op = target.__name__
        else:
            op = target
            if _is_magic(op):
                op = op[2:-2]
        return _snake_case(op)

    # ------------------------------------------------------------------ printing
    def __str__(self) -> str:
        placeholder_names: list[str] = []
        maybe_return_typename = [""]
        node_strs = [n.format_node(placeholder_names, maybe_return_typename) for n in self.nodes]
        s = f"graph({', '.join(placeholder_names)}){maybe_return_typename[0]}:"
        for node_str in node_strs:
            if node_str:
                s += "\n    " + node_str
        return s

    def print_tabular(self) -> None:
        """Print the nodes as a table: opcode, name, target, args, kwargs."""
        rows = [[n.op, n.name, n.target, n.args, n.kwargs] for n in self.nodes]
        print(_tabulate(rows, ["opcode", "name", "target", "args", "kwargs"]))

    # ------------------------------------------------------------------ code generation
    def python_code(self, root_module: str, *, verbose: bool = False) -> PythonCode:
        """Return the Python source of ``forward`` for this graph and its globals."""
        return _gen_python_code(self, root_module, verbose=verbose)

    def process_inputs(self, *args: Any) -> Any:
        """Return the graph's inputs for ``args`` (no pytree flattening in ember)."""
        return args

    def process_outputs(self, out: Any) -> Any:
        """Return the caller's outputs for the graph's ``out``."""
        return out


def last_readers(nodes) -> dict[Node, list[Node]]:
    """node -> the inputs it is the last node in ``nodes`` to read (values dead after it)."""
    seen: set[Node] = set()
    dies_at: dict[Node, list[Node]] = {}
    for node in reversed(list(nodes)):
        fresh = [n for n in node._input_nodes if n not in seen]
        if fresh:
            seen.update(fresh)
            dies_at[node] = fresh
    return dies_at


def _resolves(mod, dotted: str) -> bool:
    """Whether every atom of ``dotted`` is an attribute of the one before, from ``mod``."""
    obj = mod
    for atom in dotted.split("."):
        if not hasattr(obj, atom):
            return False
        obj = getattr(obj, atom)
    return True


def _has_submodule(mod, target: str) -> bool:
    try:
        mod.get_submodule(target)
    except AttributeError:
        return False
    return True


def _tabulate(rows: list[list], headers: list[str]) -> str:
    """The ``tabulate`` package's default ("simple") table format."""
    cells = [[str(c) for c in row] for row in rows]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    lines.extend("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in cells)
    return "\n".join(lines)


def _gen_python_code(graph: Graph, root_module: str, verbose: bool = False) -> PythonCode:
    from ember._core.tensor import Tensor

    namespace = _Namespace()
    for n in graph.nodes:  # node names are reserved first (torch's graph namespace)
        namespace.create_name(n.name, n)
    free_vars: list[str] = []
    body: list[str] = []
    globals_: dict[str, Any] = {}
    wrapped_fns: dict[str, None] = {}
    return_annotation = [""]

    def add_global(name_hint: str, obj: Any) -> str:
        # functions under torch's/ember's names are reached through the bound "torch"
        if name_hint.startswith(("torch.", "ember.")) and not isinstance(obj, type):
            return name_hint
        bound = namespace.create_name(name_hint, obj)
        held = globals_.setdefault(bound, obj)
        if held is not obj:
            raise AssertionError(f"Global name {bound} already assigned to different object")
        return bound

    for name, obj in _custom_builtins().items():
        namespace._used_names.add(name)
        globals_[name] = obj

    def type_repr(o: Any) -> str:
        if o == ():
            return "()"
        return add_global(_type_repr(o), o)

    def get_repr(arg: Any) -> str:
        if isinstance(arg, Node):
            return repr(arg)
        if isinstance(arg, tuple) and hasattr(arg, "_fields"):
            qualified = _get_qualified_name(type(arg))
            return f"{add_global(qualified, type(arg))}{repr(tuple(arg))}"
        if isinstance(arg, Tensor):
            dtype = str(arg.dtype).split(".")[-1]
            return f"torch.Tensor(size={list(arg.size())}, dtype={dtype})"
        if isinstance(arg, tuple):
            if len(arg) == 1:
                return f"({get_repr(arg[0])},)"
            return "(" + ", ".join(get_repr(a) for a in arg) + ")"
        if isinstance(arg, list):
            return "[" + ", ".join(get_repr(a) for a in arg) + "]"
        if isinstance(arg, slice):
            return f"slice({get_repr(arg.start)}, {get_repr(arg.stop)}, {get_repr(arg.step)})"
        return repr(arg)

    def format_args(args: tuple, kwargs: dict) -> str:
        res = [get_repr(a) for a in args]
        res.extend(f"{k} = {get_repr(v)}" for k, v in kwargs.items())
        return ", ".join(res)

    nodes = list(graph.nodes)
    user_to_last_uses = last_readers(nodes)

    def delete_unused_values(user: Node) -> None:
        if user.op == "placeholder":
            return
        if user.op == "output":
            body.append("\n")
            return
        to_delete = list(user_to_last_uses.get(user, []))
        if len(user.users) == 0:
            to_delete.append(user)
        if to_delete:
            body.append(";  " + " = ".join([repr(n) for n in to_delete] + ["None"]) + "\n")
        else:
            body.append("\n")

    def emit_node(node: Node) -> None:
        ann = "" if node.type is None else f" : {type_repr(node.type)}"
        if node.op == "placeholder":
            default = "" if not node.args else f" = {get_repr(node.args[0])}"
            free_vars.append(f"{node.target}{ann}{default}")
            raw_name = node.target.replace("*", "")
            if raw_name != repr(node):
                body.append(f"{repr(node)} = {raw_name}\n")
            return
        if node.op == "call_method":
            body.append(
                f"{repr(node)}{ann} = {_attr_path(get_repr(node.args[0]), node.target)}"
                f"({format_args(node.args[1:], node.kwargs)})"
            )
            return
        if node.op == "call_function":
            target = node.target
            if (
                getattr(target, "__module__", "") == "_operator"
                and target.__name__ in magic_methods
            ):
                body.append(
                    f"{repr(node)}{ann} = "
                    + magic_methods[target.__name__].format(*(get_repr(a) for a in node.args))
                )
                return
            global_name = add_global(_get_qualified_name(target), target)
            if (
                global_name == "getattr"
                and len(node.args) == 2
                and isinstance(node.args[1], str)
                and node.args[1].isidentifier()
            ):
                body.append(
                    f"{repr(node)}{ann} = {_attr_path(get_repr(node.args[0]), node.args[1])}"
                )
                return
            body.append(f"{repr(node)}{ann} = {global_name}({format_args(node.args, node.kwargs)})")
            if node.meta.get("is_wrapped", False):
                wrapped_fns.setdefault(global_name)
            return
        if node.op == "call_module":
            body.append(
                f"{repr(node)}{ann} = {_attr_path(root_module, node.target)}"
                f"({format_args(node.args, node.kwargs)})"
            )
            return
        if node.op == "get_attr":
            body.append(f"{repr(node)}{ann} = {_attr_path(root_module, node.target)}")
            return
        if node.op == "output":
            if node.type is not None:
                return_annotation[0] = " -> " + type_repr(node.type)
            body.append(f"return {get_repr(node.args[0])}")
            return
        raise NotImplementedError(f"node: {node.op} {node.target}")

    summarised = False
    for node in nodes:
        if verbose and not summarised and node.op not in ("placeholder", "output"):
            body.append("\n# No stacktrace found for following nodes\n")
            summarised = True
        emit_node(node)
        delete_unused_values(node)

    if not body:
        body.append("pass\n")
    if wrapped_fns:
        from ember.fx._symbolic_trace import wrap

        wrap_name = add_global(_get_qualified_name(wrap), wrap)
        wrap_stmts = "\n".join(f'{wrap_name}("{name}")' for name in wrapped_fns)
    else:
        wrap_stmts = ""

    params = free_vars if free_vars[:1] == ["self"] else ["self", *free_vars]
    prologue = f"def forward({', '.join(params)}){return_annotation[0]}:"
    code = "    " + "".join(body).lstrip("\n").replace("\n", "\n    ")  # every line indented
    src = f"""
{wrap_stmts}

{prologue}
{code}"""
    return PythonCode(src, globals_)

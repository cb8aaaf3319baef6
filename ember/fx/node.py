"""``torch.fx.node``: the Node of an FX graph, ``map_arg`` and ``map_aggregate``."""

from __future__ import annotations

import builtins
import types
from collections.abc import Callable
from typing import Any

__all__ = ["Argument", "Node", "Target", "has_side_effect", "map_aggregate", "map_arg"]

Target = Any
Argument = Any

_side_effectful_functions: set = set()


def has_side_effect(fn: Callable) -> Callable:
    """Mark ``fn`` as impure: dead code elimination keeps its calls."""
    _side_effectful_functions.add(fn)
    return fn


# nn.functional functions torch binds from elsewhere, F's name -> torch's spelling: a traced
# ``F.gelu`` prints as ``torch._C._nn.gelu`` (a C++ binding), ``F.conv2d`` as ``torch.conv2d``
FUNCTIONAL_SPELLINGS = {
    name: f"torch._C._nn.{c_name}"
    for name, c_name in {
        "avg_pool2d": "avg_pool2d",
        "avg_pool3d": "avg_pool3d",
        "elu_": "elu_",
        "gelu": "gelu",
        "hardtanh_": "hardtanh_",
        "leaky_relu_": "leaky_relu_",
        "linear": "linear",
        "logsigmoid": "log_sigmoid",
        "one_hot": "one_hot",
        "scaled_dot_product_attention": "scaled_dot_product_attention",
        "softplus": "softplus",
        "softshrink": "softshrink",
    }.items()
} | {
    name: f"torch.{name}"
    for name in (
        "adaptive_avg_pool1d avg_pool1d bilinear celu_ channel_shuffle conv1d conv2d conv3d "
        "conv_transpose1d conv_transpose2d conv_transpose3d cosine_similarity hardshrink "
        "native_channel_shuffle pairwise_distance pdist pixel_shuffle pixel_unshuffle prelu "
        "relu_ rrelu_ selu_ threshold_"
    ).split()
}
# ids of the functions FUNCTIONAL_SPELLINGS names (their nodes take the spelling's last name)
_SPELLED_IDS: set[int] = set()


def _public_names() -> dict:
    """id(function) -> its public name as torch spells it (``torch.relu``,
    ``torch.nn.functional.relu``): generated code and node targets read as torch's, and code
    that compares a target's qualified name with ``"torch.relu"`` keeps working."""
    global _PUBLIC_NAMES
    if _PUBLIC_NAMES is None:
        import ember
        import ember.fft
        import ember.linalg
        import ember.nn.functional
        import ember.special
        from ember.fx.proxy import _wrapper_to_orig

        def unpatched(value: Any) -> Any:  # a trace may be running: its wrappers are not names
            return _wrapper_to_orig.get(id(value), value)

        names: dict = {}
        for name, spelling in FUNCTIONAL_SPELLINGS.items():
            fn = unpatched(getattr(ember.nn.functional, name, None))
            # ember._C binds the torch._C._nn ones; a torch.X spelling needs ember.X
            binding = spelling.startswith("torch._C._nn.")
            if fn is not None and (binding or hasattr(ember, spelling[len("torch.") :])):
                names[id(fn)] = (spelling, fn)
                _SPELLED_IDS.add(id(fn))
        # later modules do not override earlier ones: torch.conv2d wins over F.conv2d
        for mod, prefix in (
            (ember, "torch"),
            (ember.nn.functional, "torch.nn.functional"),
            (ember.linalg, "torch.linalg"),
            (ember.fft, "torch.fft"),
            (ember.special, "torch.special"),
        ):
            for name, value in vars(mod).items():
                if name.startswith("__") or isinstance(value, (type, types.ModuleType)):
                    continue
                value = unpatched(value)
                if callable(value):
                    names.setdefault(id(value), (f"{prefix}.{name}", value))
        _PUBLIC_NAMES = names
    return _PUBLIC_NAMES


_PUBLIC_NAMES: dict | None = None


def _refresh_public_names() -> None:
    """Add the names of functions published since the table was built (keeps the old)."""
    global _PUBLIC_NAMES
    old = _PUBLIC_NAMES or {}
    _PUBLIC_NAMES = None
    new = _public_names()
    for k, v in old.items():
        new.setdefault(k, v)


def _get_qualified_name(func: Callable) -> str:
    """Return the dotted name code can use to reach ``func`` (``torch.relu``, ``operator.add``;
    generated code binds ``torch`` to ember)."""
    name = func.__name__
    if getattr(builtins, name, None) is func:
        return name
    public = _public_names().get(id(func))
    if public is not None and public[1] is func:
        return public[0]
    from ember._core.tensor import Tensor

    if getattr(Tensor, name, None) is func:
        return f"torch.Tensor.{name}"
    if name == "<lambda>":
        import inspect

        try:
            name = inspect.getsource(func).split("=")[0].strip()
        except Exception as e:
            raise RuntimeError("Unable to represent lambda") from e
    module = getattr(func, "__module__", None) or ""
    return f"{module}.{name}"


def _type_repr(obj: Any) -> str:
    if isinstance(obj, type):
        if obj.__module__ == "builtins":
            return obj.__qualname__
        return f"{obj.__module__}.{obj.__qualname__}"
    if obj is ...:
        return "..."
    if isinstance(obj, types.FunctionType):
        return obj.__name__
    return repr(obj)


def _format_arg(arg: Any, max_list_len: float = float("inf")) -> str:
    if isinstance(arg, list):
        items = ", ".join(_format_arg(a) for i, a in enumerate(arg) if i < max_list_len)
        more = "" if len(arg) < max_list_len + 1 else f", ...[total_len={len(arg)}]"
        return f"[{items}{more}]"
    if isinstance(arg, tuple):
        items = ", ".join(_format_arg(a) for i, a in enumerate(arg) if i < max_list_len)
        more = "" if len(arg) < max_list_len + 1 else f", ...[total_len={len(arg)}]"
        comma = "," if len(arg) == 1 else ""
        return f"({items}{comma}{more})"
    if isinstance(arg, dict):
        return "{" + ", ".join(f"{k}: {_format_arg(v)}" for k, v in arg.items()) + "}"
    if isinstance(arg, Node):
        return "%" + str(arg)
    return str(arg)


class Node:
    """One operation of a :class:`Graph`: ``op`` (placeholder, get_attr, call_function,
    call_method, call_module, output), its ``target``, ``args`` and ``kwargs``."""

    def __init__(
        self,
        graph,
        name: str,
        op: str,
        target: Target,
        args: tuple,
        kwargs: dict,
        return_type: Any | None = None,
    ) -> None:
        if op == "call_function" and not callable(target):
            raise ValueError(
                f"Node [graph = {graph}, name = '{name}'] target {target} has type "
                f"{type(target).__name__} but a Callable is expected"
            )
        if op in ("placeholder", "call_method", "call_module", "get_attr") and not isinstance(
            target, str
        ):
            raise ValueError(
                f"Node [graph = {graph}, name = '{name}'] target {target} has type "
                f"{type(target).__name__} but a str is expected"
            )
        self.graph = graph
        self.name = name
        self.op = op
        self.target = target
        self._input_nodes: dict[Node, None] = {}
        self.users: dict[Node, None] = {}
        self.type = return_type
        self._prev = self
        self._next = self
        self._erased = False
        self.meta: dict[str, Any] = {}
        self._args: tuple = ()
        self._kwargs: dict = {}
        self._update_args_kwargs(args, kwargs)

    # ------------------------------------------------------------------ linked list
    @property
    def next(self) -> Node:
        """The next Node in the graph's list."""
        return self._next

    @property
    def prev(self) -> Node:
        """The previous Node in the graph's list."""
        return self._prev

    def prepend(self, x: Node) -> None:
        """Insert ``x`` before this node in the graph."""
        if self is x:
            return
        x._remove_from_list()
        p = self._prev
        p._next, x._prev = x, p
        x._next, self._prev = self, x

    def append(self, x: Node) -> None:
        """Insert ``x`` after this node in the graph."""
        self._next.prepend(x)

    def _remove_from_list(self) -> None:
        p, n = self._prev, self._next
        p._next, n._prev = n, p
        self._prev = self._next = self

    # ------------------------------------------------------------------ args
    @property
    def args(self) -> tuple:
        """The positional arguments (Nodes stand for the values they produce)."""
        return self._args

    @args.setter
    def args(self, a: tuple) -> None:
        self._update_args_kwargs(a, self._kwargs)

    @property
    def kwargs(self) -> dict:
        """The keyword arguments."""
        return self._kwargs

    @kwargs.setter
    def kwargs(self, k: dict) -> None:
        self._update_args_kwargs(self._args, k)

    @property
    def all_input_nodes(self) -> list[Node]:
        """The Nodes this node reads, in order of first appearance."""
        return list(self._input_nodes)

    def update_arg(self, idx: int, arg: Argument) -> None:
        """Set ``args[idx]`` to ``arg``."""
        args = list(self.args)
        args[idx] = arg
        self.args = tuple(args)

    def insert_arg(self, idx: int, arg: Argument) -> None:
        """Insert ``arg`` at position ``idx`` of ``args``."""
        self.args = self.args[:idx] + (arg,) + self.args[idx:]

    def update_kwarg(self, key: str, arg: Argument) -> None:
        """Set ``kwargs[key]`` to ``arg``."""
        self.kwargs = {**self.kwargs, key: arg}

    def _update_args_kwargs(self, new_args: tuple, new_kwargs: dict) -> None:
        for old in self._input_nodes:
            old.users.pop(self, None)
        self._input_nodes = {}
        self._args = map_aggregate(tuple(new_args), _collect_into(self._input_nodes))
        self._kwargs = map_aggregate(dict(new_kwargs), _collect_into(self._input_nodes))
        for n in self._input_nodes:
            n.users.setdefault(self)

    @property
    def stack_trace(self) -> str | None:
        """The Python stack trace recorded for this node, if any."""
        return self.meta.get("stack_trace")

    @stack_trace.setter
    def stack_trace(self, trace: str | None) -> None:
        self.meta["stack_trace"] = trace

    # ------------------------------------------------------------------ rewiring
    def replace_all_uses_with(
        self,
        replace_with: Node,
        delete_user_cb: Callable[[Node], bool] | None = None,
        *,
        propagate_meta: bool = False,
    ) -> list[Node]:
        """Make every user of this node read ``replace_with`` instead; return those users."""
        if propagate_meta:
            if len(replace_with.meta) != 0:
                raise AssertionError(
                    "Called node.replace_all_uses_with(replace_with, propagate_meta=True), "
                    "but replace_with already has .meta keys"
                )
            replace_with.meta.update(self.meta)
        result = []
        for user in list(self.users):
            if delete_user_cb is not None and not delete_user_cb(user):
                continue
            result.append(user)
            user.replace_input_with(self, replace_with)
        return result

    def replace_input_with(self, old_input: Node, new_input: Node) -> None:
        """Replace every use of ``old_input`` in this node's arguments with ``new_input``."""

        def swap(n: Node) -> Node:
            return new_input if n is old_input else n

        self._update_args_kwargs(map_arg(self._args, swap), map_arg(self._kwargs, swap))

    def is_impure(self, impure_random: bool = True) -> bool:
        """Return True when dead code elimination must keep this node."""
        if self.op in ("placeholder", "output"):
            return True
        if self.op == "call_module":
            mod = self.graph.owning_module
            if mod is None:
                raise AssertionError("self.graph.owning_module not set for purity check")
            return getattr(mod.get_submodule(self.target), "_is_impure", False)
        if self.op == "call_function":
            if self.target in _side_effectful_functions:
                return True
            name = getattr(self.target, "__name__", "")
            return name.endswith("_") and not name.endswith("__")
        if self.op == "call_method":
            return self.target.endswith("_") and not self.target.endswith("__")
        return False

    # ------------------------------------------------------------------ printing
    @staticmethod
    def _pretty_print_target(target: Any) -> str:
        if isinstance(target, str):
            return target
        module = getattr(target, "__module__", None)
        name = getattr(target, "__name__", None)
        if module == "builtins" and name is not None:
            return f"builtins.{name}"
        if module == "_operator" and name is not None:
            return f"operator.{name}"
        return _get_qualified_name(target)

    def format_node(
        self,
        placeholder_names: list[str] | None = None,
        maybe_return_typename: list[str] | None = None,
    ) -> str | None:
        """Return a one-line description of this node, as ``print(graph)`` shows it."""
        typename = f"{_type_repr(self.type)} " if self.type is not None else ""
        head = f"%{self.name} : {typename}[num_users={len(self.users)}] = {self.op}"
        if self.op == "placeholder":
            arg_str = self.target
            if self.type:
                arg_str += arg_str + f": {_type_repr(self.type)}"
            if placeholder_names:
                placeholder_names.append(arg_str)
                return None
            default = "(default=" + str(self.args[0]) + ")" if self.args else ""
            return f"{head}[target={self.target}]{default}"
        if self.op == "get_attr":
            return f"{head}[target={self._pretty_print_target(self.target)}]"
        if self.op == "output":
            if self.type and maybe_return_typename:
                maybe_return_typename[0] = f" -> {_type_repr(self.type)}"
            return f"return {self.args[0]}"
        return (
            f"{head}[target={self._pretty_print_target(self.target)}]"
            f"(args = {_format_arg(self.args)}, kwargs = {_format_arg(self.kwargs)})"
        )

    def __repr__(self) -> str:
        return self.name


def _collect_into(seen: dict) -> Callable:
    def visit(x):
        if isinstance(x, Node):
            seen.setdefault(x)
        return x

    return visit


def map_arg(a: Argument, fn: Callable[[Node], Argument]) -> Argument:
    """Apply ``fn`` to every Node in the nested structure ``a`` (tuples, lists, dicts, slices)."""
    if not callable(fn):
        raise AssertionError("torch.fx.map_arg(a, fn): fn must be a callable")
    return map_aggregate(a, lambda x: fn(x) if isinstance(x, Node) else x)


def map_aggregate(a: Argument, fn: Callable[[Argument], Argument]) -> Argument:
    """Apply ``fn`` to every leaf of the nested structure ``a``."""
    t = type(a)
    if t is tuple or (isinstance(a, tuple) and not hasattr(a, "_fields")):
        return tuple(map_aggregate(elem, fn) for elem in a)
    if isinstance(a, tuple):  # namedtuple
        return t(*(map_aggregate(elem, fn) for elem in a))
    if isinstance(a, list):
        return [map_aggregate(elem, fn) for elem in a]
    if isinstance(a, dict):
        return {k: map_aggregate(v, fn) for k, v in a.items()}
    if isinstance(a, slice):
        return slice(
            map_aggregate(a.start, fn), map_aggregate(a.stop, fn), map_aggregate(a.step, fn)
        )
    return fn(a)

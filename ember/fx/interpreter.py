"""``torch.fx.Interpreter`` (run a graph node by node) and ``Transformer`` (rebuild it)."""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from typing import Any

from ember.fx._symbolic_trace import Tracer, _ember_function_patches, _orig_to_wrapper, _Patcher
from ember.fx.graph import Graph
from ember.fx.graph_module import GraphModule
from ember.fx.node import Argument, Node, Target, map_aggregate, map_arg
from ember.fx.proxy import Proxy

__all__ = ["Interpreter", "Transformer"]


class Interpreter:
    """Executes a GraphModule's graph node by node.

    Override ``run_node`` or the per-opcode methods (``placeholder``, ``get_attr``,
    ``call_function``, ``call_method``, ``call_module``, ``output``) to change or observe
    execution, e.g. to record each node's output shape."""

    def __init__(self, module, garbage_collect_values: bool = True, graph: Graph | None = None):
        self.module = module
        self.submodules = dict(self.module.named_modules())
        self.graph = graph if graph is not None else self.module.graph
        self.env: dict[Node, Any] = {}
        self.name = "Interpreter"
        self.garbage_collect_values = garbage_collect_values
        self.extra_traceback = True
        if garbage_collect_values:
            node_to_last_use: dict[Node, Node] = {}
            self.user_to_last_uses: dict[Node, list[Node]] = {}
            for node in reversed(self.graph.nodes):
                for n in node._input_nodes:
                    if n not in node_to_last_use:
                        node_to_last_use[n] = node
                        self.user_to_last_uses.setdefault(node, []).append(n)

    def run(
        self,
        *args: Any,
        initial_env: dict[Node, Any] | None = None,
        enable_io_processing: bool = True,
    ) -> Any:
        """Run the graph on ``args`` and return its output."""
        self.env = initial_env if initial_env is not None else {}
        if enable_io_processing:
            args = self.graph.process_inputs(*args)
        self.args_iter: Iterator[Any] = iter(args)
        for node in self.graph.nodes:
            if node in self.env:
                continue
            try:
                self.env[node] = self.run_node(node)
            except Exception as e:
                if self.extra_traceback:
                    msg = f"While executing {node.format_node()}"
                    msg = f"{e.args[0]}\n\n{msg}" if e.args else str(msg)
                    msg += f"\nOriginal traceback:\n{node.stack_trace}"
                    e.args = (msg,) + e.args[1:]
                    if isinstance(e, KeyError):
                        raise RuntimeError(*e.args) from e
                raise
            if self.garbage_collect_values:
                for to_delete in self.user_to_last_uses.get(node, []):
                    del self.env[to_delete]
            if node.op == "output":
                out = self.env[node]
                return self.graph.process_outputs(out) if enable_io_processing else out
        return None

    def boxed_run(self, args_list: list[Any]) -> Any:
        """Run with the arguments in a list, which is cleared (inputs freed early)."""
        placeholders = [n for n in self.graph.nodes if n.op == "placeholder"]
        if len(args_list) != len(placeholders):
            detail = (
                "extra arguments" if len(args_list) > len(placeholders) else ("missing arguments")
            )
            raise RuntimeError(
                f"Interpreter.boxed_run expected {len(placeholders)} arguments for placeholders "
                f"but received {len(args_list)} ({detail})"
            )
        env = dict(zip(placeholders, args_list))
        args_list.clear()
        return self.run(initial_env=env)

    def run_node(self, n: Node) -> Any:
        """Run node ``n`` through the method named after its opcode; return its value."""
        args, kwargs = self.fetch_args_kwargs_from_env(n)
        return getattr(self, n.op)(n.target, args, kwargs)

    def placeholder(self, target: Target, args: tuple, kwargs: dict) -> Any:
        """Return the next argument passed to ``run`` (or the placeholder's default)."""
        if target.startswith("*"):
            return list(self.args_iter)
        try:
            return next(self.args_iter)
        except StopIteration as si:
            if len(args) > 0:
                return args[0]
            raise RuntimeError(
                f"Expected positional argument for parameter {target}, but one was not passed in!"
            ) from si

    def get_attr(self, target: Target, args: tuple, kwargs: dict) -> Any:
        """Return the module attribute ``target``."""
        return self.fetch_attr(target)

    def call_function(self, target: Target, args: tuple, kwargs: dict) -> Any:
        """Return ``target(*args, **kwargs)``."""
        if isinstance(target, str):
            raise AssertionError("target should not be a string for call_function")
        return target(*args, **kwargs)

    def call_method(self, target: Target, args: tuple, kwargs: dict) -> Any:
        """Return ``args[0].target(*args[1:], **kwargs)``."""
        self_obj, *args_tail = args
        return getattr(self_obj, target)(*args_tail, **kwargs)

    def call_module(self, target: Target, args: tuple, kwargs: dict) -> Any:
        """Return the submodule ``target`` called on the arguments."""
        return self.fetch_attr(target)(*args, **kwargs)

    def output(self, target: Target, args: tuple, kwargs: dict) -> Any:
        """Return the value the output node refers to."""
        return args[0]

    def fetch_attr(self, target: str) -> Any:
        """Return the attribute at the dotted path ``target`` of ``self.module``."""
        atoms = target.split(".")
        attr_itr = self.module
        for i, atom in enumerate(atoms):
            if not hasattr(attr_itr, atom):
                raise RuntimeError(f"Node referenced nonexistent target {'.'.join(atoms[: i + 1])}")
            attr_itr = getattr(attr_itr, atom)
        return attr_itr

    def fetch_args_kwargs_from_env(self, n: Node) -> tuple[tuple, dict]:
        """Return ``n``'s args and kwargs with each Node replaced by its computed value."""
        return self.map_nodes_to_values(n.args, n), self.map_nodes_to_values(n.kwargs, n)

    def map_nodes_to_values(self, args: Argument, n: Node) -> Argument:
        """Replace every Node in ``args`` by its value in ``self.env``."""

        def load_arg(n_arg: Node) -> Any:
            if n_arg not in self.env:
                raise RuntimeError(
                    f"Node {n} referenced nonexistent value {n_arg}! Run Graph.lint() "
                    "to diagnose such issues"
                )
            return self.env[n_arg]

        return map_arg(args, load_arg)


class Transformer(Interpreter):
    """Runs a graph on Proxies to build a new one: override the per-opcode methods to
    rewrite nodes, then call :meth:`transform` for the new GraphModule."""

    def __init__(self, module: GraphModule) -> None:
        super().__init__(module)
        self.new_graph = Graph()

        class TransformerTracer(Tracer):
            def __init__(self, graph: Graph) -> None:
                super().__init__()
                self.graph = graph
                self.tensor_attrs: dict = {}

            def is_leaf_module(self, _, __: str) -> bool:
                return True

        self.tracer = TransformerTracer(self.new_graph)
        self.tracer.root = module

    def run_node(self, n: Node) -> Any:
        """Run node ``n`` on Proxies. While ``transform`` runs ember's functions are
        replaced by recording stand-ins, so targets are passed as those stand-ins
        (``target is ember.relu`` holds in overrides)."""
        args, kwargs = self.fetch_args_kwargs_from_env(n)
        target = n.target
        if n.op == "call_function":
            target = _orig_to_wrapper.get(id(target), target)
        return getattr(self, n.op)(target, args, kwargs)

    def placeholder(self, target: Target, args: tuple, kwargs: dict) -> Proxy:
        """Insert a placeholder into the new graph."""
        default_value = next(iter(args)) if args else inspect.Signature.empty
        return Proxy(self.new_graph.placeholder(target, default_value=default_value), self.tracer)

    def get_attr(self, target: Target, args: tuple, kwargs: dict) -> Proxy:
        """Insert a get_attr node into the new graph."""
        return self.tracer.create_proxy("get_attr", target, args, kwargs)

    def call_module(self, target: Target, args: tuple, kwargs: dict) -> Any:
        """Insert a call_module node into the new graph."""
        submod = self.fetch_attr(target)
        return self.tracer.call_module(submod, submod.forward, args, kwargs)

    def call_function(self, target: Target, args: tuple, kwargs: dict) -> Any:
        """Insert a call_function node into the new graph."""
        return self.tracer.create_proxy("call_function", target, args, kwargs)

    def transform(self) -> GraphModule:
        """Return a new GraphModule built from the rewritten graph."""
        # ember functions called on Proxies by overrides must record nodes, as in a trace
        with _Patcher() as patcher:
            for ns, name, _orig, wrapper in _ember_function_patches():
                patcher.patch(ns, name, wrapper)
            result = super().run(enable_io_processing=False)
        if result is not None:

            def strip_proxy(a: Any) -> Any:
                return a.node if isinstance(a, Proxy) else a

            new_output = self.new_graph.output(map_aggregate(result, strip_proxy))
            old_output = list(self.graph.nodes)[-1]
            new_output.meta.update(old_output.meta)
        return GraphModule(self.module, self.new_graph)

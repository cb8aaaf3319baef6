"""``torch.fx.Interpreter`` (run a graph node by node) and ``Transformer`` (rebuild it)."""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from typing import Any

from ember.fx._symbolic_trace import Tracer, _ember_function_patches, _orig_to_wrapper, _Patcher
from ember.fx.graph import Graph, last_readers
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
        self.submodules = {name: sub for name, sub in module.named_modules()}
        self.graph = module.graph if graph is None else graph
        self.env: dict[Node, Any] = {}
        self.name = "Interpreter"
        self.garbage_collect_values = garbage_collect_values
        self.extra_traceback = True
        if garbage_collect_values:
            # after running a node, the values it was the last reader of are dropped
            self.user_to_last_uses = last_readers(self.graph.nodes)

    def run(
        self,
        *args: Any,
        initial_env: dict[Node, Any] | None = None,
        enable_io_processing: bool = True,
    ) -> Any:
        """Run the graph on ``args`` and return its output."""
        self.env = {} if initial_env is None else initial_env
        if enable_io_processing:
            args = self.graph.process_inputs(*args)
        self.args_iter: Iterator[Any] = iter(args)
        env = self.env
        for node in self.graph.nodes:
            if node in env:  # given in initial_env
                continue
            try:
                env[node] = self.run_node(node)
            except Exception as exc:
                if self.extra_traceback:
                    _annotate(exc, node)
                    if isinstance(exc, KeyError):
                        raise RuntimeError(*exc.args) from exc
                raise
            if self.garbage_collect_values:
                for done in self.user_to_last_uses.get(node, ()):
                    del env[done]
            if node.op == "output":
                result = env[node]
                return self.graph.process_outputs(result) if enable_io_processing else result
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
        handler = getattr(self, n.op)
        return handler(n.target, *self.fetch_args_kwargs_from_env(n))

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
        method = getattr(args[0], target)
        return method(*args[1:], **kwargs)

    def call_module(self, target: Target, args: tuple, kwargs: dict) -> Any:
        """Return the submodule ``target`` called on the arguments."""
        return self.fetch_attr(target)(*args, **kwargs)

    def output(self, target: Target, args: tuple, kwargs: dict) -> Any:
        """Return the value the output node refers to."""
        return args[0]

    def fetch_attr(self, target: str) -> Any:
        """Return the attribute at the dotted path ``target`` of ``self.module``."""
        obj, walked = self.module, []
        for atom in target.split("."):
            walked.append(atom)
            if not hasattr(obj, atom):
                raise RuntimeError(f"Node referenced nonexistent target {'.'.join(walked)}")
            obj = getattr(obj, atom)
        return obj

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


def _annotate(exc: Exception, node: Node) -> None:
    # the failing node and where it was traced, appended to the exception's message
    where = f"While executing {node.format_node()}"
    first = f"{exc.args[0]}\n\n{where}" if exc.args else where
    exc.args = (f"{first}\nOriginal traceback:\n{node.stack_trace}", *exc.args[1:])


class _RebuildTracer(Tracer):
    """The tracer a Transformer records into: every submodule call stays one node."""

    def __init__(self, graph: Graph, root) -> None:
        super().__init__()
        self.graph = graph
        self.root = root
        self.tensor_attrs: dict = {}

    def is_leaf_module(self, m, module_qualified_name: str) -> bool:
        return True


class Transformer(Interpreter):
    """Runs a graph on Proxies to build a new one: override the per-opcode methods to
    rewrite nodes, then call :meth:`transform` for the new GraphModule."""

    def __init__(self, module: GraphModule) -> None:
        super().__init__(module)
        self.new_graph = Graph()
        self.tracer = _RebuildTracer(self.new_graph, module)

    def run_node(self, n: Node) -> Any:
        """Run node ``n`` on Proxies. While ``transform`` runs ember's functions are
        replaced by recording stand-ins, so targets are passed as those stand-ins
        (``target is ember.relu`` holds in overrides)."""
        target = n.target
        if n.op == "call_function":
            target = _orig_to_wrapper.get(id(target), target)
        return getattr(self, n.op)(target, *self.fetch_args_kwargs_from_env(n))

    def placeholder(self, target: Target, args: tuple, kwargs: dict) -> Proxy:
        """Insert a placeholder into the new graph."""
        default = args[0] if args else inspect.Signature.empty
        return Proxy(self.new_graph.placeholder(target, default_value=default), self.tracer)

    def get_attr(self, target: Target, args: tuple, kwargs: dict) -> Proxy:
        """Insert a get_attr node into the new graph."""
        return self._record("get_attr", target, args, kwargs)

    def call_module(self, target: Target, args: tuple, kwargs: dict) -> Any:
        """Insert a call_module node into the new graph."""
        module = self.fetch_attr(target)
        return self.tracer.call_module(module, module.forward, args, kwargs)

    def call_function(self, target: Target, args: tuple, kwargs: dict) -> Any:
        """Insert a call_function node into the new graph."""
        return self._record("call_function", target, args, kwargs)

    def _record(self, kind: str, target: Target, args: tuple, kwargs: dict) -> Proxy:
        return self.tracer.create_proxy(kind, target, args, kwargs)

    def transform(self) -> GraphModule:
        """Return a new GraphModule built from the rewritten graph."""
        # ember functions called on Proxies by overrides must record nodes, as in a trace
        with _Patcher() as patcher:
            for ns, name, _orig, wrapper in _ember_function_patches():
                patcher.patch(ns, name, wrapper)
            returned = Interpreter.run(self, enable_io_processing=False)
        if returned is not None:
            as_nodes = map_aggregate(returned, lambda a: a.node if isinstance(a, Proxy) else a)
            out = self.new_graph.output(as_nodes)
            out.meta.update(next(iter(reversed(self.graph.nodes))).meta)  # the old output's
        return GraphModule(self.module, self.new_graph)

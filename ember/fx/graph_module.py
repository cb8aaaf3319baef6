"""``torch.fx.GraphModule``: an nn.Module whose ``forward`` is generated from a Graph."""

from __future__ import annotations

import copy
import itertools
import linecache
from typing import Any

from ember.fx.graph import Graph, PythonCode
from ember.nn import Module
from ember.nn.modules.module import _addindent

__all__ = ["GraphModule"]

_next_id = itertools.count()


def _exec_with_source(src: str, globals_: dict) -> None:
    key = f"<eval_with_key>.{next(_next_id)}"
    linecache.cache[key] = (len(src), None, src.splitlines(True), key)
    exec(compile(src, key, "exec"), globals_)


def _forward_from_src(src: str, globals_: dict):
    globals_copy = dict(globals_)
    _exec_with_source(src, globals_copy)
    return globals_copy["forward"]


def _copy_attr(from_module: Module, to_module: Module, target: str) -> None:
    from ember._core.tensor import Tensor
    from ember.nn import Parameter

    *prefix, field = target.split(".")
    for item in prefix:
        f = getattr(from_module, item)
        t = getattr(to_module, item, None)
        if f is t:
            return  # already copied by an earlier target
        if t is None:
            t = Module()
            setattr(to_module, item, t)
        from_module, to_module = f, t
    orig = getattr(from_module, field)
    if isinstance(orig, Tensor) and not isinstance(orig, Parameter):
        to_module.register_buffer(field, orig)
    else:
        setattr(to_module, field, orig)


def _assign_attr(from_obj: Any, to_module: Module, target: str) -> None:
    from ember._core.tensor import Tensor
    from ember.nn import Parameter

    *prefix, field = target.split(".")
    for item in prefix:
        t = getattr(to_module, item, None)
        if t is None:
            t = Module()
            setattr(to_module, item, t)
        to_module = t
    if isinstance(from_obj, Tensor) and not isinstance(from_obj, Parameter):
        to_module.register_buffer(field, from_obj)
    else:
        setattr(to_module, field, from_obj)


class GraphModule(Module):
    """An nn.Module built from ``root`` (a Module or a dict of attributes) and a ``graph``:
    it holds the submodules, parameters and buffers the graph uses and runs the graph's
    generated code as ``forward``."""

    def __new__(cls, *args: Any, **kwargs: Any):
        # every instance gets its own class, so that recompile() can set its forward
        for t in cls.__mro__:
            if t.__qualname__.split(".")[-1] != "GraphModuleImpl":
                cls = t
                break

        class GraphModuleImpl(cls):  # type: ignore[valid-type, misc]
            pass

        return super().__new__(GraphModuleImpl)

    def __init__(
        self, root: Module | dict[str, Any], graph: Graph, class_name: str = "GraphModule"
    ) -> None:
        super().__init__()
        self.__class__.__name__ = class_name
        if isinstance(root, Module):
            if hasattr(root, "training"):
                self.training = root.training
            for node in graph.nodes:
                if node.op in ("get_attr", "call_module"):
                    _copy_attr(root, self, node.target)
        elif isinstance(root, dict):
            targets = []
            for node in graph.nodes:
                if node.op in ("get_attr", "call_module"):
                    if node.target not in root:
                        raise RuntimeError(
                            "Node " + str(node) + " referenced target " + node.target
                            + " but that target was not provided in ``root``!"
                        )  # fmt: skip
                    targets.append(node.target)
            targets.sort(key=lambda t: t.count("."))
            for target in targets:
                _assign_attr(root[target], self, target)
        else:
            raise RuntimeError("Unsupported type " + str(root) + " passed for root!")
        self.graph = graph
        self._tracer_cls = graph._tracer_cls
        self.meta: dict[str, Any] = {}

    @property
    def graph(self) -> Graph:
        """The Graph this module runs; assigning one recompiles ``forward``."""
        return self._graph

    @graph.setter
    def graph(self, g: Graph) -> None:
        if not isinstance(g, Graph):
            raise AssertionError(f"Expected a Graph instance, but got {type(g)}")
        self._graph = g
        g.owning_module = self
        self.recompile()

    @property
    def code(self) -> str:
        """The Python source of the generated ``forward``."""
        if not hasattr(self, "_code"):
            raise RuntimeError("Code has not been generated! Please report a bug to PyTorch")
        return self._code

    def recompile(self) -> PythonCode:
        """Regenerate ``forward`` from ``self.graph`` (call after editing the graph)."""
        python_code = self._graph.python_code(root_module="self")
        self._code = python_code.src
        cls = type(self)
        cls.forward = _forward_from_src(self._code, python_code.globals)
        return python_code

    def print_readable(
        self,
        print_output: bool = True,
        include_stride: bool = False,
        include_device: bool = False,
        colored: bool = False,
    ) -> str:
        """Return (and print) the generated code as a class definition."""
        module_code = self._graph.python_code(root_module="self", verbose=True).src
        module_code = module_code.lstrip("\n")
        module_code = f"class {self._get_name()}(torch.nn.Module):\n" + module_code
        module_code = _addindent(module_code, 4)
        submodule_code_list = [""]
        for _, submodule in self.named_children():
            if isinstance(submodule, GraphModule):
                submodule_code_list.append(submodule.print_readable(print_output=False))
        submodule_code = _addindent("\n".join(submodule_code_list), 4)
        output = module_code + submodule_code
        if print_output:
            print(output)
        return output

    def __str__(self) -> str:
        orig_str = super().__str__()
        reminder = "# To see more debug info, please use `graph_module.print_readable()`"
        return "\n".join([orig_str, self._code, reminder])

    # ------------------------------------------------------------------ submodules
    def add_submodule(self, target: str, m: Module) -> bool:
        """Install ``m`` at the dotted path ``target``, creating empty parents as needed."""
        *prefix, field = target.split(".")
        mod: Module = self
        for item in prefix:
            submod = getattr(mod, item, None)
            if submod is None:
                submod = Module()
                setattr(mod, item, submod)
            if not isinstance(submod, Module):
                return False
            mod = submod
        mod.add_module(field, m)
        return True

    def delete_submodule(self, target: str) -> bool:
        """Remove the submodule at ``target``; return False when there is none."""
        atoms = target.split(".")
        path, target_submod = atoms[:-1], atoms[-1]
        mod: Module = self
        for item in path:
            if not hasattr(mod, item):
                return False
            mod = getattr(mod, item)
            if not isinstance(mod, Module):
                return False
        if not hasattr(mod, target_submod):
            return False
        if not isinstance(getattr(mod, target_submod), Module):
            return False
        delattr(mod, target_submod)
        return True

    def delete_all_unused_submodules(self) -> None:
        """Remove every submodule no call_module / get_attr node refers to."""
        used: set[str] = set()
        for node in self.graph.nodes:
            if node.op not in ("call_module", "get_attr"):
                continue
            # the target keeps every module on the path to it ...
            parts = node.target.split(".")
            used.update(".".join(parts[:depth]) for depth in range(1, len(parts) + 1))
            if node.op != "call_module":
                continue
            # ... and a called module everything inside it
            try:
                called = self.get_submodule(node.target)
            except AttributeError:
                continue
            used.update(f"{node.target}.{inner}" for inner, _ in called.named_modules() if inner)
        for name in [n for n, _ in self.named_modules() if n and n not in used]:
            self.delete_submodule(name)

    # ------------------------------------------------------------------ copying
    def __deepcopy__(self, memo: dict) -> GraphModule:
        res = type(self).__new__(type(self))
        memo[id(self)] = res
        fake = Module.__new__(Module)
        fake.__dict__ = copy.deepcopy(self.__dict__, memo)
        GraphModule.__init__(res, fake, fake.__dict__["_graph"], self.__class__.__name__)
        res.meta = copy.deepcopy(getattr(self, "meta", {}), memo)
        return res

    def __copy__(self) -> GraphModule:
        res = GraphModule(self, self.graph, self.__class__.__name__)
        res.meta = copy.copy(getattr(self, "meta", {}))
        return res

    def __reduce__(self):
        state = {k: v for k, v in self.__dict__.items() if k not in ("_graph", "_code")}
        return (_rebuild_graph_module, (state, copy.deepcopy(self._graph), self._get_name()))


def _rebuild_graph_module(state: dict, graph: Graph, class_name: str) -> GraphModule:
    fake = Module.__new__(Module)
    fake.__dict__ = state
    return GraphModule(fake, graph, class_name)

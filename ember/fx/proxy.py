"""``torch.fx.proxy``: Proxy values recorded into a Graph while tracing.

ember has no ``__torch_function__``: a Proxy records what is done to it through Python's
operator protocol (``__add__``, ``__getitem__``...) and attribute access (``x.relu()``,
``x.shape``); calls of ember's public functions (``ember.relu(x)``, ``F.relu(x)``) are
recorded by wrappers the Tracer installs over those functions while it traces.
"""

from __future__ import annotations

import dis
import inspect
import operator
import sys
from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import Any

from ember.fx.graph import Graph, magic_methods, reflectable_magic_methods
from ember.fx.node import Argument, Node, Target, has_side_effect, map_arg

__all__ = ["Attribute", "GraphAppendingTracer", "ParameterProxy", "Proxy", "TraceError",
           "TracerBase"]  # fmt: skip


class TraceError(ValueError):
    """Raised when symbolic tracing meets something it cannot record (control flow...)."""


_BASE_TYPES = (str, int, float, bool, complex, type(None), type(...), bytes, range)


@has_side_effect
def assert_fn(x: Any) -> None:
    """Raise AssertionError unless ``x`` (a traced ``assert``)."""
    assert x


# id(wrapper) -> the ember function it stands in for while a trace runs (_symbolic_trace.py)
_wrapper_to_orig: dict[int, Callable] = {}


class TracerBase:
    """The part of a tracer that turns calls on Proxies into graph nodes."""

    graph: Graph
    record_stack_traces: bool = False
    check_mutable_operations: bool = False
    trace_asserts: bool = False
    proxy_buffer_attributes: bool = False
    traced_func_name: str = "forward"

    def create_node(
        self,
        kind: str,
        target: Target,
        args: tuple,
        kwargs: dict,
        name: str | None = None,
        type_expr: Any | None = None,
    ) -> Node:
        """Insert a node into ``self.graph``; override to attach metadata."""
        if kind == "call_function":
            target = _wrapper_to_orig.get(id(target), target)
        node = self.graph.create_node(kind, target, args, kwargs, name, type_expr)
        stack = getattr(self, "module_stack", None)
        if stack is not None:
            node.meta["nn_module_stack"] = OrderedDict(stack)
        return node

    def proxy(self, node: Node) -> Proxy:
        """Wrap ``node`` in a Proxy."""
        return Proxy(node, self)

    def create_proxy(
        self,
        kind: str,
        target: Target,
        args: tuple,
        kwargs: dict,
        name: str | None = None,
        type_expr: Any | None = None,
        proxy_factory_fn: Callable[[Node], Proxy] | None = None,
    ) -> Proxy:
        """Record a node for a call on proxies and return the Proxy of its result."""
        args_ = self.create_arg(args)
        kwargs_ = self.create_arg(kwargs)
        node = self.create_node(kind, target, args_, kwargs_, name, type_expr)
        return self.proxy(node) if proxy_factory_fn is None else proxy_factory_fn(node)

    def create_arg(self, a: Any) -> Argument:
        """Turn a value used as an argument into a graph Argument (Proxies become Nodes)."""
        if isinstance(a, Proxy):
            return a.node
        if hasattr(a, "__fx_create_arg__"):
            return a.__fx_create_arg__(self)
        if isinstance(a, tuple):
            if hasattr(a, "_fields"):
                return type(a)(*[self.create_arg(e) for e in a])
            return tuple(self.create_arg(e) for e in a)
        if isinstance(a, list):
            return [self.create_arg(e) for e in a]
        if isinstance(a, dict):
            out = {}
            for k, v in a.items():
                if not isinstance(k, str):
                    k = self.create_arg(k)

                    def no_nodes(arg: Node, k: Any = k) -> None:
                        raise RuntimeError(
                            "Keys for dictionaries used as an argument cannot contain a "
                            f"Node. Got key: {k}"
                        )

                    map_arg(k, no_nodes)
                out[k] = self.create_arg(v)
            return out
        if isinstance(a, slice):
            return slice(self.create_arg(a.start), self.create_arg(a.stop),
                         self.create_arg(a.step))  # fmt: skip
        if isinstance(a, Node):
            return a
        import enum

        from ember._core.device import device
        from ember._core.dtype import dtype

        if isinstance(a, (*_BASE_TYPES, enum.Enum, dtype, device)):
            return a
        from ember._core.layout import layout
        from ember._core.tensor import memory_format

        if isinstance(a, (layout, memory_format)):
            return a
        raise NotImplementedError(f"argument of type: {type(a)}")

    def to_bool(self, obj: Proxy) -> bool:
        """Called when a Proxy is used as a truth value: tracing cannot decide it."""
        raise TraceError("symbolically traced variables cannot be used as inputs to control flow")

    def iter(self, obj: Proxy) -> Iterator:
        """Called when a Proxy is iterated over: tracing cannot know its length."""
        raise TraceError(
            "Proxy object cannot be iterated. This can be attempted when the Proxy is used in "
            "a loop or as a *args or **kwargs function argument. See the torch.fx docs on "
            "pytorch.org for a more detailed explanation of what types of control flow can "
            "be traced, and check out the Proxy docstring for help troubleshooting Proxy "
            "iteration errors"
        )

    def keys(self, obj: Proxy) -> Proxy:
        """Called for ``**proxy``: records ``proxy.keys()``."""
        return Attribute(obj, "keys")()


class GraphAppendingTracer(TracerBase):
    """A tracer that only appends to ``graph`` (for building graphs from Proxies by hand)."""

    def __init__(self, graph: Graph) -> None:
        super().__init__()
        self.graph = graph
        self.module_stack: OrderedDict = OrderedDict()


def _current_instruction(frame) -> int | None:
    """Index (in ``dis.get_instructions``) of the instruction ``frame`` is executing."""
    # f_lasti is a byte offset from Python 3.11 on, an instruction index before
    lasti = frame.f_lasti if sys.version_info >= (3, 11) else frame.f_lasti * 2
    for i, ins in enumerate(dis.get_instructions(frame.f_code)):
        if ins.offset >= lasti:
            return i
    return None


class Proxy:
    """A value that is not known while tracing: what is done to it becomes graph nodes."""

    def __init__(self, node: Node, tracer: TracerBase | None = None) -> None:
        if tracer is None:
            tracer = GraphAppendingTracer(node.graph)
        self.tracer = tracer
        self.node = node

    def __repr__(self) -> str:
        return f"Proxy({self.node.name})"

    def __getattr__(self, k: str) -> Attribute:
        # every missing attribute, dunders included, is recorded (``x.__index__()`` too)
        return Attribute(self, k)

    def __getstate__(self) -> dict:
        return self.__dict__

    def __setstate__(self, d: dict) -> None:
        self.__dict__ = d

    def __deepcopy__(self, memo: dict) -> Proxy:
        import copy

        new_dict = {k: copy.deepcopy(v, memo) for k, v in self.__dict__.items()}
        new = object.__new__(type(self))
        new.__dict__ = new_dict
        return new

    def __call__(self, *args: Any, **kwargs: Any) -> Proxy:
        return self.tracer.create_proxy("call_method", "__call__", (self,) + args, kwargs)

    def __iter__(self) -> Iterator[Proxy]:
        frame = inspect.currentframe()
        calling = frame.f_back if frame is not None else None
        if calling is not None:
            idx = _current_instruction(calling)
            insts = list(dis.get_instructions(calling.f_code))
            if idx is not None and insts[idx].opname == "UNPACK_SEQUENCE":
                return (self[i] for i in range(insts[idx].argval))
        return self.tracer.iter(self)

    def __bool__(self) -> bool:
        if self.tracer.trace_asserts:
            frame = inspect.currentframe()
            calling = frame.f_back if frame is not None else None
            if calling is not None:
                insts = list(dis.get_instructions(calling.f_code))
                idx = _current_instruction(calling)
                if idx is not None and idx + 1 < len(insts):
                    if insts[idx].opname.startswith("POP_JUMP") and insts[idx + 1].opname in (
                        "LOAD_ASSERTION_ERROR",
                    ):
                        _record_call(self.tracer, assert_fn, self)
                        return True
        return self.tracer.to_bool(self)

    def keys(self) -> Proxy:
        """Record ``proxy.keys()`` (used by ``**proxy``)."""
        return self.tracer.keys(self)

    def __len__(self) -> int:
        raise RuntimeError(
            "'len' is not supported in symbolic tracing by default. If you want this call to "
            "be recorded, please call torch.fx.wrap('len') at module scope"
        )


class Attribute(Proxy):
    """``proxy.attr``: becomes a ``getattr`` node when used, a method call when called."""

    def __init__(self, root: Proxy, attr: str) -> None:
        self.root = root
        self.attr = attr
        self.tracer = root.tracer
        self._node: Node | None = None

    @property
    def node(self) -> Node:
        """The ``getattr`` node of this attribute."""
        # created lazily: most attributes are only called as methods
        if self._node is None:
            self._node = self.tracer.create_proxy(
                "call_function", getattr, (self.root, self.attr), {}
            ).node
        return self._node

    def __call__(self, *args: Any, **kwargs: Any) -> Proxy:
        return self.tracer.create_proxy("call_method", self.attr, (self.root,) + args, kwargs)


class ParameterProxy(Proxy):
    """A parameter's Proxy whose shape queries answer from the parameter itself."""

    def __init__(self, tracer: TracerBase, node: Node, name: str, param) -> None:
        super().__init__(node, tracer)
        self.param = param
        self.name = name

    def __repr__(self) -> str:
        return f"ParameterProxy({self.name})"

    @property
    def shape(self):
        """The parameter's shape."""
        return self.param.shape

    def size(self, dim: int | None = None):
        """The parameter's size."""
        return self.param.size() if dim is None else self.param.size(dim)

    def dim(self) -> int:
        """The parameter's number of dimensions."""
        return self.param.dim()

    @property
    def ndim(self) -> int:
        """The parameter's number of dimensions."""
        return self.param.ndim

    def numel(self) -> int:
        """The parameter's number of elements."""
        return self.param.numel()

    def nelement(self) -> int:
        """The parameter's number of elements."""
        return self.param.nelement()


def _record_call(tracer: Any, target: Callable, *args: Any, **kwargs: Any) -> Proxy:
    """Record ``target(*args, **kwargs)`` as a ``call_function`` node of ``tracer``."""
    return tracer.create_proxy("call_function", target, args, kwargs)


def _define_magic(method: str) -> None:
    target = getattr(operator, method, None)
    if target is None:  # "div": Python 2's __div__
        return

    def impl(*args: Any, **kwargs: Any) -> Proxy:
        return _record_call(args[0].tracer, target, *args, **kwargs)

    impl.__name__ = method
    setattr(Proxy, f"__{method.strip('_')}__", impl)


def _define_reflectable(method: str) -> None:
    target = getattr(operator, method, None)
    if target is None:
        return
    name = f"__r{method.strip('_')}__"

    def impl(self: Proxy, rhs: Any) -> Proxy:
        # the operands swap back: the graph records target(rhs, self)
        return _record_call(self.tracer, target, rhs, self)

    impl.__name__ = impl.__qualname__ = name
    setattr(Proxy, name, impl)


for _m in (*magic_methods, "abs"):  # abs: a unary operator the graph's table leaves out
    _define_magic(_m)
for _m in reflectable_magic_methods:
    _define_reflectable(_m)
del _m

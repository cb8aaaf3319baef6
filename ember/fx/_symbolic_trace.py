"""``torch.fx.symbolic_trace`` and ``Tracer``: run ``forward`` on Proxies, record a Graph.

While a trace runs, the tracer patches (and always restores):
- ``nn.Module.__call__``, so submodule calls become ``call_module`` nodes (leaf modules) or
  are traced through;
- ``nn.Module.__getattr__``, so parameters and buffers read in ``forward`` become
  ``get_attr`` nodes;
- ember's public functions (``ember.*``, ``ember.nn.functional.*``, ``ember.linalg/fft/
  special.*``, ``math.*``) and those the traced code imported by name, so a call with a
  Proxy argument becomes a ``call_function`` node; calls without Proxies run as usual.
Nothing in ember's dispatch is touched: when no trace runs, nothing is patched.
"""

from __future__ import annotations

import builtins
import functools
import inspect
import math
import types
import warnings
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from ember._ops.torch_utilities import _assert
from ember._standin import is_ember_module
from ember.fx.graph import Graph
from ember.fx.node import Argument, Node, has_side_effect, map_aggregate
from ember.fx.proxy import ParameterProxy, Proxy, TracerBase, _wrapper_to_orig

__all__ = ["PH", "Tracer", "is_fx_tracing", "symbolic_trace", "wrap"]

_is_fx_tracing_flag = False


def is_fx_tracing() -> bool:
    """Return True while a symbolic trace runs."""
    return _is_fx_tracing_flag


def _path_of(obj: Any, named) -> str | None:
    """The name under which ``obj`` itself appears in ``named`` ((name, value) pairs)."""
    return next((name for name, value in named if value is obj), None)


class PHBase:
    """Object representing an input placeholder to ``concrete_args``."""

    def __repr__(self) -> str:
        return "PH"


PH = PHBase()

# ``wrap()`` registrations: (id of a module's globals, a name) -> those globals; each trace
# patches the name there (see _patch_wrapped)
_wrap_sites: dict[tuple[int, str], dict[str, Any]] = {}


def _patch_wrapped(patcher: Any) -> None:
    """Patch every ``wrap()``-registered name for the trace with a recording wrapper of what it
    names: the module's own function, or the builtin for a name the module does not define
    (``wrap("len")``)."""
    for (_, name), namespace in list(_wrap_sites.items()):
        from_builtins = name not in namespace and hasattr(builtins, name)
        original = getattr(builtins, name) if from_builtins else namespace[name]
        patcher.patch(namespace, name, _create_wrapped_func(original))


# torch's nn.functional functions pass their arguments on as: the first N positionally,
# every other parameter (defaults filled in) by keyword. Recording them the same way gives
# the same nodes and code as torch.
_FUNCTIONAL_POSITIONAL = {
    **dict.fromkeys(
        ["relu", "relu6", "elu", "selu", "celu", "leaky_relu", "silu", "mish", "hardswish",
         "hardsigmoid", "hardtanh", "dropout", "dropout1d", "dropout2d", "dropout3d",
         "alpha_dropout", "softmax", "softmin", "log_softmax", "interpolate", "normalize",
         "glu", "instance_norm", "rrelu", "gumbel_softmax"],
        1,
    ),
    **dict.fromkeys(
        ["max_pool1d", "max_pool2d", "max_pool3d", "layer_norm", "pad", "group_norm",
         "cross_entropy", "mse_loss", "l1_loss", "nll_loss", "smooth_l1_loss", "huber_loss",
         "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div", "embedding",
         "adaptive_max_pool1d", "adaptive_max_pool2d", "adaptive_max_pool3d",
         "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d",
         "poisson_nll_loss", "soft_margin_loss", "multilabel_soft_margin_loss"],
        2,
    ),
    "batch_norm": 3,
}  # fmt: skip
# nn.functional functions torch implements as a Tensor method call (``input.sigmoid()``)
_FUNCTIONAL_AS_METHOD = {"sigmoid", "tanh"}


def _find_proxy(*objects: Any) -> Proxy | None:
    found = None

    def visit(x: Any) -> Any:
        nonlocal found
        if found is None and isinstance(x, Proxy):
            found = x
        return x

    for obj in objects:
        t = type(obj)
        if t is tuple or t is list:
            for x in obj:
                if isinstance(x, Proxy):
                    return x
                if isinstance(x, (tuple, list, dict, slice)):
                    map_aggregate(x, visit)
                    if found is not None:
                        return found
        elif t is dict:
            for x in obj.values():
                if isinstance(x, Proxy):
                    return x
                if isinstance(x, (tuple, list, dict, slice)):
                    map_aggregate(x, visit)
                    if found is not None:
                        return found
    return found


def _create_wrapped_func(orig_fn: Callable, mark_wrapped: bool = True) -> Callable:
    """A stand-in for ``orig_fn`` that records a call_function node when given a Proxy."""

    @functools.wraps(orig_fn)
    def wrapped(*args, **kwargs):
        proxy = _find_proxy(args, kwargs)
        if proxy is None:
            return orig_fn(*args, **kwargs)
        out = proxy.tracer.create_proxy("call_function", orig_fn, args, kwargs)
        if mark_wrapped:
            out.node.meta["is_wrapped"] = True
        return out

    return wrapped


def _create_functional_wrapper(orig_fn: Callable, name: str) -> Callable:
    npos = _FUNCTIONAL_POSITIONAL.get(name)
    as_method = name in _FUNCTIONAL_AS_METHOD
    try:
        sig = inspect.signature(orig_fn) if npos is not None else None
    except (TypeError, ValueError):
        sig = None

    @functools.wraps(orig_fn)
    def wrapped(*args, **kwargs):
        proxy = _find_proxy(args, kwargs)
        if proxy is None:
            return orig_fn(*args, **kwargs)
        if as_method and len(args) == 1 and not kwargs:
            return proxy.tracer.create_proxy("call_method", name, args, {})
        if sig is not None:
            try:
                bound = sig.bind(*args, **kwargs)
            except TypeError:
                pass
            else:
                bound.apply_defaults()
                values = list(bound.arguments.items())
                args = tuple(v for _, v in values[:npos])
                kwargs = dict(values[npos:])
        return proxy.tracer.create_proxy("call_function", orig_fn, args, kwargs)

    return wrapped


_EMBER_PATCHES: list | None = None
_orig_to_wrapper: dict[int, Callable] = {}


def _ember_function_patches() -> list:
    """[(namespace dict, name, original, wrapper)] for ember's public functions (built once)."""
    global _EMBER_PATCHES
    if _EMBER_PATCHES is not None and any(
        ns.get(name) is not orig for ns, name, orig, _ in _EMBER_PATCHES
    ):
        # the namespaces changed since (ember.overrides installs its own wrappers)
        _EMBER_PATCHES = None
        from ember.fx import node as _node

        _node._refresh_public_names()
    if _EMBER_PATCHES is None:
        import ember
        import ember.fft
        import ember.linalg
        import ember.nn.functional
        import ember.special

        skip = {"is_tensor", "is_storage", "is_grad_enabled", "typename", "set_grad_enabled"}
        patches = []
        for mod in (ember, ember.nn.functional, ember.linalg, ember.fft, ember.special):
            functional = mod is ember.nn.functional
            for name, value in list(vars(mod).items()):
                if name.startswith("__") or name in skip:
                    continue
                if not isinstance(value, (types.FunctionType, types.BuiltinFunctionType)):
                    continue
                if functional:
                    wrapper = _create_functional_wrapper(value, name)
                else:
                    wrapper = _create_wrapped_func(value, mark_wrapped=False)
                patches.append((vars(mod), name, value, wrapper))
                _wrapper_to_orig[id(wrapper)] = value
                _orig_to_wrapper.setdefault(id(value), wrapper)
        _EMBER_PATCHES = patches
    return _EMBER_PATCHES


# Tensor operators called with a Proxy operand record the method torch records
_TENSOR_DUNDERS = {
    "__add__": "add", "__sub__": "sub", "__mul__": "mul", "__truediv__": "div",
    "__floordiv__": "floor_divide", "__mod__": "remainder", "__pow__": "pow",
    "__matmul__": "matmul", "__and__": "bitwise_and", "__or__": "bitwise_or",
    "__xor__": "bitwise_xor", "__lshift__": "bitwise_left_shift",
    "__rshift__": "bitwise_right_shift", "__eq__": "eq", "__ne__": "ne", "__lt__": "lt",
    "__le__": "le", "__gt__": "gt", "__ge__": "ge", "__getitem__": "__getitem__",
}  # fmt: skip


def _create_wrapped_method(orig: Callable, name: str) -> Callable:
    """A stand-in for the Tensor method ``orig`` recording a call_method node when one of
    its arguments is a Proxy (``weight.add(proxy)``, ``constant * proxy``)."""

    @functools.wraps(orig)
    def wrapped(self, *args, **kwargs):
        if args or kwargs:
            proxy = _find_proxy(args, kwargs)
            if proxy is not None:
                return proxy.tracer.create_proxy("call_method", name, (self,) + args, kwargs)
        return orig(self, *args, **kwargs)

    return wrapped


def _tensor_method_patches() -> list[tuple[str, Callable]]:
    from ember._core.tensor import Tensor

    out = []
    seen: set[str] = set()
    for klass in Tensor.__mro__[:-1]:
        for attr, value in vars(klass).items():
            if attr in seen:
                continue
            seen.add(attr)
            if attr.startswith("_") and attr not in _TENSOR_DUNDERS:
                continue
            if not isinstance(value, (types.FunctionType, types.BuiltinFunctionType)):
                continue
            out.append((attr, _create_wrapped_method(value, _TENSOR_DUNDERS.get(attr, attr))))
    return out


class _Patcher:
    """Applies patches and undoes them, newest first."""

    def __init__(self) -> None:
        self.patches_made: list[tuple[Any, str, Any, bool]] = []  # (where, name, old, had)
        self.visited: set[int] = set()

    def patch(self, frame_dict: dict, name: str, new_fn: Any) -> None:
        had = name in frame_dict
        self.patches_made.append((frame_dict, name, frame_dict.get(name), had))
        frame_dict[name] = new_fn

    def patch_method(self, cls: type, name: str, new_fn: Any) -> None:
        had = name in cls.__dict__
        self.patches_made.append((cls, name, cls.__dict__.get(name), had))
        setattr(cls, name, new_fn)

    def visit_once(self, thing: Any) -> bool:
        if id(thing) in self.visited:
            return False
        self.visited.add(id(thing))
        return True

    def __enter__(self) -> _Patcher:
        return self

    def __exit__(self, *exc) -> None:
        while self.patches_made:
            where, name, old, had = self.patches_made.pop()
            if isinstance(where, dict):
                if had:
                    where[name] = old
                else:
                    where.pop(name, None)
            elif had:
                setattr(where, name, old)
            else:
                delattr(where, name)
        self.visited.clear()


def _autowrap_check(patcher: _Patcher, frame_dict: dict, wrappers: dict[int, Callable]) -> None:
    """Patch the names in ``frame_dict`` bound to functions that must be recorded."""
    if patcher.visit_once(frame_dict):
        for name, value in list(frame_dict.items()):
            if not name.startswith("_") and callable(value):
                w = wrappers.get(id(value))
                if w is not None and w is not value:
                    patcher.patch(frame_dict, name, w)


class Tracer(TracerBase):
    """Records the operations of a ``forward`` (or function) run on Proxies into a Graph.

    Override :meth:`is_leaf_module` to keep more (or fewer) modules whole, or
    :meth:`call_module`, :meth:`create_arg`... to change what is recorded."""

    def __init__(
        self,
        autowrap_modules: tuple = (math,),
        autowrap_functions: tuple[Callable, ...] = (),
        param_shapes_constant: bool = False,
    ) -> None:
        super().__init__()
        # the public callables of the autowrap modules, and the functions named: recorded as
        # calls when the traced code calls them
        wrapped = {
            id(value): value
            for m in autowrap_modules
            for key, value in vars(m).items()
            if callable(value) and key[:1] != "_"
        }
        wrapped.update((id(f), f) for f in autowrap_functions)
        self._autowrap_functions = wrapped
        self._autowrap_function_ids = set(wrapped)
        self._autowrap_search = list(autowrap_modules)
        self.param_shapes_constant = param_shapes_constant
        self.submodule_paths: dict | None = None
        self.root_module_name = ""
        self.module_stack: OrderedDict = OrderedDict()
        self.num_calls: dict[str, int] = {}
        self.node_name_to_scope: dict[str, tuple[str, type]] = {}

    _qualname_counter: dict[str, int] = {}

    def get_fresh_qualname(self, prefix: str) -> str:
        """Return a fresh attribute name of the root starting with ``prefix``."""
        i = 0
        while hasattr(self.root, f"{prefix}{i}"):
            i += 1
        return f"{prefix}{i}"

    def create_arg(self, a: Any) -> Argument:
        """Parameters, buffers and submodules become get_attr nodes; other tensors are
        stored on the root as ``_tensor_constant<N>``."""
        from ember._core.tensor import Tensor
        from ember.nn import Module, Parameter

        if isinstance(a, Parameter):
            path = _path_of(a, self.root.named_parameters())
            if path is None:
                raise NameError("parameter is not a member of this module")
            return self.create_node("get_attr", path, (), {})
        owned = None
        if isinstance(a, Tensor):
            owned = _path_of(a, self.root.named_buffers())
        elif isinstance(a, Module):
            owned = _path_of(a, self.root.named_modules())
        if owned is not None:  # a buffer or a submodule of the root: read it from there
            return self.create_node("get_attr", owned, (), {})
        if isinstance(a, tuple) and hasattr(a, "_fields"):  # a namedtuple: rebuilt by a call
            fields = tuple(map(self.create_arg, a))
            return self.create_node("call_function", type(a), fields, {})
        if isinstance(a, Tensor):
            # another tensor is a constant of the traced code: stored on the root, once
            if id(a) not in self.tensor_attrs:
                attr = self.get_fresh_qualname("_tensor_constant")
                setattr(self.root, attr, a)
                self.tensor_attrs[id(a)] = attr
            return self.create_node("get_attr", self.tensor_attrs[id(a)], (), {})
        return super().create_arg(a)

    def is_leaf_module(self, m, module_qualified_name: str) -> bool:
        """Return True for modules recorded whole as call_module (ember.nn's, not Sequential)."""
        from ember.nn import Sequential

        return is_ember_module(m.__module__, ".nn") and not isinstance(m, Sequential)

    def path_of_module(self, mod) -> str:
        """Return the qualified name of ``mod`` in the root module."""
        if self.submodule_paths:
            path = self.submodule_paths.get(mod)
        else:
            path = _path_of(mod, self.root.named_modules())
        if path is None:
            raise NameError("module is not installed as a submodule")
        return path

    def call_module(self, m, forward: Callable, args: tuple, kwargs: dict) -> Any:
        """Record a call_module node for a leaf module, else trace through ``forward``."""
        path = self.path_of_module(m)
        # nn_module_stack keys: the path, then "path@1", "path@2"... for later calls
        seen = self.num_calls.get(path, 0)
        self.num_calls[path] = seen + 1
        self.module_stack[f"{path}@{seen}" if seen else path] = (path, type(m))
        try:
            if self.is_leaf_module(m, path):
                return self.create_proxy("call_module", path, args, kwargs)
            return forward(*args, **kwargs)
        finally:
            self.module_stack.popitem(last=True)

    def getattr(self, attr: str, attr_val: Any, parameter_proxy_cache: dict) -> Any:
        """Return a get_attr Proxy for a parameter or buffer of the root, else ``attr_val``."""
        from ember._core.tensor import Tensor
        from ember.nn import Parameter

        def cached_proxy(path: str) -> Proxy:
            # one get_attr node per attribute and trace
            if path not in parameter_proxy_cache:
                make = None
                if self.param_shapes_constant:  # shapes answered from the tensor itself

                    def make(node: Node) -> Proxy:
                        return ParameterProxy(self, node, path, attr_val)

                parameter_proxy_cache[path] = self.create_proxy(
                    "get_attr", path, (), {}, proxy_factory_fn=make
                )
            return parameter_proxy_cache[path]

        path = None
        if isinstance(attr_val, Parameter):
            path = _path_of(attr_val, self.root.named_parameters())
        if path is None and self.proxy_buffer_attributes and isinstance(attr_val, Tensor):
            path = _path_of(attr_val, self.root.named_buffers())
        return attr_val if path is None else cached_proxy(path)

    def create_args_for_root(self, root_fn: Callable, is_module: bool, concrete_args=None):
        """Create the placeholder nodes of ``root_fn``'s signature."""
        fn = inspect.unwrap(root_fn)
        sig = inspect.signature(fn)
        kinds = inspect.Parameter
        params = list(sig.parameters.values())
        named = [p.name for p in params if p.kind not in (kinds.VAR_POSITIONAL, kinds.VAR_KEYWORD)]
        star = [p.name for p in params if p.kind is kinds.VAR_POSITIONAL]
        stars = [p.name for p in params if p.kind is kinds.VAR_KEYWORD]
        # placeholders: the named parameters (keyword-only ones after the positional ones),
        # then *args, then **kwargs, as the code object lists them
        named.sort(key=lambda n: sig.parameters[n].kind is kinds.KEYWORD_ONLY)
        args: list[Any] = []
        if is_module:
            if not named:
                raise RuntimeError("``self`` argument cannot be part of *args expansion!")
            named = named[1:]
            args.append(self.root)
        if isinstance(concrete_args, tuple):
            if len(named) != len(concrete_args):
                raise RuntimeError(
                    f"Tracing expected {len(named)} arguments but got "
                    f"{len(concrete_args)} concrete arguments"
                )
            concrete_args = dict(zip(named, concrete_args))
        # the values given for named parameters, as one dict (the star parameters take none)
        given = dict(concrete_args or {})
        args.extend(self._proxy_placeholder(name, given, sig, fn) for name in named)
        args.extend(self._proxy_placeholder("*" + n, {}, sig, fn) for n in star)
        args.extend(self._proxy_placeholder("**" + n, {}, sig, fn) for n in stars)
        if star or stars or any(sig.parameters[n].kind is kinds.KEYWORD_ONLY for n in named):
            root_fn = _patch_function(root_fn, len(args))
        return root_fn, args

    def _proxy_placeholder(self, name: str, given: dict, sig, fn) -> Any:
        if name in given:
            value = given[name]
            param = sig.parameters[name]
            default = () if param.default is inspect.Parameter.empty else (param.default,)
            out = self.create_proxy("placeholder", f"{name}_1", default, {})
            if isinstance(value, PHBase):
                return out
            if type(value) in (bool, int, float, str, complex):
                self.create_proxy(
                    "call_function",
                    _assert,
                    (
                        out == value,
                        f"{name} has been specialized to have value {value} but got another value",
                    ),
                    {},
                )
            elif value is None:
                self.create_proxy(
                    "call_function",
                    _assert_is_none,
                    (
                        out,
                        f"{name} has been specialized to have value None but got another value",
                    ),
                    {},
                )
            else:
                warnings.warn(
                    f"Was not able to add assertion to guarantee correct input {name} to "
                    "specialized function. It is up to the user to make sure that your inputs "
                    "match the inputs you specialized the function with.",
                    stacklevel=3,
                )
            return value
        if name[0] == "*":
            default = ()
        else:
            param = sig.parameters[name]
            default = () if param.default is inspect.Parameter.empty else (param.default,)
        return self.create_proxy(
            "placeholder", name, default, {}, type_expr=fn.__annotations__.get(name, None)
        )

    def trace(self, root, concrete_args: dict[str, Any] | None = None) -> Graph:
        """Trace ``root`` (an nn.Module or a function) and return its Graph."""
        global _is_fx_tracing_flag
        from ember.nn import Module

        old_flag = _is_fx_tracing_flag
        _is_fx_tracing_flag = True
        try:
            if isinstance(root, Module):
                self.root = root
                # the method traced is looked up on the class: its function takes self
                fn = getattr(type(root), self.traced_func_name, None)
                if fn is None:
                    raise AssertionError(
                        f"traced_func_name={self.traced_func_name} doesn't exist in "
                        f"{type(root).__name__}"
                    )
                self.root_module_name = root._get_name()
                self.submodule_paths = {}
                for path, sub in root.named_modules():
                    self.submodule_paths[sub] = path
            else:
                self.root = Module()
                fn = root
            self.graph = Graph(tracer_cls=type(self))
            self.tensor_attrs: dict[int, str] = {}

            def collect_tensor_attrs(m, prefix: list[str]) -> None:
                from ember._core.tensor import Tensor

                for k, v in m.__dict__.items():
                    if isinstance(v, Tensor):
                        self.tensor_attrs[id(v)] = ".".join(prefix + [k])
                for k, v in m.named_children():
                    collect_tensor_attrs(v, prefix + [k])

            collect_tensor_attrs(self.root, [])
            if not isinstance(fn, types.FunctionType):
                raise AssertionError(f"Expected FunctionType, got {type(fn)}")
            fn_globals = fn.__globals__
            fn, args = self.create_args_for_root(fn, isinstance(root, Module), concrete_args)

            parameter_proxy_cache: dict[str, Proxy] = {}
            orig_getattr = Module.__getattr__
            orig_call = Module.__call__
            ember_patches = _ember_function_patches()
            wrappers = {id(orig): w for _, _, orig, w in ember_patches}
            for fid, f in self._autowrap_functions.items():
                wrappers.setdefault(fid, _create_wrapped_func(f))

            def module_getattr_wrapper(mod, attr: str) -> Any:
                attr_val = orig_getattr(mod, attr)
                return self.getattr(attr, attr_val, parameter_proxy_cache)

            def module_call_wrapper(mod, *args, **kwargs):
                def forward(*args, **kwargs):
                    return orig_call(mod, *args, **kwargs)

                fwd = getattr(mod, "forward", mod)
                _autowrap_check(patcher, getattr(fwd, "__globals__", {}), wrappers)
                return self.call_module(mod, forward, args, kwargs)

            with _Patcher() as patcher:
                patcher.patch_method(Module, "__getattr__", module_getattr_wrapper)
                patcher.patch_method(Module, "__call__", module_call_wrapper)
                _patch_wrapped(patcher)
                for ns, name, _orig, wrapper in ember_patches:
                    patcher.patch(ns, name, wrapper)
                from ember._core.tensor import Tensor

                for name, wrapper in _tensor_method_patches():
                    patcher.patch_method(Tensor, name, wrapper)
                _autowrap_check(patcher, fn_globals, wrappers)
                for module in self._autowrap_search:
                    _autowrap_check(patcher, module.__dict__, wrappers)
                ann = getattr(inspect.unwrap(fn), "__annotations__", {})
                self.create_node(
                    "output",
                    "output",
                    (self.create_arg(fn(*args)),),
                    {},
                    type_expr=ann.get("return", None),
                )
            self.submodule_paths = None
        finally:
            _is_fx_tracing_flag = old_flag
        return self.graph


def _patch_function(fn: types.FunctionType, nargs: int) -> types.FunctionType:
    """A copy of ``fn`` taking its *args/**kwargs as plain positional arguments."""
    co = fn.__code__
    co_flags = co.co_flags & ~(inspect.CO_VARARGS | inspect.CO_VARKEYWORDS)
    new_code = co.replace(co_flags=co_flags, co_argcount=nargs, co_kwonlyargcount=0)
    return types.FunctionType(new_code, fn.__globals__, fn.__name__, fn.__defaults__,
                              fn.__closure__)  # fmt: skip


def wrap(fn_or_name: str | Callable) -> str | Callable:
    """Record calls of the module-level function ``fn_or_name`` as call_function nodes
    instead of tracing through them. Call it at the top level of a module."""
    if isinstance(fn_or_name, str):
        fn_name = fn_or_name
    elif callable(fn_or_name):
        fn_name = fn_or_name.__name__
    else:
        raise RuntimeError(
            "Unsupported type for global function! Must be either a callable or string name"
        )
    frame = inspect.currentframe().f_back
    if frame.f_code.co_name != "<module>":
        raise NotImplementedError("wrap must be called at the top level of a module")
    _wrap_sites[(id(frame.f_globals), fn_name)] = frame.f_globals
    return fn_or_name


def symbolic_trace(root, concrete_args: dict[str, Any] | None = None):
    """Trace ``root`` (an nn.Module or function) and return a :class:`GraphModule`."""
    from ember.fx.graph_module import GraphModule

    tracer = Tracer()
    graph = tracer.trace(root, concrete_args)
    # a function names the graph module after itself, a module after its class (an instance
    # has no __name__ of its own)
    return GraphModule(tracer.root, graph, getattr(root, "__name__", type(root).__name__))


has_side_effect(_assert)  # (torch._assert: traced calls are kept by dead code elimination)


@wrap
def _assert_is_none(value: Any, msg: str) -> None:
    assert value is None, msg


has_side_effect(_assert_is_none)

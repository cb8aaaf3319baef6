"""``jit.trace``'s recorder: an op-table observer building the IR (``ember.jit.ir``).

Every op-table call becomes a node (``_aten.record_op`` gives torch's kind and positional
arguments); composites that torch records as one node (``F.linear``...) announce themselves
(``registry.composite``) and hide the ops inside. A module's parameters and buffers are read
through ``prim::GetAttr`` chains from ``%self``; other tensors the program reads are
constants. Values are named as torch's tracer names them: graph inputs by the function's
argument names, other values by the Python local that holds them when they are next used.

The tracing state lives here too, shared by ``jit.trace`` and what traces through it (the
ONNX exporter, tensorboard's ``add_graph``): the stack of active tracers (``_TRACING``),
``is_tracing``, ``TracerWarning`` and the guards warning when a traced tensor becomes a
Python value.
"""

from __future__ import annotations

import contextlib
import inspect
import os
import sys
import warnings

import numpy as np

import ember
from ember._core.tensor import Tensor, _wrap
from ember._ops import registry
from ember.jit import _aten
from ember.jit import ir as IR
from ember.jit._names import torch_module

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


def _leak_message(what: str) -> str:
    return (
        f"Converting a tensor to {what} might cause the trace to be incorrect. We can't record "
        "the data flow of Python values, so this value will be treated as a constant in the "
        "future. This means that the trace might not generalize to other inputs!"
    )


def _leak_guard(name: str, original):
    what = _LEAKS[name]

    def guarded(self, *args, **kwargs):
        tracer = _TRACING[-1] if _TRACING else None
        if tracer is not None and tracer.is_traced(self):
            warnings.warn(_leak_message(what), TracerWarning, stacklevel=2)
        return original(self, *args, **kwargs)

    guarded.__name__ = getattr(original, "__name__", name)
    guarded.__doc__ = original.__doc__
    return guarded


# what torch's tracer says when user code reads a traced tensor's shape through Python
_SHAPE_LEAKS = {
    "__len__": "Using len to get tensor shape might cause the trace to be incorrect. "
    "Recommended usage would be tensor.shape[0]. Passing a tensor of different shape might "
    "lead to errors or silently give incorrect results.",
    "__iter__": "Iterating over a tensor might cause the trace to be incorrect. Passing a "
    "tensor of different shape won't change the number of iterations executed (and might "
    "lead to errors or silently give incorrect results).",
}

_TENSOR_CONSTANT = (
    "torch.tensor results are registered as constants in the trace. You can safely ignore "
    "this warning if you use this function to create tensors out of constant variables that "
    "would be the same every time you call this function. In any other case, this might "
    "cause the trace to be incorrect."
)


def _shape_guard(name: str, original):
    def guarded(self, *args):
        tracer = _TRACING[-1] if _TRACING else None
        if tracer is not None and tracer.is_traced(self) and _user_code(sys._getframe(1)):
            warnings.warn(_SHAPE_LEAKS[name], TracerWarning, stacklevel=2)
        return original(self, *args)

    guarded.__name__ = name
    guarded.__doc__ = original.__doc__
    return guarded


def _tensor_guard(original):
    def tensor(*args, **kwargs):
        if _TRACING and _user_code(sys._getframe(1)):
            warnings.warn(_TENSOR_CONSTANT, TracerWarning, stacklevel=2)
        return original(*args, **kwargs)

    tensor.__name__ = original.__name__
    tensor.__doc__ = original.__doc__
    tensor.__wrapped__ = original
    return tensor


@contextlib.contextmanager
def _leak_guards():
    """Warn, while tracing, when a traced tensor becomes a Python value (as torch does)."""
    patches = [(Tensor, name, _leak_guard(name, getattr(Tensor, name))) for name in _LEAKS]
    patches += [(Tensor, name, _shape_guard(name, getattr(Tensor, name))) for name in _SHAPE_LEAKS]
    patches.append((ember, "tensor", _tensor_guard(ember.tensor)))
    saved = [(owner, name, owner.__dict__.get(name)) for owner, name, _ in patches]
    for owner, name, new in patches:
        setattr(owner, name, new)
    try:
        yield
    finally:
        for owner, name, original in reversed(saved):
            if original is None:
                delattr(owner, name)
            else:
                setattr(owner, name, original)


__all__ = ["trace_to_graph", "module_type"]

_EMBER_DIR = os.path.dirname(os.path.abspath(ember.__file__)) + os.sep


def module_type(m) -> IR.ClassType:
    """Return the class type torch gives a module (``__torch__.torch.nn.modules.linear.Linear``)."""
    original = m.__dict__.get("_original") if hasattr(m, "__dict__") else None
    cls = type(original if original is not None else m)  # a traced child: its module's class
    mod = torch_module(cls)
    name = cls.__qualname__.rsplit("<locals>.", 1)[-1]  # torch drops a function's locals
    qual = name if mod == "__main__" else f"{mod}.{name}"
    return IR.ClassType("__torch__." + qual)


def _user_frame():
    f = sys._getframe(2)
    while f is not None and not _user_code(f):
        f = f.f_back
    return f


class IRTracer:
    """The observer (``enter``/``exit`` and the composite pair) filling a ``Graph``."""

    def __init__(self, graph: IR.Graph, root=None, self_value=None):
        self.g = graph
        self.values: dict = {}  # id(tensor) -> (tensor, Value, version)
        self.suppress = 0
        self.self_value = self_value
        self.attr_paths: dict = {}  # id(tensor) -> ("fc", "weight")
        self.module_values: dict = {(): self_value}
        if root is not None:
            for name, t in list(root.named_parameters()) + list(root.named_buffers()):
                self.attr_paths.setdefault(id(t), tuple(name.split(".")))
        self.root = root
        self.scopes = [""]
        self.module_names = {}
        if root is not None:
            self.module_names = {id(m): name for name, m in root.named_modules() if name}
            for name, m in root.named_modules():
                original = m.__dict__.get("_original")
                if name and original is not None:  # a script/traced child runs its module
                    self.module_names[id(original)] = name
        # per-call recording (module traces): which call each node ran in; parameters are
        # stand-ins from ``attr_graph`` until the calls are turned into per-module graphs
        self.pending_sizes: list = []  # traced sizes passed to the op being recorded
        self.param_names: dict = {}  # parameters named where an op used them (see _name_params)
        self.calls = None
        if root is not None:
            from ember.jit._calls import Call

            self.calls = [Call(root, ())]
            self.attr_graph = IR.Graph()
            self.attr_values: dict = {}  # id(stand-in Value) -> tensor path
            self.node_call: dict = {}

    # --- module scopes (``scope: __module.fc``), from global forward hooks
    def pre_hook(self, module, args):
        name = self.module_names.get(id(module))
        if name is None:
            self.scopes.append(self.scopes[-1])
        else:
            own = f"__module.{name}"
            self.scopes.append(f"{self.scopes[-1]}/{own}" if self.scopes[-1] else own)
            if not self.suppress:
                self._name_args(module, args)
        if self.calls is not None:
            parent = self.calls[-1]
            if name is None or self.suppress or parent.path == tuple(name.split(".")):
                self.calls.append(parent)  # (a script/traced child then the module it runs)
            else:
                from ember.jit._calls import Call

                call = Call(module, tuple(name.split(".")), parent)
                parent.items.append(("call", call))
                self.calls.append(call)

    def _name_args(self, module, args) -> None:
        """Name unnamed values passed to a submodule after its ``forward``'s parameters (as
        torch's tracer does: ``%input`` for what goes into ``nn.Linear``)."""
        try:
            params = list(inspect.signature(module.forward).parameters)
        except (TypeError, ValueError):
            return
        if any(True for _ in module.children()):
            return  # the value is named where a leaf module (or an op) first takes it
        for pname, a in zip(params, args):
            entry = self.values.get(id(a)) if isinstance(a, Tensor) else None
            if entry is None or entry[0] is not a:
                continue
            v = entry[1]
            if not v.hasDebugName() and v.node().kind() not in ("prim::Constant", "prim::GetAttr"):
                v.setDebugName(pname)

    def post_hook(self, module, args, result):
        if len(self.scopes) > 1:
            self.scopes.pop()
        if self.calls is not None and len(self.calls) > 1:
            call = self.calls.pop()
            if call is not self.calls[-1] and result is not None:
                # torch's tracer drops the Nones of a returned tuple; one value left is
                # returned as itself (``(out, None)`` from MultiheadAttention is a Tensor)
                flat = [t for t in _flatten(result) if t is not None]
                call.tuple_result = isinstance(result, (tuple, list)) and len(flat) != 1
                call.result = [self.values[id(t)][1] if id(t) in self.values else None
                               for t in flat]  # fmt: skip
                if any(r is None for r in call.result):
                    call.result = None

    def insert(self, n):
        """Insert ``n`` in the graph, noting the call it belongs to."""
        self.g.insertNode(n)
        if self.calls is not None:
            if len(self.calls) > 1 and not n.scopeName():
                n.setScope(self.scopes[-1])  # torch scopes a call's constants and lists
            self.calls[-1].items.append(("node", n))
            self.node_call[n] = self.calls[-1]
        return n

    def insert_after(self, n, anchor):
        """Insert ``n`` right after ``anchor`` (in the graph and in its call's items)."""
        n.insertAfter(anchor)
        if self.calls is not None:
            call = self.node_call.get(anchor, self.calls[-1])
            n.setScope(anchor.scopeName())
            at = next((i for i, it in enumerate(call.items) if it[1] is anchor), None)
            if at is None:
                call.items.append(("node", n))
            else:
                call.items.insert(at + 1, ("node", n))
            self.node_call[n] = call
        return n

    def constant(self, value) -> IR.Value:
        return self.insert(self.g.createConstant(value)).output()

    # --- values
    def bind(self, t: Tensor, v: IR.Value) -> None:
        self.values[id(t)] = (t, v, t._vc[0])

    def is_traced(self, t) -> bool:
        entry = self.values.get(id(t))
        return entry is not None and entry[1].node().kind() not in ("prim::Constant",)

    def _getattr(self, path: tuple) -> IR.Value:
        v = self.module_values.get(path)
        if v is not None:
            return v
        parent = self._getattr(path[:-1])
        obj = self.root
        for p in path:
            obj = getattr(obj, p)
        n = self.insert(self.g.create("prim::GetAttr", [parent]))
        n.s_("name", path[-1])
        out = n.output()
        out.setType(module_type(obj) if not isinstance(obj, Tensor) else IR.TensorType())
        out.setDebugName(("_" + path[-1]) if path[-1][0].isdigit() else path[-1])
        if not isinstance(obj, Tensor):
            self.module_values[path] = out
        return out

    def value_of(self, t: Tensor, name: str | None = None, frame=None) -> IR.Value:
        entry = self.values.get(id(t))
        if entry is not None and entry[0] is t:
            v = entry[1]
        elif id(t) in self.attr_paths and self.calls is not None:
            n = self.attr_graph.create("prim::GetAttr", [], 1)
            v = n.output()
            self.attr_values[id(v)] = self.attr_paths[id(t)]
            self.bind(t, v)
            return v
        elif id(t) in self.attr_paths and self.self_value is not None:
            v = self._getattr(self.attr_paths[id(t)])
            self.bind(t, v)
        else:
            v = self.constant(_wrap(np.array(t._data)))  # observers call no ops
            src = self._source(frame)
            v.node().setSourceRange(src)
            self.bind(t, v)
        if not v.hasDebugName() and v.node().kind() != "prim::Constant":
            if name is None and frame is not None:
                name = next((k for k, o in frame.f_locals.items() if o is t and k != "self"), None)
            if name:
                v.setDebugName(name)
        return v

    @staticmethod
    def _source(frame) -> str | None:
        if frame is None:
            return None
        return f"{frame.f_code.co_filename}:{frame.f_lineno}:0"

    def _arg(self, a, src, frame, name=None) -> IR.Value:
        if isinstance(a, Tensor):
            return self.value_of(a, name, frame)
        if isinstance(a, IR.Value):
            return a
        if isinstance(a, (SizeInt, _aten.Scalar)):
            return self._arg(self._converted(a, frame), src, frame)
        if isinstance(a, _aten.Wrapped) and self.pending_sizes:
            size = next((z for z in self.pending_sizes if int(z) == a.value), None)
            if size is not None:  # a traced size used as a tensor operand (torch's)
                self.pending_sizes.remove(size)
                return size.value
        if isinstance(a, _aten.Wrapped):
            x = a.value
            dt = (
                ember.bool
                if isinstance(x, bool)
                else (ember.int64 if isinstance(x, int) else ember.float64)
            )
            v = self.constant(ember.tensor(x, dtype=dt))
            v.node()._wrapped = True
            v.node().setSourceRange(src)
            return v
        if isinstance(a, list):
            elems = [self._arg(e, src, frame) for e in a]
            n = self.insert(self.g.create("prim::ListConstruct", elems))
            tensors = any(isinstance(e, Tensor) for e in a)
            et = IR.TensorType() if tensors else (elems[0].type() if elems else IR.IntType())
            n.output().setType(IR.ListType(et))
            return n.output()
        v = self.constant(a)
        if a is not None:
            v.node().setSourceRange(src)
        return v

    def _converted(self, a, frame):
        """``a`` with its traced sizes turned into ``aten::Int`` (``aten::ScalarImplicit``
        for a ``Scalar``) values: torch's argument parser converts them before the tracer
        records the call's other arguments, so those nodes come first (each right after its
        size's node, without a source range)."""
        if isinstance(a, list):
            return [self._converted(e, frame) for e in a]
        scalar = isinstance(a, _aten.Scalar)
        x = a.value if scalar else a
        if not (isinstance(x, SizeInt) and x.tracer is self):
            return x
        _name_size(x, frame)
        kind, t = (
            ("aten::ScalarImplicit", IR.NumberType()) if scalar else ("aten::Int", IR.IntType())
        )
        n = self.g.create(kind, [x.value])
        n.output().setType(t)
        self.insert_after(n, x.value.node())  # torch puts it right after the size's node
        return n.output()

    def _node(self, kind, args, result, frame, names=None, payload=None, self_=None):
        src = self._source(frame)
        names = names or [None] * len(args)
        args = [self._converted(a, frame) for a in args]
        ins = [self._arg(a, src, frame, nm) for a, nm in zip(args, names)]
        n = self.insert(self.g.create(kind, ins, 0))
        n.setSourceRange(src)
        n.setScope(self.scopes[-1])
        if payload is not None:
            n._payload = payload
        outs = [self_] if self_ is not None else (
            list(result) if isinstance(result, (tuple, list)) else [result]
        )  # fmt: skip
        for r in outs:
            if isinstance(r, Tensor):
                t = IR.TensorType.create_from_tensor(r)
                if kind == "aten::_convolution":
                    # torch records the convolution below autograd: its type says no grad
                    t = IR.TensorType(r.dtype, t._sizes, t._strides, False, t._device)
                v = n.addOutput(t)
                self.bind(r, v)
            else:
                n.addOutput(IR.constant_type(r) if _plain(r) else IR.AnyType())
        return n

    # --- the op observer
    def enter(self, op, inputs, params, self_):
        if self.suppress:
            return None
        return (op, inputs, params, self_, _user_frame())

    def exit(self, token, result):
        if token is None or result is None:
            return
        op, inputs, params, self_, frame = token
        rec = _aten.record_op(op, inputs, params, self_ is not None)
        if rec is not None:
            kind, args = rec
            if self_ is not None and (not args or args[0] is not self_):
                rec = None
        if rec is None:
            kind, args, payload = _fallback(op, inputs, params, self_)
            n = self._node(kind, args, result, frame, payload=payload, self_=self_)
            # what the op table was called with, for readers of the graph (the ONNX exporter)
            n._op = (op, {k: v for k, v in params.items() if k != "out"}, len(args) - len(inputs))
            if op.name in ("index", "index_put"):
                n._links = self._links(params)
        else:
            self._node(kind, args, result, frame, self_=self_)

    def _links(self, params) -> dict:
        """The index arrays of an indexing op that are a traced tensor's data, or the
        ``nonzero()`` of a traced bool mask: ``{(param, position): ("index", ref) | ("mask",
        ref, ndim)}``, a ``ref`` naming the value so that copies of the graph find it too
        (``_ref``)."""
        traced = {id(t._data): (t, v) for t, v, _ in self.values.values() if self.is_traced(t)}
        links = {}
        for key, value in params.items():
            if not isinstance(value, tuple):
                continue
            for j, a in enumerate(value):
                if isinstance(a, np.ndarray) and id(a) in traced:
                    links[(key, j)] = ("index", _ref(traced[id(a)][1]))
            for j, a in enumerate(value):
                if (key, j) in links or not isinstance(a, np.ndarray):
                    continue
                for t, v in traced.values():
                    m = t._data
                    if m.dtype != np.bool_ or m.ndim == 0 or j + m.ndim > len(value):
                        continue
                    parts = value[j : j + m.ndim]
                    if all(isinstance(p, np.ndarray) and p.shape == (int(m.sum()),) for p in parts):
                        if all(np.array_equal(p, q) for p, q in zip(parts, np.nonzero(m))):
                            links[(key, j)] = ("mask", _ref(v), m.ndim)
                            break
        return links

    # --- composites
    def enter_composite(self, kind, fn, args, kwargs):
        if self.suppress:
            return None
        try:
            bound = inspect.signature(fn).bind(*args, **kwargs)
        except TypeError:
            return None
        given = set(bound.arguments)
        bound.apply_defaults()
        a = dict(bound.arguments)
        if kind in _aten.FACTORIES:
            if not _user_code(_caller_of_composite()):
                return None  # ember's own code may write into what it makes: a constant
            a["_given"] = given
        node_args = _aten.record_composite(kind, a)
        if node_args is None:
            return None
        # names for inputs: the function's parameter names, as torch's frame lookup finds them
        names = []
        for x in node_args:
            key = next((k for k, o in a.items() if o is x and isinstance(x, Tensor)), None)
            names.append(key)
        frame = _user_frame()
        if kind == "aten::batch_norm" and a.get("training") and self.calls is not None:
            self._batch_norm_training(a["input"], frame)
        self.suppress += 1
        return (kind, node_args, names, frame)

    def _batch_norm_training(self, x, frame) -> None:
        """What torch records of a training ``nn.BatchNormNd`` before its ``aten::batch_norm``
        beyond the layer's ``num_batches_tracked.add_(1)`` (an op call, recorded as any): the
        size checks of ``F.batch_norm`` (dead nodes that take their numbers)."""
        if isinstance(x, Tensor) and x.dim() > 2:
            sizes = [self.size_of(x, d, frame) for d in range(x.dim())]
            prod = sizes[0]
            for z in sizes[2:]:
                prod = prod * z
            prod._record(1, "aten::eq", int(prod) == 1)  # "more than 1 value per channel"

    def begin(self, kind, node_args, names=None):
        """Start recording ``kind`` with ``node_args`` as the user gave them (see ``_given``);
        ``names``: the callee's parameter names, for values not named yet (``%input``)."""
        self.suppress += 1
        names = list(names or []) + [None] * (len(node_args) - len(names or []))
        return (kind, node_args, names, _user_frame())

    def size_of(self, t: Tensor, dim: int, frame) -> SizeInt:
        """``t.size(dim)`` from user code: ``aten::size`` then ``prim::NumToTensor``, as torch's
        tracer records a size it cannot know to be constant."""
        n = t._data.shape[dim]
        size = self._node("aten::size", [t, dim], n, frame)
        num = self.insert(self.g.create("prim::NumToTensor", [size.output()]))
        num.output().setType(IR.TensorType(ember.int64, None, None, None, "cpu"))
        num.setScope(self.scopes[-1])
        out = SizeInt(n)
        out.tracer, out.value = self, num.output()
        return out

    def exit_composite(self, token, result):
        if token is None:
            return
        self.suppress -= 1
        if result is None:
            return
        kind, args, names, frame = token
        if self.calls is not None and kind not in _UNNAMED_PARAMS:
            self._name_params(args, names)
        return self._node(kind, args, result, frame, names=names)

    def _name_params(self, args, names) -> None:
        """Torch's tracer names a module's parameters after the Python locals holding them
        where the op is called (``weight`` in a conv's ``_conv_forward``, in ``F.batch_norm``),
        before the module calls are turned into methods; the names only move the suffixes of
        the ``prim::GetAttr`` names made later (``%weight.5``)."""
        for a, nm in zip(args, names):
            if not nm or not isinstance(a, Tensor) or id(a) not in self.attr_paths:
                continue
            entry = self.values.get(id(a))
            key = id(entry[1]) if entry is not None else id(a)
            if key in self.param_names:
                continue
            v = self.g.create("prim::Param", [], 1).output()
            self.g._unique -= 1  # a name only: torch's parameter values are numbered already
            v.setDebugName(nm)
            self.param_names[key] = v


def _ref(v: IR.Value) -> tuple:
    """``("input", i)`` for the graph's i-th input, else ``(token, i)`` for the i-th output of
    the node holding ``token`` (node attributes travel with copies of the node)."""
    n = v.node()
    if n.kind() == "prim::Param":
        return ("input", v.offset())
    token = n.__dict__.setdefault("_ref", object())
    return (token, v.offset())


class SizeInt(int):
    """A size read from a traced tensor by user code: an ``int`` that remembers its node.
    Arithmetic on it is recorded as torch records it (``aten::mul`` of the size's 0-d Long
    tensor), so sizes computed from sizes follow later inputs too."""

    tracer = None
    value = None

    def _record(self, other, kind, result, alpha=False):
        tracer = self.tracer
        if tracer is None or tracer is not _tracer_now() or not isinstance(other, int):
            return result
        frame = _user_frame()
        src = tracer._source(frame)
        for x in (self, other):
            if isinstance(x, SizeInt) and x.tracer is tracer:
                _name_size(x, frame)
        if isinstance(other, SizeInt) and other.tracer is tracer:
            rhs = other.value
        else:
            rhs = tracer._arg(_aten.Wrapped(int(other)), src, frame)
        ins = [self.value, rhs] + ([tracer._arg(1, src, frame)] if alpha else [])
        n = tracer.insert(tracer.g.create(kind, ins))
        n._payload = _SIZE_OPS[kind]
        n.output().setType(IR.TensorType(ember.int64, (), (), False, "cpu"))
        n.setSourceRange(src)
        n.setScope(tracer.scopes[-1])
        out = SizeInt(result)
        out.tracer, out.value = tracer, n.output()
        return out

    def __add__(self, other):
        return _size_arith(self, other, "aten::add", lambda a, b: a + b, True)

    __radd__ = __add__

    def __sub__(self, other):
        return _size_arith(self, other, "aten::sub", lambda a, b: a - b, True)

    def __rsub__(self, other):
        return _size_arith(self, other, "aten::rsub", lambda a, b: b - a, True)

    def __mul__(self, other):
        return _size_arith(self, other, "aten::mul", lambda a, b: a * b, False)

    __rmul__ = __mul__

    def __floordiv__(self, other):
        return _size_arith(self, other, "aten::floor_divide", lambda a, b: a // b, False)

    def __int__(self):
        _warn_size_leak(self, "a Python integer")
        return int.__int__(self)

    def __float__(self):
        _warn_size_leak(self, "a Python float")
        return int.__float__(self)


def _warn_size_leak(size, what: str) -> None:
    """torch's warning when user code turns a traced size into a Python number (its size is
    a 0-d tensor there): the number is a constant of the trace."""
    if size.tracer is not None and size.tracer is _tracer_now() and _user_code(sys._getframe(2)):
        warnings.warn(_leak_message(what), TracerWarning, stacklevel=3)


def _size_arith(size, other, kind, fn, alpha):
    if not isinstance(other, int) or isinstance(other, bool):
        return NotImplemented  # floats, tensors: their own operators decide
    return size._record(other, kind, fn(int(size), int(other)), alpha=alpha)


def _name_size(size, frame) -> None:
    v = size.value
    if not v.hasDebugName() and frame is not None:
        local = next((k for k, o in frame.f_locals.items() if o is size), None)
        if local:
            v.setDebugName(local)


def _size_operand(original):
    """A tensor's binary operator: a traced size operand reaches the kernel as a plain int
    (same values as eager) and the node as the size's value (as torch records it)."""

    def method(self, other):
        tracer = _tracer_now()
        if isinstance(other, SizeInt) and tracer is not None and other.tracer is tracer:
            _name_size(other, _user_frame())
            tracer.pending_sizes.append(other)
            try:
                return original(self, int(other))
            finally:
                if other in tracer.pending_sizes:
                    tracer.pending_sizes.remove(other)
        return original(self, other)

    method.__name__ = getattr(original, "__name__", "op")
    return method


def _size_op(fn):
    def run(a, b, *alpha):
        return ember.tensor(fn(int(a), int(b)))

    return run


_SIZE_OPS = {
    "aten::add": _size_op(lambda a, b: a + b),
    "aten::sub": _size_op(lambda a, b: a - b),
    "aten::rsub": _size_op(lambda a, b: b - a),
    "aten::mul": _size_op(lambda a, b: a * b),
    "aten::floor_divide": _size_op(lambda a, b: a // b),
    "aten::eq": _size_op(lambda a, b: a == b),
}


def _tracer_now():
    t = _TRACING[-1] if _TRACING else None
    return t if isinstance(t, IRTracer) and not t.suppress else None


def _given(kind, build, original):
    """Wrap a tensor method so a trace records ``kind`` with the arguments as given (torch's
    ``aten::view(%x, [-1, 4])``, ``aten::softmax(%x, -1)``), not as ember resolves them."""

    def method(*args, **kwargs):
        tracer = _tracer_now()
        if tracer is None:
            return original(*args, **kwargs)
        try:
            node_args = build(*args, **kwargs)
        except TypeError:
            node_args = None
        if node_args is None:
            return original(*args, **kwargs)
        token = tracer.begin(kind, node_args)
        result = None
        try:
            result = original(*args, **kwargs)
        finally:
            tracer.exit_composite(token, result)
        return result

    method.__name__ = getattr(original, "__name__", kind)
    method.__doc__ = getattr(original, "__doc__", None)
    return method


def _shape_arg(shape):
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    if not all(isinstance(e, int) for e in shape):
        return None  # x.view(dtype) and the like
    return list(shape)


def _view(kind):
    def build(x, *shape):
        sizes = _shape_arg(shape)
        return None if sizes is None else [x, sizes]

    return build


def _fn_reshape(x, shape):
    sizes = _shape_arg((shape,))
    return None if sizes is None else [x, sizes]


def _flatten_args(x, start_dim=0, end_dim=-1):
    return [x, int(start_dim), int(end_dim)]


def _softmax_args(x, dim=None, dtype=None, *, _stacklevel=None):
    if dim is None:
        return None
    return [x, dim, None if dtype is None else IR.graph.DTYPE_CODES.get(str(dtype), dtype)]


def _fill_args(x, value):
    if isinstance(value, Tensor) or _plain(value) and value is not None:
        return [x, value]
    return None


def _new_args(full: bool):
    """``aten::new_zeros(self, size, dtype, layout, device, pin_memory)`` (``new_full`` has
    ``fill_value`` after ``size``), where user code calls it."""

    def build(x, *args, size=None, dtype=None, device=None, requires_grad=False, layout=None,
              pin_memory=False):  # fmt: skip
        if not _user_code(sys._getframe(2)) or requires_grad or device is not None:
            return None  # ember's own code may write into what it makes: a constant
        fill = []
        if full:
            size, value = args if size is None else (size, *args)
            if not _plain(value) or value is None:
                return None
            fill = [value]
        elif size is None:
            size = args[0] if len(args) == 1 and isinstance(args[0], (tuple, list)) else args
        if not all(isinstance(e, int) for e in size):
            return None
        return [x, list(size), *fill, IR.graph.DTYPE_CODES.get(str(dtype), dtype), None, None,
                bool(pin_memory)]  # fmt: skip

    return build


def _reduce_args(x, dim=None, keepdim=False, *, dtype=None):
    code = None if dtype is None else IR.graph.DTYPE_CODES.get(str(dtype))
    if dim is None:
        return [x, code]
    dims = [dim] if isinstance(dim, int) else list(dim)
    return [x, dims, bool(keepdim), code]


def _caller_of_composite():
    """The frame calling the composite being entered (past ``registry.composite``'s own)."""
    from ember import overrides
    from ember._ops import meta, unsigned  # their wrappers sit between a factory and its caller

    skip = (registry.__file__, __file__, meta.__file__, unsigned.__file__, overrides.__file__)
    f = sys._getframe(1)
    while f is not None and f.f_code.co_filename in skip:
        f = f.f_back
    return f


def _user_code(frame) -> bool:
    """Whether ``frame`` runs code whose Python a trace sees: the user's, or a library function
    torch writes in Python (``registry.python_level``)."""
    if frame is None:
        return False
    code = frame.f_code
    return not code.co_filename.startswith(_EMBER_DIR) or code in registry.PYTHON_LEVEL


def _size_method(original):
    def size(self, dim=None):
        tracer = _tracer_now()
        frame = sys._getframe(1)
        if tracer is None or not _user_code(frame) or not tracer.is_traced(self):
            return original(self, dim)
        if dim is None:
            return _traced_shape(tracer, self, frame)
        return tracer.size_of(self, self._wrap_dim(dim), frame)

    size.__doc__ = original.__doc__
    return size


def _traced_shape(tracer, t, frame):
    from ember._core.tensor import Size

    return tuple.__new__(Size, [tracer.size_of(t, d, frame) for d in range(t._data.ndim)])


def _shape_property(original):
    def shape(self):
        tracer = _tracer_now()
        frame = sys._getframe(1)
        if tracer is None or not _user_code(frame) or not tracer.is_traced(self):
            return original.fget(self)
        return _traced_shape(tracer, self, frame)

    return property(shape, doc=original.__doc__)


_SIZE_OPERATORS = ("__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__",
                   "__truediv__", "__rtruediv__", "__floordiv__")  # fmt: skip


def _adaptive_avg_pool2d(original):
    """``nn.AdaptiveAvgPool2d`` as torch records it: its Python reads ``input.size()`` (nodes
    that end dead but take their numbers), then one ``aten::adaptive_avg_pool2d``."""
    import ember.nn.functional as F

    def forward(self, input):
        tracer = _tracer_now()
        if tracer is None or not isinstance(input, Tensor) or input.dim() not in (3, 4):
            return original(self, input)
        frame = _user_frame()
        for d in range(input.dim()):
            tracer.size_of(input, d, frame)
        size = self.output_size
        size = list(size) if isinstance(size, (tuple, list)) else [size, size]
        size = [int(input.shape[-2 + i]) if s is None else int(s) for i, s in enumerate(size)]
        token = tracer.begin("aten::adaptive_avg_pool2d", [input, size])
        result = None
        try:
            result = original(self, input)
        finally:
            n = tracer.exit_composite(token, result)
        if n is not None:
            n._payload = lambda x, s: F.adaptive_avg_pool2d(x, s)
        return result

    return forward


# (mode, spatial dims) -> the aten op torch's F.interpolate records
_UPSAMPLE = {
    **{("nearest", n): f"aten::upsample_nearest{n}d" for n in (1, 2, 3)},
    **{("nearest-exact", n): f"aten::_upsample_nearest_exact{n}d" for n in (1, 2, 3)},
    ("linear", 1): "aten::upsample_linear1d",
    ("bilinear", 2): "aten::upsample_bilinear2d",
    ("bicubic", 2): "aten::upsample_bicubic2d",
    ("trilinear", 3): "aten::upsample_trilinear3d",
}


def _interpolate(original):
    """``F.interpolate`` as torch records it: one ``aten::upsample_<mode><n>d(input,
    output_size, [align_corners,] scale_factors)`` whose node resamples whatever input it
    gets (scale factors follow the input's size, as torch's)."""

    def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                    recompute_scale_factor=None, antialias=False):  # fmt: skip
        given = (input, size, scale_factor, mode, align_corners, recompute_scale_factor, antialias)
        tracer = _tracer_now()
        nd = input.dim() - 2 if isinstance(input, Tensor) else 0
        kind = _UPSAMPLE.get((mode, nd))
        if tracer is None or kind is None or antialias or recompute_scale_factor:
            return original(*given)
        if (size is None) == (scale_factor is None):
            return original(*given)  # its error

        def as_list(v, cast):
            if v is None:
                return None
            return [cast(e) for e in v] if isinstance(v, (list, tuple)) else [cast(v)] * nd

        sizes = as_list(size, lambda e: e if isinstance(e, SizeInt) else int(e))
        scales = as_list(scale_factor, float)
        nearest = mode.startswith("nearest")
        corners = [] if nearest else [bool(align_corners)]
        token = tracer.begin(kind, [input, sizes, *corners, scales], ["input"])
        result = None
        try:
            result = original(*given)
        finally:
            n = tracer.exit_composite(token, result)
        if n is not None:

            def run(x, out, *rest):
                ac = None if nearest else rest[0]
                return original(x, out, rest[-1], mode, ac)

            n._payload = run
        return result

    interpolate.__doc__ = original.__doc__
    return interpolate


class _as_given:
    """While tracing, tensor methods (and ``ember.flatten``/``reshape``) record their
    arguments as given and user code's ``size()``/``shape`` record ``aten::size``."""

    def __enter__(self):
        import ember.nn.functional as F  # (softmax methods live there too)

        T = Tensor
        self.saved = []
        patches = [
            (T, "view", _given("aten::view", _view("view"), T.view)),
            (T, "reshape", _given("aten::reshape", _view("reshape"), T.reshape)),
            (T, "flatten", _given("aten::flatten", _flatten_args, T.flatten)),
            (T, "softmax", _given("aten::softmax", _softmax_args, T.softmax)),
            (T, "log_softmax", _given("aten::log_softmax", _softmax_args, T.log_softmax)),
            (T, "sum", _given("aten::sum", _reduce_args, T.sum)),
            (T, "mean", _given("aten::mean", _reduce_args, T.mean)),
            (T, "fill_", _given("aten::fill_", _fill_args, T.fill_)),
            *[
                (T, k, _given("aten::" + k, _new_args(k == "new_full"), getattr(T, k)))
                for k in ("new_zeros", "new_ones", "new_empty", "new_full")
            ],
            (T, "size", _size_method(T.size)),
            *[(T, op, _size_operand(getattr(T, op))) for op in _SIZE_OPERATORS],
            (T, "shape", _shape_property(T.__dict__["shape"])),
            (ember, "flatten", _given("aten::flatten", _flatten_args, ember.flatten)),
            (
                ember.nn.AdaptiveAvgPool2d,
                "forward",
                _adaptive_avg_pool2d(ember.nn.AdaptiveAvgPool2d.forward),
            ),
            (ember, "reshape", _given("aten::reshape", _fn_reshape, ember.reshape)),
            (F, "interpolate", _interpolate(F.interpolate)),
        ]
        for owner, name, new in patches:
            self.saved.append((owner, name, owner.__dict__.get(name)))
            setattr(owner, name, new)
        return self

    def __exit__(self, *exc):
        for owner, name, old in reversed(self.saved):
            if old is None:
                delattr(owner, name)
            else:
                setattr(owner, name, old)
        return False


# composites torch calls with the module's attributes directly (``F.linear(input,
# self.weight, self.bias)`` in ``nn.Linear.forward``): no local names its parameters
_UNNAMED_PARAMS = ("aten::linear",)


def _plain(x) -> bool:
    return x is None or isinstance(x, (bool, int, float, str))


def _fallback(op, inputs, params, self_):
    """Record an op without a schema here: tensor and plain inputs become node inputs, the
    op and its other parameters ride along for the executor."""
    params = dict(params)
    has_out = "out" in params
    params.pop("out", None)
    args = list(inputs)
    lead = self_ is not None and not any(a is self_ for a in inputs)
    if lead:
        args = [self_, *args]
    inplace = self_ is not None and not op.name.endswith("_")
    kind = f"aten::{op.name}" + ("_" if inplace else "")
    if self_ is None:

        def payload(*a):
            return registry.dispatch(op, tuple(a), params)

    else:
        pos = 0 if lead else next(i for i, x in enumerate(inputs) if x is self_)

        def payload(*a):
            target = a[pos]
            ins = tuple(a[1:]) if lead else tuple(a)
            p = dict(params, out=target._data) if has_out else params
            return registry.dispatch_inplace(op, target, ins, p)

    return kind, args, payload


def _flatten(x) -> list:
    if isinstance(x, (tuple, list)):
        return [e for item in x for e in _flatten(item)]
    return [x]


def trace_to_graph(
    fn, args: tuple, kwargs: dict | None = None, module=None, inline=False, dce=True, strict=True
):
    """Run ``fn`` on the example inputs recording an ``ir.Graph``; return ``(graph, result)``.

    With ``module``, the graph's first input is ``%self.1`` (the module) and its parameters
    and buffers are read from it; submodule calls are ``prim::CallMethod`` nodes unless
    ``inline`` (torch's ``inlined_graph`` form, every op in the one graph). ``dce=False``
    keeps nodes no output uses (the ONNX exporter follows index links to them). A dict
    returned by ``fn`` needs ``strict=False``, as torch's."""
    g = IR.Graph()
    self_value = None
    types = None
    if module is not None:
        from ember.jit._calls import class_types, reserve_for

        types = class_types(module, module_type)
        self_value = g.addInput("self.1", types[()])
        g._unique = reserve_for(module)  # torch's tracer numbers its inputs after these
    tracer = IRTracer(g, module, self_value)
    target = fn.forward if module is not None and fn is module else fn
    try:
        sig = inspect.signature(target).parameters.values()
    except (TypeError, ValueError):
        sig = []
    # inputs past the named positionals (``forward(self, x, *masks)``) are unnamed, as torch's
    params = [p.name for p in sig if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    kwargs = kwargs or {}
    params += [None] * (len(args) - len(params))
    named = list(zip(params, args)) + list(kwargs.items())
    for name, a in named:
        if isinstance(a, Tensor):
            v = g.addInput(name, IR.TensorType.create_from_tensor(a))
            tracer.bind(a, v)
        elif isinstance(a, (tuple, list)) and a and all(isinstance(e, Tensor) for e in a):
            types = [IR.TensorType.create_from_tensor(e) for e in a]
            tt = IR.TupleType(types) if isinstance(a, tuple) else IR.ListType(IR.TensorType())
            v = g.addInput(name, tt)
            kind = "prim::TupleUnpack" if isinstance(a, tuple) else "prim::ListUnpack"
            n = tracer.insert(g.create(kind, [v], 0))
            for e, t in zip(a, types):
                tracer.bind(e, n.addOutput(t))
        else:
            raise RuntimeError(
                f"Type '{type(a).__name__}' cannot be traced. Only Tensors and (possibly "
                "nested) Lists, Dicts, and Tuples of Tensors can be traced"
            )
    from ember.nn.modules.module import (
        register_module_forward_hook,
        register_module_forward_pre_hook,
    )

    hooks = []
    if module is not None:
        hooks = [
            register_module_forward_pre_hook(tracer.pre_hook),
            register_module_forward_hook(tracer.post_hook, always_call=True),
        ]
    registry.add_observer(tracer)
    registry.watch_composites(tracer)
    _TRACING.append(tracer)
    try:
        with _leak_guards() if len(_TRACING) == 1 else _null():
            with _as_given() if len(_TRACING) == 1 else _null():
                if module is not None and getattr(fn, "__self__", None) is module:
                    fn = getattr(module, fn.__func__.__name__)  # as the patches left it
                result = fn(*args, **kwargs)
    finally:
        _TRACING.pop()
        registry.remove_observer(tracer)
        for h in hooks:
            h.remove()
    g.setInsertPoint(g.block())
    out = _output(tracer, g, result, strict)
    from ember.jit.passes.dce import eliminate_dead_code

    if not dce:
        eliminate_dead_code = _keep
    if tracer.calls is not None:
        if not inline:
            top = _method_graphs(tracer, g, types, out, eliminate_dead_code)
        else:
            top = _inlined(tracer, g, types, out)
            eliminate_dead_code(top)
        if not any(k == "call" for k, _ in tracer.calls[0].items):
            top.inputs()[0].setDebugName("self")  # torch's name where no submodule is called
        return top, result
    g.registerOutput(out)
    eliminate_dead_code(g)
    return g, result


def _keep(graph) -> None:
    """No dead code elimination."""


def _method_graphs(tracer, g, types, out, eliminate_dead_code):
    """The module trace as torch keeps it: ``prim::CallMethod`` per submodule call, each
    called submodule's graph in ``graph._method_graphs`` ({path: graph}); a trace whose
    calls do not follow the module tree keeps the inlined form."""
    from ember.jit._calls import _NotTree, build_method_graphs

    def attr_of(v):
        return tracer.attr_values.get(id(v))

    try:
        top, graphs = build_method_graphs(g, tracer.calls[0], types, attr_of, [out])
    except (_NotTree, KeyError):  # KeyError: a call of a module the tree walk has no type for
        top, graphs = _inlined(tracer, g, types, out), {}
    for sub in [top, *graphs.values()]:
        eliminate_dead_code(sub)
    top._method_graphs = graphs
    return top


def _inlined(tracer, g, types, out):
    """Replace the parameter stand-ins by ``prim::GetAttr`` chains from ``%self.1``."""
    made: dict = {}
    self_v = g.inputs()[0]

    def chain(path):
        if path in made:
            return made[path]
        base = self_v if len(path) == 1 else chain(path[:-1])
        n = g.create("prim::GetAttr", [base])
        n.s_("name", path[-1])
        t = types.get(path)
        n.output().setType(t if t is not None else IR.TensorType())
        n.output().setDebugName(_attr_debug(path[-1]))
        n.insertBefore(first)
        made[path] = n.output()
        return n.output()

    for n in list(g.nodes()):
        first = n
        for i, v in enumerate(n.inputs()):
            path = tracer.attr_values.get(id(v))
            if path is not None:
                n.replaceInput(i, chain(path))
    g.registerOutput(out)
    return g


def _attr_debug(part: str) -> str:
    return ("_" + part) if part[0].isdigit() else part


class _null:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


_STRICT_DICT = (
    "Encountering a dict at the output of the tracer might cause the trace to be incorrect, "
    "this is only valid if the container structure does not change based on the module's "
    "inputs. Consider using a constant container instead (e.g. for `list`, use a `tuple` "
    "instead. for `dict`, use a `NamedTuple` instead). If you absolutely need this and know "
    "the side effects, pass strict=False to trace() to allow this behavior."
)


def _output(tracer, g, result, strict: bool = True) -> IR.Value:
    if isinstance(result, Tensor):
        return tracer.value_of(result)
    if isinstance(result, dict) and all(isinstance(k, str) for k in result):
        if strict:
            raise RuntimeError(_STRICT_DICT)
        args = []
        for k, v in result.items():
            key = g.createConstant(k)
            tracer.insert(key)
            args += [key.output(), _output(tracer, g, v, strict)]
        n = g.create("prim::DictConstruct", args)
        tracer.insert(n)
        vt = args[1].type() if args else IR.TensorType()
        n.output().setType(IR.DictType(IR.StringType(), vt))
        return n.output()
    if isinstance(result, (tuple, list)):
        elems = [_output(tracer, g, r, strict) for r in result]
        kind = "prim::TupleConstruct" if isinstance(result, tuple) else "prim::ListConstruct"
        n = tracer.insert(g.create(kind, elems))
        if isinstance(result, tuple):
            n.output().setType(IR.TupleType([e.type() for e in elems]))
        else:
            n.output().setType(IR.ListType(IR.TensorType()))
        return n.output()
    raise RuntimeError(
        "Only tensors, lists, tuples of tensors, or dictionary of tensors can be output from "
        "traced functions"
    )

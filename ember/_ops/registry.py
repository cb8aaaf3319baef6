"""The op table and its one dispatch point.

An op is declared once, in its family's file::

    @op("mul", grad_fn="MulBackward0", save=("self", "other"), promote=SAME)
    def mul(x, y):                       # forward: arrays in, array out
        return np.multiply(x, y)

    @mul.backward
    def _(ctx, grad):                    # backward: Tensors in, Tensors out (differentiable)
        x, y = ctx.saved_tensors
        return grad * y, grad * x

    @mul.array_backward
    def _(ctx, grad):                    # optional: the same math on arrays
        x, y = ctx.saved_arrays
        return grad * y, grad * x

The backward in ember ops defines the derivative and is what ``create_graph=True`` records, so
double backward works. Ops on the training hot path may also declare an ``array_backward``:
the engine runs it instead when the backward is not recorded (the usual ``loss.backward()``),
saving the dispatch of every op inside the formula. Tests run both.

``dispatch`` (out of place) and ``dispatch_inplace`` are the only places where arrays become
Tensors and where the autograd graph is recorded. The engine sums broadcast gradients back to
each input's shape and casts them to its dtype, so backward formulas never do.
"""

from __future__ import annotations

import functools
import sys
import traceback
import warnings
from typing import Any

import numpy as np

from ember._core import dtype as D
from ember._core.anomaly import FLAGS as _ANOMALY
from ember._core.grad_mode import STATE
from ember._core.node import (
    FREED_MSG,
    Node,
    SavedTensor,
    _op_name,
    accumulate_node,
    move_retain_hook,
)
from ember._core.node import _seq as _node_seq
from ember._core.tensor import ABOVE as _TENSOR_ABOVE
from ember._core.tensor import Tensor, _wrap

# promotion policies
SAME = "same"  # promote every input to the common dtype (torch's binary ops)
FLOAT = "float"  # as SAME, then integral results become the default float dtype (div, exp)
COMPARE = "compare"  # as SAME for computing; the result is bool and never differentiable


class ABOVE:
    """What the layers above give the op table, filled when they are imported (the op table
    imports nothing above it; ``import ember`` imports them all): ``grad``
    (``ember.autograd.engine``: a backward formula that differentiates a composite of ember
    ops; a backward runs inside the engine, so it is there)."""

    grad = None


# NumPy reports overflow, 0/0 and the like as RuntimeWarnings; torch returns inf/nan silently.
# Ignore those warnings when raised inside ember's own modules: no per-op cost, and the user's
# own NumPy code keeps its warnings.
warnings.filterwarnings(
    "ignore", message=r".*encountered in", category=RuntimeWarning, module=r"ember\."
)

_EMPTY: dict = {}
_new = object.__new__
_SCALARS = (int, float, bool, complex)


class OpNode(Node):
    """The grad_fn of an op from the table; each op gets a subclass named after torch's node."""

    __slots__ = ("op", "params", "_saved", "needs_input_grad")

    @property
    def saved_tensors(self) -> tuple:
        # what a built-in node saved is ember's own business, as in torch, whose built-in nodes
        # show it only as ``_saved_<arg>`` and have no ``saved_tensors``: code outside ember
        # (torchviz: ``hasattr(fn, "saved_tensors")``) finds no such attribute
        if not sys._getframe(1).f_globals.get("__name__", "").startswith("ember"):
            raise AttributeError(f"'{type(self).__name__}' object has no attribute 'saved_tensors'")
        saved = self._saved
        if saved is None:
            raise RuntimeError(FREED_MSG)
        return tuple([s.unpack(self) if type(s) is SavedTensor else s for s in saved])

    @property
    def saved_arrays(self) -> tuple:
        """The saved inputs/outputs as arrays (checked against in-place changes as
        ``saved_tensors`` are); non-Tensor saved values as they are."""
        saved = self._saved
        if saved is None:
            raise RuntimeError(FREED_MSG)
        arrays = []  # (a loop, not a comprehension: this runs once per node in backward)
        for s in saved:
            if type(s) is SavedTensor:
                arrays.append(s.array(self))
            else:
                arrays.append(s._data if isinstance(s, Tensor) else s)
        return tuple(arrays)

    def apply(self, grads: list) -> tuple:
        op = self.op
        if self._saved is None and op.save_spec:
            raise RuntimeError(FREED_MSG)
        if op.array_backward_fn is not None and not STATE.grad_enabled:
            if len(grads) == 1:
                g = grads[0]
                out = op.array_backward_fn(self, None if g is None else g._data, **self.params)
            else:
                out = op.array_backward_fn(
                    self, *[None if g is None else g._data for g in grads], **self.params
                )
            if type(out) is not tuple:
                if out is not NotImplemented:  # (it may decline: the ember formula runs)
                    return (_wrap_grad(out),)
            else:
                wrapped = []
                for a in out:
                    wrapped.append(None if a is None else _wrap_grad(a))
                return tuple(wrapped)
        out = op.backward_fn(self, *grads, **self.params)
        return out if type(out) is tuple else (out,)

    def release(self) -> None:
        if self._saved is not None:
            self._saved = None


def _wrap_grad(a):
    if a is None:
        return None
    return _wrap(a if type(a) is np.ndarray else np.asarray(a))


def _names(v) -> tuple:
    return (v,) if isinstance(v, str) else tuple(v)


def _resolve_save(opname: str, save: tuple, args: tuple, outputs: tuple) -> tuple:
    """Map a ``save=`` declaration (torch's argument names) to (positions, exposed names).

    A name in ``outputs`` (torch's name of the op's result, ``"result"`` unless declared) saves
    the output; any other name is one of ``args`` (torch's names of the op's positional
    inputs). A name with a leading underscore is saved for ember's backward but
    not shown as ``grad_fn._saved_<name>`` (torch saves something else there)."""
    spec, names = [], []
    for entry in save:
        if not isinstance(entry, str):
            raise TypeError(
                f"op {opname!r}: save= takes torch's argument names (save=('self', 'other')), "
                f"not {entry!r}"
            )
        bare = entry.lstrip("_")
        if bare in outputs or bare == "result":
            spec.append("result")
        elif bare in args:
            spec.append(args.index(bare))
        else:
            raise ValueError(f"op {opname!r}: saves {entry!r}, which is not one of args={args}")
        names.append(None if entry.startswith("_") else bare)
    return tuple(spec), tuple(names)


def _saved_attr(slot: int, wrap: bool):
    # ``grad_fn._saved_<name>``: the saved value, a Python operand as torch's 0-d "wrapped
    # number" tensor (``wrap``) or as the number itself (torch's Scalar arguments)
    def get(node):
        saved = node._saved
        if saved is None:
            raise RuntimeError(FREED_MSG)
        s = saved[slot]
        if type(s) is SavedTensor:
            return s.unpack(node)
        if wrap and isinstance(s, _SCALARS):
            return _wrap(np.asarray(s))
        return s

    return property(get)


def _node_class(grad_fn: str, names: tuple, scalar_args: tuple) -> type:
    """The grad_fn class of an op: torch's name, one ``_saved_<name>`` per shown saved slot."""
    attrs = {"__slots__": ()}
    for slot, name in enumerate(names):
        if name is not None:
            attrs["_saved_" + name] = _saved_attr(slot, name not in scalar_args)
    return type(grad_fn, (OpNode,), attrs)


OPS: list = []  # every op declared, in declaration order (``python -m ember._ops.table``)


class Op:
    """One entry of the op table: forward on arrays, backward on Tensors, the grad_fn class.

    Every field comes from the declaration (``op(...)``'s keywords, kept in ``declared``);
    ``variant`` copies all of them, so an in-place or renamed copy of an op cannot lose one."""

    __slots__ = (
        "name",
        "forward",
        "backward_fn",
        "array_backward_fn",
        "node_cls",
        "save_spec",
        "save_inputs",
        "save_output",
        "promote",
        "view",
        "differentiable",
        "nondiff_outputs",
        "save_if",
        "args",
        "save",
        "scalar_args",
        "saved_names",
        "outputs",
        "declared",
        "variants",
        "variant_of",
        "where",
        "members",
        "post_save",
    )

    def __init__(
        self,
        name: str,
        forward,
        grad_fn: str | None = None,
        save: tuple = (),
        promote: str | None = None,
        view: bool | str = False,
        differentiable: bool = True,
        nondiff_outputs: tuple = (),
        save_if: dict | None = None,
        args: tuple = ("self", "other"),
        scalar_args: tuple = (),
        outputs: tuple = ("result",),
        post_save: tuple = (),
        where: str = "?",
    ):
        self.declared = {
            "grad_fn": grad_fn,
            "save": tuple(save),
            "promote": promote,
            "view": view,
            "differentiable": differentiable,
            "nondiff_outputs": tuple(nondiff_outputs),
            "save_if": dict(save_if or {}),
            "args": tuple(args),
            "scalar_args": tuple(scalar_args),
            "outputs": tuple(outputs),
            "post_save": tuple(post_save),
        }
        self.name = name
        self.forward = forward
        self.where = where  # "file:line" of the declaration
        self.backward_fn = None
        self.array_backward_fn = None
        self.variants = []  # (op, takes_out): copies made by ``variant``, kept in step
        self.variant_of = None
        self.members = []  # the API members published for it ("ember.mul", "Tensor.mul_")
        self.args = tuple(args)
        self.save = tuple(save)
        self.scalar_args = tuple(scalar_args)
        self.outputs = tuple(outputs)
        spec, names = _resolve_save(name, self.save, self.args, self.outputs)
        self.save_spec = spec  # per saved slot: an input position or "result"
        self.saved_names = names  # per saved slot: torch's name, or None (ember's own)
        self.save_inputs = tuple(i for i in spec if i != "result")
        self.save_output = "result" in spec
        # ``post_save``: torch's names of what the public function saves on the node after
        # dispatch (``save_outputs``: a multi-output op's indices, Q and R...), after ``save``'s
        self.post_save = tuple(post_save)
        shown = names + tuple(None if n.startswith("_") else n for n in self.post_save)
        self.node_cls = _node_class(grad_fn, shown, self.scalar_args) if grad_fn else None
        self.promote = promote
        self.view = view
        self.differentiable = differentiable and grad_fn is not None
        self.nondiff_outputs = tuple(nondiff_outputs)
        # {saved name: input names}: save that input only if one of those inputs needs grad
        # (torch saves `self` of a mul only when `other` requires grad; a saved input would pin
        # its version); kept by position in ``save_if``
        self.save_if = {
            self.args.index(k.lstrip("_")): tuple(self.args.index(j) for j in _names(v))
            for k, v in self.declared["save_if"].items()
        }
        OPS.append(self)

    def backward(self, fn):
        """Declare the backward of this op: ``fn(ctx, *grads, **params) -> grads per input``."""
        self.backward_fn = fn
        for v, takes_out in self.variants:
            v.backward_fn = _without_out(fn) if takes_out else fn
        return fn

    def array_backward(self, fn):
        """Declare the same backward on arrays, ``fn(ctx, *grad_arrays, **params) -> arrays``
        (``ctx.saved_arrays``), used when the backward pass is not itself recorded; it may
        return ``NotImplemented`` for inputs it does not handle (the backward then runs)."""
        self.array_backward_fn = fn
        for v, takes_out in self.variants:
            v.array_backward_fn = _without_out(fn) if takes_out else fn
        return fn

    def variant(
        self,
        forward=None,
        *,
        name: str | None = None,
        takes_out: bool = False,
        where: str | None = None,
        **changes,
    ):
        """Return a copy of this op: every declared field (but ``changes``), the backward and
        the array backward (also when declared later), the grad_fn class when its name and
        saves are unchanged (torch's ``mul_`` makes a ``MulBackward0`` as ``mul`` does).
        ``takes_out``: ``forward`` takes ``out=`` (an array to write into), which the
        backward formulas never see."""
        declared = {**self.declared, **changes}
        new = Op(name or self.name, forward or self.forward, where=where or _caller(), **declared)
        if new.declared["grad_fn"] == self.declared["grad_fn"] and (
            (new.saved_names, new.scalar_args) == (self.saved_names, self.scalar_args)
        ):
            new.node_cls = self.node_cls
        new.variant_of = self
        self.variants.append((new, takes_out))
        wrap = _without_out if takes_out else (lambda f: f)
        if self.backward_fn is not None:
            new.backward_fn = wrap(self.backward_fn)
        if self.array_backward_fn is not None:
            new.array_backward_fn = wrap(self.array_backward_fn)
        return new

    def into(self, np_fn) -> Op:
        """Return the variant of this op computing into the array passed as ``out=``.

        In-place methods use it to compute straight into the tensor's memory
        (``dispatch_inplace``'s copy of a result onto itself is free), and operators to reuse a
        temporary's buffer. ``np_fn(*arrays, out=, **params)`` is the forward; a result that
        does not fit ``out`` (broadcasting) comes from this op's forward as a new array, and
        ``dispatch_inplace`` raises torch's error for it."""
        base = self.forward

        def forward(*arrays, out, **params):
            try:
                return np_fn(*arrays, out=out, **params)
            except (ValueError, TypeError):
                return base(*arrays, **params)

        return self.variant(forward, takes_out=True, where=_caller())

    def __call__(self, *inputs, **params):
        return dispatch(self, inputs, params)

    def __repr__(self) -> str:
        return f"<op {self.name}>"


def _without_out(fn):
    def formula(ctx, *grads, out=None, **params):
        return fn(ctx, *grads, **params)

    return formula


def _caller(depth: int = 2) -> str:
    f = sys._getframe(depth)
    return f"{f.f_code.co_filename}:{f.f_lineno}"


def op(name: str, **declaration: Any):
    """Declare an op: decorate its forward (arrays -> array or tuple of arrays).

    The keywords are :class:`Op`'s, with its defaults (one list, kept there): ``grad_fn``
    torch's node class name; ``args`` torch's names of the positional inputs; ``save`` what
    backward needs (``"result"`` for the output; ``"_x"`` saves ``x`` without showing
    ``grad_fn._saved_x``); ``scalar_args`` the names torch shows as numbers, not 0-d tensors,
    when a Python number is passed; ``outputs`` torch's name of the saved result
    (``"inverse"``); ``post_save`` torch's names of the outputs the public function saves
    itself after dispatch (``save_outputs``), in that order; ``promote``, ``view``,
    ``differentiable``, ``nondiff_outputs``, ``save_if``. A misspelt keyword raises
    TypeError where the op is declared."""
    where = _caller()

    def deco(forward):
        return Op(name, forward, where=where, **declaration)

    return deco


# ---------------------------------------------------------------------------------------------
# dtype handling


def _plain_scalar(x):
    # NumPy scalars behave as Python scalars in torch (weak); in NumPy they would be strong
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, _SCALARS):
        return x
    raise TypeError(
        f"unsupported operand type: '{type(x).__name__}'; expected a Tensor or a number"
    )


_INT_RANGE: dict = {}  # NumPy integer dtype -> (min, max)


def _integer_operand(x: int, npdt):
    """A Python int as an operand of an integer tensor's op: torch converts it to the tensor's
    dtype as C does, wrapping modulo 2**bits (``int8 + 1000`` adds -24); NumPy 2 would raise
    OverflowError instead."""
    lo, hi = _INT_RANGE.get(npdt) or _INT_RANGE.setdefault(
        npdt, (int(np.iinfo(npdt).min), int(np.iinfo(npdt).max))
    )
    if lo <= x <= hi:
        return x
    check_python_int(x)
    return np.array(x & 0xFFFFFFFFFFFFFFFF, dtype=np.uint64).astype(npdt)[()]


_I64_MIN, _I64_MAX = -(1 << 63), (1 << 63) - 1


def check_python_int(x: int) -> None:
    """Raise torch's OverflowError for a Python int no 64-bit integer holds (torch's argument
    parser converts every Scalar through int64 or uint64)."""
    if x >= 1 << 64:
        raise OverflowError("int too big to convert")
    if x < _I64_MIN:
        raise OverflowError("can't convert negative int to unsigned")


def _uint64_scalar_promotion(inputs, tensor_dtype) -> None:
    # A Python int in [2**63, 2**64) is a uint64 scalar to torch, which promotes it with no
    # other integer scalar (unless a floating tensor decides) and with no bool tensor
    if tensor_dtype is not None and (tensor_dtype.is_floating_point or tensor_dtype.is_complex):
        return
    seen = None
    for x in inputs:
        if isinstance(x, Tensor) or x is None or type(x) is bool:
            continue
        if isinstance(x, int):
            name = "UInt64" if x > _I64_MAX else "Long"
            if seen is not None and seen != name:
                raise uint_promotion_error(seen, name)
            seen = name
    if tensor_dtype is D.bool:
        raise uint_promotion_error("Bool", "UInt64")


def uint_promotion_error(a: str, b: str) -> RuntimeError:
    """Return torch's error for promoting with a uint16/uint32/uint64 type."""
    return RuntimeError(
        f"Promotion for uint16, uint32, uint64 types is not supported, attempted to promote "
        f"{a} and {b}"
    )


def result_dtype(inputs) -> D.dtype:
    """Return torch's result dtype for a mix of Tensors and Python scalars."""
    dims, zeros, scalars = [], [], []
    big = False
    for x in inputs:
        if isinstance(x, Tensor):
            (dims if x._data.ndim else zeros).append(x.dtype)
        elif x is not None:
            if type(x) is int and not _I64_MIN <= x <= _I64_MAX:
                check_python_int(x)
                big = True
            scalars.append(D.scalar_dtype(x))
    if big:
        tensors = D.result_type_of(tuple(dims), tuple(zeros), ()) if dims or zeros else None
        _uint64_scalar_promotion(inputs, tensors)
    return D.result_type_of(tuple(dims), tuple(zeros), tuple(scalars))


def _promoted_arrays(inputs, policy):
    """Return (dtype, arrays) with every Tensor's array cast to the common dtype."""
    # fast paths: the common cases need no promotion at all
    n = len(inputs)
    a = inputs[0]
    if type(a) is Tensor or isinstance(a, Tensor):
        dt = a.dtype
        if n == 1:
            if dt.is_floating_point or policy is not FLOAT:
                return dt, [a._data]
        elif n == 2:
            b = inputs[1]
            tb = type(b)
            if tb is float or tb is int and _I64_MIN <= b <= _I64_MAX:
                if dt.is_floating_point and dt is not D.bfloat16:
                    return dt, [a._data, b]
            elif (tb is Tensor or isinstance(b, Tensor)) and b.dtype is dt:
                if dt.is_floating_point or policy is not FLOAT:
                    return dt, [a._data, b._data]
    dt = result_dtype(inputs)
    if policy is FLOAT and not (dt.is_floating_point or dt.is_complex):
        dt = D.get_default_dtype()
    npdt = dt.np
    arrays = []
    for x in inputs:
        if isinstance(x, Tensor):
            a = x._data
            arrays.append(a if a.dtype == npdt else a.astype(npdt))
        elif type(x) is bool and dt is not D.bool:
            arrays.append(int(x))
        elif type(x) in _SCALARS:
            # NumPy treats Python scalars as weak, but ml_dtypes' bfloat16 does not
            if dt is D.bfloat16:
                x = npdt.type(x)
            elif type(x) is int and npdt.kind in "iu":
                x = _integer_operand(x, npdt)
            arrays.append(x)
        else:
            arrays.append(_plain_scalar(x))
    return dt, arrays


def _arrays(op, inputs):
    if op.promote is None:
        return [x._data if isinstance(x, Tensor) else x for x in inputs]
    return _promoted_arrays(inputs, op.promote)[1]


# ---------------------------------------------------------------------------------------------
# dispatch


_NO_EDGE = (None, 0)


def _make_node(op, inputs, params, outputs):
    node = _new(op.node_cls)  # (Node.__init__'s fields are all set here)
    node._seq = next(_node_seq)
    node.op = op
    node.params = params
    node._saved = None
    edges, needs, meta = [], [], []
    for x in inputs:
        if isinstance(x, Tensor) and x._requires_grad:
            # ``edge_of(x)``, inlined: ``_requires_grad`` has brought views up to date
            fn = x._grad_fn
            if fn is not None:
                edges.append((fn, x._output_nr))
            elif x._view_no_grad:
                edges.append(_NO_EDGE)
            else:
                edges.append((accumulate_node(x), 0))
            needs.append(True)
            meta.append((x._data.shape, x.dtype))
        else:
            edges.append(_NO_EDGE)
            needs.append(False)
            meta.append(None)
    node.next_functions = tuple(edges)
    node.needs_input_grad = tuple(needs)
    node._input_meta = tuple(meta)
    if _ANOMALY.enabled:  # detect_anomaly: remember where the forward ran
        node.metadata["traceback_"] = traceback.format_stack()
    return node


def _save(op, node, inputs, out, snapshot=None):
    """Save what backward needs: inputs (``snapshot`` stands for input 0 of an in-place op)."""
    cond = op.save_if
    needs = node.needs_input_grad
    saved = []
    for i in op.save_inputs:
        if cond:
            deps = cond.get(i)
            if deps is not None:
                for j in deps:
                    if needs[j]:
                        break
                else:
                    saved.append(None)  # backward will not read it
                    continue
        x = snapshot if i == 0 and snapshot is not None else inputs[i]
        saved.append(SavedTensor(x) if isinstance(x, Tensor) else x)
    if op.save_output:
        saved.append(SavedTensor(out, is_output=True))
    node._saved = tuple(saved)


def _requires_grad(inputs) -> bool:
    result = False
    for x in inputs:
        if isinstance(x, Tensor):
            base = x._base
            if base is not None and base._grad_fn is not x._base_fn_seen:
                refresh_view(x)
            if x._requires_grad:
                result = True
    return result


def _as_view(out: Tensor, src: Tensor, op, params) -> None:
    # a view shares the version counter of its source and remembers how to replay itself
    # from the root base (used when an in-place op on the view rewrites the base's history)
    out._vc = src._vc
    base = src._base
    root = src if base is None else base
    out._base = root
    out._view_fn = (src._view_fn, op, params)
    fn = root._grad_fn
    if fn is not None:
        out._base_fn_seen = fn
    if not STATE.grad_enabled:
        out._view_no_grad = True
        # torch: such a view still reports requires_grad (of its base), but has no history and
        # no grad accumulator: ops on it are recorded, and gradients stop there
        if root._requires_grad:
            out._requires_grad = True


def _qualname(x) -> str:
    """The type name torch prints for a Python object (``list``, ``numpy.ndarray``)."""
    t = type(x)
    return t.__name__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__name__}"


def _broadcast_error(inputs) -> RuntimeError:
    """torch's error for tensors whose shapes do not broadcast, or None if they do."""
    return _shapes_broadcast_error([x._data.shape for x in inputs if isinstance(x, Tensor)])


def _shapes_broadcast_error(shapes) -> RuntimeError:
    # torch broadcasts the operands left to right: tensor a is the shape so far, b the next one
    acc = shapes[0] if shapes else ()
    for b in shapes[1:]:
        n = max(len(acc), len(b))
        a, b = (1,) * (n - len(acc)) + acc, (1,) * (n - len(b)) + b
        for d in range(n - 1, -1, -1):
            if a[d] != b[d] and a[d] != 1 and b[d] != 1:
                return RuntimeError(
                    f"The size of tensor a ({a[d]}) must match the size of tensor b ({b[d]}) at "
                    f"non-singleton dimension {d}"
                )
        acc = tuple(max(x, y) if x != 0 and y != 0 else 0 for x, y in zip(a, b))
    return None


# ---------------------------------------------------------------------------------------------
# observers: the profiler and the tracer see every op call

_OBSERVERS: list = []


def add_observer(observer) -> None:
    """Let ``observer`` see every op call from now on: ``observer.enter(op, inputs, params,
    self)`` runs before the forward (``self`` is the written tensor of an in-place call, else
    None) and returns a token; ``observer.exit(token, result)`` runs after it (``result`` is
    None when the call raised). Observers must not call ember ops themselves."""
    _OBSERVERS.append(observer)


def remove_observer(observer) -> None:
    """Stop showing op calls to ``observer`` (added by ``add_observer``)."""
    _OBSERVERS.remove(observer)
    if observer in _COMPOSITE_OBSERVERS:
        _COMPOSITE_OBSERVERS.remove(observer)


# composite functions (``F.linear``, ``F.conv2d``...) that torch records as one node announce
# themselves to the observers that ask (``observer.composites = True``): their
# ``enter_composite(name, fn, args, kwargs)`` returns a token, ``exit_composite(token, result)``
# follows; the ops inside still reach ``enter``/``exit``.
_COMPOSITE_OBSERVERS: list = []


def watch_composites(observer) -> None:
    """Also show ``observer`` the composite calls (see ``composite``)."""
    _COMPOSITE_OBSERVERS.append(observer)


# composites only a trace records as nodes (the factories): the profiler shows their ops
UNPROFILED: set = set()


def composite(name: str, profiled: bool = True):
    """Mark a public function as one op named ``name`` (torch's ``aten::linear``) for the
    observers that watch composites (not the profiler's unless ``profiled``); costs one list
    test otherwise."""
    if not profiled:
        UNPROFILED.add(name)

    def deco(fn):
        def announced(*args, **kwargs):
            if not _COMPOSITE_OBSERVERS:
                return fn(*args, **kwargs)
            observers = tuple(_COMPOSITE_OBSERVERS)
            tokens = [o.enter_composite(name, fn, args, kwargs) for o in observers]
            result = None
            try:
                result = fn(*args, **kwargs)
            finally:
                for o, t in zip(reversed(observers), reversed(tokens)):
                    o.exit_composite(t, result)
            return result

        functools.update_wrapper(announced, fn)
        announced.__composite__ = name
        return announced

    return deco


# code objects of the library functions torch writes in Python (``F.multi_head_attention_forward``)
PYTHON_LEVEL: set = set()


def python_level(fn):
    """Mark ``fn`` as a function torch writes in Python: a trace records the sizes it reads
    (``x.shape[0]``, ``x.size(-1)``) as graph values, as it records user code's."""
    PYTHON_LEVEL.add(fn.__code__)
    return fn


def _observed(run, op, inputs, params, self=None):
    observers = tuple(_OBSERVERS)
    tokens = [o.enter(op, inputs, params, self) for o in observers]
    result = None
    try:
        result = run(op, self, inputs, params) if self is not None else run(op, inputs, params)
    finally:
        for o, t in zip(reversed(observers), reversed(tokens)):
            o.exit(t, result)
    return result


# ---------------------------------------------------------------------------------------------
# autocast: ``ember.amp`` installs its hooks; dispatch pays one truthiness test while it is off

AUTOCAST: list = []  # one entry per thread with autocast on (``ember.amp`` keeps it)
_autocast_dispatch = None  # ``(op, inputs, params) -> result``: casts, dispatch_uncast
_autocast_cast = None  # ``(op, inputs) -> inputs``: the casts alone


def set_autocast_hooks(dispatch_hook, cast_hook) -> None:
    """Install autocast: ``dispatch`` hands every op call to ``dispatch_hook(op, inputs,
    params)`` while ``AUTOCAST`` is non-empty; ``autocast_inputs`` calls ``cast_hook``."""
    global _autocast_dispatch, _autocast_cast
    _autocast_dispatch, _autocast_cast = dispatch_hook, cast_hook


def autocast_inputs(op: Op | str, inputs: tuple) -> tuple:
    """Return ``inputs`` cast as autocast's policy for ``op`` (an op, or torch's name of a
    composite function) asks; unchanged while autocast is off. For public functions that
    compare their inputs' dtypes before they dispatch, or that compose several ops."""
    return _autocast_cast(op, inputs) if AUTOCAST else inputs


def dispatch(op: Op, inputs: tuple, params: dict = _EMPTY):
    """Run ``op`` forward on the inputs' arrays; wrap the result; record the graph if needed."""
    if AUTOCAST:
        return _autocast_dispatch(op, inputs, params)
    if _OBSERVERS:
        return _observed(_dispatch, op, inputs, params)
    return _dispatch(op, inputs, params)


def dispatch_uncast(op: Op, inputs: tuple, params: dict = _EMPTY):
    """``dispatch`` without autocast (autocast's hook runs ops through it)."""
    if _OBSERVERS:
        return _observed(_dispatch, op, inputs, params)
    return _dispatch(op, inputs, params)


# hooks for tensors the plain path does not serve, installed when the first such tensor is
# made: (out of place, in place) pairs, each returning NotImplemented when it has nothing to
# do: the meta device (``meta.py``), torch's limited uint16/32/64 support (``unsigned.py``)
HOOKS: list = []


def _dispatch(op: Op, inputs: tuple, params: dict = _EMPTY):
    if HOOKS:
        for hook in HOOKS:
            res = hook[0](op, inputs, params)
            if res is not NotImplemented:
                return res
    if op.promote is None:
        arrays = [x._data if isinstance(x, Tensor) else x for x in inputs]
    else:
        arrays = _promoted_arrays(inputs, op.promote)[1]
    try:
        out = op.forward(*arrays, **params)
    except ValueError as e:
        if len(inputs) < 2 or "broadcast" not in str(e):
            raise
        raise (_broadcast_error(inputs) or e) from None
    except AttributeError:
        # a list (or other non-array) where the tensor goes: torch's argument error
        x = inputs[0] if inputs else None
        if x is None or isinstance(x, (Tensor, np.ndarray, np.generic)):
            raise
        raise TypeError(
            f"{op.name}(): argument 'input' (position 1) must be Tensor, not {_qualname(x)}"
        ) from None
    record = op.differentiable and STATE.grad_enabled and _requires_grad(inputs)
    if type(out) is tuple:
        return _wrap_many(op, inputs, params, out, record)
    if type(out) is not np.ndarray:
        out = np.asarray(out)
    res = _wrap(out)
    if op.view:
        _as_view(res, inputs[0], op, params)
    if record and (res.dtype.is_floating_point or res.dtype.is_complex):
        node = _make_node(op, inputs, params, 1)
        res._grad_fn = node
        res._requires_grad = True
        if op.save_spec:
            _save(op, node, inputs, res)
    return res


def _wrap_many(op, inputs, params, outs, record):
    results = []
    for a in outs:
        r = _wrap(a if type(a) is np.ndarray else np.asarray(a))
        if op.view:
            _as_view(r, inputs[0], op, params)
        results.append(r)
    if record:
        node = _make_node(op, inputs, params, len(results))
        node._n_outputs = len(results)
        for i, r in enumerate(results):
            if i not in op.nondiff_outputs:
                r._grad_fn = node
                r._output_nr = i
                r._requires_grad = True
        if op.save_spec:
            _save(op, node, inputs, None)
    return tuple(results)


_NO_GRAD_VIEW = (
    "A view was created in no_grad mode and is being modified inplace with grad mode enabled. "
    "Given that this use case is ambiguous and error-prone, it is forbidden. You can clarify "
    "your code by moving both the view and the inplace either both inside the no_grad block (if "
    "you don't want the inplace to be tracked) or both outside (if you want the inplace to be "
    "tracked)."
)
_INTERNAL_OVERLAP = (
    "unsupported operation: more than one element of the written-to tensor refers to a single "
    "memory location. Please clone() the tensor before performing the operation."
)
_PARTIAL_OVERLAP = (
    "unsupported operation: some elements of the input tensor and the written-to tensor refer to "
    "a single memory location. Please clone() the tensor before performing the operation."
)


def _check_overlap(op, self: Tensor, inputs: tuple) -> None:
    """Raise torch's errors for writes that would alias: into an expanded tensor, or from an
    input that partly overlaps the target (identical geometry, as in ``x.add_(x)``, is fine)."""
    dst = self._data
    strides = dst.strides
    if 0 in strides and dst.size and op.name != "fill_":
        for n, s in zip(dst.shape, strides):
            if s == 0 and n > 1:
                raise RuntimeError(_INTERNAL_OVERLAP)
    vc = self._vc
    for x in inputs[1:]:
        if isinstance(x, Tensor) and x._vc is vc:
            a = x._data
            if a is dst or not (a.flags.c_contiguous and dst.flags.c_contiguous):
                continue  # torch gives up ("too hard") on non-contiguous pairs, and so do we
            same = (
                a.__array_interface__["data"][0] == dst.__array_interface__["data"][0]
                and a.shape == dst.shape
                and a.strides == strides
            )
            if not same and a.size and dst.size and np.may_share_memory(a, dst):
                raise RuntimeError(_PARTIAL_OVERLAP)


_CUSTOM_FUNCTION_VIEW = (
    "Output {nr} of {name} is a view and is being modified inplace. This view was created inside "
    "a custom Function (or because an input was returned as-is) and the autograd logic to handle "
    "view+inplace would override the custom backward associated with the custom Function, "
    "leading to incorrect gradients. This behavior is forbidden. You can fix this by cloning the "
    "output of the custom Function."
)


_INFERENCE_INPLACE = (
    "Inplace update to inference tensor outside InferenceMode is not allowed.You can make a "
    "clone to get a normal tensor before doing inplace update.See "
    "https://github.com/pytorch/rfcs/pull/17 for more details."
)


def _check_inplace(self: Tensor) -> None:
    if (self._inference or (self._base is not None and self._base._inference)) and (
        not STATE.inference
    ):
        raise RuntimeError(_INFERENCE_INPLACE)
    if STATE.grad_enabled and self._view_in_custom_function and self._requires_grad:
        name = _op_name(self.grad_fn)
        raise RuntimeError(_CUSTOM_FUNCTION_VIEW.format(nr=self._output_nr, name=name))
    if STATE.grad_enabled and self._view_no_grad and self._base._requires_grad:
        raise RuntimeError(_NO_GRAD_VIEW)
    if STATE.grad_enabled and self._requires_grad:
        if self.grad_fn is None:
            raise RuntimeError(
                "a leaf Variable that requires grad is being used in an in-place operation."
            )
        base = self._base
        if base is not None and base.grad_fn is None and base._requires_grad:
            raise RuntimeError(
                "a view of a leaf Variable that requires grad is being used in an in-place "
                "operation."
            )


def dispatch_inplace(op: Op, self: Tensor, inputs: tuple, params: dict = _EMPTY) -> Tensor:
    """Run ``op`` and write its result into ``self``; bump the version; rebase the history."""
    if _OBSERVERS:
        return _observed(_dispatch_inplace, op, inputs, params, self)
    return _dispatch_inplace(op, self, inputs, params)


def _dispatch_inplace(op: Op, self: Tensor, inputs: tuple, params: dict = _EMPTY) -> Tensor:
    _check_inplace(self)
    if HOOKS:
        for hook in HOOKS:
            if hook[1](op, self, inputs, params) is not NotImplemented:
                return self
    _check_overlap(op, self, inputs)
    if op.promote is not None:
        dt, arrays = _promoted_arrays(inputs, op.promote)
        if op.promote is not COMPARE and not D.can_cast(dt, self.dtype):
            raise RuntimeError(
                f"result type {_type_name(dt)} can't be cast to the desired output type "
                f"{_type_name(self.dtype)}"
            )
    else:
        arrays = _arrays(op, inputs)
    record = op.differentiable and STATE.grad_enabled and _requires_grad(inputs)
    snapshot = None
    if record and 0 in op.save_inputs:
        cond = op.save_if.get(0)
        if cond is None or any(
            isinstance(inputs[j], Tensor) and inputs[j]._requires_grad for j in cond
        ):
            snapshot = _snapshot(self)
    try:
        out = op.forward(*arrays, **params)
    except ValueError as e:
        if len(inputs) < 2 or "broadcast" not in str(e):
            raise
        raise (_broadcast_error(inputs) or e) from None
    dst = self._data
    out_shape = np.shape(out)
    if out_shape != dst.shape:
        try:
            bshape = np.broadcast_shapes(out_shape, dst.shape)
        except ValueError:
            raise _shapes_broadcast_error([dst.shape, out_shape]) from None
        if bshape != dst.shape:
            raise RuntimeError(
                f"output with shape {list(dst.shape)} doesn't match the broadcast shape "
                f"{list(bshape)}"
            )
    np.copyto(dst, out, casting="unsafe")
    self._vc[0] += 1
    if record:
        node = _make_node(op, inputs, params, 1)
        if op.save_spec:
            _save(op, node, inputs, self, snapshot)
        _rebase_history(self, node)
    return self


def packed_items(args: tuple, kinds: tuple = (list, tuple)) -> tuple | None:
    """The items of ``args`` when they are one sequence of ``kinds`` (``f([a, b])`` rather
    than ``f(a, b)``), else None: the spelling shared by the varargs entry points."""
    if len(args) == 1 and isinstance(args[0], kinds):
        return tuple(args[0])
    return None


def _type_name(dt: D.dtype) -> str:
    return D.scalar_type_name(dt)


def _snapshot(t: Tensor) -> Tensor:
    # the value of ``t`` before an in-place op overwrites it, still attached to its history
    s = _wrap(t._data.copy())
    s.grad_fn = t.grad_fn
    s._output_nr = t._output_nr
    s._requires_grad = t._requires_grad
    if t.grad_fn is None and t._requires_grad:
        s._accum = t._accum
    return s


def _rebase_history(self: Tensor, node: Node) -> None:
    """Make ``node`` the history of ``self``; for a view, rewrite its base's history too."""
    old = (self.grad_fn, self._output_nr)
    base = self._base
    if base is None:
        self.grad_fn = node
        self._output_nr = 0
        self._requires_grad = True
        move_retain_hook(self, *old)
        return
    from ember._ops.copy_slices import CopySlices

    vf = self._view_fn
    while vf is not None:
        if vf[1].view == "multi":
            name = _op_name(old[0]) if old[0] is not None else vf[1].name.capitalize()
            raise RuntimeError(
                f"Output {old[1]} of {name} is a view and is being "
                "modified inplace. This view is the output of a function that returns multiple "
                "views. Such functions do not allow the output views to be modified inplace. You "
                "should replace the inplace operation by an out-of-place one."
            )
        vf = vf[0]
    old_base = (base.grad_fn, base._output_nr)
    cs = CopySlices(base, self._view_fn, node)
    base.grad_fn = cs
    base._output_nr = 0
    base._requires_grad = True
    refresh_view(self)
    move_retain_hook(self, *old)
    move_retain_hook(base, *old_base)


def refresh_view(t: Tensor) -> None:
    """Remake the history of view ``t`` after its base's history changed: torch makes it a
    strided view of the base (AsStridedBackward0)."""
    base = t._base
    t._base_fn_seen = base._grad_fn
    vf = t._view_fn
    while vf is not None:
        if vf[1].view == "multi":
            return  # torch forbids in-place use of these; their history stays as recorded
        vf = vf[0]
    if not base._requires_grad:
        return
    from ember._ops.slicing import as_strided

    prev = STATE.grad_enabled
    STATE.grad_enabled = True
    try:
        regenerated = as_strided(base, t._data.shape, t.stride(), t.storage_offset())
    finally:
        STATE.grad_enabled = prev
    t._grad_fn = regenerated._grad_fn
    t._output_nr = 0
    t._requires_grad = True


def replay_view(base: Tensor, view_fn) -> Tensor:
    """Apply the chain of view ops recorded in ``view_fn`` to ``base``."""
    chain = []
    while view_fn is not None:
        parent, vop, params = view_fn
        chain.append((vop, params))
        view_fn = parent
    t = base
    for vop, params in reversed(chain):
        out = dispatch(vop, (t,), params)
        t = out
    return t


# ---------------------------------------------------------------------------------------------
# the public API: functions in ``ember``, methods on ``Tensor``

API: dict = {}
# every member published: "ember.mul", "Tensor.mul_", "Tensor.__mul__" -> (the op or None,
# "file:line" of the publishing call, declared: True through ``publish``, False by hand)
MEMBERS: dict = {}


def _member(op_: Op | None, qualname: str, where: str) -> None:
    MEMBERS[qualname] = (op_, where, True)
    if op_ is not None:
        op_.members.append(qualname)


def publish(
    op_: Op | None,
    fn=None,
    *,
    name: str | None = None,
    function: bool = True,
    method=True,
    aliases: tuple = (),
    inplace=None,
    arity: int = 2,
    alpha: bool = False,
    operators: dict | tuple = (),
):
    """Declare the API members of ``op_`` and make them; return ``fn``.

    ``fn`` (the public function, argument checks included) becomes ``ember.<name>`` (unless
    ``function=False``) and ``Tensor.<name>`` (unless ``method=False``), and so does each of
    ``aliases`` (``method`` may be a function of its own: ``Tensor.polygamma(self, n)``
    swaps ``polygamma(n, input)``'s arguments). ``inplace``: the in-place method
    ``Tensor.<name>_`` (and ``<alias>_``), a function, or ``True`` to generate it from the op
    (``arity`` inputs, ``alpha=`` if asked).
    ``operators``: ``{"__mul__": fn}``, or dunder names to generate (one input: ``__neg__``).
    ``op_`` is None for a composite function with no op of its own. Each member is recorded in
    ``MEMBERS`` and on the op (``python -m ember._ops.table`` prints them)."""
    where = _caller()
    if name is None:
        name = fn.__name__ if fn is not None else op_.name if op_ is not None else ""
    if inplace is True:
        inplace = inplace_method(op_, name + "_", arity, alpha)
    for n in (name, *aliases):
        if fn is not None:
            if function:
                API[n] = fn
                _member(op_, f"ember.{n}", where)
            if method:
                setattr(Tensor, n, fn if method is True else method)
                _member(op_, f"Tensor.{n}", where)
        if inplace is not None:
            setattr(Tensor, n + "_", inplace)
            _member(op_, f"Tensor.{n}_", where)
    if not isinstance(operators, dict):
        operators = {d: _unary_operator(op_) for d in operators}
    for d, f in operators.items():
        setattr(Tensor, d, f)
        _member(op_, f"Tensor.{d}", where)
    return fn


def _unary_operator(op_: Op):
    def operator(self):
        return dispatch(op_, (self,))

    return operator


def inplace_method(op: Op, name: str, n_inputs: int = 1, alpha: bool = False):
    """Return a method running ``op`` in place on ``self`` (``alpha=`` if asked); without
    ``publish``, it is also set as ``Tensor.<name>``."""

    if n_inputs == 1:

        def method(self):
            return dispatch_inplace(op, self, (self,))
    elif alpha:

        def method(self, other, *, alpha=1):
            return dispatch_inplace(
                op, self, (self, other), _EMPTY if alpha == 1 else {"alpha": alpha}
            )
    else:

        def method(self, other):
            return dispatch_inplace(op, self, (self, other))

    method.__name__ = name
    method.__doc__ = f"In-place version of :meth:`Tensor.{name[:-1]}`; return ``self``."
    if sys._getframe(1).f_code is not publish.__code__:
        setattr(Tensor, name, method)
        MEMBERS[f"Tensor.{name}"] = (op, _caller(), False)
        op.members.append(f"Tensor.{name}")
    return method


_TENSOR_ABOVE.refresh_view = refresh_view  # (the core imports nothing above it)

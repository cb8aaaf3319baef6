"""Graph nodes: what a ``grad_fn`` is.

A Node is one recorded call. ``next_functions`` holds one ``(node, output_nr)`` edge per
differentiable input (``AccumulateGrad`` for a leaf that requires grad, ``None`` otherwise).
Backward of a node maps the gradients of its outputs to gradients of its inputs. Saved tensors
remember the version counter value at save time; a later in-place write is caught on unpack.
"""

from __future__ import annotations

import itertools
import re
import sys
import weakref

import numpy as np

from ember._core import meta as _meta
from ember._core.anomaly import FLAGS as _ANOMALY
from ember._core.grad_mode import STATE
from ember.utils.hooks import RemovableHandle, _HookDict, add_hook  # noqa: F401 (re-exported)

_seq = itertools.count()

FREED_MSG = (
    "Trying to backward through the graph a second time (or directly access saved tensors after "
    "they have already been freed). Saved intermediate values of the graph are freed when you "
    "call .backward() or autograd.grad(). Specify retain_graph=True if you need to backward "
    "through the graph a second time or if you need to access saved tensors after calling "
    "backward."
)


_BACKWARD_SUFFIX = re.compile(r"Backward\d*$")


def _op_name(node) -> str:
    # torch names the forward op in its version error: "output 0 of Exp", not "ExpBackward0"
    name = type(node).__name__
    if name in ("CopySlices", "AccumulateGrad"):
        return "torch::autograd::" + name
    return _BACKWARD_SUFFIX.sub("", name)


# the saved-tensor hooks in force (``autograd.graph.saved_tensors_hooks``), innermost last
SAVED_HOOKS: list = []


_INFERENCE_SAVED = (
    "Inference tensors cannot be saved for backward. Please do not use Tensors created in "
    "inference mode in computation tracked by autograd. To work around this, you can make a "
    "clone to get a normal tensor and use it in autograd, or use `torch.no_grad()` instead of "
    "`torch.inference_mode()`."
)


class SavedTensor:
    """A tensor saved for backward, with the version it had when saved.

    An op's own output is saved without its ``grad_fn`` (that would be a reference cycle) and
    re-linked to the node on unpack, as torch does. Under ``saved_tensors_hooks`` the pack hook's
    result is stored instead of the tensor, and unpack rebuilds a tensor with the saved one's
    place in the graph; versions are then not checked (torch cannot see through the hooks).
    """

    __slots__ = ("tensor", "version", "is_output", "output_nr", "packed", "unpack_hook", "edge")

    def __init__(self, tensor, is_output: bool = False, output_nr: int = 0, hooks: bool = True):
        if tensor._inference or (tensor._base is not None and tensor._base._inference):
            raise RuntimeError(_INFERENCE_SAVED)
        self.is_output = is_output
        self.output_nr = output_nr
        self.version = tensor._vc[0]
        if SAVED_HOOKS and hooks:
            pack, self.unpack_hook = SAVED_HOOKS[-1]
            self.tensor = None
            # where the unpacked tensor sits in the graph (for a leaf: its AccumulateGrad)
            if is_output or not tensor.requires_grad:
                self.edge = None
            elif tensor.grad_fn is not None:
                self.edge = (tensor.grad_fn, tensor._output_nr)
            else:
                self.edge = (None, weakref.ref(accumulate_node(tensor)))
            self.packed = pack(tensor)
            return
        self.unpack_hook = None
        self.tensor = tensor.detach() if is_output else tensor

    def unpack(self, node):
        if self.unpack_hook is not None:
            return self._unpack_hooked(node)
        t = self.tensor
        if t._vc[0] != self.version:
            raise RuntimeError(self._version_message(node))
        if self.is_output:
            out = t.detach()
            out._requires_grad = True
            out.grad_fn = node
            if self.output_nr:
                out._output_nr = self.output_nr
            return out
        return t

    def array(self, node):
        """The saved array, checked as :meth:`unpack` checks it, without building a tensor
        (unless an unpack hook makes one)."""
        if self.unpack_hook is not None:
            return self._unpack_hooked(node)._data
        t = self.tensor
        if t._vc[0] != self.version:
            raise RuntimeError(self._version_message(node))
        return t._data  # (an output's array is its detached copy's)

    def _unpack_hooked(self, node):
        from ember._core.tensor import Tensor

        data = self.unpack_hook(self.packed)
        if not isinstance(data, Tensor):
            raise TypeError(
                "Output of saved tensor unpack_hook expected to be a Tensor but got result of "
                f"type {type(data).__name__}"
            )
        out = data.detach()
        if self.is_output:
            out._requires_grad = True
            out.grad_fn = node
            out._output_nr = self.output_nr
        elif self.edge is not None:
            fn, nr = self.edge
            out._requires_grad = True
            if fn is None:
                acc = nr()
                if acc is None:
                    raise RuntimeError("No grad accumulator for a saved leaf")
                out._accum = nr
            else:
                out.grad_fn = fn
                out._output_nr = nr
        return out

    def _version_message(self, node) -> str:
        t = self.tensor
        if self.is_output:
            fn, nr = node, self.output_nr
        else:
            fn, nr = t.grad_fn, t._output_nr
        which = f", which is output {nr} of {_op_name(fn)}," if fn is not None else ""
        if _ANOMALY.enabled:
            hint = (
                "Hint: the backtrace further above shows the operation that failed to compute "
                "its gradient. The variable in question was changed in there or anywhere later. "
                "Good luck!"
            )
        else:
            hint = (
                "Hint: enable anomaly detection to find the operation that failed to compute "
                "its gradient, with torch.autograd.set_detect_anomaly(True, check_nan=False)."
            )
        return (
            "one of the variables needed for gradient computation has been modified by an "
            f"inplace operation: [{t.type()} {list(t.shape)}]{which} is at version "
            f"{t._vc[0]}; expected version {self.version} instead. {hint}"
        )


class Node:
    """Base of every ``grad_fn``; ``name()`` is torch's class name (``MulBackward0``)."""

    # what every node sets; the rarely set attributes (hooks, metadata, several outputs) are
    # class defaults, shadowed in the instance ``__dict__`` (made on first use) when set: a
    # node costs three attribute writes to make
    __slots__ = ("next_functions", "_input_meta", "_seq", "__dict__", "__weakref__")
    _pre_hooks = None
    _post_hooks = None
    _tensor_hooks = None
    _retain_hooks = None
    metadata_ = None
    _n_outputs = 1

    # run even when every incoming gradient is undefined (custom Functions do, as torch's)
    _apply_undefined = False

    # select/slice nodes: ``(**params) -> index`` of their output in their one input, which
    # lets the engine write their gradient into a slice of one buffer (see engine._send_slice)
    _grad_slice = None

    def __init__(self):
        self._seq = next(_seq)
        self.next_functions = ()
        self._input_meta = ()

    def name(self) -> str:
        """Return the node's name, torch's class name for the same backward."""
        return type(self).__name__

    def __repr__(self) -> str:
        return f"<{type(self).__name__} object at {id(self):#x}>"

    @property
    def metadata(self) -> dict:
        if self.metadata_ is None:
            self.metadata_ = {}
        return self.metadata_

    def _sequence_nr(self) -> int:
        return self._seq

    def register_hook(self, fn) -> RemovableHandle:
        """Register ``fn(grad_inputs, grad_outputs) -> grad_inputs | None``, run after this
        node's backward; return a handle with ``remove()``."""
        if self._post_hooks is None:
            self._post_hooks = _HookDict()
        return add_hook(self._post_hooks, fn)

    def register_prehook(self, fn) -> RemovableHandle:
        """Register ``fn(grad_outputs) -> grad_outputs | None``, run before this node's
        backward; return a handle with ``remove()``."""
        if self._pre_hooks is None:
            self._pre_hooks = _HookDict()
        return add_hook(self._pre_hooks, fn)

    def _add_tensor_hook(self, output_nr: int, fn, retain: bool = False) -> RemovableHandle:
        """Register a ``Tensor.register_hook`` hook (or, ``retain=True``, the ``retain_grad``
        hook) for this node's output ``output_nr``.

        Tensor hooks run in registration order; retain_grad hooks always run after them (one
        per output), as in torch.
        """
        if retain:
            if self._retain_hooks is None:
                self._retain_hooks = _HookDict()
            table = self._retain_hooks
            for key in [k for k, (nr, _) in table.items() if nr == output_nr]:
                del table[key]
        else:
            if self._tensor_hooks is None:
                self._tensor_hooks = _HookDict()
            table = self._tensor_hooks
        return add_hook(table, (output_nr, fn))

    def apply(self, grads: list) -> tuple:
        """Return the gradients for this node's inputs, given those of its outputs."""
        raise NotImplementedError

    def __call__(self, *grads):
        return self.apply(list(grads))

    def release(self) -> None:
        """Free saved tensors (after a backward without ``retain_graph``)."""


class AccumulateGrad(Node):
    """The node that adds incoming gradient into a leaf's ``.grad``."""

    __slots__ = ("variable",)

    def name(self) -> str:
        return "torch::autograd::AccumulateGrad"

    def __init__(self, variable):
        super().__init__()
        self._seq = float("inf")  # run as soon as ready, as torch's UINT64_MAX
        self.variable = variable
        self._input_meta = ((variable._data.shape, variable.dtype),)

    def apply(self, grads: list) -> tuple:
        # take the gradient out of the list so that, when nobody else holds it, it can be
        # stolen rather than copied (torch's AccumulateGrad does the same with use counts)
        g = grads[0]
        grads[0] = None
        var = self.variable
        if g is not None and var._requires_grad:
            _accumulate(var, g)
        hooks = getattr(var, "_post_acc_hooks", None)
        if hooks:
            for hook in tuple(hooks.values()):
                r = hook(var)
                if r is not None:
                    from ember._core.tensor import Tensor

                    if isinstance(r, Tensor):
                        raise RuntimeError("Tensor post accumulate grad hooks should return None.")
                    raise TypeError(f"expected Variable, but hook returned '{type(r).__name__}'")
        return ()


def _refs_seen_by_callee(obj) -> int:
    return sys.getrefcount(obj)


def _one_holder() -> int:
    obj = object()  # held by this frame only
    return _refs_seen_by_callee(obj)


# what ``sys.getrefcount`` reports, inside a called function, for an object with one holder
# (the count includes the call's own references, which differ between Python versions)
_ONE_HOLDER = _one_holder()


# ember.sparse sets this when the first sparse tensor is made: ``(var, g) -> bool`` accumulates
# when ``g`` or ``var.grad`` is sparse (True) and declines otherwise (dense programs: one test)
SPARSE_ACCUMULATE = None


def _accumulate(var, g) -> None:
    """Add gradient ``g`` into ``var.grad`` as torch's ``AccumulateGrad::accumulateGrad``."""
    if SPARSE_ACCUMULATE is not None and SPARSE_ACCUMULATE(var, g):
        return
    if _meta.LIVE and _meta.is_meta(var._data):
        # a meta parameter's gradient is meta (the engine's seeds and kernels are CPU arrays)
        if not _meta.is_meta(g._data):
            g = g.detach()
            g._data = _meta.meta_array(var._data.shape, var._data.dtype)
        if var._grad is None:
            var._grad = g
        return
    old = var._grad
    if old is None:
        if STATE.grad_enabled:  # create_graph: the new .grad is differentiable
            var._grad = _clone_obey_contract(g, var, differentiable=True)
        elif sys.getrefcount(g) <= _ONE_HOLDER and _stealable(g, var._data):
            var._grad = g.detach() if g._requires_grad else g
        else:
            var._grad = _clone_obey_contract(g, var, differentiable=False)
    elif STATE.grad_enabled:
        var._grad = old + g
    elif old._data.flags.writeable:
        np.add(old._data, g._data, out=old._data, casting="unsafe")
        old._vc[0] += 1
    else:
        var._grad = (old + g).detach()


def _stealable(g, like: np.ndarray) -> bool:
    """True if the array of gradient ``g`` can become ``.grad`` as is: nothing else refers to it
    (a NumPy view of it would) nor, for a view, to the array it views, except ``g``'s own base
    tensor when only ``g`` holds that; and its layout is the one ``.grad`` must have."""
    a = g._data
    # a local name has ``holders + 2`` references here (the name and getrefcount's argument)
    if not a.flags.writeable or sys.getrefcount(a) > 1 + 2:  # held by ``g`` only
        return False
    base = a.base
    if base is not None:
        if type(base) is not np.ndarray:
            return False
        holders = 1 + _private_base(g._base, base)
        if sys.getrefcount(base) > holders + 2:
            return False
    return a.flags.c_contiguous if like.flags.c_contiguous else _same_layout(a, like)


def _private_base(bt, base: np.ndarray) -> bool:
    """True if tensor ``bt`` (a view's ``_base``) holds ``base``, directly or through an array
    of its own, and nothing but that view holds ``bt``."""
    if bt is None or sys.getrefcount(bt) > 1 + 2:  # held by the view only
        return False
    d = bt._data
    return d is base or (d.base is base and sys.getrefcount(d) <= 1 + 2)


def _non_overlapping_and_dense(a: np.ndarray) -> bool:
    dims = sorted((s, n) for s, n in zip(a.strides, a.shape) if n != 1)
    expected = a.itemsize
    for stride, n in dims:
        if stride != expected:
            return False
        expected *= n
    return True


def _same_layout(a: np.ndarray, like: np.ndarray) -> bool:
    if _non_overlapping_and_dense(like):
        return all(n == 1 or s == t for s, t, n in zip(a.strides, like.strides, like.shape))
    return a.flags.c_contiguous


def _empty_like_layout(like: np.ndarray, dtype) -> np.ndarray:
    """An uninitialised array shaped as ``like``, with its strides when it is dense (torch's
    gradient layout contract), else C-contiguous."""
    if like.flags.c_contiguous or not _non_overlapping_and_dense(like):
        return np.empty(like.shape, dtype=dtype)
    # allocate in the order of ``like``'s strides, then view it back in ``like``'s dim order
    order = sorted(range(like.ndim), key=lambda d: -like.strides[d])
    buf = np.empty(tuple(like.shape[d] for d in order), dtype=dtype)
    return buf.transpose(np.argsort(order))


def _clone_obey_contract(g, var, differentiable: bool):
    from ember._core.tensor import _wrap

    like = var._data
    if differentiable and g._requires_grad:
        # torch: new_empty_strided(...).copy_(grad), whose grad_fn is CopyBackwards
        if like.flags.c_contiguous or _non_overlapping_and_dense(like):
            return _wrap(_empty_like_layout(like, g._data.dtype)).copy_(g)
        return g.clone()
    out = _empty_like_layout(like, g._data.dtype)
    np.copyto(out, g._data)
    return _wrap(out)


def move_retain_hook(t, old_fn, old_nr: int) -> None:
    """Move ``t``'s ``retain_grad`` hook from output ``old_nr`` of ``old_fn`` to its current
    history (``t.grad_fn``, ``t.output_nr``).

    Called when an in-place op rebases ``t``'s history: ``t.grad`` is then the gradient of the
    new value, as in torch (hooks from ``register_hook`` stay with the old value).
    """
    table = old_fn._retain_hooks if old_fn is not None else None
    if not table or t.grad_fn is None or t.grad_fn is old_fn:
        return
    for key, (nr, fn) in list(table.items()):
        if nr == old_nr:
            del table[key]
            t.grad_fn._add_tensor_hook(t._output_nr, fn, retain=True)


def accumulate_node(t) -> AccumulateGrad:
    """Return the (cached, weakly held) AccumulateGrad node of leaf ``t``."""
    ref = t._accum
    node = ref() if ref is not None else None
    if node is None:
        node = AccumulateGrad(t)
        t._accum = weakref.ref(node)
    return node


def edge_of(t):
    """Return the graph edge ``(node, output_nr)`` that gradients for ``t`` flow into."""
    if t.grad_fn is not None:
        return (t.grad_fn, t._output_nr)
    if t._requires_grad and not t._view_no_grad:
        return (accumulate_node(t), 0)
    return (None, 0)

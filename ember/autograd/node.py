"""Graph nodes: what a ``grad_fn`` is.

A Node is one recorded call. ``next_functions`` holds one ``(node, output_nr)`` edge per
differentiable input (``AccumulateGrad`` for a leaf that requires grad, ``None`` otherwise).
Backward of a node maps the gradients of its outputs to gradients of its inputs. Saved tensors
remember the version counter value at save time; a later in-place write is caught on unpack.
"""

from __future__ import annotations

import itertools
import weakref

_seq = itertools.count()

FREED_MSG = (
    "Trying to backward through the graph a second time (or directly access saved tensors after "
    "they have already been freed). Saved intermediate values of the graph are freed when you "
    "call .backward() or autograd.grad(). Specify retain_graph=True if you need to backward "
    "through the graph a second time or if you need to access saved tensors after calling "
    "backward."
)


class RemovableHandle:
    """A handle whose ``remove()`` takes a hook out of the dict it was registered in."""

    _ids = itertools.count()

    def __init__(self, hooks: dict):
        self.id = next(RemovableHandle._ids)
        self._hooks = weakref.ref(hooks) if _weakrefable(hooks) else (lambda: hooks)

    def remove(self) -> None:
        hooks = self._hooks()
        if hooks is not None:
            hooks.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.remove()


class _HookDict(dict):
    """A dict that can be weakly referenced (plain dicts cannot)."""

    __slots__ = ("__weakref__",)


def _weakrefable(obj) -> bool:
    return isinstance(obj, _HookDict)


def add_hook(hooks: _HookDict, fn) -> RemovableHandle:
    handle = RemovableHandle(hooks)
    hooks[handle.id] = fn
    return handle


class SavedTensor:
    """A tensor saved for backward, with the version it had when saved.

    An op's own output is saved without its ``grad_fn`` (that would be a reference cycle) and
    re-linked to the node on unpack, as torch does.
    """

    __slots__ = ("tensor", "version", "is_output")

    def __init__(self, tensor, is_output: bool = False):
        self.tensor = tensor.detach() if is_output else tensor
        self.version = tensor._version
        self.is_output = is_output

    def unpack(self, node):
        t = self.tensor
        if t._version != self.version:
            raise RuntimeError(
                "one of the variables needed for gradient computation has been modified by an "
                f"inplace operation: [{t.type()} {list(t.shape)}], which is output 0 of "
                f"{node.name()}, is at version {t._version}; expected version {self.version} "
                "instead. Hint: the backtrace further above can point to the operation that "
                "failed to compute its gradient. The variable in question was changed in there "
                "or anywhere later. Good luck!"
            )
        if self.is_output:
            out = t.detach()
            out._requires_grad = True
            out.grad_fn = node
            return out
        return t


class Node:
    """Base of every ``grad_fn``; ``name()`` is torch's class name (``MulBackward0``)."""

    __slots__ = (
        "next_functions",
        "_input_meta",
        "_seq",
        "_pre_hooks",
        "_post_hooks",
        "_tensor_hooks",
        "_retain_hooks",
        "metadata_",
        "_n_outputs",
        "__weakref__",
    )

    def __init__(self):
        self._seq = next(_seq)
        self.next_functions = ()
        self._input_meta = ()
        self._pre_hooks = None
        self._post_hooks = None
        self._tensor_hooks = None
        self._retain_hooks = None
        self.metadata_ = None
        self._n_outputs = 1

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
        """Register ``fn(grad_inputs, grad_outputs)`` to run after this node's backward."""
        if self._post_hooks is None:
            self._post_hooks = _HookDict()
        return add_hook(self._post_hooks, fn)

    def register_prehook(self, fn) -> RemovableHandle:
        """Register ``fn(grad_outputs)`` to run before this node's backward."""
        if self._pre_hooks is None:
            self._pre_hooks = _HookDict()
        return add_hook(self._pre_hooks, fn)

    def _add_tensor_hook(self, output_nr: int, fn, retain: bool = False) -> RemovableHandle:
        # hooks registered with Tensor.register_hook on this node's output ``output_nr``;
        # retain_grad hooks always run after the others, as in torch
        attr = "_retain_hooks" if retain else "_tensor_hooks"
        table = getattr(self, attr)
        if table is None:
            table = {}
            setattr(self, attr, table)
        hooks = table.get(output_nr)
        if hooks is None:
            hooks = table[output_nr] = _HookDict()
        if retain:
            hooks.clear()
        return add_hook(hooks, fn)

    def apply(self, grads: list) -> tuple:
        raise NotImplementedError

    def __call__(self, *grads):
        return self.apply(list(grads))

    def release(self) -> None:
        """Free saved tensors (after a backward without ``retain_graph``)."""


class AccumulateGrad(Node):
    """The node that adds incoming gradient into a leaf's ``.grad``."""

    __slots__ = ("variable",)

    def __init__(self, variable):
        super().__init__()
        self._seq = float("inf")  # run as soon as ready, as torch's UINT64_MAX
        self.variable = variable
        self._input_meta = ((variable.shape, variable.dtype),)


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
    if t._requires_grad:
        return (accumulate_node(t), 0)
    return (None, 0)

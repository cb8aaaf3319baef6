"""``ember.autograd.graph``: the graph's node type and the hooks on saved tensors.

``saved_tensors_hooks(pack, unpack)`` changes what the graph keeps for backward: every tensor an
op (or a custom Function) saves while the context is active goes through ``pack``, and the graph
stores whatever ``pack`` returns; backward calls ``unpack`` on it to get a tensor back. This is
how ``save_on_cpu`` and non-reentrant ``checkpoint`` work.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

from ember._core.node import SAVED_HOOKS, Node, RemovableHandle, edge_of
from ember._core.tensor import Tensor

__all__ = [
    "Node",
    "RemovableHandle",
    "GradientEdge",
    "get_gradient_edge",
    "increment_version",
    "saved_tensors_hooks",
    "save_on_cpu",
    "disable_saved_tensors_hooks",
]

# the message raised when hooks are pushed while disabled (None: enabled)
_DISABLED: list = [None]


class saved_tensors_hooks:
    """Context manager setting ``pack_hook(tensor) -> Any`` and ``unpack_hook(Any) -> Tensor``
    for the tensors saved for backward while it is active (innermost pair wins)."""

    def __init__(
        self, pack_hook: Callable[[Tensor], Any], unpack_hook: Callable[[Any], Tensor]
    ) -> None:
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self) -> None:
        if _DISABLED[0] is not None:
            raise RuntimeError(_DISABLED[0])
        SAVED_HOOKS.append((self.pack_hook, self.unpack_hook))

    def __exit__(self, *args: object) -> None:
        SAVED_HOOKS.pop()


class save_on_cpu(saved_tensors_hooks):
    """Context manager storing saved tensors on the CPU and moving them back to their device
    for backward (on CPU tensors: no copy; the hooks still run)."""

    def __init__(self, pin_memory: bool = False, device_type: str = "cuda") -> None:
        def pack_to_cpu(tensor: Tensor):
            return (tensor.device, tensor.cpu())

        def unpack_from_cpu(packed) -> Tensor:
            device, tensor = packed
            return tensor.to(device)

        super().__init__(pack_to_cpu, unpack_from_cpu)


@contextlib.contextmanager
def disable_saved_tensors_hooks(error_message: str):
    """Context manager under which setting saved-tensor hooks raises ``RuntimeError``."""
    prev = _DISABLED[0]
    _DISABLED[0] = error_message
    try:
        yield
    finally:
        _DISABLED[0] = prev


class GradientEdge(NamedTuple):
    """Where the gradient of a tensor is computed: a node and which of its outputs."""

    node: Node
    output_nr: int
    ownership_token: Node | None = None


def get_gradient_edge(tensor: Tensor) -> GradientEdge:
    """Return the ``GradientEdge`` of ``tensor`` (its grad_fn, or a leaf's AccumulateGrad)."""
    if not tensor.requires_grad:
        raise RuntimeError(
            "It is not possible to get the gradient edge for a Tensor that does not require "
            "gradients"
        )
    node, nr = edge_of(tensor)
    return GradientEdge(node, nr)


def increment_version(tensor: Tensor | Iterable[Tensor]) -> None:
    """Bump the version counter of ``tensor`` (for in-place writes autograd cannot see)."""
    for t in (tensor,) if isinstance(tensor, Tensor) else tensor:
        t._vc[0] += 1

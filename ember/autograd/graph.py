"""``ember.autograd.graph``: the graph's node type (``isinstance(t.grad_fn, Node)``)."""

from ember.autograd.node import Node, RemovableHandle

__all__ = ["Node", "RemovableHandle"]

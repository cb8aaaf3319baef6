"""``torch.utils._pytree``: nested containers flattened to a list of leaves and a spec.

A pytree is a leaf or a container node (``list``, ``tuple``, ``dict``, ``OrderedDict``,
``defaultdict``, ``deque``, a namedtuple, or a type given to :func:`register_pytree_node`) of
pytrees. ``tree_flatten`` returns the leaves in order and a :class:`TreeSpec` that
``tree_unflatten`` rebuilds the same structure from; ``tree_map`` applies a function to every
leaf. ``None`` is a leaf, as in torch 2.13.
"""

from __future__ import annotations

import collections
import dataclasses
from collections.abc import Callable, Iterable
from typing import Any

__all__ = [
    "LeafSpec",
    "PyTree",
    "TreeSpec",
    "register_pytree_node",
    "tree_all",
    "tree_any",
    "tree_flatten",
    "tree_is_leaf",
    "tree_leaves",
    "tree_map",
    "tree_map_",
    "tree_map_only",
    "tree_structure",
    "tree_unflatten",
]

PyTree = Any


@dataclasses.dataclass(frozen=True)
class _NodeDef:
    flatten: Callable[[Any], tuple[list, Any]]  # node -> (children, context)
    unflatten: Callable[[Iterable, Any], Any]  # (children, context) -> node


def _is_namedtuple(x) -> bool:
    return isinstance(x, tuple) and hasattr(type(x), "_fields")


_NODES: dict[type, _NodeDef] = {
    list: _NodeDef(lambda x: (list(x), None), lambda c, _: list(c)),
    tuple: _NodeDef(lambda x: (list(x), None), lambda c, _: tuple(c)),
    dict: _NodeDef(lambda x: (list(x.values()), list(x)), lambda c, k: dict(zip(k, c))),
    collections.OrderedDict: _NodeDef(
        lambda x: (list(x.values()), list(x)), lambda c, k: collections.OrderedDict(zip(k, c))
    ),
    collections.defaultdict: _NodeDef(
        lambda x: (list(x.values()), (x.default_factory, list(x))),
        lambda c, ctx: collections.defaultdict(ctx[0], zip(ctx[1], c)),
    ),
    collections.deque: _NodeDef(
        lambda x: (list(x), x.maxlen), lambda c, n: collections.deque(c, maxlen=n)
    ),
}
_NAMEDTUPLE = _NodeDef(lambda x: (list(x), type(x)), lambda c, cls: cls(*c))


def register_pytree_node(
    cls: type,
    flatten_fn: Callable[[Any], tuple[list, Any]],
    unflatten_fn: Callable[[Iterable, Any], Any],
    *,
    serialized_type_name: str | None = None,
    **kwargs,
) -> None:
    """Make instances of ``cls`` pytree nodes: ``flatten_fn(x) -> (children, context)`` and
    ``unflatten_fn(children, context) -> x``."""
    if cls in _NODES:
        raise ValueError(f"{cls} is already registered as pytree node.")
    _NODES[cls] = _NodeDef(flatten_fn, unflatten_fn)


def _node_def(x) -> _NodeDef | None:
    node = _NODES.get(type(x))
    if node is None and _is_namedtuple(x):
        return _NAMEDTUPLE
    return node


def tree_is_leaf(tree: PyTree, is_leaf: Callable[[PyTree], bool] | None = None) -> bool:
    """Return True if ``tree`` is a leaf (not a registered container)."""
    return (is_leaf is not None and is_leaf(tree)) or _node_def(tree) is None


class TreeSpec:
    """The structure of a pytree: node type, its context (dict keys...), children's specs."""

    def __init__(self, type: type | None, context: Any, children_specs: list[TreeSpec]):
        self.type = type
        self.context = context
        self.children_specs = children_specs
        self.num_leaves = sum(c.num_leaves for c in children_specs) if type is not None else 1
        self.num_nodes = 1 + sum(c.num_nodes for c in children_specs)
        self.num_children = len(children_specs)

    def is_leaf(self) -> bool:
        return self.type is None

    def children(self) -> list[TreeSpec]:
        return list(self.children_specs)

    def child(self, index: int) -> TreeSpec:
        return self.children_specs[index]

    def unflatten(self, leaves: Iterable[Any]) -> PyTree:
        leaves = list(leaves)
        if len(leaves) != self.num_leaves:
            raise ValueError(
                f"treespec.unflatten(leaves): `leaves` has length {len(leaves)} but the spec "
                f"refers to a pytree that holds {self.num_leaves} items ({self})."
            )
        return self._build(iter(leaves))

    def _build(self, leaves):
        if self.type is None:
            return next(leaves)
        children = [c._build(leaves) for c in self.children_specs]
        node = _NAMEDTUPLE if self.type is _NamedTupleType else _NODES[self.type]
        return node.unflatten(children, self.context)

    def __eq__(self, other) -> bool:
        return isinstance(other, TreeSpec) and (self.type, self.context, self.children_specs) == (
            other.type,
            other.context,
            other.children_specs,
        )

    def __hash__(self):
        return hash((self.type, self.num_nodes, self.num_leaves))

    def __repr__(self) -> str:
        if self.type is None:
            return "*"
        name = "namedtuple" if self.type is _NamedTupleType else self.type.__name__
        inner = ", ".join(repr(c) for c in self.children_specs)
        return f"TreeSpec({name}, {self.context!r}, [{inner}])"


class _NamedTupleType:
    """The spec type of every namedtuple (the class itself is the spec's context)."""


def LeafSpec() -> TreeSpec:  # noqa: N802 (torch's name for the spec of a leaf)
    """The spec of a single leaf."""
    return TreeSpec(None, None, [])


def _flatten(tree, leaves: list, is_leaf) -> TreeSpec:
    node = None if (is_leaf is not None and is_leaf(tree)) else _node_def(tree)
    if node is None:
        leaves.append(tree)
        return LeafSpec()
    children, context = node.flatten(tree)
    kind = _NamedTupleType if node is _NAMEDTUPLE else type(tree)
    return TreeSpec(kind, context, [_flatten(c, leaves, is_leaf) for c in children])


def tree_flatten(
    tree: PyTree, is_leaf: Callable[[PyTree], bool] | None = None
) -> tuple[list[Any], TreeSpec]:
    """Return the leaves of ``tree`` in order and the :class:`TreeSpec` of its structure."""
    leaves: list = []
    spec = _flatten(tree, leaves, is_leaf)
    return leaves, spec


def tree_unflatten(leaves: Iterable[Any], treespec: TreeSpec) -> PyTree:
    """Rebuild the pytree of ``treespec`` from ``leaves``."""
    if not isinstance(treespec, TreeSpec):
        raise TypeError(
            f"tree_unflatten(leaves, treespec): Expected `treespec` to be instance of "
            f"TreeSpec but got item of type {type(treespec)}."
        )
    return treespec.unflatten(leaves)


def tree_leaves(tree: PyTree, is_leaf: Callable[[PyTree], bool] | None = None) -> list[Any]:
    """Return the leaves of ``tree`` in order."""
    return tree_flatten(tree, is_leaf)[0]


def tree_structure(tree: PyTree, is_leaf: Callable[[PyTree], bool] | None = None) -> TreeSpec:
    """Return the :class:`TreeSpec` of ``tree``."""
    return tree_flatten(tree, is_leaf)[1]


def tree_map(
    func: Callable[..., Any],
    tree: PyTree,
    *rests: PyTree,
    is_leaf: Callable[[PyTree], bool] | None = None,
) -> PyTree:
    """Return ``tree`` with each leaf ``x`` replaced by ``func(x, *matching leaves of rests)``."""
    leaves, spec = tree_flatten(tree, is_leaf)
    others = [tree_leaves(r, is_leaf) for r in rests]
    return spec.unflatten(func(*xs) for xs in zip(leaves, *others))


def tree_map_(
    func: Callable[..., Any],
    tree: PyTree,
    *rests: PyTree,
    is_leaf: Callable[[PyTree], bool] | None = None,
) -> PyTree:
    """Call ``func`` on every leaf (for its effect); return ``tree`` itself."""
    leaves = tree_leaves(tree, is_leaf)
    others = [tree_leaves(r, is_leaf) for r in rests]
    for xs in zip(leaves, *others):
        func(*xs)
    return tree


def tree_map_only(
    type_or_types: type | tuple[type, ...],
    func: Callable[[Any], Any],
    tree: PyTree,
    is_leaf: Callable[[PyTree], bool] | None = None,
) -> PyTree:
    """As :func:`tree_map`, applying ``func`` only to leaves of the given type(s)."""
    return tree_map(lambda x: func(x) if isinstance(x, type_or_types) else x, tree, is_leaf=is_leaf)


def tree_all(
    pred: Callable[[Any], bool], tree: PyTree, is_leaf: Callable[[PyTree], bool] | None = None
) -> bool:
    """Return True if ``pred`` holds for every leaf."""
    return all(map(pred, tree_leaves(tree, is_leaf)))


def tree_any(
    pred: Callable[[Any], bool], tree: PyTree, is_leaf: Callable[[PyTree], bool] | None = None
) -> bool:
    """Return True if ``pred`` holds for some leaf."""
    return any(map(pred, tree_leaves(tree, is_leaf)))

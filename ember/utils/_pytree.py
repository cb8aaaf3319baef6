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
    "SUPPORTED_NODES",
    "NodeDef",
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
class NodeDef:
    """How one container type flattens: ``flatten_fn(node) -> (children, context)``,
    ``unflatten_fn(children, context) -> node``."""

    type: Any
    flatten_fn: Callable[[Any], tuple[list, Any]]
    unflatten_fn: Callable[[Iterable, Any], Any]


def _is_namedtuple(x) -> bool:
    return isinstance(x, tuple) and hasattr(type(x), "_fields")


def _node(cls, flatten_fn, unflatten_fn) -> tuple:
    return cls, NodeDef(cls, flatten_fn, unflatten_fn)


# the registered container types (torch's name); namedtuples share one entry, keyed by
# ``collections.namedtuple`` as torch keys it, their class being the context
SUPPORTED_NODES: dict[Any, NodeDef] = dict(
    [
        _node(list, lambda x: (list(x), None), lambda c, _: list(c)),
        _node(tuple, lambda x: (list(x), None), lambda c, _: tuple(c)),
        _node(dict, lambda x: (list(x.values()), list(x)), lambda c, k: dict(zip(k, c))),
        _node(
            collections.OrderedDict,
            lambda x: (list(x.values()), list(x)),
            lambda c, k: collections.OrderedDict(zip(k, c)),
        ),
        _node(
            collections.defaultdict,
            lambda x: (list(x.values()), (x.default_factory, list(x))),
            lambda c, ctx: collections.defaultdict(ctx[0], zip(ctx[1], c)),
        ),
        _node(
            collections.deque,
            lambda x: (list(x), x.maxlen),
            lambda c, n: collections.deque(c, maxlen=n),
        ),
        _node(collections.namedtuple, lambda x: (list(x), type(x)), lambda c, cls: cls(*c)),
    ]
)


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
    if cls in SUPPORTED_NODES:
        raise ValueError(f"{cls} is already registered as pytree node.")
    SUPPORTED_NODES[cls] = NodeDef(cls, flatten_fn, unflatten_fn)


def _get_node_type(tree: PyTree) -> Any:
    """Return the key of ``tree``'s entry in ``SUPPORTED_NODES`` (``collections.namedtuple``
    for every namedtuple; else its type)."""
    if _is_namedtuple(tree) and type(tree) not in SUPPORTED_NODES:
        return collections.namedtuple
    return type(tree)


def _node_def(x) -> NodeDef | None:
    return SUPPORTED_NODES.get(_get_node_type(x))


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
        return SUPPORTED_NODES[self.type].unflatten_fn(children, self.context)

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
        name = self.type.__name__
        inner = ", ".join(repr(c) for c in self.children_specs)
        return f"TreeSpec({name}, {self.context!r}, [{inner}])"


def LeafSpec() -> TreeSpec:  # noqa: N802 (torch's name for the spec of a leaf)
    """The spec of a single leaf."""
    return TreeSpec(None, None, [])


def _flatten(tree, leaves: list, is_leaf) -> TreeSpec:
    node = None if (is_leaf is not None and is_leaf(tree)) else _node_def(tree)
    if node is None:
        leaves.append(tree)
        return LeafSpec()
    children, context = node.flatten_fn(tree)
    return TreeSpec(node.type, context, [_flatten(c, leaves, is_leaf) for c in children])


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

"""``torch.fx.replace_pattern``: replace every match of a pattern subgraph."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any, NamedTuple

from ember.fx.graph import Graph
from ember.fx.graph_module import GraphModule
from ember.fx.node import Node, map_arg

__all__ = ["Match", "replace_pattern"]


class Match(NamedTuple):
    """One replaced match: the pattern's anchor node and pattern node -> graph node."""

    anchor: Node
    nodes_map: dict[Node, Node]


def _as_graph(fn_or_gm: Callable | GraphModule | Graph) -> Graph:
    if isinstance(fn_or_gm, Graph):
        return fn_or_gm
    if isinstance(fn_or_gm, GraphModule):
        return fn_or_gm.graph
    from ember.fx._symbolic_trace import symbolic_trace

    return symbolic_trace(fn_or_gm).graph


def _match_node(pn: Node, gn: Node, nodes_map: dict[Node, Node]) -> bool:
    if pn in nodes_map:
        return nodes_map[pn] is gn
    if pn.op == "placeholder":
        nodes_map[pn] = gn
        return True
    if pn.op != gn.op or pn.target != gn.target:
        return False
    if len(pn.args) != len(gn.args) or set(pn.kwargs) != set(gn.kwargs):
        return False
    nodes_map[pn] = gn
    pairs = list(zip(pn.args, gn.args)) + [(pn.kwargs[k], gn.kwargs[k]) for k in pn.kwargs]
    for pa, ga in pairs:
        if not _match_arg(pa, ga, nodes_map):
            del nodes_map[pn]
            return False
    return True


def _match_arg(pa: Any, ga: Any, nodes_map: dict[Node, Node]) -> bool:
    if isinstance(pa, Node):
        return isinstance(ga, Node) and _match_node(pa, ga, nodes_map)
    if isinstance(pa, (list, tuple)):
        return (
            isinstance(ga, (list, tuple))
            and len(pa) == len(ga)
            and all(_match_arg(a, b, nodes_map) for a, b in zip(pa, ga))
        )
    return pa == ga


def replace_pattern(
    gm: GraphModule, pattern: Callable | GraphModule, replacement: Callable | GraphModule
) -> list[Match]:
    """Replace every non-overlapping match of ``pattern``'s graph in ``gm`` with
    ``replacement``'s graph; recompile ``gm`` and return the matches."""
    original_graph = gm.graph
    pattern_graph = _as_graph(pattern)
    replacement_graph = _as_graph(replacement)
    p_out = next(n for n in reversed(pattern_graph.nodes) if n.op == "output")
    p_anchor = p_out.args[0]
    if not isinstance(p_anchor, Node):
        raise ValueError("replace_pattern supports patterns returning a single value")
    p_placeholders = [n for n in pattern_graph.nodes if n.op == "placeholder"]

    matches: list[Match] = []
    claimed: set[Node] = set()
    for gn in original_graph.nodes:
        nodes_map: dict[Node, Node] = {}
        if not _match_node(p_anchor, gn, nodes_map):
            continue
        internal = {g for p, g in nodes_map.items() if p.op != "placeholder"}
        if internal & claimed:
            continue
        # values computed inside the match may only be used inside it (except the anchor)
        escapes = any(user not in internal for g in internal if g is not gn for user in g.users)
        if escapes:
            continue
        claimed |= internal
        matches.append(Match(anchor=p_anchor, nodes_map=nodes_map))

    replaced: dict[Node, Any] = {}

    def resolve(n: Any) -> Any:
        while isinstance(n, Node) and n in replaced:
            n = replaced[n]
        return n

    r_placeholders = [n for n in replacement_graph.nodes if n.op == "placeholder"]
    order = {n: i for i, n in enumerate(original_graph.nodes)}
    for match in matches:
        anchor = match.nodes_map[p_anchor]
        val_map: dict[Node, Any] = {}
        for pp in p_placeholders:  # an input made by an earlier replacement: its new node
            match.nodes_map[pp] = resolve(match.nodes_map[pp])
        for rp, pp in zip(r_placeholders, p_placeholders):
            val_map[rp] = match.nodes_map[pp]
        users = sorted(anchor.users, key=lambda u: order.get(u, len(order)))
        insert_at = users[0] if users else anchor.next
        with original_graph.inserting_before(insert_at):
            for rn in replacement_graph.nodes:
                if rn.op == "placeholder":
                    continue
                if rn.op == "output":
                    new_out = map_arg(rn.args[0], val_map.__getitem__)
                    break
                if rn.op in ("get_attr", "call_module"):
                    _copy_target(replacement, gm, rn.target)
                val_map[rn] = original_graph.node_copy(rn, val_map.__getitem__)
        anchor.replace_all_uses_with(new_out)
        replaced[anchor] = new_out
        internal = {g for p, g in match.nodes_map.items() if p.op != "placeholder"}
        for g in reversed(list(original_graph.nodes)):
            if g in internal and len(g.users) == 0:
                original_graph.erase_node(g)
    gm.recompile()
    return matches


def _copy_target(src: Any, gm: GraphModule, target: str) -> None:
    from ember.nn import Module

    if not isinstance(src, Module) or hasattr(gm, target.split(".")[0]):
        return
    obj = src
    for atom in target.split("."):
        obj = getattr(obj, atom)
    if isinstance(obj, Module):
        gm.add_submodule(target, copy.deepcopy(obj))
    else:
        setattr(gm, target, obj)

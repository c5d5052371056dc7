"""Check for notebook 04's exercise: capture a diamond (one kernel, two concurrent branches, a join)."""
from __future__ import annotations

import numpy as np

from ...backends import races

__all__ = ["check_diamond"]


def check_diamond(graph, result=None, expected=None) -> None:
    """Pass if ``graph`` is a diamond: 4 kernel nodes, one root feeding two independent branches
    that both feed one final node (4 edges); and, if given, ``result`` equals ``expected``.
    """
    if not hasattr(graph, "to_networkx"):
        raise ValueError(f"pass the labkit.Graph of your capture (cap.graph), got {type(graph).__name__}")
    g = graph.to_networkx()
    kinds = [g.nodes[n]["kind"] for n in g.nodes]
    if kinds.count("kernel") != 4 or len(kinds) != 4:
        raise AssertionError(f"the diamond has 4 kernel nodes (first, two branches, last); your "
                             f"graph has {len(kinds)} nodes: {kinds}")
    roots = [n for n in g if g.in_degree(n) == 0]
    sinks = [n for n in g if g.out_degree(n) == 0]
    if g.number_of_edges() == 3 and len(roots) == 1 and len(sinks) == 1:
        raise AssertionError("your graph is a chain: the two middle kernels run one after the "
                             "other, because one stream runs its work in order. Fork a second "
                             "stream off the origin (section 2) and give each middle kernel its "
                             "own stream, so neither waits for the other")
    if len(sinks) != 1:
        raise AssertionError(f"your graph ends in {len(sinks)} nodes, not one: the last kernel must "
                             "come after both branches (join the side stream back before it)")
    if len(roots) != 1:
        raise AssertionError(f"your graph starts with {len(roots)} nodes, not one: fork the side "
                             "stream after the first kernel, so both branches depend on it")
    root, sink = roots[0], sinks[0]
    middle = [n for n in g if n not in (root, sink)]
    if g.has_edge(middle[0], middle[1]) or g.has_edge(middle[1], middle[0]):
        raise AssertionError("you forked, but your two middle kernels still run one after the "
                             "other: they went on the same stream. A fork only lets them overlap "
                             "if each branch runs on its own stream")
    want = {(root, middle[0]), (root, middle[1]), (middle[0], sink), (middle[1], sink)}
    if set(g.edges) != want:
        raise AssertionError(f"not a diamond: edges {sorted(g.edges)}; each branch must depend "
                             "only on the first kernel, and the last kernel on both branches")
    _refuse_racing_branches(graph)
    if result is not None:
        result, expected = np.asarray(result), np.asarray(expected)
        if result.shape != expected.shape or not np.allclose(result, expected):
            raise AssertionError(f"the graph has the right shape but computes the wrong values: got "
                                 f"{result.ravel()[:4]}..., expected {expected.ravel()[:4]}...")
    print("correct: one kernel, two branches that can run at the same time, and a join")


def _refuse_racing_branches(graph) -> None:
    """Instantiate the graph once and read the simulator's race report for it: two nodes with
    no path between them, one writing what the other touches (on a GPU no tool reports this;
    there only the values are checked)."""
    before = len(races())
    graph.instantiate().close()
    mine = [r for r in races()[before:] if r.where == "graph"]
    if mine:
        r = mine[0]
        raise AssertionError(
            f"your two branches race: {r.first} and {r.second} both use {r.buffer}, and one of "
            "them writes it, with no edge between them. On a GPU they run in either order or "
            "at once, so what the other one reads depends on timing. Each branch may read "
            "what the first kernel made, but must write only a buffer of its own")

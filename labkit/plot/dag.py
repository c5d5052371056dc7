"""A graph's DAG, drawn top-down in layers (networkx's `topological_generations`, placed by its
`multipartite_layout`), nodes coloured by kind and labelled with their kernels' names."""
from __future__ import annotations

import networkx as nx
from matplotlib.lines import Line2D

from labkit.plot import _axes
from labkit.plot.theme import NODE_COLORS, UNKNOWN_NODE_COLOR, style

__all__ = ["graph_dag"]

_DAG_LABEL_CHARS = 10


def _layered_positions(g: nx.DiGraph) -> tuple[dict, list[list]]:
    """Top-down layers from topological generations; within a layer, nodes are ordered by the
    mean rank of their parents (a barycentre pass), which keeps fork/join drawings tidy."""
    try:
        layers = [list(layer) for layer in nx.topological_generations(g)]
    except nx.NetworkXUnfeasible as exc:
        raise ValueError("the graph has a cycle, but a CUDA graph is a DAG; look for an edge "
                         "that points back to an earlier node") from exc
    order = {node: i for i, node in enumerate(g.nodes)}
    rank: dict = {}
    for depth, layer in enumerate(layers):
        def barycentre(node):
            parents = [rank[p] for p in g.predecessors(node) if p in rank]
            return (sum(parents) / len(parents) if parents else 0.0, order[node])
        layer.sort(key=barycentre if depth else order.__getitem__)
        rank.update({node: i - (len(layer) - 1) / 2 for i, node in enumerate(layer)})
    if not layers:
        return {}, layers
    pos = nx.multipartite_layout(g, subset_key=dict(enumerate(layers)), align="horizontal")
    # multipartite_layout puts the first layer at the bottom: the source goes on top
    return {node: (float(x), -float(y)) for node, (x, y) in pos.items()}, layers


def _dag_text(attrs: dict, node) -> str:
    """A node's label: its kernel's name (or its kind), at most ten characters."""
    name = attrs.get("name")
    text = str(name) if name else str(attrs.get("label", node))
    return text if len(text) <= _DAG_LABEL_CHARS else text[:_DAG_LABEL_CHARS - 1] + "…"


def graph_dag(g, ax=None, title: str = "Graph", provenance: str | None = None,
              made: str | None = None):
    """Draw a graph's DAG top-down, nodes coloured by kind, each labelled with its kernel's
    name inside its circle (networkx + matplotlib only).

    Parameters
    ----------
    g : networkx.DiGraph or object with ``to_networkx()``
        Nodes may carry ``kind`` ("kernel", "memcpy", "memset", "empty", "event_record",
        "wait_event", "graph", ...), ``name`` (a kernel's name; cut to ten characters) and
        ``label`` (used when there is no name) attributes.
    ax : matplotlib Axes, optional
    title : str
        Node and edge counts are appended.
    provenance : str, optional
        By default the drawing says it is a shape, captured (or built) on the GPU or the
        simulator: not a measurement.
    made : {"captured", "built"}, optional
        How the graph was made, for that line; by default what the graph says
        (`labkit.Graph.made`, or a networkx graph's ``graph["made"]``), else "captured".

    Returns
    -------
    matplotlib.axes.Axes
    """
    graph = g.to_networkx() if hasattr(g, "to_networkx") else g
    if not isinstance(graph, nx.DiGraph):
        raise TypeError(f"graph_dag needs a networkx.DiGraph or an object with .to_networkx(), "
                        f"got {type(g).__name__}")
    # the shape line is made first: a wrong ``made`` fails here, even with a provenance given
    shape_line = _axes.shape_provenance(made or graph.graph.get("made", "captured"))
    pos, layers = _layered_positions(graph)
    n_nodes, n_edges = graph.number_of_nodes(), graph.number_of_edges()
    widest = max((len(layer) for layer in layers), default=1)
    # Labels stop being readable past a few dozen nodes; the shape still tells the story.
    texts = {n: _dag_text(graph.nodes[n], n) for n in graph.nodes}
    labelled = n_nodes <= 60
    font = 8 if n_nodes <= 30 else 6
    if labelled:
        # circle diameter (points) that holds the longest label: ~0.62 em per character
        longest = max((len(t) for t in texts.values()), default=1)
        node_size = max(28.0, 0.62 * font * longest + 9) ** 2
    else:
        node_size = 120
    with style():
        ax = _axes.new_axes(ax, (min(max(2 + 1.6 * widest, 5), 14),
                                 min(max(1.5 + 0.9 * len(layers), 3), 14)))
        if n_nodes == 0:
            ax.text(0.5, 0.5, "empty graph", ha="center", va="center", transform=ax.transAxes)
        else:
            nx.draw_networkx_edges(graph, pos, ax=ax, arrows=True, arrowstyle="-|>",
                                   arrowsize=12, node_size=node_size, edge_color="#555555")
            kinds = sorted({graph.nodes[n].get("kind", "unknown") for n in graph.nodes},
                           key=lambda k: (k not in NODE_COLORS, k))
            for kind in kinds:
                nodes = [n for n in graph.nodes if graph.nodes[n].get("kind", "unknown") == kind]
                nx.draw_networkx_nodes(graph, pos, nodelist=nodes, ax=ax, node_size=node_size,
                                       node_color=NODE_COLORS.get(kind, UNKNOWN_NODE_COLOR),
                                       edgecolors="#333333", linewidths=0.8)
            if labelled:
                nx.draw_networkx_labels(graph, pos, labels=texts, ax=ax, font_size=font)
            handles = [Line2D([], [], marker="o", linestyle="none", markersize=9,
                              markerfacecolor=NODE_COLORS.get(k, UNKNOWN_NODE_COLOR),
                              markeredgecolor="#333333", label=k) for k in kinds]
            ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.0, 1.0))
            ax.margins(0.15)
        ax.set_axis_off()
        return _axes.finish(ax, f"{title}: {n_nodes} nodes, {n_edges} edges",
                            shape_line if provenance is None else provenance, grid_axis=None)

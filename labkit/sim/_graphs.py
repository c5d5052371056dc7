"""Graphs of the simulated runtime: creating, cloning and editing them, and reading them back
(adding nodes is `labkit.sim._nodes`')."""
from __future__ import annotations

from cuda.bindings import runtime as _cr

from . import _graphmem
from . import _state as S

E, P, NT = S.E, S.P, S.NT
_node_t = _cr.cudaGraphNode_t


def cudaGraphCreate(flags):
    g = S.Graph()
    S.graphs[g.handle] = g
    return E.cudaSuccess, _cr.cudaGraph_t(g.handle)


def cudaGraphDestroy(graph):
    g = S.graph(graph)
    if g is None:
        return (S.fail(E.cudaErrorInvalidValue),)
    g.destroyed = True
    return S.OK


def cudaGraphGetNodes(graph, numNodes=0):
    g = S.graph(graph)
    if g is None:
        return (S.fail(E.cudaErrorInvalidValue), None, None)
    if not numNodes:
        return E.cudaSuccess, [], len(g.nodes)
    nodes = [_node_t(n.handle) for n in g.nodes[:numNodes]]
    nodes += [_node_t(0)] * (numNodes - len(nodes))
    return E.cudaSuccess, nodes, min(numNodes, len(g.nodes))


def cudaGraphGetRootNodes(graph, pNumRootNodes=0):
    g = S.graph(graph)
    if g is None:
        return (S.fail(E.cudaErrorInvalidValue), None, None)
    roots = [n for n in g.nodes if not n.deps]
    if not pNumRootNodes:
        return E.cudaSuccess, [], len(roots)
    return E.cudaSuccess, [_node_t(n.handle) for n in roots[:pNumRootNodes]], len(roots)


def edges(g):
    return [(d, n) for n in g.nodes for d in n.deps]


def cudaGraphGetEdges(graph, numEdges=0):
    g = S.graph(graph)
    if g is None:
        return (S.fail(E.cudaErrorInvalidValue), None, None, None, None)
    all_edges = edges(g)
    if not numEdges:
        return E.cudaSuccess, [], [], [], len(all_edges)
    got = all_edges[:numEdges]
    pad = numEdges - len(got)
    frm = [_node_t(a.handle) for a, _ in got] + [_node_t(0)] * pad
    to = [_node_t(b.handle) for _, b in got] + [_node_t(0)] * pad
    data = [edge_data(b, a) for a, b in got] + [_cr.cudaGraphEdgeData() for _ in range(pad)]
    return E.cudaSuccess, frm, to, data, len(got)


def edge_data(node, dep):
    """cuda-bindings' ``cudaGraphEdgeData`` of the edge ``dep -> node``."""
    d = _cr.cudaGraphEdgeData()
    if dep in node.ports:
        d.from_port, d.type = node.ports[dep]
    return d


def cudaGraphNodeGetType(node):
    hit = S.nodes.get(S.h(node))
    if hit is None:
        return (S.fail(E.cudaErrorInvalidValue), None)
    return E.cudaSuccess, hit[1].type


def cudaGraphNodeGetDependencies(node, pNumDependencies=0):
    hit = S.nodes.get(S.h(node))
    if hit is None:
        return (S.fail(E.cudaErrorInvalidValue), None, None, None)
    deps = hit[1].deps
    if not pNumDependencies:
        return E.cudaSuccess, [], [], len(deps)
    return (E.cudaSuccess, [_node_t(d.handle) for d in deps],
            [edge_data(hit[1], d) for d in deps], len(deps))


# ---------------------------------------------------------------- editing

def _editable(g):
    """A graph whose nodes and edges may be removed: none with memory nodes (CUDA's rule)."""
    return g is not None and not _graphmem.has_memory_nodes(g)


def _pairs(frm, to, count):
    n = int(count) if count is not None else len(frm or [])
    a, b = list(frm or [])[:n], list(to or [])[:n]
    if len(a) != n or len(b) != n:
        return None
    hits = [(S.nodes.get(S.h(x)), S.nodes.get(S.h(y))) for x, y in zip(a, b)]
    if any(x is None or y is None or x[0] is not y[0] for x, y in hits):
        return None
    return [(x[0], x[1], y[1]) for x, y in hits]


_KERNEL_PORTS = (_cr.cudaGraphKernelNodePortProgrammatic,
                 _cr.cudaGraphKernelNodePortLaunchCompletion)
_PROGRAMMATIC = _cr.cudaGraphDependencyType.cudaGraphDependencyTypeProgrammatic


def edge_port(a, b, data):
    """What edge ``data`` (a ``cudaGraphEdgeData`` or None) makes of ``a -> b``: None for a
    default edge, ``(from_port, type)`` for a programmatic one, False where CUDA refuses it.

    CUDA's rules (``cudaGraphEdgeData``): ``to_port`` must be 0; a non-zero ``from_port``
    (``cudaGraphKernelNodePortProgrammatic`` or ``...LaunchCompletion``) and the type
    ``cudaGraphDependencyTypeProgrammatic`` are only for an edge between two kernel nodes, and
    the programmatic type needs a programmatic port (the default port and that type go
    together only as ``cudaGraphKernelNodePortDefault``, which CUDA refuses for it)."""
    if data is None:
        return None
    port, to_port, kind = int(data.from_port), int(data.to_port), int(data.type)
    if to_port != 0:
        return False
    if port == 0 and kind == 0:
        return None
    kernels = (a.type == NT.cudaGraphNodeTypeKernel and b.type == NT.cudaGraphNodeTypeKernel)
    if not kernels or port not in _KERNEL_PORTS or kind not in (0, int(_PROGRAMMATIC)):
        return False
    return port, kind


def cudaGraphAddDependencies(graph, from_, to, edgeData, numDependencies):
    g, pairs = S.graph(graph), _pairs(from_, to, numDependencies)
    if g is None or pairs is None or any(gr is not g for gr, _, _ in pairs):
        return (S.fail(E.cudaErrorInvalidValue),)
    data = list(edgeData or [])
    ports = []
    for k, (_, a, b) in enumerate(pairs):
        if a in b.deps or a is b:
            return (S.fail(E.cudaErrorInvalidValue),)
        port = edge_port(a, b, data[k] if k < len(data) else None)
        if port is False:
            return (S.fail(E.cudaErrorInvalidValue),)
        ports.append(port)
    for (_, a, b), port in zip(pairs, ports):
        b.deps.append(a)
        if port is not None:
            b.ports[a] = port
    return S.OK


def cudaGraphRemoveDependencies(graph, from_, to, edgeData, numDependencies):
    g, pairs = S.graph(graph), _pairs(from_, to, numDependencies)
    if not _editable(g) or pairs is None or any(gr is not g or a not in b.deps
                                                for gr, a, b in pairs):
        return (S.fail(E.cudaErrorInvalidValue),)
    for _, a, b in pairs:
        b.deps.remove(a)
        b.ports.pop(a, None)
    return S.OK


def cudaGraphDestroyNode(node):
    hit = S.node(node)
    if hit is None or not _editable(hit[0]):
        return (S.fail(E.cudaErrorInvalidValue),)
    g, n = hit
    g.nodes.remove(n)
    for m in g.nodes:
        if n in m.deps:
            m.deps.remove(n)
            m.ports.pop(n, None)
    del S.nodes[n.handle]
    return S.OK


def cudaGraphNodeGetDependentNodes(node, pNumDependentNodes=0):
    hit = S.node(node)
    if hit is None:
        return (S.fail(E.cudaErrorInvalidValue), None, None, None)
    out = [m for m in hit[0].nodes if hit[1] in m.deps]
    if not pNumDependentNodes:
        return E.cudaSuccess, [], [], len(out)
    got = out[:pNumDependentNodes]
    return (E.cudaSuccess, [_node_t(m.handle) for m in got],
            [edge_data(m, hit[1]) for m in got], len(got))


def cudaGraphClone(originalGraph):
    g = S.graph(originalGraph)
    if g is None or _graphmem.has_memory_nodes(g):   # CUDA: such a graph cannot be cloned
        return (S.fail(E.cudaErrorInvalidValue), None)
    c = S.Graph()
    copies = {}
    for n in g.nodes:
        m = c.add(n.type, dict(n.payload), [copies[d] for d in n.deps])
        m.cloned_from = n.handle
        m.attrs = dict(n.attrs)
        m.ports = {copies[d]: port for d, port in n.ports.items()}
        copies[n] = m
    S.graphs[c.handle] = c
    return E.cudaSuccess, _cr.cudaGraph_t(c.handle)


def cudaGraphNodeFindInClone(clonedGraph, originalNode):
    g = S.graph(clonedGraph)
    want = S.h(originalNode)
    hit = None if g is None else next(
        (n for n in g.nodes if getattr(n, "cloned_from", None) == want), None)
    if hit is None:
        return (S.fail(E.cudaErrorInvalidValue), None)
    return E.cudaSuccess, _node_t(hit.handle)



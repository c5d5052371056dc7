"""Graphs of the simulated runtime: creating them, adding nodes, and reading them back."""
from __future__ import annotations

from cuda.bindings import runtime as _cr

from . import _conditional as _cond
from . import _state as S
from . import clock as _clock

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
    data = [_cr.cudaGraphEdgeData() for _ in range(numEdges)]
    return E.cudaSuccess, frm, to, data, len(got)


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
            [_cr.cudaGraphEdgeData() for _ in deps], len(deps))


# ---------------------------------------------------------------- adding nodes

def add_node(graph, deps, ntype, payload, cost=None, api="cudaGraphAddNode"):
    """Add a node to ``graph`` (a live graph or one being captured) after ``deps``."""
    g = S.any_graph(graph)
    dep_nodes = None if g is None else S.deps_in(g, deps)
    if dep_nodes is None:
        return (S.fail(E.cudaErrorInvalidValue), None)
    _clock.api(api, P("api_us") if cost is None else cost)
    n = g.add(ntype, payload, dep_nodes)
    return E.cudaSuccess, _node_t(n.handle)


def cudaGraphAddEmptyNode(graph, pDependencies, numDependencies):
    return add_node(graph, pDependencies, NT.cudaGraphNodeTypeEmpty, {"name": "empty"})


def cudaGraphAddMemcpyNode1D(graph, pDependencies, numDependencies, dst, src, count, kind):
    return add_node(graph, pDependencies, NT.cudaGraphNodeTypeMemcpy,
                    {"dst": int(dst), "src": int(src), "count": int(count),
                     "kind": _cr.cudaMemcpyKind(int(kind)), "name": "memcpy"})


def cudaGraphAddKernelNode(graph, pDependencies, numDependencies, pNodeParams):
    payload = _payload(pNodeParams)
    if payload is None:
        return (S.fail(E.cudaErrorInvalidDeviceFunction), None)
    return add_node(graph, pDependencies, NT.cudaGraphNodeTypeKernel, payload,
                    cost=P("add_kernel_node_us"))


def cudaGraphAddChildGraphNode(graph, pDependencies, numDependencies, childGraph):
    child = S.graph(childGraph)
    if child is None:
        return (S.fail(E.cudaErrorInvalidValue), None)
    # CUDA clones the child graph into the node: later edits of the child do not reach it
    return add_node(graph, pDependencies, NT.cudaGraphNodeTypeGraph,
                    {"name": "child graph", "nodes": _cond.snapshot(child)},
                    api="cudaGraphAddChildGraphNode")


class cudaConditionalNodeParams:
    """The conditional member of `cudaGraphNodeParams`: ``handle``, ``type``, ``size`` in;
    ``phGraph_out`` (the body graphs) out."""

    def __init__(self):
        self.handle = _cr.cudaGraphConditionalHandle(0)
        self.type = _cond.CT.cudaGraphCondTypeIf
        self.size = 0
        self.phGraph_out = []
        self.ctx = None


class cudaGraphNodeParams:
    """``cudaGraphAddNode``'s tagged union; the simulator takes the types Empty and Conditional."""

    def __init__(self):
        self.type = NT.cudaGraphNodeTypeEmpty
        self.conditional = cudaConditionalNodeParams()


def cudaGraphAddNode(graph, pDependencies, dependencyData, numDependencies, nodeParams):
    if nodeParams is None:
        return (S.fail(E.cudaErrorInvalidValue), None)
    ntype = NT(int(nodeParams.type))
    if ntype == NT.cudaGraphNodeTypeEmpty:
        return add_node(graph, pDependencies, ntype, {"name": "empty"})
    if ntype != NT.cudaGraphNodeTypeConditional:
        raise NotImplementedError(
            f"cudaGraphAddNode of a {ntype.name} node is not simulated (backend 'sim'): add it "
            "with its own call (cudaGraphAddEmptyNode, cudaGraphAddMemcpyNode1D, labkit's "
            "add_kernel_node) or capture it")
    g = S.any_graph(graph)
    if g is None or S.deps_in(g, pDependencies) is None:
        return (S.fail(E.cudaErrorInvalidValue), None)
    p = nodeParams.conditional
    h = _cond.new_node_handle(p)
    if h is None:
        return (S.fail(E.cudaErrorInvalidValue), None)
    ctype = _cond.CT(int(p.type))
    bodies = []
    for _ in range(int(p.size)):
        b = S.Graph()
        b.body_of = h
        S.graphs[b.handle] = b
        bodies.append(b)
    err, node = add_node(graph, pDependencies, ntype,
                         {"name": _cond.NAMES[ctype], "handle": h.id, "ctype": ctype,
                          "bodies": bodies})
    h.node = S.nodes[S.h(node)][1]
    p.phGraph_out = [_cr.cudaGraph_t(b.handle) for b in bodies]
    return err, node


def cudaGraphDebugDotPrint(graph, path, flags):
    g = S.graph(graph)
    if g is None:
        return (S.fail(E.cudaErrorInvalidValue),)
    lines = ["digraph dot {", '  label="simulated graph";']
    for i, n in enumerate(g.nodes):
        lines.append(f'  node{n.handle} [label="{i}: {n.type.name[len("cudaGraphNodeType"):]}'
                     f'\\n{n.payload.get("name", "")}"];')
    lines += [f"  node{a.handle} -> node{b.handle};" for a, b in edges(g)]
    lines.append("}")
    p = path.decode() if isinstance(path, bytes) else str(path)
    with open(p, "w") as f:
        f.write("\n".join(lines) + "\n")
    return S.OK


# ---------------------------------------------------------------- kernel node parameters

class cudaKernelNodeParams:
    """A kernel node's parameters, with CUDA's fields.

    ``func``: a function handle (`labkit.sim._hooks.register_function`); ``gridDim`` and
    ``blockDim``: ``dim3``; ``sharedMemBytes``; ``kernelParams``: the parameter values, a tuple
    (see the module docstring: not a ``void**``); ``extra``: must stay empty (0 or None).
    """

    def __init__(self, func=0, gridDim=None, blockDim=None, sharedMemBytes=0, kernelParams=(),
                 extra=0):
        self.func = func
        self.gridDim = gridDim if gridDim is not None else dim3(1, 1, 1)
        self.blockDim = blockDim if blockDim is not None else dim3(1, 1, 1)
        self.sharedMemBytes, self.kernelParams, self.extra = sharedMemBytes, kernelParams, extra

    def __repr__(self):
        name = getattr(S.functions.get(S.h(self.func)), "name", "?")
        return (f"<simulated cudaKernelNodeParams {name} grid={xyz(self.gridDim)} "
                f"block={xyz(self.blockDim)} params={len(self.kernelParams)}>")


def dim3(x, y=1, z=1):
    d = _cr.dim3()
    d.x, d.y, d.z = int(x), int(y), int(z)
    return d


def xyz(d) -> tuple:
    return (int(d.x), int(d.y), int(d.z))


def _payload(params):
    """A kernel node's payload from cudaKernelNodeParams, or None for an unknown function."""
    if not isinstance(params, cudaKernelNodeParams):
        raise NotImplementedError(
            "the simulator takes its own cudaKernelNodeParams (labkit.rt.cudaKernelNodeParams), "
            "whose kernelParams is a tuple of parameter values; run on a GPU "
            "(LABKIT_BACKEND=cuda) to pass a void** parameter array")
    if params.extra:
        raise NotImplementedError("cudaKernelNodeParams.extra is not simulated: pass kernelParams")
    if isinstance(params.kernelParams, int) and params.kernelParams:
        raise NotImplementedError("the simulator cannot read a void** kernelParams pointer: pass "
                                  "the parameter values as a tuple")
    fn = S.functions.get(S.h(params.func))
    if fn is None:
        return None
    return {"func": S.h(params.func), "grid": xyz(params.gridDim), "block": xyz(params.blockDim),
            "params": tuple(params.kernelParams or ()), "name": fn.name}


def cudaGraphKernelNodeGetParams(node):
    hit = S.node(node, NT.cudaGraphNodeTypeKernel)
    if hit is None:
        return (S.fail(E.cudaErrorInvalidValue), None)
    p = hit[1].payload
    return E.cudaSuccess, cudaKernelNodeParams(p["func"], dim3(*p["grid"]), dim3(*p["block"]),
                                               0, p["params"])


def cudaGraphKernelNodeSetParams(node, pNodeParams):
    hit = S.node(node, NT.cudaGraphNodeTypeKernel)
    if hit is None:
        return (S.fail(E.cudaErrorInvalidValue),)
    payload = _payload(pNodeParams)
    if payload is None:
        return (S.fail(E.cudaErrorInvalidDeviceFunction),)
    _clock.api("cudaGraphKernelNodeSetParams", P("api_us"))
    hit[1].payload = payload
    return S.OK

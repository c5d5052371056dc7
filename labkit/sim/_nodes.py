"""Graph nodes of the simulated runtime, added and read through cuda-bindings' own structs:
kernels, copies, memsets, host functions, child graphs, event records and waits, memory
allocations and frees, conditionals (`cudaGraphAddNode` takes them all)."""
from __future__ import annotations

from cuda.bindings import runtime as _cr

from . import _conditional as _cond
from . import _graphmem, _heap
from . import _params as _pm
from . import _state as S
from . import clock as _clock

E, P, NT = S.E, S.P, S.NT
_node_t = _cr.cudaGraphNode_t


def add_node(graph, deps, ntype, payload, cost=None, api="cudaGraphAddNode"):
    """Add a node to ``graph`` (a live graph or one being captured) after ``deps``."""
    g = S.any_graph(graph)
    dep_nodes = None if g is None else S.deps_in(g, deps)
    if dep_nodes is None or payload is None:
        return (S.fail(E.cudaErrorInvalidValue), None)
    _clock.api(api, P("api_us") if cost is None else cost)
    n = g.add(ntype, payload, dep_nodes)
    return E.cudaSuccess, _node_t(n.handle)


def cudaGraphAddEmptyNode(graph, pDependencies, numDependencies):
    return add_node(graph, pDependencies, NT.cudaGraphNodeTypeEmpty, {"name": "empty"})


def cudaGraphAddKernelNode(graph, pDependencies, numDependencies, pNodeParams):
    payload = _pm.kernel_payload(pNodeParams)
    if payload is None:
        return (S.fail(E.cudaErrorInvalidDeviceFunction), None)
    return add_node(graph, pDependencies, NT.cudaGraphNodeTypeKernel, payload,
                    cost=P("add_kernel_node_us"), api="cudaGraphAddKernelNode")


def cudaGraphAddMemcpyNode(graph, pDependencies, numDependencies, pCopyParams):
    return add_node(graph, pDependencies, NT.cudaGraphNodeTypeMemcpy,
                    _pm.memcpy3d_payload(pCopyParams), api="cudaGraphAddMemcpyNode")


def _memcpy1d(dst, src, count, kind):
    return {"dst": _heap.ptr(dst), "src": _heap.ptr(src), "count": int(count),
            "kind": _cr.cudaMemcpyKind(int(kind)), "name": "memcpy"}


def cudaGraphAddMemcpyNode1D(graph, pDependencies, numDependencies, dst, src, count, kind):
    return add_node(graph, pDependencies, NT.cudaGraphNodeTypeMemcpy,
                    _memcpy1d(dst, src, count, kind), api="cudaGraphAddMemcpyNode1D")


def cudaGraphAddMemsetNode(graph, pDependencies, numDependencies, pMemsetParams):
    return add_node(graph, pDependencies, NT.cudaGraphNodeTypeMemset,
                    _pm.memset_payload(pMemsetParams), api="cudaGraphAddMemsetNode")


def _host(p):
    return {"name": "host function", "fn": S.h(p.fn), "data": _heap.ptr(p.userData)}


def cudaGraphAddHostNode(graph, pDependencies, numDependencies, pNodeParams):
    return add_node(graph, pDependencies, NT.cudaGraphNodeTypeHost, _host(pNodeParams),
                    api="cudaGraphAddHostNode")


def _child(child_graph):
    child = S.graph(child_graph)
    if child is None or _graphmem.has_memory_nodes(child):
        return None          # a graph with memory nodes is a child only if moved (not modelled)
    # CUDA clones the child graph into the node: later edits of the child do not reach it
    return {"name": "child graph", "nodes": _cond.snapshot(child)}


def cudaGraphAddChildGraphNode(graph, pDependencies, numDependencies, childGraph):
    return add_node(graph, pDependencies, NT.cudaGraphNodeTypeGraph, _child(childGraph),
                    api="cudaGraphAddChildGraphNode")


def _event_payload(ntype, event):
    e = S.event(event)
    return None if e is None else {"name": "event " + ntype, "event": S.h(event)}


def cudaGraphAddEventRecordNode(graph, pDependencies, numDependencies, event):
    return add_node(graph, pDependencies, NT.cudaGraphNodeTypeEventRecord,
                    _event_payload("record", event), api="cudaGraphAddEventRecordNode")


def cudaGraphAddEventWaitNode(graph, pDependencies, numDependencies, event):
    return add_node(graph, pDependencies, NT.cudaGraphNodeTypeWaitEvent,
                    _event_payload("wait", event), api="cudaGraphAddEventWaitNode")


def cudaGraphAddMemAllocNode(graph, pDependencies, numDependencies, nodeParams):
    g = S.any_graph(graph)
    if g is None or S.deps_in(g, pDependencies) is None:
        return (S.fail(E.cudaErrorInvalidValue), None)
    payload = _graphmem.alloc_payload(nodeParams.bytesize)
    err, node = add_node(graph, pDependencies, NT.cudaGraphNodeTypeMemAlloc, payload,
                         api="cudaGraphAddMemAllocNode")
    if err == E.cudaSuccess:
        nodeParams.dptr = payload["dst"]          # CUDA writes the address back
    return err, node


def cudaGraphAddMemFreeNode(graph, pDependencies, numDependencies, dptr):
    g = S.any_graph(graph)
    if g is None:
        return (S.fail(E.cudaErrorInvalidValue), None)
    addr = _heap.ptr(dptr)
    err = _graphmem.free_error(g, addr)
    if err is not None:
        return (S.fail(err), None)
    return add_node(graph, pDependencies, NT.cudaGraphNodeTypeMemFree,
                    {"dst": addr, "name": "mem free"}, api="cudaGraphAddMemFreeNode")


def _conditional(graph, pDependencies, p):
    g = S.any_graph(graph)
    if g is None or S.deps_in(g, pDependencies) is None:
        return (S.fail(E.cudaErrorInvalidValue), None)
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
    err, node = add_node(graph, pDependencies, NT.cudaGraphNodeTypeConditional,
                         {"name": _cond.NAMES[ctype], "handle": h.id, "ctype": ctype,
                          "bodies": bodies})
    h.node = S.nodes[S.h(node)][1]
    _pm.set_graph_out(p, [b.handle for b in bodies])
    return err, node


def cudaGraphAddNode(graph, pDependencies, dependencyData, numDependencies, nodeParams):
    if nodeParams is None:
        return (S.fail(E.cudaErrorInvalidValue), None)
    t, p = NT(int(nodeParams.type)), nodeParams
    if t == NT.cudaGraphNodeTypeConditional:
        return _conditional(graph, pDependencies, p.conditional)
    adders = {
        NT.cudaGraphNodeTypeEmpty: lambda: cudaGraphAddEmptyNode(graph, pDependencies, 0),
        NT.cudaGraphNodeTypeKernel: lambda: cudaGraphAddKernelNode(graph, pDependencies, 0,
                                                                   p.kernel),
        NT.cudaGraphNodeTypeMemcpy: lambda: cudaGraphAddMemcpyNode(graph, pDependencies, 0,
                                                                   p.memcpy.copyParams),
        NT.cudaGraphNodeTypeMemset: lambda: cudaGraphAddMemsetNode(graph, pDependencies, 0,
                                                                   p.memset),
        NT.cudaGraphNodeTypeHost: lambda: cudaGraphAddHostNode(graph, pDependencies, 0, p.host),
        NT.cudaGraphNodeTypeGraph: lambda: cudaGraphAddChildGraphNode(graph, pDependencies, 0,
                                                                      p.graph.graph),
        NT.cudaGraphNodeTypeEventRecord: lambda: cudaGraphAddEventRecordNode(
            graph, pDependencies, 0, p.eventRecord.event),
        NT.cudaGraphNodeTypeWaitEvent: lambda: cudaGraphAddEventWaitNode(
            graph, pDependencies, 0, p.eventWait.event),
        NT.cudaGraphNodeTypeMemAlloc: lambda: cudaGraphAddMemAllocNode(graph, pDependencies, 0,
                                                                       p.alloc),
        NT.cudaGraphNodeTypeMemFree: lambda: cudaGraphAddMemFreeNode(graph, pDependencies, 0,
                                                                     p.free.dptr),
    }
    if t not in adders:
        raise NotImplementedError(f"cudaGraphAddNode of a {t.name} node is not simulated "
                                  "(backend 'sim'); run on a GPU with LABKIT_BACKEND=cuda")
    return adders[t]()


# ---------------------------------------------------------------- reading and setting parameters

def payload_params(ntype, payload):
    """cuda-bindings' struct for a node's parameters (what the ...GetParams calls return)."""
    if ntype == NT.cudaGraphNodeTypeKernel:
        return _pm.kernel_params(payload["func"], payload["grid"], payload["block"],
                                 payload["params"])
    if ntype == NT.cudaGraphNodeTypeMemset:
        return _pm.memset_params(payload)
    if ntype == NT.cudaGraphNodeTypeMemcpy and "params" in payload:
        return payload["params"]
    if ntype == NT.cudaGraphNodeTypeMemcpy:
        p = _cr.cudaMemcpy3DParms()
        p.srcPtr = _cr.make_cudaPitchedPtr(payload["src"], payload["count"], payload["count"], 1)
        p.dstPtr = _cr.make_cudaPitchedPtr(payload["dst"], payload["count"], payload["count"], 1)
        p.extent, p.kind = _cr.make_cudaExtent(payload["count"], 1, 1), payload["kind"]
        return p
    if ntype == NT.cudaGraphNodeTypeHost:
        p = _cr.cudaHostNodeParams()
        p.fn, p.userData = payload["fn"], payload["data"]
        return p
    if ntype == NT.cudaGraphNodeTypeMemAlloc:
        p = _cr.cudaMemAllocNodeParams()
        p.bytesize, p.dptr = payload["bytesize"], payload["dst"]
        return p
    return None


_READERS = {NT.cudaGraphNodeTypeKernel: _pm.kernel_payload,
            NT.cudaGraphNodeTypeMemcpy: _pm.memcpy3d_payload,
            NT.cudaGraphNodeTypeMemset: _pm.memset_payload,
            NT.cudaGraphNodeTypeHost: _host}


def read_params(ntype, params):
    """The payload for a node of type ``ntype`` from cuda-bindings' struct; None: invalid."""
    return _READERS[ntype](params)


def _getter(ntype):
    def get(node):
        hit = S.node(node, ntype)
        if hit is None:
            return (S.fail(E.cudaErrorInvalidValue), None)
        return E.cudaSuccess, payload_params(ntype, hit[1].payload)
    return get


def _setter(ntype, api):
    def set_(node, pNodeParams):
        hit = S.node(node, ntype)
        payload = None if hit is None else read_params(ntype, pNodeParams)
        if payload is None:
            bad_func = hit is not None and ntype == NT.cudaGraphNodeTypeKernel
            return (S.fail(E.cudaErrorInvalidDeviceFunction if bad_func
                           else E.cudaErrorInvalidValue),)
        _clock.api(api, P("api_us"))
        hit[1].payload = payload
        return S.OK
    return set_


cudaGraphKernelNodeGetParams = _getter(NT.cudaGraphNodeTypeKernel)
cudaGraphKernelNodeSetParams = _setter(NT.cudaGraphNodeTypeKernel, "cudaGraphKernelNodeSetParams")
cudaGraphMemcpyNodeGetParams = _getter(NT.cudaGraphNodeTypeMemcpy)
cudaGraphMemcpyNodeSetParams = _setter(NT.cudaGraphNodeTypeMemcpy, "cudaGraphMemcpyNodeSetParams")
cudaGraphMemsetNodeGetParams = _getter(NT.cudaGraphNodeTypeMemset)
cudaGraphMemsetNodeSetParams = _setter(NT.cudaGraphNodeTypeMemset, "cudaGraphMemsetNodeSetParams")
cudaGraphHostNodeGetParams = _getter(NT.cudaGraphNodeTypeHost)
cudaGraphHostNodeSetParams = _setter(NT.cudaGraphNodeTypeHost, "cudaGraphHostNodeSetParams")
cudaGraphMemAllocNodeGetParams = _getter(NT.cudaGraphNodeTypeMemAlloc)


def cudaGraphMemFreeNodeGetParams(node):
    hit = S.node(node, NT.cudaGraphNodeTypeMemFree)
    if hit is None:
        return (S.fail(E.cudaErrorInvalidValue), None)
    return E.cudaSuccess, hit[1].payload["dst"]


# ---------------------------------------------------------------- kernel node attributes

_LA = _cr.cudaLaunchAttributeID


def cudaGraphKernelNodeSetAttribute(hNode, attr, value):
    """A kernel node's attributes: its priority (``cudaLaunchAttributePriority``), which an
    executable instantiated with ``cudaGraphInstantiateFlagUseNodePriority`` uses where nodes
    compete for the device (`labkit.sim._exec._place`). Others are not simulated."""
    hit = S.node(hNode, NT.cudaGraphNodeTypeKernel)
    if hit is None or value is None:
        return (S.fail(E.cudaErrorInvalidValue),)
    a = _LA(int(attr))
    if a != _LA.cudaLaunchAttributePriority:
        raise NotImplementedError(f"cudaGraphKernelNodeSetAttribute({a.name}) is not simulated "
                                  "(backend 'sim'): priorities only; programmatic dependent "
                                  "launch is an edge (cudaGraphAddDependencies with edge data)")
    _clock.api("cudaGraphKernelNodeSetAttribute", P("api_us"))
    hit[1].attrs["priority"] = int(value.priority)
    return S.OK


def cudaGraphKernelNodeGetAttribute(hNode, attr):
    hit = S.node(hNode, NT.cudaGraphNodeTypeKernel)
    if hit is None:
        return (S.fail(E.cudaErrorInvalidValue), None)
    a = _LA(int(attr))
    if a != _LA.cudaLaunchAttributePriority:
        raise NotImplementedError(f"cudaGraphKernelNodeGetAttribute({a.name}) is not simulated "
                                  "(backend 'sim'): priorities only")
    v = _cr.cudaKernelNodeAttrValue()
    v.priority = hit[1].attrs.get("priority", 0)
    return E.cudaSuccess, v

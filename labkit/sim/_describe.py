"""Naming and describing graphs (CUDA 13.1): graph, executable and node IDs, the graph a node is
in, and ``cudaGraphDebugDotPrint``'s DOT file, which names nodes by the same IDs.

* ``cudaGraphGetId`` / ``cudaGraphExecGetId``: every graph (conditional bodies and the graphs a
  capture builds included) and every executable gets a number from its own counter, from 1;
* ``cudaGraphNodeGetLocalId``: a node's place in its graph, from 0, in creation order (a
  node's ID is not reused when another is destroyed); with the graph's ID it names the node;
* ``cudaGraphNodeGetToolsId``: one 64-bit number per node in the process; here the graph's ID
  in the high 32 bits and the local ID in the low ones (CUDA documents only that tools use it);
* ``cudaGraphDebugDotPrint``: by default the topology, each node's kind and ID, kernel names
  and copy directions; ``flags`` add each kind's parameters, kernel attributes, handles and
  conditional parameters (``cudaGraphDebugDotFlagsVerbose``: all of them). Node names in the
  file are ``graph_<graph ID>_node_<local ID>``; a conditional node's bodies are drawn as
  clusters beside it (a child graph node as one node: its copy of the child is not a graph).
  The layout is the simulator's, not the driver's byte for byte: read it for what it names,
  not for its exact text.
"""
from __future__ import annotations

from cuda.bindings import runtime as _cr

from . import _state as S

E, NT = S.E, S.NT
_F = _cr.cudaGraphDebugDotFlags


def cudaGraphGetId(hGraph):
    g = S.any_graph(hGraph)
    if g is None:
        return (S.fail(E.cudaErrorInvalidValue), None)
    return E.cudaSuccess, g.id


def cudaGraphExecGetId(hGraphExec):
    x = S.exec_(hGraphExec)
    if x is None:
        return (S.fail(E.cudaErrorInvalidValue), None)
    return E.cudaSuccess, x.id


def _node(hNode):
    hit = S.nodes.get(S.h(hNode))
    return None if hit is None or hit[0].destroyed else hit


def cudaGraphNodeGetLocalId(hNode):
    hit = _node(hNode)
    if hit is None:
        return (S.fail(E.cudaErrorInvalidValue), None)
    return E.cudaSuccess, hit[1].local_id


def cudaGraphNodeGetToolsId(hNode):
    hit = _node(hNode)
    if hit is None:
        return (S.fail(E.cudaErrorInvalidValue), None)
    return E.cudaSuccess, hit[1].tools_id


def cudaGraphNodeGetContainingGraph(hNode):
    hit = _node(hNode)
    if hit is None:
        return (S.fail(E.cudaErrorInvalidValue), None)
    return E.cudaSuccess, _cr.cudaGraph_t(hit[0].handle)


# ---------------------------------------------------------------- the DOT file

_KIND = {NT.cudaGraphNodeTypeKernel: "KERNEL", NT.cudaGraphNodeTypeMemcpy: "MEMCPY",
         NT.cudaGraphNodeTypeMemset: "MEMSET", NT.cudaGraphNodeTypeHost: "HOST",
         NT.cudaGraphNodeTypeGraph: "CHILD_GRAPH", NT.cudaGraphNodeTypeEmpty: "EMPTY",
         NT.cudaGraphNodeTypeWaitEvent: "WAIT_EVENT",
         NT.cudaGraphNodeTypeEventRecord: "EVENT_RECORD",
         NT.cudaGraphNodeTypeMemAlloc: "MEM_ALLOC", NT.cudaGraphNodeTypeMemFree: "MEM_FREE",
         NT.cudaGraphNodeTypeConditional: "CONDITIONAL"}
_PARAM_FLAG = {NT.cudaGraphNodeTypeKernel: _F.cudaGraphDebugDotFlagsKernelNodeParams,
               NT.cudaGraphNodeTypeMemcpy: _F.cudaGraphDebugDotFlagsMemcpyNodeParams,
               NT.cudaGraphNodeTypeMemset: _F.cudaGraphDebugDotFlagsMemsetNodeParams,
               NT.cudaGraphNodeTypeHost: _F.cudaGraphDebugDotFlagsHostNodeParams,
               NT.cudaGraphNodeTypeWaitEvent: _F.cudaGraphDebugDotFlagsEventNodeParams,
               NT.cudaGraphNodeTypeEventRecord: _F.cudaGraphDebugDotFlagsEventNodeParams,
               NT.cudaGraphNodeTypeConditional: _F.cudaGraphDebugDotFlagsConditionalNodeParams}
_DIRECTION = {0: "HtoH", 1: "HtoD", 2: "DtoH", 3: "DtoD", 4: "Default"}


def node_name(g, n) -> str:
    return f"graph_{g.id}_node_{n.local_id}"


def _on(flags: int, flag) -> bool:
    return bool(flags & (int(flag) | int(_F.cudaGraphDebugDotFlagsVerbose)))


def _kernel_name(payload) -> str:
    fn = S.functions.get(payload.get("func"))
    return fn.name if fn is not None else payload.get("name", "kernel")


def _label(n, flags: int) -> list[str]:
    p = n.payload
    lines = [f"id {n.local_id}", _KIND.get(n.type, n.type.name)]
    if n.type == NT.cudaGraphNodeTypeKernel:
        lines.append(_kernel_name(p))
    if n.type == NT.cudaGraphNodeTypeMemcpy:
        lines.append(_DIRECTION.get(int(p["kind"]), str(p["kind"])))
    if n.type in _PARAM_FLAG and _on(flags, _PARAM_FLAG[n.type]):
        lines += _params(n)
    if n.type == NT.cudaGraphNodeTypeMemset and _on(
            flags, _F.cudaGraphDebugDotFlagsMemsetNodeParams):
        lines += [f"dst {p['dst']:#x}", f"value {p['value']}", f"bytes {p['count']}"]
    if n.type == NT.cudaGraphNodeTypeKernel and _on(
            flags, _F.cudaGraphDebugDotFlagsKernelNodeAttributes):
        lines += [f"{k} {v}" for k, v in sorted(n.attrs.items())] or ["attributes default"]
    if _on(flags, _F.cudaGraphDebugDotFlagsHandles):
        lines.append(f"node handle {n.handle:#x}")
        if n.type == NT.cudaGraphNodeTypeKernel:
            lines.append(f"function handle {p['func']:#x}")
    return lines


def _params(n) -> list[str]:
    p = n.payload
    if n.type == NT.cudaGraphNodeTypeKernel:
        fn = S.functions.get(p["func"])
        args = ", ".join(f"{fn.param_name(i) if fn else i}={v!r}"
                         for i, v in enumerate(p["params"]))
        return [f"grid {tuple(p['grid'])}", f"block {tuple(p['block'])}", f"args {args}"]
    if n.type == NT.cudaGraphNodeTypeMemcpy:
        return [f"dst {p['dst']:#x}", f"src {p['src']:#x}", f"bytes {p['count']}"]
    if n.type == NT.cudaGraphNodeTypeHost:
        return [f"fn {p['fn']:#x}", f"userData {p['data'] or 0:#x}"]
    if n.type in (NT.cudaGraphNodeTypeWaitEvent, NT.cudaGraphNodeTypeEventRecord):
        return [f"event {p['event']:#x}"]
    if n.type == NT.cudaGraphNodeTypeConditional:
        return [f"handle {p['handle']:#x}", f"type {p['ctype'].name}",
                f"size {len(p['bodies'])}"]
    return []


def _quote(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def _cluster(g, flags: int, out: list, depth: int) -> None:
    pad = "  " * depth
    out.append(f'{pad}subgraph cluster_graph_{g.id} {{')
    out.append(f'{pad}  label="graph_{g.id}"; style="dashed";')
    for n in g.nodes:
        label = "\\n".join(_quote(x) for x in _label(n, flags))
        out.append(f'{pad}  "{node_name(g, n)}" [shape="rectangle" label="{label}"];')
        inner = []
        if n.type == NT.cudaGraphNodeTypeConditional:
            inner = list(n.payload["bodies"])
        for body in inner:
            _cluster(body, flags, out, depth + 1)
            if body.nodes:
                out.append(f'{pad}  "{node_name(g, n)}" -> "{node_name(body, body.nodes[0])}" '
                           '[style="dotted" label="body"];')
    for n in g.nodes:
        for d in n.deps:
            attr = ""
            if d in n.ports:
                port = n.ports[d][0]
                attr = (' [style="bold" label="programmatic"]' if port == 1
                        else ' [style="bold" label="launch completion"]')
            out.append(f'{pad}  "{node_name(g, d)}" -> "{node_name(g, n)}"{attr};')
    out.append(f"{pad}}}")


def dot_text(g, flags: int = 0) -> str:
    out = ["digraph dot {"]
    _cluster(g, int(flags), out, 1)
    out.append("}")
    return "\n".join(out) + "\n"


def cudaGraphDebugDotPrint(graph, path, flags):
    g = S.any_graph(graph)
    if g is None or path is None:
        return (S.fail(E.cudaErrorInvalidValue),)
    p = path.decode() if isinstance(path, bytes) else str(path)
    try:
        with open(p, "w") as f:
            f.write(dot_text(g, int(flags)))
    except OSError:
        return (S.fail(E.cudaErrorOperatingSystem),)
    return S.OK

"""Course code for notebook 12, CUDA 12.3 to 13.3's graph features, through ``labkit.rt``.

* Kernels: `log_step`, a slow debugging kernel that adds a checksum of ``x`` to ``log[0]``
  (what a learner switches off in an executable), with `model_step` (``add_one``) before it;
  `respond`, a short latency-critical kernel (``busy``'s loop under its own name).
* The DOT print read back: `dot_nodes` and `dot_edges` parse what ``cudaGraphDebugDotPrint``
  writes (node names ``graph_<graph ID>_node_<local ID>``), `dot_to_networkx` draws it with
  ``labkit.plot.graph_dag``, and `node_ids` lists a graph's nodes by their IDs (CUDA 13.1).
* Small raw-call helpers the sections share: `nodes_of`, `kernel_name`, `programmatic_edge`,
  `set_priority`, `kernel_spans` (the kernels of a timeline, in start order).
* `cuda_core_names`: cuda.core's graph names beside the raw calls (the GPU-only section).
"""
from __future__ import annotations

import os
import re
import tempfile

import numpy as np
from numba import cuda

from .. import _graph
from .._errors import check
from .._kernel import kernel
from ..backends import name as _backend, rt
from .workloads import _busy_cost, _busy_ref, add_one

__all__ = ["log_step", "model_step", "respond", "dot_text", "dot_nodes", "dot_edges",
           "dot_to_networkx", "node_ids", "nodes_of", "kernel_name", "programmatic_edge",
           "set_priority", "kernel_spans", "cuda_core_names", "cuda_core_demo", "LOG_ITERS"]

model_step = add_one
LOG_ITERS = 20_000     # how many times log_step sums x: a debugging kernel far longer than the step


def _log_ref(grid, block, x, log, iters):
    log[0] += np.float32(x.astype(np.float64).sum())


def _log_cost(P, grid, block, x, log, iters):
    return P("kernel_us") + iters * P("busy_ns_per_iter") / 1000.0


@kernel(reference=_log_ref, cost=_log_cost)
def log_step(x, log, iters):
    """A debugging kernel: thread 0 sums ``x`` (``iters`` times over, a slow check) and adds the
    sum to ``log[0]``. Exact while x holds small whole numbers."""
    if cuda.grid(1) == 0:
        s = 0.0
        for _ in range(iters):
            s = 0.0
            for j in range(x.size):
                s += x[j]
        log[0] += s


@kernel(reference=_busy_ref, cost=_busy_cost)     # busy's work, under a name of its own
def respond(x, iters):
    """The urgent work of a request: each thread adds 1.0 ``iters`` times (as ``busy``)."""
    i = cuda.grid(1)
    if i < x.size:
        v = x[i]
        for _ in range(iters):
            v += 1.0
        x[i] = v


# ---------------------------------------------------------------- the DOT print

def dot_text(graph, flags: int = 0) -> str:
    """``cudaGraphDebugDotPrint``'s file for a labkit graph (or a raw ``cudaGraph_t``)."""
    fd, path = tempfile.mkstemp(suffix=".dot")
    os.close(fd)
    try:
        check(rt.cudaGraphDebugDotPrint(_raw(graph), path.encode(), int(flags)),
              "cudaGraphDebugDotPrint")
        with open(path) as f:
            return f.read()
    finally:
        os.unlink(path)


_NODE = re.compile(r'^\s*"(?P<name>[^"]*node_(?P<local>\d+))"\s*\[(?P<attrs>.*)\]\s*;?\s*$')
_LABEL = re.compile(r'label="(?P<label>(?:[^"\\]|\\.)*)"')
_EDGE = re.compile(r'^\s*"(?P<a>[^"]+)"\s*->\s*"(?P<b>[^"]+)"')
_GRAPH_ID = re.compile(r"graph_(\d+)")


def dot_nodes(text: str) -> list[dict]:
    """The nodes a DOT print names: ``{"name", "graph_id", "local_id", "lines"}`` each, the
    label's lines in ``lines`` (the kind, the kernel's name, what the flags added)."""
    out = []
    for line in text.splitlines():
        m = _NODE.match(line)
        if not m:
            continue
        label = _LABEL.search(m["attrs"])
        lines = [] if label is None else label["label"].replace("\\l", "\\n").split("\\n")
        gid = _GRAPH_ID.search(m["name"])
        out.append({"name": m["name"], "graph_id": int(gid[1]) if gid else None,
                    "local_id": int(m["local"]), "lines": [x for x in lines if x]})
    return out


def dot_edges(text: str) -> list[tuple[str, str]]:
    """The edges a DOT print draws, as (from, to) node names."""
    return [(m["a"], m["b"]) for m in map(_EDGE.match, text.splitlines()) if m]


def dot_to_networkx(text: str):
    """The DOT print as a networkx DiGraph that ``labkit.plot.graph_dag`` draws: each node
    labelled by its local ID and kind, named by its kernel where it has one."""
    import networkx as nx
    g = nx.DiGraph(made="captured")
    names = {n["name"] for n in dot_nodes(text)}
    for n in dot_nodes(text):
        kind = next((x.lower() for x in n["lines"] if x.isupper()), "other")
        kernel_line = next((x for x in n["lines"] if x.isidentifier() and not x.isupper()), None)
        g.add_node(n["name"], kind=_KINDS.get(kind, kind), label=f"id {n['local_id']}",
                   name=f"{n['local_id']}:{kernel_line or kind}")
    g.add_edges_from((a, b) for a, b in dot_edges(text) if a in names and b in names)
    return g


_KINDS = {"wait_event": "wait_event", "event_record": "event_record", "child_graph": "graph"}


# ---------------------------------------------------------------- raw-call helpers

def _raw(graph):
    return graph.handle if isinstance(graph, _graph.Graph) else graph


def nodes_of(graph) -> list:
    """The nodes of a labkit graph or a raw ``cudaGraph_t``, in creation order."""
    g = _raw(graph)
    n = check(rt.cudaGraphGetNodes(g), "cudaGraphGetNodes")[1]
    return list(check(rt.cudaGraphGetNodes(g, n), "cudaGraphGetNodes")[0]) if n else []


def kernel_name(node) -> str | None:
    """The Python name of the kernel a kernel node runs (None for other nodes)."""
    kind = check(rt.cudaGraphNodeGetType(node), "cudaGraphNodeGetType")
    if kind != rt.cudaGraphNodeType.cudaGraphNodeTypeKernel:
        return None
    symbol = _graph._kernel_symbol(node)
    return _graph.python_name(symbol) if symbol else None


def node_ids(graph) -> list[dict]:
    """Each node of ``graph`` by its IDs (CUDA 13.1): ``{"local_id", "tools_id", "kind",
    "kernel", "dot_name"}``, the DOT print's name made from the graph's ID and the local one."""
    gid = check(rt.cudaGraphGetId(_raw(graph)), "cudaGraphGetId")
    rows = []
    for n in nodes_of(graph):
        local = check(rt.cudaGraphNodeGetLocalId(n), "cudaGraphNodeGetLocalId")
        rows.append({"local_id": local,
                     "tools_id": check(rt.cudaGraphNodeGetToolsId(n), "cudaGraphNodeGetToolsId"),
                     "kind": check(rt.cudaGraphNodeGetType(n)).name[len("cudaGraphNodeType"):],
                     "kernel": kernel_name(n), "dot_name": f"graph_{gid}_node_{local}"})
    return rows


def programmatic_edge():
    """Edge data for a programmatic dependency (PDL): the dependent kernel may start before its
    predecessor ends (``cudaGraphKernelNodePortProgrammatic``, CUDA 12.3)."""
    d = rt.cudaGraphEdgeData()
    d.from_port = rt.cudaGraphKernelNodePortProgrammatic
    d.type = rt.cudaGraphDependencyType.cudaGraphDependencyTypeProgrammatic
    return d


def set_priority(node, priority: int) -> None:
    """Give a kernel node a priority (lower is sooner, as stream priorities); an executable uses
    it when instantiated with ``cudaGraphInstantiateFlagUseNodePriority``."""
    v = rt.cudaKernelNodeAttrValue()
    v.priority = int(priority)
    check(rt.cudaGraphKernelNodeSetAttribute(
        node, rt.cudaLaunchAttributeID.cudaLaunchAttributePriority, v),
        "cudaGraphKernelNodeSetAttribute")


def kernel_spans(timeline) -> list:
    """The kernel spans of a recorded timeline, in start order."""
    return sorted((s for s in timeline.spans if s.kind == "kernel"), key=lambda s: s.start_us)


def cuda_core_names() -> list[tuple[str, str]]:
    """cuda.core 1.2's graph names beside the runtime calls they make (from cuda.core's own
    documentation of ``cuda.core.graph``)."""
    return [
        ("GraphBuilder: stream.create_graph_builder().begin_building() … end_building()",
         "cudaStreamBeginCapture … cudaStreamEndCapture"),
        ("GraphDefinition(): d.launch(config, kernel, *args), d.memset(…), d.join(a, b)",
         "cudaGraphCreate, cudaGraphAddKernelNode / cudaGraphAddNode, edges"),
        ("d.instantiate() / builder.complete()", "cudaGraphInstantiate"),
        ("graph[node].update(config=…, kernel=…, args=…)",
         "cudaGraphExecKernelNodeSetParams"),
        ("graph[node].disable() / .enable()", "cudaGraphNodeSetEnabled"),
        ("graph.update(definition)", "cudaGraphExecUpdate"),
        ("d.debug_dot_print(path, GraphDebugPrintOptions(…))", "cudaGraphDebugDotPrint"),
        ("LaunchConfig(…, programmatic_stream_serialization=True)",
         "a launch with cudaLaunchAttributeProgrammaticStreamSerialization (PDL)"),
    ]


def cuda_core_demo():
    """On a GPU: a memset node made with cuda.core's ``GraphDefinition``, instantiated, then
    switched off in the executable through ``graph[node]`` (cuda.core 1.2) and launched.
    Returns ``(enabled before, enabled after)``; on the simulator None: cuda.core drives the
    driver itself and needs a device."""
    if _backend != "cuda":
        return None
    from cuda.core import Device
    from cuda.core.graph import GraphDefinition
    dev = Device()
    dev.set_current()
    stream = dev.create_stream()
    buf = dev.allocate(4096, stream=stream)
    definition = GraphDefinition()
    node = definition.memset(buf, 0, 4096)
    graph = definition.instantiate()
    before = graph[node].is_enabled
    graph[node].disable()
    graph.launch(stream)
    stream.sync()
    after = graph[node].is_enabled
    graph.close()
    buf.close(stream)
    return before, after

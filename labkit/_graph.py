"""`Graph` (a captured or built cudaGraph_t) and `GraphExec` (its instantiated executable)."""
from __future__ import annotations

import os
import tempfile

from . import _hostspans
from ._errors import CudaError, check
from ._kernel import stream_handle
from ._state import rt, copy_kernel_node_params

__all__ = ["Graph", "GraphExec", "UpdateResult"]

_KIND = {
    "cudaGraphNodeTypeKernel": "kernel", "cudaGraphNodeTypeMemcpy": "memcpy",
    "cudaGraphNodeTypeMemset": "memset", "cudaGraphNodeTypeEmpty": "empty",
    "cudaGraphNodeTypeEventRecord": "event_record", "cudaGraphNodeTypeWaitEvent": "wait_event",
    "cudaGraphNodeTypeGraph": "graph", "cudaGraphNodeTypeHost": "host",
}


class Graph:
    """A CUDA graph: nodes with their kinds and the edges between them.

    Made by `labkit.capture` (or from a raw ``cudaGraph_t``); owns the handle and destroys it
    on ``close()``. It keeps the arrays its kernels were launched with alive, so a replay can
    never write into memory that was freed.
    """

    def __init__(self, handle, keepalive=None, owned: bool = True):
        self.handle, self._owned = handle, owned
        self.keepalive = list(keepalive or [])

    def __int__(self):
        return int(self.handle)

    @property
    def nodes(self) -> list:
        n = check(rt.cudaGraphGetNodes(self.handle), "cudaGraphGetNodes")[1]
        return list(check(rt.cudaGraphGetNodes(self.handle, n), "cudaGraphGetNodes")[0]) if n else []

    def node_kinds(self) -> list[str]:
        return [_KIND.get(check(rt.cudaGraphNodeGetType(n)).name, "other") for n in self.nodes]

    def kernel_nodes(self) -> list:
        return [n for n, k in zip(self.nodes, self.node_kinds()) if k == "kernel"]

    @property
    def edges(self) -> list[tuple[int, int]]:
        """Edges as (from, to) indices into `nodes`."""
        count = check(rt.cudaGraphGetEdges(self.handle), "cudaGraphGetEdges")[-1]
        if not count:
            return []
        frm, to, _, _ = check(rt.cudaGraphGetEdges(self.handle, count), "cudaGraphGetEdges")
        index = {int(n): i for i, n in enumerate(self.nodes)}
        return [(index[int(a)], index[int(b)]) for a, b in zip(frm, to)]

    def __len__(self):
        return check(rt.cudaGraphGetNodes(self.handle), "cudaGraphGetNodes")[1]

    def to_networkx(self):
        """A networkx DiGraph with each node's ``kind`` and ``label``."""
        import networkx as nx
        g = nx.DiGraph()
        for i, (node, k) in enumerate(zip(self.nodes, self.node_kinds())):
            # name: the kernel's symbol for kernel nodes (plot.graph_dag shortens it), else the kind
            name = (_kernel_symbol(node) if k == "kernel" else None) or k
            g.add_node(i, kind=k, label=f"{i}:{k}", name=name)
        g.add_edges_from(self.edges)
        return g

    def to_dot(self) -> str:
        """The graph in Graphviz DOT, as ``cudaGraphDebugDotPrint`` writes it."""
        fd, path = tempfile.mkstemp(suffix=".dot")
        os.close(fd)
        try:
            check(rt.cudaGraphDebugDotPrint(self.handle, path.encode(), 0), "cudaGraphDebugDotPrint")
            with open(path) as f:
                return f.read()
        finally:
            os.unlink(path)

    def instantiate(self, upload_stream=None) -> "GraphExec":
        """Instantiate into an executable graph (optionally uploading it to ``upload_stream``)."""
        ex = GraphExec(check(rt.cudaGraphInstantiate(self.handle, 0), "cudaGraphInstantiate"), self)
        if upload_stream is not None:
            ex.upload(upload_stream)
        return ex

    def close(self):
        if self.handle is not None and self._owned:
            check(rt.cudaGraphDestroy(self.handle), "cudaGraphDestroy")
        self.handle = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        return f"<labkit.Graph nodes={len(self)} edges={len(self.edges)}>"


class UpdateResult:
    """What `GraphExec.update` returns: ``ok``, the ``code`` and a readable ``reason``."""

    def __init__(self, code, reason=""):
        self.code, self.reason = int(code), reason
        self.ok = self.code == 0

    def __bool__(self):
        return self.ok

    def __repr__(self):
        return f"<UpdateResult ok={self.ok} code={self.code} {self.reason}>"


class GraphExec:
    """An executable graph: `launch` it as often as you like; `update` it in place."""

    def __init__(self, handle, graph: Graph):
        self.handle, self.graph = handle, graph
        self._source_nodes = graph.nodes   # the nodes that name this executable's nodes
        self._kernel_nodes = None          # found on the first set_kernel_args, then kept
        self._stream, self._stream_h = None, None
        self.keepalive = list(graph.keepalive)

    def __int__(self):
        return int(self.handle)

    def launch(self, stream):
        """Submit the whole graph to ``stream`` with one ``cudaGraphLaunch``."""
        # The raw handle is worked out once per stream: this call is the hot path of every
        # replay loop. A closed labkit.Stream (handle None) goes to stream_handle, which says so.
        if stream is not self._stream or getattr(stream, "handle", 0) is None:
            h = getattr(stream, "handle", None)
            self._stream_h = h if h is not None and not isinstance(stream, int) else stream_handle(stream)
            self._stream = stream
        rec = _hostspans.active     # a timeline is open: this launch is a span of its CPU row
        if rec is None:
            err, = rt.cudaGraphLaunch(self.handle, self._stream_h)
        else:
            t0 = rec.graph_begin()
            err, = rt.cudaGraphLaunch(self.handle, self._stream_h)
            rec.graph_end(t0, self)
        if err:
            raise CudaError(err, "cudaGraphLaunch")

    def upload(self, stream):
        """Upload the executable ahead of its first launch, so that launch is not slower."""
        check(rt.cudaGraphUpload(self.handle, stream_handle(stream)), "cudaGraphUpload")

    def update(self, graph: Graph) -> UpdateResult:
        """Update in place from ``graph`` (same topology, new parameters).

        On failure (e.g. a node added) nothing changes: the old executable still works, and
        the result says why, so the caller can instantiate ``graph`` instead.
        """
        err, info = rt.cudaGraphExecUpdate(self.handle, graph.handle)
        rt.cudaGetLastError()
        if int(err) == 0:
            # Nodes keep the names of the graph this was instantiated from, even after an update.
            self.graph = graph
            self.keepalive = list(graph.keepalive)
            return UpdateResult(0)
        reason = ("the new graph's topology or node types differ from the executable's"
                  if int(err) == 910 else CudaError(err).description)
        return UpdateResult(err, reason)

    def set_kernel_args(self, index: int, kernel, grid, block, *args):
        """Point kernel node ``index`` (in capture order) at new arguments.

        numba prepares the arguments by launching ``kernel`` into a scratch capture; that node's
        parameters are copied into this executable's node. Only this node changes.
        """
        from ._capture import scratch_kernel_node
        if self._kernel_nodes is None:     # one cudaGraphNodeGetType per node: do it once
            self._kernel_nodes = [n for n, k in zip(self._source_nodes, _kinds(self._source_nodes))
                                  if k == "kernel"]
        knodes = self._kernel_nodes
        if not 0 <= index < len(knodes):
            raise IndexError(f"kernel node {index} does not exist: the graph has {len(knodes)}")
        with scratch_kernel_node(kernel, grid, block, args) as src:
            err = copy_kernel_node_params(src, self.handle, knodes[index])[0]
        if int(err):
            raise CudaError(err, "setting a kernel node's parameters in the executable graph")
        self.keepalive.append(args)

    def close(self):
        if self.handle is not None:
            check(rt.cudaGraphExecDestroy(self.handle), "cudaGraphExecDestroy")
        self.handle = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _kernel_symbol(node) -> str | None:
    """The function a kernel node runs, by name (for drawings, never for logic); None if unknown."""
    from . import _state
    try:
        if _state.backend == "sim":
            return rt.cudaGraphKernelNodeGetParams(node)[1].kernel.name
        from cuda.bindings import driver
        err, params = driver.cuGraphKernelNodeGetParams(driver.CUgraphNode(int(node)))
        if int(err) == 0:
            err, name = driver.cuFuncGetName(params.func)
            if int(err) == 0:
                return name.decode() if isinstance(name, bytes) else str(name)
    except Exception:   # a label is a nicety: an old driver or odd node draws the kind instead
        pass
    return None


def _kinds(nodes):
    return [_KIND.get(check(rt.cudaGraphNodeGetType(n)).name, "other") for n in nodes]

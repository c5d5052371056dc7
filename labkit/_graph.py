"""`Graph` (a captured or built cudaGraph_t), `GraphExec` (its instantiated executable) and
`KernelNode` (one kernel node of an executable, updated again and again).

A kernel node's parameters are a `labkit._prepared.LaunchParams`, built once; setting one on a node is
one driver call (``cuGraphExecKernelNodeSetParams`` with the prebuilt block).
"""
from __future__ import annotations


import numpy as np

from . import _host_calls, _nvtx
from ._errors import CudaError, check
from ._handles import Handle, stream_handle
from ._kernel import python_name
from ._prepared import LaunchParams
from .backends import kernel_node_name as _kernel_node_name, rt

__all__ = ["Graph", "GraphExec", "KernelNode", "UpdateResult"]

_KIND = {
    "cudaGraphNodeTypeKernel": "kernel", "cudaGraphNodeTypeMemcpy": "memcpy",
    "cudaGraphNodeTypeMemset": "memset", "cudaGraphNodeTypeEmpty": "empty",
    "cudaGraphNodeTypeEventRecord": "event_record", "cudaGraphNodeTypeWaitEvent": "wait_event",
    "cudaGraphNodeTypeGraph": "graph", "cudaGraphNodeTypeHost": "host",
    "cudaGraphNodeTypeConditional": "conditional",
    "cudaGraphNodeTypeMemAlloc": "mem_alloc", "cudaGraphNodeTypeMemFree": "mem_free",
}


def _params(kernel, grid, block, args) -> LaunchParams:
    """``kernel`` if it is a LaunchParams already (then no grid, block or args), else built."""
    if isinstance(kernel, LaunchParams):
        if grid is not None or block is not None or args:
            raise TypeError("pass either a LaunchParams, or a kernel with its grid, block and "
                            "arguments, not both")
        return kernel
    if grid is None or block is None:
        raise TypeError("a kernel node needs the kernel's grid and block: "
                        "(kernel, grid, block, *args)")
    return LaunchParams(kernel, grid, block, args)


class Graph(Handle):
    """A CUDA graph: nodes with their kinds and the edges between them (cuda.core 1.2's
    ``cuda.core.graph.GraphDefinition``; a capture's is what its ``GraphBuilder`` ends with).

    Made by `labkit.capture` (or from a raw ``cudaGraph_t``); owns the handle and destroys it
    on ``close()``. It keeps the arrays its kernels were launched with alive, so a replay can
    never write into memory that was freed.
    """

    _what = "graph"
    #: How the graph came to be: "captured" (a stream capture) or "built" (node by node);
    #: `to_networkx` passes it on, so a drawing of the graph can say which.
    made = "captured"

    def __init__(self, handle, keepalive=None, owned: bool = True, launched=None,
                 made: str | None = None):
        self.handle, self._owned = handle, owned
        if made is not None:
            self.made = made
        self.keepalive = list(keepalive or [])
        # kernel -> the argument tuples it was captured with: what a node update is checked against
        self.launched = dict(launched or {})

    def _destroy(self, handle):
        if self._owned:
            check(rt.cudaGraphDestroy(handle), "cudaGraphDestroy")

    @property
    def nodes(self) -> list:
        h = self._open()
        n = check(rt.cudaGraphGetNodes(h), "cudaGraphGetNodes")[1]
        return list(check(rt.cudaGraphGetNodes(h, n), "cudaGraphGetNodes")[0]) if n else []

    def node_kinds(self) -> list[str]:
        return [_KIND.get(check(rt.cudaGraphNodeGetType(n)).name, "other") for n in self.nodes]

    def kernel_nodes(self) -> list:
        return [n for n, k in zip(self.nodes, self.node_kinds()) if k == "kernel"]

    @property
    def edges(self) -> list[tuple[int, int]]:
        """Edges as (from, to) indices into `nodes`."""
        h = self._open()
        count = check(rt.cudaGraphGetEdges(h), "cudaGraphGetEdges")[-1]
        if not count:
            return []
        frm, to, _, _ = check(rt.cudaGraphGetEdges(h, count), "cudaGraphGetEdges")
        index = {int(n): i for i, n in enumerate(self.nodes)}
        return [(index[int(a)], index[int(b)]) for a, b in zip(frm, to)]

    def __len__(self):
        return check(rt.cudaGraphGetNodes(self._open()), "cudaGraphGetNodes")[1]

    def to_networkx(self):
        """A networkx DiGraph with each node's ``kind``, ``label`` and ``name``; the graph's
        ``made`` ("captured" or "built") is in ``g.graph["made"]``."""
        import networkx as nx
        g = nx.DiGraph(made=self.made)
        for i, (node, k) in enumerate(zip(self.nodes, self.node_kinds())):
            # name: a kernel node's kernel by its Python name where labkit knows it, else the kind
            symbol = _kernel_symbol(node) if k == "kernel" else None
            name = python_name(symbol) if symbol else k
            g.add_node(i, kind=k, label=f"{i}:{k}", name=name)
        g.add_edges_from(self.edges)
        return g

    def instantiate(self, upload_stream=None, flags=0) -> "GraphExec":
        """Instantiate into an executable graph (optionally uploading it to ``upload_stream``);
        ``flags``: ``cudaGraphInstantiateFlags`` (e.g. AutoFreeOnLaunch for graph allocations)."""
        with _nvtx.phase("instantiate"):
            ex = GraphExec(check(rt.cudaGraphInstantiate(self._open(), flags),
                                 "cudaGraphInstantiate"), self)
        if upload_stream is not None:
            ex.upload(upload_stream)
        return ex

    def set_kernel_args(self, index: int, kernel, grid=None, block=None, *args):
        """Point kernel node ``index`` (in node order) of this graph at new arguments
        (``cuGraphKernelNodeSetParams``); ``kernel`` may be a `labkit._prepared.LaunchParams` instead."""
        self._open()
        _check_like_captured(kernel, args, self.launched)
        lp = _params(kernel, grid, block, args)
        knodes = self.kernel_nodes()
        if not 0 <= index < len(knodes):
            raise IndexError(f"kernel node {index} does not exist: the graph has {len(knodes)}")
        err = lp.native.set_node(knodes[index])
        if err:
            raise CudaError(err, "setting a kernel node's parameters in the graph")
        self.keepalive.append(lp)

    def __repr__(self):
        if self.handle is None:
            return "<labkit.Graph closed>"
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


class GraphExec(Handle):
    """An executable graph: `launch` it as often as you like; `update` it in place
    (cuda.core's ``cuda.core.graph.Graph``, what ``GraphBuilder.complete()`` returns)."""

    _what = "executable graph"

    def __init__(self, handle, graph: Graph):
        self.handle, self.graph = handle, graph
        self._source_nodes = graph.nodes   # the nodes that name this executable's nodes
        self._kernel_nodes = None          # found on the first node update, then kept
        self._stream, self._stream_h = None, None
        self.keepalive = list(graph.keepalive)
        self._bound: dict = {}             # kernel node index -> the LaunchParams it runs now
        self._easy: dict = {}              # (index, kernel, grid, block) -> KernelNode

    def _destroy(self, handle):
        check(rt.cudaGraphExecDestroy(handle), "cudaGraphExecDestroy")

    def launch(self, stream):
        """Submit the whole graph to ``stream`` with one ``cudaGraphLaunch``."""
        # The raw handle is worked out once per stream: this call is the hot path of every
        # replay loop. A closed labkit.Stream (handle None) goes to stream_handle, which says so.
        if stream is not self._stream or getattr(stream, "handle", 0) is None:
            h = getattr(stream, "handle", None)
            self._stream_h = h if h is not None and not isinstance(stream, int) else stream_handle(stream)
            self._stream = stream
        rec = _host_calls.active     # a timeline is open: this launch is a span of its CPU row
        _nvtx.push("launch")
        if rec is None:
            err, = rt.cudaGraphLaunch(self.handle, self._stream_h)
        else:
            t0 = rec.now()
            err, = rt.cudaGraphLaunch(self.handle, self._stream_h)
            rec.add_graph(t0, self)
        _nvtx.pop()
        if err:
            self._open()       # a closed executable says so, not "invalid argument"
            raise CudaError(err, "cudaGraphLaunch")

    def upload(self, stream):
        """Upload the executable ahead of its first launch, so that launch is not slower."""
        with _nvtx.phase("upload"):
            check(rt.cudaGraphUpload(self._open(), stream_handle(stream)), "cudaGraphUpload")

    def update(self, graph: Graph) -> UpdateResult:
        """Update in place from ``graph`` (same topology, new parameters).

        On failure (e.g. a node added) nothing changes: the old executable still works, and
        the result says why, so the caller can instantiate ``graph`` instead.
        """
        with _nvtx.phase("update"):
            err, info = rt.cudaGraphExecUpdate(self._open(), graph._open())
        rt.cudaGetLastError()
        if int(err) == 0:
            # Nodes keep the names of the graph this was instantiated from, even after an update.
            self.graph = graph
            self.keepalive = list(graph.keepalive)
            self._bound.clear()            # the nodes run the new graph's parameters now
            return UpdateResult(0)
        reason = ("the new graph's topology or node types differ from the executable's"
                  if int(err) == 910 else CudaError(err).description)
        return UpdateResult(err, reason)

    def _kernel_node(self, index: int):
        if self._kernel_nodes is None:     # one cudaGraphNodeGetType per node: do it once
            self._kernel_nodes = [n for n, k in zip(self._source_nodes, _kinds(self._source_nodes))
                                  if k == "kernel"]
        knodes = self._kernel_nodes
        if not 0 <= index < len(knodes):
            raise IndexError(f"kernel node {index} does not exist: the graph has {len(knodes)}")
        return knodes[index]

    def kernel_node(self, index: int, kernel, grid=None, block=None, *args) -> "KernelNode":
        """A handle for repeated updates of kernel node ``index`` (in capture order).

        ``kernel`` with its ``grid``, ``block`` and ``args`` (or one `labkit._prepared.LaunchParams`) is
        what the node is set to at each call of the handle; the handle's ``h(*args)`` rebinds
        to other arguments of the same kinds first (checked as `labkit.prepare` checks). Only
        this node changes, from the next launch on. Nothing is set until the first call.
        """
        self._open()
        _check_like_captured(kernel, args, self.graph.launched)
        return KernelNode(self, index, self._kernel_node(index), _params(kernel, grid, block, args))

    def set_kernel_params(self, index: int, params: LaunchParams):
        """Set kernel node ``index`` to a prebuilt `labkit._prepared.LaunchParams`."""
        h = self._easy.get(index)          # one handle per node for prebuilt blocks
        if h is None:
            h = self._easy[index] = self.kernel_node(index, params)
        elif h.params is not params:
            h._use(params)
        h()

    def set_kernel_args(self, index: int, kernel, grid, block, *args):
        """Point kernel node ``index`` (in capture order) at new arguments.

        The easy form of `kernel_node`: the handle for ``(index, kernel, grid, block)`` is made
        on the first call and kept, so repeating this costs a lookup more than the handle.
        """
        key = (index, kernel, grid, block)
        try:
            h = self._easy.get(key)
        except TypeError:                  # an unhashable grid or block
            key, h = None, None
        if h is None:
            h = self.kernel_node(index, kernel, grid, block, *args)
            if key is not None:
                self._easy[key] = h
            h()
        else:
            h(*args)

    def close(self):
        super().close()
        self._bound.clear()
        self._easy.clear()


class KernelNode:
    """One kernel node of an executable graph, updated again and again (cuda.core's
    ``ExecutableKernelNode``).

    ``h()`` sets the node to the current `labkit._prepared.LaunchParams` (one
    ``cuGraphExecKernelNodeSetParams`` with the prebuilt block); ``h(*args)`` first rebinds to
    other arguments of the same kinds, reusing the blocks of arguments used before. The
    executable keeps the arguments it runs alive. Made by `GraphExec.kernel_node`.
    """

    __slots__ = ("exec", "index", "node", "params", "_set", "_setters", "_bound")

    def __init__(self, ex: GraphExec, index: int, node, params: LaunchParams):
        self.exec, self.index, self.node = ex, index, node
        self._bound = ex._bound
        self._setters: dict = {}
        self._use(params)

    def _use(self, params):
        setter = self._setters.get(params)
        if setter is None:
            if len(self._setters) >= 8:
                self._setters.pop(next(iter(self._setters)))
            setter = self._setters[params] = params.native.exec_node_setter(self.exec.handle,
                                                                            self.node)
        self.params, self._set = params, setter

    def __call__(self, *args):
        if args:
            p = self.params.with_args(*args)
            if p is not self.params:
                self._use(p)
        if self.exec.handle is None:
            raise ValueError("this executable graph was closed: make a new handle from an open "
                             "GraphExec")
        _nvtx.push("update")
        err, = self._set()
        _nvtx.pop()
        if err:
            raise CudaError(err, "setting a kernel node's parameters in the executable graph")
        self._bound[self.index] = self.params

    def __repr__(self):
        return f"<labkit.KernelNode {self.index} of {self.exec!r}: {self.params!r}>"


def _kind_of(a) -> str:
    """What numba types an argument as, as far as a kernel body can tell: array rank or number."""
    if hasattr(a, "shape") and hasattr(a, "dtype"):
        return f"a {len(a.shape)}-D array"
    return "a number" if isinstance(a, (bool, int, float, complex, np.number)) else type(a).__name__


def _check_like_captured(kernel, args, launched):
    """Refuse arguments for ``kernel`` whose kinds match none it was captured with in this graph.

    The refusal comes here, at the call: on a GPU numba would fail to type the kernel, and on
    the simulator its reference would fail at the next launch. A kernel not captured into the
    graph (a node switched to another kernel) is checked for its argument count only.
    """
    if isinstance(kernel, LaunchParams):
        return
    seen = launched.get(kernel)
    if not seen or len(args) != len(seen[0]):
        return                              # the count is LaunchParams' check, with the names
    got = [_kind_of(a) for a in args]
    kinds = {tuple(_kind_of(a) for a in before) for before in seen}
    if tuple(got) in kinds:
        return
    want = next(iter(kinds))
    names = getattr(kernel, "param_names", None) or [f"argument {i}" for i in range(len(args))]
    wrong = [f"{n} was captured as {w}, got {g}" for n, w, g in zip(names, want, got) if w != g]
    raise TypeError(f"{kernel.name}({', '.join(names)}): {'; '.join(wrong)}. Pass arguments of "
                    "the kinds the node was captured with (device arrays from labkit.to_device "
                    "where it took arrays)")


def _kernel_symbol(node) -> str | None:
    """The function a kernel node runs, by name (for drawings, never for logic); None if unknown."""
    try:
        return _kernel_node_name(node)
    except Exception:   # a label is a nicety: an old driver or odd node draws the kind instead
        return None


def _kinds(nodes):
    return [_KIND.get(check(rt.cudaGraphNodeGetType(n)).name, "other") for n in nodes]

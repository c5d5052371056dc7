"""Building a graph node by node with the explicit graph API, instead of capturing it.

``cudaGraphCreate`` makes an empty graph; each ``add_*`` call adds one node that depends on the
nodes you name. Empty and 1-D memcpy nodes go straight through ``labkit.rt``
(``cudaGraphAddEmptyNode``, ``cudaGraphAddMemcpyNode1D``) on both backends.

A kernel node needs the kernel's function handle and its parameter buffer, which numba builds
for every launch (each array becomes several parameters). Rather than rebuild numba's parameter
layout by hand, `add_kernel_node` lets numba prepare one launch, captured into a scratch graph,
and adds a node with that node's parameters (``cuGraphKernelNodeGetParams`` then
``cuGraphAddKernelNode``, driver API). On the simulator it calls the simulated runtime's
``add_kernel_node``. Either way the node you get is an ordinary kernel node of *your* graph.
"""
from __future__ import annotations

from . import _state
from ._errors import CudaError, check
from ._kernel import _dims

__all__ = ["new_graph", "add_empty_node", "add_memcpy_node", "add_kernel_node", "chain_graph"]


def new_graph():
    """An empty `labkit.Graph` made with ``cudaGraphCreate``."""
    from ._graph import Graph
    return Graph(check(_state.rt.cudaGraphCreate(0), "cudaGraphCreate"))


def _handles(deps):
    return [d for d in (deps or [])]


def add_empty_node(graph, deps=()):
    """Add an empty node (a pure dependency point) after ``deps``; returns the node."""
    deps = _handles(deps)
    return check(_state.rt.cudaGraphAddEmptyNode(graph.handle, deps, len(deps)),
                 "cudaGraphAddEmptyNode")


def add_memcpy_node(graph, deps, dst_ptr: int, src_ptr: int, nbytes: int, kind):
    """Add a 1-D copy node of ``nbytes`` from ``src_ptr`` to ``dst_ptr``; returns the node."""
    deps = _handles(deps)
    return check(_state.rt.cudaGraphAddMemcpyNode1D(graph.handle, deps, len(deps), dst_ptr,
                                                    src_ptr, nbytes, kind),
                 "cudaGraphAddMemcpyNode1D")


def add_kernel_node(graph, deps, kernel, grid, block, *args):
    """Add a kernel node launching ``kernel[grid, block](*args)`` after ``deps``.

    Parameters
    ----------
    graph : labkit.Graph
        The graph to add to (it keeps ``args`` alive for as long as it lives).
    deps : sequence of nodes
        Nodes this one waits for; empty for a root node.
    kernel : labkit.Kernel
    grid, block : int or tuple
    *args
        The kernel's arguments: device arrays and scalars.

    Returns
    -------
    The new node's handle.
    """
    deps = _handles(deps)
    graph.keepalive.append(args)
    if _state.backend != "cuda":
        return check(_state.rt.add_kernel_node(graph.handle, deps, kernel, _dims(grid),
                                               _dims(block), args), "adding a kernel node")
    from cuda.bindings import driver
    from ._capture import scratch_kernel_node
    with scratch_kernel_node(kernel, grid, block, args) as src:
        err, params = driver.cuGraphKernelNodeGetParams(src)
        if int(err):
            raise CudaError(err, "cuGraphKernelNodeGetParams (reading numba's prepared launch)")
        # The driver copies the parameter buffer into the new node, so the scratch graph may go.
        err, node = driver.cuGraphAddKernelNode(
            driver.CUgraph(int(graph.handle)), [driver.CUgraphNode(int(d)) for d in deps],
            len(deps), params)
    if int(err):
        raise CudaError(err, "cuGraphAddKernelNode")
    return _state.rt.cudaGraphNode_t(int(node))


def chain_graph(kernel, k: int, grid, block, *args):
    """A graph of ``k`` launches of ``kernel`` in a chain, built node by node.

    The same shape as capturing ``k`` launches on one stream: node ``i`` depends on node
    ``i - 1``.
    """
    g = new_graph()
    prev = []
    for _ in range(k):
        prev = [add_kernel_node(g, prev, kernel, grid, block, *args)]
    return g

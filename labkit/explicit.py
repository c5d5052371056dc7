"""Building a graph node by node with the explicit graph API, instead of capturing it.

``cudaGraphCreate`` makes an empty graph; each ``add_*`` call adds one node that depends on the
nodes you name. Empty and 1-D memcpy nodes go straight through ``labkit.rt``
(``cudaGraphAddEmptyNode``, ``cudaGraphAddMemcpyNode1D``) on both backends.

A kernel node needs the kernel's function handle and its parameter block, which numba builds
for every launch (each array becomes several parameters). `add_kernel_node` takes a
`labkit._prepared.LaunchParams`, the block built once (or builds one from the kernel, grid, block and
arguments), and adds the node with ``cuGraphAddKernelNode`` (driver API; the simulator's
``cudaGraphAddKernelNode``). `chain_graph` builds its block once for all its nodes.
"""
from __future__ import annotations

from ._errors import CudaError, check
from ._graph import Graph, _params
from .backends import rt

__all__ = ["new_graph", "add_empty_node", "add_memcpy_node", "add_kernel_node", "chain_graph"]


def new_graph():
    """An empty `labkit.Graph` made with ``cudaGraphCreate``."""
    return Graph(check(rt.cudaGraphCreate(0), "cudaGraphCreate"), made="built")


def add_empty_node(graph, deps=()):
    """Add an empty node (a pure dependency point) after ``deps``; returns the node."""
    deps = list(deps or [])
    return check(rt.cudaGraphAddEmptyNode(graph.handle, deps, len(deps)), "cudaGraphAddEmptyNode")


def add_memcpy_node(graph, deps, dst_ptr: int, src_ptr: int, nbytes: int, kind):
    """Add a 1-D copy node of ``nbytes`` from ``src_ptr`` to ``dst_ptr``; returns the node."""
    deps = list(deps or [])
    return check(rt.cudaGraphAddMemcpyNode1D(graph.handle, deps, len(deps), dst_ptr, src_ptr,
                                             nbytes, kind), "cudaGraphAddMemcpyNode1D")


def add_kernel_node(graph, deps, kernel, grid=None, block=None, *args):
    """Add a kernel node launching ``kernel[grid, block](*args)`` after ``deps``.

    Parameters
    ----------
    graph : labkit.Graph
        The graph to add to (it keeps ``args`` alive for as long as it lives).
    deps : sequence of nodes
        Nodes this one waits for; empty for a root node.
    kernel : labkit._kernel.Kernel or labkit._prepared.LaunchParams
        The kernel (then ``grid``, ``block`` and ``*args`` follow), or its parameter block
        built once with ``kernel.params(grid, block, *args)``, to add many nodes cheaply.
    grid, block : int or tuple
    *args
        The kernel's arguments: device arrays and scalars.

    Returns
    -------
    The new node's handle.
    """
    lp = _params(kernel, grid, block, args)
    deps = list(deps or [])
    err, node = lp.native.add_node(graph.handle, deps)
    if err:
        raise CudaError(err, "adding a kernel node (cuGraphAddKernelNode)")
    graph.keepalive.append(lp)
    return node


def chain_graph(kernel, k: int, grid, block, *args):
    """A graph of ``k`` launches of ``kernel`` in a chain, built node by node.

    The same shape as capturing ``k`` launches on one stream: node ``i`` depends on node
    ``i - 1``. The parameter block is built once and shared by every node.
    """
    lp = kernel.params(grid, block, *args)
    g = new_graph()
    prev = []
    for _ in range(k):
        prev = [add_kernel_node(g, prev, lp)]
    return g

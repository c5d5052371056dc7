"""The simulated runtime's state: its objects (streams, events, captures, graphs, executables,
registered functions), the tables that hold them by handle, and the guard that every
*potentially unsafe* call goes through while a capture is open.

Every other module of the simulated runtime reads and changes this state; none of them holds
state of its own except `labkit.sim._heap` (memory) and `labkit.sim._conditional` (handles).
"""
from __future__ import annotations

import itertools
import threading

from cuda.bindings import runtime as _cr

from . import _capture_rules as _rules
from . import clock as _clock

E = _cr.cudaError_t
STATUS = _cr.cudaStreamCaptureStatus
MODE = _cr.cudaStreamCaptureMode
NT = _cr.cudaGraphNodeType
OK = (E.cudaSuccess,)
P = _clock.P
ids = itertools.count(0x1000)
graph_ids = itertools.count(1)     # cudaGraphGetId: from 1 up, one counter for every graph
exec_ids = itertools.count(1)      # cudaGraphExecGetId: its own counter
lock = threading.RLock()
LEGACY, PER_THREAD = 1, 2          # cudaStreamLegacy, cudaStreamPerThread (0 is the legacy too)


PRIMARY_CTX = 0x5C7   # the one device's primary context (cudaDeviceGetExecutionCtx), opaque


def primary_ctx(ctx) -> bool:
    """Whether ``ctx`` names the device's context: its primary one, or None (the current)."""
    return h(ctx) in (0, PRIMARY_CTX)


def fail(code):
    """Record ``code`` as the calling thread's last error (per thread, as CUDA's) and return it."""
    _rules.set_last_error(code)
    return code


def h(handle) -> int:
    """A handle's value: cuda-bindings' handle types, ints and None (0) alike."""
    return 0 if handle is None else int(handle)


# ---------------------------------------------------------------- objects

class Function:
    """A registered kernel: its name, how to compute it, its GPU time, its parameters' names and
    which of them its code reads and writes (``access``: (reads, writes), or None: unknown)."""

    def __init__(self, name, run, gpu_us, params=(), access=None):
        self.name, self.run, self.gpu_us = name, run, gpu_us
        self.params, self.access = tuple(params), access

    def param_name(self, i: int) -> str:
        return self.params[i] if i < len(self.params) else f"argument {i}"

    def reads(self, name: str) -> bool:
        return self.access is None or name in self.access[0]

    def writes(self, name: str) -> bool:
        return self.access is None or name in self.access[1]


class Capture:
    def __init__(self, origin, mode):
        self.id = next(ids)
        self.origin, self.mode = origin, mode
        self.graph = Graph()
        self.status = STATUS.cudaStreamCaptureStatusActive
        self.streams = {origin}
        self.thread = threading.get_ident()
        self.recapture: list | None = None   # the graph's nodes, when re-capturing into it
        self.matched = 0                       # how many of them the recapture has made

    def add(self, ntype, payload, deps):
        """A captured node: a new one, or (re-capturing) the graph's next node with the new
        parameters, when it is of the same kind after the same nodes; None where the recapture
        does not match (CUDA: it fails at once)."""
        if self.recapture is None:
            return self.graph.add(ntype, payload, deps)
        if self.matched >= len(self.recapture):
            return None
        n = self.recapture[self.matched]
        if n.type != ntype or set(n.deps) != set(deps):
            return None
        self.matched += 1
        n.payload = payload
        return n


class Stream:
    def __init__(self, handle, flags, priority=0):
        self.handle, self.flags = handle, flags
        self.priority = priority  # cudaStreamCreateWithPriority's; kernels captured take it
        self.ready_us = 0.0
        self.last_kernel = None  # (op, order it was after, tick): its last work, if a kernel
        self.capture: Capture | None = None
        self.deps: list = []
        self.destroyed = False
        self.vc: dict = {}       # what its work so far is ordered after (`labkit.sim._races`)

    @property
    def blocking(self) -> bool:
        """Whether the legacy default stream synchronizes with this stream."""
        return not self.flags & _cr.cudaStreamNonBlocking


class Event:
    def __init__(self, flags):
        self.flags = flags
        self.time_us = None      # GPU time of completion of the recorded work
        self.captured = None     # (capture, deps) when last recorded in a capture
        self.destroyed = False
        self.vc: dict = {}       # what the recorded work is ordered after


class Node:
    def __init__(self, ntype, payload, local_id=0, graph_id=0):
        self.handle = next(ids)
        self.type, self.payload = ntype, payload   # payload: dict of the node's parameters
        self.deps: list[Node] = []
        self.enabled = True
        self.local_id = local_id  # cudaGraphNodeGetLocalId: its place in its graph, from 0
        self.tools_id = (graph_id << 32) | local_id   # unique in the process (graph, node)
        self.attrs: dict = {}     # kernel node attributes set (cudaGraphKernelNodeSetAttribute)
        self.ports: dict = {}     # dependency -> (from_port, type) of a non-default edge


class Graph:
    def __init__(self):
        self.handle = next(ids)
        self.id = next(graph_ids)
        self.nodes: list[Node] = []
        self.destroyed = False
        self._next_local = 0

    def add(self, ntype, payload, deps):
        n = Node(ntype, payload, self._next_local, self.id)
        self._next_local += 1
        n.deps = list(dict.fromkeys(deps))
        self.nodes.append(n)
        nodes[n.handle] = (self, n)
        return n


def frozen_nodes(graph: Graph) -> list:
    """An executable's copy of ``graph``'s nodes: ``(type, payload, dependency indices)``, with
    each kernel node's priority attribute and its programmatic edges (``_ports``: dependency
    index -> port) in the payload, where placement reads them."""
    index = {n: i for i, n in enumerate(graph.nodes)}
    out = []
    for n in graph.nodes:
        p = dict(n.payload)
        if "priority" in n.attrs:
            p["priority"] = n.attrs["priority"]
        if n.ports:
            p["_ports"] = {index[d]: port for d, (port, _t) in n.ports.items() if d in index}
        out.append((n.type, p, [index[d] for d in n.deps]))
    return out


class Exec:
    def __init__(self, graph: Graph, flags=0):
        self.handle = next(ids)
        self.id = next(exec_ids)
        self.source, self.flags = graph, int(flags)
        self.nodes = frozen_nodes(graph)
        self.by_source = {n.handle: i for i, n in enumerate(graph.nodes)}
        self.disabled: set[int] = set()
        self.uploaded = False
        self.destroyed = False
        self.ready_us = 0.0      # when its last launch ends: launches of one executable serialize
        self.vc: dict = {}       # what its last launch was ordered after


functions: dict[int, Function] = {}
_legacy = Stream(0, 0)              # handle 0 and cudaStreamLegacy: one and the same stream
streams: dict[int, Stream] = {0: _legacy, LEGACY: _legacy}
_per_thread: dict[int, Stream] = {}   # cudaStreamPerThread: a stream of each host thread's own
events: dict[int, Event] = {}
graphs: dict[int, Graph] = {}
execs: dict[int, Exec] = {}
nodes: dict[int, tuple] = {}      # node handle -> (graph, node)


# ---------------------------------------------------------------- lookups

def stream(handle):
    want = h(handle)
    if want == PER_THREAD:
        me = threading.get_ident()
        if me not in _per_thread:
            _per_thread[me] = Stream(PER_THREAD, 0)
        return _per_thread[me]
    s = streams.get(want)
    return None if s is None or s.destroyed else s


def all_streams():
    """Every stream: the legacy one, each thread's per-thread stream, those created."""
    return list(streams.values()) + list(_per_thread.values())


def event(handle):
    e = events.get(h(handle))
    return None if e is None or e.destroyed else e


def graph(handle):
    g = graphs.get(h(handle))
    return None if g is None or g.destroyed else g


def any_graph(handle):
    """A graph by handle: a live one, or the graph a capture is building."""
    g = graph(handle)
    if g is not None:
        return g
    want = h(handle)
    for c in active_captures():
        if c.graph.handle == want:
            return c.graph
    return None


def exec_(handle):
    x = execs.get(h(handle))
    return None if x is None or x.destroyed else x


def node(handle, ntype=None):
    """(graph, node) for a node handle (of type ``ntype`` if given), or None."""
    hit = nodes.get(h(handle))
    if hit is None or hit[0].destroyed or (ntype is not None and hit[1].type != ntype):
        return None
    return hit


def deps_in(g, handles):
    """The nodes of graph ``g`` named by ``handles``; None if one is not ``g``'s."""
    out = []
    for d in handles or []:
        hit = nodes.get(h(d))
        if hit is None or hit[0] is not g:
            return None
        out.append(hit[1])
    return out


# ---------------------------------------------------------------- captures and the guard

def active_captures():
    seen = {}
    for s in all_streams():
        if s.capture is not None and not s.destroyed:
            seen[s.capture.id] = s.capture
    return list(seen.values())


def invalidate(c: Capture):
    c.status = STATUS.cudaStreamCaptureStatusInvalidated


def refuse_unsafe():
    """The guard of a *potentially unsafe* call (`labkit.sim._capture_rules`): while a capture
    forbids it from this thread, that capture is invalidated and the call's error is
    ``cudaErrorStreamCaptureUnsupported``, returned here; None when the call may go ahead."""
    c = _rules.forbidding_capture(active_captures())
    if c is None:
        return None
    invalidate(c)
    return fail(E.cudaErrorStreamCaptureUnsupported)


def captured_event_error(e):
    """A synchronize or query of event ``e`` last recorded in a capture: 907 while the capture
    is active (which it invalidates), else cudaErrorInvalidValue; None for an uncaptured event."""
    if e.captured is None:
        return None
    if e.captured[0].status == STATUS.cudaStreamCaptureStatusActive:
        invalidate(e.captured[0])
        return fail(E.cudaErrorCapturedEvent)
    return fail(E.cudaErrorInvalidValue)

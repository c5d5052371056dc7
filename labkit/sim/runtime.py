"""A CPU stand-in for the subset of ``cuda.bindings.runtime`` the course uses.

Same function names, the same enum classes and handle types (taken from cuda-python, which
imports without a GPU) and the same ``(err, *values)`` tuples. The behaviour in capture was
read off a real H200 (tools/probe_semantics.py) and is pinned by tests/conformance/.

What it does not do, and says so loudly:

* any function outside the subset raises ``NotImplementedError`` naming the sim backend;
* graph launches into a capturing stream, child-graph nodes, host nodes, conditional nodes;
* sticky (context-corrupting) errors: a bad address fails the one call, not the process;
* SM contention: kernels on different streams overlap fully in the model.

Host costs are charged per call, with one composite: `copy_kernel_node_params` (labkit's node
update) brings the whole update, scratch capture included, to the calibrated ``node_update_us``.

Data is computed when work is submitted (in host program order), which is one valid order
for a correctly synchronized program; timing comes from `labkit.sim.clock`.
"""
from __future__ import annotations

import ctypes
import itertools
import threading

import numpy as np
from cuda.bindings import runtime as _cr

from . import clock as _clock

E = _cr.cudaError_t
cudaError_t = _cr.cudaError_t
cudaStreamCaptureMode = _cr.cudaStreamCaptureMode
cudaStreamCaptureStatus = _cr.cudaStreamCaptureStatus
cudaGraphNodeType = _cr.cudaGraphNodeType
cudaGraphExecUpdateResult = _cr.cudaGraphExecUpdateResult
cudaMemcpyKind = _cr.cudaMemcpyKind
cudaStream_t = _cr.cudaStream_t
cudaEvent_t = _cr.cudaEvent_t
cudaGraph_t = _cr.cudaGraph_t
cudaGraphExec_t = _cr.cudaGraphExec_t
cudaGraphNode_t = _cr.cudaGraphNode_t
cudaGraphExecUpdateResultInfo = _cr.cudaGraphExecUpdateResultInfo
cudaStreamNonBlocking = _cr.cudaStreamNonBlocking
cudaStreamDefault = _cr.cudaStreamDefault
cudaEventDefault = _cr.cudaEventDefault
cudaEventDisableTiming = _cr.cudaEventDisableTiming
cudaGetErrorName = _cr.cudaGetErrorName
cudaGetErrorString = _cr.cudaGetErrorString

_OK = (E.cudaSuccess,)
_STATUS = cudaStreamCaptureStatus
_MODE = cudaStreamCaptureMode
_NT = cudaGraphNodeType
_ids = itertools.count(0x1000)
_lock = threading.RLock()
_last_error = [E.cudaSuccess]
P = _clock.P


def _fail(code):
    _last_error[0] = code
    return code


def _h(handle) -> int:
    return 0 if handle is None else int(handle)


# ---------------------------------------------------------------- memory

class _Alloc:
    def __init__(self, addr, nbytes, pinned=False):
        self.addr, self.nbytes, self.pinned, self.freed = addr, nbytes, pinned, False
        self.buf = np.zeros(max(nbytes, 1), dtype=np.uint8)


_allocs: dict[int, _Alloc] = {}
_next_addr = [0x2000_0000_0000]


def _new_alloc(nbytes, pinned=False) -> _Alloc:
    addr = _next_addr[0]
    _next_addr[0] += (int(nbytes) + 0xFFFF) & ~0xFFF | 0x10000  # never reused, so stale use is seen
    a = _Alloc(addr, int(nbytes), pinned)
    _allocs[addr] = a
    return a


def _find(addr: int, nbytes: int = 1):
    """The live allocation holding [addr, addr+nbytes), its offset; None where there is none."""
    for a in _allocs.values():
        if a.addr <= addr and addr + nbytes <= a.addr + max(a.nbytes, 1) and not a.freed:
            return a, addr - a.addr
    return None


def _view(addr: int, nbytes: int):
    """Bytes at a simulated device/pinned address, or at a real host address."""
    hit = _find(addr, nbytes)
    if hit is not None:
        a, off = hit
        return a.buf[off:off + nbytes]
    if _in_sim_range(addr):
        return None  # freed or never allocated
    return np.ctypeslib.as_array((ctypes.c_uint8 * nbytes).from_address(addr))


def _in_sim_range(addr: int) -> bool:
    return 0x2000_0000_0000 <= addr < _next_addr[0]


def _is_pageable_host(addr: int) -> bool:
    return _find(addr) is None and not _in_sim_range(addr)


# ---------------------------------------------------------------- objects

class _Capture:
    def __init__(self, origin, mode):
        self.id = next(_ids)
        self.origin, self.mode = origin, mode
        self.graph = _Graph()
        self.status = _STATUS.cudaStreamCaptureStatusActive
        self.streams = {origin}
        self.thread = threading.get_ident()


class _Stream:
    def __init__(self, handle, flags):
        self.handle, self.flags = handle, flags
        self.ready_us = 0.0
        self.capture: _Capture | None = None
        self.deps: list = []
        self.destroyed = False


class _Event:
    def __init__(self, flags):
        self.flags = flags
        self.time_us = None      # GPU time of completion of the recorded work
        self.captured = None     # (capture, deps) when last recorded in a capture
        self.destroyed = False


class _Node:
    def __init__(self, ntype, payload):
        self.handle = next(_ids)
        self.type, self.payload = ntype, payload   # payload: dict of the node's parameters
        self.deps: list[_Node] = []


class _Graph:
    def __init__(self):
        self.handle = next(_ids)
        self.nodes: list[_Node] = []
        self.destroyed = False

    def add(self, ntype, payload, deps):
        n = _Node(ntype, payload)
        n.deps = list(dict.fromkeys(deps))
        self.nodes.append(n)
        _nodes[n.handle] = (self, n)
        return n


class _Exec:
    def __init__(self, graph: _Graph):
        self.handle = next(_ids)
        self.source = graph
        index = {n: i for i, n in enumerate(graph.nodes)}
        self.nodes = [(n.type, dict(n.payload), [index[d] for d in n.deps]) for n in graph.nodes]
        self.by_source = {n.handle: i for i, n in enumerate(graph.nodes)}
        self.uploaded = False
        self.destroyed = False


_streams: dict[int, _Stream] = {0: _Stream(0, 0), 1: _Stream(1, 0), 2: _Stream(2, 0)}
_events: dict[int, _Event] = {}
_graphs: dict[int, _Graph] = {}
_execs: dict[int, _Exec] = {}
_nodes: dict[int, tuple] = {}


def _stream(handle):
    s = _streams.get(_h(handle))
    return None if s is None or s.destroyed else s


def _active_captures():
    seen = {}
    for s in _streams.values():
        if s.capture is not None and not s.destroyed:
            seen[s.capture.id] = s.capture
    return list(seen.values())


def _unsafe_call_blocked() -> _Capture | None:
    """The capture that forbids a 'potentially unsafe' call from this thread (global rules)."""
    me = threading.get_ident()
    for c in _active_captures():
        if c.mode == _MODE.cudaStreamCaptureModeRelaxed:
            continue
        if c.thread == me or c.mode == _MODE.cudaStreamCaptureModeGlobal:
            return c
    return None


def _invalidate(c: _Capture):
    c.status = _STATUS.cudaStreamCaptureStatusInvalidated


# ---------------------------------------------------------------- devices and errors

def cudaGetDeviceCount():
    return E.cudaSuccess, 1


class _Props:
    """The device properties the notebooks print, for the GPU the model was calibrated on."""

    def __init__(self):
        from .. import _calibration
        cal = _calibration.load()
        self.name = f"simulated {cal['gpu']}".encode()
        self.multiProcessorCount = int(cal.get("sm_count", 132))
        self.major, self.minor = cal.get("compute_capability", [9, 0])
        self.totalGlobalMem = int(cal.get("total_mem", 150109880320))


def cudaGetDeviceProperties(device):
    if int(device) != 0:
        return (_fail(E.cudaErrorInvalidDevice), None)
    return E.cudaSuccess, _Props()


def cudaGetDevice():
    return E.cudaSuccess, 0


def cudaDriverGetVersion():
    return E.cudaSuccess, 13000


def cudaRuntimeGetVersion():
    return E.cudaSuccess, 13000


def cudaGetLastError():
    err, _last_error[0] = _last_error[0], E.cudaSuccess
    return (err,)


def cudaPeekAtLastError():
    return (_last_error[0],)


def cudaDeviceSynchronize():
    with _lock:
        for c in _active_captures():
            _invalidate(c)
            return (_fail(E.cudaErrorStreamCaptureUnsupported),)
        t = max([s.ready_us for s in _streams.values()] + [_clock.host_us()])
        _clock.api("cudaDeviceSynchronize", P("sync_us"), wait_until=t)
        return _OK


# ---------------------------------------------------------------- streams

def _create_stream(flags):
    h = next(_ids)
    _streams[h] = _Stream(h, int(flags))
    _clock.api("cudaStreamCreate", P("api_us"))
    return E.cudaSuccess, cudaStream_t(h)


def cudaStreamCreate():
    return _create_stream(0)


def cudaStreamCreateWithFlags(flags):
    return _create_stream(flags)


def cudaStreamDestroy(stream):
    s = _stream(stream)
    if s is None or s.handle in (0, 1, 2):
        return (_fail(E.cudaErrorInvalidResourceHandle),)
    s.destroyed = True
    return _OK


def _capturing_or_none(s: _Stream):
    return s.capture


def cudaStreamSynchronize(stream):
    s = _stream(stream)
    if s is None:
        return (_fail(E.cudaErrorInvalidResourceHandle),)
    if s.capture is not None:
        _invalidate(s.capture)
        return (_fail(E.cudaErrorStreamCaptureUnsupported),)
    c = _unsafe_call_blocked() if s.handle in (0, 1) else None
    if c is not None:
        _invalidate(c)
        return (_fail(E.cudaErrorStreamCaptureUnsupported),)
    _clock.api("cudaStreamSynchronize", P("sync_us"), wait_until=s.ready_us)
    return _OK


def cudaStreamQuery(stream):
    s = _stream(stream)
    if s is None:
        return (_fail(E.cudaErrorInvalidResourceHandle),)
    if s.capture is not None:
        _invalidate(s.capture)
        return (_fail(E.cudaErrorStreamCaptureUnsupported),)
    c = _unsafe_call_blocked()
    if c is not None:
        _invalidate(c)
        return (_fail(E.cudaErrorStreamCaptureUnsupported),)
    _clock.api("cudaStreamQuery", P("api_us"))
    return _OK if s.ready_us <= _clock.host_us() else (E.cudaErrorNotReady,)


# ---------------------------------------------------------------- events

def _create_event(flags):
    h = next(_ids)
    _events[h] = _Event(int(flags))
    _clock.api("cudaEventCreate", P("api_us"))
    return E.cudaSuccess, cudaEvent_t(h)


def cudaEventCreate():
    return _create_event(0)


def cudaEventCreateWithFlags(flags):
    return _create_event(flags)


def _event(ev):
    e = _events.get(_h(ev))
    return None if e is None or e.destroyed else e


def cudaEventDestroy(event):
    e = _event(event)
    if e is None:
        return (_fail(E.cudaErrorInvalidResourceHandle),)
    e.destroyed = True
    return _OK


def cudaEventRecord(event, stream):
    e, s = _event(event), _stream(stream)
    if e is None or s is None:
        return (_fail(E.cudaErrorInvalidResourceHandle),)
    if s.capture is not None:
        if s.capture.status != _STATUS.cudaStreamCaptureStatusActive:
            return (_fail(E.cudaErrorStreamCaptureInvalidated),)
        e.captured, e.time_us = (s.capture, list(s.deps)), None
        return _OK
    _clock.api("cudaEventRecord", P("api_us"))
    e.captured = None
    e.time_us = max(s.ready_us, _clock.host_us())
    s.ready_us = e.time_us
    return _OK


def cudaEventQuery(event):
    e = _event(event)
    if e is None:
        return (_fail(E.cudaErrorInvalidResourceHandle),)
    if e.captured is not None:
        if e.captured[0].status == _STATUS.cudaStreamCaptureStatusActive:
            _invalidate(e.captured[0])
            return (_fail(E.cudaErrorCapturedEvent),)
        return (_fail(E.cudaErrorInvalidValue),)
    c = _unsafe_call_blocked()
    if c is not None:
        _invalidate(c)
        return (_fail(E.cudaErrorStreamCaptureUnsupported),)
    _clock.api("cudaEventQuery", P("api_us"))
    if e.time_us is None or e.time_us <= _clock.host_us():
        return _OK
    return (E.cudaErrorNotReady,)


def cudaEventSynchronize(event):
    e = _event(event)
    if e is None:
        return (_fail(E.cudaErrorInvalidResourceHandle),)
    if e.captured is not None:
        return (_fail(E.cudaErrorInvalidValue),)
    c = _unsafe_call_blocked()
    if c is not None:
        _invalidate(c)
        return (_fail(E.cudaErrorStreamCaptureUnsupported),)
    _clock.api("cudaEventSynchronize", P("sync_us"), wait_until=e.time_us or 0.0)
    return _OK


def cudaEventElapsedTime(start, end):
    a, b = _event(start), _event(end)
    if a is None or b is None or a.time_us is None or b.time_us is None:
        return (_fail(E.cudaErrorInvalidResourceHandle), None)
    if (a.flags | b.flags) & cudaEventDisableTiming:
        return (_fail(E.cudaErrorInvalidResourceHandle), None)
    if max(a.time_us, b.time_us) > _clock.host_us():
        return (E.cudaErrorNotReady, None)
    return E.cudaSuccess, (b.time_us - a.time_us) / 1000.0


def cudaStreamWaitEvent(stream, event, flags=0):
    s, e = _stream(stream), _event(event)
    if s is None or e is None:
        return (_fail(E.cudaErrorInvalidResourceHandle),)
    _clock.api("cudaStreamWaitEvent", P("api_us"))
    if e.captured is not None and e.captured[0].status == _STATUS.cudaStreamCaptureStatusActive:
        cap, deps = e.captured
        if s.capture is None:            # the fork: s joins the capture
            s.capture, s.deps = cap, list(deps)
            cap.streams.add(s)
        elif s.capture is cap:
            s.deps = list(dict.fromkeys(s.deps + deps))
        else:
            _invalidate(s.capture)
            _invalidate(cap)
            return (_fail(E.cudaErrorStreamCaptureMerge),)
        return _OK
    if s.capture is not None:            # a wait on work outside the capture
        _invalidate(s.capture)
        return (_fail(E.cudaErrorStreamCaptureIsolation),)
    if e.time_us is not None:
        s.ready_us = max(s.ready_us, e.time_us)
    return _OK


# ---------------------------------------------------------------- capture

def cudaStreamBeginCapture(stream, mode):
    s = _stream(stream)
    if s is None:
        return (_fail(E.cudaErrorInvalidResourceHandle),)
    if s.handle in (0, 1):
        return (_fail(E.cudaErrorStreamCaptureUnsupported),)
    if s.capture is not None:
        return (_fail(E.cudaErrorIllegalState),)
    _clock.api("cudaStreamBeginCapture", P("begin_capture_us"))
    s.capture, s.deps = _Capture(s, _MODE(int(mode))), []
    return _OK


def _ancestors(nodes):
    seen, todo = set(), list(nodes)
    while todo:
        n = todo.pop()
        if n not in seen:
            seen.add(n)
            todo.extend(n.deps)
    return seen


def _end(c: _Capture):
    for t in c.streams:
        t.capture, t.deps = None, []


def cudaStreamEndCapture(stream):
    s = _stream(stream)
    if s is None:
        return (_fail(E.cudaErrorInvalidResourceHandle), None)
    c = s.capture
    if c is None:
        return (_fail(E.cudaErrorIllegalState), None)
    if c.origin is not s:
        _invalidate(c)
        return (_fail(E.cudaErrorStreamCaptureUnmatched), None)
    if c.thread != threading.get_ident() and c.mode == _MODE.cudaStreamCaptureModeThreadLocal:
        return (_fail(E.cudaErrorStreamCaptureWrongThread), None)
    tails = {t: list(t.deps) for t in c.streams}   # read before _end clears them
    _end(c)
    if c.status != _STATUS.cudaStreamCaptureStatusActive:
        return (_fail(E.cudaErrorStreamCaptureInvalidated), None)
    joined = _ancestors(tails[s])
    for t in c.streams:
        if t is not s and any(d not in joined for d in tails[t]):
            return (_fail(E.cudaErrorStreamCaptureUnjoined), None)
    _clock.api("cudaStreamEndCapture", P("end_capture_per_node_us") * len(c.graph.nodes))
    _graphs[c.graph.handle] = c.graph
    return E.cudaSuccess, cudaGraph_t(c.graph.handle)


def cudaStreamIsCapturing(stream):
    s = _stream(stream)
    if s is None:
        return (_fail(E.cudaErrorInvalidResourceHandle), None)
    if s.capture is None:
        return E.cudaSuccess, _STATUS.cudaStreamCaptureStatusNone
    return E.cudaSuccess, s.capture.status


def cudaStreamGetCaptureInfo(stream):
    s = _stream(stream)
    if s is None:
        return (_fail(E.cudaErrorInvalidResourceHandle), None, None, None, None, None, None)
    c = s.capture
    if c is None:
        return (E.cudaSuccess, _STATUS.cudaStreamCaptureStatusNone, 0, cudaGraph_t(0), [], [], 0)
    deps = [cudaGraphNode_t(n.handle) for n in s.deps]
    edge_data = [_cr.cudaGraphEdgeData() for _ in deps]
    return (E.cudaSuccess, c.status, c.id, cudaGraph_t(c.graph.handle), deps, edge_data, len(deps))


def cudaThreadExchangeStreamCaptureMode(mode):
    return E.cudaSuccess, mode


# ---------------------------------------------------------------- work submission

def _submit(s: _Stream, ntype, payload, host_cost_us, api_name):
    """Record the work as a node when capturing, else run it now and place it on the GPU clock."""
    if s.capture is not None:
        if s.capture.status != _STATUS.cudaStreamCaptureStatusActive:
            return _fail(E.cudaErrorStreamCaptureInvalidated)
        _clock.api(api_name, host_cost_us)
        n = s.capture.graph.add(ntype, payload, s.deps)
        s.deps = [n]
        return E.cudaSuccess
    if s.handle in (0, 1):
        # The legacy stream waits for every blocking stream; a capturing blocking stream
        # would become a dependency of uncaptured work.
        for c in _active_captures():
            if any(t.flags & cudaStreamNonBlocking == 0 for t in c.streams):
                _invalidate(c)
                return _fail(E.cudaErrorStreamCaptureImplicit)
    err = _run_node(ntype, payload)
    if err != E.cudaSuccess:
        return _fail(err)
    _clock.api(api_name, host_cost_us)
    start = max(s.ready_us, _clock.host_us() + P("launch_latency_us"))
    s.ready_us = start + _node_gpu_us(ntype, payload)
    _clock.gpu_span(s.handle, payload.get("name", api_name), start, s.ready_us, _kind(ntype))
    return E.cudaSuccess


def _kind(ntype):
    return {_NT.cudaGraphNodeTypeKernel: "kernel", _NT.cudaGraphNodeTypeMemcpy: "memcpy",
            _NT.cudaGraphNodeTypeMemset: "memset"}.get(ntype, "kernel")


def _node_gpu_us(ntype, payload):
    if ntype == _NT.cudaGraphNodeTypeKernel:
        return payload["kernel"].gpu_us(payload["grid"], payload["block"], payload["args"])
    if ntype == _NT.cudaGraphNodeTypeMemcpy:
        on_device = payload["kind"] == cudaMemcpyKind.cudaMemcpyDeviceToDevice
        bw = P("device_GBps") if on_device else P("memcpy_GBps")
        traffic = payload["count"] * (2 if on_device else 1)   # on the device: read + write
        return P("memcpy_latency_us") * (0.2 if on_device else 1) + traffic / (bw * 1e3)
    if ntype == _NT.cudaGraphNodeTypeMemset:
        return P("kernel_us") + payload["count"] / (P("device_GBps") * 1e3)
    return 0.0


def _run_node(ntype, payload):
    if ntype == _NT.cudaGraphNodeTypeKernel:
        return payload["kernel"].execute(payload["grid"], payload["block"], payload["args"])
    if ntype == _NT.cudaGraphNodeTypeMemcpy:
        n = payload["count"]
        dst, src = _view(payload["dst"], n), _view(payload["src"], n)
        if dst is None or src is None:
            return E.cudaErrorInvalidValue
        dst[:] = src
        return E.cudaSuccess
    if ntype == _NT.cudaGraphNodeTypeMemset:
        dst = _view(payload["dst"], payload["count"])
        if dst is None:
            return E.cudaErrorInvalidValue
        dst[:] = payload["value"] & 0xFF
        return E.cudaSuccess
    return E.cudaSuccess


def launch_kernel(kernel, grid, block, stream, args, launch_us=None):
    """Launch a labkit kernel (called by labkit's kernel wrapper, not by learners).

    ``launch_us``: host cost of the launch; numba's dispatch by default (a prepared launch
    passes its own)."""
    s = _stream(stream)
    if s is None:
        return _fail(E.cudaErrorInvalidResourceHandle)
    if launch_us is not None:
        cost = launch_us
    else:
        cost = P("capture_launch_us") if s.capture is not None else P("numba_launch_us")
    return _submit(s, _NT.cudaGraphNodeTypeKernel,
                   {"kernel": kernel, "grid": grid, "block": block, "args": tuple(args),
                    "name": kernel.name}, cost, f"launch {kernel.name}")


def cudaMemcpyAsync(dst, src, count, kind, stream):
    s = _stream(stream)
    if s is None:
        return (_fail(E.cudaErrorInvalidResourceHandle),)
    dst, src, count = int(dst), int(src), int(count)
    if _view(dst, count) is None or _view(src, count) is None:
        return (_fail(E.cudaErrorInvalidValue),)
    return (_submit(s, _NT.cudaGraphNodeTypeMemcpy,
                    {"dst": dst, "src": src, "count": count, "kind": cudaMemcpyKind(int(kind)),
                     "name": "memcpy"}, P("api_us"), "cudaMemcpyAsync"),)


def cudaMemsetAsync(devPtr, value, count, stream):
    s = _stream(stream)
    if s is None:
        return (_fail(E.cudaErrorInvalidResourceHandle),)
    if _find(int(devPtr), int(count)) is None:
        return (_fail(E.cudaErrorInvalidValue),)
    return (_submit(s, _NT.cudaGraphNodeTypeMemset,
                    {"dst": int(devPtr), "value": int(value), "count": int(count), "name": "memset"},
                    P("api_us"), "cudaMemsetAsync"),)


def cudaMemcpy(dst, src, count, kind):
    # A synchronous copy on the legacy stream; allowed while a non-blocking stream captures.
    err = cudaMemcpyAsync(dst, src, count, kind, 0)[0]
    if err != E.cudaSuccess:
        return (err,)
    _clock.api("cudaMemcpy", P("sync_us"), wait_until=_streams[0].ready_us)
    return _OK


def cudaMalloc(size):
    c = _unsafe_call_blocked()
    if c is not None:
        _invalidate(c)
        return (_fail(E.cudaErrorStreamCaptureUnsupported), None)
    _clock.api("cudaMalloc", P("malloc_us"))
    return E.cudaSuccess, _new_alloc(size).addr


def cudaMallocHost(size):
    c = _unsafe_call_blocked()
    if c is not None:
        _invalidate(c)
        return (_fail(E.cudaErrorStreamCaptureUnsupported), None)
    _clock.api("cudaMallocHost", P("malloc_us"))
    return E.cudaSuccess, _new_alloc(size, pinned=True).addr


def cudaFree(devPtr):
    c = _unsafe_call_blocked()
    if c is not None:
        _invalidate(c)
        return (_fail(E.cudaErrorStreamCaptureUnsupported),)
    a = _allocs.get(int(devPtr))
    if a is None or a.freed or a.pinned:
        return (_fail(E.cudaErrorInvalidValue),)
    a.freed = True
    a.buf = np.zeros(1, np.uint8)
    _clock.api("cudaFree", P("api_us"))
    return _OK


def cudaFreeHost(ptr):
    a = _allocs.get(int(ptr))
    if a is None or a.freed or not a.pinned:
        return (_fail(E.cudaErrorInvalidValue),)
    a.freed = True
    return _OK


def host_view(addr, nbytes):
    """numpy bytes of a simulated allocation (labkit's arrays use this)."""
    return _view(int(addr), int(nbytes))


# ---------------------------------------------------------------- graphs

def _graph(g):
    x = _graphs.get(_h(g))
    return None if x is None or x.destroyed else x


def _exec(ge):
    x = _execs.get(_h(ge))
    return None if x is None or x.destroyed else x


def cudaGraphCreate(flags):
    g = _Graph()
    _graphs[g.handle] = g
    return E.cudaSuccess, cudaGraph_t(g.handle)


def cudaGraphDestroy(graph):
    g = _graph(graph)
    if g is None:
        return (_fail(E.cudaErrorInvalidValue),)
    g.destroyed = True
    return _OK


def cudaGraphGetNodes(graph, numNodes=0):
    g = _graph(graph)
    if g is None:
        return (_fail(E.cudaErrorInvalidValue), None, None)
    if not numNodes:
        return E.cudaSuccess, [], len(g.nodes)
    nodes = [cudaGraphNode_t(n.handle) for n in g.nodes[:numNodes]]
    nodes += [cudaGraphNode_t(0)] * (numNodes - len(nodes))
    return E.cudaSuccess, nodes, min(numNodes, len(g.nodes))


def cudaGraphGetRootNodes(graph, pNumRootNodes=0):
    g = _graph(graph)
    if g is None:
        return (_fail(E.cudaErrorInvalidValue), None, None)
    roots = [n for n in g.nodes if not n.deps]
    if not pNumRootNodes:
        return E.cudaSuccess, [], len(roots)
    return E.cudaSuccess, [cudaGraphNode_t(n.handle) for n in roots[:pNumRootNodes]], len(roots)


def _edges(g):
    return [(d, n) for n in g.nodes for d in n.deps]


def cudaGraphGetEdges(graph, numEdges=0):
    g = _graph(graph)
    if g is None:
        return (_fail(E.cudaErrorInvalidValue), None, None, None, None)
    edges = _edges(g)
    if not numEdges:
        return E.cudaSuccess, [], [], [], len(edges)
    got = edges[:numEdges]
    pad = numEdges - len(got)
    frm = [cudaGraphNode_t(a.handle) for a, _ in got] + [cudaGraphNode_t(0)] * pad
    to = [cudaGraphNode_t(b.handle) for _, b in got] + [cudaGraphNode_t(0)] * pad
    data = [_cr.cudaGraphEdgeData() for _ in range(numEdges)]
    return E.cudaSuccess, frm, to, data, len(got)


def cudaGraphNodeGetType(node):
    hit = _nodes.get(_h(node))
    if hit is None:
        return (_fail(E.cudaErrorInvalidValue), None)
    return E.cudaSuccess, hit[1].type


def cudaGraphNodeGetDependencies(node, pNumDependencies=0):
    hit = _nodes.get(_h(node))
    if hit is None:
        return (_fail(E.cudaErrorInvalidValue), None, None, None)
    deps = hit[1].deps
    if not pNumDependencies:
        return E.cudaSuccess, [], [], len(deps)
    return (E.cudaSuccess, [cudaGraphNode_t(d.handle) for d in deps],
            [_cr.cudaGraphEdgeData() for _ in deps], len(deps))


def cudaGraphAddEmptyNode(graph, pDependencies, numDependencies):
    return _add_node(graph, pDependencies, _NT.cudaGraphNodeTypeEmpty, {"name": "empty"})


def cudaGraphAddMemcpyNode1D(graph, pDependencies, numDependencies, dst, src, count, kind):
    return _add_node(graph, pDependencies, _NT.cudaGraphNodeTypeMemcpy,
                     {"dst": int(dst), "src": int(src), "count": int(count),
                      "kind": cudaMemcpyKind(int(kind)), "name": "memcpy"})


def add_kernel_node(graph, deps, kernel, grid, block, args):
    """Add a kernel node through the explicit graph API (labkit's graph builder calls this)."""
    return _add_node(graph, deps, _NT.cudaGraphNodeTypeKernel,
                     {"kernel": kernel, "grid": grid, "block": block, "args": tuple(args),
                      "name": kernel.name})


def _add_node(graph, deps, ntype, payload):
    g = _graph(graph)
    if g is None:
        return (_fail(E.cudaErrorInvalidValue), None)
    dep_nodes = []
    for d in deps or []:
        hit = _nodes.get(_h(d))
        if hit is None or hit[0] is not g:
            return (_fail(E.cudaErrorInvalidValue), None)
        dep_nodes.append(hit[1])
    _clock.api("cudaGraphAddNode", P("api_us"))
    n = g.add(ntype, payload, dep_nodes)
    return E.cudaSuccess, cudaGraphNode_t(n.handle)


def cudaGraphDebugDotPrint(graph, path, flags):
    g = _graph(graph)
    if g is None:
        return (_fail(E.cudaErrorInvalidValue),)
    lines = ["digraph dot {", '  label="simulated graph";']
    for i, n in enumerate(g.nodes):
        lines.append(f'  node{n.handle} [label="{i}: {n.type.name[len("cudaGraphNodeType"):]}'
                     f'\\n{n.payload.get("name", "")}"];')
    lines += [f"  node{a.handle} -> node{b.handle};" for a, b in _edges(g)]
    lines.append("}")
    p = path.decode() if isinstance(path, bytes) else str(path)
    with open(p, "w") as f:
        f.write("\n".join(lines) + "\n")
    return _OK


def cudaGraphInstantiate(graph, flags=0):
    g = _graph(graph)
    if g is None:
        return (_fail(E.cudaErrorInvalidValue), None)
    c = _unsafe_call_blocked()
    if c is not None:
        _invalidate(c)
        return (_fail(E.cudaErrorStreamCaptureUnsupported), None)
    _clock.api("cudaGraphInstantiate",
               _clock.C("instantiate", len(g.nodes)))
    x = _Exec(g)
    _execs[x.handle] = x
    return E.cudaSuccess, cudaGraphExec_t(x.handle)


cudaGraphInstantiateWithFlags = cudaGraphInstantiate


def cudaGraphExecDestroy(graphExec):
    x = _exec(graphExec)
    if x is None:
        return (_fail(E.cudaErrorInvalidValue),)
    x.destroyed = True
    x.nodes, x.by_source, x.source = [], {}, None   # let go of its copies of the arguments
    return _OK


def _upload_us(x):
    return _clock.C("upload", len(x.nodes))


def cudaGraphUpload(graphExec, stream):
    x, s = _exec(graphExec), _stream(stream)
    if x is None or s is None:
        return (_fail(E.cudaErrorInvalidValue),)
    if s.capture is not None:
        return (_fail(E.cudaErrorStreamCaptureUnsupported),)
    if not x.uploaded:
        _clock.api("cudaGraphUpload", _upload_us(x))
        x.uploaded = True
    return _OK


def cudaGraphLaunch(graphExec, stream):
    x, s = _exec(graphExec), _stream(stream)
    if x is None:
        return (_fail(E.cudaErrorInvalidValue),)
    if s is None:
        return (_fail(E.cudaErrorInvalidResourceHandle),)
    if s.capture is not None:
        _invalidate(s.capture)
        return (_fail(E.cudaErrorStreamCaptureUnsupported),)
    host = _clock.C("graph_launch", len(x.nodes))
    if not x.uploaded:
        host += _upload_us(x)
        x.uploaded = True
    for ntype, payload, _ in x.nodes:
        err = _run_node(ntype, payload)
        if err != E.cudaSuccess:
            return (_fail(err),)
    _clock.api("cudaGraphLaunch", host)
    start = max(s.ready_us, _clock.host_us() + P("launch_latency_us"))
    ends = []
    lanes = _clock.Lanes()    # independent branches run side by side, as on CUDA's inner streams
    for ntype, payload, deps in x.nodes:
        t0 = max([start] + [ends[d] for d in deps]) + P("graph_node_gap_us")
        ends.append(t0 + _node_gpu_us(ntype, payload))
        lane = lanes.place(len(ends) - 1, deps, t0, ends[-1])
        if ntype != _NT.cudaGraphNodeTypeEmpty:
            _clock.gpu_span(s.handle, payload.get("name", ""), t0, ends[-1], _kind(ntype), lane)
    s.ready_us = max(ends + [start])
    return _OK


def _signature(g_nodes, index):
    return [(n.type, [index[d] for d in n.deps]) for n in g_nodes]


def cudaGraphExecUpdate(hGraphExec, hGraph):
    x, g = _exec(hGraphExec), _graph(hGraph)
    if x is None or g is None:
        return (_fail(E.cudaErrorInvalidValue), None)
    _clock.api("cudaGraphExecUpdate",
               _clock.C("exec_update", len(g.nodes)))
    if len(g.nodes) != len(x.nodes):
        return (_fail(E.cudaErrorGraphExecUpdateFailure), None)
    index = {n: i for i, n in enumerate(g.nodes)}
    for (xtype, _, xdeps), n in zip(x.nodes, g.nodes):
        if xtype != n.type or sorted(xdeps) != sorted(index[d] for d in n.deps):
            return (_fail(E.cudaErrorGraphExecUpdateFailure), None)
    x.nodes = [(n.type, dict(n.payload), [index[d] for d in n.deps]) for n in g.nodes]
    info = cudaGraphExecUpdateResultInfo()
    info.result = cudaGraphExecUpdateResult.cudaGraphExecUpdateSuccess
    return E.cudaSuccess, info


class cudaKernelNodeParams:
    """The simulator's kernel node parameters: the labkit kernel, its grid, block and arguments."""

    def __init__(self, kernel=None, grid=(1, 1, 1), block=(1, 1, 1), args=()):
        self.kernel, self.grid, self.block, self.args = kernel, grid, block, tuple(args)

    @property
    def gridDim(self):
        return _Dim(*self.grid)

    @property
    def blockDim(self):
        return _Dim(*self.block)


class _Dim:
    def __init__(self, x, y=1, z=1):
        self.x, self.y, self.z = x, y, z


def cudaGraphKernelNodeGetParams(node):
    hit = _nodes.get(_h(node))
    if hit is None or hit[1].type != _NT.cudaGraphNodeTypeKernel:
        return (_fail(E.cudaErrorInvalidValue), None)
    p = hit[1].payload
    return E.cudaSuccess, cudaKernelNodeParams(p["kernel"], p["grid"], p["block"], p["args"])


def _payload(params):
    return {"kernel": params.kernel, "grid": tuple(params.grid), "block": tuple(params.block),
            "args": tuple(params.args), "name": params.kernel.name}


def cudaGraphKernelNodeSetParams(node, pNodeParams):
    hit = _nodes.get(_h(node))
    if hit is None or hit[1].type != _NT.cudaGraphNodeTypeKernel:
        return (_fail(E.cudaErrorInvalidValue),)
    hit[1].payload = _payload(pNodeParams)
    return _OK


def cudaGraphExecKernelNodeSetParams(hGraphExec, node, pNodeParams):
    x = _exec(hGraphExec)
    if x is None:
        return (_fail(E.cudaErrorInvalidValue),)
    i = x.by_source.get(_h(node))
    if i is None or x.nodes[i][0] != _NT.cudaGraphNodeTypeKernel:
        return (_fail(E.cudaErrorInvalidValue),)
    _clock.api("cudaGraphExecKernelNodeSetParams", P("api_us"))
    ntype, _, deps = x.nodes[i]
    x.nodes[i] = (ntype, _payload(pNodeParams), deps)
    return _OK


def copy_kernel_node_params(src_node, hGraphExec, node):
    """Give ``node`` of an executable the parameters of kernel node ``src_node`` (labkit's
    `GraphExec.set_kernel_args` calls this, right after capturing one launch on a scratch stream).

    A composite cost: on a GPU the node update is mostly numba preparing the arguments inside
    that capture and the driver's parameter copy, which the simulated calls cost far less
    than. This charges the calibrated ``node_update_us`` of the whole, less what the scratch
    capture's calls (begin, one captured launch, end of a one-node graph) and the parameter
    copy already charged, so the whole update costs ``node_update_us``.
    """
    err, params = cudaGraphKernelNodeGetParams(src_node)
    if err != E.cudaSuccess:
        return (err,)
    err, = cudaGraphExecKernelNodeSetParams(hGraphExec, node, params)
    if err == E.cudaSuccess:
        charged = (P("begin_capture_us") + P("capture_launch_us") + P("end_capture_per_node_us")
                   + P("api_us"))
        _clock.host_work(max(0.0, P("node_update_us") - charged))
    return (err,)


def __getattr__(name):
    if name.startswith("cuda"):
        raise NotImplementedError(
            f"{name} is not part of labkit's simulated runtime (backend 'sim'); it covers the "
            "calls the course uses. Run on a GPU with LABKIT_BACKEND=cuda to use it")
    raise AttributeError(name)

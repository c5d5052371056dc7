"""A CPU stand-in for the subset of ``cuda.bindings.runtime`` the course uses.

Same function names, the same enum classes and handle types (taken from cuda-python, which
imports without a GPU) and the same ``(err, *values)`` tuples. The behaviour in capture was
read off a real H200 (tools/probe_semantics.py) and is pinned by tests/conformance/.

What it does not do, and says so loudly:

* any function outside the subset raises ``NotImplementedError`` naming the sim backend;
* graph launches into a capturing stream;
* conditional nodes, child graphs, host functions and stream-ordered allocations are
  `labkit.sim._conditional`'s (hooked in below, each hook marked ``# conditional:``);
* sticky (context-corrupting) errors: a bad address fails the one call, not the process;
* SM contention: kernels on different streams overlap fully in the model.

Host costs are charged per call, from the calibration: ``cudaGraphExecKernelNodeSetParams``
costs ``raw_node_update_us`` (the driver's call with a prebuilt parameter block),
``cudaGraphAddKernelNode`` costs ``add_kernel_node_us``.

Kernels are registered functions (`labkit.sim._hooks.register_function`), named by handle in
``cudaKernelNodeParams.func``. ``kernelParams`` holds the parameter values themselves (a
tuple; arrays as `_hooks.ArrayArg`: address and layout), not a ``void**``: a raw pointer
array cannot be read back into Python values. Arrays are referred to by address only, so a
node does not keep an array alive: freed memory (``cudaFree``, or a labkit array collected) is
never reused, and a kernel that touches it fails ``cudaErrorIllegalAddress``.

This module is the implementation; ``labkit.rt`` on the simulator is `labkit.sim.rt`, which
exposes only names that ``cuda.bindings.runtime`` has.

Data is computed when work is submitted (in host program order), which is one valid order
for a correctly synchronized program; timing comes from `labkit.sim.clock`.
"""
from __future__ import annotations

import sys as _sys

import ctypes
import itertools
import threading

import numpy as np
from cuda.bindings import runtime as _cr

from .. import _calibration
from . import _capture_rules as _rules
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
cudaEventBlockingSync = _cr.cudaEventBlockingSync
cudaGetErrorName = _cr.cudaGetErrorName
cudaGetErrorString = _cr.cudaGetErrorString

_OK = (E.cudaSuccess,)
_STATUS = cudaStreamCaptureStatus
_MODE = cudaStreamCaptureMode
_NT = cudaGraphNodeType
_ids = itertools.count(0x1000)
_lock = threading.RLock()
P = _clock.P


def _fail(code):
    _rules.set_last_error(code)   # per thread, as CUDA's
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
    a = _allocs.get(addr)     # the usual case: an array's own address
    if a is not None and nbytes <= max(a.nbytes, 1):
        return a, 0
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

class _Function:
    """A registered kernel: its name, how to compute it, and its GPU time."""

    def __init__(self, name, run, gpu_us):
        self.name, self.run, self.gpu_us = name, run, gpu_us


_functions: dict[int, _Function] = {}


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
        # when this executable's last launch ends on the GPU: CUDA runs one executable's
        # launches one after another, even on different streams (cudaGraphLaunch)
        self.done_us = 0.0


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
    """The capture that forbids a 'potentially unsafe' call from this thread (see
    `labkit.sim._capture_rules`: the captures' modes and the thread's own)."""
    return _rules.forbidding_capture(_active_captures())


def _invalidate(c: _Capture):
    c.status = _STATUS.cudaStreamCaptureStatusInvalidated


# ---------------------------------------------------------------- devices and errors

def cudaGetDeviceCount():
    return E.cudaSuccess, 1


class _Props:
    """The device properties the notebooks print, for the GPU the model was calibrated on."""

    def __init__(self):
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
    return (_rules.take_last_error(),)


def cudaPeekAtLastError():
    return (_rules.last_error(),)


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
    c = _unsafe_call_blocked()   # any stream outside the capture (H200: non-blocking ones too)
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
    if e.captured is not None:   # as cudaEventQuery: 907 while its capture is active
        if e.captured[0].status == _STATUS.cudaStreamCaptureStatusActive:
            _invalidate(e.captured[0])
            return (_fail(E.cudaErrorCapturedEvent),)
        return (_fail(E.cudaErrorInvalidValue),)
    c = _unsafe_call_blocked()
    if c is not None:
        _invalidate(c)
        return (_fail(E.cudaErrorStreamCaptureUnsupported),)
    # a cudaEventBlockingSync event lets the thread sleep instead of spinning; if it really
    # sleeps (the GPU is not done yet) it wakes blocking_sync_wake_us after the GPU is, and the
    # wake-up costs the host blocking_sync_cpu_us (both measured: labkit.cli.decode_costs)
    blocking = bool(e.flags & cudaEventBlockingSync)
    done_at = e.time_us or 0.0
    if blocking and done_at > _clock.host_us() + P("sync_us"):
        _clock.api("cudaEventSynchronize", P("sync_us") + P("blocking_sync_cpu_us"),
                   wait_until=done_at + P("blocking_sync_wake_us"), spin=False)
    else:
        _clock.api("cudaEventSynchronize", P("sync_us"), wait_until=done_at, spin=not blocking)
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
    if not _rules.may_end(c):          # the H200 ends it anyway, without a graph
        _end(c)
        return (_fail(E.cudaErrorStreamCaptureWrongThread), None)
    tails = {t: list(t.deps) for t in c.streams}   # read before _end clears them
    _end(c)
    if c.status != _STATUS.cudaStreamCaptureStatusActive:
        _cond.end_capture_failed(c)      # conditional: a body captured into is lost with it
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
    return _rules.exchange_mode(mode)


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


_NO_SPAN = (_NT.cudaGraphNodeTypeEmpty,   # nodes that do no GPU work of their own
            _NT.cudaGraphNodeTypeMemAlloc, _NT.cudaGraphNodeTypeMemFree)


def _node_gpu_us(ntype, payload):
    if ntype in _cond.handles_types():   # conditional: its bodies' time, from its last run
        return _cond.gpu_us(ntype, payload)
    if ntype == _NT.cudaGraphNodeTypeKernel:
        return _functions[payload["func"]].gpu_us(payload["grid"], payload["block"],
                                                  *payload["params"])
    if ntype == _NT.cudaGraphNodeTypeMemcpy:
        on_device = payload["kind"] == cudaMemcpyKind.cudaMemcpyDeviceToDevice
        bw = P("device_GBps") if on_device else P("memcpy_GBps")
        traffic = payload["count"] * (2 if on_device else 1)   # on the device: read + write
        return P("memcpy_latency_us") * (0.2 if on_device else 1) + traffic / (bw * 1e3)
    if ntype == _NT.cudaGraphNodeTypeMemset:
        return P("kernel_us") + payload["count"] / (P("device_GBps") * 1e3)
    return 0.0


def _run_node(ntype, payload):
    if ntype in _cond.handles_types():   # conditional: bodies, child graphs, host functions
        return _cond.run_node(ntype, payload)
    if ntype == _NT.cudaGraphNodeTypeKernel:
        return _run_kernel(payload)
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


def _run_kernel(payload):
    """Compute a kernel node's outputs; a parameter in freed memory is an illegal address."""
    values = []
    for v in payload["params"]:
        if hasattr(v, "view") and hasattr(v, "addr"):   # an array: its live memory, or none
            v = v.view()
            if v is None:
                return E.cudaErrorIllegalAddress
        values.append(v)
    _functions[payload["func"]].run(payload["grid"], payload["block"], *values)
    return E.cudaSuccess


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


# ---------------------------------------------------------------- cudaMemset, stream-ordered memory

def cudaMemset(devPtr, value, count):
    # On the legacy stream and, for device memory, asynchronous to the host, as CUDA's: allowed
    # while a non-blocking stream captures (H200), 906 while a blocking one does.
    return cudaMemsetAsync(devPtr, value, count, 0)


_graph_allocs: set[int] = set()   # addresses that captured mem-alloc nodes hand out


def cudaMallocAsync(size, hStream):
    # Outside a capture, an allocation now (the simulator computes data at submission, so the
    # stream order holds), and as potentially unsafe as cudaMalloc. In a capture, a mem-alloc
    # node, whose address is fixed when captured (as CUDA's) and valid from then on: the node's
    # memory is not taken back when the graph is destroyed.
    s = _stream(hStream)
    if s is None:
        return (_fail(E.cudaErrorInvalidResourceHandle), None)
    if s.capture is None:
        return cudaMalloc(size)
    if s.capture.status != _STATUS.cudaStreamCaptureStatusActive:
        return (_fail(E.cudaErrorStreamCaptureInvalidated), None)
    a = _new_alloc(size)
    _graph_allocs.add(a.addr)
    _submit(s, _NT.cudaGraphNodeTypeMemAlloc, {"dst": a.addr, "bytesize": int(size),
                                               "name": "mem alloc"}, P("api_us"), "cudaMallocAsync")
    return E.cudaSuccess, a.addr


def cudaFreeAsync(devPtr, hStream):
    # Outside a capture, cudaFree's rules. In a capture, a mem-free node, for graph memory only:
    # memory allocated outside any graph is cudaErrorInvalidValue and the capture stays active
    # (H200). The node frees nothing in the simulator.
    s = _stream(hStream)
    if s is None:
        return (_fail(E.cudaErrorInvalidResourceHandle),)
    if s.capture is None:
        return cudaFree(devPtr)
    addr = int(devPtr)
    if addr not in _graph_allocs or _find(addr) is None:
        return (_fail(E.cudaErrorInvalidValue),)
    return (_submit(s, _NT.cudaGraphNodeTypeMemFree, {"dst": addr, "name": "mem free"},
                    P("api_us"), "cudaFreeAsync"),)


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
    del _allocs[a.addr]        # the address is never handed out again: a later use is seen
    a.freed = True
    a.buf = np.zeros(1, np.uint8)
    _clock.api("cudaFree", P("api_us"))
    return _OK


def cudaFreeHost(ptr):
    c = _unsafe_call_blocked()
    if c is not None:
        _invalidate(c)
        return (_fail(E.cudaErrorStreamCaptureUnsupported),)
    a = _allocs.get(int(ptr))
    if a is None or a.freed or not a.pinned:
        return (_fail(E.cudaErrorInvalidValue),)
    del _allocs[a.addr]
    a.freed = True
    return _OK


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


def cudaGraphAddKernelNode(graph, pDependencies, numDependencies, pNodeParams):
    payload = _payload(pNodeParams)
    if payload is None:
        return (_fail(E.cudaErrorInvalidDeviceFunction), None)
    return _add_node(graph, pDependencies, _NT.cudaGraphNodeTypeKernel, payload,
                     cost=P("add_kernel_node_us"))


def _add_node(graph, deps, ntype, payload, cost=None):
    g = _graph(graph)
    if g is None:
        return (_fail(E.cudaErrorInvalidValue), None)
    dep_nodes = []
    for d in deps or []:
        hit = _nodes.get(_h(d))
        if hit is None or hit[0] is not g:
            return (_fail(E.cudaErrorInvalidValue), None)
        dep_nodes.append(hit[1])
    _clock.api("cudaGraphAddNode", P("api_us") if cost is None else cost)
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
    err = _cond.instantiate_error(g, flags)   # conditional: CUDA's rules for bodies and handles
    if err is not None:
        return (_fail(err), None)
    _clock.api("cudaGraphInstantiate",
               _clock.C("instantiate", len(g.nodes)))
    x = _Exec(g)
    _cond.on_instantiate(x, g)
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
    host = _clock.C("graph_launch", _cond.count_nodes(x))   # conditional: bodies' nodes too
    if not x.uploaded:
        host += _upload_us(x)
        x.uploaded = True
    _cond.begin_launch(x)                # conditional: the handles' values for this launch
    try:
        for ntype, payload, _ in x.nodes:
            err = _run_node(ntype, payload)
            if err != E.cudaSuccess:
                return (_fail(err),)
    finally:
        _cond.end_launch(x)
    _clock.api("cudaGraphLaunch", host)
    start = max(s.ready_us, x.done_us, _clock.host_us() + P("launch_latency_us"))
    ends = []
    lanes = _clock.Lanes()    # independent branches run side by side, as on CUDA's inner streams
    for ntype, payload, deps in x.nodes:
        t0 = max([start] + [ends[d] for d in deps]) + P("graph_node_gap_us")
        ends.append(t0 + _node_gpu_us(ntype, payload))
        lane = lanes.place(len(ends) - 1, deps, t0, ends[-1])
        if ntype not in _NO_SPAN:
            name = (_cond.span_name(payload) if ntype == _NT.cudaGraphNodeTypeConditional
                    else payload.get("name", ""))
            _clock.gpu_span(s.handle, name, t0, ends[-1], _kind(ntype), lane)
    s.ready_us = x.done_us = max(ends + [start])
    return _OK


def _signature(g_nodes, index):
    return [(n.type, [index[d] for d in n.deps]) for n in g_nodes]


def cudaGraphExecUpdate(hGraphExec, hGraph):
    x, g = _exec(hGraphExec), _graph(hGraph)
    if x is None or g is None:
        return (_fail(E.cudaErrorInvalidValue), None)
    _clock.api("cudaGraphExecUpdate",
               _clock.C("exec_update", len(g.nodes)))
    err = _cond.update_error(x, g)          # the same shape, conditional bodies included
    if err is not None:
        return (_fail(err), None)
    index = {n: i for i, n in enumerate(g.nodes)}
    x.nodes = [(n.type, dict(n.payload), [index[d] for d in n.deps]) for n in g.nodes]
    _cond.on_update(x, g)
    info = cudaGraphExecUpdateResultInfo()
    info.result = cudaGraphExecUpdateResult.cudaGraphExecUpdateSuccess
    return E.cudaSuccess, info


class cudaKernelNodeParams:
    """A kernel node's parameters, with CUDA's fields.

    ``func``: a function handle (`labkit.sim._hooks.register_function`); ``gridDim`` and
    ``blockDim``: ``dim3``; ``sharedMemBytes``; ``kernelParams``: the parameter values, a tuple
    (see the module docstring: not a ``void**``); ``extra``: must stay empty (0 or None).
    """

    def __init__(self, func=0, gridDim=None, blockDim=None, sharedMemBytes=0, kernelParams=(),
                 extra=0):
        self.func = func
        self.gridDim = gridDim if gridDim is not None else _dim3(1, 1, 1)
        self.blockDim = blockDim if blockDim is not None else _dim3(1, 1, 1)
        self.sharedMemBytes, self.kernelParams, self.extra = sharedMemBytes, kernelParams, extra

    def __repr__(self):
        name = getattr(_functions.get(_h(self.func)), "name", "?")
        return (f"<simulated cudaKernelNodeParams {name} grid={_xyz(self.gridDim)} "
                f"block={_xyz(self.blockDim)} params={len(self.kernelParams)}>")


def _dim3(x, y=1, z=1):
    d = _cr.dim3()
    d.x, d.y, d.z = int(x), int(y), int(z)
    return d


def _xyz(d) -> tuple:
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
    fn = _functions.get(_h(params.func))
    if fn is None:
        return None
    return {"func": _h(params.func), "grid": _xyz(params.gridDim), "block": _xyz(params.blockDim),
            "params": tuple(params.kernelParams or ()), "name": fn.name}


def cudaGraphKernelNodeGetParams(node):
    hit = _nodes.get(_h(node))
    if hit is None or hit[1].type != _NT.cudaGraphNodeTypeKernel:
        return (_fail(E.cudaErrorInvalidValue), None)
    p = hit[1].payload
    return E.cudaSuccess, cudaKernelNodeParams(p["func"], _dim3(*p["grid"]), _dim3(*p["block"]),
                                               0, p["params"])


def cudaGraphKernelNodeSetParams(node, pNodeParams):
    hit = _nodes.get(_h(node))
    if hit is None or hit[1].type != _NT.cudaGraphNodeTypeKernel:
        return (_fail(E.cudaErrorInvalidValue),)
    payload = _payload(pNodeParams)
    if payload is None:
        return (_fail(E.cudaErrorInvalidDeviceFunction),)
    _clock.api("cudaGraphKernelNodeSetParams", P("api_us"))
    hit[1].payload = payload
    return _OK


def cudaGraphExecKernelNodeSetParams(hGraphExec, node, pNodeParams):
    x = _exec(hGraphExec)
    if x is None:
        return (_fail(E.cudaErrorInvalidValue),)
    i = x.by_source.get(_h(node))
    if i is None or x.nodes[i][0] != _NT.cudaGraphNodeTypeKernel:
        return (_fail(E.cudaErrorInvalidValue),)
    payload = _payload(pNodeParams)
    if payload is None:
        return (_fail(E.cudaErrorInvalidDeviceFunction),)
    _clock.api("cudaGraphExecKernelNodeSetParams", P("raw_node_update_us"))
    ntype, _, deps = x.nodes[i]
    x.nodes[i] = (ntype, payload, deps)
    return _OK


# conditional nodes and the node kinds their bodies are tested with: labkit/sim/_conditional.py
from . import _conditional as _cond  # noqa: E402 (it uses this module's objects)
_cond.bind(_sys.modules[__name__])
from ._conditional import (  # noqa: E402,F401
    cudaGraphConditionalHandle, cudaGraphConditionalNodeType, cudaGraphConditionalHandleFlags,
    cudaStreamUpdateCaptureDependenciesFlags, cudaGraphInstantiateFlags, cudaHostFn_t,
    cudaConditionalNodeParams, cudaGraphNodeParams, cudaGraphConditionalHandleCreate,
    cudaGraphAddNode, cudaGraphAddChildGraphNode, cudaStreamBeginCaptureToGraph,
    cudaStreamUpdateCaptureDependencies, cudaLaunchHostFunc)


def __getattr__(name):
    if name.startswith("cuda"):
        raise NotImplementedError(
            f"{name} is not part of labkit's simulated runtime (backend 'sim'); it covers the "
            "calls the course uses. Run on a GPU with LABKIT_BACKEND=cuda to use it")
    raise AttributeError(name)

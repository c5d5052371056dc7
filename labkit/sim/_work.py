"""Work on the simulated GPU: submitting it to a stream (recorded as a node while the stream
captures), running a node's computation, and what a node costs on the GPU clock.

Data is computed when work is submitted (in host program order), which is one valid order for
a correctly synchronized program; timing comes from `labkit.sim.clock`. Stream order, as CUDA
documents it ("Stream synchronization behavior"): work on the legacy default stream (handle 0
or ``cudaStreamLegacy``) starts after all earlier work of every blocking stream, and work on a
blocking stream after all earlier work of the legacy stream; streams made with
``cudaStreamNonBlocking`` are exempt from both. The per-thread default stream
(``cudaStreamPerThread``: each host thread its own, `labkit.sim._state.stream`) is a blocking
stream like any other, as CUDA documents it.
"""
from __future__ import annotations

import ctypes

import numpy as np
from cuda.bindings import runtime as _cr

from . import _conditional as _cond
from . import _graphmem, _heap
from . import _state as S
from . import clock as _clock

E, NT, P = S.E, S.NT, S.P
_D2D = _cr.cudaMemcpyKind.cudaMemcpyDeviceToDevice
NO_SPAN = (NT.cudaGraphNodeTypeEmpty,   # nodes that do no GPU work of their own
           NT.cudaGraphNodeTypeMemAlloc, NT.cudaGraphNodeTypeMemFree)


def kind(ntype):
    return {NT.cudaGraphNodeTypeKernel: "kernel", NT.cudaGraphNodeTypeMemcpy: "memcpy",
            NT.cudaGraphNodeTypeMemset: "memset"}.get(ntype, "kernel")


def ordered_start(s, earliest: float) -> float:
    """The earliest GPU start of new work on ``s``, given the legacy stream's implicit
    synchronization with blocking streams (``earliest``: when the host could have it run)."""
    legacy = S.streams[0]
    if s is legacy:
        return max([earliest] + [t.ready_us for t in S.all_streams()
                                 if t.blocking and not t.destroyed])
    if s.blocking:
        return max(earliest, legacy.ready_us)
    return earliest


def submit(s, ntype, payload, host_cost_us, api_name):
    """Record the work as a node when capturing, else run it now and place it on the GPU clock."""
    host_cost_us += _clock.first_use("stream_first_use", s.handle)     # a new stream's warm-up
    if s.capture is not None:
        if s.capture.status != S.STATUS.cudaStreamCaptureStatusActive:
            return S.fail(E.cudaErrorStreamCaptureInvalidated)
        _clock.api(api_name, host_cost_us)
        n = s.capture.graph.add(ntype, payload, s.deps)
        s.deps = [n]
        return E.cudaSuccess
    if s.handle in (0, S.LEGACY):
        # The legacy stream waits for every blocking stream; a capturing blocking stream
        # would become a dependency of uncaptured work.
        for c in S.active_captures():
            if any(t.blocking for t in c.streams):
                S.invalidate(c)
                return S.fail(E.cudaErrorStreamCaptureImplicit)
    err = run_node(ntype, payload)
    if err != E.cudaSuccess:
        return S.fail(err)
    _clock.api(api_name, host_cost_us)
    start = max(s.ready_us, ordered_start(s, _clock.host_us() + P("launch_latency_us")))
    s.ready_us = start + node_gpu_us(ntype, payload)
    _clock.gpu_span(s.handle, payload.get("name", api_name), start, s.ready_us, kind(ntype))
    return E.cudaSuccess


# ---------------------------------------------------------------- GPU time

def node_gpu_us(ntype, payload):
    if ntype in (NT.cudaGraphNodeTypeConditional, NT.cudaGraphNodeTypeGraph):
        return payload.get("_gpu_us", 0.0)     # its bodies' time, from its last run
    if ntype == NT.cudaGraphNodeTypeKernel:
        return S.functions[payload["func"]].gpu_us(payload["grid"], payload["block"],
                                                   *payload["params"])
    if ntype == NT.cudaGraphNodeTypeMemcpy:
        on_device = payload["kind"] == _D2D
        bw = P("device_GBps") if on_device else P("memcpy_GBps")
        traffic = payload["count"] * (2 if on_device else 1)   # on the device: read + write
        return P("memcpy_latency_us") * (0.2 if on_device else 1) + traffic / (bw * 1e3)
    if ntype == NT.cudaGraphNodeTypeMemset:
        return P("kernel_us") + payload["count"] / (P("device_GBps") * 1e3)
    return 0.0


# ---------------------------------------------------------------- computing

def run_node(ntype, payload):
    if ntype == NT.cudaGraphNodeTypeKernel:
        return _run_kernel(payload)
    if ntype == NT.cudaGraphNodeTypeMemcpy and "rows" in payload:
        return _copy_rows(payload)
    if ntype == NT.cudaGraphNodeTypeMemcpy:
        n = payload["count"]
        dst, src = _heap.view(payload["dst"], n), _heap.view(payload["src"], n)
        if dst is None or src is None:
            return E.cudaErrorInvalidValue
        dst[:] = src
        return E.cudaSuccess
    if ntype == NT.cudaGraphNodeTypeMemset:
        return _memset(payload)
    if ntype == NT.cudaGraphNodeTypeConditional:
        return _run_conditional(payload)
    if ntype == NT.cudaGraphNodeTypeGraph:
        err, payload["_gpu_us"] = run_snapshot(payload["nodes"])
        return err
    if ntype == NT.cudaGraphNodeTypeHost:
        ctypes.CFUNCTYPE(None, ctypes.c_void_p)(payload["fn"])(payload["data"] or None)
        return E.cudaSuccess
    if ntype in _graphmem.MEMORY_NODES:
        return _graphmem.run(ntype, payload)
    return E.cudaSuccess


def _copy_rows(payload):
    w = payload["width"]
    views = [(_heap.view(d, w), _heap.view(s, w)) for d, s in payload["rows"]]
    if any(d is None or s is None for d, s in views):
        return E.cudaErrorInvalidValue
    for d, s in views:
        d[:] = s
    return E.cudaSuccess


_ELEMENT = {1: np.uint8, 2: np.uint16, 4: np.uint32}


def _memset(payload):
    """``height`` rows of ``width`` elements (``elementSize`` bytes) set to ``value``."""
    size = payload.get("elementSize", 1)
    width = payload.get("width", payload["count"])
    pitch = payload.get("pitch", width * size)
    rows = [_heap.view(payload["dst"] + r * pitch, width * size)
            for r in range(payload.get("height", 1))]
    if any(r is None for r in rows):
        return E.cudaErrorInvalidValue
    for r in rows:
        r.view(_ELEMENT[size])[:] = payload["value"] & (0xFF if size == 1 else (1 << 8 * size) - 1)
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
    S.functions[payload["func"]].run(payload["grid"], payload["block"], *values)
    return E.cudaSuccess


def run_snapshot(snap):
    """Run a body's nodes in order; return (err, GPU µs along its critical path)."""
    ends = []
    for ntype, payload, deps in snap:
        err = run_node(ntype, payload)
        if err != E.cudaSuccess:
            return err, 0.0
        t0 = max([0.0] + [ends[d] for d in deps]) + P("graph_node_gap_us")
        ends.append(t0 + node_gpu_us(ntype, payload))
    return E.cudaSuccess, max(ends + [0.0])


def _run_conditional(payload):
    bodies = payload["bodies"]
    gpu = P("conditional_node_us") - P("graph_node_gap_us")
    runs = 0
    if payload["ctype"] == _cond.CT.cudaGraphCondTypeWhile:
        while _cond.value(payload):
            _cond.while_limit(runs, payload)
            err, t = run_snapshot(bodies[0])
            if err != E.cudaSuccess:
                return err
            gpu += t + P("while_iteration_us")
            runs += 1
    else:
        pick = _cond.picked_body(payload)
        if pick is not None:
            err, t = run_snapshot(bodies[pick])
            if err != E.cudaSuccess:
                return err
            gpu += t
            runs = 1
    payload["_gpu_us"], payload["_runs"] = max(gpu, 0.0), runs
    return E.cudaSuccess

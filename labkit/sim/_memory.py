"""Memory calls of the simulated runtime: allocations, copies and memsets, stream-ordered
allocation. Where the bytes live is `labkit.sim._heap`'s."""
from __future__ import annotations

from cuda.bindings import runtime as _cr

from . import _heap
from . import _state as S
from . import _work
from . import clock as _clock

E, P, NT = S.E, S.P, S.NT
_ACTIVE = S.STATUS.cudaStreamCaptureStatusActive


def cudaMalloc(size):
    err = S.refuse_unsafe()
    if err is not None:
        return (err, None)
    _clock.api("cudaMalloc", P("malloc_us"))
    return E.cudaSuccess, _heap.new_alloc(size).addr


def cudaMallocHost(size):
    err = S.refuse_unsafe()
    if err is not None:
        return (err, None)
    _clock.api("cudaMallocHost", P("malloc_us"))
    return E.cudaSuccess, _heap.new_alloc(size, pinned=True).addr


def cudaFree(devPtr):
    err = S.refuse_unsafe()
    if err is not None:
        return (err,)
    a = _heap.allocs.get(int(devPtr))
    if a is None or a.freed or a.pinned:
        return (S.fail(E.cudaErrorInvalidValue),)
    del _heap.allocs[a.addr]        # the address is never handed out again: a later use is seen
    a.freed = True
    a.buf = _heap.np.zeros(1, _heap.np.uint8)
    _clock.api("cudaFree", P("api_us"))
    return S.OK


def cudaFreeHost(ptr):
    err = S.refuse_unsafe()
    if err is not None:
        return (err,)
    a = _heap.allocs.get(int(ptr))
    if a is None or a.freed or not a.pinned:
        return (S.fail(E.cudaErrorInvalidValue),)
    del _heap.allocs[a.addr]
    a.freed = True
    return S.OK


# ---------------------------------------------------------------- copies and memsets

def cudaMemcpyAsync(dst, src, count, kind, stream):
    s = S.stream(stream)
    if s is None:
        return (S.fail(E.cudaErrorInvalidResourceHandle),)
    dst, src, count = int(dst), int(src), int(count)
    if _heap.view(dst, count) is None or _heap.view(src, count) is None:
        return (S.fail(E.cudaErrorInvalidValue),)
    return (_work.submit(s, NT.cudaGraphNodeTypeMemcpy,
                         {"dst": dst, "src": src, "count": count,
                          "kind": _cr.cudaMemcpyKind(int(kind)), "name": "memcpy"},
                         P("api_us"), "cudaMemcpyAsync"),)


def cudaMemsetAsync(devPtr, value, count, stream):
    s = S.stream(stream)
    if s is None:
        return (S.fail(E.cudaErrorInvalidResourceHandle),)
    if _heap.find(int(devPtr), int(count)) is None:
        return (S.fail(E.cudaErrorInvalidValue),)
    return (_work.submit(s, NT.cudaGraphNodeTypeMemset,
                         {"dst": int(devPtr), "value": int(value), "count": int(count),
                          "name": "memset"}, P("api_us"), "cudaMemsetAsync"),)


def cudaMemcpy(dst, src, count, kind):
    # A synchronous copy on the legacy stream; allowed while a non-blocking stream captures.
    err = cudaMemcpyAsync(dst, src, count, kind, 0)[0]
    if err != E.cudaSuccess:
        return (err,)
    _clock.api("cudaMemcpy", P("sync_us"), wait_until=S.streams[0].ready_us)
    return S.OK


def cudaMemset(devPtr, value, count):
    # On the legacy stream and, for device memory, asynchronous to the host, as CUDA's: allowed
    # while a non-blocking stream captures (H200), 906 while a blocking one does.
    return cudaMemsetAsync(devPtr, value, count, 0)


# ---------------------------------------------------------------- stream-ordered allocation

_graph_allocs: set[int] = set()   # addresses that captured mem-alloc nodes hand out


def cudaMallocAsync(size, hStream):
    # Outside a capture, an allocation now (the simulator computes data at submission, so the
    # stream order holds), and as potentially unsafe as cudaMalloc. In a capture, a mem-alloc
    # node, whose address is fixed when captured (as CUDA's) and valid from then on: the node's
    # memory is not taken back when the graph is destroyed.
    s = S.stream(hStream)
    if s is None:
        return (S.fail(E.cudaErrorInvalidResourceHandle), None)
    if s.capture is None:
        return cudaMalloc(size)
    if s.capture.status != _ACTIVE:
        return (S.fail(E.cudaErrorStreamCaptureInvalidated), None)
    a = _heap.new_alloc(size)
    _graph_allocs.add(a.addr)
    _work.submit(s, NT.cudaGraphNodeTypeMemAlloc, {"dst": a.addr, "bytesize": int(size),
                                                  "name": "mem alloc"}, P("api_us"),
                 "cudaMallocAsync")
    return E.cudaSuccess, a.addr


def cudaFreeAsync(devPtr, hStream):
    # Outside a capture, cudaFree's rules. In a capture, a mem-free node, for graph memory only:
    # memory allocated outside any graph is cudaErrorInvalidValue and the capture stays active
    # (H200). The node frees nothing in the simulator.
    s = S.stream(hStream)
    if s is None:
        return (S.fail(E.cudaErrorInvalidResourceHandle),)
    if s.capture is None:
        return cudaFree(devPtr)
    addr = int(devPtr)
    if addr not in _graph_allocs or _heap.find(addr) is None:
        return (S.fail(E.cudaErrorInvalidValue),)
    return (_work.submit(s, NT.cudaGraphNodeTypeMemFree, {"dst": addr, "name": "mem free"},
                         P("api_us"), "cudaFreeAsync"),)

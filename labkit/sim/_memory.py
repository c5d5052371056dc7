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


def cudaFree(devPtr):
    err = S.refuse_unsafe()
    if err is not None:
        return (err,)
    addr = _heap.ptr(devPtr)
    if addr == 0:                   # CUDA's documented no-op (the idiom that initializes it)
        return S.OK
    a = _heap.allocs.get(addr)
    if a is None or a.freed or a.pinned:
        return (S.fail(E.cudaErrorInvalidValue),)
    _heap.release(a)
    _clock.api("cudaFree", P("api_us"))
    return S.OK


# ---------------------------------------------------------------- page-locked host memory

_HOST_ALLOC_FLAGS = (_cr.cudaHostAllocPortable | _cr.cudaHostAllocMapped
                     | _cr.cudaHostAllocWriteCombined)
_REGISTER_FLAGS = (_cr.cudaHostRegisterPortable | _cr.cudaHostRegisterMapped
                   | _cr.cudaHostRegisterReadOnly)


def cudaHostAlloc(size, flags):
    err = S.refuse_unsafe()
    if err is not None:
        return (err, None)
    if int(flags) & ~_HOST_ALLOC_FLAGS:
        return (S.fail(E.cudaErrorInvalidValue), None)
    _clock.api("cudaHostAlloc", P("malloc_us"))
    return E.cudaSuccess, _heap.new_alloc(size, pinned=True, flags=flags).addr


def cudaMallocHost(size):
    err = S.refuse_unsafe()
    if err is not None:
        return (err, None)
    _clock.api("cudaMallocHost", P("malloc_us"))
    return E.cudaSuccess, _heap.new_alloc(size, pinned=True).addr


def cudaFreeHost(ptr):
    err = S.refuse_unsafe()
    if err is not None:
        return (err,)
    addr = _heap.ptr(ptr)
    if addr == 0:
        return S.OK
    a = _heap.allocs.get(addr)
    if a is None or a.freed or not a.pinned or a.registered:
        return (S.fail(E.cudaErrorInvalidValue),)
    _heap.release(a)
    return S.OK


def cudaHostRegister(ptr, size, flags):
    err = S.refuse_unsafe()
    if err is not None:
        return (err,)
    if int(flags) & _cr.cudaHostRegisterIoMemory:
        raise NotImplementedError("cudaHostRegister with cudaHostRegisterIoMemory is not "
                                  "simulated (backend 'sim'): there is no I/O memory to map")
    addr, size = _heap.ptr(ptr), int(size)
    if (addr == 0 or size <= 0 or int(flags) & ~_REGISTER_FLAGS or _heap.in_sim_range(addr)
            or _heap.find(addr) is not None and not _heap.find(addr)[0].pinned):
        return (S.fail(E.cudaErrorInvalidValue),)
    if _heap.overlaps_pinned(addr, size):
        return (S.fail(E.cudaErrorHostMemoryAlreadyRegistered),)
    _clock.api("cudaHostRegister", P("malloc_us"))
    _heap.register(addr, size, flags)
    return S.OK


def cudaHostUnregister(ptr):
    err = S.refuse_unsafe()
    if err is not None:
        return (err,)
    a = _heap.allocs.get(_heap.ptr(ptr))
    if a is None or not a.registered:
        return (S.fail(E.cudaErrorHostMemoryNotRegistered),)
    _heap.release(a)
    _clock.api("cudaHostUnregister", P("api_us"))
    return S.OK


def cudaHostGetDevicePointer(pHost, flags):
    # With unified addressing (every 64-bit CUDA GPU) page-locked memory is mapped, and its
    # device pointer is its host pointer (registered memory: where the device can use host
    # pointers for registered memory, as CUDA documents for such systems)
    addr = _heap.ptr(pHost)
    hit = _heap.find(addr)
    if int(flags) != 0 or hit is None or not hit[0].pinned:
        return (S.fail(E.cudaErrorInvalidValue), None)
    return E.cudaSuccess, addr


def cudaPointerGetAttributes(ptr):
    addr = _heap.ptr(ptr)
    attrs = _cr.cudaPointerAttributes()
    hit = _heap.find(addr)
    if hit is not None and not hit[0].pinned:
        attrs.type, attrs.device = _cr.cudaMemoryType.cudaMemoryTypeDevice, 0
        attrs.devicePointer = addr
    elif hit is not None:
        attrs.type, attrs.device = _cr.cudaMemoryType.cudaMemoryTypeHost, 0
        attrs.devicePointer, attrs.hostPointer = addr, addr
    elif _heap.in_sim_range(addr):
        return (S.fail(E.cudaErrorInvalidValue), None)     # freed device memory
    else:
        attrs.type, attrs.device = _cr.cudaMemoryType.cudaMemoryTypeUnregistered, -2
        attrs.hostPointer = addr
    return E.cudaSuccess, attrs


# ---------------------------------------------------------------- copies and memsets

def cudaMemcpyAsync(dst, src, count, kind, stream):
    s = S.stream(stream)
    if s is None:
        return (S.fail(E.cudaErrorInvalidResourceHandle),)
    dst, src, count = _heap.ptr(dst), _heap.ptr(src), int(count)
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
    dst = _heap.ptr(devPtr)
    if _heap.find(dst, int(count)) is None:
        return (S.fail(E.cudaErrorInvalidValue),)
    return (_work.submit(s, NT.cudaGraphNodeTypeMemset,
                         {"dst": dst, "value": int(value), "count": int(count),
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
    addr = _heap.ptr(devPtr)
    if addr not in _graph_allocs or _heap.find(addr) is None:
        return (S.fail(E.cudaErrorInvalidValue),)
    return (_work.submit(s, NT.cudaGraphNodeTypeMemFree, {"dst": addr, "name": "mem free"},
                         P("api_us"), "cudaFreeAsync"),)

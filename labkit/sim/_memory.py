"""Memory calls of the simulated runtime: allocations, copies and memsets, stream-ordered
allocation. Where the bytes live is `labkit.sim._heap`'s."""
from __future__ import annotations

from cuda.bindings import runtime as _cr

from .. import _calibration
from . import _engine, _graphmem, _heap, _pools, _races
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
    # cudaFree waits for the device first: work queued before it may still use the memory
    idle = max(t.ready_us for t in S.all_streams())
    for t in S.all_streams():
        _races.host_saw(t.vc)
    if addr in _graphmem.sizes:     # a graph allocation, freed outside any graph
        _clock.api("cudaFree", P("api_us"), wait_until=idle)
        err = _graphmem.free(addr)
        return (S.fail(err),) if err != E.cudaSuccess else S.OK
    a = _heap.allocs.get(addr)
    if a is None or a.freed or a.pinned:
        return (S.fail(E.cudaErrorInvalidValue),)
    _clock.api("cudaFree", P("api_us"), wait_until=idle)
    _heap.release(a)
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
    addr = _heap.ptr(ptr)
    a = _heap.allocs.get(addr)
    if a is None or not a.registered:
        # CUDA wants the base address given to cudaHostRegister: an address inside a
        # registered range is an invalid value (cuda-bindings' own test_cudart_hostRegister
        # shows it on a GPU); one in no registered range was never registered
        inside = any(b.registered and b.addr < addr < b.addr + b.nbytes
                     for b in _heap.allocs.values())
        return (S.fail(E.cudaErrorInvalidValue if inside
                       else E.cudaErrorHostMemoryNotRegistered),)
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

def _addressable(s, addr, count):
    """Memory a copy on ``s`` may name: there now, or (while ``s`` captures) a graph
    allocation's, which is there when the graph runs."""
    return _heap.view(addr, count) is not None or (
        s.capture is not None and _heap.in_graph_allocation(addr, count))


def cudaMemcpyAsync(dst, src, count, kind, stream):
    s = S.stream(stream)
    if s is None:
        return (S.fail(E.cudaErrorInvalidResourceHandle),)
    dst, src, count = _heap.ptr(dst), _heap.ptr(src), int(count)
    if not (_addressable(s, dst, count) and _addressable(s, src, count)):
        return (S.fail(E.cudaErrorInvalidValue),)
    payload = {"dst": dst, "src": src, "count": count, "kind": _cr.cudaMemcpyKind(int(kind)),
               "name": "memcpy"}
    # CUDA's "API synchronization behavior": from pageable host memory the source is staged at
    # the call; into pageable host memory the call returns once the copy has completed
    eager = s.capture is None
    if eager and _pageable(src):
        payload["staged"] = _heap.view(src, count).copy()
    err = _work.submit(s, NT.cudaGraphNodeTypeMemcpy, payload, P("api_us"), "cudaMemcpyAsync")
    if eager and err == E.cudaSuccess and _pageable(dst) and not _pageable(src):
        _clock.api("cudaMemcpyAsync (pageable)", 0.0, wait_until=s.ready_us)
        _races.host_saw(s.vc)
    return (err,)


def _pageable(addr: int) -> bool:
    """Plain host memory: neither the simulator's device memory nor page-locked memory."""
    return _heap.find(addr) is None and not _heap.in_sim_range(addr)


def cudaMemcpy2DAsync(dst, dpitch, src, spitch, width, height, kind, stream):
    s = S.stream(stream)
    if s is None:
        return (S.fail(E.cudaErrorInvalidResourceHandle),)
    dst, src, width, height = _heap.ptr(dst), _heap.ptr(src), int(width), int(height)
    if width > int(dpitch) or width > int(spitch):
        return (S.fail(E.cudaErrorInvalidPitchValue),)
    rows = [(dst + r * int(dpitch), src + r * int(spitch)) for r in range(height)]
    if not all(_addressable(s, d, width) and _addressable(s, x, width) for d, x in rows):
        return (S.fail(E.cudaErrorInvalidValue),)
    return (_work.submit(s, NT.cudaGraphNodeTypeMemcpy,
                         {"dst": dst, "src": src, "count": width * height, "rows": rows,
                          "width": width, "kind": _cr.cudaMemcpyKind(int(kind)),
                          "name": "memcpy 2D"}, P("api_us"), "cudaMemcpy2DAsync"),)


def cudaMemcpy2D(dst, dpitch, src, spitch, width, height, kind):
    err = cudaMemcpy2DAsync(dst, dpitch, src, spitch, width, height, kind, 0)[0]
    if err != E.cudaSuccess:
        return (err,)
    _clock.api("cudaMemcpy2D", P("sync_us"), wait_until=S.streams[0].ready_us)
    _races.host_saw(S.streams[0].vc)
    return S.OK


def cudaMemGetInfo():
    """(free, total): the calibrated GPU's memory, less what the simulator holds allocated."""
    total = int(_calibration.load().get("total_mem", 150109880320))
    used = sum(a.nbytes for a in _heap.allocs.values() if not a.pinned)
    return E.cudaSuccess, max(total - used, 0), total


def cudaMemsetAsync(devPtr, value, count, stream):
    s = S.stream(stream)
    if s is None:
        return (S.fail(E.cudaErrorInvalidResourceHandle),)
    dst = _heap.ptr(devPtr)
    if _heap.find(dst, int(count)) is None and not (
            s.capture is not None and _heap.in_graph_allocation(dst, int(count))):
        return (S.fail(E.cudaErrorInvalidValue),)
    return (_work.submit(s, NT.cudaGraphNodeTypeMemset,
                         {"dst": dst, "value": int(value), "count": int(count),
                          "name": "memset"}, P("api_us"), "cudaMemsetAsync"),)


# ---------------------------------------------------------------- pitched (2D and 3D) memory

PITCH_ALIGN = 512     # bytes: the row pitch cudaMalloc3D / cudaMallocPitch give on sm_90


def cudaMalloc3D(extent):
    """``width`` bytes by ``height`` rows by ``depth`` slices, each row padded to a pitch that
    is a multiple of `PITCH_ALIGN` bytes (as cudaMallocPitch gives on the GPUs the course
    calibrates; the GPU's own figure is in the conformance suite's GPU check)."""
    w, hgt, dep = int(extent.width), int(extent.height), int(extent.depth)
    if min(w, hgt, dep) < 0:
        return (S.fail(E.cudaErrorInvalidValue), None)
    err = S.refuse_unsafe()
    if err is not None:
        return (err, None)
    pitch = -(-max(w, 1) // PITCH_ALIGN) * PITCH_ALIGN
    _clock.api("cudaMalloc3D", P("malloc_us"))
    addr = _heap.new_alloc(pitch * max(hgt, 1) * max(dep, 1)).addr
    return E.cudaSuccess, _cr.make_cudaPitchedPtr(addr, pitch, w, hgt)


def _memset3d_payload(pitched, value, extent):
    w, hgt, dep = int(extent.width), int(extent.height), int(extent.depth)
    base, pitch, ysize = _heap.ptr(pitched.ptr), int(pitched.pitch), int(pitched.ysize)
    if hgt == 1 and dep == 1:
        pitch = max(pitch, w)            # CUDA ignores the pitch of a single row
    if w > pitch or (dep > 1 and hgt > ysize):
        return None
    rows = [base + (z * ysize + y) * pitch for z in range(dep) for y in range(hgt)]
    if any(_heap.find(a, w) is None for a in rows):
        return None
    return {"dst": base, "value": int(value) & 0xFF, "elementSize": 1, "width": w,
            "height": len(rows), "pitch": pitch, "count": w * len(rows),
            "row_addrs": rows, "name": "memset 3D"}


def cudaMemset3DAsync(pitchedDevPtr, value, extent, stream):
    s = S.stream(stream)
    if s is None:
        return (S.fail(E.cudaErrorInvalidResourceHandle),)
    payload = _memset3d_payload(pitchedDevPtr, value, extent)
    if payload is None:
        return (S.fail(E.cudaErrorInvalidValue),)
    if not payload["row_addrs"]:
        return S.OK                      # an empty extent sets nothing
    return (_work.submit(s, NT.cudaGraphNodeTypeMemset, payload, P("api_us"),
                         "cudaMemset3DAsync"),)


def cudaMemset3D(pitchedDevPtr, value, extent):
    # on the legacy stream, asynchronous to the host for device memory (as cudaMemset)
    return cudaMemset3DAsync(pitchedDevPtr, value, extent, 0)


def cudaMemcpy(dst, src, count, kind):
    # A synchronous copy on the legacy stream; allowed while a non-blocking stream captures.
    err = cudaMemcpyAsync(dst, src, count, kind, 0)[0]
    if err != E.cudaSuccess:
        return (err,)
    _clock.api("cudaMemcpy", P("sync_us"), wait_until=S.streams[0].ready_us)
    _races.host_saw(S.streams[0].vc)
    return S.OK


def cudaMemset(devPtr, value, count):
    # On the legacy stream and, for device memory, asynchronous to the host, as CUDA's: allowed
    # while a non-blocking stream captures (H200), 906 while a blocking one does.
    return cudaMemsetAsync(devPtr, value, count, 0)


# ---------------------------------------------------------------- stream-ordered allocation

def cudaMallocAsync(size, hStream):
    # Outside a capture, an allocation now from the device's default pool (memory there now is
    # there when the stream reaches it), and as potentially unsafe as cudaMalloc. In a capture,
    # an allocation node (`labkit.sim._graphmem`): its address is fixed now, its memory made at
    # each launch.
    return cudaMallocFromPoolAsync(size, _pools.cudaDeviceGetDefaultMemPool(0)[1], hStream)


def cudaMallocFromPoolAsync(size, memPool, stream):
    s, pool = S.stream(stream), _pools.pool(memPool)
    if s is None:
        return (S.fail(E.cudaErrorInvalidResourceHandle), None)
    if pool is None:
        return (S.fail(E.cudaErrorInvalidValue), None)
    if s.capture is None:
        err = S.refuse_unsafe()
        if err is not None:
            return (err, None)
        api = "cudaMallocAsync" if pool.default else "cudaMallocFromPoolAsync"
        got = _pools.allocate(pool, size)
        if not isinstance(got, int) or isinstance(got, E):
            return (S.fail(got), None)
        _clock.api(api, P("malloc_us"))
        return E.cudaSuccess, got
    if s.capture.status != _ACTIVE:
        return (S.fail(E.cudaErrorStreamCaptureInvalidated), None)
    payload = _graphmem.alloc_payload(size)
    if payload is None:
        return (S.fail(E.cudaErrorInvalidValue), None)
    _work.submit(s, NT.cudaGraphNodeTypeMemAlloc, payload, P("api_us"), "cudaMallocAsync")
    return E.cudaSuccess, payload["dst"]


def cudaFreeAsync(devPtr, hStream):
    # Outside a capture, freed when the stream reaches it (`_free_in_stream_order`). In a capture, a free
    # node, for graph memory only: memory allocated outside any graph is cudaErrorInvalidValue
    # and the capture stays active (H200).
    s = S.stream(hStream)
    if s is None:
        return (S.fail(E.cudaErrorInvalidResourceHandle),)
    if s.capture is None:
        return _free_in_stream_order(s, _heap.ptr(devPtr))
    addr = _heap.ptr(devPtr)
    err = _graphmem.free_error(s.capture.graph, addr)
    if err is not None:
        return (S.fail(err),)
    return (_work.submit(s, NT.cudaGraphNodeTypeMemFree, {"dst": addr, "name": "mem free"},
                         P("api_us"), "cudaFreeAsync"),)


def _free_in_stream_order(s, addr):
    """cudaFreeAsync outside a capture: the memory goes when ``s`` reaches the free, after the
    work queued on it before (a graph allocation's rules, or cudaFree's for other memory)."""
    err = S.refuse_unsafe()
    if err is not None:
        return (err,)
    if addr == 0:
        return S.OK
    a = _heap.allocs.get(addr)
    graph_mem = addr in _graphmem.sizes
    if a is None or a.freed or a.pinned or (graph_mem and not _graphmem.is_live(addr)):
        return (S.fail(E.cudaErrorInvalidValue),)
    _clock.api("cudaFreeAsync", P("api_us"))
    at = max(s.ready_us, _work.ordered_start(s, _clock.host_us() + P("launch_latency_us")))
    s.ready_us = at
    if graph_mem:
        return (_graphmem.free(addr, at),)
    _engine.at(at, lambda: _heap.release(a), "free")
    return S.OK

"""The device, versions and errors of the simulated runtime."""
from __future__ import annotations

from cuda.bindings import runtime as _cr

from .. import _calibration
from . import _capture_rules as _rules
from . import _pools, _races
from . import _state as S
from . import clock as _clock

E, P = S.E, S.P


def cudaGetDeviceCount():
    return E.cudaSuccess, 1


# What every GPU of compute capability 9.0 has, from CUDA's table of compute capabilities and
# of unified addressing (not measured: the calibration records the rest)
_CC90 = {"warpSize": 32, "maxThreadsPerBlock": 1024, "maxThreadsDim": [1024, 1024, 64],
         "maxGridSize": [2**31 - 1, 65535, 65535], "sharedMemPerBlock": 48 * 1024,
         "regsPerBlock": 65536, "maxThreadsPerMultiProcessor": 2048,
         "maxBlocksPerMultiProcessor": 32, "unifiedAddressing": 1, "canMapHostMemory": 1,
         "concurrentKernels": 1, "managedMemory": 1}
_A = _cr.cudaDeviceAttr
_ATTRS = {_A.cudaDevAttrMultiProcessorCount: "multiProcessorCount",
          _A.cudaDevAttrComputeCapabilityMajor: "major",
          _A.cudaDevAttrComputeCapabilityMinor: "minor", _A.cudaDevAttrWarpSize: "warpSize",
          _A.cudaDevAttrMaxThreadsPerBlock: "maxThreadsPerBlock",
          _A.cudaDevAttrMaxSharedMemoryPerBlock: "sharedMemPerBlock",
          _A.cudaDevAttrMaxRegistersPerBlock: "regsPerBlock",
          _A.cudaDevAttrMaxThreadsPerMultiProcessor: "maxThreadsPerMultiProcessor",
          _A.cudaDevAttrUnifiedAddressing: "unifiedAddressing",
          _A.cudaDevAttrCanMapHostMemory: "canMapHostMemory",
          _A.cudaDevAttrConcurrentKernels: "concurrentKernels",
          _A.cudaDevAttrManagedMemory: "managedMemory",
          _A.cudaDevAttrMemoryPoolsSupported: None,
          # the simulator has no CUDA arrays (cudaMallocArray is not simulated), sparse or not
          _A.cudaDevAttrSparseCudaArraySupported: 0}


def _fields() -> dict:
    cal = _calibration.load()
    major, minor = cal.get("compute_capability", [9, 0])
    return dict(_CC90, name=f"simulated {cal['gpu']}".encode().ljust(256, b"\0"),
                multiProcessorCount=int(cal.get("sm_count", 132)), major=int(major),
                minor=int(minor), totalGlobalMem=int(cal.get("total_mem", 150109880320)))


def cudaGetDeviceProperties(device):
    """cuda-bindings' ``cudaDeviceProp``, filled from the calibrated GPU (name, SM count,
    compute capability, memory) and what its compute capability fixes; the rest stays 0, and
    ``uuid`` too: a simulated device has none."""
    if int(device) != 0:
        return (S.fail(E.cudaErrorInvalidDevice), None)
    p = _cr.cudaDeviceProp()
    for k, v in _fields().items():
        setattr(p, k, v)
    return E.cudaSuccess, p


def cudaDeviceGetAttribute(attr, device):
    if int(device) != 0:
        return (S.fail(E.cudaErrorInvalidDevice), None)
    attr = _A(int(attr))
    if attr not in _ATTRS:
        raise NotImplementedError(f"cudaDeviceGetAttribute({attr.name}) is not simulated "
                                  "(backend 'sim'); run on a GPU with LABKIT_BACKEND=cuda")
    key = _ATTRS[attr]
    if key == 0:
        return E.cudaSuccess, 0
    return E.cudaSuccess, 1 if key is None else int(_fields()[key])


def cudaDeviceGetStreamPriorityRange():
    """(least, greatest) priority: 0 and -5, as on sm_90 GPUs (a lower number is sooner)."""
    return E.cudaSuccess, 0, -5


def cudaSetDevice(device):
    if int(device) != 0:
        return (S.fail(E.cudaErrorInvalidDevice),)
    return S.OK


def cudaGetDevice():
    return E.cudaSuccess, 0


# The CUDA version the installed cuda-bindings was built for (13.5 for cuda-bindings 13.5): the
# newest driver and runtime it knows, so every call it has is one the simulated driver has.
VERSION = int(_cr.CUDART_VERSION)


def cudaDriverGetVersion():
    return E.cudaSuccess, VERSION


def cudaRuntimeGetVersion():
    return E.cudaSuccess, VERSION


def cudaDeviceGetExecutionCtx(device):
    """The device's primary context, as ``cudaExecutionContext_t`` (CUDA 13.1), which
    ``cudaGraphConditionalHandleCreate_v2`` takes; nothing else about contexts is simulated."""
    if int(device) != 0:
        return (S.fail(E.cudaErrorInvalidDevice), None)
    return E.cudaSuccess, _cr.cudaExecutionContext_t(S.PRIMARY_CTX)


def cudaGetLastError():
    return (_rules.take_last_error(),)


def cudaPeekAtLastError():
    return (_rules.last_error(),)


def cudaDeviceSynchronize():
    with S.lock:
        for c in S.active_captures():
            S.invalidate(c)
            return (S.fail(E.cudaErrorStreamCaptureUnsupported),)
        t = max([s.ready_us for s in S.all_streams()] + [_clock.host_us()])
        _clock.api("cudaDeviceSynchronize", P("sync_us"), wait_until=t)
        for s in S.all_streams():
            _races.host_saw(s.vc)
        _pools.on_sync()
        return S.OK


cudaGetErrorName = _cr.cudaGetErrorName
cudaGetErrorString = _cr.cudaGetErrorString

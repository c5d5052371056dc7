"""The few operations that differ between backends; everything else in labkit is shared.

``rt`` is ``cuda.bindings.runtime`` on "cuda" and ``labkit.sim.runtime`` on "sim". Besides it,
only launches, array creation, the host clock and copying one kernel node's parameters need
a backend-specific implementation, and they all live here.
"""
from __future__ import annotations

import sys
import time

import numpy as np

from ._backend import BackendError, choose


def _started_as_cli() -> bool:
    argv = getattr(sys, "orig_argv", [])
    return any(a == "-m" and argv[i + 1:i + 2] == ["labkit"] for i, a in enumerate(argv))


backend_error = None
try:
    backend, backend_reason = choose()
except BackendError as exc:
    # `python -m labkit doctor` imports labkit before doctor runs: keep the error for it to report
    if not _started_as_cli():
        raise
    backend, backend_reason, backend_error = "sim", f"no backend: {exc}", exc

if backend == "cuda":
    # cuda-bindings 13's signatures on a CUDA 12 install too (the cu12 extra): see _runtime12
    from ._runtime12 import cuda_runtime
    rt = cuda_runtime()
else:
    from .sim import runtime as rt

_numba_streams: dict[int, object] = {}


def _numba_stream(handle: int):
    from numba import cuda
    s = _numba_streams.get(handle)
    if s is None:
        s = cuda.legacy_default_stream() if handle == 0 else cuda.external_stream(handle)
        _numba_streams[handle] = s
    return s


def launch(k, grid, block, stream, args):
    from ._kernel import _launch_error, stream_handle
    if backend == "cuda":
        if type(stream).__module__.startswith("cuda.core"):
            target = stream          # numba-cuda launches straight into cuda.core builders
        else:
            target = _numba_stream(stream_handle(stream))
        try:
            k.dispatcher[grid, block, target](*args)
        except Exception as exc:   # numba raises CudaAPIError, cuda.core raises CUDAError
            _launch_error(k, exc)
        return
    from ._errors import CudaError
    if type(stream).__module__.startswith("cuda.core"):
        raise NotImplementedError("cuda.core graph builders need a real GPU (backend 'cuda')")
    h = stream_handle(stream)
    host = [a for a in args if isinstance(a, np.ndarray)]
    s = rt._stream(h)
    if host and s is not None and s.capture is not None:
        # numba would copy the host array to the device first: not allowed while capturing.
        rt._invalidate(s.capture)
        rt._fail(rt.E.cudaErrorStreamCaptureUnsupported)
        raise CudaError(rt.E.cudaErrorStreamCaptureUnsupported, f"launching {k.name}")
    if host:
        from .sim import clock
        clock.host_work(sum(2 * (rt.P("memcpy_latency_us") + a.nbytes / (rt.P("memcpy_GBps") * 1e3))
                            for a in host))
    err = rt.launch_kernel(k, grid, block, h, args)
    if int(err) != 0:
        raise CudaError(err, f"launching {k.name}")


# ------------------------------------------------------------------ arrays

class SimDeviceArray:
    """A simulated device array with the parts of numba's DeviceNDArray the course uses."""

    def __init__(self, shape, dtype, addr=None):
        self.shape = tuple(int(x) for x in (shape if isinstance(shape, tuple) else (shape,)))
        self.dtype = np.dtype(dtype)
        self.size = int(np.prod(self.shape)) if self.shape else 1
        self.nbytes = self.size * self.dtype.itemsize
        self.ndim = len(self.shape)
        if addr is None:
            addr = rt._new_alloc(self.nbytes).addr
        self._addr = addr

    @property
    def device_ctypes_pointer(self):
        import ctypes
        return ctypes.c_void_p(self._addr)

    def host_view(self):
        raw = rt.host_view(self._addr, self.nbytes)
        return None if raw is None else raw.view(self.dtype).reshape(self.shape)

    def __len__(self):
        return self.shape[0]

    def copy_to_host(self, ary=None, stream=0):
        from ._kernel import stream_handle
        from ._errors import check
        out = np.empty(self.shape, self.dtype) if ary is None else ary
        h = stream_handle(stream)
        kind = rt.cudaMemcpyKind.cudaMemcpyDeviceToHost
        if h == 0:    # numba copies synchronously (cuMemcpyDtoH): legal beside a non-blocking capture
            check(rt.cudaMemcpy(out.ctypes.data, self._addr, self.nbytes, kind), "copy_to_host")
        else:
            check(rt.cudaMemcpyAsync(out.ctypes.data, self._addr, self.nbytes, kind, h), "copy_to_host")
        return out

    def copy_to_device(self, ary, stream=0):
        from ._kernel import stream_handle
        from ._errors import check
        src = np.ascontiguousarray(ary, dtype=self.dtype)
        if src.nbytes != self.nbytes:
            raise ValueError(f"copy_to_device: {src.nbytes} bytes into an array of {self.nbytes}")
        h = stream_handle(stream)
        kind = rt.cudaMemcpyKind.cudaMemcpyHostToDevice
        if h == 0:
            check(rt.cudaMemcpy(self._addr, src.ctypes.data, self.nbytes, kind), "copy_to_device")
        else:
            check(rt.cudaMemcpyAsync(self._addr, src.ctypes.data, self.nbytes, kind, h), "copy_to_device")

    def __repr__(self):
        return f"<simulated device array shape={self.shape} dtype={self.dtype}>"


def to_device(ary, stream=0):
    if backend == "cuda":
        from numba import cuda
        return cuda.to_device(ary, stream=_numba_stream(int(stream)) if stream else 0)
    d = SimDeviceArray(ary.shape, ary.dtype)
    d.copy_to_device(ary, stream)
    return d


def device_array(shape, dtype):
    if backend == "cuda":
        from numba import cuda
        return cuda.device_array(shape, dtype)
    return SimDeviceArray(shape if isinstance(shape, tuple) else (shape,), dtype)


def pinned_array(shape, dtype):
    if backend == "cuda":
        from numba import cuda
        return cuda.pinned_array(shape, dtype)
    shape = shape if isinstance(shape, tuple) else (shape,)
    n = int(np.prod(shape)) * dtype.itemsize
    a = rt._new_alloc(n, pinned=True)
    return a.buf[:n].view(dtype).reshape(shape)


# ------------------------------------------------------------------ clocks

def host_us() -> float:
    """Host wall clock in µs (virtual on the simulator)."""
    if backend == "cuda":
        return time.perf_counter_ns() / 1e3
    return rt._clock.host_us()


def cpu_us() -> float:
    """This process's CPU time in µs (virtual on the simulator)."""
    if backend == "cuda":
        return time.process_time_ns() / 1e3
    return rt._clock.cpu_us()


# ------------------------------------------------------------------ kernel node parameters

def copy_kernel_node_params(src_node, exec_handle, dst_node):
    """Give ``dst_node`` of an executable graph the parameters of kernel node ``src_node``.

    numba flattens each array into several kernel parameters; rather than rebuild them, labkit
    lets numba prepare a launch (captured into a scratch graph) and copies that node's
    parameters. On a GPU this goes through the driver API: the runtime's
    cudaGraphKernelNodeGetParams refuses nodes that numba-cuda launched through cuda.core.
    The simulator's copy also charges the calibrated cost of the whole node update.
    """
    if backend == "cuda":
        from cuda.bindings import driver
        err, params = driver.cuGraphKernelNodeGetParams(src_node)
        if int(err) != 0:
            return (err,)
        return driver.cuGraphExecKernelNodeSetParams(exec_handle, dst_node, params)
    return rt.copy_kernel_node_params(src_node, exec_handle, dst_node)

"""The "cuda" backend: a real GPU, through numba-cuda and cuda.bindings.

Eager launches go to numba on the given stream (an external numba stream, made once per
handle; numba's own launch configuration is cached per grid, block and stream, so a launch
costs what a bare ``k[grid, block, stream](x)`` costs). A `KernelParams` is numba's argument
flattening done once: the kernel's ``CUfunction``, its grid and block, and a ctypes array of
pointers to the flattened argument bytes, held in one ``CUDA_KERNEL_NODE_PARAMS``. The same
block serves a prepared launch (``cuLaunchKernel``), a graph node's parameters
(``cuGraphKernelNodeSetParams``), an executable's node (``cuGraphExecKernelNodeSetParams``)
and an explicit node add (``cuGraphAddKernelNode``). The driver API is used because the
runtime's kernel-node calls refuse the nodes numba-cuda launches through cuda.core.
"""
from __future__ import annotations

import ctypes
import functools
import re
import time

import numpy as np
from cuda.bindings import driver
from ._cuda12 import cuda_runtime

# cuda-bindings 13's signatures on a CUDA 12 install too (the cu12 extra): see labkit.backends._cuda12
rt = cuda_runtime()
from numba import cuda as _numba

from .._errors import CudaError
from ._launch import HOST_ARRAY, eager_launch
from ._numba_kernel import compiled_parts

# the names of labkit.backends._interface.Backend
__all__ = ["IS_GPU", "rt", "to_device", "device_array", "pinned_array", "mapped_array",
           "poll_step", "launcher",
           "KernelParams", "bare_launch", "host_us", "cpu_us", "start_trace", "stop_trace",
           "stream_trace_id", "kernel_node_name", "provenance", "frees_held",
           "make_set_condition", "races", "clear_races", "reset_after_fault"]

IS_GPU = True
_numba_streams: dict[int, object] = {}


def _numba_stream(handle: int):
    s = _numba_streams.get(handle)
    if s is None:
        s = _numba.legacy_default_stream() if handle == 0 else _numba.external_stream(handle)
        _numba_streams[handle] = s
    return s


# ------------------------------------------------------------------ arrays

def to_device(ary, stream=0):
    return _numba.to_device(ary, stream=_numba_stream(int(stream)) if stream else 0)


def device_array(shape, dtype):
    return _numba.device_array(shape, dtype)


def pinned_array(shape, dtype):
    return _numba.pinned_array(shape, dtype)


# ------------------------------------------------------------------ mapped host memory

def mapped_array(shape, dtype):
    """``(kernel argument, host numpy view)`` of new mapped, pinned host memory (numba's
    ``cuda.mapped_array``: ``cudaHostAlloc`` with ``cudaHostAllocMapped``); one object is both."""
    a = _numba.mapped_array(shape, dtype)
    return a, a


def poll_step() -> bool:
    """One step of a host loop polling mapped memory: nothing to do on a GPU, which writes the
    memory on its own while the host reads it."""
    return True


# ------------------------------------------------------------------ launch errors

_DRIVER_ERR = re.compile(r"(CUDA_ERROR_[A-Z_]+)")


def _code_of(exc) -> int | None:
    """The CUresult code of a numba / cuda.core launch error (they share the runtime's numbers)."""
    code = getattr(exc, "code", None)
    if code is not None:
        return int(code)
    m = _DRIVER_ERR.search(str(exc))
    if m:
        try:
            return int(getattr(driver.CUresult, m.group(1)))
        except AttributeError:
            return None
    return None


def _launch_error(name, exc, args=()):
    code = _code_of(exc)
    host = any(isinstance(a, np.ndarray) for a in args)
    if code is None and host and "capturing stream" in str(exc):
        # numba-cuda 0.30 takes the temporary buffer from cuda.core's memory pool, and cuda.core
        # refuses a pool allocation on a capturing stream itself (a RuntimeError, before CUDA
        # sees the call); the first allocation of a process may instead fail in CUDA with 900
        code = int(rt.cudaError_t.cudaErrorStreamCaptureUnsupported)
    if code is None:
        raise exc
    raise CudaError(code, f"launching {name}" + (HOST_ARRAY if host else "")) from exc


# ------------------------------------------------------------------ eager launch

def launcher(k, grid, block, stream, owner=None):
    """``fn(*args)`` launching ``k`` on ``stream`` (a raw handle, or a cuda.core graph builder,
    which numba-cuda launches into directly) through numba's own launch path, with labkit's
    span, closed-stream check and keep-alive (`_launch.eager_launch`)."""
    target = stream if not isinstance(stream, int) else _numba_stream(stream)
    config = k.dispatcher[grid, block, target]     # numba's launch configuration, made once
    name = k.name

    def submit(*args):
        try:
            config(*args)
        except Exception as exc:   # numba raises CudaAPIError, cuda.core raises CUDAError
            _launch_error(name, exc, args)
    return eager_launch(k, owner, submit, grid, block)


# ------------------------------------------------------------------ parameter blocks

def _as_ctypes(v):
    """numba's flattened argument -> a ctypes object holding the bytes the kernel expects."""
    if isinstance(v, ctypes._SimpleCData):
        return v
    if isinstance(v, bool):
        return ctypes.c_bool(v)
    if isinstance(v, int):          # numba passes pointers, sizes, shapes and strides as intptr
        return ctypes.c_ssize_t(v)
    raise TypeError(f"cannot pass {type(v).__name__} in a kernel parameter block")


def _function(handle: int):
    """The ``CUfunction`` of numba's compiled kernel in the current context. numba-cuda loads
    kernels as library kernels: its handle is a ``CUkernel``, which cuLaunchKernel accepts but
    the graph-node calls refuse (cudaErrorInvalidResourceHandle, seen on the H200), so it is
    turned into the context's function once here."""
    err, func = driver.cuKernelGetFunction(driver.CUkernel(handle))
    return func if not err else driver.CUfunction(handle)


def _pdl_config(grid, block, stream):
    """A ``CUlaunchConfig`` with one attribute, programmatic stream serialization (PDL): the
    kernel may start before the kernel before it in ``stream`` ends (compute capability 9.0 and
    newer; cuda-bindings' runtime module has no ``cudaLaunchKernelEx``, so the driver's)."""
    attr = driver.CUlaunchAttribute()
    attr.id = driver.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION
    attr.value.programmaticStreamSerializationAllowed = 1
    cfg = driver.CUlaunchConfig()
    cfg.gridDimX, cfg.gridDimY, cfg.gridDimZ = grid
    cfg.blockDimX, cfg.blockDimY, cfg.blockDimZ = block
    cfg.sharedMemBytes, cfg.hStream = 0, stream
    cfg.attrs, cfg.numAttrs = [attr], 1
    return cfg


class KernelParams:
    """``kernel[grid, block](*args)`` as the driver sees it, built once.

    ``args`` are kept for as long as the block lives: the block holds their device pointers.
    """

    def __init__(self, k, grid, block, args):
        parts = compiled_parts(k.dispatcher, args)
        flat = parts.flat_args
        self.name, self.grid, self.block, self.args = k.name, grid, block, tuple(args)
        self._store = [_as_ctypes(v) for v in flat]       # the bytes the pointers point at
        self._ptrs = (ctypes.c_void_p * max(len(flat), 1))(
            *[ctypes.addressof(c) for c in self._store])
        self.address = ctypes.addressof(self._ptrs)
        self.func = _function(parts.cufunc_handle)
        p = driver.CUDA_KERNEL_NODE_PARAMS()
        p.func = self.func
        p.gridDimX, p.gridDimY, p.gridDimZ = grid
        p.blockDimX, p.blockDimY, p.blockDimZ = block
        p.sharedMemBytes = 0
        p.kernelParams = self.address
        self.node_params = p
        self._streams = {}

    def launch(self, stream: int, programmatic: bool = False):
        """One ``cuLaunchKernel`` with this block on ``stream`` (a raw handle); with
        ``programmatic``, ``cuLaunchKernelEx`` with programmatic stream serialization (PDL)."""
        s = self._streams.get(stream)
        if s is None:
            s = self._streams[stream] = driver.CUstream(stream)
        g, b = self.grid, self.block
        if programmatic:
            err, = driver.cuLaunchKernelEx(_pdl_config(g, b, s), self.func, self.address, 0)
        else:
            err, = driver.cuLaunchKernel(self.func, g[0], g[1], g[2], b[0], b[1], b[2], 0, s,
                                         self.address, 0)
        if err:
            raise CudaError(int(err), f"prepared launch of {self.name}")

    def set_node(self, node):
        """Make graph node ``node`` launch this block (``cuGraphKernelNodeSetParams``)."""
        err, = driver.cuGraphKernelNodeSetParams(driver.CUgraphNode(int(node)),
                                                 self.node_params)
        return int(err)

    def exec_node_setter(self, graph_exec, node):
        """A callable returning ``(err,)`` that sets ``node`` of ``graph_exec`` to this block:
        the handles and the struct are made once, so a call is the driver call and nothing more."""
        return functools.partial(driver.cuGraphExecKernelNodeSetParams,
                                 driver.CUgraphExec(int(graph_exec)),
                                 driver.CUgraphNode(int(node)), self.node_params)

    def raw_exec_set(self, graph_exec, node):
        """``(fn, args)``: the bare driver call `exec_node_setter` wraps, for measuring beside it."""
        return (driver.cuGraphExecKernelNodeSetParams,
                (driver.CUgraphExec(int(graph_exec)), driver.CUgraphNode(int(node)),
                 self.node_params))

    def add_node(self, graph, deps):
        """Add a kernel node launching this block after ``deps``; ``(err, node)``.

        The driver copies the parameter values into the node, but the arrays they point at must
        outlive the graph: the caller keeps ``args`` alive with it."""
        err, node = driver.cuGraphAddKernelNode(
            driver.CUgraph(int(graph)), [driver.CUgraphNode(int(d)) for d in deps], len(deps),
            self.node_params)
        return int(err), (rt.cudaGraphNode_t(int(node)) if not err else None)


# ------------------------------------------------------------------ clock, traces, provenance

def frees_held():
    """A context in which numba holds the device memory it would free (``cuda.defer_cleanup``).

    numba frees collected device arrays lazily, at a later allocation or when its queue is full:
    a ``cuMemFree`` inside a stream capture is refused and invalidates the capture (seen on the
    H200: an array from an earlier cell, freed while the next capture was open). So a capture
    holds the frees until it ends.

    numba's own ``cuda.defer_cleanup()`` looks its context up on every call (about 9 µs of the
    host's time on the H200, most of a capture's fixed cost), so the context is kept here and
    looked up again only when the current CUDA context is another one, or numba released it
    (``cuda.close()``).
    """
    global _held_ctx
    ctx = _held_ctx
    if ctx is not None:
        err, cur = driver.cuCtxGetCurrent()
        try:
            if int(err) or int(cur) != int(ctx.handle) or ctx.device.primary_context is not ctx:
                ctx = None
        except ReferenceError:        # numba's device object is gone with its context
            ctx = None
    if ctx is None:
        ctx = _held_ctx = _numba.current_context()
    return ctx.defer_cleanup()


_held_ctx = None     # numba's Context whose frees the last capture held (see frees_held)


def races() -> list:
    """No tool reports races between streams or between a graph's branches on a GPU
    (compute-sanitizer's racecheck covers shared memory inside one kernel): always empty here.
    The simulator names them (``LABKIT_BACKEND=sim``)."""
    return []


def clear_races() -> None:
    pass


def reset_after_fault() -> None:
    raise RuntimeError("a GPU has no way back from a sticky error such as 700 "
                       "(cudaErrorIllegalAddress): the process's CUDA context is lost. Restart "
                       "the process (in Jupyter: Kernel > Restart) and run the notebook again")


def host_us() -> float:
    """Host wall clock in µs."""
    return time.perf_counter_ns() / 1e3


def cpu_us() -> float:
    """This process's CPU time in µs."""
    return time.process_time_ns() / 1e3


def start_trace() -> bool:
    """The GPU has no model to trace: the caller records with CUPTI (False: not traced here)."""
    return False


def stop_trace() -> list:
    return []


def stream_trace_id(handle: int) -> int:
    """CUPTI's number for stream ``handle`` in its records: the driver's id of the stream
    (``cuStreamGetId``), or the handle where the driver cannot say."""
    err, sid = driver.cuStreamGetId(driver.CUstream(int(handle)))
    return int(sid) if not int(err) else int(handle)


def kernel_node_name(node) -> str | None:
    """The symbol of the function kernel node ``node`` runs (``cuFuncGetName``), or None."""
    err, params = driver.cuGraphKernelNodeGetParams(driver.CUgraphNode(int(node)))
    if int(err):
        return None
    err, name = driver.cuFuncGetName(params.func)
    if int(err):
        return None
    return name.decode() if isinstance(name, bytes) else str(name)


def provenance(device: str) -> str:
    return f"measured on {device}"


def bare_launch(k, grid, block, stream: int):
    """The launch without labkit: numba's own ``k[grid, block, stream](*args)`` on the same
    stream, for measuring labkit's share of a launch beside it."""
    disp, target = k.dispatcher, _numba_stream(stream)
    return lambda *args: disp[grid, block, target](*args)


def make_set_condition(cu_path: str):
    """``set_condition(handle, value)`` for numba kernels: CUDA's device-side
    ``cudaGraphSetConditional``, declared to numba and linked from a small CUDA C file."""
    return _numba.declare_device("labkit_set_condition", "int32(uint64, uint32)", link=[cu_path])

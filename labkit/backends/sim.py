"""The "sim" backend: everything on the CPU simulator (`labkit.sim`), whose clock is calibrated
on a real GPU.

Arrays are simulated allocations, freed when the array is collected (as numba frees a device
array), so a graph that outlived its buffers fails its replay. A kernel enters the simulator
once, as a registered function (its numpy reference, or its own code under numba's CUDA
simulator, and its cost model). A `KernelParams` holds a ``cudaKernelNodeParams`` whose
parameter block the simulator reads;
an eager launch is a launch of the registered function that also costs numba's dispatch.
"""
from __future__ import annotations

import contextlib

import ctypes
import weakref

import numpy as np

from .. import _calibration
from .._errors import CudaError
from ._launch import HOST_ARRAY, eager_launch
from ..sim import _hooks
from ..sim import runtime as rt
from ..sim._conditional import set_value

# the names of labkit.backends._interface.Backend
__all__ = ["IS_GPU", "rt", "to_device", "device_array", "pinned_array", "mapped_array",
           "poll_step", "launcher",
           "KernelParams", "bare_launch", "host_us", "cpu_us", "start_trace", "stop_trace",
           "stream_trace_id", "kernel_node_name", "provenance", "frees_held",
           "make_set_condition", "races", "clear_races", "reset_after_fault"]

IS_GPU = False
P = _hooks.P
host_us = _hooks.host_us
cpu_us = _hooks.cpu_us
_H2D = rt.cudaMemcpyKind.cudaMemcpyHostToDevice
_D2H = rt.cudaMemcpyKind.cudaMemcpyDeviceToHost


# ------------------------------------------------------------------ arrays

def _stream_int(stream) -> int:
    h = getattr(stream, "handle", stream)
    if h is None:
        raise ValueError("the stream was closed: copy on an open labkit.Stream")
    return int(h or 0)


def _c_strides(shape, itemsize: int) -> tuple:
    """C-order strides in bytes, as numba's device arrays have them."""
    strides, step = [], itemsize
    for n in reversed(shape):
        strides.append(step)
        step *= n
    return tuple(reversed(strides))


class SimDeviceArray:
    """A simulated device array with the parts of numba's DeviceNDArray the course uses."""

    def __init__(self, shape, dtype, pinned: bool = False):
        self.shape = tuple(int(x) for x in (shape if isinstance(shape, tuple) else (shape,)))
        self.dtype = np.dtype(dtype)
        self.size = int(np.prod(self.shape)) if self.shape else 1
        self.nbytes = self.size * self.dtype.itemsize
        self.ndim = len(self.shape)
        self.strides = _c_strides(self.shape, self.dtype.itemsize)
        self._addr = _hooks.new_alloc(self.nbytes, pinned=pinned)
        self._arg = _hooks.ArrayArg(self._addr, self.shape, self.dtype)

    def __del__(self):
        # numba frees a collected device array (cuMemFree); so does the simulator
        try:
            _hooks.release(self._addr)
        except Exception:     # noqa: BLE001 - interpreter shutdown: nothing left to free
            pass

    @property
    def device_ctypes_pointer(self):
        return ctypes.c_void_p(self._addr)

    def __len__(self):
        return self.shape[0]

    def _copy(self, dst, src, kind, stream, what):
        h = _stream_int(stream)
        if h == 0:   # numba copies synchronously (cuMemcpy): legal beside a non-blocking capture
            err = rt.cudaMemcpy(dst, src, self.nbytes, kind)
        else:
            err = rt.cudaMemcpyAsync(dst, src, self.nbytes, kind, h)
        if int(err[0]):
            raise CudaError(err[0], what)

    def copy_to_host(self, ary=None, stream=0):
        out = np.empty(self.shape, self.dtype) if ary is None else ary
        self._copy(out.ctypes.data, self._addr, _D2H, stream, "copy_to_host")
        return out

    def copy_to_device(self, ary, stream=0):
        src = np.ascontiguousarray(ary, dtype=self.dtype)
        if src.nbytes != self.nbytes:
            raise ValueError(f"copy_to_device: {src.nbytes} bytes into an array of {self.nbytes}")
        self._copy(self._addr, src.ctypes.data, _H2D, stream, "copy_to_device")

    def __repr__(self):
        return f"<simulated device array shape={self.shape} dtype={self.dtype}>"


def frees_held():
    """The simulator frees an array when it is collected, through its own allocator, never by
    a runtime call inside a capture: nothing to hold."""
    return contextlib.nullcontext()


def to_device(ary, stream=0):
    d = SimDeviceArray(ary.shape, ary.dtype)
    d.copy_to_device(ary, stream)
    return d


def device_array(shape, dtype):
    return SimDeviceArray(shape, dtype)


def pinned_array(shape, dtype):
    shape = shape if isinstance(shape, tuple) else (shape,)
    n = int(np.prod(shape)) * dtype.itemsize
    return _hooks.pinned_buffer(_hooks.new_alloc(n, pinned=True))[:n].view(dtype).reshape(shape)


# ------------------------------------------------------------------ mapped host memory

class SimMappedArray(SimDeviceArray):
    """Pinned host memory that simulated kernels read and write in place (``cudaHostAlloc`` with
    ``cudaHostAllocMapped``): the kernel argument is this object, ``host`` its numpy view."""

    def __init__(self, shape, dtype):
        super().__init__(shape, dtype, pinned=True)
        self.host = _hooks.pinned_buffer(self._addr)[:self.nbytes].view(self.dtype).reshape(self.shape)

    def __repr__(self):
        return f"<simulated mapped host array shape={self.shape} dtype={self.dtype}>"


def mapped_array(shape, dtype):
    """``(kernel argument, host numpy view)`` of new mapped, pinned host memory."""
    a = SimMappedArray(shape, dtype)
    return a, a.host


def poll_step() -> bool:
    """One step of a host loop polling mapped memory: the host spins until the simulated GPU's
    next piece of work takes effect (`labkit.sim._hooks.spin`: the host's clock moves to it, as
    a spinning thread's does); False when no work is left that could change memory."""
    return _hooks.spin()


def races() -> list:
    """The data races the simulator has seen (`labkit.sim._races.Race`), in order."""
    return _hooks.races()


def clear_races() -> None:
    _hooks.clear_races()


def reset_after_fault() -> None:
    """The simulator only: forget a sticky fault (and the work queued behind it). A GPU has no
    such call: there the process restarts."""
    _hooks.clear_fault()


# ------------------------------------------------------------------ kernels in the simulator

_functions: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _function(k) -> int:
    """The simulator's function handle for labkit kernel ``k`` (registered on first use)."""
    f = _functions.get(k)
    if f is None:
        compute = k.reference if k.reference is not None else k.simulate
        cost = k.cost

        def gpu_us(grid, block, *params):
            if cost is not None:
                return float(cost(P, grid, block, *params))
            nbytes = sum(int(getattr(a, "nbytes", 0)) for a in params)
            # a simple numba kernel reads and writes its arrays at the bandwidth such
            # kernels reach (kernel_GBps), not a device-to-device copy's (device_GBps)
            return max(P("kernel_us"), 2 * nbytes / (P("kernel_GBps") * 1e3))
        f = _functions[k] = _hooks.register_function(
            k.name, compute, gpu_us, k.param_names, _hooks.kernel_access(k.py_func))
    return f


def _is_device_array(a) -> bool:
    return getattr(a, "_arg", None) is not None or hasattr(a, "device_ctypes_pointer")


def _param(a):
    arg = getattr(a, "_arg", None)          # a simulated device array
    if arg is not None:
        return arg
    if isinstance(a, np.ndarray) or hasattr(a, "device_ctypes_pointer"):
        return _hooks.array_arg(a)
    return a


def launcher(k, grid, block, stream, owner=None):
    """``fn(*args)``: launch ``k`` on ``stream`` (a raw handle) as numba's dispatch would, with
    labkit's span, closed-stream check and keep-alive (`_launch.eager_launch`)."""
    if not isinstance(stream, int):
        raise NotImplementedError("cuda.core graph builders need a real GPU (backend 'cuda')")
    func, name = _function(k), k.name

    def submit(*args):
        host = [a for a in args if isinstance(a, np.ndarray)]
        capturing = _hooks.capturing(stream)
        if host:
            if capturing:   # numba would allocate a temporary device buffer: not in a capture
                raise CudaError(_hooks.refuse_in_capture(stream), f"launching {name}{HOST_ARRAY}")
            _hooks.host_work(sum(2 * (P("memcpy_latency_us") + a.nbytes / (P("memcpy_GBps") * 1e3))
                                 for a in host))
        # numba types and marshals each argument in Python, capturing or not: every array past the
        # calibration kernel's one adds its share, to an eager launch and to a captured one alike
        arrays = sum(1 for a in args if isinstance(a, np.ndarray) or _is_device_array(a))
        cost = (P("capture_launch_us") if capturing else P("numba_launch_us")) \
            + P("numba_launch_per_array_us") * max(arrays - 1, 0) \
            + _hooks.first_use("kernel_first_launch", func)     # numba's JIT and the module load
        err = _hooks.launch(func, grid, block, tuple(_param(a) for a in args), stream, cost)
        if int(err):
            raise CudaError(err, f"launching {name}")
        if host:            # numba copies host arrays back after the kernel: the host waits
            _hooks.wait_for(stream)
    return eager_launch(k, owner, submit, grid, block)


def _dim3(d):
    out = rt.dim3()
    out.x, out.y, out.z = d
    return out


class KernelParams:
    """``kernel[grid, block](*args)`` as a ``cudaKernelNodeParams``, built once."""

    def __init__(self, k, grid, block, args):
        if any(isinstance(a, np.ndarray) for a in args):
            raise TypeError("a parameter block takes device arrays only; use labkit.to_device")
        self.name, self.grid, self.block, self.args = k.name, grid, block, tuple(args)
        self.func = _function(k)
        _hooks.host_work(_hooks.first_use("kernel_first_launch", self.func))   # compiled here
        self._values = tuple(_param(a) for a in args)
        self.node_params = _hooks.kernel_node_params(self.func, grid, block, self._values)

    def launch(self, stream: int, programmatic: bool = False):
        err = _hooks.launch(self.func, self.grid, self.block, self._values, stream,
                            P("prepared_launch_us"), programmatic)
        if int(err):
            raise CudaError(err, f"prepared launch of {self.name}")

    def set_node(self, node):
        return int(rt.cudaGraphKernelNodeSetParams(node, self.node_params)[0])

    def exec_node_setter(self, graph_exec, node):
        """The node update through labkit: the driver's call (which the simulated runtime
        charges) and labkit's own share beside it, both calibrated (``node_update_us`` is
        labkit's whole update, ``raw_node_update_us`` the driver call alone)."""
        share = max(P("node_update_us") - P("raw_node_update_us"), 0.0)
        set_params, p = rt.cudaGraphExecKernelNodeSetParams, self.node_params

        def setter():
            _hooks.host_work(share)
            return set_params(graph_exec, node, p)
        return setter

    def raw_exec_set(self, graph_exec, node):
        return rt.cudaGraphExecKernelNodeSetParams, (graph_exec, node, self.node_params)

    def add_node(self, graph, deps):
        deps = list(deps)
        err, node = rt.cudaGraphAddKernelNode(graph, deps, len(deps), self.node_params)
        return int(err), node


# ------------------------------------------------------------------ traces, provenance

def start_trace() -> bool:
    """Record the model's clock: every host call and GPU interval (True: traced here)."""
    _hooks.start_trace()
    return True


def stop_trace() -> list:
    return _hooks.stop_trace()


def stream_trace_id(handle: int) -> int:
    """The simulator's timeline rows name a stream by its handle."""
    return int(handle)


def kernel_node_name(node) -> str | None:
    """The name of the registered function kernel node ``node`` runs, or None."""
    err, params = rt.cudaGraphKernelNodeGetParams(node)
    return None if int(err) else _hooks.function_name(params.func)


def provenance(device: str) -> str:
    gpu, profile = _calibration.load()["gpu"], _calibration.profile()
    if profile:
        return f"simulated, what-if profile '{profile}' (not a measurement) on {gpu}'s calibration"
    return f"simulated, calibrated on {gpu}"


def bare_launch(k, grid, block, stream: int):
    """The launch without labkit: on the simulator, numba's launch is the modelled launch
    itself (numba's own CUDA simulator has no streams and no clock)."""
    def dim3(d):
        d = (int(d),) if isinstance(d, (int, np.integer)) else tuple(int(v) for v in d)
        return d + (1,) * (3 - len(d))
    return launcher(k, dim3(grid), dim3(block), stream)


def make_set_condition(cu_path: str):
    """``set_condition(handle, value)`` on the simulator: a Python function that numba's CUDA
    simulator calls from inside a kernel, setting the simulated handle (``cu_path`` is unused)."""
    def set_condition(handle, value):
        """Set conditional ``handle`` to ``value`` (simulated ``cudaGraphSetConditional``)."""
        set_value(handle, value)
        return 0
    return set_condition

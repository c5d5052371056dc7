"""labkit's hooks into the simulator: everything labkit's "sim" backend needs that is not part
of ``cuda.bindings.runtime``.

On a GPU these are numba's and the driver's business (allocating a device array, freeing it when
it is collected, ``cuLaunchKernel``, the function handle of a compiled kernel); the simulated
runtime, like CUDA's, has no such names, so labkit reaches the simulator's state here and only
here.

* `register_function`: a kernel enters the simulator as a function handle, as a ``CUfunction``
  enters the driver; kernel nodes and launches name it in ``func``.
* `ArrayArg`: how an array travels in a parameter block: its address and layout, not the Python
  object. A node therefore does not keep the array alive, as on a GPU: a replay after the array
  was collected (and released) is ``cudaErrorIllegalAddress``.
* `launch`: ``cuLaunchKernel`` plus the host cost of whatever labkit's launch path does before
  it (numba's dispatch, from the calibration).
"""

import numpy as _np

from . import _engine, _heap, _params, _races, _work, clock
from . import _state as S

P = clock.P
host_us = clock.host_us
cpu_us = clock.cpu_us
host_work = clock.host_work
first_use = clock.first_use
start_trace = clock.start_trace
stop_trace = clock.stop_trace


# ---------------------------------------------------------------- memory

def new_alloc(nbytes: int, pinned: bool = False) -> int:
    """A new simulated allocation (what numba's device_array / pinned_array would cudaMalloc)."""
    return _heap.new_alloc(nbytes, pinned).addr


def pinned_buffer(addr: int):
    """The numpy bytes behind a simulated pinned allocation."""
    return _heap.allocs[addr].buf


def release(addr: int) -> None:
    """Free an allocation whose array was collected (numba's deferred cuMemFree, which waits
    for the work already queued). Its address is never reused, so any later use of it is seen."""
    a = _heap.allocs.get(addr)
    if a is None:
        return
    if _engine.pending():      # work queued before the free may still use it
        _engine.at(_engine.last_end(), lambda: _heap.release(a), "free")
    else:
        _heap.release(a)


def wait_for(stream: int) -> None:
    """The host waits until ``stream``'s work is done (what numba's copy back of a host array
    does after a launch), without a runtime call of its own."""
    s = S.stream(stream)
    if s is not None and s.ready_us > clock.host_us():
        clock.api("wait", 0.0, wait_until=s.ready_us)
    if s is not None:
        _races.host_saw(s.vc)


def spin() -> bool:
    """The host spins until the next piece of GPU work takes effect (a polling loop's step);
    False when nothing is queued, so nothing in memory can change any more."""
    t = _engine.next_time()
    if t is None:
        return False
    clock.spin_until(t)             # spinning: CPU time
    return True


def clear_fault() -> None:
    """Forget a sticky fault (simulator only; see `labkit.sim._engine.clear_fault`)."""
    _engine.clear_fault()


def sticky_error():
    return _engine.sticky()


kernel_access = _races.kernel_access
races = _races.found
clear_races = _races.clear
RaceWarning = _races.RaceWarning


class ArrayArg:
    """An array in a parameter block: address, shape and dtype (what numba flattens it into)."""

    __slots__ = ("addr", "shape", "dtype", "size", "nbytes", "ndim")

    def __init__(self, addr, shape, dtype):
        self.addr, self.shape, self.dtype = int(addr), tuple(shape), _np.dtype(dtype)
        self.size = int(_np.prod(self.shape)) if self.shape else 1
        self.nbytes = self.size * self.dtype.itemsize
        self.ndim = len(self.shape)

    def view(self):
        raw = _heap.view(self.addr, self.nbytes)
        return None if raw is None else raw.view(self.dtype).reshape(self.shape)

    def __repr__(self):
        return f"<array {self.shape} {self.dtype} at {self.addr:#x}>"


def array_arg(a) -> ArrayArg:
    """The `ArrayArg` of a simulated device array or of a host numpy array (whose memory the
    simulated kernel then reads and writes in place, as numba's copy there and back would)."""
    if isinstance(a, _np.ndarray):
        a = _np.ascontiguousarray(a)
        return ArrayArg(a.ctypes.data, a.shape, a.dtype)
    return ArrayArg(a.device_ctypes_pointer.value, a.shape, a.dtype)


# ---------------------------------------------------------------- kernels

def register_function(name, run, gpu_us, params=(), access=None) -> int:
    """Register a kernel; returns its function handle.

    ``params``: its parameters' names (race reports name the buffer by them); ``access``:
    ``(reads, writes)``, the names its code reads and writes (`labkit.sim._races.kernel_access`),
    or None when unknown (every array is then taken as read and as written).

    ``run(grid, block, *args)`` computes its outputs in place on numpy arrays;
    ``gpu_us(grid, block, *args)`` is its GPU time, given the parameter values (`ArrayArg` for
    arrays, which have ``nbytes``, ``size``, ``shape`` and ``dtype``).
    """
    handle = next(S.ids)
    S.functions[handle] = S.Function(name, run, gpu_us, params, access)
    return handle


def kernel_node_params(func: int, grid, block, values):
    """cuda-bindings' ``cudaKernelNodeParams`` for a registered function, its ``kernelParams`` a
    parameter block of ``values`` the simulator can read (what numba's block is on a GPU)."""
    return _params.kernel_params(func, grid, block, values)


def kernel_param_values(params) -> tuple:
    """The parameter values of a ``cudaKernelNodeParams`` the simulator built."""
    return _params.values_of(int(params.kernelParams))


def function_name(func: int) -> str | None:
    """The name a function handle was registered with (None: no such function)."""
    fn = S.functions.get(func)
    return None if fn is None else fn.name


def launch(func: int, grid, block, params: tuple, stream: int, host_cost_us: float,
           programmatic: bool = False):
    """``cuLaunchKernel`` of a registered function; the launch costs ``host_cost_us`` of host
    time in all (numba's dispatch included). ``programmatic``: ``cuLaunchKernelEx`` with
    ``CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION`` set (`labkit.sim._work.submit`).
    Returns a cudaError_t."""
    s = S.stream(stream)
    if s is None:
        return S.fail(S.E.cudaErrorInvalidResourceHandle)
    fn = S.functions.get(func)
    if fn is None:
        return S.fail(S.E.cudaErrorInvalidDeviceFunction)
    return _work.submit(s, S.NT.cudaGraphNodeTypeKernel,
                       {"func": func, "grid": grid, "block": block, "params": params,
                        "name": fn.name}, host_cost_us, f"launch {fn.name}", programmatic)


def capturing(stream: int) -> bool:
    s = S.stream(stream)
    return s is not None and s.capture is not None


def refuse_in_capture(stream: int):
    """What a GPU does when numba is given a host array inside a capture: numba's temporary
    device buffer cannot be allocated on a capturing stream (900), and the capture is
    invalidated (as when CUDA itself refuses the allocation). Returns the error."""
    S.invalidate(S.stream(stream).capture)
    return S.fail(S.E.cudaErrorStreamCaptureUnsupported)



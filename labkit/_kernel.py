"""`@labkit.kernel`, arrays and stream handles: the one place that knows how a launch is made.

On "cuda" a launch goes to numba on the given stream (an external numba stream, cached per
handle). On "sim" it goes to the simulator, which records it as a graph node while capturing
and otherwise runs the kernel's reference implementation (or numba's CUDA simulator).
"""
from __future__ import annotations

import re
import warnings

import numpy as np

from . import _hostspans, _state
from ._errors import CudaError

__all__ = ["kernel", "Kernel", "to_device", "device_array", "pinned_array", "stream_handle"]

# The course launches tiny grids on purpose (launch overhead is its subject); numba's advice
# that they under-use the GPU (a NumbaPerformanceWarning) would only be noise in its outputs.
warnings.filterwarnings("ignore", message=r"Grid size \d+ will likely result in GPU under-utilization")


def stream_handle(stream) -> int:
    """The raw handle of a labkit Stream, a cudaStream_t, or an int (0 = legacy stream)."""
    if stream is None:
        return 0
    if hasattr(stream, "handle") and not isinstance(stream, int):
        if stream.handle is None:   # a closed labkit.Stream: its old handle may be reused
            raise ValueError("the stream was closed (by close() or the end of its with block): "
                             "submit work to an open labkit.Stream")
        stream = stream.handle
    try:
        return int(stream)
    except TypeError:
        raise TypeError(f"expected a labkit.Stream, a cudaStream_t or an int, got "
                        f"{type(stream).__name__}") from None


def _dims(d) -> tuple[int, int, int]:
    d = (d,) if isinstance(d, (int, np.integer)) else tuple(d)
    if not 1 <= len(d) <= 3 or any(int(x) < 1 for x in d):
        raise ValueError(f"launch dimensions must be 1 to 3 positive ints, got {d!r}")
    return tuple(int(x) for x in d) + (1,) * (3 - len(d))


_DRIVER_ERR = re.compile(r"(CUDA_ERROR_[A-Z_]+)")


def _code_of(exc) -> int | None:
    """The CUresult code of a numba / cuda.core launch error (they share the runtime's numbers)."""
    code = getattr(exc, "code", None)
    if code is not None:
        return int(code)
    m = _DRIVER_ERR.search(str(exc))
    if m:
        from cuda.bindings import driver
        try:
            return int(getattr(driver.CUresult, m.group(1)))
        except AttributeError:
            return None
    return None


class Kernel:
    """A numba CUDA kernel launched as ``k[grid, block, stream](*args)``.

    Parameters
    ----------
    fn : function or numba dispatcher
        The kernel body (jitted with ``numba.cuda.jit`` if it is not already).
    reference : callable, optional
        ``reference(grid, block, *args)`` computing the same outputs with numpy, in place; the
        simulator uses it instead of numba's (slow) CUDA simulator. A test proves it equal to
        the kernel.
    cost : callable, optional
        ``cost(P, grid, block, *args) -> µs`` of GPU time, from the calibrated figures ``P``.
    """

    def __init__(self, fn, reference=None, cost=None):
        from numba import cuda
        self.py_func = getattr(fn, "py_func", fn)
        self.name = self.py_func.__name__
        self.dispatcher = fn if hasattr(fn, "py_func") and hasattr(fn, "__getitem__") else cuda.jit(fn)
        self.reference, self.cost = reference, cost
        self._streams = {}

    def __repr__(self):
        return f"<labkit.kernel {self.name}>"

    def __getitem__(self, config):
        if not isinstance(config, tuple) or len(config) not in (2, 3):
            raise TypeError("launch as kernel[grid, block](...) or kernel[grid, block, stream](...)")
        grid, block = _dims(config[0]), _dims(config[1])
        stream = config[2] if len(config) == 3 else 0

        def go(*args):
            rec = _hostspans.active     # a timeline is open: this launch is a span of its CPU row
            t0 = rec.now() if rec is not None else 0
            _state.launch(self, grid, block, stream, args)
            if rec is not None:
                rec.add(f"launch {self.name}", "launch", t0)
            from ._capture import current_capture
            cap = current_capture()
            if cap is not None:   # a graph refers to buffers it does not own: keep them alive
                cap.keepalive.append(args)
        return go

    def prepare(self, grid, block, stream, *args):
        """Prepare a launch once, launch it many times: see `labkit.prepare`."""
        from ._prepared import PreparedLaunch
        return PreparedLaunch(self, grid, block, stream, args)

    # ------------------------------------------------------------- the simulator's side
    def execute(self, grid, block, args):
        """Compute the kernel's outputs on the CPU (simulator only)."""
        from cuda.bindings.runtime import cudaError_t
        host = [a.host_view() if hasattr(a, "host_view") else a for a in args]
        if any(v is None for v in host):
            return cudaError_t.cudaErrorIllegalAddress
        if self.reference is not None:
            self.reference(grid, block, *host)
        else:
            self.simulate(grid, block, *host)
        return cudaError_t.cudaSuccess

    def simulate(self, grid, block, *args):
        """Run the kernel's own code under numba's CUDA simulator (numpy arrays, in place)."""
        with warnings.catch_warnings():
            # on a GPU this runs the real kernel on host arrays, copies included, on purpose
            warnings.filterwarnings("ignore", message="Host array used in CUDA kernel")
            self.dispatcher[grid, block](*args)

    def gpu_us(self, grid, block, args) -> float:
        from .sim.clock import P
        if self.cost is not None:
            return float(self.cost(P, grid, block, *args))
        nbytes = sum(int(getattr(a, "nbytes", 0)) for a in args)
        return max(P("kernel_us"), 2 * nbytes / (P("device_GBps") * 1e3))


def kernel(fn=None, *, reference=None, cost=None):
    """Decorate a numba CUDA kernel so it launches through labkit on either backend.

    Use as ``@labkit.kernel`` or ``@labkit.kernel(reference=..., cost=...)``; see `Kernel`.
    """
    if fn is None:
        return lambda f: Kernel(f, reference=reference, cost=cost)
    return Kernel(fn, reference=reference, cost=cost)


def to_device(ary, stream=0):
    """Copy a numpy array to a new device array (numba's device-array interface)."""
    rec = _hostspans.active
    t0 = rec.now() if rec is not None else 0
    out = _state.to_device(np.ascontiguousarray(ary), stream)
    if rec is not None:
        rec.add("copy to device", "api", t0)
    return out


def device_array(shape, dtype=np.float32):
    """A new uninitialised device array."""
    return _state.device_array(shape, np.dtype(dtype))


def pinned_array(shape, dtype=np.float32):
    """A page-locked host array: what ``cudaMemcpyAsync`` inside a graph should copy into."""
    return _state.pinned_array(shape, np.dtype(dtype))


def _launch_error(k, exc):
    code = _code_of(exc)
    if code is None:
        raise exc
    raise CudaError(code, f"launching {k.name}") from exc

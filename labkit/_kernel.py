"""`@labkit.kernel` and arrays: a numba kernel launched through the active backend.

``k[grid, block, stream](*args)`` costs what numba's own launch costs: the launch for each
(grid, block, stream) is made once by the backend (numba's launch configuration on a GPU) and
kept, so a repeated launch is a dictionary lookup, the backend's launch, and one integer test
for an open capture (whose graph must keep the arguments alive), all inside the backend's
launch function, which ``k[grid, block, stream]`` returns as it is.

`python_name` turns the symbol numba compiled a labkit kernel to back into its Python name, for
traces and graph drawings (no demangler: numba knows the symbols it made).
"""
from __future__ import annotations

import inspect
import warnings
import weakref

import numpy as np
from numba import cuda

from . import _host_calls
from .backends import device_array as _device_array, launcher as _launcher
from .backends import pinned_array as _pinned_array, to_device as _to_device
from .backends._numba_kernel import entry_names
from ._handles import Handle, stream_handle
from ._prepared import LaunchParams, PreparedLaunch, _dims

__all__ = ["kernel", "Kernel", "to_device", "device_array", "pinned_array", "stream_handle",
           "python_name"]

_MAX_LAUNCHERS = 64     # launch configurations kept per kernel (a loop uses one or a few)

# The course launches tiny grids on purpose (launch overhead is its subject); numba's advice
# that they under-use the GPU (a NumbaPerformanceWarning) would only be noise in its outputs.
warnings.filterwarnings("ignore", message=r"Grid size \d+ will likely result in GPU under-utilization")


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
        ``cost(P, grid, block, *args) -> µs`` of GPU time, from the calibrated figures ``P``
        (arrays arrive as the simulator's descriptions, with ``nbytes``, ``size``, ``shape``).
    """

    def __init__(self, fn, reference=None, cost=None):
        self.py_func = getattr(fn, "py_func", fn)
        self.name = self.py_func.__name__
        # The kernel's parameters, for messages that name them (a node update with too few...)
        self.param_names = tuple(inspect.signature(self.py_func).parameters)
        self.dispatcher = fn if hasattr(fn, "py_func") and hasattr(fn, "__getitem__") else cuda.jit(fn)
        self.reference, self.cost = reference, cost
        self._launches: dict = {}
        _kernels.add(self)

    def __repr__(self):
        return f"<labkit.kernel {self.name}>"

    def __getitem__(self, config):
        try:
            hit = self._launches.get(config)
        except TypeError:          # an unhashable grid or stream: work it out every time
            hit = None
        if hit is not None:
            return hit
        if not isinstance(config, tuple) or len(config) not in (2, 3):
            raise TypeError("launch as kernel[grid, block](...) or kernel[grid, block, stream](...)")
        grid, block = _dims(config[0]), _dims(config[1])
        stream = config[2] if len(config) == 3 else 0
        if type(stream).__module__.startswith("cuda.core"):
            target, owner = stream, None      # numba-cuda launches straight into cuda.core builders
        else:
            target = stream_handle(stream)
            owner = stream if isinstance(stream, Handle) else None
        launch = _launcher(self, grid, block, target, owner)
        try:
            if len(self._launches) >= _MAX_LAUNCHERS:
                self._launches.clear()
            self._launches[config] = launch
        except TypeError:
            pass
        return launch

    def prepare(self, grid, block, stream, *args, programmatic: bool = False):
        """Prepare a launch once, launch it many times: see `labkit.prepare`."""
        return PreparedLaunch(self, grid, block, stream, args, programmatic)

    def params(self, grid, block, *args) -> LaunchParams:
        """Build ``self[grid, block](*args)``'s parameter block once: see `labkit._prepared.LaunchParams`."""
        return LaunchParams(self, grid, block, args)

    def simulate(self, grid, block, *args):
        """Run the kernel's own code under numba's CUDA simulator (numpy arrays, in place)."""
        with warnings.catch_warnings():
            # on a GPU this runs the real kernel on host arrays, copies included, on purpose
            warnings.filterwarnings("ignore", message="Host array used in CUDA kernel")
            self.dispatcher[grid, block](*args)


_kernels: "weakref.WeakSet[Kernel]" = weakref.WeakSet()
_names: dict[str, str] = {}     # a compiled kernel's symbol -> its labkit kernel's Python name


def python_name(symbol: str) -> str:
    """The Python name of the labkit kernel that numba compiled to ``symbol`` (its mangled
    name, as a GPU trace or the driver reports it); ``symbol`` itself for any other kernel.

    No demangler: numba knows the symbols it compiled each kernel to, so they are looked up."""
    name = _names.get(symbol)
    if name is None:           # a symbol not seen before: look at what numba compiled since
        for k in list(_kernels):
            for entry in entry_names(k.dispatcher):
                _names[entry] = k.name
        name = _names.setdefault(symbol, symbol)   # not labkit's: as given, without a rescan
    return name


def kernel(fn=None, *, reference=None, cost=None):
    """Decorate a numba CUDA kernel so it launches through labkit on either backend.

    Use as ``@labkit.kernel`` or ``@labkit.kernel(reference=..., cost=...)``; see `Kernel`.
    """
    if fn is None:
        return lambda f: Kernel(f, reference=reference, cost=cost)
    return Kernel(fn, reference=reference, cost=cost)


def to_device(ary, stream=0):
    """Copy a numpy array to a new device array (numba's device-array interface)."""
    rec = _host_calls.active     # a timeline is open: the copy is a span of its CPU row
    t0 = rec.now() if rec is not None else 0
    out = _to_device(np.ascontiguousarray(ary), stream)
    if rec is not None:
        rec.add("copy to device", "api", t0)
    return out


def device_array(shape, dtype=np.float32):
    """A new uninitialised device array."""
    return _device_array(shape, np.dtype(dtype))


def pinned_array(shape, dtype=np.float32):
    """A page-locked host array: what ``cudaMemcpyAsync`` inside a graph should copy into."""
    return _pinned_array(shape, np.dtype(dtype))

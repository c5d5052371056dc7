"""Prepared launches: a numba kernel launched again and again without numba's dispatcher.

Each ``k[grid, block, stream](x)`` call makes numba type every argument, look up the compiled
overload, flatten each array into its fields (pointer, shape, strides, ...) and build a launch
configuration before the driver sees anything. `prepare` does all of that once and keeps the
driver's parameter block; a call is then one ``cuLaunchKernel`` with that block, about the cost
of a C++ ``<<<>>>`` launch. Arguments can be rebound to others of the same kind (same dtype,
shape and strides for arrays, same dtype for scalars); anything else is refused, never launched.

On the simulator the same checks apply and the launch costs the calibrated ``prepared_launch_us``.
"""
from __future__ import annotations

import ctypes

import numpy as np

from . import _hostspans, _state
from ._errors import CudaError

__all__ = ["prepare", "PreparedLaunch"]


def _describe(i, a):
    """What must stay the same for argument ``i`` across rebinds: a hashable description."""
    if isinstance(a, np.ndarray):
        raise TypeError(
            f"argument {i} is a host numpy array: numba would copy it to the device on every "
            "launch (and a capture cannot do that). Copy it once with labkit.to_device(...) and "
            "prepare with the device array.")
    if hasattr(a, "shape") and hasattr(a, "dtype") and hasattr(a, "device_ctypes_pointer"):
        strides = getattr(a, "strides", None)
        return ("array", np.dtype(a.dtype).str, tuple(a.shape),
                None if strides is None else tuple(strides))
    if isinstance(a, (bool, np.bool_, int, float, complex, np.number)):
        return ("scalar", np.asarray(a).dtype.str)
    raise TypeError(f"argument {i}: a prepared launch takes device arrays and numbers, "
                    f"got {type(a).__name__}")


def _explain(i, want, got) -> str:
    if want[0] != got[0]:
        return f"argument {i} was prepared as {'an array' if want[0] == 'array' else 'a number'}"
    if want[0] == "scalar":
        return (f"argument {i} was prepared as {np.dtype(want[1])} and got {np.dtype(got[1])}; "
                f"pass np.{np.dtype(want[1])}(...) or prepare again")
    for name, w, g in zip(("", "dtype", "shape", "strides"), want, got):
        if w != g:
            if name == "dtype":
                w, g = np.dtype(w), np.dtype(g)
            return f"argument {i} was prepared with {name} {w} and got {g}; prepare again for it"
    return f"argument {i} differs from what was prepared"


def _as_ctypes(v):
    """numba's flattened argument -> a ctypes object holding the bytes the kernel expects."""
    if isinstance(v, ctypes._SimpleCData):
        return v
    if isinstance(v, bool):
        return ctypes.c_bool(v)
    if isinstance(v, int):          # numba passes pointers, sizes, shapes and strides as intptr
        return ctypes.c_ssize_t(v)
    raise TypeError(f"cannot pass {type(v).__name__} to a prepared launch")


class PreparedLaunch:
    """A kernel, its launch configuration, its stream and its arguments, prepared once.

    ``p()`` launches again with the same arguments; ``p(*args)`` rebinds them first (checked
    against what was prepared) and launches. Made by `prepare` or ``Kernel.prepare``.
    """

    def __init__(self, k, grid, block, stream, args):
        from ._kernel import Kernel, _dims, stream_handle
        if not isinstance(k, Kernel):
            raise TypeError(f"prepare takes a @labkit.kernel, got {type(k).__name__}")
        self.kernel, self.grid, self.block = k, _dims(grid), _dims(block)
        self.stream = stream
        self._h = stream_handle(stream)
        self._sig = tuple(_describe(i, a) for i, a in enumerate(args))
        self.args = tuple(args)
        if _state.backend == "cuda":
            self._prepare_cuda()

    def __repr__(self):
        return (f"<labkit.PreparedLaunch {self.kernel.name}[{self.grid}, {self.block}] "
                f"on stream {self._h:#x}>")

    # -------------------------------------------------------------------- cuda
    def _prepare_cuda(self):
        from cuda.bindings import driver
        disp = self.kernel.dispatcher
        types = tuple(disp.typeof_pyval(a) for a in self.args)
        self._compiled = disp.compile(types)
        self._types = types
        self._f = driver.CUfunction(int(self._compiled._codelibrary.get_cufunc().handle))
        self._cu_stream = driver.CUstream(self._h)
        self._launch = driver.cuLaunchKernel
        self._bind_cuda(self.args)

    def _bind_cuda(self, args):
        flat, retr = [], []
        for t, v in zip(self._types, args):
            self._compiled._prepare_args(t, v, 0, retr, flat)
        if retr:   # numba would have copied something and copied it back: not a prepared launch
            raise TypeError("a prepared launch takes device arrays only; use labkit.to_device")
        self._store = [_as_ctypes(v) for v in flat]       # keeps the bytes alive
        self._ptrs = (ctypes.c_void_p * max(len(flat), 1))(
            *[ctypes.addressof(c) for c in self._store])
        self._params = ctypes.addressof(self._ptrs)

    # -------------------------------------------------------------------- both
    def rebind(self, *args):
        """Point the prepared launch at other arguments of the same kinds."""
        if len(args) != len(self._sig):
            raise TypeError(f"{self.kernel.name} was prepared with {len(self._sig)} arguments, "
                            f"got {len(args)}")
        for i, (want, a) in enumerate(zip(self._sig, args)):
            got = _describe(i, a)
            if got != want:
                raise TypeError(f"{self.kernel.name}: " + _explain(i, want, got))
        self.args = tuple(args)
        if _state.backend == "cuda":
            self._bind_cuda(self.args)

    def __call__(self, *args):
        rec = _hostspans.active        # a timeline is open: this launch is a span of its CPU row
        t0 = rec.now() if rec is not None else 0
        if args:
            self.rebind(*args)
        if _state.backend == "cuda":
            g, b = self.grid, self.block
            err, = self._launch(self._f, g[0], g[1], g[2], b[0], b[1], b[2], 0,
                                self._cu_stream, self._params, 0)
            if err:
                raise CudaError(int(err), f"prepared launch of {self.kernel.name}")
        else:
            rt = _state.rt
            err = rt.launch_kernel(self.kernel, self.grid, self.block, self._h, self.args,
                                   launch_us=rt.P("prepared_launch_us"))
            if int(err) != 0:
                raise CudaError(err, f"prepared launch of {self.kernel.name}")
        if rec is not None:
            rec.add(f"prepared {self.kernel.name}", "launch", t0)
        from ._capture import current_capture
        cap = current_capture()
        if cap is not None:    # the graph refers to these buffers: keep them alive with it
            cap.keepalive.append(self.args)


def prepare(k, grid, block, stream, *args) -> PreparedLaunch:
    """Prepare ``k[grid, block, stream](*args)`` once; call the result to launch it.

    >>> p = labkit.prepare(add_one, 4, 256, s, x)
    >>> for _ in range(200):
    ...     p()                    # one cuLaunchKernel each, no numba dispatch
    """
    return PreparedLaunch(k, grid, block, stream, args)

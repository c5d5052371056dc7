"""Launch parameters built once, and prepared launches made of them.

Each ``k[grid, block, stream](x)`` call makes numba type every argument, look up the compiled
overload, flatten each array into its fields (pointer, shape, strides, ...) and build a launch
configuration before the driver sees anything. `LaunchParams` does all of that once and keeps
the driver's parameter block (a ``CUDA_KERNEL_NODE_PARAMS`` on a GPU, the simulator's
``cudaKernelNodeParams`` on "sim"). The same block serves a prepared launch (`prepare`), a
graph node's update (`labkit.GraphExec.kernel_node`, ``set_kernel_args``) and an explicit node
add (`labkit.explicit.add_kernel_node`).

Arguments can be rebound to others of the same kind (same dtype, shape and strides for arrays,
same dtype for scalars); anything else is refused, never launched. The last few blocks of one
kernel and shape are kept, keyed by the argument objects themselves (held, so the key cannot be
reused): switching back to arguments used before costs a lookup, not a rebuild.
"""
from __future__ import annotations

import numpy as np

from . import _open_captures, _host_calls
from .backends import KernelParams as _NativeParams
from ._handles import stream_handle

__all__ = ["prepare", "PreparedLaunch", "LaunchParams", "launch_params"]

_KEPT = 8      # parameter blocks remembered per kernel and shape


def _dims(d) -> tuple[int, int, int]:
    d = (d,) if isinstance(d, (int, np.integer)) else tuple(d)
    if not 1 <= len(d) <= 3 or any(int(x) < 1 for x in d):
        raise ValueError(f"launch dimensions must be 1 to 3 positive ints, got {d!r}")
    return tuple(int(x) for x in d) + (1,) * (3 - len(d))


def _describe(i, a, k=None):
    """What must stay the same for argument ``i`` across rebinds: a hashable description."""
    if isinstance(a, np.ndarray):
        names = getattr(k, "param_names", ())
        which = f"{k.name}: argument {i}" if k is not None else f"argument {i}"
        if i < len(names):
            which += f" ({names[i]})"
        raise TypeError(
            f"{which} is a host numpy array; pass a device array: copy it once with "
            "labkit.to_device(...) and pass that. (numba would copy a host array to the device "
            "on every launch, which a prepared launch or a graph node cannot do.)")
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


def _check_count(k, args):
    """Refuse too few or too many arguments now, naming the kernel's parameters (the launch
    would fail later, deep inside numba or the simulator's reference)."""
    names = getattr(k, "param_names", None)
    if names is None or len(names) == len(args):
        return
    n = len(names)
    raise TypeError(f"{k.name}({', '.join(names)}) takes {n} argument{'s' if n != 1 else ''}, "
                    f"got {len(args)}: pass {', '.join(names) or 'nothing'} after the grid and "
                    "block")


class _Family:
    """What every rebinding of one kernel and launch shape shares: the argument kinds, and the
    blocks built so far (argument ids -> LaunchParams, which holds those arguments)."""

    def __init__(self, name, sig):
        self.name, self.sig, self.kept = name, sig, {}

    def check(self, args):
        if len(args) != len(self.sig):
            raise TypeError(f"{self.name} was prepared with {len(self.sig)} arguments, "
                            f"got {len(args)}")
        for i, (want, a) in enumerate(zip(self.sig, args)):
            got = _describe(i, a)
            if got != want:
                raise TypeError(f"{self.name}: " + _explain(i, want, got))

    def keep(self, key, lp):
        if len(self.kept) >= _KEPT:
            self.kept.pop(next(iter(self.kept)))
        self.kept[key] = lp


class LaunchParams:
    """``kernel[grid, block](*args)`` as the driver takes it, built once (cuda.core: a
    ``LaunchConfig`` with its kernel arguments).

    Made by `launch_params` (or ``Kernel.params``). ``with_args(*args)`` gives the block for
    other arguments of the same kinds (checked). It keeps ``args`` alive: it holds their
    device pointers.
    """

    __slots__ = ("kernel", "grid", "block", "args", "native", "_family")

    def __init__(self, k, grid, block, args, _family=None):
        args = tuple(args)
        if _family is None:
            if not (hasattr(k, "dispatcher") and hasattr(k, "reference")):
                raise TypeError(f"prepare takes a @labkit.kernel, got {type(k).__name__}")
            _check_count(k, args)
            grid, block = _dims(grid), _dims(block)
            _family = _Family(k.name, tuple(_describe(i, a, k) for i, a in enumerate(args)))
            _family.keep(tuple(map(id, args)), self)
        self.kernel, self.grid, self.block, self.args = k, grid, block, args
        self._family = _family
        self.native = _NativeParams(k, grid, block, args)

    def with_args(self, *args) -> "LaunchParams":
        """The same kernel and shape with other arguments of the same kinds."""
        fam = self._family
        key = tuple(map(id, args))
        hit = fam.kept.get(key)
        if hit is not None:
            return hit
        fam.check(args)
        lp = LaunchParams(self.kernel, self.grid, self.block, args, fam)
        fam.keep(key, lp)
        return lp

    def __repr__(self):
        return f"<labkit.LaunchParams {self.kernel.name}[{self.grid}, {self.block}]>"


def launch_params(k, grid, block, *args) -> LaunchParams:
    """Build ``k[grid, block](*args)``'s parameter block once (see `LaunchParams`)."""
    return LaunchParams(k, grid, block, args)


class PreparedLaunch:
    """A kernel, its launch configuration, its stream and its arguments, prepared once.

    ``p()`` launches again with the same arguments; ``p(*args)`` rebinds them first (checked
    against what was prepared) and launches. Made by `prepare` or ``Kernel.prepare``.
    ``programmatic``: each launch has programmatic stream serialization (PDL, see `prepare`).
    """

    def __init__(self, k, grid, block, stream, args, programmatic=False):
        self.params = LaunchParams(k, grid, block, args)
        self.kernel, self.grid, self.block = k, self.params.grid, self.params.block
        self.stream = stream
        self.programmatic = bool(programmatic)
        self._h = stream_handle(stream)

    @property
    def args(self):
        return self.params.args

    def __repr__(self):
        return (f"<labkit.PreparedLaunch {self.kernel.name}[{self.grid}, {self.block}] "
                f"on stream {self._h:#x}>")

    def rebind(self, *args):
        """Point the prepared launch at other arguments of the same kinds."""
        self.params = self.params.with_args(*args)

    def __call__(self, *args):
        rec = _host_calls.active        # a timeline is open: this launch is a span of its CPU row
        t0 = rec.now() if rec is not None else 0
        if args:
            self.params = self.params.with_args(*args)
        p = self.params
        if _open_captures.open_count and _open_captures.record(p.kernel, p.grid, p.block, p.args):
            return                     # the eager switch: recorded, not launched
        p.native.launch(self._h, self.programmatic)
        if rec is not None:
            rec.add(f"prepared {self.kernel.name}", "launch", t0)
        if _open_captures.open_count:   # the graph refers to these buffers: keep them alive with it
            _open_captures.keep(p.args, p.kernel)


def prepare(k, grid, block, stream, *args, programmatic: bool = False) -> PreparedLaunch:
    """Prepare ``k[grid, block, stream](*args)`` once; call the result to launch it (cuda.core:
    ``launch(stream, config, kernel, *args)`` with a ``LaunchConfig`` made once).

    >>> p = labkit.prepare(add_one, 4, 256, s, x)
    >>> for _ in range(200):
    ...     p()                    # one cuLaunchKernel each, no numba dispatch

    ``programmatic=True`` launches with programmatic stream serialization (programmatic
    dependent launch, PDL): the driver's ``cuLaunchKernelEx`` with
    ``CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION``, so the kernel may start before
    the kernel before it in the stream has ended (compute capability 9.0 and newer), and
    captured, its edge from that kernel is a programmatic edge. numba's ``k[grid, block,
    stream](...)`` cannot ask for it (numba-cuda 0.30 builds its cuda.core ``LaunchConfig``
    without the attribute), nor can cuda-bindings' runtime module (it has no
    ``cudaLaunchKernelEx``). A numba kernel cannot wait for its predecessor's writes
    (``cudaGridDependencySynchronize``): use it only where the kernel does not read what the
    kernel before it writes. Under labkit's eager switch the launch is recorded as a plain one.
    """
    return PreparedLaunch(k, grid, block, stream, args, programmatic)

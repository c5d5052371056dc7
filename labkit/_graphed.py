"""`graphed`: a function of device arrays as one CUDA graph, in the manner of PyTorch's
``torch.cuda.make_graphed_callables``.

``g = labkit.graphed(fn, *sample_args)`` where ``fn(stream, *arrays)`` launches kernels on
``stream`` and returns the device array (or tuple of arrays) it wrote. Then:

1. **Static inputs.** One device array per sample argument, same shape and dtype, allocated
   once; the samples are copied in.
2. **Warm-up on a side stream.** ``fn`` runs ``warmup`` times on a stream of its own, so numba
   compiles and loads every kernel, and whatever ``fn`` sets up on first use happens there, not
   inside the capture (as PyTorch warms up before capturing).
3. **Capture** of one call of ``fn`` on that side stream, in relaxed mode, then instantiate and
   upload. The arrays ``fn`` returns during the capture are the **static outputs**.
4. **A call** ``g(*args)`` copies each argument into its static input, replays the graph with
   one ``cudaGraphLaunch``, waits for it, and returns the static outputs: the same arrays every
   time. The next call overwrites them. Keep a result with ``out.copy_to_host()`` (or copy it
   to an array of your own) before calling again.

Memory: preallocated buffers, not graph allocation nodes. The static inputs are allocated
before the capture; the buffers ``fn`` allocates (its outputs and temporaries) are allocated
once, during the capture, as ordinary device memory (relaxed mode lets a ``cudaMalloc`` run
while capturing; it is not recorded) and kept alive with the graph. That is this callable's
private pool: its addresses are frozen into the graph's kernel nodes, and every replay reuses
them. Graph allocation nodes (a captured ``cudaMallocAsync``) would not serve here: an
allocation the graph frees itself is gone when the replay ends, so nothing could read the
output; one it does not free must be freed before the graph is launched again (or freed by the
launch, with ``cudaGraphInstantiateFlagAutoFreeOnLaunch``), so the output would be overwritten
or lost all the same, and such a graph may have only one executable at a time. PyTorch's pool
is the same idea with its caching allocator: during capture, allocations come from a pool that
only that graph (or the graphs that share the pool) uses.

A call whose argument differs from the sample in shape or dtype is refused: the graph's kernels
were captured with the sample's sizes and its buffers have the sample's size.
"""
from __future__ import annotations

import numpy as np

from ._capture import capture
from ._eager import graphs_are_eager
from ._errors import check
from ._handles import stream_handle
from .backends import rt
from ._kernel import device_array
from ._streams import Stream

__all__ = ["graphed", "Graphed"]


def _describe(a) -> str:
    return f"shape {tuple(a.shape)}, dtype {np.dtype(a.dtype)}"


def _is_array(a) -> bool:
    return hasattr(a, "shape") and hasattr(a, "dtype")


class Graphed:
    """What `graphed` returns: call it like ``fn`` without the stream.

    Attributes
    ----------
    static_inputs : tuple of device arrays
        The buffers each call copies its arguments into.
    static_outputs : device array or tuple of them
        What each call returns; overwritten by the next call.
    exec : labkit.GraphExec
        The instantiated graph a call replays.
    stream : labkit.Stream
        The side stream of the warm-up, the capture and every replay.
    """

    def __init__(self, fn, sample_args, warmup: int = 3, stream=None):
        if not callable(fn):
            raise TypeError("graphed(fn, *sample_args): fn must be callable, "
                            f"got {type(fn).__name__}")
        if not sample_args:
            raise ValueError("graphed(fn, *sample_args) needs at least one sample argument: the "
                             "shapes and dtypes the graph is captured for")
        for i, a in enumerate(sample_args):
            if not _is_array(a):
                raise TypeError(f"sample argument {i} is a {type(a).__name__}, not an array: "
                                "pass numpy or device arrays (a number would be frozen into "
                                "the graph; put it in a one-element array instead)")
        if int(warmup) < 1:
            raise ValueError(f"warmup must be at least 1 (kernels compile and load there, not "
                             f"in the capture), got {warmup}")
        self.fn = fn
        self.stream = stream if stream is not None else Stream()
        self._spec = [(tuple(a.shape), np.dtype(a.dtype)) for a in sample_args]
        self.static_inputs = tuple(device_array(shape, dtype) for shape, dtype in self._spec)
        self._copy_in(sample_args)
        for _ in range(int(warmup)):
            fn(self.stream, *self.static_inputs)
        self.stream.synchronize()
        with capture(self.stream, mode="relaxed") as cap:
            out = fn(self.stream, *self.static_inputs)
        single = _is_array(out)
        if not single and not isinstance(out, (tuple, list)):
            raise TypeError(f"fn returned {type(out).__name__}: return the device array (or a "
                            "tuple of the device arrays) its kernels write")
        outs = (out,) if single else tuple(out)
        for i, o in enumerate(outs):
            if not _is_array(o):
                raise TypeError(f"fn returned {type(o).__name__} as output {i}: return the "
                                "device array(s) the kernels write")
        self.static_outputs = out if single else outs
        self.graph = cap.graph
        self.exec = self.graph.instantiate()
        self.exec.upload(self.stream)
        self.stream.synchronize()
        self.calls = 0

    def _copy_in(self, args) -> None:
        if len(args) != len(self._spec):
            raise TypeError(f"this graphed callable takes {len(self._spec)} argument(s), like its "
                            f"samples; got {len(args)}")
        for i, (a, (shape, dtype)) in enumerate(zip(args, self._spec)):
            if not _is_array(a):
                raise TypeError(f"argument {i} is a {type(a).__name__}, not an array of "
                                f"shape {shape}, dtype {dtype}")
            if tuple(a.shape) != shape or np.dtype(a.dtype) != dtype:
                raise ValueError(
                    f"argument {i} has {_describe(a)}, but the graph was captured for "
                    f"shape {shape}, dtype {dtype}: a graph's kernels and buffers are frozen at "
                    "capture. Pad or convert the input to the sample's shape and dtype, or make "
                    "another graphed callable from a sample of this shape (one graph per shape)")
        # Copies on the graph's own stream, so the replay after them is ordered after them
        # (a synchronous copy on the legacy stream would not order a non-blocking stream's
        # work). From pageable memory the call returns once the data is staged, so the caller
        # may reuse its array at once.
        h = stream_handle(self.stream)
        for a, dst in zip(args, self.static_inputs):
            if isinstance(a, np.ndarray):
                src = np.ascontiguousarray(a)
                ptr, kind = src.ctypes.data, rt.cudaMemcpyKind.cudaMemcpyHostToDevice
            else:                          # a device array: one device-to-device copy
                ptr = a.device_ctypes_pointer.value
                kind = rt.cudaMemcpyKind.cudaMemcpyDeviceToDevice
            check(rt.cudaMemcpyAsync(dst.device_ctypes_pointer.value, ptr, dst.nbytes, kind, h),
                  "cudaMemcpyAsync (an argument into its static input)")

    def __call__(self, *args):
        """Copy ``args`` into the static inputs, replay, wait; return the static outputs.

        With the eager switch on (``LABKIT_GRAPHS=eager``, `labkit.eager`), ``fn`` itself runs
        on the static inputs instead of the replay, and what it returns is returned."""
        self._copy_in(args)
        if graphs_are_eager():
            out = self.fn(self.stream, *self.static_inputs)
        else:
            self.exec.launch(self.stream)
            out = self.static_outputs
        self.stream.synchronize()
        self.calls += 1
        return out

    def __repr__(self):
        ins = ", ".join(f"{s}:{d}" for s, d in self._spec)
        return (f"<labkit.graphed {getattr(self.fn, '__name__', 'fn')}({ins}): "
                f"{len(self.graph.kernel_nodes())} kernel nodes, {self.calls} calls>")


def graphed(fn, *sample_args, warmup: int = 3, stream=None) -> Graphed:
    """Capture ``fn(stream, *sample_args)`` into a graph and return a callable that replays it.

    Parameters
    ----------
    fn : callable
        ``fn(stream, *arrays)`` launches its kernels on ``stream`` and returns the device
        array(s) they write. It must launch the same kernels for any input values (what runs
        may depend on shapes, which the graph fixes, never on values read on the host).
    *sample_args : arrays
        numpy or device arrays: the shapes and dtypes every later call must match.
    warmup : int
        Uncaptured calls on the side stream before the capture (PyTorch's default is also 3).
    stream : labkit.Stream, optional
        The stream to warm up, capture and replay on; a new one by default.

    Returns
    -------
    Graphed
        ``g(*args)`` returns ``g.static_outputs``, overwritten by the next call.
    """
    return Graphed(fn, sample_args, warmup=warmup, stream=stream)

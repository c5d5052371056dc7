"""`capture`: stream capture as a context manager that always ends the capture, and `fork`."""
from __future__ import annotations

import contextlib

from . import _open_captures, _host_calls, _nvtx
from ._errors import CudaError, check
from ._eager import EagerGraph, graphs_are_eager
from ._graph import Graph
from ._handles import stream_handle
from ._streams import Event
from .backends import frees_held, rt

__all__ = ["capture", "fork", "Capture", "current_capture", "CAPTURE_MODES"]

# The capture modes by name: the one table (conditional.py and the course use it too).
CAPTURE_MODES = {
    "global": rt.cudaStreamCaptureMode.cudaStreamCaptureModeGlobal,
    "thread_local": rt.cudaStreamCaptureMode.cudaStreamCaptureModeThreadLocal,
    "relaxed": rt.cudaStreamCaptureMode.cudaStreamCaptureModeRelaxed,
}


class Capture:
    """What ``with labkit.capture(stream) as cap`` gives: ``cap.graph`` once the block ends."""

    def __init__(self, stream, mode):
        self.stream, self.mode = stream, mode
        self._graph, self._open = None, False
        self.first_error: CudaError | None = None
        self.keepalive: list = []
        self.launched: dict = {}     # kernel -> argument tuples launched with (see _open_captures.keep)
        self.recorded: list | None = None   # the eager switch: the launches recorded instead

    @property
    def graph(self):
        """The captured `labkit.Graph`; it exists once the with-block has ended."""
        if self._open:
            raise RuntimeError("cap.graph does not exist yet: the graph is made when the "
                               "`with labkit.capture(...) as cap:` block ends. Use cap.graph "
                               "after the block (unindent the line)")
        return self._graph


@contextlib.contextmanager
def capture(stream, mode: str = "global"):
    """Capture the work submitted to ``stream`` into a `labkit.Graph` (cuda.core: a
    ``GraphBuilder`` from ``stream.create_graph_builder()``, ``begin_building()`` …
    ``end_building()``).

    Parameters
    ----------
    stream : labkit.Stream or cudaStream_t
        A stream you created (the legacy NULL stream cannot be captured).
    mode : {"global", "thread_local", "relaxed"}
        Which potentially unsafe calls (allocations, synchronizing calls) are refused while
        the capture is open.

    The capture is always ended, also when the block raises, so the stream is never left
    capturing. A Python exception from the block propagates unchanged; if the capture was
    invalidated, a `CudaError` names the first failing call.

    With the eager switch on (``LABKIT_GRAPHS=eager``, see `labkit.eager`) nothing is
    captured: the block's labkit launches are recorded, and ``cap.graph`` is a
    `labkit._eager.EagerGraph` whose executable makes them at each launch.
    """
    if mode not in CAPTURE_MODES:
        raise ValueError(f"mode must be one of {sorted(CAPTURE_MODES)}, got {mode!r}")
    if graphs_are_eager():
        yield from _record(stream, mode)
        return
    h = stream_handle(stream)
    if h in (0, 1):
        # the same error and hint as the raw cudaStreamBeginCapture(0, ...) through check()
        raise CudaError(rt.cudaError_t.cudaErrorStreamCaptureUnsupported,
                        "cudaStreamBeginCapture on the legacy NULL stream")
    rt.cudaGetLastError()   # start clean, so a later error is this capture's own
    # numba must not free device memory (cuMemFree) while the capture is open: see frees_held
    with _nvtx.phase("capture"), frees_held():
        err, = rt.cudaStreamBeginCapture(h, CAPTURE_MODES[mode])
        if int(err):
            _refuse_begin(err, h)
        cap = Capture(stream, mode)
        cap._open = True
        stack = _open_captures.push(cap)
        body_error = None
        try:
            yield cap
        except BaseException as e:
            body_error = e
            if isinstance(e, CudaError) and cap.first_error is None:
                cap.first_error = e
            raise
        finally:
            _open_captures.pop(stack)
            cap._open = False
            first = rt.cudaGetLastError()[0]
            err, graph = rt.cudaStreamEndCapture(h)
            if int(err) == 0:
                cap._graph = Graph(graph, keepalive=cap.keepalive, launched=cap.launched)
            elif body_error is None:
                cause = cap.first_error
                if cause is None and int(first) not in (0, int(err)):
                    cause = CudaError(first)
                where = f"; the first failing call was: {cause}" if cause else ""
                raise CudaError(err, f"cudaStreamEndCapture{where}") from cause


def _record(stream, mode):
    """The eager switch's capture: record the block's labkit launches, submit nothing."""
    stream_handle(stream)                  # a closed stream is refused as in a capture
    cap = Capture(stream, mode)
    cap.recorded, cap._open = [], True
    stack = _open_captures.push(cap)
    try:
        yield cap
    finally:
        _open_captures.pop(stack)
        cap._open = False
        cap._graph = EagerGraph(cap.recorded, keepalive=cap.keepalive, launched=cap.launched)


def _refuse_begin(err, h):
    """cudaStreamBeginCapture failed: say why where CUDA's 401 alone would not."""
    rt.cudaGetLastError()      # the error is reported here; the outer capture is still fine
    status = rt.cudaStreamIsCapturing(h)
    if int(status[0]) == 0 and int(status[1]) != 0:
        raise CudaError(err, "cudaStreamBeginCapture: this stream is already capturing (an "
                             "outer labkit.capture on it is still open)",
                        hint="captures do not nest on one stream: end the outer capture first "
                             "(leave its with block), or capture on another labkit.Stream")
    raise CudaError(err, "cudaStreamBeginCapture")


def current_capture():
    """The innermost `labkit.capture` open in this thread, or None."""
    return _open_captures.current()


@contextlib.contextmanager
def fork(origin, *streams, timing: bool = False):
    """Fork ``streams`` off ``origin`` and join them back when the block ends.

    Inside a capture this is how several streams become branches of one graph: an event
    recorded on the origin is waited on by each side stream (the fork); at the end an event
    recorded on each side stream is waited on by the origin (the join).
    """
    o = stream_handle(origin)
    rec = _host_calls.active       # a timeline is open: the fork and the join are CPU spans
    t0 = rec.now() if rec is not None else 0
    start = Event(timing=timing)
    check(rt.cudaEventRecord(start.handle, o), "fork: cudaEventRecord on the origin")
    for s in streams:
        check(rt.cudaStreamWaitEvent(stream_handle(s), start.handle, 0), "fork: cudaStreamWaitEvent")
    if rec is not None:
        rec.add("fork", "api", t0)
    joins = []
    try:
        yield streams
    finally:
        t0 = rec.now() if rec is not None else 0
        for s in streams:
            e = Event(timing=timing)
            joins.append(e)
            err = rt.cudaEventRecord(e.handle, stream_handle(s))[0]
            if int(err) == 0:
                rt.cudaStreamWaitEvent(o, e.handle, 0)
        for e in joins + [start]:
            e.close()
        if rec is not None:
            rec.add("join", "api", t0)

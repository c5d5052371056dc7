"""`Stream` and `Event`: thin owners of a non-blocking stream and an event."""
from __future__ import annotations

from . import _host_calls
from ._errors import check
from ._handles import Handle, stream_handle
from .backends import rt

__all__ = ["Stream", "Event", "synchronize"]


class Stream(Handle):
    """A non-blocking CUDA stream (never the legacy NULL stream, which cannot be captured);
    cuda.core's ``Stream``.

    ``int(stream)`` and ``stream.handle`` give the raw handle for ``labkit.rt`` calls. Close it
    with ``close()`` or use it as a context manager.
    """

    _what = "stream"

    def __init__(self, nonblocking: bool = True):
        flags = rt.cudaStreamNonBlocking if nonblocking else rt.cudaStreamDefault
        self.handle = check(rt.cudaStreamCreateWithFlags(flags), "creating a stream")

    def _destroy(self, handle):
        check(rt.cudaStreamDestroy(handle), "destroying a stream")

    def synchronize(self):
        # A closed stream's handle is None, which CUDA reads as the legacy stream: refuse it here.
        rec = _host_calls.active
        t0 = rec.now() if rec is not None else 0
        check(rt.cudaStreamSynchronize(self._open()), "synchronizing a stream")
        if rec is not None:
            rec.add("cudaStreamSynchronize", "sync", t0)

    def is_capturing(self) -> bool:
        status = check(rt.cudaStreamIsCapturing(self._open()))
        return int(status) != 0

    def __repr__(self):
        return f"<labkit.Stream {int(self.handle) if self.handle is not None else 'closed'}>"


class Event(Handle):
    """A CUDA event (cuda.core's ``Event``); ``timing=False`` makes the cheaper kind used only
    for dependencies."""

    _what = "event"

    def __init__(self, timing: bool = True):
        flags = rt.cudaEventDefault if timing else rt.cudaEventDisableTiming
        self.handle = check(rt.cudaEventCreateWithFlags(flags), "creating an event")

    def _destroy(self, handle):
        check(rt.cudaEventDestroy(handle), "destroying an event")

    def record(self, stream):
        rec = _host_calls.active
        t0 = rec.now() if rec is not None else 0
        check(rt.cudaEventRecord(self._open(), stream_handle(stream)), "recording an event")
        if rec is not None:
            rec.add("cudaEventRecord", "api", t0)
        return self

    def synchronize(self):
        rec = _host_calls.active
        t0 = rec.now() if rec is not None else 0
        check(rt.cudaEventSynchronize(self._open()), "synchronizing an event")
        if rec is not None:
            rec.add("cudaEventSynchronize", "sync", t0)

    def elapsed_ms(self, later: "Event") -> float:
        """Milliseconds from this event to ``later`` (both recorded and complete)."""
        return check(rt.cudaEventElapsedTime(self._open(), later._open()), "timing events")


def synchronize():
    """Wait for all work on the device (``cudaDeviceSynchronize``)."""
    rec = _host_calls.active
    t0 = rec.now() if rec is not None else 0
    check(rt.cudaDeviceSynchronize(), "synchronizing the device")
    if rec is not None:
        rec.add("cudaDeviceSynchronize", "sync", t0)

"""Streams and events of the simulated runtime, and host functions launched into a stream."""
from __future__ import annotations

import ctypes

from cuda.bindings import runtime as _cr

from . import _device, _heap, _pools
from . import _state as S
from . import _races, _work
from . import clock as _clock

E, P, NT = S.E, S.P, S.NT
_ACTIVE = S.STATUS.cudaStreamCaptureStatusActive


# ---------------------------------------------------------------- streams

def _create_stream(flags, priority=0):
    h = next(S.ids)
    S.streams[h] = S.Stream(h, int(flags), priority)
    _clock.api("cudaStreamCreate", P("api_us"))
    return E.cudaSuccess, _cr.cudaStream_t(h)


def cudaStreamCreate():
    return _create_stream(0)


def cudaStreamCreateWithFlags(flags):
    return _create_stream(flags)


def cudaStreamCreateWithPriority(flags, priority):
    """A stream with a priority, clamped to `cudaDeviceGetStreamPriorityRange`'s (as CUDA
    documents). The simulator's clock does not model priorities between streams (kernels on
    different streams overlap fully); a kernel captured from the stream takes its priority as
    its node's priority attribute, which an executable instantiated with
    ``cudaGraphInstantiateFlagUseNodePriority`` uses (`labkit.sim._exec`)."""
    _, least, greatest = _device.cudaDeviceGetStreamPriorityRange()
    return _create_stream(flags, min(max(int(priority), greatest), least))


def cudaStreamGetPriority(hStream):
    s = S.stream(hStream)
    if s is None:
        return (S.fail(E.cudaErrorInvalidResourceHandle), None)
    return E.cudaSuccess, s.priority


def cudaStreamDestroy(stream):
    s = S.stream(stream)
    if s is None or s.handle in (0, S.LEGACY, S.PER_THREAD):
        return (S.fail(E.cudaErrorInvalidResourceHandle),)
    s.destroyed = True
    return S.OK


def cudaStreamGetFlags(hStream):
    s = S.stream(hStream)
    if s is None:
        return (S.fail(E.cudaErrorInvalidResourceHandle), None)
    return E.cudaSuccess, s.flags


def _stream_check(s):
    """A synchronize or query of ``s``: its own capture refuses it (900, invalidated), and so
    does any capture that forbids the call (non-blocking streams too: H200). None: go ahead."""
    if s is None:
        return S.fail(E.cudaErrorInvalidResourceHandle)
    if s.capture is not None:
        S.invalidate(s.capture)
        return S.fail(E.cudaErrorStreamCaptureUnsupported)
    return S.refuse_unsafe()


def cudaStreamSynchronize(stream):
    s = S.stream(stream)
    err = _stream_check(s)
    if err is not None:
        return (err,)
    _clock.api("cudaStreamSynchronize", P("sync_us"), wait_until=s.ready_us)
    _races.host_saw(s.vc)
    _pools.on_sync()
    return S.OK


def cudaStreamQuery(stream):
    s = S.stream(stream)
    err = _stream_check(s)
    if err is not None:
        return (err,)
    _clock.api("cudaStreamQuery", P("api_us"))
    if s.ready_us > _clock.host_us():
        return (E.cudaErrorNotReady,)
    _races.host_saw(s.vc)
    return S.OK


def cudaLaunchHostFunc(stream, fn, userData):
    s = S.stream(stream)
    if s is None:
        return (S.fail(E.cudaErrorInvalidResourceHandle),)
    return (_work.submit(s, NT.cudaGraphNodeTypeHost,
                         {"name": "host function", "fn": int(fn), "data": int(userData or 0)},
                         P("api_us"), "cudaLaunchHostFunc"),)


def cudaStreamAddCallback(stream, callback, userData, flags):
    # CUDA's older host callback: called with (stream, status, userData) in stream order; flags
    # must be 0, and a capturing stream refuses it (cudaLaunchHostFunc is what a graph takes).
    # Called now: data is computed in host program order, one valid order of the stream
    s = S.stream(stream)
    if s is None:
        return (S.fail(E.cudaErrorInvalidResourceHandle),)
    if int(flags) != 0:
        return (S.fail(E.cudaErrorInvalidValue),)
    if s.capture is not None:
        S.invalidate(s.capture)
        return (S.fail(E.cudaErrorStreamCaptureUnsupported),)
    fn = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p)(S.h(callback))
    _clock.api("cudaStreamAddCallback", P("api_us"))
    fn(s.handle or None, 0, _heap.ptr(userData) or None)
    return S.OK


# ---------------------------------------------------------------- events

def _create_event(flags):
    h = next(S.ids)
    S.events[h] = S.Event(int(flags))
    _clock.api("cudaEventCreate", P("api_us"))
    return E.cudaSuccess, _cr.cudaEvent_t(h)


def cudaEventCreate():
    return _create_event(0)


def cudaEventCreateWithFlags(flags):
    return _create_event(flags)


def cudaEventDestroy(event):
    e = S.event(event)
    if e is None:
        return (S.fail(E.cudaErrorInvalidResourceHandle),)
    e.destroyed = True
    return S.OK


def cudaEventRecord(event, stream):
    e, s = S.event(event), S.stream(stream)
    if e is None or s is None:
        return (S.fail(E.cudaErrorInvalidResourceHandle),)
    if s.capture is not None:
        if s.capture.status != _ACTIVE:
            return (S.fail(E.cudaErrorStreamCaptureInvalidated),)
        e.captured, e.time_us = (s.capture, list(s.deps)), None
        return S.OK
    _clock.api("cudaEventRecord", P("api_us") + _clock.first_use("event_first_use", S.h(event))
               + _clock.first_use("stream_first_use", s.handle))
    e.captured = None
    e.time_us = max(s.ready_us, _work.ordered_start(s, _clock.host_us()))
    s.ready_us = e.time_us
    e.vc = dict(_work.stamp(s)[2])
    return S.OK


def cudaEventRecordWithFlags(event, stream, flags=0):
    if int(flags) & ~int(_cr.cudaEventRecordExternal):
        return (S.fail(E.cudaErrorInvalidValue),)
    if int(flags):
        raise NotImplementedError("cudaEventRecordWithFlags(cudaEventRecordExternal) is not "
                                  "simulated (backend 'sim'): an external event node")
    return cudaEventRecord(event, stream)


def _event_check(e):
    if e is None:
        return S.fail(E.cudaErrorInvalidResourceHandle)
    err = S.captured_event_error(e)
    return err if err is not None else S.refuse_unsafe()


def cudaEventQuery(event):
    e = S.event(event)
    err = _event_check(e)
    if err is not None:
        return (err,)
    _clock.api("cudaEventQuery", P("api_us"))
    if e.time_us is None or e.time_us <= _clock.host_us():
        _races.host_saw(e.vc)
        return S.OK
    return (E.cudaErrorNotReady,)


def cudaEventSynchronize(event):
    e = S.event(event)
    err = _event_check(e)
    if err is not None:
        return (err,)
    # a cudaEventBlockingSync event lets the thread sleep instead of spinning; if it really
    # sleeps (the GPU is not done yet) it wakes blocking_sync_wake_us after the GPU is, and the
    # wake-up costs the host blocking_sync_cpu_us (both measured: labkit.course.decode_costs)
    blocking = bool(e.flags & _cr.cudaEventBlockingSync)
    done_at = e.time_us or 0.0
    if blocking and done_at > _clock.host_us() + P("sync_us"):
        _clock.api("cudaEventSynchronize", P("sync_us") + P("blocking_sync_cpu_us"),
                   wait_until=done_at + P("blocking_sync_wake_us"), spin=False)
    else:
        _clock.api("cudaEventSynchronize", P("sync_us"), wait_until=done_at, spin=not blocking)
    _races.host_saw(e.vc)
    _pools.on_sync()
    return S.OK


def cudaEventElapsedTime(start, end):
    a, b = S.event(start), S.event(end)
    if a is None or b is None or a.time_us is None or b.time_us is None:
        return (S.fail(E.cudaErrorInvalidResourceHandle), None)
    if (a.flags | b.flags) & _cr.cudaEventDisableTiming:
        return (S.fail(E.cudaErrorInvalidResourceHandle), None)
    if max(a.time_us, b.time_us) > _clock.host_us():
        return (E.cudaErrorNotReady, None)
    return E.cudaSuccess, (b.time_us - a.time_us) / 1000.0


def cudaStreamWaitEvent(stream, event, flags=0):
    s, e = S.stream(stream), S.event(event)
    if s is None or e is None:
        return (S.fail(E.cudaErrorInvalidResourceHandle),)
    _clock.api("cudaStreamWaitEvent", P("api_us"))
    if e.captured is not None and e.captured[0].status == _ACTIVE:
        cap, deps = e.captured
        if s.capture is None:            # the fork: s joins the capture
            s.capture, s.deps = cap, list(deps)
            cap.streams.add(s)
        elif s.capture is cap:
            s.deps = list(dict.fromkeys(s.deps + deps))
        else:
            S.invalidate(s.capture)
            S.invalidate(cap)
            return (S.fail(E.cudaErrorStreamCaptureMerge),)
        return S.OK
    if s.capture is not None:            # a wait on work outside the capture
        S.invalidate(s.capture)
        return (S.fail(E.cudaErrorStreamCaptureIsolation),)
    if e.time_us is not None:
        s.ready_us = max(s.ready_us, e.time_us)
    s.vc = _races.join(s.vc, e.vc)
    return S.OK

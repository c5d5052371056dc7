"""The simulator's per-thread state, and the stream-capture rules that read it.

What the H200 showed (tests/conformance/capture_modes_h200.json; every cell is a conformance
test) and CUDA documents:

* Every thread has a capture-interaction mode, global until it calls
  ``cudaThreadExchangeStreamCaptureMode``, which sets it and returns the previous one. A new
  thread starts in global, whatever the thread that made it had set.
* A *potentially unsafe* call (cudaMalloc, cudaFree, cudaMallocHost, cudaFreeHost,
  cudaMallocAsync / cudaFreeAsync on a stream that is not capturing, a synchronize or query of
  a stream or an event outside the capture, cudaGraphInstantiate) fails
  ``cudaErrorStreamCaptureUnsupported`` and invalidates the capture that forbids it. A capture
  forbids it unless it was begun relaxed, and only where the calling thread began it, or the
  capture is global and the thread's mode is global. A thread in relaxed mode is forbidden
  nothing. (A thread in thread-local mode, exempt from other threads' global captures, follows
  CUDA's documentation: the probe sets only relaxed and global.)
* Calls about the capture itself fail in every mode and from every thread: a synchronize or
  query of the capturing stream (900), of an event recorded in the capture (907), and
  ``cudaDeviceSynchronize`` (900). The call's own module checks those (`labkit.sim._streams`,
  `labkit.sim._device`); every potentially unsafe call goes through
  `labkit.sim._state.refuse_unsafe`.
* ``cudaStreamEndCapture`` of a global or thread-local capture from a thread other than the one
  that began it fails ``cudaErrorStreamCaptureWrongThread`` and ends the capture without a
  graph (the origin's own end then finds nothing: 401); a relaxed capture ends from any thread.
* ``cudaGetLastError`` and ``cudaPeekAtLastError`` are per thread: an error made in another
  thread is that thread's, not the capturing thread's.
"""
from __future__ import annotations

import threading

from cuda.bindings import runtime as _cr

_E = _cr.cudaError_t
_M = _cr.cudaStreamCaptureMode
_local = threading.local()


# ---------------------------------------------------------------- the thread's last error

def last_error():
    """The calling thread's last error (cudaPeekAtLastError)."""
    return getattr(_local, "error", _E.cudaSuccess)


def take_last_error():
    """The calling thread's last error, reset to success (cudaGetLastError)."""
    err, _local.error = last_error(), _E.cudaSuccess
    return err


def set_last_error(code):
    _local.error = code


# ---------------------------------------------------------------- the thread's capture mode

def thread_mode():
    """The calling thread's capture-interaction mode."""
    return getattr(_local, "mode", _M.cudaStreamCaptureModeGlobal)


def exchange_mode(mode):
    """Set the calling thread's mode; ``(cudaSuccess, previous)``, or cudaErrorInvalidValue
    for a value that is no cudaStreamCaptureMode (the thread's mode is then unchanged)."""
    try:
        new = _M(int(mode))
    except (TypeError, ValueError):
        set_last_error(_E.cudaErrorInvalidValue)
        return _E.cudaErrorInvalidValue, None
    old, _local.mode = thread_mode(), new
    return _E.cudaSuccess, old


# ---------------------------------------------------------------- the rules

def forbidding_capture(captures):
    """Of the open ``captures`` (objects with ``mode`` and ``thread``), the one that forbids a
    potentially unsafe call from the calling thread; None where the call is allowed."""
    mine = thread_mode()
    if mine == _M.cudaStreamCaptureModeRelaxed:
        return None
    me = threading.get_ident()
    for c in captures:
        if c.mode == _M.cudaStreamCaptureModeRelaxed:
            continue
        if c.thread == me or (c.mode == _M.cudaStreamCaptureModeGlobal
                              and mine == _M.cudaStreamCaptureModeGlobal):
            return c
    return None


def may_end(capture) -> bool:
    """Whether the calling thread may end ``capture``: its own, or a relaxed one."""
    return (capture.mode == _M.cudaStreamCaptureModeRelaxed
            or capture.thread == threading.get_ident())

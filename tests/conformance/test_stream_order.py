"""Conformance: the order CUDA gives work on different streams, seen through event times.

NOT PROBED on the H200 yet: these follow CUDA's "Stream synchronization behavior" and
cudaGraphLaunch's documentation; the GPU issue runs this file there. One long kernel (a large
array, tens of µs on an H200) keeps a stream busy while the host queues the next work.

* work on the legacy default stream (0) waits for earlier work on blocking streams, the
  per-thread default stream among them, and not for non-blocking streams;
* work on a blocking stream waits for earlier work on the legacy stream;
* launches of one executable run one after another, even on two streams;
* a wait on an event orders work across streams.
"""
from __future__ import annotations

import labkit  # noqa: F401  (before numba.cuda)
import numpy as np
import pytest
from labkit import rt

from kernels import add_one

E = rt.cudaError_t
OK = (E.cudaSuccess,)
BIG = 32 * 1024 * 1024           # float32: 128 MiB, one add_one pass of tens of µs
BLOCK = 256
PER_THREAD = 2


@pytest.fixture(scope="module")
def big():
    return labkit.to_device(np.zeros(BIG, np.float32))


def long_kernel(x, stream):
    add_one[BIG // BLOCK, BLOCK, stream](x)


def small_op(stream, scratch):
    assert rt.cudaMemsetAsync(scratch.device_ctypes_pointer.value, 0, 4, stream) == OK


def record(res, stream):
    e = res.event()
    assert rt.cudaEventRecord(e, stream) == OK
    return e


def ms(a, b):
    assert rt.cudaDeviceSynchronize() == OK
    err, t = rt.cudaEventElapsedTime(a, b)
    assert err == E.cudaSuccess
    return t


@pytest.mark.parametrize("kind", ["blocking", "per-thread"])
def test_legacy_stream_work_waits_for_earlier_work_on_a_blocking_stream(res, big, kind):
    s = res.stream(nonblocking=False) if kind == "blocking" else PER_THREAD
    scratch = labkit.to_device(np.zeros(4, np.float32))
    start = record(res, s)
    long_kernel(big, s)
    busy_end = record(res, s)
    small_op(0, scratch)
    legacy_end = record(res, 0)
    assert ms(busy_end, legacy_end) >= 0.0
    assert ms(start, legacy_end) >= ms(start, busy_end)


def test_legacy_stream_work_does_not_wait_for_a_non_blocking_stream(res, big):
    s = res.stream(nonblocking=True)
    scratch = labkit.to_device(np.zeros(4, np.float32))
    long_kernel(big, s)
    busy_end = record(res, s)
    small_op(0, scratch)
    legacy_end = record(res, 0)
    assert ms(busy_end, legacy_end) < 0.0      # done while the kernel still ran


def test_blocking_stream_work_waits_for_earlier_legacy_stream_work(res, big):
    s = res.stream(nonblocking=False)
    scratch = labkit.to_device(np.zeros(4, np.float32))
    long_kernel(big, 0)
    legacy_end = record(res, 0)
    small_op(s, scratch)
    after = record(res, s)
    assert ms(legacy_end, after) >= 0.0


def test_launches_of_one_executable_run_one_after_another_on_two_streams(res, big):
    s1, s2, cap = res.stream(), res.stream(), res.stream()
    glob = rt.cudaStreamCaptureMode.cudaStreamCaptureModeGlobal
    assert rt.cudaStreamBeginCapture(cap, glob) == OK
    long_kernel(big, cap)
    err, g = rt.cudaStreamEndCapture(cap)
    res.graph(g)
    err, ge = rt.cudaGraphInstantiate(g, 0)
    res.exec(ge)
    assert rt.cudaGraphLaunch(ge, s1) == OK and rt.cudaStreamSynchronize(s1) == OK   # warm
    t0 = record(res, s1)
    assert rt.cudaGraphLaunch(ge, s1) == OK
    end1 = record(res, s1)
    assert rt.cudaGraphLaunch(ge, s2) == OK
    end2 = record(res, s2)
    one = ms(t0, end1)
    assert ms(end1, end2) >= 0.8 * one     # the second ran after the first, not beside it


def test_a_stream_waiting_on_an_event_runs_after_the_recorded_work(res, big):
    s1, s2 = res.stream(), res.stream()
    scratch = labkit.to_device(np.zeros(4, np.float32))
    long_kernel(big, s1)
    done = record(res, s1)
    assert rt.cudaStreamWaitEvent(s2, done, 0) == OK
    small_op(s2, scratch)
    after = record(res, s2)
    assert ms(done, after) >= 0.0


def test_each_host_thread_has_its_own_per_thread_stream(res):
    """cudaStreamPerThread names the calling thread's stream: another thread's is not the one
    capturing here, and it can capture at the same time."""
    import threading
    relaxed = rt.cudaStreamCaptureMode.cudaStreamCaptureModeRelaxed
    none = rt.cudaStreamCaptureStatus.cudaStreamCaptureStatusNone
    assert rt.cudaStreamBeginCapture(PER_THREAD, relaxed) == OK
    seen = {}

    def other():
        seen["status"] = rt.cudaStreamIsCapturing(PER_THREAD)
        seen["begin"] = rt.cudaStreamBeginCapture(PER_THREAD, relaxed)
        err, g = rt.cudaStreamEndCapture(PER_THREAD)
        seen["end"] = err
        if err == E.cudaSuccess:
            rt.cudaGraphDestroy(g)
    t = threading.Thread(target=other)
    t.start()
    t.join()
    err, g = rt.cudaStreamEndCapture(PER_THREAD)
    res.graph(g)
    assert err == E.cudaSuccess
    assert seen == {"status": (E.cudaSuccess, none), "begin": OK, "end": E.cudaSuccess}

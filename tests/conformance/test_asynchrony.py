"""Conformance: work runs after the call that queued it, in CUDA's order, and what the host or
another stream reads is what has taken effect by then.

From CUDA's "Asynchronous Concurrent Execution" and "Stream synchronization behavior": a kernel
launch and a ``cudaMemcpyAsync`` return before the work is done; work on the legacy default
stream waits for blocking streams (and they for it), never for non-blocking streams; an event
waited for orders work across streams; a synchronizing call returns an earlier launch's fault.
One long kernel (`busy`: one warp adding 1.0 in a register, then one store, so nothing reaches
memory until it ends) keeps a stream busy while the host queues the next work. The GPU issue
runs this file on the H200; the tests marked sim-only check the simulator's own reports, which a
GPU does not give.
"""
from __future__ import annotations

import ctypes

import labkit  # noqa: F401  (before numba.cuda)
import numpy as np
import pytest
from labkit import rt
from labkit.course.workloads import busy

E = rt.cudaError_t
OK = (E.cudaSuccess,)
D2H = rt.cudaMemcpyKind.cudaMemcpyDeviceToHost
LONG = 2_000_000          # iterations: milliseconds on a GPU and on the simulator
sim_only = pytest.mark.skipif(labkit.backend != "sim",
                              reason="the simulator's own report: a GPU gives none")


def _busy_on(stream):
    x = labkit.to_device(np.zeros(32, np.float32))
    assert rt.cudaDeviceSynchronize() == OK
    busy[1, 32, stream](x, LONG)
    return x


def _read_first(x, stream):
    """x[0] as a copy on ``stream`` into page-locked memory sees it (then waits for that
    stream only)."""
    out = labkit.pinned_array(1, np.float32)
    out[0] = -1.0
    assert rt.cudaMemcpyAsync(out.ctypes.data, x.device_ctypes_pointer.value, 4, D2H,
                              stream) == OK
    assert rt.cudaStreamSynchronize(stream) == OK
    return float(out[0])


def test_a_launch_returns_before_its_kernel_has_run(res):
    s = res.stream()
    x = _busy_on(s)
    assert rt.cudaStreamQuery(s) == (E.cudaErrorNotReady,)
    assert rt.cudaStreamSynchronize(s) == OK
    assert float(x.copy_to_host()[0]) == LONG


def test_a_read_from_an_unordered_stream_sees_the_old_value(res):
    s, other = res.stream(), res.stream()
    x = _busy_on(s)
    assert _read_first(x, other) == 0.0          # stale: nothing orders it after the kernel
    assert rt.cudaStreamSynchronize(s) == OK
    assert _read_first(x, other) == LONG


def test_a_stream_waiting_on_an_event_reads_the_result(res):
    s, other = res.stream(), res.stream()
    x = _busy_on(s)
    e = res.event()
    assert rt.cudaEventRecord(e, s) == OK
    assert rt.cudaStreamWaitEvent(other, e, 0) == OK
    assert _read_first(x, other) == LONG


def test_the_legacy_streams_copy_waits_for_a_blocking_stream(res):
    s = res.stream(nonblocking=False)
    x = _busy_on(s)
    out = np.empty(32, np.float32)
    assert rt.cudaMemcpy(out.ctypes.data, x.device_ctypes_pointer.value, out.nbytes, D2H) == OK
    assert out[0] == LONG


def test_the_legacy_streams_copy_does_not_wait_for_a_non_blocking_stream(res):
    s = res.stream(nonblocking=True)
    x = _busy_on(s)
    out = np.empty(32, np.float32)
    assert rt.cudaMemcpy(out.ctypes.data, x.device_ctypes_pointer.value, out.nbytes, D2H) == OK
    assert out[0] == 0.0
    assert rt.cudaStreamSynchronize(s) == OK
    labkit.clear_races()


def test_mapped_memory_shows_a_kernels_store_only_once_it_has_run(res):
    s = res.stream()
    m = labkit.mapped_array(32, np.float32)
    busy[1, 32, s](m.device, LONG)
    assert m.host[0] == 0.0                      # read between calls, while the kernel runs
    assert rt.cudaStreamSynchronize(s) == OK
    assert m.host[0] == LONG


@sim_only
def test_a_fault_comes_back_from_the_next_synchronizing_call_and_stays(res):
    s = res.stream()
    x = labkit.to_device(np.zeros(32, np.float32))
    ptr = x.device_ctypes_pointer.value
    del x                                        # collected: its memory is freed
    import gc
    gc.collect()

    class Freed:                                 # a device array over that freed memory
        shape, dtype, size, nbytes, ndim = (32,), np.dtype(np.float32), 32, 128, 1
        device_ctypes_pointer = ctypes.c_void_p(ptr)

    busy[1, 32, s](Freed(), 10)                  # the launch call succeeds
    assert rt.cudaPeekAtLastError() == OK
    assert rt.cudaStreamSynchronize(s) == (E.cudaErrorIllegalAddress,)
    assert rt.cudaDeviceSynchronize() == (E.cudaErrorIllegalAddress,)      # sticky
    assert rt.cudaMalloc(16)[0] == E.cudaErrorIllegalAddress
    labkit.reset_after_fault()                   # the simulator's way back; a GPU has none
    assert rt.cudaDeviceSynchronize() == OK


@sim_only
def test_an_unordered_writer_and_reader_are_named_as_a_race(res):
    s, other = res.stream(), res.stream()
    labkit.clear_races()
    x = _busy_on(s)
    with pytest.warns(labkit.RaceWarning, match=r"^data race on the array passed as x: busy \(stream 0x[0-9a-f]+\) "
                                                r"writes it and memcpy"):
        _read_first(x, other)
    (r,) = labkit.races()
    assert (r.first, r.second, r.kind, r.where) == ("busy", "memcpy", "write/read", "streams")
    assert r.address == x.device_ctypes_pointer.value
    assert rt.cudaStreamSynchronize(s) == OK
    labkit.clear_races()


@sim_only
def test_work_ordered_by_an_event_or_a_synchronize_is_no_race(res):
    s, other = res.stream(), res.stream()
    labkit.clear_races()
    x = _busy_on(s)
    e = res.event()
    assert rt.cudaEventRecord(e, s) == OK and rt.cudaStreamWaitEvent(other, e, 0) == OK
    _read_first(x, other)
    busy[1, 32, s](x, 10)
    assert rt.cudaStreamSynchronize(s) == OK     # the host saw it: what it queues next is after
    _read_first(x, other)
    assert labkit.races() == []


@sim_only
def test_a_graphs_unordered_branches_that_share_a_buffer_are_named_at_instantiation():
    from labkit.course.workloads import add_one, saxpy
    origin, side = labkit.Stream(), labkit.Stream()
    x, v, z = (labkit.to_device(np.zeros(64, np.float32)) for _ in range(3))
    labkit.clear_races()
    with labkit.capture(origin) as cap:
        with labkit.fork(origin, side):
            add_one[1, 64, origin](x)
            saxpy[1, 64, side](v, 2.0, x, z)
    with pytest.warns(labkit.RaceWarning, match=r"^data race on the array passed as x: add_one \(graph node 0\) "
                                                r"writes it and saxpy \(graph node 1\) reads it"):
        cap.graph.instantiate().close()
    assert [r.where for r in labkit.races()] == ["graph"]
    labkit.clear_races()
    cap.graph.close(); origin.close(); side.close()

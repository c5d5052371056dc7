"""Conformance: labkit.rt does what real CUDA does, the same file on both backends.

Run with ``LABKIT_BACKEND=sim`` (CPU) and ``LABKIT_BACKEND=cuda`` (a GPU); every assertion is an
exact outcome. Provenance: the expectations were read off an NVIDIA H200 (driver 580, CUDA 13.0,
cuda-bindings 13.3, numba-cuda 0.30.4) by a probe script; each test names the probe line it
follows as ``probe: <name>``. This suite, run with ``LABKIT_BACKEND=cuda`` (``tools/gpu_check.sh``
does), is the probe now; the old script and its logs are in git history
(``git log --diff-filter=D --stat -- tools/probe_semantics.py tests/conformance/probe_logs``).
Where the probe did not record an outcome a test asserts, the docstring says ``NOT PROBED`` and
why it is expected.

Only `labkit.rt` and labkit's public API are used, so nothing here knows which backend runs.
"""
from __future__ import annotations

import labkit  # before numba.cuda (sets NUMBA_ENABLE_CUDASIM on "sim")
from labkit import _errors
import numpy as np
import pytest
from labkit import CudaError, rt

from kernels import BLOCK, GRID, N, add_one, add_one_reference, scale, scale_reference

E = rt.cudaError_t
ST = rt.cudaStreamCaptureStatus
NT = rt.cudaGraphNodeType
MODE = {
    "global": rt.cudaStreamCaptureMode.cudaStreamCaptureModeGlobal,
    "thread_local": rt.cudaStreamCaptureMode.cudaStreamCaptureModeThreadLocal,
    "relaxed": rt.cudaStreamCaptureMode.cudaStreamCaptureModeRelaxed,
}
GLOBAL = MODE["global"]
OK = (E.cudaSuccess,)
D2H = rt.cudaMemcpyKind.cudaMemcpyDeviceToHost
D2D = rt.cudaMemcpyKind.cudaMemcpyDeviceToDevice


# ------------------------------------------------------------------ helpers

def status(stream):
    err, st = rt.cudaStreamIsCapturing(stream)
    assert err == E.cudaSuccess
    return st


def begin(stream, mode=GLOBAL):
    assert rt.cudaStreamBeginCapture(stream, mode) == OK


def end(res, stream):
    err, g = rt.cudaStreamEndCapture(stream)
    res.graph(g)
    return err, g


def last_error():
    return rt.cudaGetLastError()[0]


def dev(fill=0.0):
    return labkit.to_device(np.full(N, fill, np.float32))


def ptr(d):
    return d.device_ctypes_pointer.value


def full(value):
    return np.full(N, value, np.float32)


def sync(stream):
    assert rt.cudaStreamSynchronize(stream) == OK


def node_count(g):
    err, nodes, n = rt.cudaGraphGetNodes(g)
    assert err == E.cudaSuccess and nodes == []
    return n


def edge_count(g):
    return rt.cudaGraphGetEdges(g)[-1]


def nodes_of(g):
    n = node_count(g)
    err, nodes, got = rt.cudaGraphGetNodes(g, n)
    assert err == E.cudaSuccess and got == n
    return list(nodes)


def node_types(g):
    return [rt.cudaGraphNodeGetType(n)[1] for n in nodes_of(g)]


def edge_set(g):
    """Edges as {(from, to)} indices into cudaGraphGetNodes' order."""
    index = {int(n): i for i, n in enumerate(nodes_of(g))}
    count = edge_count(g)
    err, frm, to, _data, got = rt.cudaGraphGetEdges(g, count)
    assert err == E.cudaSuccess and got == count
    return {(index[int(a)], index[int(b)]) for a, b in zip(frm, to)}


def chain(res, stream, buf, k, kernel=add_one, grid=GRID, block=BLOCK):
    """Capture ``k`` launches of ``kernel`` on ``buf`` and return the graph (probe: chain)."""
    begin(stream)
    for _ in range(k):
        kernel[grid, block, stream](buf)
    err, g = end(res, stream)
    assert err == E.cudaSuccess
    return g


def instantiate(res, g):
    err, ge = rt.cudaGraphInstantiate(g, 0)
    assert err == E.cudaSuccess
    return res.exec(ge)


def launch(ge, stream):
    assert rt.cudaGraphLaunch(ge, stream) == OK
    sync(stream)


# ------------------------------------------------------------------ the kernels themselves

@pytest.mark.parametrize("kernel, reference", [(add_one, add_one_reference),
                                               (scale, scale_reference)])
@pytest.mark.parametrize("grid, block, n", [((1,), (64,), 100), ((2,), (64,), 100)])
def test_kernel_reference_equals_the_kernels_own_code_on_random_input(kernel, reference,
                                                                      grid, block, n):
    """The sim runs the numpy reference; this proves it equal to the kernel's own code (numba's
    CUDA simulator on "sim", the GPU on "cuda"), including the bounds check and partial cover."""
    x = np.random.default_rng(7).standard_normal(n).astype(np.float32)
    want = x.copy()
    reference(grid + (1, 1), block + (1, 1), want)
    if labkit.backend == "sim":
        got = x.copy()
        kernel.simulate(grid + (1, 1), block + (1, 1), got)
    else:
        d = labkit.to_device(x)
        kernel[grid, block](d)
        got = d.copy_to_host()
    np.testing.assert_array_equal(got, want)
    assert not np.array_equal(want, x)   # the launch changed something: not a vacuous pass


# ------------------------------------------------------------------ which streams can capture

def test_begin_capture_on_the_legacy_stream_is_refused_900_and_it_stays_not_capturing(res):
    """probe: legacy_begin."""
    assert rt.cudaStreamBeginCapture(0, GLOBAL) == (E.cudaErrorStreamCaptureUnsupported,)
    assert status(0) == ST.cudaStreamCaptureStatusNone
    assert last_error() == E.cudaErrorStreamCaptureUnsupported


def test_the_per_thread_stream_can_be_captured(res):
    """probe: ptds_begin, ptds_end (handle 2 = cudaStreamPerThread)."""
    assert rt.cudaStreamBeginCapture(2, GLOBAL) == OK
    assert status(2) == ST.cudaStreamCaptureStatusActive
    err, g = end(res, 2)
    assert err == E.cudaSuccess and g is not None and int(g) != 0
    assert status(2) == ST.cudaStreamCaptureStatusNone


# ------------------------------------------------------------------ illegal calls inside a capture

def test_stream_synchronize_inside_capture_is_900_and_the_end_is_901_without_a_graph(res):
    """probe: sync_sync, sync_end, sync_after; stream usable after (kernel result NOT PROBED:
    the captured launch never ran, so one eager launch gives exactly 1)."""
    s, a = res.stream(), dev()
    begin(s)
    add_one[GRID, BLOCK, s](a)
    assert rt.cudaStreamSynchronize(s) == (E.cudaErrorStreamCaptureUnsupported,)
    assert status(s) == ST.cudaStreamCaptureStatusInvalidated
    assert rt.cudaStreamEndCapture(s) == (E.cudaErrorStreamCaptureInvalidated, None)
    assert status(s) == ST.cudaStreamCaptureStatusNone
    assert rt.cudaStreamSynchronize(s) == OK
    assert last_error() == E.cudaErrorStreamCaptureInvalidated   # set by the failed end
    add_one[GRID, BLOCK, s](a)
    sync(s)
    np.testing.assert_array_equal(a.copy_to_host(), full(1))


def test_get_last_error_reports_a_capture_error_once_and_is_not_sticky(res):
    """probe: sync_lasterr."""
    s = res.stream()
    begin(s)
    assert rt.cudaStreamSynchronize(s) == (E.cudaErrorStreamCaptureUnsupported,)
    assert rt.cudaGetLastError() == (E.cudaErrorStreamCaptureUnsupported,)
    assert rt.cudaGetLastError() == OK
    assert end(res, s) == (E.cudaErrorStreamCaptureInvalidated, None)


def test_stream_query_inside_capture_is_900_and_invalidates(res):
    """probe: query_in, query_end."""
    s = res.stream()
    begin(s)
    assert rt.cudaStreamQuery(s) == (E.cudaErrorStreamCaptureUnsupported,)
    assert status(s) == ST.cudaStreamCaptureStatusInvalidated
    assert end(res, s) == (E.cudaErrorStreamCaptureInvalidated, None)


def test_beginning_twice_is_illegal_state_401_and_the_capture_stays_active(res):
    """probe: double_begin, double_end."""
    s = res.stream()
    begin(s)
    assert rt.cudaStreamBeginCapture(s, GLOBAL) == (E.cudaErrorIllegalState,)
    assert status(s) == ST.cudaStreamCaptureStatusActive
    err, g = end(res, s)
    assert err == E.cudaSuccess and g is not None


def test_ending_a_stream_that_is_not_capturing_is_illegal_state_401(res):
    """probe: end_not_capturing."""
    s = res.stream()
    assert rt.cudaStreamEndCapture(s) == (E.cudaErrorIllegalState, None)


def test_an_empty_capture_gives_a_graph_of_zero_nodes_that_instantiates(res):
    """probe: empty_end, empty_inst."""
    s = res.stream()
    begin(s)
    err, g = end(res, s)
    assert err == E.cudaSuccess
    assert node_count(g) == 0
    assert edge_count(g) == 0
    instantiate(res, g)


@pytest.mark.parametrize("mode", ["global", "thread_local", "relaxed"])
def test_device_synchronize_inside_capture_is_900_and_invalidates_in_every_mode(res, mode):
    """probe: devsync_<Mode>, devsync_<Mode>_end."""
    s, a = res.stream(), dev()
    begin(s, MODE[mode])
    add_one[GRID, BLOCK, s](a)
    assert rt.cudaDeviceSynchronize() == (E.cudaErrorStreamCaptureUnsupported,)
    assert status(s) == ST.cudaStreamCaptureStatusInvalidated
    assert end(res, s) == (E.cudaErrorStreamCaptureInvalidated, None)


@pytest.mark.parametrize("mode", ["global", "thread_local"])
@pytest.mark.parametrize("alloc", ["cudaMalloc", "cudaMallocHost"])
def test_allocation_inside_a_strict_capture_is_900_and_invalidates(res, mode, alloc):
    """probe: malloc_<Mode>, mallochost_<Mode> (Global, ThreadLocal) and their _end lines."""
    s, a = res.stream(), dev()
    begin(s, MODE[mode])
    add_one[GRID, BLOCK, s](a)
    err, _p = getattr(rt, alloc)(4096)
    assert err == E.cudaErrorStreamCaptureUnsupported
    assert status(s) == ST.cudaStreamCaptureStatusInvalidated
    assert end(res, s) == (E.cudaErrorStreamCaptureInvalidated, None)
    assert last_error() == E.cudaErrorStreamCaptureInvalidated


@pytest.mark.parametrize("alloc, free", [("cudaMalloc", "cudaFree"),
                                         ("cudaMallocHost", "cudaFreeHost")])
def test_allocation_inside_a_relaxed_capture_succeeds_and_the_capture_stays_active(res, alloc,
                                                                                   free):
    """probe: malloc_Relaxed, mallochost_Relaxed and their _end lines."""
    s, a = res.stream(), dev()
    begin(s, MODE["relaxed"])
    add_one[GRID, BLOCK, s](a)
    err, p = getattr(rt, alloc)(4096)
    assert err == E.cudaSuccess
    assert status(s) == ST.cudaStreamCaptureStatusActive
    err, g = end(res, s)
    assert err == E.cudaSuccess and g is not None
    assert last_error() == E.cudaSuccess
    assert getattr(rt, free)(p) == OK


@pytest.mark.parametrize("mode", ["global", "thread_local"])
def test_querying_an_event_recorded_outside_a_strict_capture_is_900_and_invalidates(res, mode):
    """probe: evquery_outside_Global / _ThreadLocal (query and synchronize both 900)."""
    s, ev = res.stream(), res.event()
    assert rt.cudaEventRecord(ev, s) == OK
    sync(s)
    begin(s, MODE[mode])
    assert rt.cudaEventQuery(ev) == (E.cudaErrorStreamCaptureUnsupported,)
    assert rt.cudaEventSynchronize(ev) == (E.cudaErrorStreamCaptureUnsupported,)
    assert status(s) == ST.cudaStreamCaptureStatusInvalidated
    assert end(res, s) == (E.cudaErrorStreamCaptureInvalidated, None)
    assert last_error() == E.cudaErrorStreamCaptureInvalidated


def test_querying_an_event_recorded_outside_a_relaxed_capture_succeeds(res):
    """probe: evquery_outside_Relaxed."""
    s, ev = res.stream(), res.event()
    assert rt.cudaEventRecord(ev, s) == OK
    sync(s)
    begin(s, MODE["relaxed"])
    assert rt.cudaEventQuery(ev) == OK
    assert rt.cudaEventSynchronize(ev) == OK
    assert status(s) == ST.cudaStreamCaptureStatusActive
    err, _g = end(res, s)
    assert err == E.cudaSuccess
    assert last_error() == E.cudaSuccess


# ------------------------------------------------------------------ the legacy stream meanwhile

@pytest.mark.parametrize("mode", ["global", "thread_local", "relaxed"])
def test_synchronous_memcpy_while_a_nonblocking_stream_captures_succeeds(res, mode):
    """probe: memcpy_sync_<Mode> (the copied values are NOT PROBED: a synchronous copy that
    returned success has copied)."""
    s = res.stream()
    a = labkit.to_device(np.arange(N, dtype=np.float32))
    h = np.zeros(16, np.float32)
    begin(s, MODE[mode])
    assert rt.cudaMemcpy(h.ctypes.data, ptr(a), 64, D2H) == OK
    assert status(s) == ST.cudaStreamCaptureStatusActive
    err, _g = end(res, s)
    assert err == E.cudaSuccess
    assert last_error() == E.cudaSuccess
    np.testing.assert_array_equal(h, np.arange(16, dtype=np.float32))


def test_copy_to_host_of_a_device_array_while_a_nonblocking_stream_captures_succeeds(res):
    """probe: copy_to_host_in_capture, launch_after_invalid, launch_after_invalid_end (the
    copied values are NOT PROBED)."""
    s = res.stream()
    a = labkit.to_device(np.arange(N, dtype=np.float32))
    begin(s)
    np.testing.assert_array_equal(a.copy_to_host(), np.arange(N, dtype=np.float32))
    assert status(s) == ST.cudaStreamCaptureStatusActive
    add_one[GRID, BLOCK, s](a)
    err, g = end(res, s)
    assert err == E.cudaSuccess and g is not None
    assert last_error() == E.cudaSuccess


@pytest.mark.parametrize("mode", ["global", "thread_local", "relaxed"])
def test_a_legacy_stream_launch_while_a_nonblocking_stream_captures_runs_now(res, mode):
    """probe: legacy_launch_nonblocking_<Mode> (that the kernel ran at once rather than being
    captured is NOT PROBED: it follows from the legacy stream not being in the capture)."""
    s, a = res.stream(), dev()
    begin(s, MODE[mode])
    add_one[GRID, BLOCK, 0](a)
    assert last_error() == E.cudaSuccess
    assert status(s) == ST.cudaStreamCaptureStatusActive
    err, _g = end(res, s)
    assert err == E.cudaSuccess
    assert rt.cudaDeviceSynchronize() == OK
    np.testing.assert_array_equal(a.copy_to_host(), full(1))


@pytest.mark.parametrize("mode", ["global", "thread_local", "relaxed"])
def test_a_legacy_stream_launch_while_a_blocking_stream_captures_raises_906(res, mode):
    """probe: legacy_launch_blocking_<Mode> (CUDA_ERROR_STREAM_CAPTURE_IMPLICIT)."""
    sb, a = res.stream(nonblocking=False), dev()
    begin(sb, MODE[mode])
    add_one[GRID, BLOCK, sb](a)
    with pytest.raises(CudaError, match=r"^launching add_one: cudaErrorStreamCaptureImplicit") as ei:
        add_one[GRID, BLOCK, 0](a)
    assert ei.value.code == E.cudaErrorStreamCaptureImplicit
    assert status(sb) == ST.cudaStreamCaptureStatusInvalidated
    assert end(res, sb) == (E.cudaErrorStreamCaptureInvalidated, None)
    assert last_error() == E.cudaErrorStreamCaptureInvalidated


# ------------------------------------------------------------------ events inside a capture

def test_an_event_recorded_in_a_capture_cannot_be_queried_907_and_the_query_invalidates(res):
    """probe: capev_record, capev_query, capev_elapsed, capev_end, capev_query_after."""
    s, a = res.stream(), dev()
    ev, never_recorded = res.event(), res.event()
    begin(s)
    add_one[GRID, BLOCK, s](a)
    assert rt.cudaEventRecord(ev, s) == OK
    assert rt.cudaEventQuery(ev) == (E.cudaErrorCapturedEvent,)
    assert rt.cudaEventSynchronize(ev) == (E.cudaErrorInvalidValue,)
    assert status(s) == ST.cudaStreamCaptureStatusInvalidated
    assert rt.cudaEventElapsedTime(never_recorded, ev) == (E.cudaErrorInvalidResourceHandle, None)
    assert end(res, s) == (E.cudaErrorStreamCaptureInvalidated, None)
    assert last_error() == E.cudaErrorStreamCaptureInvalidated
    assert rt.cudaEventQuery(ev) == (E.cudaErrorInvalidValue,)


def test_querying_a_captured_event_is_907_in_relaxed_mode_too(res):
    """probe: capev_query_relaxed, capev_relaxed_end."""
    s, ev = res.stream(), res.event()
    begin(s, MODE["relaxed"])
    assert rt.cudaEventRecord(ev, s) == OK
    assert rt.cudaEventQuery(ev) == (E.cudaErrorCapturedEvent,)
    assert status(s) == ST.cudaStreamCaptureStatusInvalidated
    assert end(res, s) == (E.cudaErrorStreamCaptureInvalidated, None)


# ------------------------------------------------------------------ several streams, one capture

def _fork(res, s, s2, e1):
    """Fork s2 off the capturing s (probe: fork_wait)."""
    assert rt.cudaEventRecord(e1, s) == OK
    assert rt.cudaStreamWaitEvent(s2, e1, 0) == OK
    assert status(s2) == ST.cudaStreamCaptureStatusActive


def test_fork_join_captures_four_kernel_nodes_in_a_diamond(res):
    """probe: fork_wait, fork_info_side, fork_info_origin, fork_end, fork_nodes,
    fork_edges_full, fork_nodetype. NOT PROBED: that the capture-info dependencies are these
    graph nodes, and the replay's buffer contents."""
    s, s2 = res.stream(), res.stream()
    e1, e2 = res.event(timing=False), res.event(timing=False)
    a, b = dev(), dev()
    begin(s)
    add_one[GRID, BLOCK, s](a)
    _fork(res, s, s2, e1)
    side = rt.cudaStreamGetCaptureInfo(s2)
    add_one[GRID, BLOCK, s2](b)
    add_one[GRID, BLOCK, s](a)
    assert rt.cudaEventRecord(e2, s2) == OK
    assert rt.cudaStreamWaitEvent(s, e2, 0) == OK
    add_one[GRID, BLOCK, s](a)
    origin = rt.cudaStreamGetCaptureInfo(s)
    assert len(side) == 7 and len(origin) == 7
    for info in (side, origin):
        err, st, _cid, graph, deps, edge_data, ndeps = info
        assert err == E.cudaSuccess and st == ST.cudaStreamCaptureStatusActive
        assert ndeps == 1 and len(deps) == 1 and len(edge_data) == 1
    assert side[2] == origin[2] and side[2] != 0          # one capture id for both streams
    assert int(side[3]) == int(origin[3]) != 0            # one graph being built
    err, g = end(res, s)
    assert err == E.cudaSuccess
    assert status(s2) == ST.cudaStreamCaptureStatusNone
    assert node_count(g) == 4 and edge_count(g) == 4
    assert node_types(g) == [NT.cudaGraphNodeTypeKernel] * 4
    assert edge_set(g) == {(0, 1), (0, 2), (1, 3), (2, 3)}
    nodes = nodes_of(g)
    assert int(side[4][0]) == int(nodes[0]) and int(origin[4][0]) == int(nodes[3])
    launch(instantiate(res, g), s)
    np.testing.assert_array_equal(a.copy_to_host(), full(3))
    np.testing.assert_array_equal(b.copy_to_host(), full(1))


def test_labkit_fork_inside_labkit_capture_gives_the_same_diamond(res):
    """The probe's fork/join call sequence, made by labkit.fork (NOT PROBED as such: labkit.fork
    issues the same record/wait calls as the probe's fork section)."""
    s, s2, a, b = res.stream(), res.stream(), dev(), dev()
    with labkit.capture(s) as cap:
        add_one[GRID, BLOCK, s](a)
        with labkit.fork(s, s2):
            add_one[GRID, BLOCK, s2](b)
            add_one[GRID, BLOCK, s](a)
        add_one[GRID, BLOCK, s](a)
    with cap.graph as g:
        assert len(g) == 4
        assert g.node_kinds() == ["kernel"] * 4
        assert set(g.edges) == {(0, 1), (0, 2), (1, 3), (2, 3)}
        with g.instantiate() as ex:
            ex.launch(s)
            sync(s)
    np.testing.assert_array_equal(a.copy_to_host(), full(3))
    np.testing.assert_array_equal(b.copy_to_host(), full(1))


def test_an_unjoined_fork_ends_904_and_leaves_neither_stream_capturing(res):
    """probe: unjoined_end, unjoined_lasterr, unjoined_side_after."""
    s, s2, e1 = res.stream(), res.stream(), res.event(timing=False)
    a, b = dev(), dev()
    begin(s)
    add_one[GRID, BLOCK, s](a)
    _fork(res, s, s2, e1)
    add_one[GRID, BLOCK, s2](b)
    assert end(res, s) == (E.cudaErrorStreamCaptureUnjoined, None)
    assert status(s) == ST.cudaStreamCaptureStatusNone
    assert status(s2) == ST.cudaStreamCaptureStatusNone
    assert last_error() == E.cudaErrorStreamCaptureUnjoined
    assert rt.cudaStreamSynchronize(s2) == OK
    assert status(s2) == ST.cudaStreamCaptureStatusNone
    assert rt.cudaStreamEndCapture(s2) == (E.cudaErrorIllegalState, None)


def test_a_forked_stream_without_work_needs_no_join(res):
    """probe: unjoined_empty_end."""
    s, s2, e1, a = res.stream(), res.stream(), res.event(timing=False), dev()
    begin(s)
    add_one[GRID, BLOCK, s](a)
    _fork(res, s, s2, e1)
    err, g = end(res, s)
    assert err == E.cudaSuccess and g is not None
    assert status(s2) == ST.cudaStreamCaptureStatusNone


def test_ending_on_the_forked_stream_is_unmatched_903_then_the_origin_end_is_901(res):
    """probe: wrongend_end, wrongend_lasterr, wrongend_origin_end."""
    s, s2 = res.stream(), res.stream()
    e1, e2 = res.event(timing=False), res.event(timing=False)
    a, b = dev(), dev()
    begin(s)
    add_one[GRID, BLOCK, s](a)
    _fork(res, s, s2, e1)
    add_one[GRID, BLOCK, s2](b)
    assert rt.cudaEventRecord(e2, s2) == OK
    assert rt.cudaStreamWaitEvent(s, e2, 0) == OK
    assert rt.cudaStreamEndCapture(s2) == (E.cudaErrorStreamCaptureUnmatched, None)
    assert status(s) == ST.cudaStreamCaptureStatusInvalidated
    assert status(s2) == ST.cudaStreamCaptureStatusInvalidated
    assert last_error() == E.cudaErrorStreamCaptureUnmatched
    assert end(res, s) == (E.cudaErrorStreamCaptureInvalidated, None)
    assert status(s) == ST.cudaStreamCaptureStatusNone
    assert status(s2) == ST.cudaStreamCaptureStatusNone


def test_waiting_on_an_event_recorded_outside_the_capture_is_isolation_905(res):
    """probe: extwait, extwait_launch, extwait_end (part2)."""
    s, s2, e1, a = res.stream(), res.stream(), res.event(timing=False), dev()
    assert rt.cudaEventRecord(e1, s2) == OK
    begin(s)
    add_one[GRID, BLOCK, s](a)
    assert rt.cudaStreamWaitEvent(s, e1, 0) == (E.cudaErrorStreamCaptureIsolation,)
    assert status(s) == ST.cudaStreamCaptureStatusInvalidated
    with pytest.raises(CudaError, match=r"^launching add_one: cudaErrorStreamCaptureInvalidated") as ei:
        add_one[GRID, BLOCK, s](a)
    assert ei.value.code == E.cudaErrorStreamCaptureInvalidated
    assert end(res, s) == (E.cudaErrorStreamCaptureInvalidated, None)
    assert last_error() == E.cudaErrorStreamCaptureInvalidated


def test_waiting_on_an_event_of_another_capture_is_merge_902_and_invalidates_both(res):
    """probe: merge_wait, merge_end."""
    s, s3, e1, b = res.stream(), res.stream(), res.event(timing=False), dev()
    begin(s)
    begin(s3)
    add_one[GRID, BLOCK, s3](b)
    assert rt.cudaEventRecord(e1, s3) == OK
    assert rt.cudaStreamWaitEvent(s, e1, 0) == (E.cudaErrorStreamCaptureMerge,)
    assert status(s) == ST.cudaStreamCaptureStatusInvalidated
    assert status(s3) == ST.cudaStreamCaptureStatusInvalidated
    assert end(res, s) == (E.cudaErrorStreamCaptureInvalidated, None)
    assert end(res, s3) == (E.cudaErrorStreamCaptureInvalidated, None)
    assert last_error() == E.cudaErrorStreamCaptureInvalidated


# ------------------------------------------------------------------ what a launch does in a capture

def test_a_launch_with_a_host_numpy_array_inside_capture_raises_900_and_invalidates(res):
    """probe: hostarr, hostarr_end, hostarr_after (the eager launch after it is NOT PROBED)."""
    s, a = res.stream(), dev()
    h = np.zeros(N, np.float32)
    begin(s)
    with pytest.raises(CudaError, match=r"^launching add_one on a host array \(numba would "
                                        r"allocate a temporary device buffer for it\): "
                                        r"cudaErrorStreamCaptureUnsupported") as ei:
        add_one[GRID, BLOCK, s](h)
    assert ei.value.code == E.cudaErrorStreamCaptureUnsupported
    assert status(s) == ST.cudaStreamCaptureStatusInvalidated
    assert end(res, s) == (E.cudaErrorStreamCaptureInvalidated, None)
    assert last_error() == E.cudaErrorStreamCaptureInvalidated
    assert rt.cudaStreamSynchronize(s) == OK
    add_one[GRID, BLOCK, s](a)
    sync(s)
    np.testing.assert_array_equal(a.copy_to_host(), full(1))


def test_work_on_an_invalidated_capture_fails_901(res):
    """probe: launch_after_sync, memcpyasync_after_invalid, eventrecord_after_invalid,
    launch_after_sync_end."""
    s, a, ev = res.stream(), dev(), res.event()
    begin(s)
    assert rt.cudaStreamSynchronize(s) == (E.cudaErrorStreamCaptureUnsupported,)
    with pytest.raises(CudaError, match=r"^launching add_one: cudaErrorStreamCaptureInvalidated") as ei:
        add_one[GRID, BLOCK, s](a)
    assert ei.value.code == E.cudaErrorStreamCaptureInvalidated
    assert rt.cudaMemcpyAsync(ptr(a), ptr(a), 4, D2D, s) == (E.cudaErrorStreamCaptureInvalidated,)
    assert rt.cudaEventRecord(ev, s) == (E.cudaErrorStreamCaptureInvalidated,)
    assert end(res, s) == (E.cudaErrorStreamCaptureInvalidated, None)
    assert last_error() == E.cudaErrorStreamCaptureInvalidated


def test_captured_pinned_copy_and_memset_become_memcpy_and_memset_nodes(res):
    """probe: pinned_d2h, memset, pinned_end. NOT PROBED: the replay's contents (the copy runs
    before the memset because both are on one stream)."""
    s = res.stream()
    a = labkit.to_device(np.arange(N, dtype=np.float32))
    out = labkit.pinned_array(N, np.float32)
    out[:] = -1
    begin(s)
    assert rt.cudaMemcpyAsync(out.ctypes.data, ptr(a), 4 * N, D2H, s) == OK
    assert rt.cudaMemsetAsync(ptr(a), 0, 16, s) == OK
    err, g = end(res, s)
    assert err == E.cudaSuccess
    assert node_types(g) == [NT.cudaGraphNodeTypeMemcpy, NT.cudaGraphNodeTypeMemset]
    np.testing.assert_array_equal(out, full(-1))          # captured, not run
    launch(instantiate(res, g), s)
    np.testing.assert_array_equal(out, np.arange(N, dtype=np.float32))
    want = np.arange(N, dtype=np.float32)
    want[:4] = 0
    np.testing.assert_array_equal(a.copy_to_host(), want)


def test_a_captured_copy_into_pageable_memory_replays_the_kernels_result(res):
    """probe: pageable_d2h, pageable_d2h_end, pageable_inst, pageable_launch."""
    s, a = res.stream(), dev(4.0)
    h = np.zeros(N, np.float32)
    begin(s)
    add_one[GRID, BLOCK, s](a)
    assert rt.cudaMemcpyAsync(h.ctypes.data, ptr(a), 4 * N, D2H, s) == OK
    assert status(s) == ST.cudaStreamCaptureStatusActive
    err, g = end(res, s)
    assert err == E.cudaSuccess
    assert last_error() == E.cudaSuccess
    launch(instantiate(res, g), s)
    np.testing.assert_array_equal(h, full(5))


def test_a_graph_launch_into_a_capturing_stream_is_900_and_the_end_is_901(res):
    """probe: upload, graphlaunch_in_capture, graphlaunch_in_capture_end."""
    s, x = res.stream(), dev()
    ge = instantiate(res, chain(res, s, x, 2))
    assert rt.cudaGraphUpload(ge, s) == OK
    begin(s)
    assert rt.cudaGraphLaunch(ge, s) == (E.cudaErrorStreamCaptureUnsupported,)
    assert end(res, s) == (E.cudaErrorStreamCaptureInvalidated, None)


# ------------------------------------------------------------------ updating an executable graph

def test_exec_update_with_the_same_topology_retargets_the_executable(res):
    """probe: update_same, update_result, update_effect."""
    s, x, y = res.stream(), dev(), dev()
    ge = instantiate(res, chain(res, s, x, 3))
    g2 = chain(res, s, y, 3)
    for _ in range(2):
        err, info = rt.cudaGraphExecUpdate(ge, g2)
        assert err == E.cudaSuccess
        assert info.result == rt.cudaGraphExecUpdateResult.cudaGraphExecUpdateSuccess
        assert int(info.errorNode) == 0 and int(info.errorFromNode) == 0
    launch(ge, s)
    np.testing.assert_array_equal(x.copy_to_host(), full(0))
    np.testing.assert_array_equal(y.copy_to_host(), full(3))


def test_exec_update_with_an_added_node_fails_910_and_the_old_executable_still_works(res):
    """probe: update_topology recorded only that the update failed with no result info (the
    probe's line crashed on info=None). NOT PROBED: the code 910 (cudaGraphExecUpdate documents
    cudaErrorGraphExecUpdateFailure for a topology change) and the replay after it."""
    s, x, y = res.stream(), dev(), dev()
    ge = instantiate(res, chain(res, s, x, 3))
    g3 = chain(res, s, y, 4)
    assert rt.cudaGraphExecUpdate(ge, g3) == (E.cudaErrorGraphExecUpdateFailure, None)
    rt.cudaGetLastError()
    launch(ge, s)
    np.testing.assert_array_equal(x.copy_to_host(), full(3))
    np.testing.assert_array_equal(y.copy_to_host(), full(0))


def test_exec_update_with_a_changed_node_type_fails_910(res):
    """NOT PROBED (update_nodetype sat after the crashed line): kernel, kernel, memset against
    three kernels; cudaGraphExecUpdate documents cudaErrorGraphExecUpdateFailure for it."""
    s, x, y = res.stream(), dev(), dev()
    ge = instantiate(res, chain(res, s, x, 3))
    begin(s)
    add_one[GRID, BLOCK, s](y)
    add_one[GRID, BLOCK, s](y)
    assert rt.cudaMemsetAsync(ptr(y), 0, 16, s) == OK
    err, g5 = end(res, s)
    assert err == E.cudaSuccess
    assert rt.cudaGraphExecUpdate(ge, g5) == (E.cudaErrorGraphExecUpdateFailure, None)
    rt.cudaGetLastError()
    launch(ge, s)
    np.testing.assert_array_equal(x.copy_to_host(), full(3))


def test_exec_update_may_change_the_grid_dims(res):
    """probe: update_griddims (4x256 -> 8x128). NOT PROBED: the replay's contents."""
    s, x, y = res.stream(), dev(), dev()
    ge = instantiate(res, chain(res, s, x, 3))
    g6 = chain(res, s, y, 3, grid=8, block=128)
    err, info = rt.cudaGraphExecUpdate(ge, g6)
    assert err == E.cudaSuccess
    assert info.result == rt.cudaGraphExecUpdateResult.cudaGraphExecUpdateSuccess
    launch(ge, s)
    np.testing.assert_array_equal(x.copy_to_host(), full(0))
    np.testing.assert_array_equal(y.copy_to_host(), full(3))


def test_labkit_update_reports_success_and_failure_and_keeps_the_executable_on_failure(res):
    """labkit.GraphExec.update over the probed cases (update_same; update_topology as above)."""
    s, x, y = res.stream(), dev(), dev()
    with labkit.capture(s) as c1:
        for _ in range(3):
            add_one[GRID, BLOCK, s](x)
    with labkit.capture(s) as c2:
        for _ in range(3):
            add_one[GRID, BLOCK, s](y)
    with labkit.capture(s) as c3:
        for _ in range(4):
            add_one[GRID, BLOCK, s](x)
    with c1.graph, c2.graph, c3.graph, c1.graph.instantiate() as ex:
        ok = ex.update(c2.graph)
        assert ok.ok and bool(ok) and ok.code == 0
        bad = ex.update(c3.graph)
        assert not bad.ok and bad.code == E.cudaErrorGraphExecUpdateFailure
        ex.launch(s)
        sync(s)
    np.testing.assert_array_equal(x.copy_to_host(), full(0))
    np.testing.assert_array_equal(y.copy_to_host(), full(3))


def test_set_kernel_args_redirects_only_that_kernel_node(res):
    """NOT PROBED (the probe's exec_setparams section left no output): node 0 of a three-node
    chain on x is pointed at y, so one launch adds 1 to y and 2 to x."""
    s, x, y = res.stream(), dev(), dev()
    with labkit.capture(s) as cap:
        for _ in range(3):
            add_one[GRID, BLOCK, s](x)
    with cap.graph as g, g.instantiate() as ex:
        ex.set_kernel_args(0, add_one, GRID, BLOCK, y)
        ex.launch(s)
        sync(s)
    np.testing.assert_array_equal(x.copy_to_host(), full(2))
    np.testing.assert_array_equal(y.copy_to_host(), full(1))


def test_launching_an_executable_on_a_closed_stream_is_refused_and_another_stream_works(res):
    """labkit's own check, before any CUDA call: the executable remembers the raw handle of
    the stream it last launched on, and a closed stream's old handle must not be reused."""
    x = dev()
    s = labkit.Stream()
    with labkit.capture(s) as cap:
        add_one[GRID, BLOCK, s](x)
    with cap.graph as g, g.instantiate() as ex:
        ex.launch(s)
        s.synchronize()
        s.close()
        with pytest.raises(ValueError, match=r"^the stream was closed \(by close\(\) or the end "
                                             r"of its with block\): submit work to an open"):
            ex.launch(s)
        with labkit.Stream() as s2:
            ex.launch(s2)
            s2.synchronize()
    np.testing.assert_array_equal(x.copy_to_host(), full(2))


# ------------------------------------------------------------------ labkit.capture

def test_labkit_capture_ends_the_capture_when_the_body_raises(res):
    """A plain Python exception propagates unchanged and the stream is left not capturing."""
    a = dev()
    with labkit.Stream() as s:
        with pytest.raises(ValueError, match=r"^boom$") as ei:
            with labkit.capture(s) as cap:
                add_one[GRID, BLOCK, s](a)
                raise ValueError("boom")
        assert type(ei.value) is ValueError
        assert not s.is_capturing()
        assert status(s.handle) == ST.cudaStreamCaptureStatusNone
        assert cap.graph is not None and len(cap.graph) == 1
        cap.graph.close()
        s.synchronize()
    np.testing.assert_array_equal(a.copy_to_host(), full(0))   # captured, never launched


def test_labkit_capture_lets_a_body_exception_win_over_an_invalidated_capture(res):
    """The capture is invalidated (a sync, probe: sync_sync) and then the body raises: the
    body's exception propagates, not a CudaError, and the stream is not capturing."""
    s = res.stream()
    with pytest.raises(KeyError, match=r"^'late'$"):
        with labkit.capture(s):
            assert rt.cudaStreamSynchronize(s) == (E.cudaErrorStreamCaptureUnsupported,)
            raise KeyError("late")
    assert status(s) == ST.cudaStreamCaptureStatusNone


def test_labkit_capture_names_the_first_failing_call_when_the_capture_was_invalidated(res):
    """probe: sync_sync / sync_lasterr / sync_end, through labkit.capture."""
    s = res.stream()
    with pytest.raises(CudaError, match=r"^cudaStreamEndCapture; the first failing call was: "
                                        r"cudaErrorStreamCaptureUnsupported \(900\)") as ei:
        with labkit.capture(s):
            rt.cudaStreamSynchronize(s)
    assert ei.value.code == E.cudaErrorStreamCaptureInvalidated
    assert isinstance(ei.value.__cause__, CudaError)
    assert ei.value.__cause__.code == E.cudaErrorStreamCaptureUnsupported
    assert status(s) == ST.cudaStreamCaptureStatusNone


def test_labkit_capture_on_the_legacy_stream_raises_900_with_a_hint(res):
    with pytest.raises(CudaError, match=r"^cudaStreamBeginCapture on the legacy NULL stream: "
                                        r"cudaErrorStreamCaptureUnsupported \(900\)") as ei:
        with labkit.capture(0):
            pass
    assert ei.value.code == E.cudaErrorStreamCaptureUnsupported
    assert "capture a stream you created" in ei.value.hint
    assert ei.value.hint == _errors.hint_for(900, "cudaStreamBeginCapture")
    assert status(0) == ST.cudaStreamCaptureStatusNone


def test_a_200_kernel_chain_captures_and_replays_exactly(res):
    """The course's benchmark graph: 200 x add_one on 1024 float32, grid 4 x 256."""
    s, a = res.stream(), dev()
    with labkit.capture(s) as cap:
        for _ in range(200):
            add_one[GRID, BLOCK, s](a)
    np.testing.assert_array_equal(a.copy_to_host(), full(0))   # capture runs nothing
    with cap.graph as g:
        assert len(g) == 200
        assert edge_count(g.handle) == 199
        with g.instantiate() as ex:
            ex.launch(s)
            sync(s)
            np.testing.assert_array_equal(a.copy_to_host(), full(200))
            ex.launch(s)
            sync(s)
    np.testing.assert_array_equal(a.copy_to_host(), full(400))


# ------------------------------------------------------------------ query API shapes

def test_the_device_count_is_at_least_one():
    """probe: devcount."""
    err, count = rt.cudaGetDeviceCount()
    assert err == E.cudaSuccess and count >= 1


def test_graph_nodes_and_edges_with_count_zero_return_only_the_count(res):
    """probe: edges, nodes0, nodes_n, root."""
    s, x = res.stream(), dev()
    g = chain(res, s, x, 2)
    assert rt.cudaGraphGetEdges(g) == (E.cudaSuccess, [], [], [], 1)
    assert rt.cudaGraphGetNodes(g, 0) == (E.cudaSuccess, [], 2)
    assert rt.cudaGraphGetNodes(g) == (E.cudaSuccess, [], 2)
    assert rt.cudaGraphGetRootNodes(g) == (E.cudaSuccess, [], 1)
    err, nodes, n = rt.cudaGraphGetNodes(g, 2)
    assert err == E.cudaSuccess and n == 2 and len(nodes) == 2
    err, frm, to, data, count = rt.cudaGraphGetEdges(g, 1)
    assert err == E.cudaSuccess and count == 1 and len(data) == 1
    assert [int(frm[0]), int(to[0])] == [int(nodes[0]), int(nodes[1])]
    err, frm, to, data, count = rt.cudaGraphGetEdges(g, 5)
    assert err == E.cudaSuccess and count == 1 and len(frm) == len(to) == len(data) == 5
    assert [int(v) for v in frm[1:]] == [0] * 4 and [int(v) for v in to[1:]] == [0] * 4


def test_capture_info_of_a_stream_that_is_not_capturing(res):
    """probe: capinfo_none."""
    s = res.stream()
    err, st, cid, graph, deps, edge_data, ndeps = rt.cudaStreamGetCaptureInfo(s)
    assert err == E.cudaSuccess and st == ST.cudaStreamCaptureStatusNone
    assert (cid, int(graph), deps, edge_data, ndeps) == (0, 0, [], [], 0)

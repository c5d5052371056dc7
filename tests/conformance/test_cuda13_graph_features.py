"""Conformance: CUDA 12.3 to 13.3's graph features, the same file on both backends.

NOT PROBED on a GPU yet (the GPU issue runs this file with ``LABKIT_BACKEND=cuda``): each
expectation follows CUDA's documentation of the call, as cuda-bindings 13.5 carries it in its
docstrings, or NVIDIA's own cuda-bindings tests (which run on GPUs). Graph, executable and node
IDs (13.1) and the DOT print; conditional handles with a context (13.1); enabling and
disabling nodes; kernel node priorities, set or taken from the capturing stream; programmatic
edges (PDL), made or captured from a launch with programmatic stream serialization (the driver's
``cuLaunchKernelEx``, through ``labkit.prepare``); re-capture into an existing
graph (13.3); the device-launch instantiation rules; memory pools; pitched 3D memory;
``cudaHostUnregister``'s two errors.

Timings and race reports are the simulator's model and are asserted on "sim" only (each says
why); the GPU confirms what its docstring's ``GPU:`` line names.
"""
from __future__ import annotations

import ctypes

import labkit  # noqa: F401  (before numba.cuda)
import numpy as np
import pytest
from labkit import rt
from labkit.course.workloads import busy

from kernels import BLOCK, GRID, N, add_one, copy_into

E = rt.cudaError_t
NT = rt.cudaGraphNodeType
OK = (E.cudaSuccess,)
GLOBAL = rt.cudaStreamCaptureMode.cudaStreamCaptureModeGlobal
FLAGS = rt.cudaGraphInstantiateFlags
sim_only = pytest.mark.skipif(labkit.backend != "sim",
                              reason="the simulator's timing model or race report: a GPU's "
                                     "figures are measured in the GPU issue, not asserted")
WIDE = 1024                # blocks: more than any GPU's SMs, so the kernel fills the device


def ok(result):
    assert result[0] == E.cudaSuccess, result[0]
    return result[1] if len(result) == 2 else result[1:]


def ptr(a):
    return a.device_ctypes_pointer.value


def dev(fill=0.0, n=N):
    return labkit.to_device(np.full(n, fill, np.float32))


def captured(res, *launches):
    """A graph captured from ``launches`` (functions of the capturing stream), its nodes."""
    s = res.stream()
    assert rt.cudaStreamBeginCapture(s, GLOBAL) == OK
    for launch in launches:
        launch(s)
    g = res.graph(ok(rt.cudaStreamEndCapture(s)))
    return g, list(ok(rt.cudaGraphGetNodes(g, len(launches)))[0])


def kernel_node(res, g, deps, launch, stream=None):
    """A kernel node made by capturing ``launch`` into ``g`` after ``deps`` (from ``stream``,
    or a new one)."""
    s = res.stream() if stream is None else stream
    assert rt.cudaStreamBeginCaptureToGraph(s, g, deps, None, len(deps), GLOBAL) == OK
    launch(s)
    _, _, _, _, tail, _, _ = rt.cudaStreamGetCaptureInfo(s)
    assert rt.cudaStreamEndCapture(s)[0] == E.cudaSuccess
    return tail[0]


def elapsed_ms(res, ge):
    s = res.stream()
    a, b = res.event(), res.event()
    assert rt.cudaEventRecord(a, s) == OK
    assert rt.cudaGraphLaunch(ge, s) == OK
    assert rt.cudaEventRecord(b, s) == OK
    assert rt.cudaEventSynchronize(b) == OK
    return ok(rt.cudaEventElapsedTime(a, b))


# ------------------------------------------------------------------ versions

@sim_only
def test_the_simulator_reports_the_cuda_version_cuda_bindings_was_built_for():
    assert rt.cudaDriverGetVersion() == (E.cudaSuccess, rt.CUDART_VERSION)
    assert rt.cudaRuntimeGetVersion() == (E.cudaSuccess, rt.CUDART_VERSION)
    assert rt.CUDART_VERSION >= 13030      # what recapture needs


# ------------------------------------------------------------------ IDs (13.1)

def test_graphs_and_executables_have_distinct_positive_ids(res):
    """GPU: the IDs are positive and distinct (NVIDIA's test_cudaGraphGetId asserts the same)."""
    g1, g2 = (res.graph(ok(rt.cudaGraphCreate(0))) for _ in range(2))
    ids = [ok(rt.cudaGraphGetId(g)) for g in (g1, g2)]
    assert min(ids) > 0 and ids[0] != ids[1]
    for g in (g1, g2):
        ok(rt.cudaGraphAddEmptyNode(g, None, 0))
    x1, x2 = (res.exec(ok(rt.cudaGraphInstantiate(g, 0))) for g in (g1, g2))
    xids = [ok(rt.cudaGraphExecGetId(x)) for x in (x1, x2)]
    assert min(xids) > 0 and xids[0] != xids[1]


def test_node_local_ids_count_from_zero_in_creation_order_and_tools_ids_differ(res):
    """GPU: local IDs 0, 1, 2 in creation order (the DOT print's numbering; NOT PROBED)."""
    g = res.graph(ok(rt.cudaGraphCreate(0)))
    a = ok(rt.cudaGraphAddEmptyNode(g, None, 0))
    b = ok(rt.cudaGraphAddEmptyNode(g, [a], 1))
    c = ok(rt.cudaGraphAddEmptyNode(g, [a, b], 2))
    assert [ok(rt.cudaGraphNodeGetLocalId(n)) for n in (a, b, c)] == [0, 1, 2]
    tools = {ok(rt.cudaGraphNodeGetToolsId(n)) for n in (a, b, c)}
    assert len(tools) == 3


def test_a_node_knows_its_graph_and_a_body_node_its_body(res):
    g = res.graph(ok(rt.cudaGraphCreate(0)))
    n = ok(rt.cudaGraphAddEmptyNode(g, None, 0))
    assert int(ok(rt.cudaGraphNodeGetContainingGraph(n))) == int(g)
    handle = ok(rt.cudaGraphConditionalHandleCreate(g, 1, 0))
    p = rt.cudaGraphNodeParams()
    p.type = NT.cudaGraphNodeTypeConditional
    p.conditional.handle, p.conditional.size = handle, 1
    p.conditional.type = rt.cudaGraphConditionalNodeType.cudaGraphCondTypeIf
    ok(rt.cudaGraphAddNode(g, [n], None, 1, p))
    body = p.conditional.phGraph_out[0]
    inner = ok(rt.cudaGraphAddEmptyNode(body, None, 0))
    assert int(ok(rt.cudaGraphNodeGetContainingGraph(inner))) == int(body)


def test_ids_of_null_handles_are_invalid_values():
    assert rt.cudaGraphGetId(rt.cudaGraph_t(0))[0] == E.cudaErrorInvalidValue
    assert rt.cudaGraphExecGetId(rt.cudaGraphExec_t(0))[0] == E.cudaErrorInvalidValue
    assert rt.cudaGraphNodeGetLocalId(rt.cudaGraphNode_t(0))[0] == E.cudaErrorInvalidValue
    rt.cudaGetLastError()


# ------------------------------------------------------------------ the DOT print

def test_the_dot_print_names_the_graph_its_kernels_and_its_edges(res, tmp_path):
    """GPU: a DOT digraph naming the graph's ID and the kernel; one arrow per edge at least."""
    x = dev()
    g, _ = captured(res, lambda s: add_one[GRID, BLOCK, s](x),
                    lambda s: add_one[GRID, BLOCK, s](x))
    path = tmp_path / "g.dot"
    assert rt.cudaGraphDebugDotPrint(g, str(path).encode(), 0) == OK
    text = path.read_text()
    assert text.lstrip().startswith("digraph")
    assert f"graph_{ok(rt.cudaGraphGetId(g))}" in text and "add_one" in text
    assert text.count("->") >= 1


@sim_only
def test_the_verbose_dot_print_adds_kernel_parameters_and_handles(res, tmp_path):
    """The layout of the parameters is the simulator's (a GPU's driver writes its own)."""
    x = dev()
    g, (node,) = captured(res, lambda s: add_one[GRID, BLOCK, s](x))
    plain, verbose = tmp_path / "plain.dot", tmp_path / "verbose.dot"
    assert rt.cudaGraphDebugDotPrint(g, str(plain).encode(), 0) == OK
    flag = rt.cudaGraphDebugDotFlags.cudaGraphDebugDotFlagsVerbose
    assert rt.cudaGraphDebugDotPrint(g, str(verbose).encode(), flag) == OK
    assert "grid (4, 1, 1)" not in plain.read_text()
    assert "grid (4, 1, 1)" in verbose.read_text()
    assert f"node handle {int(node):#x}" in verbose.read_text()


def test_a_dot_print_to_a_path_that_cannot_be_written_is_an_operating_system_error(res, tmp_path):
    g = res.graph(ok(rt.cudaGraphCreate(0)))
    bad = str(tmp_path / "no such dir" / "g.dot").encode()
    assert rt.cudaGraphDebugDotPrint(g, bad, 0) == (E.cudaErrorOperatingSystem,)
    rt.cudaGetLastError()


# ------------------------------------------------------------------ conditional handles (13.1)

def test_a_conditional_handle_takes_the_devices_context_or_none(res):
    g = res.graph(ok(rt.cudaGraphCreate(0)))
    ctx = ok(rt.cudaDeviceGetExecutionCtx(0))
    assert ok(rt.cudaGraphConditionalHandleCreate_v2(g, ctx, 0, 0)) is not None
    assert ok(rt.cudaGraphConditionalHandleCreate_v2(g, None, 0, 0)) is not None


# ------------------------------------------------------------------ enabling and disabling

def test_a_disabled_node_takes_no_time(res):
    """GPU: a launch with the long kernel disabled is much shorter (under half)."""
    x = labkit.to_device(np.zeros(32, np.float32))
    g, (node,) = captured(res, lambda s: busy[1, 32, s](x, 200_000))
    ge = res.exec(ok(rt.cudaGraphInstantiate(g, 0)))
    on = elapsed_ms(res, ge)
    assert rt.cudaGraphNodeSetEnabled(ge, node, 0) == OK
    off = elapsed_ms(res, ge)
    assert off < on / 2


def test_only_kernel_memcpy_and_memset_nodes_can_be_disabled(res):
    g = res.graph(ok(rt.cudaGraphCreate(0)))
    empty = ok(rt.cudaGraphAddEmptyNode(g, None, 0))
    ge = res.exec(ok(rt.cudaGraphInstantiate(g, 0)))
    assert rt.cudaGraphNodeSetEnabled(ge, empty, 0) == (E.cudaErrorInvalidValue,)
    rt.cudaGetLastError()


@pytest.mark.skipif(labkit.backend != "sim", reason="on a GPU a destroyed node's handle "
                    "dangles: passing it may crash the process, so the GPU is not asked")
def test_a_node_removed_from_the_graph_cannot_be_disabled(res):
    """cudaGraphNodeSetEnabled's documentation: hNode must not have been removed from the
    original graph; the simulator answers cudaErrorInvalidValue, the one error it lists."""
    x = dev()
    g, (node,) = captured(res, lambda s: add_one[GRID, BLOCK, s](x))
    ge = res.exec(ok(rt.cudaGraphInstantiate(g, 0)))
    assert rt.cudaGraphDestroyNode(node) == OK
    assert rt.cudaGraphNodeSetEnabled(ge, node, 0) == (E.cudaErrorInvalidValue,)
    rt.cudaGetLastError()


@sim_only
def test_a_disabled_writer_is_no_race(res):
    x = dev()
    g = res.graph(ok(rt.cudaGraphCreate(0)))
    a = kernel_node(res, g, [], lambda s: add_one[GRID, BLOCK, s](x))
    ge = res.exec(ok(rt.cudaGraphInstantiate(g, 0)))
    s1, s2 = res.stream(), res.stream()
    found = []
    for enabled in (1, 0):
        labkit.clear_races()
        assert rt.cudaGraphNodeSetEnabled(ge, a, enabled) == OK
        with pytest.warns() if enabled else _quiet():
            add_one[GRID, BLOCK, s2](x)
            assert rt.cudaGraphLaunch(ge, s1) == OK
            assert rt.cudaDeviceSynchronize() == OK
        found.append(len(labkit.races()))
    labkit.clear_races()
    assert found[0] > 0 and found[1] == 0


def _quiet():
    import contextlib
    return contextlib.nullcontext()


# ------------------------------------------------------------------ priorities

def test_a_kernel_nodes_priority_is_set_and_read_back(res):
    x = dev()
    _, (node,) = captured(res, lambda s: add_one[GRID, BLOCK, s](x))
    v = rt.cudaKernelNodeAttrValue()
    v.priority = -2
    prio = rt.cudaLaunchAttributeID.cudaLaunchAttributePriority
    assert rt.cudaGraphKernelNodeSetAttribute(node, prio, v) == OK
    assert ok(rt.cudaGraphKernelNodeGetAttribute(node, prio)).priority == -2


def _branches(res, urgent_priority):
    """Two background device-filling kernels and one urgent one, all from the graph's root;
    an event record node after the urgent kernel. Returns (graph, event, arrays): the arrays
    must outlive the launches (a node does not keep them alive)."""
    bg, urgent = dev(n=WIDE * 32), dev(n=WIDE * 32)
    g = res.graph(ok(rt.cudaGraphCreate(0)))
    for _ in range(2):
        kernel_node(res, g, [], lambda s: busy[WIDE, 32, s](bg, 20_000))
    u = kernel_node(res, g, [], lambda s: busy[WIDE, 32, s](urgent, 20_000))
    v = rt.cudaKernelNodeAttrValue()
    v.priority = urgent_priority
    assert rt.cudaGraphKernelNodeSetAttribute(
        u, rt.cudaLaunchAttributeID.cudaLaunchAttributePriority, v) == OK
    done = res.event()
    ok(rt.cudaGraphAddEventRecordNode(g, [u], 1, done))
    return g, done, (bg, urgent)


def _urgent_done_ms(res, ge, done):
    s = res.stream()
    t0 = res.event()
    assert rt.cudaEventRecord(t0, s) == OK
    assert rt.cudaGraphLaunch(ge, s) == OK
    assert rt.cudaStreamSynchronize(s) == OK
    return ok(rt.cudaEventElapsedTime(t0, done))


@sim_only
def test_with_node_priorities_an_urgent_kernel_goes_before_the_background(res):
    g, done, _arrays = _branches(res, -5)
    plain = res.exec(ok(rt.cudaGraphInstantiate(g, 0)))
    prio = res.exec(ok(rt.cudaGraphInstantiate(
        g, FLAGS.cudaGraphInstantiateFlagUseNodePriority)))
    late, early = _urgent_done_ms(res, plain, done), _urgent_done_ms(res, prio, done)
    assert early < late / 2       # first of three instead of last


# ------------------------------------------------------------------ priorities from the stream

PRIORITY = rt.cudaLaunchAttributeID.cudaLaunchAttributePriority


def _priority_stream(res, priority):
    err, s = rt.cudaStreamCreateWithPriority(rt.cudaStreamNonBlocking, priority)
    assert err == E.cudaSuccess, err
    res.streams.append(s)
    return s


def test_a_stream_priority_outside_the_devices_range_is_clamped(res):
    """cudaStreamCreateWithPriority's documentation: a priority outside
    cudaDeviceGetStreamPriorityRange's range is clamped to it (lower numbers go sooner)."""
    _, least, greatest = rt.cudaDeviceGetStreamPriorityRange()
    assert greatest < least
    assert ok(rt.cudaStreamGetPriority(_priority_stream(res, greatest - 100))) == greatest
    assert ok(rt.cudaStreamGetPriority(_priority_stream(res, least + 100))) == least
    assert ok(rt.cudaStreamGetPriority(res.stream())) == 0


def test_a_kernel_captured_from_a_priority_stream_takes_its_priority(res):
    """cudaGraphInstantiate's documentation (cudaGraphInstantiateFlagUseNodePriority):
    priorities "are only available on kernel nodes, and are copied from stream priority during
    stream capture". GPU: the node's attribute reads back the stream's priority (NOT PROBED)."""
    _, _, greatest = rt.cudaDeviceGetStreamPriorityRange()
    x = dev()
    for stream, want in ((_priority_stream(res, greatest), greatest), (res.stream(), 0)):
        assert rt.cudaStreamBeginCapture(stream, GLOBAL) == OK
        add_one[GRID, BLOCK, stream](x)
        g = res.graph(ok(rt.cudaStreamEndCapture(stream)))
        (node,) = ok(rt.cudaGraphGetNodes(g, 1))[0]
        assert ok(rt.cudaGraphKernelNodeGetAttribute(node, PRIORITY)).priority == want


@sim_only
def test_an_urgent_kernel_captured_from_a_high_priority_stream_goes_first(res):
    """As `test_with_node_priorities_an_urgent_kernel_goes_before_the_background`, the urgent
    kernel's priority coming from the stream it was captured from instead of a call."""
    _, _, greatest = rt.cudaDeviceGetStreamPriorityRange()
    bg, urgent = dev(n=WIDE * 32), dev(n=WIDE * 32)
    done_ms = []
    for stream in (res.stream(), _priority_stream(res, greatest)):
        g = res.graph(ok(rt.cudaGraphCreate(0)))
        for _ in range(2):
            kernel_node(res, g, [], lambda s: busy[WIDE, 32, s](bg, 20_000))
        u = kernel_node(res, g, [], lambda s: busy[WIDE, 32, s](urgent, 20_000), stream)
        done = res.event()
        ok(rt.cudaGraphAddEventRecordNode(g, [u], 1, done))
        ge = res.exec(ok(rt.cudaGraphInstantiate(
            g, FLAGS.cudaGraphInstantiateFlagUseNodePriority)))
        done_ms.append(_urgent_done_ms(res, ge, done))
    assert done_ms[1] < done_ms[0] / 2       # first of three instead of last


# ------------------------------------------------------------------ programmatic edges (PDL)

def _programmatic():
    d = rt.cudaGraphEdgeData()
    d.from_port = rt.cudaGraphKernelNodePortProgrammatic
    d.type = rt.cudaGraphDependencyType.cudaGraphDependencyTypeProgrammatic
    return d


def _two_kernels(res, x, y):
    g = res.graph(ok(rt.cudaGraphCreate(0)))
    a = kernel_node(res, g, [], lambda s: add_one[GRID, BLOCK, s](x))
    b = kernel_node(res, g, [], lambda s: add_one[GRID, BLOCK, s](y))
    return g, a, b


def test_a_programmatic_edge_joins_two_kernels_and_is_read_back(res):
    g, a, b = _two_kernels(res, dev(), dev())
    assert rt.cudaGraphAddDependencies(g, [a], [b], [_programmatic()], 1) == OK
    frm, to, data, n = ok(rt.cudaGraphGetEdges(g, 1))
    assert n == 1 and int(frm[0]) == int(a) and int(to[0]) == int(b)
    assert int(data[0].from_port) == rt.cudaGraphKernelNodePortProgrammatic
    res.exec(ok(rt.cudaGraphInstantiate(g, 0)))


def test_a_programmatic_edge_needs_kernels_at_both_ends(res):
    g, a, _ = _two_kernels(res, dev(), dev())
    empty = ok(rt.cudaGraphAddEmptyNode(g, None, 0))
    assert rt.cudaGraphAddDependencies(g, [a], [empty], [_programmatic()], 1) == (
        E.cudaErrorInvalidValue,)
    bad = _programmatic()
    bad.to_port = 1
    b2 = kernel_node(res, g, [], lambda s: add_one[GRID, BLOCK, s](dev()))
    assert rt.cudaGraphAddDependencies(g, [a], [b2], [bad], 1) == (E.cudaErrorInvalidValue,)
    rt.cudaGetLastError()


@sim_only
def test_a_programmatic_edge_closes_the_gap_but_a_kernel_that_never_triggers_is_not_overlapped(res):
    """CUDA: the programmatic port activates once every block has triggered or exited; a numba
    kernel never triggers, so the second starts at the first's end, without the node gap."""
    x, y = dev(), dev()
    g, a, b = _two_kernels(res, x, y)
    assert rt.cudaGraphAddDependencies(g, [a], [b], None, 1) == OK
    plain = res.exec(ok(rt.cudaGraphInstantiate(g, 0)))
    g2, a2, b2 = _two_kernels(res, x, y)
    assert rt.cudaGraphAddDependencies(g2, [a2], [b2], [_programmatic()], 1) == OK
    pdl = res.exec(ok(rt.cudaGraphInstantiate(g2, 0)))
    gaps = []
    for ge in (plain, pdl):
        with labkit.timing.timeline() as rec:
            elapsed_ms(res, ge)
        k = sorted((s for s in rec.timeline.spans if s.kind == "kernel"),
                   key=lambda s: s.start_us)
        gaps.append(k[1].start_us - k[0].end_us)
    assert gaps[0] > 0 and gaps[1] == pytest.approx(0.0, abs=1e-6)   # the gap goes, no overlap


@sim_only
def test_a_kernel_behind_a_programmatic_edge_reading_its_predecessors_output_races(res):
    """A numba kernel cannot call cudaGridDependencySynchronize: nothing makes the first
    kernel's writes visible to the second before the second starts."""
    x, y = dev(), dev()
    g = res.graph(ok(rt.cudaGraphCreate(0)))
    a = kernel_node(res, g, [], lambda s: add_one[GRID, BLOCK, s](x))
    b = kernel_node(res, g, [], lambda s: copy_into[GRID, BLOCK, s](y, x))
    assert rt.cudaGraphAddDependencies(g, [a], [b], [_programmatic()], 1) == OK
    labkit.clear_races()
    with pytest.warns(labkit.RaceWarning, match="programmatic edge lets the second start"):
        res.exec(ok(rt.cudaGraphInstantiate(g, 0)))
    labkit.clear_races()


# ------------------------------------------------------------------ PDL on a stream launch

def _pdl(k, s, *args):
    """``k`` launched on ``s`` with programmatic stream serialization: cuLaunchKernelEx with
    CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION on a GPU (labkit.prepare)."""
    labkit.prepare(k, GRID, BLOCK, s, *args, programmatic=True)()


def test_a_programmatic_stream_launch_runs_its_kernel_in_stream_order(res):
    """GPU: both kernels' results (the attribute changes when the second may start, not what it
    computes); the second does not read the first's output."""
    x, y = dev(), dev()
    s = res.stream()
    add_one[GRID, BLOCK, s](x)
    _pdl(add_one, s, y)
    add_one[GRID, BLOCK, s](y)             # a plain launch after it waits for both
    assert rt.cudaStreamSynchronize(s) == OK
    np.testing.assert_array_equal(x.copy_to_host(), np.ones(N, np.float32))
    np.testing.assert_array_equal(y.copy_to_host(), np.full(N, 2.0, np.float32))


def test_a_captured_programmatic_launch_is_a_programmatic_edge(res):
    """The CUDA Programming Guide, "Programmatic Dependent Launch and Synchronization", "Use in
    CUDA Graphs": a launch with cudaLaunchAttributeProgrammaticStreamSerialization, captured,
    is an edge of type cudaGraphDependencyTypeProgrammatic from cudaGraphKernelNodePortProgrammatic.
    GPU: that edge, read back (NOT PROBED; compute capability 9.0 and newer)."""
    x, y = dev(), dev()
    g, (a, b) = captured(res, lambda s: add_one[GRID, BLOCK, s](x), lambda s: _pdl(add_one, s, y))
    frm, to, data, n = ok(rt.cudaGraphGetEdges(g, 1))
    assert n == 1 and (int(frm[0]), int(to[0])) == (int(a), int(b))
    assert int(data[0].from_port) == rt.cudaGraphKernelNodePortProgrammatic
    assert int(data[0].type) == int(rt.cudaGraphDependencyType.cudaGraphDependencyTypeProgrammatic)
    ge = res.exec(ok(rt.cudaGraphInstantiate(g, 0)))
    s = res.stream()
    assert rt.cudaGraphLaunch(ge, s) == OK and rt.cudaStreamSynchronize(s) == OK
    np.testing.assert_array_equal(y.copy_to_host(), np.ones(N, np.float32))


@sim_only
def test_a_programmatic_stream_launch_never_starts_before_a_kernel_that_cannot_trigger_ends(res):
    """As for a programmatic edge: no overlap with a kernel that never triggers early."""
    a, y = dev(n=WIDE * 32), dev()
    s = res.stream()
    gaps = []
    for launch in (lambda: add_one[GRID, BLOCK, s](y), lambda: _pdl(add_one, s, y)):
        launch()                       # compiled and warm
        assert rt.cudaStreamSynchronize(s) == OK
        with labkit.timing.timeline() as rec:
            busy[WIDE, 32, s](a, 500)
            launch()
            assert rt.cudaStreamSynchronize(s) == OK
        k = sorted((x for x in rec.timeline.spans if x.kind == "kernel"), key=lambda x: x.start_us)
        gaps.append(k[1].start_us - k[0].end_us)
    assert gaps[0] >= 0 and gaps[1] >= 0 and gaps[1] <= gaps[0]


@sim_only
def test_a_programmatic_stream_launch_reading_its_predecessors_output_races(res):
    x, y = dev(), dev()
    s = res.stream()
    labkit.clear_races()
    with pytest.warns(labkit.RaceWarning, match="programmatic stream serialization"):
        add_one[GRID, BLOCK, s](x)
        _pdl(copy_into, s, y, x)
        assert rt.cudaStreamSynchronize(s) == OK
    assert [r.where for r in labkit.races()] == ["programmatic"]
    labkit.clear_races()


# ------------------------------------------------------------------ recapture (13.3)

needs_13_3 = pytest.mark.skipif(ok(rt.cudaDriverGetVersion()) < 13030,
                                reason="cudaStreamBeginRecaptureToGraph needs a CUDA 13.3 driver")


@needs_13_3
def test_a_recapture_gives_the_same_nodes_new_parameters(res):
    x, y = dev(), dev()
    g, nodes = captured(res, lambda s: add_one[GRID, BLOCK, s](x),
                        lambda s: add_one[GRID, BLOCK, s](x))
    ge = res.exec(ok(rt.cudaGraphInstantiate(g, 0)))
    s = res.stream()
    assert rt.cudaStreamBeginRecaptureToGraph(s, GLOBAL, g, None) == OK
    add_one[GRID, BLOCK, s](y)
    add_one[GRID, BLOCK, s](y)
    assert int(ok(rt.cudaStreamEndCapture(s))) == int(g)
    assert [int(n) for n in ok(rt.cudaGraphGetNodes(g, 2))[0]] == [int(n) for n in nodes]
    assert rt.cudaGraphExecUpdate(ge, g)[0] == E.cudaSuccess
    run = res.stream()
    assert rt.cudaGraphLaunch(ge, run) == OK and rt.cudaStreamSynchronize(run) == OK
    np.testing.assert_array_equal(y.copy_to_host(), np.full(N, 2.0, np.float32))
    np.testing.assert_array_equal(x.copy_to_host(), np.zeros(N, np.float32))


@needs_13_3
def test_a_recapture_of_another_kind_of_node_fails(res):
    x = dev()
    g, _ = captured(res, lambda s: add_one[GRID, BLOCK, s](x))
    s = res.stream()
    assert rt.cudaStreamBeginRecaptureToGraph(s, GLOBAL, g, None) == OK
    assert rt.cudaMemsetAsync(ptr(x), 0, 4 * N, s)[0] != E.cudaSuccess
    assert rt.cudaStreamEndCapture(s)[0] != E.cudaSuccess
    rt.cudaGetLastError()


# ------------------------------------------------------------------ device launch

def test_a_graph_of_kernels_instantiates_for_device_launch(res):
    x = dev()
    g, _ = captured(res, lambda s: add_one[GRID, BLOCK, s](x))
    ge = res.exec(ok(rt.cudaGraphInstantiate(g, FLAGS.cudaGraphInstantiateFlagDeviceLaunch)))
    s = res.stream()
    assert rt.cudaGraphLaunch(ge, s) == OK and rt.cudaStreamSynchronize(s) == OK
    np.testing.assert_array_equal(x.copy_to_host(), np.ones(N, np.float32))


def test_device_launch_refuses_host_nodes_and_auto_free(res):
    g = res.graph(ok(rt.cudaGraphCreate(0)))
    hp = rt.cudaHostNodeParams()
    fn = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(lambda _: None)
    hp.fn = rt.cudaHostFn_t(_ptr=ctypes.addressof(fn))
    ok(rt.cudaGraphAddHostNode(g, None, 0, hp))
    dl = FLAGS.cudaGraphInstantiateFlagDeviceLaunch
    assert rt.cudaGraphInstantiate(g, dl)[0] == E.cudaErrorInvalidValue
    g2 = res.graph(ok(rt.cudaGraphCreate(0)))
    x = dev()
    kernel_node(res, g2, [], lambda s: add_one[GRID, BLOCK, s](x))
    both = int(dl) | int(FLAGS.cudaGraphInstantiateFlagAutoFreeOnLaunch)
    assert rt.cudaGraphInstantiate(g2, both)[0] == E.cudaErrorInvalidValue
    rt.cudaGetLastError()


# ------------------------------------------------------------------ memory pools

A = rt.cudaMemPoolAttr


def _pool():
    p = rt.cudaMemPoolProps()
    p.allocType = rt.cudaMemAllocationType.cudaMemAllocationTypePinned
    p.location.type = rt.cudaMemLocationType.cudaMemLocationTypeDevice
    p.location.id = 0
    return ok(rt.cudaMemPoolCreate(p))


def _attr(pool, a):
    return int(ok(rt.cudaMemPoolGetAttribute(pool, a)))


def test_a_new_pool_has_cudas_defaults_and_takes_new_ones():
    pool = _pool()
    try:
        assert [_attr(pool, a) for a in (A.cudaMemPoolReuseFollowEventDependencies,
                                          A.cudaMemPoolReuseAllowOpportunistic,
                                          A.cudaMemPoolReuseAllowInternalDependencies,
                                          A.cudaMemPoolAttrReleaseThreshold)] == [1, 1, 1, 0]
        assert rt.cudaMemPoolSetAttribute(pool, A.cudaMemPoolReuseAllowOpportunistic, 0) == OK
        from cuda.bindings import driver
        assert rt.cudaMemPoolSetAttribute(pool, A.cudaMemPoolAttrReleaseThreshold,
                                          driver.cuuint64_t(1 << 20)) == OK
        assert _attr(pool, A.cudaMemPoolReuseAllowOpportunistic) == 0
        assert _attr(pool, A.cudaMemPoolAttrReleaseThreshold) == 1 << 20
        assert rt.cudaMemPoolSetAttribute(pool, A.cudaMemPoolAttrUsedMemHigh, 5) == (
            E.cudaErrorInvalidValue,)
    finally:
        assert rt.cudaMemPoolDestroy(pool) == OK
    rt.cudaGetLastError()


def test_a_pool_counts_what_is_used_and_gives_it_back_at_a_sync_past_its_threshold(res):
    """GPU: used at least the bytes asked for, reserved at least used; with threshold 0 the
    freed memory is released at the next synchronize."""
    pool, s = _pool(), res.stream()
    try:
        p = ok(rt.cudaMallocFromPoolAsync(1 << 20, pool, s))
        assert _attr(pool, A.cudaMemPoolAttrUsedMemCurrent) >= 1 << 20
        assert _attr(pool, A.cudaMemPoolAttrReservedMemCurrent) >= _attr(
            pool, A.cudaMemPoolAttrUsedMemCurrent)
        assert rt.cudaMemsetAsync(p, 1, 1 << 20, s) == OK
        assert rt.cudaFreeAsync(p, s) == OK
        assert rt.cudaStreamSynchronize(s) == OK
        assert _attr(pool, A.cudaMemPoolAttrUsedMemCurrent) == 0
        assert _attr(pool, A.cudaMemPoolAttrReservedMemCurrent) == 0
        assert _attr(pool, A.cudaMemPoolAttrUsedMemHigh) >= 1 << 20
    finally:
        assert rt.cudaMemPoolDestroy(pool) == OK


def test_the_default_pool_cannot_be_destroyed_nor_a_destroyed_pool_used(res):
    default = ok(rt.cudaDeviceGetDefaultMemPool(0))
    assert rt.cudaMemPoolDestroy(default) == (E.cudaErrorInvalidValue,)
    pool = _pool()
    assert rt.cudaMemPoolDestroy(pool) == OK
    rt.cudaGetLastError()


# ------------------------------------------------------------------ pitched memory

def test_malloc3d_pads_rows_to_an_aligned_pitch_and_memset3d_sets_only_the_extent():
    """GPU: the pitch is a multiple of 512 bytes (NOT PROBED; cudaMallocPitch's alignment)."""
    pp = ok(rt.cudaMalloc3D(rt.make_cudaExtent(100, 4, 2)))
    try:
        assert pp.pitch >= 100 and pp.pitch % 512 == 0
        assert (pp.xsize, pp.ysize) == (100, 4)
        total = pp.pitch * 4 * 2
        assert rt.cudaMemset(pp.ptr, 0, total) == OK
        assert rt.cudaMemset3D(pp, 7, rt.make_cudaExtent(10, 3, 2)) == OK
        out = np.zeros(total, np.uint8)
        assert rt.cudaMemcpy(out, pp.ptr, total, rt.cudaMemcpyKind.cudaMemcpyDeviceToHost) == OK
        want = np.zeros((2, 4, pp.pitch), np.uint8)
        want[:, :3, :10] = 7
        np.testing.assert_array_equal(out.reshape(2, 4, pp.pitch), want)
    finally:
        assert rt.cudaFree(pp.ptr) == OK


def test_memset3d_wider_than_the_pitch_is_an_invalid_value():
    pp = ok(rt.cudaMalloc3D(rt.make_cudaExtent(64, 2, 1)))
    try:
        assert rt.cudaMemset3D(pp, 1, rt.make_cudaExtent(pp.pitch + 1, 2, 1))[0] != E.cudaSuccess
    finally:
        rt.cudaGetLastError()
        assert rt.cudaFree(pp.ptr) == OK


# ------------------------------------------------------------------ host unregister

def test_unregistering_inside_a_registered_range_is_invalid_and_elsewhere_not_registered():
    """GPU: cuda-bindings' test_cudart_hostRegister asserts the first (on GPUs); the second is
    tests/conformance/test_host_memory.py's."""
    buf = np.ones(4096 * 3, np.uint8)
    base = buf.ctypes.data
    assert rt.cudaHostRegister(base, 8192, rt.cudaHostRegisterPortable) == OK
    try:
        assert rt.cudaHostUnregister(base + 4096) == (E.cudaErrorInvalidValue,)
        other = np.ones(64, np.uint8)
        assert rt.cudaHostUnregister(other.ctypes.data) == (E.cudaErrorHostMemoryNotRegistered,)
    finally:
        assert rt.cudaHostUnregister(base) == OK
    rt.cudaGetLastError()

"""labkit.timing.timeline: the CPU row is labkit's own calls (the same spans on both backends),
a learner's raw runtime calls join it, and a graph's independent branches get a row each.

Runs on the simulator (the GPU side of the same rules is tests/measure/test_trace_honesty.py).
"""
from __future__ import annotations

import os

import numpy as np
import pytest

import labkit
from labkit import _host_calls, timing
from labkit.measure import _trace
from labkit.measure.timeline import CPU_ROW, Span
from labkit.sim.clock import Lanes, P
from tests.kernels import BLOCK, GRID, N, add_one

pytestmark = pytest.mark.skipif(os.environ.get("LABKIT_BACKEND", "sim") != "sim",
                                reason="the simulator's timelines (LABKIT_BACKEND=sim)")


@pytest.fixture
def stream():
    s = labkit.Stream()
    yield s
    s.close()


def _cpu(tl):
    return [(s.name, s.kind) for s in tl.row_spans(CPU_ROW)]


def test_cpu_row_shows_each_labkit_call_once_as_what_it_is(stream):
    x = labkit.to_device(np.zeros(N, np.float32))
    prepared = labkit.prepare(add_one, GRID, BLOCK, stream, x)
    with labkit.capture(stream) as cap:
        add_one[GRID, BLOCK, stream](x)
    ex = cap.graph.instantiate()
    with timing.timeline() as rec:
        add_one[GRID, BLOCK, stream](x)
        prepared()
        ex.launch(stream)
        stream.synchronize()
    assert _cpu(rec.timeline) == [("launch add_one", "launch"), ("prepared add_one", "launch"),
                                  ("cudaGraphLaunch", "graph"), ("cudaStreamSynchronize", "sync")]


@pytest.mark.usefixtures("steady_host")          # the model's exact figure
def test_eager_launch_span_is_the_whole_dispatch_the_model_charges(stream):
    x = labkit.to_device(np.zeros(N, np.float32))
    with timing.timeline() as rec:
        add_one[GRID, BLOCK, stream](x)
    (span,) = rec.timeline.row_spans(CPU_ROW)
    assert span.duration_us == pytest.approx(P("numba_launch_us"))


def test_raw_runtime_calls_outside_labkit_calls_join_the_cpu_row(stream):
    x = labkit.to_device(np.zeros(N, np.float32))
    with timing.timeline() as rec:
        add_one[GRID, BLOCK, stream](x)
        labkit.rt.cudaStreamSynchronize(int(stream))       # a learner's raw call
    assert _cpu(rec.timeline) == [("launch add_one", "launch"), ("cudaStreamSynchronize", "sync")]


def test_no_span_is_recorded_when_no_timeline_is_open(stream):
    x = labkit.to_device(np.zeros(N, np.float32))
    add_one[GRID, BLOCK, stream](x)
    assert _host_calls.active is None


def test_timelines_cannot_nest():
    with timing.timeline():
        with pytest.raises(RuntimeError, match=r"^a timeline is already recording"):
            with timing.timeline():
                pass
    assert _host_calls.active is None


def test_a_forked_graph_draws_each_branch_on_a_row_of_its_own(stream):
    sides = [labkit.Stream() for _ in range(2)]
    xs = [labkit.to_device(np.zeros(N, np.float32)) for _ in range(3)]
    with labkit.capture(stream) as cap:
        with labkit.fork(stream, *sides):
            for s, x in zip([stream] + sides, xs):
                add_one[GRID, BLOCK, s](x)
                add_one[GRID, BLOCK, s](x)
    ex = cap.graph.instantiate()
    with timing.timeline() as rec:
        ex.launch(stream)
        stream.synchronize()
    device_rows = [r for r in rec.timeline.rows() if r != CPU_ROW]
    assert len(device_rows) == 3
    assert all(len([s for s in rec.timeline.row_spans(r) if s.kind == "kernel"]) == 2
               for r in device_rows)
    for s in sides:
        s.close()


def test_a_chain_stays_on_one_lane_and_parallel_roots_take_new_ones():
    lanes = Lanes()
    assert [lanes.place(i, [i - 1] if i else [], float(i), i + 1.0) for i in range(3)] == [0, 0, 0]
    fork = Lanes()
    # 0 -> (1, 2) -> 3: the two branches run side by side, the join continues a branch's lane
    assert fork.place(0, [], 0.0, 1.0) == 0
    assert fork.place(1, [0], 1.0, 2.0) == 0
    assert fork.place(2, [0], 1.0, 2.0) == 1
    assert fork.place(3, [1, 2], 2.0, 3.0) == 0


# --------------------------------------------------------------------------- the GPU's assembly

class _FakeGraph:
    def __init__(self, kinds):
        self._kinds = kinds

    def node_kinds(self):
        return self._kinds


def _host(name, kind, start_ns, end_ns, target):
    """A span of labkit's CPU row as a GPU's recorder hands it out: µs of perf_counter_ns."""
    return Span(CPU_ROW, name, start_ns / 1e3, end_ns / 1e3, kind, target=target)


class _FakeExec:
    def __init__(self, kinds):
        self.graph = _FakeGraph(kinds)


def test_gpu_timeline_aligns_host_spans_to_device_records_and_drops_the_warmup():
    # host clock (perf_counter ns) runs 1_000_000 ns behind CUPTI's; the block begins at 5000 ns
    host = [_host("launch add_one", "launch", 5_000, 35_000, None)]
    records = [Span("stream 7", "_labkit_trace_probe", 1.0, 2.0, "kernel"),   # warm-up
               Span("stream 7", "add_one", 1_000.0, 1_002.0, "kernel")]       # µs from t0_cupti
    tl = _trace.gpu_timeline(host, records, begin_ns=5_000, offset_ns=1_000_000,
                             t0_cupti_ns=6_000, note="", warmup_names=("_labkit_trace_probe",))
    (cpu,) = tl.row_spans(CPU_ROW)
    assert (cpu.start_us, cpu.end_us) == (0.0, 30.0)
    (kernel,) = tl.row_spans("stream 7")
    # the block began at CUPTI 1_005_000 ns = 999 µs after t0_cupti
    assert kernel.start_us == pytest.approx(1.0)
    assert tl.source == "cupti"


def test_gpu_timeline_marks_the_tracers_share_of_a_graph_launch_by_its_kernel_nodes():
    ex = _FakeExec(["kernel"] * 20 + ["memset"])
    host = [_host("cudaGraphLaunch", "graph", 0, 30_000, ex),
            _host("cudaGraphLaunch", "graph", 40_000, 41_000, ex)]
    tl = _trace.gpu_timeline(host, [], begin_ns=0, offset_ns=0, t0_cupti_ns=0, note="",
                             graph_added=_trace.GraphAdded(3.0, 0.7))
    first, second = tl.row_spans(CPU_ROW)
    assert first.added_us == pytest.approx(17.0)      # 3 µs + 20 kernel nodes x 0.7 µs
    assert second.added_us == pytest.approx(1.0)      # never more than the span itself


def test_only_an_executables_first_launch_in_the_block_carries_the_first_launch_share():
    a, b = _FakeExec(["kernel"] * 10), _FakeExec(["kernel"] * 10)
    host = [_host("cudaGraphLaunch", "graph", t, t + 50_000, ex)
            for t, ex in ((0, a), (100_000, a), (200_000, b))]
    share = _trace.GraphAdded(2.0, 0.5, first_fixed_us=10.0, first_per_node_us=1.0)
    tl = _trace.gpu_timeline(host, [], begin_ns=0, offset_ns=0, t0_cupti_ns=0, note="",
                             graph_added=share)
    assert [s.added_us for s in tl.row_spans(CPU_ROW)] == pytest.approx([27.0, 7.0, 27.0])


def test_api_records_inside_labkit_spans_are_left_out_and_others_kept():
    labkit_spans = [Span(CPU_ROW, "launch add_one", 0.0, 30.0, "launch")]
    api = [Span(CPU_ROW, "cuLaunchKernel", 20.0, 28.0, "launch"),
           Span(CPU_ROW, "cudaMemcpy", 40.0, 45.0, "api")]
    merged = _trace.merge_cpu_rows(labkit_spans, api)
    assert [s.name for s in merged] == ["launch add_one", "cudaMemcpy"]


def test_the_note_says_what_tracing_adds_per_eager_launch_and_per_graph_launch():
    untraced = _trace.ProbeCosts(eager=20.0, graph=3.0, graph1=2.0)
    traced = _trace.ProbeCosts(eager=31.0, graph=17.0 + 2.0, graph1=2.0 + 2.0 + 0.7)
    note, added = _trace.added_note(untraced, traced, nodes=20)
    assert added.per_node_us == pytest.approx(0.7)
    assert added.fixed_us == pytest.approx(2.0)
    assert "≈11 µs to an eager launch (20 → 31 µs, hatched)" in note
    assert "≈2 µs + 0.70 µs per kernel node" in note


def test_the_first_launch_share_is_fitted_against_the_traced_steady_launches():
    untraced = _trace.ProbeCosts(eager=20.0, graph=3.0, graph1=2.0)
    traced = _trace.ProbeCosts(eager=20.0, graph=17.0, graph1=4.0)
    first = _trace.FirstCosts(graph=17.0 + 10.0 + 19 * 1.0 + 1.0, graph1=4.0 + 11.0,
                              function_us=25.0)
    note, added = _trace.added_note(untraced, traced, nodes=20, first=first)
    assert added.first_per_node_us == pytest.approx(1.0)
    assert added.first_fixed_us == pytest.approx(10.0)
    assert added.function_us == 25.0
    assert "its first ≈10 µs + 1.00 µs per node more" in note
    assert "≈25 µs to a kernel's first launch in the trace" in note


class _Kernel:
    def __init__(self, name):
        self.name = name


def test_a_kernels_first_launch_in_the_block_carries_the_function_share_eager_or_in_a_graph():
    ex = _FakeExec(["kernel"] * 10)
    ex.graph.launched = {_Kernel("add_one"): [], _Kernel("scale"): []}
    host = [_host("launch add_one", "launch", 0, 80_000, None),
            _host("launch add_one", "launch", 100_000, 130_000, None),
            _host("prepared scale", "launch", 200_000, 240_000, None),
            _host("cudaGraphLaunch", "graph", 300_000, 400_000, ex)]
    share = _trace.GraphAdded(2.0, 0.5, function_us=30.0, floor_eager_us=20.0)
    tl = _trace.gpu_timeline(host, [], begin_ns=0, offset_ns=0, t0_cupti_ns=0, note="",
                             graph_added=share)
    # the first add_one pays it; scale's first launch (prepared) too; the graph's kernels are
    # both seen by then, so it carries only its per-node share (and its first launch's, 0 here)
    assert [s.added_us for s in tl.row_spans(CPU_ROW)] == pytest.approx([30.0, 0.0, 30.0, 7.0])


def test_every_eager_launch_carries_the_tracers_measured_share_and_noise_carries_none():
    untraced = _trace.ProbeCosts(eager=20.0, graph=3.0, graph1=2.0)
    _, added = _trace.added_note(untraced, untraced._replace(eager=31.0), nodes=20)
    _, noise = _trace.added_note(untraced, untraced._replace(eager=21.0), nodes=20)
    assert (added.eager_us, noise.eager_us) == pytest.approx((11.0, 0.0))
    host = [_host("launch add_one", "launch", 0, 60_000, None),
            _host("launch add_one", "launch", 100_000, 131_000, None),
            _host("launch add_one", "launch", 200_000, 225_000, None),
            _host("prepared add_one", "launch", 300_000, 310_000, None)]
    tl = _trace.gpu_timeline(host, [], begin_ns=0, offset_ns=0, t0_cupti_ns=0, note="",
                             graph_added=added._replace(function_us=25.0))
    # the first launch: the kernel's first-launch share and the eager share; the next ones the
    # eager share, never leaving less than the untraced 20 µs solid; a prepared launch none
    assert [s.added_us for s in tl.row_spans(CPU_ROW)] == pytest.approx([36.0, 11.0, 5.0, 0.0])


def test_the_solid_part_never_drops_below_the_probes_untraced_cost():
    ex = _FakeExec(["kernel"] * 20)
    host = [_host("launch add_one", "launch", 0, 35_000, None),
            _host("cudaGraphLaunch", "graph", 100_000, 110_000, ex)]
    share = _trace.GraphAdded(2.0, 1.0, first_fixed_us=10.0, function_us=30.0,
                              floor_eager_us=20.0, floor_graph_us=2.0, floor_per_node_us=0.05)
    tl = _trace.gpu_timeline(host, [], begin_ns=0, offset_ns=0, t0_cupti_ns=0, note="",
                             graph_added=share)
    eager, graph = tl.row_spans(CPU_ROW)
    assert eager.duration_us - eager.added_us == pytest.approx(20.0)
    assert graph.duration_us - graph.added_us == pytest.approx(3.0)


@pytest.mark.parametrize("untraced, traced, says", [
    (42.0, 39.0, "nothing measurable to an eager launch (≈42 µs either way)"),
    (69.0, 32.0, "came out faster traced (69 → 32 µs, the host's own noise)"),
    (20.0, 31.0, "tracing adds: ≈11 µs to an eager launch (20 → 31 µs, hatched)"),
])
def test_the_note_does_not_report_the_hosts_noise_as_a_tracer_cost(untraced, traced, says):
    note, _ = _trace.added_note(_trace.ProbeCosts(untraced, 3.0, 2.0),
                                _trace.ProbeCosts(traced, 3.0, 2.0), nodes=20)
    assert says in note


def test_the_graph_share_fit_never_goes_negative():
    # a noisy probe: the big graph came out cheaper traced than untraced
    added = _trace.graph_added(_trace.ProbeCosts(20.0, 10.0, 2.0),
                               _trace.ProbeCosts(25.0, 9.0, 3.0), nodes=20)
    assert added.per_node_us == 0.0 and added.fixed_us == pytest.approx(1.0)


@pytest.mark.usefixtures("steady_host")          # compares the model's exact first costs
def test_the_trace_probe_launches_through_labkit_and_keeps_its_records_named():
    probe = _trace.TraceProbe()
    costs = probe.host_costs_us()
    assert costs.eager > costs.graph1 > 0          # the model: numba's dispatch vs one node
    probe.fresh()
    with timing.timeline() as rec:
        first = probe.warm()
    probe.close_fresh()
    names = {s.name for s in rec.timeline.spans if s.kind == "kernel"}
    assert names <= set(probe.names) and _trace.TraceProbe.NAME in names
    assert first.graph > first.graph1 > 0          # fresh executables' first launches, timed


def test_a_span_refuses_a_tracer_share_longer_than_itself():
    with pytest.raises(ValueError, match=r"added_us=5 must lie between 0 and the span's duration"):
        Span(CPU_ROW, "cudaGraphLaunch", 0.0, 2.0, "graph", added_us=5).checked()

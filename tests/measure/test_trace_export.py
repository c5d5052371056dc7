"""Timelines export to Chrome trace-event JSON that Perfetto and chrome://tracing open."""
import json

import labkit
import numpy as np
import pytest

from labkit import timing
from labkit.measure._spans import Span, Timeline
from labkit.measure.trace_export import GPU_PID, HOST_PID, chrome_trace, save_chrome_trace
from tests.kernels import BLOCK, GRID, N, add_one, scale


def _x_events(trace):
    return [e for e in trace["traceEvents"] if e["ph"] == "X"]


def _thread_names(trace):
    return {(e["pid"], e["tid"]): e["args"]["name"] for e in trace["traceEvents"]
            if e["ph"] == "M" and e["name"] == "thread_name"}


def _recorded_timeline():
    s = labkit.Stream()
    x = labkit.to_device(np.zeros(N, np.float32))
    with labkit.capture(s) as cap:
        add_one[GRID, BLOCK, s](x)
        scale[GRID, BLOCK, s](x)
    ex = cap.graph.instantiate()
    ex.launch(s)
    s.synchronize()
    with timing.timeline() as rec:
        add_one[GRID, BLOCK, s](x)
        for _ in range(3):
            ex.launch(s)
        s.synchronize()
    return rec.timeline


def test_a_recorded_timeline_saved_and_loaded_has_one_event_per_span_with_its_times(tmp_path):
    tl = _recorded_timeline()
    path = save_chrome_trace(tl, tmp_path / "trace.json")
    trace = json.loads(open(path, encoding="utf-8").read())
    events = _x_events(trace)
    assert len(events) == len(tl.spans) > 4
    names = _thread_names(trace)
    t0 = tl.start_us
    got = sorted((names[(e["pid"], e["tid"])].split(" (overlap")[0], e["name"], e["cat"],
                  e["ts"], e["dur"]) for e in events)
    want = sorted((s.row, s.name, s.kind, s.start_us - t0, s.duration_us) for s in tl.spans)
    assert [g[:3] for g in got] == [w[:3] for w in want]
    for g, w in zip(got, want):     # times to the nanosecond, the export's resolution
        assert g[3:] == pytest.approx(w[3:], abs=6e-4)
    assert trace["displayTimeUnit"] == "ns" and trace["otherData"]["source"] == tl.source


def test_host_rows_are_threads_of_the_host_process_and_streams_of_the_gpu_process():
    tl = _recorded_timeline()
    trace = chrome_trace(tl)
    for e in _x_events(trace):
        row = e["args"]["row"]
        assert e["pid"] == (HOST_PID if row.startswith("CPU") else GPU_PID)
    procs = {e["pid"]: e["args"]["name"] for e in trace["traceEvents"]
             if e["ph"] == "M" and e["name"] == "process_name"}
    assert procs == {HOST_PID: "host", GPU_PID: "GPU"}
    assert any(e["cat"] == "graph" for e in _x_events(trace))
    assert any(e["cat"] == "kernel" for e in _x_events(trace))


def test_ids_and_the_tracers_share_travel_in_args():
    tl = Timeline([Span("CPU", "cudaGraphLaunch", 0.0, 3.0, "graph", correlation_id=7,
                        added_us=1.0),
                   Span("stream 1", "add_one", 2.0, 4.0, "kernel", correlation_id=7, graph_id=3)])
    ev = {e["name"]: e for e in _x_events(chrome_trace(tl))}
    assert ev["cudaGraphLaunch"]["args"] == {"row": "CPU", "correlation_id": 7,
                                             "added_by_tracer_us": 1.0}
    assert ev["add_one"]["args"] == {"row": "stream 1", "correlation_id": 7, "graph_id": 3}
    assert (ev["add_one"]["ts"], ev["add_one"]["dur"]) == (2.0, 2.0)


def _nests_on_each_thread(events):
    by = {}
    for e in events:
        by.setdefault((e["pid"], e["tid"]), []).append((e["ts"], e["ts"] + e["dur"]))
    for spans in by.values():
        stack = []
        for a, b in sorted(spans, key=lambda t: (t[0], -t[1])):
            while stack and stack[-1] <= a:
                stack.pop()
            if stack and b > stack[-1]:
                return False
            stack.append(b)
    return True


def test_spans_that_overlap_without_nesting_go_to_an_overlap_thread_and_nothing_is_dropped():
    tl = Timeline([Span("stream 1", "a", 0.0, 10.0, "kernel"),
                   Span("stream 1", "b", 5.0, 15.0, "kernel"),     # overlaps a, not inside it
                   Span("stream 1", "c", 1.0, 2.0, "kernel"),      # nests in a
                   Span("CPU", "launch", 0.0, 1.0, "launch")])
    trace = chrome_trace(tl)
    events = _x_events(trace)
    assert sorted(e["name"] for e in events) == ["a", "b", "c", "launch"]
    assert _nests_on_each_thread(events)
    names = _thread_names(trace)
    where = {e["name"]: names[(e["pid"], e["tid"])] for e in events}
    assert where == {"a": "stream 1", "c": "stream 1", "b": "stream 1 (overlap 2)", "launch": "CPU"}


def test_the_export_refuses_what_is_not_a_timeline_and_names_where_one_comes_from():
    with pytest.raises(TypeError, match=r"^chrome_trace takes a labkit Timeline, got list: pass "
                                        r"rec\.timeline"):
        chrome_trace([])


def test_timing_exposes_the_export():
    assert timing.chrome_trace is chrome_trace and timing.save_chrome_trace is save_chrome_trace

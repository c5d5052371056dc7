"""Timelines export to Chrome trace-event JSON that Perfetto and chrome://tracing open."""
import json

import labkit
import matplotlib.pyplot as plt
import numpy as np
import pytest

from labkit import plot, timing
from labkit.measure.timeline import Span, Timeline
from labkit.measure.trace_export import (GPU_PID, HOST_PID, chrome_trace, save_chrome_trace,
                                         thread_names, tracks)
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
    t0 = tl.start_us
    got = sorted((e["args"]["row"], e["name"], e["cat"],
                  e["ts"], e["dur"]) for e in events)
    want = sorted((s.row, s.name, s.kind, s.start_us - t0, s.duration_us) for s in tl.spans)
    assert [g[:3] for g in got] == [w[:3] for w in want]
    for g, w in zip(got, want):     # ends rounded to the ns: start within 0.5 ns, dur within 1
        assert g[3] == pytest.approx(w[3], abs=5.01e-4)
        assert g[4] == pytest.approx(w[4], abs=1.001e-3)
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
    order = {e["pid"]: e["args"]["sort_index"] for e in trace["traceEvents"]
             if e["ph"] == "M" and e["name"] == "process_sort_index"}
    assert order[HOST_PID] < order[GPU_PID]
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
    assert where == {"a": "GPU stream 1", "c": "GPU stream 1", "b": "GPU stream 1 (overlap 2)",
                     "launch": "host: Python thread"}


def test_the_export_refuses_what_is_not_a_timeline_and_names_where_one_comes_from():
    with pytest.raises(TypeError, match=r"^chrome_trace takes a labkit Timeline, got list: pass "
                                        r"rec\.timeline"):
        chrome_trace([])


def test_timing_exposes_the_export():
    assert timing.chrome_trace is chrome_trace and timing.save_chrome_trace is save_chrome_trace


# ------------------------------------------------------------------ end points, as Perfetto reads

def _perfetto_ns(events):
    """Per thread, (start, end) in whole ns as Perfetto reads a JSON trace (llround(µs * 1000))."""
    by = {}
    for e in events:
        start = round(e["ts"] * 1000)
        by.setdefault((e["pid"], e["tid"]), []).append((start, start + round(e["dur"] * 1000)))
    return by


def _misnested(trace) -> list:
    """Slices that start before the one open before them on their thread ends, and end after it
    (nesting, or starting where it ends, is fine)."""
    bad = []
    for key, spans in _perfetto_ns(_x_events(trace)).items():
        stack = []
        for a, b in sorted(spans, key=lambda t: (t[0], -t[1])):
            while stack and stack[-1] <= a:
                stack.pop()
            if stack and b > stack[-1]:
                bad.append((key, a, b, stack[-1]))
            stack.append(b)
    return bad


def _sync_each_timeline(k=50):          # notebook 06, section 3: a synchronize after each kernel
    s = labkit.Stream()
    x = labkit.to_device(np.zeros(N, np.float32))

    def sync_each():
        for _ in range(k):
            add_one[GRID, BLOCK, s](x)
            s.synchronize()
    sync_each()
    with timing.timeline() as rec:
        sync_each()
    return rec.timeline, s


def _piecewise_token_timeline():       # notebook 10, section 3: eager pieces between graphs
    s = labkit.Stream()
    x = labkit.to_device(np.zeros(N, np.float32))
    pieces = []
    for _ in range(3):
        with labkit.capture(s) as cap:
            for _ in range(4):
                scale[GRID, BLOCK, s](x)
        pieces.append(cap.graph.instantiate(upload_stream=s))
    def step():
        for g in pieces:
            g.launch(s)
            add_one[GRID, BLOCK, s](x)      # the eager "attention" between graphed pieces
        s.synchronize()
    step()
    with timing.timeline() as rec:
        step()
    return rec.timeline, s


@pytest.mark.parametrize("make", [_sync_each_timeline, _piecewise_token_timeline],
                         ids=["06 sync after each", "10 piecewise token"])
def test_no_slice_starts_before_the_one_before_it_on_its_thread_ends(make, tmp_path):
    tl, s = make()
    trace = json.loads(open(save_chrome_trace(tl, tmp_path / "t.json", {s: "work"}),
                            encoding="utf-8").read())
    assert _misnested(trace) == []
    host = sorted(_perfetto_ns(_x_events(trace))[(HOST_PID, 1)])
    assert len(host) > 5
    # back-to-back host calls stay back to back: each starts exactly where the one before ended
    assert all(b[0] >= a[1] for a, b in zip(host, host[1:]))
    assert any(b[0] == a[1] for a, b in zip(host, host[1:]))


def test_times_are_whole_nanoseconds_and_dur_is_the_rounded_end_minus_the_rounded_start():
    # Adjacent spans whose ends fall between nanoseconds: rounded each on its own, start and
    # duration made the first end after the second began.
    edges = [0.0, 17.5925904588, 23.0421704593, 39.9115020704, 45.3610820709, 62.2504590249]
    tl = Timeline([Span("CPU", f"call {i}", a, b, "api") for i, (a, b)
                   in enumerate(zip(edges, edges[1:]))])
    events = sorted(_x_events(chrome_trace(tl)), key=lambda e: e["ts"])
    for e, a, b in zip(events, edges, edges[1:]):
        assert repr(e["ts"]) == repr(round(a * 1000) / 1000)          # at most three decimals
        assert round(e["dur"] * 1000) == round(b * 1000) - round(a * 1000)
    ends = [round(e["ts"] * 1000) + round(e["dur"] * 1000) for e in events]
    starts = [round(e["ts"] * 1000) for e in events]
    assert ends[:-1] == starts[1:]


def test_spans_that_touch_only_after_rounding_share_a_thread():
    # b begins 0.2 ns before a ends: the same nanosecond in the file, so no overlap thread
    tl = Timeline([Span("stream 1", "a", 0.0, 1.0002, "kernel"),
                   Span("stream 1", "b", 1.0000, 2.0, "kernel")])
    trace = chrome_trace(tl)
    assert len({e["tid"] for e in _x_events(trace)}) == 1 and _misnested(trace) == []


# ------------------------------------------------------------------ threads named by role

def test_threads_are_named_by_their_role_as_the_plots_label_the_rows():
    tl, s = _sync_each_timeline(k=3)
    trace = chrome_trace(tl, stream_names={s: "work"})
    names = sorted(_thread_names(trace).values())
    assert names == ["GPU stream %d (non-blocking): work" % int(s), "host: Python thread"]
    sort = {(e["pid"], e["tid"]): e["args"]["sort_index"] for e in trace["traceEvents"]
            if e["ph"] == "M" and e["name"] == "thread_sort_index"}
    assert set(sort) == set(_thread_names(trace))


def test_a_stream_named_by_its_handle_or_not_at_all_is_not_called_non_blocking():
    tl = Timeline([Span("CPU", "launch k", 0.0, 1.0, "launch"),
                   Span("stream 7", "k", 1.0, 2.0, "kernel"),
                   Span("stream 7 branch 1", "k2", 1.0, 2.0, "kernel"),
                   Span("stream 9", "k3", 1.0, 2.0, "kernel")])
    assert thread_names(tl, {7: "decode"}) == {
        "CPU": "host: Python thread", "stream 7": "GPU stream 7: decode",
        "stream 7 branch 1": "GPU stream 7: decode, graph branch 1", "stream 9": "GPU stream 9"}
    assert thread_names(tl)["stream 7 branch 1"] == "GPU stream 7, graph branch 1"


# ------------------------------------------------------------------ the file drawn as Perfetto nests it

def test_tracks_read_the_file_back_in_sort_order_with_nested_slices_one_level_down(tmp_path):
    tl = Timeline([Span("stream 1", "outer", 0.0, 10.0, "kernel"),
                   Span("stream 1", "inner", 2.0, 3.0, "kernel"),
                   Span("stream 1", "after", 10.0, 12.0, "kernel"),
                   Span("CPU", "launch", 0.0, 1.0, "launch")])
    path = save_chrome_trace(tl, tmp_path / "sub" / "t.json")      # the folder is made
    got = tracks(path)
    assert [(t.process, t.thread) for t in got] == [("host", "host: Python thread"),
                                                   ("GPU", "GPU stream 1")]
    assert got[1].slices == [(0, 10000, 0, "outer", "kernel"), (2000, 3000, 1, "inner", "kernel"),
                             (10000, 12000, 0, "after", "kernel")]


def test_tracks_refuse_a_file_that_perfetto_would_mis_nest():
    bad = {"traceEvents": [{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 0, "dur": 2},
                           {"ph": "X", "name": "b", "pid": 1, "tid": 1, "ts": 1, "dur": 2}]}
    with pytest.raises(ValueError, match=r"^slice 'b' \(1000\.\.3000 ns\) starts inside the one "
                                         r"before it on thread 1 .* give it a thread of its own$"):
        tracks(bad)


def test_the_drawing_has_a_track_per_thread_and_says_it_is_not_a_perfetto_screenshot():
    tl, s = _piecewise_token_timeline()
    ax = plot.trace_file(chrome_trace(tl, {s: "work"}), title="t")
    try:
        labels = [t.get_text() for t in ax.get_yticklabels()]
        assert labels == ["host: Python thread", f"GPU stream {int(s)} (non-blocking): work"]
        assert "not a Perfetto screenshot" in ax.get_xlabel()
    finally:
        plt.close(ax.figure)


def test_the_drawing_writes_no_slice_name_wider_than_its_slice():
    tl, s = _piecewise_token_timeline()
    trace = chrome_trace(tl, {s: "work"})
    ax = plot.trace_file(trace, title="t")
    try:
        fig = ax.figure
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()
        names = {sl[3] for t in tracks(trace) for sl in t.slices}
        written = [t for t in ax.texts if t.get_text().rstrip("…") and t.get_clip_on()
                   and (t.get_text() in names or t.get_text().endswith("…"))]
        assert written, "some slice names are written"
        x0, _ = ax.transData.transform((0, 0))
        for t in written:
            box = t.get_window_extent(renderer)
            # the text's slice: the widest one whose centre is the text's x
            cx = t.get_position()[0]
            width = max((sl[1] - sl[0]) / 1e3 for tr in tracks(trace) for sl in tr.slices
                        if abs(((sl[0] + sl[1]) / 2 - min(q[0] for r in tracks(trace)
                                                          for q in r.slices)) / 1e3 - cx) < 1e-6)
            px = ax.transData.transform((width, 0))[0] - x0
            assert box.width <= px, f"{t.get_text()!r} is {box.width:.0f} px in a {px:.0f} px slice"
    finally:
        plt.close(ax.figure)

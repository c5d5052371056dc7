"""labkit.plot and labkit.measure.timeline: every plot renders, says where its numbers come from, and
shows what it claims (gaps as gaps, break-even where the lines cross, the DAG's layers)."""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")  # before pyplot: CI has no display

import matplotlib.pyplot as plt  # noqa: E402
import networkx as nx  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib.collections import PolyCollection  # noqa: E402

from labkit import plot  # noqa: E402
from labkit.measure.timeline import Span, Timeline  # noqa: E402
from labkit.measure.stats import Stats  # noqa: E402

PROV = "simulated, calibrated on Test GPU"


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _rendered(ax) -> None:
    ax.figure.canvas.draw()  # layout and text are only checked for real when drawn


def _chain_timeline(source: str = "model") -> Timeline:
    """Three launches on the CPU, three kernels on stream 2 with a gap, one on stream 10."""
    spans = [
        Span("CPU", "cudaLaunchKernel", 0.0, 4.0, "launch"),
        Span("CPU", "cuLaunchKernel", 1.0, 3.0, "launch"),  # nested in the runtime call
        Span("CPU", "cudaLaunchKernel", 4.0, 8.0, "launch"),
        Span("CPU", "cudaStreamSynchronize", 20.0, 30.0, "sync"),
        Span("stream 2", "add_one", 5.0, 7.0, "kernel"),
        Span("stream 2", "add_one", 10.0, 12.0, "kernel"),
        Span("stream 2", "add_one", 12.0, 14.0, "kernel"),
        Span("stream 10", "memset", 6.0, 9.0, "memset"),
    ]
    return Timeline(spans, source=source, note="")


# --------------------------------------------------------------------------- spans

def test_gaps_are_the_idle_stretches_between_spans_of_a_row():
    tl = _chain_timeline()
    assert tl.gaps("stream 2") == [(7.0, 10.0)]  # 12..14 follows 10..12 back to back
    # The nested driver call merges into the runtime call around it.
    assert tl.gaps("CPU") == [(8.0, 20.0)]
    assert tl.gaps("stream 10") == []


def test_busy_fraction_counts_merged_busy_time_over_the_rows_extent():
    tl = _chain_timeline()
    assert tl.busy_fraction("stream 2") == pytest.approx(6.0 / 9.0)
    assert tl.busy_fraction("CPU") == pytest.approx(18.0 / 30.0)
    assert tl.busy_fraction("stream 2", 0.0, 30.0) == pytest.approx(6.0 / 30.0)
    with pytest.raises(ValueError, match=r"^row 'stream 7' has no spans"):
        tl.busy_fraction("stream 7")


def test_rows_put_cpu_first_then_streams_in_natural_order():
    assert _chain_timeline().rows() == ["CPU", "stream 2", "stream 10"]


def test_window_keeps_overlapping_spans_clipped_to_it():
    win = _chain_timeline().window(6.0, 11.0)
    stream2 = win.row_spans("stream 2")
    assert [(s.start_us, s.end_us) for s in stream2] == [(6.0, 7.0), (10.0, 11.0)]
    assert win.gaps("stream 2") == [(7.0, 10.0)]
    assert all(s.row != "CPU" or s.name != "cudaStreamSynchronize" for s in win.spans)


def test_a_timeline_refuses_a_span_of_unknown_kind_or_reversed_times():
    with pytest.raises(ValueError, match=r"^Span kind 'kernal' is not one of api, launch"):
        Timeline([Span("stream 1", "k", 0.0, 1.0, "kernal")])
    with pytest.raises(ValueError, match=r"^Span 'k' on 'stream 1' ends before it starts"):
        Span("stream 1", "k", 2.0, 1.0, "kernel").checked()
    with pytest.raises(ValueError, match=r"^Span 'k': added_us=2\.0 must lie between 0 and"):
        Timeline([Span("stream 1", "k", 0.0, 1.0, "kernel", added_us=2.0)])
    with pytest.raises(ValueError, match=r"^Timeline source 'nsight' is not one of"):
        Timeline([], source="nsight")


# --------------------------------------------------------------------------- timeline

def test_timeline_draws_a_row_per_stream_under_the_cpu_row_with_provenance():
    ax = plot.timeline(_chain_timeline(), provenance=PROV, title="Eager chain")
    _rendered(ax)
    assert PROV in ax.get_title() and "Eager chain" in ax.get_title()
    assert [t.get_text() for t in ax.get_yticklabels()] == ["CPU", "stream 2", "stream 10"]
    assert ax.get_ylim()[0] > ax.get_ylim()[1]  # inverted: CPU on top
    assert "µs" in ax.get_xlabel()
    # One bar collection per (row, kind): CPU launch + sync, stream 2 kernel, stream 10 memset.
    bars = [c for c in ax.collections if isinstance(c, PolyCollection)]
    assert len(bars) == 4
    kernel_bars = [c for c in bars if np.allclose(c.get_facecolor()[0][:3],
                                                  matplotlib.colors.to_rgb(plot.KIND_COLORS["kernel"]))]
    assert len(kernel_bars[0].get_paths()) == 3


def test_timeline_from_event_pairs_says_so_on_the_plot():
    ax = plot.timeline(_chain_timeline(source="events"), provenance=PROV)
    assert "event pairs" in ax.get_xlabel() and "no CUPTI" in ax.get_xlabel()
    ax2 = plot.timeline(_chain_timeline(source="cupti"), provenance=PROV)
    assert "CUPTI activity records" in ax2.get_xlabel()


def test_timeline_window_limits_the_axis_to_the_window():
    ax = plot.timeline(_chain_timeline(), t0=5.0, window_us=10.0, provenance=PROV)
    assert ax.get_xlim() == (0.0, 10.0)


def test_timeline_labels_wide_kernels_with_their_names():
    tl = Timeline([Span("stream 1", "gemm", 0.0, 50.0, "kernel"),
                   Span("stream 1", "tiny", 60.0, 60.5, "kernel")], source="cupti")
    ax = plot.timeline(tl, provenance=PROV)
    texts = [t.get_text() for t in ax.texts]
    assert "gemm" in texts and "tiny" not in texts


def test_timeline_of_nothing_is_refused():
    with pytest.raises(ValueError, match=r"^the timeline has no spans to draw"):
        plot.timeline(Timeline([], source="model"), provenance=PROV)


def test_title_falls_back_to_labkit_provenance(monkeypatch):
    import labkit

    monkeypatch.setattr(labkit, "provenance", lambda: "measured on Fake GPU", raising=False)
    ax = plot.bars({"eager": 5.0, "graph": 1.0})
    assert "measured on Fake GPU" in ax.get_title()


# --------------------------------------------------------------------------- sweeps

def test_per_kernel_cost_draws_each_series_and_a_band_for_stats():
    ks = [10, 100, 1000]
    rng = np.random.default_rng(0)
    series = {
        "eager": [Stats(rng.normal(20, 1, 50)) for _ in ks],
        "graph": [0.9, 0.7, 0.6],
    }
    ax = plot.per_kernel_cost(ks, series, provenance=PROV)
    _rendered(ax)
    assert PROV in ax.get_title()
    assert [line.get_label() for line in ax.get_lines()] == ["eager", "graph"]
    assert np.allclose(ax.get_lines()[0].get_ydata(), [s.median for s in series["eager"]])
    assert len([c for c in ax.collections if isinstance(c, PolyCollection)]) == 1
    assert ax.get_xscale() == "log" and "µs" in ax.get_ylabel()
    assert ax.get_lines()[0].get_color() == plot.color_for("eager")


def test_per_kernel_cost_refuses_a_series_of_the_wrong_length():
    with pytest.raises(ValueError, match=r"^series 'graph' has 2 values for 3 K's"):
        plot.per_kernel_cost([1, 2, 3], {"graph": [1.0, 2.0]}, provenance=PROV)


def test_phase_costs_is_log_log_with_one_line_per_phase():
    sizes = [10, 100, 1000]
    phases = {"capture": [50, 400, 4000], "instantiate": [80, 700, 7000],
              "steady launch": [Stats([2.0, 2.2, 2.1]), Stats([2.5, 2.4]), Stats([4.0, 4.1])]}
    ax = plot.phase_costs(sizes, phases, provenance=PROV)
    _rendered(ax)
    assert PROV in ax.get_title()
    assert (ax.get_xscale(), ax.get_yscale()) == ("log", "log")
    assert [line.get_label() for line in ax.get_lines()] == list(phases)
    assert "nodes" in ax.get_xlabel() and "µs" in ax.get_ylabel()


# --------------------------------------------------------------------------- amortization

def test_breakeven_is_setup_over_per_iteration_saving():
    assert plot.breakeven(100.0, 10.0, 5.0) == pytest.approx(20.0)
    assert plot.breakeven(0.0, 10.0, 5.0) == 0.0
    assert plot.breakeven(1000.0, 30.0, 29.0) == pytest.approx(1000.0)


def test_breakeven_is_never_when_the_graph_iteration_is_not_cheaper():
    assert plot.breakeven(100.0, 5.0, 5.0) is None
    assert plot.breakeven(100.0, 5.0, 6.0) is None


def test_breakeven_refuses_negative_or_nonfinite_times():
    with pytest.raises(ValueError, match=r"^setup_us=-1\.0 must be a finite time"):
        plot.breakeven(-1.0, 10.0, 5.0)
    with pytest.raises(ValueError, match=r"^graph_iter_us=nan must be a finite time"):
        plot.breakeven(1.0, 10.0, float("nan"))


def test_amortization_marks_breakeven_where_the_lines_cross():
    ax = plot.amortization(100.0, 10.0, 5.0, iterations=50, provenance=PROV)
    _rendered(ax)
    assert PROV in ax.get_title()
    eager, graph = ax.get_lines()[:2]
    assert np.allclose(eager.get_ydata(), 10.0e-6 * np.arange(51))      # seconds
    assert np.allclose(graph.get_ydata(), (100.0 + 5.0 * np.arange(51)) * 1e-6)
    verticals = [line for line in ax.get_lines()
                 if len(line.get_xdata()) == 2 and np.allclose(line.get_xdata(), [20.0, 20.0])]
    assert len(verticals) == 1
    assert any("break-even after 20.0 iterations" in t.get_text() for t in ax.texts)


def test_amortization_says_never_when_the_graph_does_not_pay_off():
    ax = plot.amortization(100.0, 5.0, 6.0, iterations=10, provenance=PROV)
    assert any("never" in t.get_text() for t in ax.texts)
    assert len(ax.get_lines()) == 2  # no break-even line


def test_amortization_time_axis_reads_in_ms_for_long_runs():
    ax = plot.amortization(500.0, 30.0, 1.0, iterations=10_000, provenance=PROV)
    ax.figure.canvas.draw()
    assert ax.get_ylabel() == "cumulative time"
    assert ax.get_lines()[0].get_ydata()[-1] == pytest.approx(0.3)
    ticks = [t.get_text() for t in ax.get_yticklabels() if t.get_text()]
    assert any(t.endswith(" ms") for t in ticks), ticks


# --------------------------------------------------------------------------- distributions

@pytest.fixture
def two_latencies() -> dict:
    rng = np.random.default_rng(7)
    return {"eager": Stats(rng.lognormal(3.0, 0.2, 400), "eager"),
            "graph": rng.lognormal(1.0, 0.3, 400)}  # a plain array is accepted too


def test_latency_cdf_marks_p50_p95_p99_of_each_series_on_its_curve(two_latencies):
    ax = plot.latency_cdf(two_latencies, provenance=PROV)
    _rendered(ax)
    assert PROV in ax.get_title()
    eager = two_latencies["eager"]
    points = {(round(float(line.get_xdata()[0]), 9), float(line.get_ydata()[0]))
              for line in ax.get_lines() if len(line.get_xdata()) == 1}
    for q in (50, 95, 99):
        assert (round(eager.percentile(q), 9), q / 100) in points
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any(text.startswith("eager: p50 ") and "p99" in text for text in legend)
    assert "µs" in ax.get_xlabel()


def test_latency_hist_draws_percentile_lines_at_the_stats_values(two_latencies):
    ax = plot.latency_hist(two_latencies, bins=30, provenance=PROV)
    _rendered(ax)
    assert PROV in ax.get_title()
    xs = {round(float(line.get_xdata()[0]), 9) for line in ax.get_lines()
          if len(line.get_xdata()) == 2 and line.get_xdata()[0] == line.get_xdata()[1]}
    graph = Stats(two_latencies["graph"])
    for q in (50, 95, 99):
        assert round(two_latencies["eager"].percentile(q), 9) in xs
        assert round(graph.percentile(q), 9) in xs


def test_latency_hist_log_axis_refuses_nonpositive_samples():
    with pytest.raises(ValueError, match=r"^logx needs every sample > 0"):
        plot.latency_hist({"x": [0.0, 1.0]}, logx=True, provenance=PROV)


# --------------------------------------------------------------------------- DAG

def _fork_join() -> nx.DiGraph:
    g = nx.DiGraph()
    g.add_node("a", kind="memcpy", label="HtoD")
    g.add_node("b", kind="kernel", label="left")
    g.add_node("c", kind="kernel", label="right")
    g.add_node("d", kind="event_record", label="done")
    g.add_edges_from([("a", "b"), ("a", "c"), ("b", "d"), ("c", "d")])
    return g


def test_graph_dag_draws_fork_join_in_three_layers_with_counts_in_title():
    ax = plot.graph_dag(_fork_join(), title="Fork/join", provenance=PROV)
    _rendered(ax)
    title = ax.get_title()
    assert "4 nodes, 4 edges" in title and PROV in title and "Fork/join" in title
    offsets = np.concatenate([c.get_offsets() for c in ax.collections
                              if len(c.get_offsets()) and c.get_offsets().shape[1] == 2])
    ys = {round(float(y), 6) for y in offsets[:, 1]}
    assert len(ys) == 3  # three layers: the source, both branches, the join
    y_of = {tuple(np.round(xy, 6)): None for xy in offsets}
    top, middle, bottom = sorted(ys, reverse=True)
    assert sum(1 for (_, y) in y_of if y == middle) == 2     # both branches side by side
    assert sum(1 for (_, y) in y_of if y == top) == sum(1 for (_, y) in y_of if y == bottom) == 1
    label_y = {t.get_text(): t.get_position()[1] for t in ax.texts}
    assert label_y["HtoD"] == pytest.approx(top) and label_y["done"] == pytest.approx(bottom)
    legend = {t.get_text() for t in ax.get_legend().get_texts()}
    assert legend == {"kernel", "memcpy", "event_record"}
    labels = {t.get_text() for t in ax.texts}
    assert {"HtoD", "left", "right", "done"} <= labels


def test_graph_dag_accepts_objects_with_to_networkx():
    class FakeGraph:
        def to_networkx(self):
            return _fork_join()

    ax = plot.graph_dag(FakeGraph(), provenance=PROV)
    assert "4 nodes, 4 edges" in ax.get_title()


def test_graph_dag_refuses_a_cycle():
    g = nx.DiGraph([("a", "b"), ("b", "a")])
    with pytest.raises(ValueError, match=r"^the graph has a cycle, but a CUDA graph is a DAG"):
        plot.graph_dag(g, provenance=PROV)


# --------------------------------------------------------------------------- bars, style, files

def test_bars_print_each_value_and_whisker_stats_to_p95():
    values = {"exec update": Stats([10.0, 11.0, 12.0, 20.0]), "node update": 2.5,
              "recapture": 300.0}
    ax = plot.bars(values, ylabel="time per update (µs)", provenance=PROV)
    _rendered(ax)
    assert PROV in ax.get_title()
    texts = [t.get_text() for t in ax.texts]
    assert texts == ["11.5", "2.5", "300"]
    assert ax.get_yscale() == "linear" and ax.get_ylim()[0] == 0
    heights = [p.get_height() for p in ax.patches]
    assert heights == pytest.approx([11.5, 2.5, 300.0])


def test_bars_on_a_log_axis_are_dots_not_bars():
    values = {"exec update": Stats([10.0, 11.0, 12.0, 20.0]), "node update": 2.5,
              "recapture": 300.0}
    ax = plot.bars(values, ylabel="time per update (µs)", log=True, provenance=PROV)
    _rendered(ax)
    assert ax.get_yscale() == "log" and ax.get_ylabel() == "time per update (µs)"
    assert not ax.patches, "a bar's length on a log axis depends on where the axis starts"
    dots = [line for line in ax.get_lines() if line.get_marker() == "o"]
    assert [float(d.get_ydata()[0]) for d in dots] == pytest.approx([11.5, 2.5, 300.0])
    assert [t.get_text() for t in ax.texts] == ["11.5", "2.5", "300"]
    lo, hi = ax.get_ylim()
    assert lo < 2.5 and hi > 300.0
    assert ax.get_xlabel().startswith("dot: median")


def test_bars_refuse_stacks_on_a_log_axis():
    with pytest.raises(ValueError, match=r"^stacked bars need a linear axis"):
        plot.bars({"first": {"upload": 4.0, "launch": 2.0}}, log=True, provenance=PROV)


def test_fixed_colours_follow_the_strategy_name():
    assert plot.color_for("Graph") == plot.color_for("graph launch") == plot.SERIES_COLORS["graph"]
    assert plot.color_for("prepared graph") == plot.SERIES_COLORS["prepared"]
    assert plot.color_for("exec_update") == plot.SERIES_COLORS["exec update"]
    assert plot.color_for("cupy", 0) != plot.color_for("torch", 1)


def test_savefig_writes_a_png_and_makes_folders(tmp_path):
    ax = plot.bars({"eager": 5.0}, provenance=PROV)
    path = plot.savefig(ax, tmp_path / "figs" / "bars.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_series_of_one_plot_never_share_a_colour():
    labels = ["eager", "graph (exact)", "graph (padded)", "graph launch"]
    colours = plot.colors_for(labels)
    assert colours[:2] == [plot.SERIES_COLORS["eager"], plot.SERIES_COLORS["graph"]]
    assert len(set(colours)) == len(labels), colours
    ax = plot.bars({label: 1.0 + i for i, label in enumerate(labels)}, provenance=PROV)
    assert len({tuple(p.get_facecolor()) for p in ax.patches}) == len(labels)


def test_style_keeps_interactive_mode_that_a_backend_turned_on_inside_it():
    # Jupyter's inline backend turns interactive mode on at a kernel's first figure, which
    # happens inside style(); were it turned off again, later cells would show no figure.
    import matplotlib
    was = matplotlib.is_interactive()
    try:
        matplotlib.interactive(False)
        with plot.style():
            matplotlib.interactive(True)
        assert matplotlib.is_interactive()
        with plot.style():
            pass
        assert matplotlib.is_interactive()
    finally:
        matplotlib.interactive(was)

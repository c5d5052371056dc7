"""labkit.plot says what each figure is (measured, simulated, a model, a captured shape) and
stays legible: named DAG nodes, explained whiskers and bands, tidy log ticks, visible thin
spans, the tracer's share marked."""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")  # before pyplot: CI has no display

import matplotlib.pyplot as plt  # noqa: E402
import networkx as nx  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from labkit import plot  # noqa: E402
from labkit.measure.timeline import Span, Timeline  # noqa: E402
from labkit.measure.stats import Stats  # noqa: E402

PROV = "measured on Test GPU"


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _legend_texts(ax) -> list[str]:
    return [t.get_text() for t in ax.get_legend().get_texts()]


def test_amortization_is_titled_a_model_of_measured_inputs():
    ax = plot.amortization(100.0, 10.0, 2.0, 50, provenance=PROV, xlabel="tokens")
    line = ax.get_title().splitlines()[-1]
    assert line.startswith("model: cumulative time = setup + n × per-iteration cost")
    assert line.endswith("inputs measured on Test GPU")
    assert ax.get_xlabel() == "tokens"


def test_latency_plots_from_a_model_say_so():
    samples = {"eager": Stats(np.arange(1.0, 50.0))}
    ax = plot.latency_cdf(samples, provenance=PROV, model="FIFO replay of the service times")
    assert ax.get_title().endswith("model: FIFO replay of the service times; inputs measured on Test GPU")
    ax2 = plot.latency_hist(samples, provenance=PROV)
    assert ax2.get_title().endswith(PROV)


def test_dag_is_titled_a_captured_shape_not_a_measurement():
    g = nx.DiGraph()
    g.add_node(0, kind="kernel")
    ax = plot.graph_dag(g)
    assert "graph shape, captured on" in ax.get_title()
    assert "not a measurement" in ax.get_title()


def test_dag_nodes_show_their_kernels_names_cut_to_fit_their_circles():
    g = nx.DiGraph()
    g.add_node(0, kind="kernel", label="0:kernel", name="add_one")
    g.add_node(1, kind="kernel", label="1:kernel", name="attention_scores_softmax")
    g.add_node(2, kind="memset", label="2:memset", name="memset")
    g.add_edges_from([(0, 1), (1, 2)])
    ax = plot.graph_dag(g, provenance=PROV)
    texts = {t.get_text() for t in ax.texts}
    assert {"add_one", "attention…", "memset"} <= texts
    assert all(len(t) <= 10 for t in texts)


def test_bars_with_whiskers_say_what_bar_and_whisker_are():
    ax = plot.bars({"eager": Stats(np.arange(10.0, 40.0)), "graph": Stats(np.arange(1.0, 4.0, 0.1))},
                   provenance=PROV)
    assert ax.get_xlabel() == "bar: median · whisker: up to p95 of the samples"
    assert plot.bars({"eager": 30.0}, provenance=PROV).get_xlabel() == ""


def test_shaded_bands_are_explained_in_the_legend():
    ks = [1, 10, 100]
    series = {"eager": [Stats(np.arange(20.0, 40.0))] * 3, "graph": [Stats(np.arange(1.0, 3.0, .1))] * 3}
    ax = plot.per_kernel_cost(ks, series, provenance=PROV)
    assert "line: median · shaded: p5–p95 of the samples" in _legend_texts(ax)
    ax2 = plot.per_kernel_cost(ks, {"eager": [30.0, 30.0, 30.0]}, provenance=PROV)
    assert _legend_texts(ax2) == ["eager"]


def test_per_kernel_cost_draws_a_log_time_axis_on_request():
    ax = plot.per_kernel_cost([1, 10, 100], {"eager": [30.0, 30.0, 30.0], "graph": [30.0, 4.0, 1.2]},
                              logy=True, provenance=PROV)
    assert ax.get_yscale() == "log"
    assert ax.get_ylabel() == "time per kernel (µs, log)"


@pytest.mark.parametrize("where", ["best", "outside", "below"])
def test_legends_go_where_asked(where):
    ax = plot.per_kernel_cost([1, 10], {"eager": [3.0, 3.0]}, provenance=PROV, legend=where)
    assert ax.get_legend() is not None


def test_an_unknown_legend_place_is_refused_with_the_choices():
    with pytest.raises(ValueError, match=r"^legend='sideways': choose 'best', 'outside' or 'below'"):
        plot.per_kernel_cost([1, 10], {"eager": [3.0, 3.0]}, provenance=PROV, legend="sideways")


def test_log_axes_label_only_major_ticks_with_plain_numbers():
    rng = np.random.default_rng(1)
    ax = plot.latency_cdf({"a": Stats(rng.lognormal(np.log(100), 0.3, 200)),
                           "b": Stats(rng.lognormal(np.log(600), 0.3, 200))},
                          logx=True, provenance=PROV)
    ax.figure.canvas.draw()
    assert all(t.get_text() == "" for t in ax.xaxis.get_minorticklabels())
    majors = [t.get_text() for t in ax.xaxis.get_majorticklabels() if t.get_text()]
    assert majors and all("$" not in t for t in majors)      # "200", not "$2\\times10^2$"


def _wide_timeline(added_us: float = 0.0) -> Timeline:
    spans = [Span("CPU", "cudaGraphLaunch", 0.0, 30.0, "graph", added_us=added_us),
             Span("CPU", "cudaStreamSynchronize", 30.0, 5000.0, "sync"),
             Span("stream 7", "add_one", 40.0, 41.0, "kernel")]
    return Timeline(spans, source="cupti")


def test_thin_spans_on_a_wide_timeline_are_drawn_visible_and_the_plot_says_so():
    ax = plot.timeline(_wide_timeline(), provenance=PROV)
    assert "spans shorter than 7.5 µs drawn that wide" in ax.get_xlabel()
    widths = [path.get_extents().width for c in ax.collections for path in c.get_paths()
              if c.get_gid() != "span separators"]
    assert min(widths) >= 7.5 - 1e-9


def test_the_tracers_share_of_a_span_is_hatched_and_named_in_the_legend():
    ax = plot.timeline(_wide_timeline(added_us=25.0), provenance=PROV)
    assert "added by the tracer" in _legend_texts(ax)
    assert any(c.get_hatch() == "////" for c in ax.collections)
    assert "added by the tracer" not in _legend_texts(plot.timeline(_wide_timeline(), provenance=PROV))


def test_a_captured_graph_names_its_kernel_nodes_for_the_drawing():
    import labkit
    from tests.kernels import BLOCK, GRID, N, add_one
    if labkit.backend != "sim":
        pytest.skip("the GPU's kernel names come from the driver: see test_trace_honesty's run")
    s = labkit.Stream()
    x = labkit.to_device(np.zeros(N, np.float32))
    with labkit.capture(s) as cap:
        add_one[GRID, BLOCK, s](x)
    g = cap.graph.to_networkx()
    assert g.nodes[0]["name"] == "add_one" and g.nodes[0]["kind"] == "kernel"
    s.close()


def test_dag_of_a_graph_built_node_by_node_says_built_not_captured():
    g = nx.DiGraph(made="built")
    g.add_node(0, kind="kernel")
    title = plot.graph_dag(g).get_title()
    assert "graph shape, built on" in title and "captured" not in title


def test_dag_caller_can_say_how_the_graph_was_made():
    g = nx.DiGraph()
    g.add_node(0, kind="empty")
    assert "built on" in plot.graph_dag(g, made="built").get_title()
    with pytest.raises(ValueError, match="say 'captured'.*or 'built'"):
        plot.graph_dag(g, made="drawn")


def test_graphs_say_how_they_were_made_and_their_drawings_follow():
    import labkit
    from labkit import explicit
    from tests.kernels import BLOCK, GRID, N, add_one
    built = explicit.new_graph()
    explicit.add_empty_node(built)
    s = labkit.Stream()
    x = labkit.to_device(np.zeros(N, np.float32))
    with labkit.capture(s) as cap:
        add_one[GRID, BLOCK, s](x)
    assert built.to_networkx().graph["made"] == "built"
    assert cap.graph.to_networkx().graph["made"] == "captured"
    assert "graph shape, built on" in plot.graph_dag(built).get_title()
    assert "graph shape, captured on" in plot.graph_dag(cap.graph).get_title()
    built.close(); cap.graph.close(); s.close()


def _separator_xs(ax) -> list[float]:
    lines = [c for c in ax.collections if c.get_gid() == "span separators"]
    return sorted(seg[0][0] for c in lines for seg in c.get_segments())


def test_back_to_back_kernels_are_separated_by_a_hairline():
    spans = [Span("CPU", "launch", 0.0, 10.0, "launch")]
    spans += [Span("stream 0", "long", 10.0 + 100 * i, 110.0 + 100 * i, "kernel") for i in range(5)]
    ax = plot.timeline(Timeline(spans, source="model"), provenance=PROV)
    assert _separator_xs(ax) == pytest.approx([110.0, 210.0, 310.0, 410.0])


def test_a_thin_kernel_next_to_a_long_one_gets_no_separator_that_would_hide_it():
    spans = [Span("stream 0", "long", 0.0, 5000.0, "kernel"),
             Span("stream 0", "tiny", 5000.0, 5001.0, "kernel"),
             Span("stream 0", "long", 5001.0, 9000.0, "kernel"),
             Span("stream 0", "apart", 9500.0, 9900.0, "kernel")]
    ax = plot.timeline(Timeline(spans, source="model"), provenance=PROV)
    assert _separator_xs(ax) == []


def _labelled_ticks(axis) -> list[tuple[float, str]]:
    lo, hi = sorted(axis.get_view_interval())
    return [(t.get_loc(), t.label1.get_text()) for t in axis.get_major_ticks()
            if t.label1.get_text() and lo <= t.get_loc() <= hi]


def test_a_short_log_axis_has_a_labelled_tick_near_its_lowest_curve():
    rng = np.random.default_rng(2)
    ax = plot.latency_cdf({"numba graph": Stats(rng.uniform(118.0, 135.0, 300)),
                           "eager": Stats(rng.uniform(2400.0, 2700.0, 300))},
                          logx=True, provenance=PROV)
    ax.figure.canvas.draw()
    ticks = _labelled_ticks(ax.xaxis)
    assert ticks[0][0] <= 118.0 and ticks[0][1] == "100"
    assert [text for _, text in ticks] == ["100", "200", "500", "1,000", "2,000"]
    assert ticks[-1][0] * 10 ** 0.2 >= 2700.0      # the top end is near a label too


@pytest.mark.parametrize("lo, hi", [(118.0, 2700.0), (210.0, 61000.0), (3.0, 40.0)])
def test_log_tick_labels_never_overlap(lo, hi):
    ax = plot.latency_cdf({"a": Stats(np.geomspace(lo, hi, 50))}, logx=True, provenance=PROV)
    fig = ax.figure
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    boxes = sorted((t.label1.get_window_extent(renderer) for t in ax.xaxis.get_major_ticks()
                    if t.label1.get_text() and t.label1.get_visible()), key=lambda b: b.x0)
    assert len(boxes) >= 3
    assert all(a.x1 < b.x0 for a, b in zip(boxes, boxes[1:]))
    plt.close(fig)


@pytest.mark.parametrize("log", [False, True])
def test_bar_values_stay_inside_the_axes(log):
    ax = plot.bars({"eager": 1767.0, "graph per token": 118.0, "device loop": 3.3}, log=log,
                   provenance=PROV)
    fig = ax.figure
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    frame = ax.get_window_extent(renderer)
    values = [t for t in ax.texts if t.get_text()]
    assert [t.get_text() for t in values] == ["1767", "118", "3.3"]
    assert all(t.get_window_extent(renderer).y1 < frame.y1 for t in values)
    plt.close(fig)

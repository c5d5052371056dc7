"""Figures that are compared read fairly: timelines on one time axis with streams named by role,
legends that promise only what is drawn, stacked bars that show what a total is made of, and
drawing modules that take their provenance rather than import the backend."""
from __future__ import annotations

import ast
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # before pyplot: CI has no display

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
from matplotlib.colors import to_hex  # noqa: E402

from labkit import plot  # noqa: E402
from labkit.measure.timeline import Span, Timeline  # noqa: E402
from labkit.plot import theme  # noqa: E402
from labkit.measure.stats import Stats  # noqa: E402

PROV = "simulated, calibrated on Test GPU"
PLOT_DIR = Path(plot.__file__).parent


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


class _FakeStream:
    """What labkit.stream_handle reads from a labkit.Stream: its ``handle``."""
    def __init__(self, handle):
        self.handle = handle


def _forked(length_us: float = 100.0) -> Timeline:
    return Timeline([Span("CPU", "cudaLaunchKernel", 0.0, 5.0, "launch"),
                     Span("stream 4096", "a", 5.0, length_us, "kernel"),
                     Span("stream 8192", "b", 5.0, length_us / 2, "kernel"),
                     Span("stream 8192 branch 1", "c", 6.0, length_us / 3, "kernel")],
                    source="model")


def _row_labels(ax) -> list[str]:
    return [t.get_text() for t in ax.get_yticklabels()]


def test_streams_are_labelled_by_role_from_a_stream_a_handle_or_a_row_name():
    names = {_FakeStream(4096): "origin", 8192: "side 1"}
    ax = plot.timeline(_forked(), stream_names=names, provenance=PROV)
    assert _row_labels(ax) == ["CPU", "origin", "side 1", "side 1, branch 1"]
    ax = plot.timeline(_forked(), stream_names={"stream 4096": "origin"}, provenance=PROV)
    assert _row_labels(ax)[1] == "origin" and "stream 4096" not in _row_labels(ax)


def test_a_role_for_a_stream_with_no_row_is_refused_with_the_rows():
    with pytest.raises(ValueError, match=r"^stream_names names 'stream 5', but no row is "
                                         r"'stream 5'; the rows here are \['CPU', "):
        plot.timeline(_forked(), stream_names={5: "origin"}, provenance=PROV)


def test_a_measured_timeline_whose_rows_are_not_named_by_handle_is_drawn_with_the_rows_unnamed():
    """Without CUPTI a GPU's work is one row; a notebook's stream roles must not stop it."""
    events = Timeline([Span("CPU", "cudaLaunchKernel", 0.0, 5.0, "launch"),
                       Span("GPU (events)", "all GPU work", 0.0, 20.0, "kernel")],
                      source="events")
    ax = plot.timeline(events, stream_names={_FakeStream(4096): "origin"}, provenance=PROV)
    assert _row_labels(ax) == ["CPU", "GPU (events)"]


def test_compared_timelines_share_one_time_axis_and_say_their_provenance_once():
    axes = plot.timelines([(_forked(300.0), "eager"), (_forked(30.0), "graph")],
                          stream_names={4096: "origin", 8192: "side 1"}, provenance=PROV)
    assert len(axes) == 2 and axes[0].figure is axes[1].figure
    assert axes[0].get_xlim() == axes[1].get_xlim() == (0.0, 300.0)
    assert axes[0].get_shared_x_axes().joined(axes[0], axes[1])
    assert [ax.get_title() for ax in axes] == ["eager", "graph"]
    assert axes[0].figure.get_suptitle() == PROV
    assert "one scale for all" in axes[1].get_xlabel()
    assert all(_row_labels(ax)[1:3] == ["origin", "side 1"] for ax in axes)


def test_timelines_refuse_an_empty_list_and_an_empty_timeline():
    with pytest.raises(ValueError, match=r"^timelines got no timelines"):
        plot.timelines([], provenance=PROV)
    with pytest.raises(ValueError, match=r"^the timeline 'graph' has no spans to draw"):
        plot.timelines([(_forked(), "eager"), (Timeline([], source="model"), "graph")],
                       provenance=PROV)


def _legend_texts(ax) -> list[str]:
    return [t.get_text() for t in ax.get_legend().get_texts()]


def test_a_band_too_narrow_to_see_is_not_promised_in_the_legend():
    flat = {"eager": [Stats([20.0] * 10)] * 3, "graph": [Stats([2.0, 2.0, 2.001])] * 3}
    ax = plot.per_kernel_cost([1, 10, 100], flat, provenance=PROV)
    assert _legend_texts(ax) == ["eager", "graph"]
    assert not [c for c in ax.collections if c.get_label() != "_nolegend_" and
                type(c).__name__ == "FillBetweenPolyCollection"]


def test_whiskers_too_short_to_see_are_not_explained():
    ax = plot.bars({"eager": Stats([30.0] * 5), "graph": Stats([3.0] * 5)}, provenance=PROV)
    assert ax.get_xlabel() == ""


def test_a_stacked_bar_shows_its_parts_and_its_total():
    ax = plot.bars({"first launch": {"upload": 40.0, "launch": 12.0}, "steady launch": 9.0},
                   ylabel="µs", provenance=PROV)
    ax.figure.canvas.draw()
    heights = sorted(round(p.get_height(), 6) for p in ax.patches)
    assert heights == [9.0, 12.0, 40.0]
    launch = [p for p in ax.patches if p.get_height() == 12.0][0]
    assert launch.get_y() == pytest.approx(40.0)            # launch sits on the upload
    texts = [t.get_text() for t in ax.texts if t.get_text()]
    assert "52" in texts and "9" in texts                   # totals on top
    assert {"40", "12"} <= set(texts)                       # each part inside its segment
    assert _legend_texts(ax) == ["upload", "launch"]
    assert ax.get_ylim()[0] == 0.0


def test_a_stacked_bar_with_no_parts_is_refused():
    with pytest.raises(ValueError, match=r"^the stacked bar 'first launch' has no parts"):
        plot.bars({"first launch": {}}, provenance=PROV)


def test_a_ratio_axis_starts_at_zero():
    ax = plot.bars({"1 kernel": 1.12, "4 kernels": 1.04}, ylabel="loop / graph", provenance=PROV)
    assert ax.get_ylim()[0] == 0.0


def test_the_packaged_style_cycles_the_course_colours_in_order():
    with plot.style():
        cycle = [to_hex(c["color"]) for c in matplotlib.rcParams["axes.prop_cycle"]]
    want = list(dict.fromkeys(plot.SERIES_COLORS.values())) + theme.OTHER_COLORS
    assert cycle == want


def test_drawing_modules_never_import_the_backend():
    for path in sorted(PLOT_DIR.glob("*.py")):
        if path.name == "__init__.py":
            continue   # the facade: it supplies the default provenance
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            for name in names:
                assert name != "labkit" and not name.startswith("labkit.backend"), \
                    f"{path.name} imports {name}: take the provenance as an argument"


def test_no_drawing_module_is_hidden_by_a_function_of_the_same_name():
    import importlib
    for path in sorted(PLOT_DIR.glob("*.py")):
        name = path.stem
        if name == "__init__":
            continue
        module = importlib.import_module(f"labkit.plot.{name}")
        assert getattr(plot, name, module) is module, \
            f"labkit.plot.{name} is not the module {name}.py: rename one of the two"


def test_a_gpu_trace_names_a_stream_by_its_trace_id_and_an_unmatched_name_is_no_error(monkeypatch):
    from labkit.plot import _axes
    traced = Timeline([Span("CPU", "cudaLaunchKernel", 0.0, 5.0, "launch"),
                       Span("stream 13", "a", 5.0, 50.0, "kernel")], source="cupti")
    monkeypatch.setattr(_axes, "stream_row", lambda handle: {4096: "stream 13"}.get(handle, "?"))
    ax = plot.timeline(traced, stream_names={_FakeStream(4096): "origin", 8192: "side 1"},
                       provenance=PROV)
    assert _row_labels(ax) == ["CPU", "origin"]


def test_the_style_file_ships_with_the_package():
    try:
        import tomllib
    except ImportError:   # Python 3.10
        import tomli as tomllib
    root = PLOT_DIR.parents[1]
    patterns = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-data"]["labkit"]
    style_file = theme.STYLE_FILE.relative_to(root / "labkit").as_posix()
    assert any(Path(style_file).match(p) for p in patterns), (style_file, patterns)

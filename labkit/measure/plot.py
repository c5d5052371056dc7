"""The course's plots: one style, units on every axis, the backend and device in every title.

Each function draws on ``ax`` (a new figure when None) and returns the Axes. Each takes
``provenance``: the line that says where the numbers come from ("measured on NVIDIA H200",
"simulated, calibrated on NVIDIA H200"); when None it asks ``labkit.provenance()``. A plot
without it could pass simulated numbers off as measured ones.
"""
from __future__ import annotations

import contextlib
import math
from pathlib import Path
from typing import Iterator, Mapping, Sequence

import matplotlib
import matplotlib.pyplot as plt
import networkx as nx
import numpy as np
from cycler import cycler
from matplotlib.lines import Line2D

from labkit.measure._spans import SPAN_KINDS, Timeline
from labkit.measure.stats import Stats

__all__ = [
    "style", "color_for", "colors_for", "breakeven", "timeline", "per_kernel_cost", "phase_costs",
    "amortization", "latency_cdf", "latency_hist", "graph_dag", "bars", "savefig",
    "capture_matrix", "model_provenance", "shape_provenance",
]

# Fixed colours, so "graph" is the same blue in every notebook. Most specific names first:
# "prepared graph" must match "prepared" before "graph".
SERIES_COLORS: dict[str, str] = {
    "prepared": "#2ca02c",
    "node update": "#8c564b",
    "exec update": "#9467bd",
    "recapture": "#ff7f0e",
    "capture": "#17becf",
    "instantiate": "#bcbd22",
    "upload": "#7f7f7f",
    "first launch": "#e377c2",
    "steady launch": "#1f77b4",
    "eager": "#d62728",
    "graph": "#1f77b4",
}
# Colours for any other label, in order of appearance; none repeats a fixed colour above.
_OTHER_COLORS = ["#ff9896", "#393b79", "#637939", "#8c6d31", "#843c39", "#7b4173",
                 "#3182bd", "#e6550d", "#31a354", "#756bb1"]

KIND_COLORS: dict[str, str] = {
    "api": "#a6a6a6",      # host API call that does not launch
    "launch": "#d62728",   # kernel launch: the overhead this course is about
    "graph": "#1f77b4",    # graph launch
    "sync": "#f2b134",
    "kernel": "#2ca02c",
    "memcpy": "#9467bd",
    "memset": "#8c564b",
}
NODE_COLORS: dict[str, str] = {
    "kernel": "#2ca02c",
    "memcpy": "#9467bd",
    "memset": "#8c564b",
    "empty": "#d9d9d9",
    "event_record": "#f2b134",
    "wait_event": "#ff7f0e",
    "graph": "#1f77b4",
    "host": "#17becf",
}
_UNKNOWN_NODE_COLOR = "#e377c2"

_RC = {
    "font.size": 11,
    "axes.titlesize": 12,
    "axes.labelsize": 11,
    "legend.fontsize": 9,
    "xtick.labelsize": 10,
    "ytick.labelsize": 10,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "legend.frameon": False,
    "figure.constrained_layout.use": True,
    "savefig.dpi": 150,
    "axes.prop_cycle": cycler(color=list(dict.fromkeys(SERIES_COLORS.values())) + _OTHER_COLORS),
}


@contextlib.contextmanager
def style() -> Iterator[None]:
    """The course's matplotlib style, as a context (every plot function applies it itself)."""
    # The first figure of a Jupyter kernel switches pyplot to the inline backend, which turns
    # interactive mode on; rc_context would turn it off again on exit, and no later cell would
    # show its figure. So interactive mode survives the context.
    keep = {}
    try:
        with plt.rc_context(_RC):
            try:
                yield
            finally:
                keep["interactive"] = matplotlib.is_interactive()
    finally:
        matplotlib.interactive(keep.get("interactive", matplotlib.is_interactive()))


def color_for(label: str, index: int = 0) -> str:
    """The colour of a series: fixed for known names ("eager", "graph", ...), else by ``index``.

    Parameters
    ----------
    label : str
        Series label; matched case-insensitively, ``_`` and ``-`` read as spaces.
    index : int
        Position of the series in its plot, used for labels with no fixed colour.
    """
    key = label.lower().replace("_", " ").replace("-", " ").strip()
    if key in SERIES_COLORS:
        return SERIES_COLORS[key]
    for name, colour in SERIES_COLORS.items():
        if name in key:
            return colour
    return _OTHER_COLORS[index % len(_OTHER_COLORS)]


def colors_for(labels) -> list[str]:
    """One colour per label, as `color_for` gives, but never the same colour twice in a plot
    ("graph" and "graph (padded)" would both be the graph colour: the second gets its own)."""
    out, used = [], set()
    for index, label in enumerate(labels):
        colour = color_for(label, index)
        if colour in used:
            free = [c for c in _OTHER_COLORS if c not in used]
            colour = free[0] if free else _OTHER_COLORS[index % len(_OTHER_COLORS)]
        used.add(colour)
        out.append(colour)
    return out


def _provenance(provenance: str | None) -> str:
    if provenance is not None:
        return provenance
    try:
        import labkit

        return str(labkit.provenance())
    except (ImportError, AttributeError):
        # labkit.provenance is provided by the package's __init__; say so rather than guess.
        return "backend not reported (labkit.provenance() unavailable)"


def model_provenance(what: str, provenance: str | None = None) -> str:
    """The title line of a figure computed by a model from measured (or simulated) inputs.

    ``model_provenance("FIFO replay of the service times")`` ->
    ``"model: FIFO replay of the service times; inputs measured on NVIDIA H200"``.
    """
    return f"model: {what}; inputs {_provenance(provenance)}"


_MADE = ("captured", "built")


def shape_provenance(made: str = "captured") -> str:
    """The title line of a graph's drawing: a shape, not a measurement, and how it was made.

    Parameters
    ----------
    made : {"captured", "built"}
        "captured" for a graph recorded by a stream capture, "built" for one made node by
        node (`labkit.explicit`, `labkit.conditional_graph`).
    """
    if made not in _MADE:
        raise ValueError(f"made={made!r}: say 'captured' (a stream capture) or 'built' "
                         "(added node by node)")
    try:
        import labkit
        from labkit.backend import is_gpu

        where = labkit.device_name() if is_gpu else "the simulator"
        return f"graph shape, {made} on {where} (not a measurement)"
    except (ImportError, AttributeError):
        return "graph shape (not a measurement)"


def _legend(ax, where: str, **kwargs):
    """``where``: "best" (inside, where it covers the fewest points), "outside" (right of
    the axes) or "below" (under the axes, for long labels)."""
    if where == "outside":
        return ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), **kwargs)
    if where == "below":
        return ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.18), ncols=1, **kwargs)
    if where == "best":
        return ax.legend(loc="best", **kwargs)
    raise ValueError(f"legend={where!r}: choose 'best', 'outside' or 'below'")


def _plain_number(value, _pos=None) -> str:
    if value <= 0:
        return ""
    return f"{value:,.0f}" if value >= 10 else f"{value:g}"


_STEPS_125 = (1.0, 2.0, 5.0)


def _step_125(value: float, up: bool) -> float:
    """The 1-2-5 value (…, 50, 100, 200, 500, …) at or below ``value``, or at or above it."""
    exponent = math.floor(math.log10(value))
    candidates = [m * 10.0 ** e for e in (exponent - 1, exponent, exponent + 1) for m in _STEPS_125]
    if up:
        return min(c for c in candidates if c >= value * (1 - 1e-9))
    return max(c for c in candidates if c <= value * (1 + 1e-9))


# An end of a short log axis further than this (in decades) from a labelled tick gets one.
_END_TICK_DECADES = 0.2


def _tidy_log_axis(axis) -> None:
    """Log ticks that do not overlap: 1-2-5 steps over a few decades, decades only over more,
    plain numbers, minor ticks unlabelled.

    On a short axis (a few decades), an end that sits far from every labelled tick is moved
    out to the next 1-2-5 value, so the data nearest that end has a number beside it (a curve
    at 122 µs on an axis labelled from 200 up had none). The axis keeps autoscaling: data
    added later widens it again."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter
    lo, hi = axis.get_view_interval()
    decades = math.log10(max(hi, 1e-300) / max(lo, 1e-300)) if lo > 0 and hi > 0 else 3
    subs = _STEPS_125 if decades <= 2.5 else (1.0,)
    if subs == _STEPS_125 and lo > 0 and hi > 0:
        if math.log10(_step_125(lo, up=True) / lo) > _END_TICK_DECADES:
            lo = _step_125(lo, up=False)
        if math.log10(hi / _step_125(hi, up=False)) > _END_TICK_DECADES:
            hi = _step_125(hi, up=True)
        axes = axis.axes
        setter = axes.set_xlim if axis is axes.xaxis else axes.set_ylim
        setter(lo, hi, auto=None)
    axis.set_major_locator(LogLocator(base=10, subs=subs))
    axis.set_major_formatter(FuncFormatter(_plain_number))
    axis.set_minor_formatter(NullFormatter())


_BAND_NOTE = "line: median · shaded: p5–p95 of the samples"
_WHISKER_NOTE = "bar: median · whisker: up to p95 of the samples"


def _band_handle():
    from matplotlib.patches import Patch
    return Patch(facecolor="grey", alpha=0.25, label=_BAND_NOTE)


def _new_axes(ax, figsize: tuple[float, float]):
    if ax is not None:
        return ax
    _, ax = plt.subplots(figsize=figsize)
    return ax


def _finish(ax, title: str, provenance: str | None, grid_axis: str | None = "both"):
    prov = _provenance(provenance)
    ax.set_title(f"{title}\n{prov}" if title else prov)
    # Set explicitly: an ``ax`` made outside style() did not get the grid from rcParams.
    ax.grid(False)
    if grid_axis:
        ax.grid(True, axis=grid_axis, alpha=0.3)
    return ax


def _fmt(value: float) -> str:
    return f"{value:.0f}" if abs(value) >= 1000 else f"{value:.3g}"


def _as_stats(label: str, value) -> Stats:
    return value if isinstance(value, Stats) else Stats(value, label)


def _centre_and_band(values: Sequence) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
    """Medians and a p5..p95 band for Stats; the values themselves (no band) for numbers."""
    if values and all(isinstance(v, Stats) for v in values):
        return (np.array([v.median for v in values]),
                np.array([v.percentile(5) for v in values]),
                np.array([v.percentile(95) for v in values]))
    if any(isinstance(v, Stats) for v in values):
        raise TypeError("a series mixes Stats and plain numbers; give all Stats or all numbers")
    return np.asarray(values, dtype=float), None, None


# --------------------------------------------------------------------------- timeline

_SOURCE_LINES = {
    "cupti": "GPU spans: CUPTI activity records",
    "events": "GPU spans from CUDA event pairs (no CUPTI): each includes event-record overhead",
    "model": "spans from the simulator's cost model",
}


def timeline(tl: Timeline, ax=None, title: str = "Timeline", t0: float | None = None,
             window_us: float | None = None, provenance: str | None = None,
             max_labels: int = 12):
    """Draw a timeline as Nsight Systems does: a CPU row on top, then one row per stream.

    A span's ``added_us`` (what a tracer added to it) is drawn hatched at its end, with a
    legend entry "added by the tracer". Spans narrower than ``TIMELINE_MIN_WIDTH`` of the axis
    are drawn that wide, and the x label says so. Where a span starts as the one before it on
    its row ends (back-to-back kernels), a white hairline separates the two.

    Parameters
    ----------
    tl : Timeline
        Spans with ``row``, ``name``, ``start_us``, ``end_us`` and ``kind``, plus ``source``
        and ``note``.
    ax : matplotlib Axes, optional
    title : str
    t0 : float, optional
        Time (µs) shown as 0; the earliest span by default.
    window_us : float, optional
        Show only ``[t0, t0 + window_us]``.
    provenance : str, optional
        Where the numbers come from; ``labkit.provenance()`` when None.
    max_labels : int
        At most this many device spans per row get their name written in them (the widest).

    Returns
    -------
    matplotlib.axes.Axes
    """
    if not tl.spans:
        raise ValueError("the timeline has no spans to draw; record a region that does some work")
    origin = tl.start_us if t0 is None else float(t0)
    if window_us is not None:
        tl = tl.window(origin, origin + window_us)
        if not tl.spans:
            raise ValueError(f"no span falls in the {window_us} µs window from t0={origin}; "
                             "widen window_us or move t0")
    rows = tl.rows()
    extent = (window_us if window_us is not None else tl.end_us - origin) or 1.0
    # A 1 µs kernel on a 5 ms axis is narrower than a pixel: every span is drawn at least
    # MIN_WIDTH of the axis wide (the x label says so when it happened).
    min_width = extent * TIMELINE_MIN_WIDTH
    widened = False
    with style():
        ax = _new_axes(ax, (11, 1.4 + 0.55 * len(rows)))
        kinds_drawn: list[str] = []
        added_drawn = False
        for y, row in enumerate(rows):
            row_spans = tl.row_spans(row)
            for kind in SPAN_KINDS:
                spans = [s for s in row_spans if s.kind == kind]
                if not spans:
                    continue
                widened |= any(s.duration_us < min_width for s in spans)
                bars = [(s.start_us - origin, max(s.duration_us - s.added_us, min_width))
                        for s in spans]
                ax.broken_barh(bars, (y - 0.38, 0.76), facecolors=KIND_COLORS[kind],
                               edgecolor="none", linewidth=0)
                added = [(s.end_us - s.added_us - origin, s.added_us) for s in spans if s.added_us > 0]
                if added:
                    ax.broken_barh(added, (y - 0.38, 0.76), facecolors="white",
                                   edgecolor=KIND_COLORS[kind], hatch="////", linewidth=0.6)
                    added_drawn = True
                if kind not in kinds_drawn:
                    kinds_drawn.append(kind)
            _separate_adjacent_spans(ax, row_spans, y, origin, min_width)
            _label_wide_spans(ax, row_spans, y, origin, extent, max_labels)
        ax.set_yticks(range(len(rows)), rows)
        ax.set_ylim(len(rows) - 0.5, -0.5)  # CPU on top, as in Nsight Systems
        ax.set_xlim(0, extent)
        source_line = _SOURCE_LINES.get(tl.source, f"source: {tl.source}")
        if widened:
            source_line += f"; spans shorter than {_fmt(min_width)} µs drawn that wide"
        ax.set_xlabel("time since t0 (µs)\n" + _wrap(source_line + (f"; {tl.note}" if tl.note else "")))
        handles = [Line2D([], [], color=KIND_COLORS[k], lw=8, label=k) for k in kinds_drawn]
        if added_drawn:
            from matplotlib.patches import Patch
            handles.append(Patch(facecolor="white", edgecolor="#555555", hatch="////",
                                 label="added by the tracer"))
        ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.0, 1.0))
        return _finish(ax, title, provenance, grid_axis="x")


TIMELINE_MIN_WIDTH = 1.5e-3   # of the axis: about 1.5 px on the course's 11-inch timelines


def _wrap(text: str, width: int = 120) -> str:
    import textwrap
    return "\n".join(textwrap.wrap(text, width)) if len(text) > width else text


def _separate_adjacent_spans(ax, row_spans, y: float, origin: float, min_width: float) -> list[float]:
    """A white hairline where a span starts as its neighbour ends, so five back-to-back kernels
    read as five bars, not one. Spans narrower than a few ``min_width`` get none: the line
    would cover most of them. Returns the x positions (µs since t0) of the lines drawn."""
    ordered = sorted(row_spans, key=lambda s: s.start_us)
    # a gap narrower than this is invisible at the figure's width: the spans look joined
    touching = 2 * min_width
    wide_enough = 4 * min_width
    xs = [b.start_us - origin for a, b in zip(ordered, ordered[1:])
          if abs(b.start_us - a.end_us) <= touching
          and min(a.duration_us, b.duration_us) >= wide_enough]
    if xs:
        ax.vlines(xs, y - 0.38, y + 0.38, colors="white", linewidth=0.8, gid="span separators")
    return xs


def _label_wide_spans(ax, row_spans, y: float, origin: float, extent: float,
                      max_labels: int) -> None:
    device = [s for s in row_spans if s.kind in ("kernel", "memcpy", "memset")]
    # A name fits in a bar about 6% of the axis wide; narrower bars stay unlabelled.
    wide = sorted((s for s in device if s.duration_us >= 0.06 * extent),
                  key=lambda s: -s.duration_us)[:max_labels]
    for span in wide:
        ax.text(span.start_us - origin + span.duration_us / 2, y, span.name, ha="center",
                va="center", fontsize=8, color="white", clip_on=True)


# --------------------------------------------------------------------------- sweeps

def per_kernel_cost(ks: Sequence[float], series: Mapping[str, Sequence], ax=None,
                    title: str = "Cost per kernel", logx: bool = True, logy: bool = False,
                    provenance: str | None = None, legend: str = "best"):
    """Microseconds per kernel against the number of kernels K, one line per strategy.

    Parameters
    ----------
    ks : sequence of int
        Numbers of kernels per iteration (x).
    series : dict of str to sequence
        Label -> one value per K: numbers (µs per kernel) or Stats (drawn as the median with
        a shaded p5..p95 band).
    ax : matplotlib Axes, optional
    title : str
    logx : bool
        Log-scaled K axis.
    logy : bool
        Log-scaled time axis: series that differ many-fold all stay readable.
    provenance : str, optional
    legend : {"best", "outside", "below"}
        Where the legend goes: inside where it covers the fewest points, or outside the axes.

    Returns
    -------
    matplotlib.axes.Axes
    """
    ks = np.asarray(ks, dtype=float)
    with style():
        ax = _new_axes(ax, (7, 4.5))
        banded = _draw_series(ax, ks, series, "K's", "give one value per entry of ks")
        if logx:
            ax.set_xscale("log")
            _tidy_log_axis(ax.xaxis)
        if logy:
            ax.set_yscale("log")
            _tidy_log_axis(ax.yaxis)
        else:
            ax.set_ylim(bottom=0)
        ax.set_xlabel("kernels per iteration, K")
        ax.set_ylabel("time per kernel (µs" + (", log)" if logy else ")"))
        handles, _ = ax.get_legend_handles_labels()
        _legend(ax, legend, handles=handles + ([_band_handle()] if banded else []))
        return _finish(ax, title, provenance)


def _draw_series(ax, xs, series: Mapping[str, Sequence], what: str, fix: str) -> bool:
    """One line per series (median and p5..p95 band for Stats); whether any band was drawn."""
    palette = colors_for(series)
    banded = False
    for index, (label, values) in enumerate(series.items()):
        values = list(values)
        if len(values) != len(xs):
            raise ValueError(f"series {label!r} has {len(values)} values for {len(xs)} {what}; "
                             f"{fix}")
        centre, lo, hi = _centre_and_band(values)
        colour = palette[index]
        ax.plot(xs, centre, marker="o", color=colour, label=label)
        if lo is not None:
            ax.fill_between(xs, lo, hi, color=colour, alpha=0.2, linewidth=0)
            banded = True
    return banded


def phase_costs(sizes: Sequence[float], phases: Mapping[str, Sequence], ax=None,
                title: str = "Cost of each graph phase", provenance: str | None = None,
                legend: str = "best"):
    """Cost of each phase of a graph's life (capture, instantiate, ...) against graph size.

    Parameters
    ----------
    sizes : sequence of int
        Graph sizes in nodes (x).
    phases : dict of str to sequence
        Phase name -> one value per size: numbers (µs) or Stats (median, p5..p95 band).
    ax : matplotlib Axes, optional
    title : str
    provenance : str, optional
    legend : {"best", "outside", "below"}

    Returns
    -------
    matplotlib.axes.Axes
    """
    sizes = np.asarray(sizes, dtype=float)
    with style():
        ax = _new_axes(ax, (7, 4.5))
        for name, values in phases.items():
            if len(list(values)) != len(sizes):
                raise ValueError(f"phase {name!r} has {len(list(values))} values for "
                                 f"{len(sizes)} sizes; give one value per size")
        banded = _draw_series(ax, sizes, phases, "sizes", "give one value per size")
        ax.set_xscale("log")
        ax.set_yscale("log")
        _tidy_log_axis(ax.xaxis)
        _tidy_log_axis(ax.yaxis)
        ax.set_xlabel("graph size (nodes)")
        ax.set_ylabel("time (µs, log)")
        handles, _ = ax.get_legend_handles_labels()
        _legend(ax, legend, handles=handles + ([_band_handle()] if banded else []))
        return _finish(ax, title, provenance)


# --------------------------------------------------------------------------- amortization

def breakeven(setup_us: float, eager_iter_us: float, graph_iter_us: float) -> float | None:
    """Iterations after which a graph's one-off setup has paid for itself.

    ``setup_us / (eager_iter_us - graph_iter_us)``: from this many iterations on, setup plus
    graph iterations cost no more than eager iterations.

    Parameters
    ----------
    setup_us : float
        One-off cost of the graph (capture + instantiate, and upload if measured apart), µs.
    eager_iter_us, graph_iter_us : float
        Cost of one iteration without and with the graph, µs.

    Returns
    -------
    float or None
        None when the graph iteration is not cheaper: the graph never pays off.
    """
    for name, value in (("setup_us", setup_us), ("eager_iter_us", eager_iter_us),
                        ("graph_iter_us", graph_iter_us)):
        if not (math.isfinite(value) and value >= 0):
            raise ValueError(f"{name}={value} must be a finite time >= 0 µs")
    saving = eager_iter_us - graph_iter_us
    if saving <= 0:
        return None
    return setup_us / saving


def _time_unit(max_us: float) -> tuple[float, str]:
    if max_us >= 1e6:
        return 1e-6, "s"
    if max_us >= 1e4:
        return 1e-3, "ms"
    return 1.0, "µs"


def amortization(setup_us: float, eager_iter_us: float, graph_iter_us: float,
                 iterations: int | Sequence[int], ax=None,
                 title: str = "When does the graph pay off?", provenance: str | None = None,
                 xlabel: str = "iterations", legend: str = "best"):
    """Cumulative time against iterations, eager vs graph, with the break-even marked.

    Eager costs ``eager_iter_us * n``; the graph costs ``setup_us + graph_iter_us * n``. The
    lines are this model, not measurements: the title says so, and where its inputs came from.

    Parameters
    ----------
    setup_us, eager_iter_us, graph_iter_us : float
        As for :func:`breakeven`, in µs.
    iterations : int or sequence of int
        Largest iteration count to draw (from 0), or the counts themselves.
    ax : matplotlib Axes, optional
    title : str
    provenance : str, optional
        Where the three inputs came from; ``labkit.provenance()`` when None.
    xlabel : str
        What one iteration is ("tokens", "requests"); the break-even note uses it too.
    legend : {"best", "outside", "below"}

    Returns
    -------
    matplotlib.axes.Axes
    """
    be = breakeven(setup_us, eager_iter_us, graph_iter_us)
    n = (np.arange(0, int(iterations) + 1) if np.ndim(iterations) == 0
         else np.asarray(iterations, dtype=float))
    eager = eager_iter_us * n
    graph = setup_us + graph_iter_us * n
    scale, unit = _time_unit(float(max(eager.max(), graph.max())))
    with style():
        ax = _new_axes(ax, (7, 4.5))
        ax.plot(n, eager * scale, color=color_for("eager"),
                label=f"eager: {_fmt(eager_iter_us)} µs/iter")
        ax.plot(n, graph * scale, color=color_for("graph"),
                label=f"graph: {_fmt(setup_us)} µs setup + {_fmt(graph_iter_us)} µs/iter")
        if be is None:
            ax.text(0.03, 0.95, "break-even: never (a graph iteration is not cheaper)",
                    transform=ax.transAxes, va="top", color="black")
        elif be > n.max():
            ax.text(0.03, 0.95, f"break-even after {be:.1f} {xlabel}, beyond the "
                    f"{int(n.max())} drawn here", transform=ax.transAxes, va="top")
        else:
            ax.axvline(be, color="black", linestyle="--", linewidth=1)
            # at the top of the dashed line: below the crossing it would sit on the x ticks
            ax.annotate(f"break-even after {be:.1f} {xlabel}", xy=(be, 0.96),
                        xycoords=ax.get_xaxis_transform(), xytext=(6, 0),
                        textcoords="offset points", va="top", fontsize=9)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(f"cumulative time ({unit})")
        ax.set_xlim(left=0)
        ax.set_ylim(bottom=0)
        _legend(ax, legend)
        return _finish(ax, title, model_provenance(
            "cumulative time = setup + n × per-iteration cost", provenance))


# --------------------------------------------------------------------------- distributions

_PCT_MARKS = ((50, "o", "-"), (95, "s", "--"), (99, "^", ":"))


def _pct_label(label: str, st: Stats) -> str:
    return (f"{label}: p50 {_fmt(st.p50)} · p95 {_fmt(st.p95)} · p99 {_fmt(st.p99)} {st.unit}")


def latency_cdf(stats_by_label: Mapping[str, object], ax=None,
                title: str = "Latency distribution", logx: bool = False,
                provenance: str | None = None, model: str | None = None,
                legend: str = "below"):
    """Empirical CDF of each series, with its p50, p95 and p99 marked.

    Parameters
    ----------
    stats_by_label : dict of str to Stats or array_like
        Label -> samples (µs unless a Stats says otherwise).
    ax : matplotlib Axes, optional
    title : str
    logx : bool
    provenance : str, optional
    model : str, optional
        When the latencies come from a model fed with measured figures (a queue replayed in
        Python, say), what that model is: the title then says "model: ...; inputs measured on".
    legend : {"below", "best", "outside"}
        Below the axes by default: the labels carry three percentiles each.

    Returns
    -------
    matplotlib.axes.Axes
    """
    with style():
        ax = _new_axes(ax, (7, 4.5))
        unit = "µs"
        palette = colors_for(stats_by_label)
        for index, (label, value) in enumerate(stats_by_label.items()):
            st = _as_stats(label, value)
            unit = st.unit
            colour = palette[index]
            xs = np.sort(st.samples)
            ys = np.arange(1, st.n + 1) / st.n
            ax.step(xs, ys, where="post", color=colour, label=_pct_label(label, st))
            for q, marker, _ in _PCT_MARKS:
                ax.plot([st.percentile(q)], [q / 100], marker=marker, color=colour,
                        markersize=6, linestyle="none")
        for q, marker, _ in _PCT_MARKS:
            ax.axhline(q / 100, color="grey", linewidth=0.6, linestyle=":")
        marks = [Line2D([], [], color="grey", marker=m, linestyle="none", label=f"p{q}")
                 for q, m, _ in _PCT_MARKS]
        if logx:
            ax.set_xscale("log")
            _tidy_log_axis(ax.xaxis)
        ax.set_ylim(0, 1.02)
        ax.set_xlabel(f"latency ({unit}{', log' if logx else ''})")
        ax.set_ylabel("fraction of samples ≤ latency")
        handles, _ = ax.get_legend_handles_labels()
        _legend(ax, legend, handles=handles + marks)
        return _finish(ax, title, model_provenance(model, provenance) if model else provenance)


def latency_hist(stats_by_label: Mapping[str, object], ax=None, bins: int = 50,
                 title: str = "Latency histogram", logx: bool = False,
                 provenance: str | None = None, model: str | None = None,
                 legend: str = "below"):
    """Histogram of each series on shared bins, with p50 (solid), p95 (dashed), p99 (dotted).

    Parameters
    ----------
    stats_by_label : dict of str to Stats or array_like
    ax : matplotlib Axes, optional
    bins : int
        Number of bins, shared by all series so their heights compare.
    title : str
    logx : bool
        Log-spaced bins and axis (every sample must be > 0).
    provenance : str, optional
    model : str, optional
        As for :func:`latency_cdf`.
    legend : {"below", "best", "outside"}

    Returns
    -------
    matplotlib.axes.Axes
    """
    all_stats = {label: _as_stats(label, v) for label, v in stats_by_label.items()}
    if not all_stats:
        raise ValueError("latency_hist got no series; pass {label: Stats or samples}")
    pooled = np.concatenate([st.samples for st in all_stats.values()])
    if logx:
        if pooled.min() <= 0:
            raise ValueError("logx needs every sample > 0; use logx=False for this data")
        edges = np.geomspace(pooled.min(), pooled.max() * (1 + 1e-9), bins + 1)
    else:
        edges = np.histogram_bin_edges(pooled, bins=bins)
    with style():
        ax = _new_axes(ax, (7, 4.5))
        unit = "µs"
        palette = colors_for(all_stats)
        for index, (label, st) in enumerate(all_stats.items()):
            unit = st.unit
            colour = palette[index]
            ax.hist(st.samples, bins=edges, color=colour, alpha=0.35, label=_pct_label(label, st))
            ax.hist(st.samples, bins=edges, color=colour, histtype="step", linewidth=1)
            for q, _, linestyle in _PCT_MARKS:
                ax.axvline(st.percentile(q), color=colour, linestyle=linestyle, linewidth=1.2)
        marks = [Line2D([], [], color="grey", linestyle=ls, label=f"p{q}")
                 for q, _, ls in _PCT_MARKS]
        if logx:
            ax.set_xscale("log")
            _tidy_log_axis(ax.xaxis)
        ax.set_xlabel(f"latency ({unit}{', log' if logx else ''})")
        ax.set_ylabel("samples per bin")
        handles, _ = ax.get_legend_handles_labels()
        _legend(ax, legend, handles=handles + marks)
        return _finish(ax, title, model_provenance(model, provenance) if model else provenance)


# --------------------------------------------------------------------------- DAG

def _layered_positions(g: nx.DiGraph) -> tuple[dict, list[list]]:
    """Top-down layers from topological generations; within a layer, nodes sit under the
    mean position of their parents (a barycentre pass), which keeps fork/join drawings tidy."""
    try:
        layers = [list(layer) for layer in nx.topological_generations(g)]
    except nx.NetworkXUnfeasible as exc:
        raise ValueError("the graph has a cycle, but a CUDA graph is a DAG; look for an edge "
                         "that points back to an earlier node") from exc
    order = {node: i for i, node in enumerate(g.nodes)}
    pos: dict = {}
    for depth, layer in enumerate(layers):
        def barycentre(node):
            parents = [pos[p][0] for p in g.predecessors(node) if p in pos]
            return (sum(parents) / len(parents) if parents else 0.0, order[node])
        if depth:
            layer.sort(key=barycentre)
        else:
            layer.sort(key=order.__getitem__)
        for i, node in enumerate(layer):
            pos[node] = (i - (len(layer) - 1) / 2, -depth)
    return pos, layers


_DAG_LABEL_CHARS = 10


def _dag_text(attrs: dict, node) -> str:
    """A node's label: its kernel's short name (or its kind), at most ten characters."""
    from labkit.measure._cupti import short_kernel_name
    name = attrs.get("name")
    text = short_kernel_name(str(name)) if name else str(attrs.get("label", node))
    return text if len(text) <= _DAG_LABEL_CHARS else text[:_DAG_LABEL_CHARS - 1] + "…"


def graph_dag(g, ax=None, title: str = "Graph", provenance: str | None = None,
              made: str | None = None):
    """Draw a graph's DAG top-down, nodes coloured by kind, each labelled with its kernel's
    name inside its circle (networkx + matplotlib only).

    Parameters
    ----------
    g : networkx.DiGraph or object with ``to_networkx()``
        Nodes may carry ``kind`` ("kernel", "memcpy", "memset", "empty", "event_record",
        "wait_event", "graph", ...), ``name`` (a kernel's name or symbol; shortened) and
        ``label`` (used when there is no name) attributes.
    ax : matplotlib Axes, optional
    title : str
        Node and edge counts are appended.
    provenance : str, optional
        By default the drawing says it is a shape, captured (or built) on the GPU or the
        simulator: not a measurement.
    made : {"captured", "built"}, optional
        How the graph was made, for that line; by default what the graph says
        (`labkit.Graph.made`, or a networkx graph's ``graph["made"]``), else "captured".

    Returns
    -------
    matplotlib.axes.Axes
    """
    graph = g.to_networkx() if hasattr(g, "to_networkx") else g
    if not isinstance(graph, nx.DiGraph):
        raise TypeError(f"graph_dag needs a networkx.DiGraph or an object with .to_networkx(), "
                        f"got {type(g).__name__}")
    # the shape line is made first: a wrong ``made`` fails here, even with a provenance given
    shape_line = shape_provenance(made or graph.graph.get("made", "captured"))
    pos, layers = _layered_positions(graph)
    n_nodes, n_edges = graph.number_of_nodes(), graph.number_of_edges()
    widest = max((len(layer) for layer in layers), default=1)
    # Labels stop being readable past a few dozen nodes; the shape still tells the story.
    texts = {n: _dag_text(graph.nodes[n], n) for n in graph.nodes}
    labelled = n_nodes <= 60
    font = 8 if n_nodes <= 30 else 6
    if labelled:
        # circle diameter (points) that holds the longest label: ~0.62 em per character
        longest = max((len(t) for t in texts.values()), default=1)
        node_size = max(28.0, 0.62 * font * longest + 9) ** 2
    else:
        node_size = 120
    with style():
        ax = _new_axes(ax, (min(max(2 + 1.6 * widest, 5), 14),
                            min(max(1.5 + 0.9 * len(layers), 3), 14)))
        if n_nodes == 0:
            ax.text(0.5, 0.5, "empty graph", ha="center", va="center", transform=ax.transAxes)
        else:
            nx.draw_networkx_edges(graph, pos, ax=ax, arrows=True, arrowstyle="-|>",
                                   arrowsize=12, node_size=node_size, edge_color="#555555")
            kinds = sorted({graph.nodes[n].get("kind", "unknown") for n in graph.nodes},
                           key=lambda k: (k not in NODE_COLORS, k))
            for kind in kinds:
                nodes = [n for n in graph.nodes if graph.nodes[n].get("kind", "unknown") == kind]
                nx.draw_networkx_nodes(graph, pos, nodelist=nodes, ax=ax, node_size=node_size,
                                       node_color=NODE_COLORS.get(kind, _UNKNOWN_NODE_COLOR),
                                       edgecolors="#333333", linewidths=0.8)
            if labelled:
                nx.draw_networkx_labels(graph, pos, labels=texts, ax=ax, font_size=font)
            handles = [Line2D([], [], marker="o", linestyle="none", markersize=9,
                              markerfacecolor=NODE_COLORS.get(k, _UNKNOWN_NODE_COLOR),
                              markeredgecolor="#333333", label=k) for k in kinds]
            ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.0, 1.0))
            ax.margins(0.15)
        ax.set_axis_off()
        return _finish(ax, f"{title}: {n_nodes} nodes, {n_edges} edges",
                       shape_line if provenance is None else provenance,
                       grid_axis=None)


# --------------------------------------------------------------------------- bars

def bars(values: Mapping[str, object], ax=None, ylabel: str = "µs", log: bool = False,
         title: str = "Comparison", provenance: str | None = None):
    """Bars comparing strategies, the value printed on each.

    Parameters
    ----------
    values : dict of str to float or Stats
        Label -> value; a Stats shows its median with a whisker up to its p95.
    ax : matplotlib Axes, optional
    ylabel : str
        Axis label with its unit, e.g. "time per update (µs)".
    log : bool
        Log-scaled value axis.
    title : str
    provenance : str, optional

    Returns
    -------
    matplotlib.axes.Axes
    """
    if not values:
        raise ValueError("bars got no values; pass {label: number or Stats}")
    labels = list(values)
    heights = [v.median if isinstance(v, Stats) else float(v) for v in values.values()]
    upper = [v.p95 - v.median if isinstance(v, Stats) else 0.0 for v in values.values()]
    has_whiskers = any(isinstance(v, Stats) for v in values.values())
    with style():
        ax = _new_axes(ax, (max(4.5, 1.2 * len(labels) + 2), 4.5))
        x = np.arange(len(labels))
        ax.bar(x, heights, color=colors_for(labels),
               yerr=[np.zeros(len(labels)), upper] if has_whiskers else None, capsize=4)
        for xi, height, up in zip(x, heights, upper):
            ax.annotate(_fmt(height), xy=(xi, height + up), xytext=(0, 3),
                        textcoords="offset points", ha="center", va="bottom", fontsize=9)
        long_labels = any(len(label) > 10 for label in labels)
        ax.set_xticks(x, labels, rotation=20 if long_labels else 0,
                      ha="right" if long_labels else "center")
        top = max(h + u for h, u in zip(heights, upper))
        if log:
            ax.set_yscale("log")
            # room above the tallest bar for its value: a tenth of the log range, as the
            # linear case gets 15 % (on the H200, 08's "1767" touched the frame)
            lo, hi = ax.get_ylim()
            if top > 0 and lo > 0:
                ax.set_ylim(lo, max(hi, top * (top / lo) ** 0.12), auto=None)
            _tidy_log_axis(ax.yaxis)
        else:
            ax.set_ylim(0, top * 1.15 or 1.0)
        ax.set_ylabel(ylabel)
        if has_whiskers:
            ax.set_xlabel(_WHISKER_NOTE, fontsize=8, color="#555555")
        return _finish(ax, title, provenance, grid_axis="y")


def savefig(fig, path: str | Path, dpi: int = 150) -> Path:
    """Save a Figure (or the Figure of an Axes) to ``path``, making parent folders.

    Returns
    -------
    pathlib.Path
        The path written.
    """
    figure = fig.figure if hasattr(fig, "figure") and not hasattr(fig, "savefig") else fig
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=dpi, bbox_inches="tight")
    return path


# --------------------------------------------------------------------------- capture modes

# What one cell of the capture-mode matrix did, by the capture's status after the call.
CAPTURE_OUTCOMES: dict[str, tuple[str, str]] = {
    "allowed": ("allowed: the call succeeds, the capture goes on", "#2ca02c"),
    "refused": ("refused: an error, but the capture goes on", "#f2b134"),
    "invalidated": ("refused, and the capture is invalidated", "#d62728"),
    "ended": ("the capture has ended", "#1f77b4"),
    "setup failed": ("the cell's setup failed", "#d9d9d9"),
}
_WHERE_LABELS = {"capturing": "capturing\nthread", "capturing_relaxed": "capturing,\nrelaxed",
                 "other": "other\nthread", "other_relaxed": "other,\nrelaxed"}


def _capture_outcome(rec: Mapping) -> str:
    status = rec.get("status")
    if status is None:
        return "setup failed"
    if status == "cudaStreamCaptureStatusNone":
        return "ended"
    if status == "cudaStreamCaptureStatusInvalidated":
        return "invalidated"
    return "allowed" if rec.get("rc") == "cudaSuccess" else "refused"


def capture_matrix(cells: Sequence[Mapping], ax=None, title: str = "What a capture allows",
                   provenance: str | None = None, wheres: Sequence[str] | None = None,
                   code=None):
    """The capture-mode matrix: a row per call, a column per (capture mode, calling thread).

    Each square's colour is what the call did to the capture (`CAPTURE_OUTCOMES`), its number
    the call's error code (0: success; NI: not in this backend).

    Parameters
    ----------
    cells : sequence of dict
        Records of `labkit.course.capture_modes.run_cell` (``measure(...)["cells"]``).
    ax : matplotlib Axes, optional
    title : str
    provenance : str, optional
    wheres : sequence of str, optional
        The column order of the calling threads (default: as they first appear in ``cells``).
    code : callable, optional
        ``code(record) -> str``, the text in a square (default: the record's ``rc``).
        `labkit.course.capture_modes.plot_matrix` passes the course's own order and codes.

    Returns
    -------
    matplotlib.axes.Axes
    """
    from matplotlib.colors import ListedColormap
    from matplotlib.patches import Patch

    if not cells:
        raise ValueError("capture_matrix got no cells; pass labkit.course.capture_modes"
                         ".measure(...)['cells']")
    wheres = list(wheres) if wheres is not None else list(dict.fromkeys(r["where"] for r in cells))
    code = code or (lambda rec: str(rec["rc"]))
    calls = list(dict.fromkeys(r["call"] for r in cells))
    modes = list(dict.fromkeys(r["mode"] for r in cells))
    wheres = [w for w in wheres if any(r["where"] == w for r in cells)]
    columns = [(m, w) for m in modes for w in wheres]
    by_key = {(r["call"], r["mode"], r["where"]): r for r in cells}
    kinds = list(CAPTURE_OUTCOMES)
    grid = np.full((len(calls), len(columns)), np.nan)
    with style():
        ax = _new_axes(ax, (max(7.0, 2.6 + 0.78 * len(columns)),
                             max(3.6, 1.6 + 0.36 * len(calls))))  # room for labels, legend
        for i, call in enumerate(calls):
            for j, (mode, where) in enumerate(columns):
                rec = by_key.get((call, mode, where))
                if rec is None:
                    continue
                grid[i, j] = kinds.index(_capture_outcome(rec))
                ax.text(j, i, code(rec), ha="center", va="center", fontsize=8,
                        color="white" if _capture_outcome(rec) in ("invalidated", "ended")
                        else "black")
        cmap = ListedColormap([CAPTURE_OUTCOMES[k][1] for k in kinds])
        ax.imshow(grid, cmap=cmap, vmin=-0.5, vmax=len(kinds) - 0.5, aspect="auto")
        ax.set_xticks(range(len(columns)), [_WHERE_LABELS.get(w, w) for _, w in columns],
                      fontsize=8)
        ax.set_yticks(range(len(calls)), calls, fontsize=9)
        ax.tick_params(length=0)
        for k in range(1, len(modes)):
            ax.axvline(k * len(wheres) - 0.5, color="white", linewidth=4)
        for k, mode in enumerate(modes):
            ax.text((k + 0.5) * len(wheres) - 0.5, -0.7, f"capture mode: {mode}",
                    ha="center", va="bottom", fontsize=10, fontweight="bold")
        used = [k for k in kinds if k in {_capture_outcome(r) for r in cells}]
        ax.legend(handles=[Patch(color=CAPTURE_OUTCOMES[k][1], label=CAPTURE_OUTCOMES[k][0])
                           for k in used],
                  loc="upper center", bbox_to_anchor=(0.5, -0.12 - 0.3 / max(1, len(calls))),
                  ncol=2, fontsize=9)
        for side in ("top", "right", "bottom", "left"):
            ax.spines[side].set_visible(False)
        ax.set_ylim(len(calls) - 0.5, -1.3)
        return _finish(ax, title, provenance, grid_axis=None)


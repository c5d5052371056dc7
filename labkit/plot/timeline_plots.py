"""Timelines drawn as Nsight Systems draws them: a CPU row on top, then one row per stream.

`timeline` draws one; `timelines` draws several in one figure on one shared time axis, so
their lengths compare at a glance. ``stream_names`` labels streams by their role ("origin",
"side 1") instead of their raw handles. `trace_file` draws an exported Chrome trace file the way
Perfetto lays it out (a track per thread, nested slices stacked), from the file alone.
"""
from __future__ import annotations

from typing import Mapping, Sequence

import matplotlib.pyplot as plt
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from labkit.measure.timeline import SPAN_KINDS, Timeline, row_labels
from labkit.measure.trace_export import tracks as trace_tracks
from labkit.plot import _axes
from labkit.plot.theme import KIND_COLORS, style
from labkit.measure.stats import fmt_value

__all__ = ["timeline", "timelines", "trace_file", "TIMELINE_MIN_WIDTH"]

TIMELINE_MIN_WIDTH = 1.5e-3   # of the axis: about 1.5 px on the course's 11-inch timelines
_BAR = 0.38                   # half a row's bar height

_SOURCE_LINES = {
    "cupti": "GPU spans: CUPTI activity records",
    "events": "GPU spans from CUDA event pairs (no CUPTI): each includes event-record overhead",
    "model": "spans from the simulator's cost model",
}


def timeline(tl: Timeline, ax=None, title: str = "Timeline", t0: float | None = None,
             window_us: float | None = None, provenance: str | None = None,
             max_labels: int = 12, stream_names: Mapping | None = None):
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
    stream_names : dict, optional
        A row's label by its stream: keys are `labkit.Stream` objects, raw stream handles
        (int) or row names ("stream 7"); values are roles ("origin", "side 1").

    Returns
    -------
    matplotlib.axes.Axes
    """
    origin, tl = _windowed(tl, t0, window_us)
    extent = (window_us if window_us is not None else tl.end_us - origin) or 1.0
    names = row_labels([tl], stream_names, _axes.stream_row)
    with style():
        ax = _axes.new_axes(ax, (11, 1.4 + 0.55 * len(tl.rows())))
        widened, handles = _draw(ax, tl, origin, extent, max_labels, names)
        ax.set_xlabel("time since t0 (µs)\n" + _source_line(tl, widened, extent))
        ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.0, 1.0))
        return _axes.finish(ax, title, provenance, grid_axis="x")


def timelines(items: Sequence[tuple[Timeline, str]], stream_names: Mapping | None = None,
              provenance: str | None = None, max_labels: int = 12):
    """Several timelines in one figure, one axes each, on one shared time axis.

    Each timeline starts at its own 0; all share the x range of the longest, so a timeline
    half as long looks half as long.

    Parameters
    ----------
    items : sequence of (Timeline, str)
        Each timeline with its title.
    stream_names : dict, optional
        As for `timeline`, for all of them.
    provenance : str, optional
        Where the numbers come from, said once in the figure's title.
    max_labels : int

    Returns
    -------
    list of matplotlib.axes.Axes
        One per timeline, top to bottom.
    """
    items = list(items)
    if not items:
        raise ValueError("timelines got no timelines; pass [(timeline, title), ...]")
    for tl, title in items:
        if not tl.spans:
            raise ValueError(f"the timeline {title!r} has no spans to draw; record a region "
                             "that does some work")
    extent = max(tl.end_us - tl.start_us for tl, _ in items) or 1.0
    names = row_labels([tl for tl, _ in items], stream_names, _axes.stream_row)
    heights = [1.0 + 0.55 * len(tl.rows()) for tl, _ in items]
    with style():
        fig, axes = plt.subplots(len(items), 1, sharex=True, squeeze=False,
                                 figsize=(11, 0.9 + sum(heights)),
                                 gridspec_kw={"height_ratios": heights})
        axes = list(axes[:, 0])
        lines = []
        for ax, (tl, title) in zip(axes, items):
            widened, handles = _draw(ax, tl, tl.start_us, extent, max_labels, names)
            lines.append(_source_line(tl, widened, extent))
            ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.0, 1.0))
            _axes.finish(ax, title, "", grid_axis="x")
        axes[-1].set_xlabel("time since each timeline's start (µs, one scale for all)\n"
                            + "\n".join(dict.fromkeys(lines)))
        fig.suptitle(_axes.provenance_line(provenance), fontsize=10)
        return axes


# --------------------------------------------------------------------------- drawing

def _windowed(tl: Timeline, t0, window_us) -> tuple[float, Timeline]:
    if not tl.spans:
        raise ValueError("the timeline has no spans to draw; record a region that does some work")
    origin = tl.start_us if t0 is None else float(t0)
    if window_us is not None:
        tl = tl.window(origin, origin + window_us)
        if not tl.spans:
            raise ValueError(f"no span falls in the {window_us} µs window from t0={origin}; "
                             "widen window_us or move t0")
    return origin, tl


def _draw(ax, tl: Timeline, origin: float, extent: float, max_labels: int,
          names: Mapping[str, str]) -> tuple[bool, list]:
    """Draw the rows of ``tl`` on ``ax`` over ``[0, extent]``; (whether a span was widened,
    legend handles for what was drawn)."""
    rows = tl.rows()
    # A 1 µs kernel on a 5 ms axis is narrower than a pixel: every span is drawn at least
    # TIMELINE_MIN_WIDTH of the axis wide (the x label says so when it happened).
    min_width = extent * TIMELINE_MIN_WIDTH
    widened = False
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
            ax.broken_barh(bars, (y - _BAR, 2 * _BAR), facecolors=KIND_COLORS[kind],
                           edgecolor="none", linewidth=0)
            added = [(s.end_us - s.added_us - origin, s.added_us) for s in spans if s.added_us > 0]
            if added:
                ax.broken_barh(added, (y - _BAR, 2 * _BAR), facecolors="white",
                               edgecolor=KIND_COLORS[kind], hatch="////", linewidth=0.6)
                added_drawn = True
            if kind not in kinds_drawn:
                kinds_drawn.append(kind)
        _separate_adjacent_spans(ax, row_spans, y, origin, min_width)
        _label_wide_spans(ax, row_spans, y, origin, extent, max_labels)
    ax.set_yticks(range(len(rows)), [names.get(r, r) for r in rows])
    ax.set_ylim(len(rows) - 0.5, -0.5)  # CPU on top, as in Nsight Systems
    ax.set_xlim(0, extent)
    handles = [Line2D([], [], color=KIND_COLORS[k], lw=8, label=k) for k in kinds_drawn]
    if added_drawn:
        handles.append(Patch(facecolor="white", edgecolor="#555555", hatch="////",
                             label="added by the tracer"))
    return widened, handles


def _source_line(tl: Timeline, widened: bool, extent: float) -> str:
    line = _SOURCE_LINES.get(tl.source, f"source: {tl.source}")
    if widened:
        line += f"; spans shorter than {fmt_value(extent * TIMELINE_MIN_WIDTH)} µs drawn that wide"
    return _axes.wrap(line + (f"; {tl.note}" if tl.note else ""))


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
        ax.vlines(xs, y - _BAR, y + _BAR, colors="white", linewidth=0.8, gid="span separators")
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


def _fit_labels(ax, labels) -> None:
    """Cut each slice name to what fits its slice, ending in "…" where cut, as Perfetto writes
    names; a slice with no room for two characters and the "…" gets none. ``labels``: (text,
    name, slice width in µs). Measured after one draw, once the layout has sized the axes."""
    if not labels:
        return
    fig = ax.figure
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    x0 = ax.transData.transform((0, 0))[0]
    for text, name, width_us in labels:
        room = ax.transData.transform((width_us, 0))[0] - x0 - 4    # a little margin
        keep = len(name)
        text.set_text(name)
        while text.get_window_extent(renderer).width > room and keep > 2:
            keep -= 1
            text.set_text(name[:keep] + "…")
        if text.get_window_extent(renderer).width > room:
            text.set_text("")


def trace_file(trace, title: str = "A trace file", ax=None, provenance: str | None = None,
               max_labels: int = 12):
    """Draw a Chrome trace-event file as Perfetto's timeline lays it out, from the file alone.

    One track per thread, under its process, in the file's sort order and with the file's thread
    names; a slice inside another sits one level below it, as Perfetto stacks them. This is a
    drawing of the file's contents with matplotlib, not a screenshot of Perfetto: the x label
    says so.

    Parameters
    ----------
    trace : dict or path
        What `labkit.timing.chrome_trace` returned, or a file `save_chrome_trace` wrote.
    max_labels : int
        At most this many slices per track get their name written in them (the widest).

    Returns
    -------
    matplotlib.axes.Axes
    """
    found = trace_tracks(trace)
    if not found:
        raise ValueError("the trace holds no complete (\"ph\": \"X\") events to draw; export a "
                         "timeline that recorded some work")
    origin = min(s[0] for t in found for s in t.slices)
    extent = (max(s[1] for t in found for s in t.slices) - origin) / 1e3 or 1.0
    min_width = extent * TIMELINE_MIN_WIDTH
    levels = [1 + max(s[2] for s in t.slices) for t in found]
    with style():
        ax = _axes.new_axes(ax, (11, 1.4 + 0.45 * (sum(levels) + len(found))))
        y, ticks, labels, kinds, process, named = 0.0, [], [], [], None, []
        for track, depth in zip(found, levels):
            if track.process != process:    # Perfetto's process header above its threads
                process = track.process
                ax.text(0, y - 0.1, f"▾ process: {process}", fontsize=9, fontweight="bold",
                        va="bottom", ha="left", transform=ax.get_yaxis_transform(), clip_on=False)
                y += 0.6
            ticks.append(y + (depth - 1) / 2)
            labels.append(track.thread)
            for kind in SPAN_KINDS:
                mine = [s for s in track.slices if s[4] == kind]
                for level in {s[2] for s in mine}:
                    bars = [((s[0] - origin) / 1e3, max((s[1] - s[0]) / 1e3, min_width))
                            for s in mine if s[2] == level]
                    ax.broken_barh(bars, (y + level - _BAR, 2 * _BAR),
                                   facecolors=KIND_COLORS[kind], edgecolor="white",
                                   linewidth=0.4)
                if mine and kind not in kinds:
                    kinds.append(kind)
            wide = sorted((s for s in track.slices if (s[1] - s[0]) / 1e3 >= 0.06 * extent),
                          key=lambda s: s[0] - s[1])[:max_labels]
            for s in wide:
                text = ax.text(((s[0] + s[1]) / 2 - origin) / 1e3, y + s[2], s[3], ha="center",
                               va="center", fontsize=7, color="white", clip_on=True)
                named.append((text, s[3], (s[1] - s[0]) / 1e3))
            ax.axhline(y + depth - 0.5, color="#cccccc", linewidth=0.6)
            y += depth
        ax.set_yticks(ticks, labels)
        ax.set_ylim(y - 0.5, -0.9)
        ax.set_xlim(0, extent)
        ax.set_xlabel("time since the trace's first event (µs)\n"
                      "drawn with matplotlib from the file's own events, as Perfetto lays out a "
                      "trace: not a Perfetto screenshot")
        ax.legend(handles=[Line2D([], [], color=KIND_COLORS[k], lw=8, label=k) for k in kinds],
                  loc="upper left", bbox_to_anchor=(1.0, 1.0))
        ax = _axes.finish(ax, title, provenance, grid_axis="x")
        _fit_labels(ax, named)
        return ax

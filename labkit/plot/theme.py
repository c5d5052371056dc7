"""The course's look: one packaged matplotlib style (``course.mplstyle``) and fixed colours, so
"graph" is the same blue in every notebook and a span kind or a node kind keeps its colour."""
from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Iterator

import matplotlib
import matplotlib.pyplot as plt

__all__ = ["STYLE_FILE", "SERIES_COLORS", "KIND_COLORS", "NODE_COLORS", "style", "color_for",
           "colors_for"]

STYLE_FILE = Path(__file__).with_name("course.mplstyle")

# Most specific names first: "prepared graph" must match "prepared" before "graph".
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
OTHER_COLORS = ["#ff9896", "#393b79", "#637939", "#8c6d31", "#843c39", "#7b4173",
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
UNKNOWN_NODE_COLOR = "#e377c2"


@contextlib.contextmanager
def style() -> Iterator[None]:
    """The course's matplotlib style, as a context (every plot function applies it itself)."""
    # The first figure of a Jupyter kernel switches pyplot to the inline backend, which turns
    # interactive mode on; the style context would turn it off again on exit, and no later cell
    # would show its figure. So interactive mode survives the context.
    keep = {}
    try:
        with plt.style.context(STYLE_FILE):
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
    return OTHER_COLORS[index % len(OTHER_COLORS)]


def colors_for(labels) -> list[str]:
    """One colour per label, as `color_for` gives, but never the same colour twice in a plot
    ("graph" and "graph (padded)" would both be the graph colour: the second gets its own)."""
    out, used = [], set()
    for index, label in enumerate(labels):
        colour = color_for(label, index)
        if colour in used:
            free = [c for c in OTHER_COLORS if c not in used]
            colour = free[0] if free else OTHER_COLORS[index % len(OTHER_COLORS)]
        used.add(colour)
        out.append(colour)
    return out

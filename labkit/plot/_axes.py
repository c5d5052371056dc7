"""What every figure shares: a new Axes when none is given, the provenance line in the title,
legend places, tidy log ticks, and the notes that say what a band or a whisker is.

The provenance line is an argument of every plot. When a call gives none, `default_provenance`
and `default_shape_where` supply it, and `stream_row` names a stream's timeline row: `labkit.plot`
(the facade) sets them to ask the active backend, so the modules that draw never import it.
"""
from __future__ import annotations

import math
import textwrap
from pathlib import Path
from typing import Callable, Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.patches import Patch
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

from labkit.measure.stats import Stats

# Set by labkit.plot to ask labkit which backend and device produced the numbers.
default_provenance: Callable[[], str] = lambda: "provenance not given"  # noqa: E731
default_shape_where: Callable[[], str] = lambda: "an unnamed device"     # noqa: E731
# Set by labkit.plot: the row a trace gives a stream handle ("stream N", N the trace's number).
stream_row: Callable[[int], str] = lambda handle: f"stream {handle}"      # noqa: E731

BAND_NOTE = "line: median · shaded: p5–p95 of the samples"
WHISKER_NOTE = "bar: median · whisker: up to p95 of the samples"
# A band or whisker narrower than this share of its value is not visible: it gets no legend.
VISIBLE_SPREAD = 0.01


def provenance_line(provenance: str | None) -> str:
    return default_provenance() if provenance is None else provenance


def model_provenance(what: str, provenance: str | None = None) -> str:
    """The title line of a figure computed by a model from measured (or simulated) inputs.

    ``model_provenance("FIFO replay of the service times")`` ->
    ``"model: FIFO replay of the service times; inputs measured on NVIDIA H200"``.
    """
    return f"model: {what}; inputs {provenance_line(provenance)}"


_MADE = ("captured", "built")


def shape_provenance(made: str = "captured", where: str | None = None) -> str:
    """The title line of a graph's drawing: a shape, not a measurement, and how it was made.

    Parameters
    ----------
    made : {"captured", "built"}
        "captured" for a graph recorded by a stream capture, "built" for one made node by
        node (`labkit.explicit`, `labkit.conditional_graph`).
    where : str, optional
        The device or "the simulator"; the active backend's by default.
    """
    if made not in _MADE:
        raise ValueError(f"made={made!r}: say 'captured' (a stream capture) or 'built' "
                         "(added node by node)")
    return f"graph shape, {made} on {default_shape_where() if where is None else where} " \
           "(not a measurement)"


def legend(ax, where: str, **kwargs):
    """``where``: "best" (inside, where it covers the fewest points), "outside" (right of
    the axes) or "below" (under the axes, for long labels)."""
    if where == "outside":
        return ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), **kwargs)
    if where == "below":
        return ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.18), ncols=1, **kwargs)
    if where == "best":
        return ax.legend(loc="best", **kwargs)
    raise ValueError(f"legend={where!r}: choose 'best', 'outside' or 'below'")


def band_handle() -> Patch:
    return Patch(facecolor="grey", alpha=0.25, label=BAND_NOTE)


def new_axes(ax, figsize: tuple[float, float]):
    if ax is not None:
        return ax
    _, ax = plt.subplots(figsize=figsize)
    return ax


def finish(ax, title: str, provenance: str | None, grid_axis: str | None = "both"):
    prov = provenance_line(provenance)
    ax.set_title(f"{title}\n{prov}" if title and prov else (title or prov))
    # Set explicitly: an ``ax`` made outside style() did not get the grid from rcParams.
    ax.grid(False)
    if grid_axis:
        ax.grid(True, axis=grid_axis, alpha=0.3)
    return ax


def wrap(text: str, width: int = 120) -> str:
    return "\n".join(textwrap.wrap(text, width)) if len(text) > width else text


def as_stats(label: str, value) -> Stats:
    return value if isinstance(value, Stats) else Stats(value, label)


def centre_and_band(values: Sequence) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
    """Medians and a p5..p95 band for Stats; the values themselves (no band) for numbers."""
    if values and all(isinstance(v, Stats) for v in values):
        return (np.array([v.median for v in values]),
                np.array([v.percentile(5) for v in values]),
                np.array([v.percentile(95) for v in values]))
    if any(isinstance(v, Stats) for v in values):
        raise TypeError("a series mixes Stats and plain numbers; give all Stats or all numbers")
    return np.asarray(values, dtype=float), None, None


def visible_spread(centre, lo, hi) -> bool:
    """Whether a band (or whisker) from ``lo`` to ``hi`` around ``centre`` is wide enough to see."""
    centre, lo, hi = (np.abs(np.asarray(a, dtype=float)) for a in (centre, lo, hi))
    return bool(np.any(np.abs(hi - lo) > VISIBLE_SPREAD * np.maximum(centre, 1e-300)))


# --------------------------------------------------------------------------- log axes

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


def tidy_log_axis(axis) -> None:
    """Log ticks that do not overlap: 1-2-5 steps over a few decades, decades only over more,
    plain numbers, minor ticks unlabelled.

    On a short axis (a few decades), an end that sits far from every labelled tick is moved
    out to the next 1-2-5 value, so the data nearest that end has a number beside it (a curve
    at 122 µs on an axis labelled from 200 up had none). The axis keeps autoscaling: data
    added later widens it again."""
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

"""Curves: a cost against a size (kernels per iteration, graph nodes) and the amortization of a
graph's setup over iterations."""
from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np
from matplotlib.ticker import EngFormatter

from labkit.plot import _axes
from labkit.plot.theme import color_for, colors_for, style
from labkit.measure.stats import breakeven, fmt_value

__all__ = ["per_kernel_cost", "phase_costs", "amortization"]


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
        a shaded p5..p95 band, named in the legend where it is wide enough to see).
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
        ax = _axes.new_axes(ax, (7, 4.5))
        banded = _draw_series(ax, ks, series, "K's", "give one value per entry of ks")
        if logx:
            ax.set_xscale("log")
            _axes.tidy_log_axis(ax.xaxis)
        if logy:
            ax.set_yscale("log")
            _axes.tidy_log_axis(ax.yaxis)
        else:
            ax.set_ylim(bottom=0)
        ax.set_xlabel("kernels per iteration, K")
        ax.set_ylabel("time per kernel (µs" + (", log)" if logy else ")"))
        handles, _ = ax.get_legend_handles_labels()
        _axes.legend(ax, legend, handles=handles + ([_axes.band_handle()] if banded else []))
        return _axes.finish(ax, title, provenance)


def _draw_series(ax, xs, series: Mapping[str, Sequence], what: str, fix: str) -> bool:
    """One line per series (median and p5..p95 band for Stats); whether a band is visible."""
    palette = colors_for(series)
    banded = False
    for index, (label, values) in enumerate(series.items()):
        values = list(values)
        if len(values) != len(xs):
            raise ValueError(f"series {label!r} has {len(values)} values for {len(xs)} {what}; "
                             f"{fix}")
        centre, lo, hi = _axes.centre_and_band(values)
        colour = palette[index]
        ax.plot(xs, centre, marker="o", color=colour, label=label)
        if lo is not None and _axes.visible_spread(centre, lo, hi):
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
        ax = _axes.new_axes(ax, (7, 4.5))
        banded = _draw_series(ax, sizes, phases, "sizes", "give one value per size")
        ax.set_xscale("log")
        ax.set_yscale("log")
        _axes.tidy_log_axis(ax.xaxis)
        _axes.tidy_log_axis(ax.yaxis)
        ax.set_xlabel("graph size (nodes)")
        ax.set_ylabel("time (µs, log)")
        handles, _ = ax.get_legend_handles_labels()
        _axes.legend(ax, legend, handles=handles + ([_axes.band_handle()] if banded else []))
        return _axes.finish(ax, title, provenance)


def amortization(setup_us: float, eager_iter_us: float, graph_iter_us: float,
                 iterations: int | Sequence[int], ax=None,
                 title: str = "When does the graph pay off?", provenance: str | None = None,
                 xlabel: str = "iterations", legend: str = "best"):
    """Cumulative time against iterations, eager vs graph, with the break-even marked.

    Eager costs ``eager_iter_us * n``; the graph costs ``setup_us + graph_iter_us * n``. The
    lines are this model, not measurements: the title says so, and where its inputs came from.
    The time axis is in seconds with SI prefixes (µs, ms, s), whichever reads best.

    Parameters
    ----------
    setup_us, eager_iter_us, graph_iter_us : float
        As for `labkit.measure.stats.breakeven`, in µs.
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
    eager_s = eager_iter_us * n * 1e-6
    graph_s = (setup_us + graph_iter_us * n) * 1e-6
    with style():
        ax = _axes.new_axes(ax, (7, 4.5))
        ax.plot(n, eager_s, color=color_for("eager"),
                label=f"eager: {fmt_value(eager_iter_us)} µs/iter")
        ax.plot(n, graph_s, color=color_for("graph"),
                label=f"graph: {fmt_value(setup_us)} µs setup + {fmt_value(graph_iter_us)} µs/iter")
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
        ax.yaxis.set_major_formatter(EngFormatter(unit="s"))
        ax.set_xlabel(xlabel)
        ax.set_ylabel("cumulative time")
        ax.set_xlim(left=0)
        ax.set_ylim(bottom=0)
        _axes.legend(ax, legend)
        return _axes.finish(ax, title, _axes.model_provenance(
            "cumulative time = setup + n × per-iteration cost", provenance))

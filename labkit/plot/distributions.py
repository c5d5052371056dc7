"""Distributions of latencies: empirical CDFs and histograms, with p50, p95 and p99 marked."""
from __future__ import annotations

from typing import Mapping

import numpy as np
from matplotlib.lines import Line2D

from labkit.plot import _axes
from labkit.plot.theme import colors_for, style
from labkit.measure.stats import Stats, fmt_value

__all__ = ["latency_cdf", "latency_hist"]

# (percentile, marker on a CDF, line style on a histogram)
_PCT_MARKS = ((50, "o", "-"), (95, "s", "--"), (99, "^", ":"))


def _pct_label(label: str, st: Stats) -> str:
    return f"{label}: p50 {fmt_value(st.p50)} · p95 {fmt_value(st.p95)} · p99 {fmt_value(st.p99)} {st.unit}"


def _title_line(provenance, model):
    return _axes.model_provenance(model, provenance) if model else provenance


def latency_cdf(stats_by_label: Mapping[str, object], ax=None,
                title: str = "Latency distribution", logx: bool = False,
                provenance: str | None = None, model: str | None = None,
                legend: str = "below"):
    """Empirical CDF of each series (`Axes.ecdf`), with its p50, p95 and p99 marked.

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
        ax = _axes.new_axes(ax, (7, 4.5))
        unit = "µs"
        palette = colors_for(stats_by_label)
        for index, (label, value) in enumerate(stats_by_label.items()):
            st = _axes.as_stats(label, value)
            unit = st.unit
            colour = palette[index]
            ax.ecdf(st.samples, color=colour, label=_pct_label(label, st))
            for q, marker, _ in _PCT_MARKS:
                ax.plot([st.percentile(q)], [q / 100], marker=marker, color=colour,
                        markersize=6, linestyle="none")
        for q, _, _ in _PCT_MARKS:
            ax.axhline(q / 100, color="grey", linewidth=0.6, linestyle=":")
        marks = [Line2D([], [], color="grey", marker=m, linestyle="none", label=f"p{q}")
                 for q, m, _ in _PCT_MARKS]
        if logx:
            ax.set_xscale("log")
            _axes.tidy_log_axis(ax.xaxis)
        ax.set_ylim(0, 1.02)
        ax.set_xlabel(f"latency ({unit}{', log' if logx else ''})")
        ax.set_ylabel("fraction of samples ≤ latency")
        handles, _ = ax.get_legend_handles_labels()
        _axes.legend(ax, legend, handles=handles + marks)
        return _axes.finish(ax, title, _title_line(provenance, model))


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
    all_stats = {label: _axes.as_stats(label, v) for label, v in stats_by_label.items()}
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
        ax = _axes.new_axes(ax, (7, 4.5))
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
            _axes.tidy_log_axis(ax.xaxis)
        ax.set_xlabel(f"latency ({unit}{', log' if logx else ''})")
        ax.set_ylabel("samples per bin")
        handles, _ = ax.get_legend_handles_labels()
        _axes.legend(ax, legend, handles=handles + marks)
        return _axes.finish(ax, title, _title_line(provenance, model))

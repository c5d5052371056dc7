"""The course's plots (``labkit.plot``): one style, units on every axis, the provenance in every
title.

Each function draws on ``ax`` (a new figure when None) and returns the Axes, and takes
``provenance``: the line that says where the numbers come from ("measured on NVIDIA H200",
"simulated, calibrated on NVIDIA H200"). A plot without it could pass simulated numbers off as
measured ones. When a call gives none, this facade's default asks ``labkit.provenance()``; the
modules that draw never import the backend.

Modules, one job each: `theme` (the packaged ``course.mplstyle`` and fixed colours),
`timeline_plots`, `curves` (costs against a size, amortization), `distributions`, `dag`,
`bar_plots`. No module shares a name with a function here.
The capture-mode matrix is the course's (`labkit.course.capture_modes.plot_matrix`), and
`breakeven` is a cost model (`labkit.measure.stats`; re-exported here).
"""
from __future__ import annotations

import labkit
from labkit.plot import _axes
from labkit.plot._axes import model_provenance, savefig, shape_provenance
from labkit.plot.bar_plots import bars
from labkit.plot.curves import amortization, per_kernel_cost, phase_costs
from labkit.plot.dag import graph_dag
from labkit.plot.distributions import latency_cdf, latency_hist
from labkit.plot.theme import (KIND_COLORS, NODE_COLORS, SERIES_COLORS, color_for,
                                       colors_for, style)
from labkit.plot.timeline_plots import TIMELINE_MIN_WIDTH, timeline, timelines, trace_file
from labkit.measure.stats import breakeven

__all__ = [
    "style", "color_for", "colors_for", "breakeven", "timeline", "timelines", "per_kernel_cost",
    "phase_costs", "amortization", "latency_cdf", "latency_hist", "graph_dag", "bars", "savefig",
    "model_provenance", "shape_provenance", "SERIES_COLORS", "KIND_COLORS", "NODE_COLORS",
    "TIMELINE_MIN_WIDTH", "trace_file",
]


def _active_provenance() -> str:
    return str(labkit.provenance())   # looked up at each call: a test may replace it


def _active_shape_where() -> str:
    return labkit.device_name() if labkit.backends.is_gpu else "the simulator"


def _active_stream_row(handle: int) -> str:
    return f"stream {labkit.backends.stream_trace_id(handle)}"


_axes.default_provenance = _active_provenance
_axes.default_shape_where = _active_shape_where
_axes.stream_row = _active_stream_row

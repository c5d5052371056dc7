"""The simulator's virtual, deterministic clock.

Host time advances by the calibrated cost of each call; GPU work is placed on per-stream
timelines. While a trace is open, every host call and every piece of GPU work is recorded as a
`Span` (row, name, start_us, end_us, kind), which is how the simulator draws timelines.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .._calibration import jitter as _jitter, load, params as _params


class Span(NamedTuple):
    """One recorded interval of the model's clock (µs); labkit's timelines are made from these."""
    row: str
    name: str
    start_us: float
    end_us: float
    kind: str


_state = {"host": 0.0, "cpu": 0.0}
_trace: list | None = None
_P = None
_noise = False   # False: not looked up yet; None: no what-if noise


def _noisy(cost_us: float) -> float:
    """A host cost as the noisy-host what-if profile perturbs it (unchanged otherwise)."""
    global _noise
    if _noise is False:
        _noise = _jitter()
    return cost_us if _noise is None else _noise(cost_us)


def P(name: str) -> float:
    """A cost-model figure, in µs (or GB/s, ns for the names that say so)."""
    global _P
    if _P is None:
        _P = _params()
    return _P[name]


def C(name: str, nodes: int) -> float:
    """A size-dependent cost (µs) for a graph of ``nodes`` nodes: the calibration's measured
    points, interpolated piecewise linearly (extrapolated from the last two beyond them)."""
    entry = load()["params"].get(f"{name}_base_us", {})
    if isinstance(entry, dict) and "sizes" in entry:
        xs, ys = np.asarray(entry["sizes"], float), np.asarray(entry["measured"], float)
        if nodes > xs[-1]:
            slope = (ys[-1] - ys[-2]) / (xs[-1] - xs[-2])
            return float(ys[-1] + slope * (nodes - xs[-1]))
        return float(np.interp(nodes, xs, ys))
    return P(f"{name}_base_us") + P(f"{name}_per_node_us") * nodes


def host_us() -> float:
    return _state["host"]


def cpu_us() -> float:
    return _state["cpu"]


def api(name: str, cost_us: float, wait_until: float | None = None, spin: bool = True) -> None:
    """Advance the host clock for one call; a synchronizing call also waits for the GPU
    (spinning, so the wait is CPU time, unless ``spin`` is False: a blocking-sync wait)."""
    start = _state["host"]
    end = start + _noisy(cost_us)
    if wait_until is not None and wait_until > end:
        end = wait_until
    _state["host"] = end
    # waits spin, as CUDA's default scheduling does; a blocking wait costs only the call
    _state["cpu"] += (end - start) if spin else min(cost_us, end - start)
    if _trace is not None:
        kind = "sync" if wait_until is not None else (
            "launch" if name.startswith("launch") else "graph" if name == "cudaGraphLaunch" else "api")
        _trace.append(Span("CPU", name, start, end, kind))


def host_work(cost_us: float) -> None:
    """Plain Python work on the host that the model charges (e.g. numba's dispatch)."""
    cost_us = _noisy(cost_us)
    _state["host"] += cost_us
    _state["cpu"] += cost_us


def gpu_span(stream: int, name: str, start: float, end: float, kind: str, lane: int = 0) -> None:
    """Record device work; ``lane`` > 0: a graph branch that ran beside the launch stream's."""
    if _trace is not None:
        row = f"stream {stream}" if lane == 0 else f"stream {stream} branch {lane}"
        _trace.append(Span(row, name, start, end, kind))


class Lanes:
    """Which row each node of one graph launch is drawn on.

    CUDA runs a graph's independent branches on inner streams, and a GPU trace shows each on a
    row of its own. A node continues the lane of a dependency whose lane it directly follows;
    otherwise it takes the first lane free at its start, or a new one. A chain stays on lane 0.
    """

    def __init__(self):
        self.last: list[int] = []     # per lane: the node placed last
        self.free_at: list[float] = []
        self.lane_of: dict[int, int] = {}

    def place(self, node: int, deps, start: float, end: float) -> int:
        lane = next((self.lane_of[d] for d in deps if self.last[self.lane_of[d]] == d
                     and self.free_at[self.lane_of[d]] <= start), None)
        if lane is None:
            lane = next((i for i, t in enumerate(self.free_at) if t <= start), len(self.last))
        if lane == len(self.last):
            self.last.append(node)
            self.free_at.append(end)
        else:
            self.last[lane], self.free_at[lane] = node, end
        self.lane_of[node] = lane
        return lane


def start_trace() -> list:
    global _trace
    _trace = []
    return _trace


def stop_trace() -> list:
    global _trace
    out, _trace = _trace or [], None
    return out

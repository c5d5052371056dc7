"""The CPU row of a timeline, recorded by labkit itself around its own calls.

While ``labkit.timing.timeline()`` is open, ``active`` is a `Recorder`; labkit's launch paths
(an eager kernel launch with numba's whole dispatch, a prepared launch, ``GraphExec.launch``,
synchronizations, copies) time themselves with it. Both backends record the same spans this
way, with their own host clock (``time.perf_counter_ns`` on a GPU, the simulator's clock on the
simulator), so both draw the same CPU row. On a GPU this replaces CUPTI's runtime/driver API
records, which draw only ``cuLaunchKernel`` (not numba's dispatch) and make every traced call
dearer.

When no timeline is open, a hooked call pays one module-attribute read and a ``None`` test
(tens of ns). A leaf module: it imports only `labkit._span`, so every layer may use it.

The hook, in a hot path::

    rec = _host_calls.active
    t0 = rec.now() if rec is not None else 0
    ...the call...
    if rec is not None:
        rec.add("launch add_one", "launch", t0)

A graph launch calls ``rec.add_graph(t0, graph_exec)``, so the span knows what it launched.
Spans are kept in the clock's own units while recording (no conversion in the hot path) and
handed out in µs by `stop`.
"""
from __future__ import annotations

import time
from typing import Callable

from ._span import CPU_ROW, Span

active: "Recorder | None" = None


class Recorder:
    """Collects `Span`s of the CPU row; ``now`` is the clock, ``us_per_tick`` its unit in µs
    (1e-3 for ``time.perf_counter_ns`` on a GPU, 1 for the simulator's µs clock)."""

    __slots__ = ("spans", "now", "us_per_tick")

    def __init__(self, now: Callable[[], float], us_per_tick: float):
        self.spans: list[Span] = []
        self.now = now
        self.us_per_tick = us_per_tick

    def add(self, name: str, kind: str, start: float) -> None:
        """Close the span of a call that began at ``start`` (the clock's value then)."""
        self.spans.append(Span(CPU_ROW, name, start, self.now(), kind))

    def add_graph(self, start: float, graph_exec) -> None:
        """Close the span of a graph launch of ``graph_exec`` that began at ``start``."""
        self.spans.append(Span(CPU_ROW, "cudaGraphLaunch", start, self.now(), "graph",
                               target=graph_exec))

    def in_us(self) -> list[Span]:
        """The spans so far, in µs of the clock."""
        k = self.us_per_tick
        if k == 1:
            return list(self.spans)
        return [s._replace(start_us=s.start_us * k, end_us=s.end_us * k) for s in self.spans]


def start(now: Callable[[], float] = time.perf_counter_ns, us_per_tick: float = 1e-3) -> Recorder:
    """Open a recording (one at a time, as timelines are) on clock ``now`` whose tick is
    ``us_per_tick`` µs; returns its `Recorder`."""
    global active
    if active is not None:
        raise RuntimeError("a timeline is already recording labkit's host spans; timelines "
                           "cannot nest: let the first with-block end first")
    active = Recorder(now, us_per_tick)
    return active


def stop() -> list[Span]:
    """Close the recording; its spans in µs of its clock, in the order the calls ended."""
    global active
    rec, active = active, None
    return rec.in_us() if rec is not None else []

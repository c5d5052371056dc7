"""The CPU row of a timeline, recorded by labkit itself around its own calls.

While ``labkit.timing.timeline()`` is open, ``active`` is a `Recorder`; labkit's launch paths
(an eager kernel launch with numba's whole dispatch, a prepared launch, ``GraphExec.launch``,
synchronizations, copies) time themselves with it. Both backends record the same spans this
way, with their own host clock (``time.perf_counter_ns`` on a GPU, the simulator's clock on the
simulator), so both draw the same CPU row. On a GPU this replaces CUPTI's runtime/driver API
records, which draw only ``cuLaunchKernel`` (not numba's dispatch) and make every traced call
dearer.

When no timeline is open, a hooked call pays one module-attribute read and a ``None`` test
(tens of ns). A leaf module: it imports nothing from labkit, so every layer may use it.

The hook, in a hot path::

    rec = _hostspans.active
    t0 = rec.now() if rec is not None else 0
    ...the call...
    if rec is not None:
        rec.add("launch add_one", "launch", t0)

A graph launch uses ``t0 = rec.graph_begin()`` / ``rec.graph_end(t0, self)`` instead, so a tracer
may prepare for it outside the timed span (``before_graph`` / ``after_graph``).
"""
from __future__ import annotations

import time
from typing import Callable, NamedTuple

active: "Recorder | None" = None


class HostSpan(NamedTuple):
    """One labkit-level call: ``start`` and ``end`` in the recorder's clock units."""

    name: str
    kind: str          # "launch", "graph", "sync" or "api", as labkit.measure._spans's kinds
    start: float
    end: float
    target: object     # a graph launch: the labkit GraphExec launched (None otherwise)


class Recorder:
    """Collects `HostSpan`s; ``now`` is the clock (ns on a GPU, µs on the simulator).

    ``before_graph`` / ``after_graph``: optional callables run around each graph launch,
    outside its span (a tracer that must change its settings for graph launches).
    """

    __slots__ = ("spans", "now", "before_graph", "after_graph")

    def __init__(self, now: Callable[[], float]):
        self.spans: list[HostSpan] = []
        self.now = now
        self.before_graph: Callable[[], None] | None = None
        self.after_graph: Callable[[], None] | None = None

    def add(self, name: str, kind: str, start: float) -> None:
        """Close the span of a call that began at ``start`` (the clock's value then)."""
        self.spans.append(HostSpan(name, kind, start, self.now(), None))

    def graph_begin(self) -> float:
        if self.before_graph is not None:
            self.before_graph()
        return self.now()

    def graph_end(self, start: float, target=None) -> None:
        end = self.now()
        if self.after_graph is not None:
            self.after_graph()
        self.spans.append(HostSpan("cudaGraphLaunch", "graph", start, end, target))


def start(now: Callable[[], float] | None = None) -> Recorder:
    """Open a recording (one at a time, as timelines are); returns its `Recorder`."""
    global active
    if active is not None:
        raise RuntimeError("a timeline is already recording labkit's host spans; timelines "
                           "cannot nest: let the first with-block end first")
    active = Recorder(now or time.perf_counter_ns)
    return active


def stop() -> list[HostSpan]:
    """Close the recording; its spans, in the order the calls ended."""
    global active
    rec, active = active, None
    return rec.spans if rec is not None else []

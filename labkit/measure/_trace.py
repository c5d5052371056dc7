"""Recording a timeline on either backend: labkit's own CPU row, the device's rows.

Both backends draw the same CPU row: the spans labkit records around its own calls
(`labkit._hostspans`: an eager launch with numba's whole dispatch, a prepared launch, a graph
launch, synchronizations, copies), each timed with the backend's host clock. The device rows
come from the simulator's model, or on a GPU from CUPTI's activity records (GPU kinds only:
CUPTI's API records would draw ``cuLaunchKernel`` instead of numba's dispatch, and make each
traced call dearer).

What a GPU trace adds, and how it is kept out of the picture (measured on the H200, see
tests/measure/trace_honesty_probe.py and its log):

- attaching CUPTI (6-10 ms) happens before the picture starts, and detaching after it ends;
- the first launch after kernel records are enabled costs 3.7 ms (CUPTI sets itself up then),
  the next one still 110-260 µs, whichever kernel or graph it is: a few warm-up launches of
  labkit's own tiny kernel and graphs absorb both, before the picture starts;
- with kernel records on, an eager launch costs somewhat more (16 → 21-23 µs), a prepared one
  barely (4.4 → 4.5-5.3 µs), and a graph launch a fixed part plus about 0.6 µs per kernel
  node (a 200-node graph: 2 → 115-130 µs), since CUPTI instruments each node. Turning kernel
  records off around a graph launch does not help: CUPTI attached, it still costs ~43 µs.
  These are measured at the start of each trace, on labkit's probe kernel and graphs,
  untraced then traced; the timeline's note says what tracing adds, and each graph launch's
  estimated share is drawn hatched.
"""
from __future__ import annotations

import statistics
import time
from typing import NamedTuple

import numpy as np
from numba import cuda as numba_cuda

from .. import _hostspans
from .._capture import capture
from .._kernel import Kernel, to_device
from .._streams import Stream
from ..backend import host_us
from ._spans import CPU_ROW, Span, Timeline

# How a GPU trace records graph launches:
# "kernels":     kernel records stay on, so the graph's kernels are drawn one by one; CUPTI then
#                instruments every kernel node, and that added host cost is drawn hatched,
#                estimated per node on labkit's probe graph, measured in the same process.
# "graph_trace": kernel records go off around each launch and CUPTI's graph-level record on
#                (outside the launch's span): the launch costs what it costs untraced, and its
#                GPU execution is one "graph" bar.
# "untraced":    kernel records go off around each launch: honest host cost, no GPU bar.
GRAPH_LAUNCHES = "kernels"


# --------------------------------------------------------------------------- simulator

def host_spans_to_spans(host: list[_hostspans.HostSpan], scale: float, origin: float) -> list[Span]:
    """labkit's host spans as CPU-row spans in µs: ``(clock - origin) * scale``."""
    return [Span(CPU_ROW, h.name, (h.start - origin) * scale, (h.end - origin) * scale, h.kind)
            for h in host]


def _covered(span: Span, cover: list[Span], eps: float = 1e-9) -> bool:
    return any(c.start_us - eps <= span.start_us and span.end_us <= c.end_us + eps for c in cover)


def merge_cpu_rows(labkit_spans: list[Span], runtime_spans: list[Span]) -> list[Span]:
    """labkit's CPU spans, plus the runtime calls made outside any of them (a learner's raw
    ``labkit.rt`` calls); a runtime call inside a labkit span is that span's own work."""
    outside = [s for s in runtime_spans if not _covered(s, labkit_spans)]
    return labkit_spans + outside


def sim_timeline(host: list[_hostspans.HostSpan], model_spans: list, note: str) -> Timeline:
    """The simulator's timeline: labkit's CPU spans, the model's other host calls, its GPU work."""
    labkit_cpu = host_spans_to_spans(host, 1.0, 0.0)
    model_cpu = [Span(s.row, s.name, s.start_us, s.end_us, s.kind)
                 for s in model_spans if s.row == CPU_ROW]
    device = [Span(s.row, s.name, s.start_us, s.end_us, s.kind)
              for s in model_spans if s.row != CPU_ROW]
    spans = merge_cpu_rows(labkit_cpu, model_cpu) + device
    t0 = min((s.start_us for s in spans), default=0.0)
    return Timeline([Span(s.row, s.name, s.start_us - t0, s.end_us - t0, s.kind)
                     for s in spans], source="model", note=note)


# --------------------------------------------------------------------------- GPU

def clock_offset_ns(cupti_now) -> int:
    """CUPTI's clock minus ``time.perf_counter_ns``, from the tightest of a few brackets."""
    best, best_width = 0, None
    for _ in range(7):
        a = time.perf_counter_ns()
        c = int(cupti_now())
        z = time.perf_counter_ns()
        if best_width is None or z - a < best_width:
            best, best_width = c - (a + z) // 2, z - a
    return best


def gpu_timeline(host: list[_hostspans.HostSpan], records: list[Span], *,
                 begin_ns: int, offset_ns: int, t0_cupti_ns: int, note: str,
                 warmup_names: tuple[str, ...] = (), graph_added: "GraphAdded | None" = None,
                 ) -> Timeline:
    """Put labkit's host spans (perf_counter ns) and CUPTI's spans (µs from ``t0_cupti_ns``)
    on one axis whose 0 is ``begin_ns``, the moment the block began.

    Device spans that ended before the block began (the warm-up) are dropped; CUPTI's API
    records (present only when asked for) stay where no labkit span covers them. With
    ``graph_added``, each graph launch's span carries the part the tracer added (``added_us``:
    that cost for the executable's kernel nodes, at most the whole span).
    """
    origin_us = (begin_ns + offset_ns - t0_cupti_ns) / 1e3   # the block's start, in CUPTI µs
    cpu = host_spans_to_spans(host, 1e-3, begin_ns)
    if graph_added is not None:
        cpu = [_with_added(s, h, graph_added) for s, h in zip(cpu, host)]
    shifted = [Span(s.row, s.name, s.start_us - origin_us, s.end_us - origin_us, s.kind,
                    s.correlation_id, s.graph_id)
               for s in records if s.end_us >= origin_us and s.name not in warmup_names]
    api = [s for s in shifted if s.row == CPU_ROW]
    device = [s for s in shifted if s.row != CPU_ROW]
    return Timeline(merge_cpu_rows(cpu, api) + device, source="cupti", note=note)


def kernel_node_count(graph_exec) -> int | None:
    """How many kernel nodes a labkit GraphExec runs (None when its graph cannot say)."""
    try:
        return sum(1 for k in graph_exec.graph.node_kinds() if k == "kernel")
    except Exception:   # a closed graph: the span is still drawn, without the tracer's share
        return None


class GraphAdded(NamedTuple):
    """What a trace adds to one graph launch's host cost: ``fixed_us + per_node_us * nodes``."""

    fixed_us: float
    per_node_us: float

    def of(self, nodes: int) -> float:
        return max(self.fixed_us + self.per_node_us * nodes, 0.0)


def _with_added(span: Span, host: _hostspans.HostSpan, added: GraphAdded) -> Span:
    if host.kind != "graph" or host.target is None:
        return span
    nodes = kernel_node_count(host.target)
    if not nodes:
        return span
    share = min(span.duration_us, added.of(nodes))
    return Span(span.row, span.name, span.start_us, span.end_us, span.kind, added_us=share)


class ProbeCosts(NamedTuple):
    """Median host µs of one call of each of the probe's kinds."""

    eager: float
    graph: float          # the NODES-node graph
    graph1: float         # the one-node graph


class TraceProbe:
    """labkit's own tiny kernel, a one-node and a ``NODES``-node graph of it, on a private
    stream and buffer: launched at a trace's start to absorb CUPTI's set-up cost (the first few
    launches after kernel records are enabled cost milliseconds, then ~100 µs, on the H200),
    and timed untraced and traced to measure what the trace adds in this process, now.

    The launches go through labkit, as the course's do (an eager launch is numba's whole
    dispatch). Its records end before the block begins and carry ``NAME``, so they never reach
    the picture.
    """

    NAME = "_labkit_trace_probe"
    NODES = 20
    REPEAT = 3
    WARM = 4              # launches of each kind at a trace's start, each waited for

    def __init__(self):
        def body(x):
            i = numba_cuda.grid(1)
            if i < x.size:
                x[i] += 1.0
        body.__name__ = body.__qualname__ = self.NAME   # numba's symbol, CUPTI's record name
        self._kernel = Kernel(body)
        self._stream = Stream()
        self._x = to_device(np.zeros(32, np.float32))
        self._launch = self._kernel[1, 32, self._stream]
        self._launch(self._x)                           # compile and load, once
        self._stream.synchronize()
        self._graphs = []
        for n in (self.NODES, 1):
            with capture(self._stream) as cap:
                for _ in range(n):
                    self._launch(self._x)
            ex = cap.graph.instantiate(upload_stream=self._stream)
            ex.launch(self._stream)
            self._graphs.append((cap.graph, ex))
        self._stream.synchronize()

    def eager(self) -> None:
        self._launch(self._x)

    def graph(self) -> None:
        self._graphs[0][1].launch(self._stream)

    def graph1(self) -> None:
        self._graphs[1][1].launch(self._stream)

    def warm(self) -> None:
        """A few launches of each kind, each waited for: CUPTI's set-up cost lands here."""
        for _ in range(self.WARM):
            for fn in (self.eager, self.graph, self.graph1):
                fn()
                self._stream.synchronize()

    def host_costs_us(self) -> ProbeCosts:
        """Median host µs of one call of each kind (each then waited for, untimed)."""
        out = []
        for fn in (self.eager, self.graph, self.graph1):
            samples = []
            for _ in range(self.REPEAT):
                t0 = host_us()          # the host's clock: the simulator's modelled one there
                fn()
                samples.append(host_us() - t0)
                self._stream.synchronize()
            out.append(statistics.median(samples))
        return ProbeCosts(*out)


_probe: TraceProbe | None = None


def trace_probe() -> TraceProbe:
    """The process's `TraceProbe`, built on first use (a JIT compile and two captures)."""
    global _probe
    if _probe is None:
        _probe = TraceProbe()
    return _probe


def graph_added(untraced: ProbeCosts, traced: ProbeCosts, nodes: int) -> GraphAdded:
    """The trace's share of a graph launch, fitted through the one-node and ``nodes``-node
    graphs: a fixed part (CUPTI attached) and a part per kernel node (CUPTI instruments each)."""
    d1 = max(traced.graph1 - untraced.graph1, 0.0)
    dn = max(traced.graph - untraced.graph, 0.0)
    per_node = max((dn - d1) / (nodes - 1), 0.0) if nodes > 1 else 0.0
    return GraphAdded(max(d1 - per_node, 0.0), per_node)


def added_note(untraced: ProbeCosts, traced: ProbeCosts, nodes: int,
               graph_launches: str = "kernels") -> tuple[str, GraphAdded]:
    """The note that says what tracing adds, and the graph launches' added cost."""
    eager_add = traced.eager - untraced.eager
    added = graph_added(untraced, traced, nodes)
    note = (f"tracing adds ≈{max(eager_add, 0):.0f} µs to an eager launch "
            f"({untraced.eager:.0f} → {traced.eager:.0f} µs)")
    share = f"≈{added.fixed_us:.0f} µs + {added.per_node_us:.2f} µs per kernel node"
    if graph_launches == "kernels":
        note += f" and {share} to a graph launch (hatched)"
    elif graph_launches == "graph_trace":
        note += (f"; graph launches untraced per kernel (CUPTI would add {share}): "
                 "each GPU execution is one 'graph' bar")
    else:
        note += "; graph launches untraced (their kernels are not drawn)"
    return note + ", measured now on labkit's probe kernel", added

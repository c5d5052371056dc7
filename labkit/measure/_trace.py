"""Recording a timeline on either backend: labkit's own CPU row, the device's rows.

Both backends draw the same CPU row: the spans labkit records around its own calls
(`labkit._host_calls`: an eager launch with numba's whole dispatch, a prepared launch, a graph
launch, synchronizations, copies), each timed with the backend's host clock. The device rows
come from the simulator's model, or on a GPU from CUPTI's activity records. Only CUPTI's GPU
kinds are asked for: its API records would draw ``cuLaunchKernel`` instead of numba's dispatch,
and make each traced call dearer.

A trace is not free, and a timeline must not pass the tracer's cost off as the program's. What
CUPTI adds, and how each part is kept out of the picture or shown for what it is:

- attaching CUPTI, and its set-up on the first launches after kernel records are enabled, cost
  milliseconds: a `TraceProbe` (labkit's own tiny kernel and graphs, on a private stream)
  absorbs both before the picture starts, and its records are dropped by name;
- with kernel records on, CUPTI instruments every launch, and a graph launch per kernel node:
  the probe's launches are timed untraced and traced in the same process, just before the
  block, and `GraphAdded` turns the difference into each launch's share, drawn hatched (an
  eager launch's only where it stands above the host's noise, as the note says);
- each trace charges first launches anew (a graph executable's first traced launch, the first
  launch of each kernel): the probe times fresh executables and kernels of its own, so a first
  launch in the block carries that share too;
- the share is never drawn larger than the span, nor so large that the solid part left falls
  below the probe's untraced cost of the same kind of launch.

The timeline's note says in words what tracing added, so the figure explains its hatching.
``tests/measure/test_trace_honesty.py`` (a ``gpu`` test) holds a GPU's picture to this.
"""
from __future__ import annotations

import statistics
import time
from typing import NamedTuple

import numpy as np
from numba import cuda as numba_cuda

from .._capture import capture
from .._kernel import Kernel, to_device
from .._prepared import prepare
from .._streams import Stream
from ..backends import host_us
from .timeline import CPU_ROW, Span, Timeline


def shifted(spans: list[Span], origin_us: float) -> list[Span]:
    """``spans`` with ``origin_us`` as their 0."""
    return [s.shifted(-origin_us) for s in spans]


def _covered(span: Span, cover: list[Span], eps: float = 1e-9) -> bool:
    return any(c.start_us - eps <= span.start_us and span.end_us <= c.end_us + eps for c in cover)


def merge_cpu_rows(labkit_spans: list[Span], runtime_spans: list[Span]) -> list[Span]:
    """labkit's CPU spans, plus the runtime calls made outside any of them (a learner's raw
    ``labkit.rt`` calls); a runtime call inside a labkit span is that span's own work."""
    outside = [s for s in runtime_spans if not _covered(s, labkit_spans)]
    return labkit_spans + outside


def sim_timeline(host: list[Span], model_spans: list, note: str) -> Timeline:
    """The simulator's timeline: labkit's CPU spans, the model's other host calls, its GPU work
    (all on the model's µs clock), from the earliest of them."""
    model = [Span(*s) for s in model_spans]
    spans = merge_cpu_rows(list(host), [s for s in model if s.row == CPU_ROW]) + \
        [s for s in model if s.row != CPU_ROW]
    t0 = min((s.start_us for s in spans), default=0.0)
    return Timeline(shifted(spans, t0), source="model", note=note)


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


def gpu_timeline(host: list[Span], records: list[Span], *,
                 begin_ns: int, offset_ns: int, t0_cupti_ns: int, note: str,
                 warmup_names: tuple[str, ...] = (), graph_added: "GraphAdded | None" = None,
                 ) -> Timeline:
    """Put labkit's host spans (µs of ``time.perf_counter_ns``) and CUPTI's spans (µs from
    ``t0_cupti_ns``) on one axis whose 0 is ``begin_ns``, the moment the block began.

    Device spans that ended before the block began (the warm-up) are dropped; CUPTI's API
    records (present only when asked for) stay where no labkit span covers them. With
    ``graph_added``, each graph launch's span carries the part the tracer added (``added_us``:
    that cost for the executable's kernel nodes, more on its first launch in the block, at
    most the whole span).
    """
    origin_us = (begin_ns + offset_ns - t0_cupti_ns) / 1e3   # the block's start, in CUPTI µs
    cpu = shifted(host, begin_ns / 1e3)
    if graph_added is not None:
        cpu = _with_added(cpu, graph_added)
    kept = shifted([s for s in records if s.end_us >= origin_us and s.name not in warmup_names],
                   origin_us)
    api = [s for s in kept if s.row == CPU_ROW]
    device = [s for s in kept if s.row != CPU_ROW]
    return Timeline(merge_cpu_rows(cpu, api) + device, source="cupti", note=note)


def kernel_node_count(graph_exec) -> int | None:
    """How many kernel nodes a labkit GraphExec runs (None when its graph cannot say)."""
    try:
        return sum(1 for k in graph_exec.graph.node_kinds() if k == "kernel")
    except Exception:   # a closed graph: the span is still drawn, without the tracer's share
        return None


class GraphAdded(NamedTuple):
    """What a trace adds to a launch's host cost, as measured on labkit's probe at its start.

    A graph launch: ``fixed_us + per_node_us * nodes``, and on an executable's first launch in
    the trace ``first_fixed_us + first_per_node_us * nodes`` more. Any launch whose kernel
    (by name) the trace has not launched before: ``function_us`` more, once per kernel, eager,
    prepared or inside a graph. Every eager launch: ``eager_us`` (0 where the probe's traced
    and untraced eager launches differ by no more than the host's noise). The solid part left
    is never drawn below ``floor_eager_us`` (an eager launch) or ``floor_graph_us + floor_per_node_us * nodes`` (a graph launch): the
    probe's own untraced costs, measured in the same process.
    """

    fixed_us: float
    per_node_us: float
    first_fixed_us: float = 0.0
    first_per_node_us: float = 0.0
    function_us: float = 0.0
    floor_eager_us: float = 0.0
    floor_graph_us: float = 0.0
    floor_per_node_us: float = 0.0
    eager_us: float = 0.0

    def of(self, nodes: int, first: bool = False, new_functions: int = 0) -> float:
        """The share of a graph launch of ``nodes`` kernel nodes (see the class)."""
        extra = self.first_fixed_us + self.first_per_node_us * nodes if first else 0.0
        extra += self.function_us * new_functions
        return max(self.fixed_us + self.per_node_us * nodes + extra, 0.0)


def _graph_functions(graph_exec) -> set[str]:
    """The kernel names a labkit GraphExec's graph was captured with (empty if unknown)."""
    launched = getattr(getattr(graph_exec, "graph", None), "launched", None) or {}
    return {getattr(k, "name", str(k)) for k in launched}


def _with_added(cpu: list[Span], added: GraphAdded) -> list[Span]:
    out, seen_exec, seen_fn = [], set(), set()
    for span in cpu:
        share = 0.0
        if span.kind == "launch" and " " in span.name:    # "launch NAME" / "prepared NAME"
            how, fn = span.name.split(" ", 1)
            if fn not in seen_fn:
                seen_fn.add(fn)
                share = added.function_us
            if how == "launch":
                share += added.eager_us
            floor = added.floor_eager_us if how == "launch" else 0.0   # prepared: no floor
            share = min(share, span.duration_us - floor)
        elif span.kind == "graph" and span.target is not None:
            nodes = kernel_node_count(span.target)
            if nodes:
                fns = _graph_functions(span.target)
                first = id(span.target) not in seen_exec
                seen_exec.add(id(span.target))
                share = added.of(nodes, first, len(fns - seen_fn))
                seen_fn |= fns
                floor = added.floor_graph_us + added.floor_per_node_us * nodes
                share = min(share, span.duration_us - floor)
        share = min(max(share, 0.0), span.duration_us)
        out.append(span if share == 0.0 else span._replace(added_us=share))
    return out


class ProbeCosts(NamedTuple):
    """Median host µs of one call of each of the probe's kinds."""

    eager: float
    graph: float          # the NODES-node graph
    graph1: float         # the one-node graph


class FirstCosts(NamedTuple):
    """Median host µs of first traced launches: a fresh executable of the ``NODES``-node and of
    the one-node graph, and ``function_us``: a kernel's first launch less its second."""

    graph: float
    graph1: float
    function_us: float


class TraceProbe:
    """labkit's own tiny kernel, a one-node and a ``NODES``-node graph of it, on a private
    stream and buffer: launched at a trace's start to absorb CUPTI's set-up cost (the first
    launches after kernel records are enabled are the dearest of all), and timed untraced and
    traced to measure what the trace adds in this process, now.

    A trace also charges first launches, each trace anew: a graph executable's first traced
    launch, and the first launch of each kernel in the trace. `fresh` instantiates a few new executables of both graphs before the trace
    (each launched once, as the course's are before a timeline); `warm` times their first
    traced launch, and the first two launches of `FUNCTIONS` kernels of labkit's own that are
    never launched before in the trace.

    The launches go through labkit, as the course's do (an eager launch is numba's whole
    dispatch). Its records end before the block begins and carry ``NAME``, so they never reach
    the picture.
    """

    NAME = "_labkit_trace_probe"
    NODES = 20
    REPEAT = 9            # timed calls of each kind (medians: the host's noise is µs)
    WARM = 4              # launches of each kind at a trace's start, each waited for
    FRESH = 3             # new executables of each graph whose first traced launch is timed
    FUNCTIONS = 3         # kernels of their own, whose first launch in a trace is timed

    def __init__(self):
        self._stream = Stream()
        self._x = to_device(np.zeros(32, np.float32))
        self.names = (self.NAME,) + tuple(f"{self.NAME}_{i}" for i in range(self.FUNCTIONS))
        kernels = [self._make_kernel(name) for name in self.names]
        self._launch = kernels[0][1, 32, self._stream]
        self._functions = [k[1, 32, self._stream] for k in kernels[1:]]
        # a prepared launch too: the first one in a trace costs more than the next
        self._prepared = prepare(kernels[0], 1, 32, self._stream, self._x)
        for launch in [self._launch] + self._functions:
            launch(self._x)                             # compile and load, once
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
        self._fresh: list[tuple] = []

    @staticmethod
    def _make_kernel(name: str) -> Kernel:
        def body(x):
            i = numba_cuda.grid(1)
            if i < x.size:
                x[i] += 1.0
        body.__name__ = body.__qualname__ = name    # numba's symbol, CUPTI's record name
        return Kernel(body)

    def eager(self) -> None:
        self._launch(self._x)

    def graph(self) -> None:
        self._graphs[0][1].launch(self._stream)

    def graph1(self) -> None:
        self._graphs[1][1].launch(self._stream)

    def fresh(self) -> None:
        """Before a trace: `FRESH` new executables of each graph, uploaded and launched once."""
        self.close_fresh()
        for _ in range(self.FRESH):
            pair = tuple(g.instantiate(upload_stream=self._stream) for g, _ in self._graphs)
            for ex in pair:
                ex.launch(self._stream)
            self._fresh.append(pair)
        self._stream.synchronize()

    def close_fresh(self) -> None:
        for pair in self._fresh:
            for ex in pair:
                ex.close()
        self._fresh = []

    def _timed(self, fn) -> float:
        t0 = host_us()              # the host's clock: the simulator's modelled one there
        fn()
        dt = host_us() - t0
        self._stream.synchronize()
        return dt

    def warm(self) -> FirstCosts | None:
        """A few launches of each kind, each waited for: CUPTI's set-up cost lands here.

        Then the first launch of each `fresh` executable and of each of the probe's other
        kernels, timed: returns their medians as `FirstCosts`, or None without fresh
        executables.
        """
        for _ in range(self.WARM):        # eager first: CUPTI's set-up lands on these
            self.eager()
            self._stream.synchronize()
        for _ in range(self.WARM):
            for fn in (self.eager, self._prepared, self.graph, self.graph1):
                fn()
                self._stream.synchronize()
        if not self._fresh:
            return None
        big = [self._timed(lambda ex=pair[0]: ex.launch(self._stream)) for pair in self._fresh]
        one = [self._timed(lambda ex=pair[1]: ex.launch(self._stream)) for pair in self._fresh]
        fn_first = []
        for launch in self._functions[:self.FUNCTIONS]:
            first = self._timed(lambda: launch(self._x))
            fn_first.append(first - self._timed(lambda: launch(self._x)))
        return FirstCosts(statistics.median(big), statistics.median(one),
                          max(statistics.median(fn_first), 0.0) if fn_first else 0.0)

    def host_costs_us(self) -> ProbeCosts:
        """Median host µs of one call of each kind (each then waited for, untimed); the kinds
        take turns, so a slow stretch of the host lands on all three alike."""
        fns = (self.eager, self.graph, self.graph1)
        samples = [[] for _ in fns]
        for _ in range(self.REPEAT):
            for fn, out in zip(fns, samples):
                out.append(self._timed(fn))
        return ProbeCosts(*(statistics.median(x) for x in samples))


_probe: TraceProbe | None = None


def trace_probe() -> TraceProbe:
    """The process's `TraceProbe`, built on first use (a JIT compile and two captures)."""
    global _probe
    if _probe is None:
        _probe = TraceProbe()
    return _probe


def _fit(d1: float, dn: float, nodes: int) -> tuple[float, float]:
    """A fixed part and a part per node through two clamped deltas (1 node, ``nodes``)."""
    d1, dn = max(d1, 0.0), max(dn, 0.0)
    per_node = max((dn - d1) / (nodes - 1), 0.0) if nodes > 1 else 0.0
    return max(d1 - per_node, 0.0), per_node


def graph_added(untraced: ProbeCosts, traced: ProbeCosts, nodes: int,
                first: FirstCosts | None = None) -> GraphAdded:
    """The trace's share of a launch, fitted through the one-node and ``nodes``-node graphs:
    a fixed part (CUPTI attached) and a part per kernel node (CUPTI instruments each). With
    ``first`` (the probe's first traced launches), the further share of an executable's first
    launch, fitted the same way against the traced steady launches, and of a kernel's first
    launch. The floors are the probe's untraced costs (see `GraphAdded`)."""
    fixed, per_node = _fit(traced.graph1 - untraced.graph1, traced.graph - untraced.graph, nodes)
    floor_fixed, floor_per_node = _fit(untraced.graph1, untraced.graph, nodes)
    floors = dict(floor_eager_us=untraced.eager, floor_graph_us=floor_fixed,
                  floor_per_node_us=floor_per_node,
                  eager_us=_eager_added(untraced.eager, traced.eager))
    if first is None:
        return GraphAdded(fixed, per_node, **floors)
    f_fixed, f_per_node = _fit(first.graph1 - traced.graph1, first.graph - traced.graph, nodes)
    return GraphAdded(fixed, per_node, f_fixed, f_per_node, first.function_us, **floors)


def _eager_added(untraced: float, traced: float) -> float:
    """What tracing adds to an eager launch: 0 below ~2 µs or a tenth of the launch, where the
    difference is the host's noise, not CUPTI's."""
    return traced - untraced if traced - untraced >= max(2.0, 0.1 * untraced) else 0.0


def _eager_note(untraced: float, traced: float) -> str:
    # the same rule as _eager_added: below it, the difference is the host's noise
    if abs(traced - untraced) < max(2.0, 0.1 * untraced):
        return f"tracing adds: nothing measurable to an eager launch (≈{untraced:.0f} µs either way)"
    if traced < untraced:
        return (f"tracing adds: nothing to an eager launch, which came out faster traced "
                f"({untraced:.0f} → {traced:.0f} µs, the host's own noise)")
    return (f"tracing adds: ≈{traced - untraced:.0f} µs to an eager launch "
            f"({untraced:.0f} → {traced:.0f} µs, hatched)")


def added_note(untraced: ProbeCosts, traced: ProbeCosts, nodes: int,
               first: FirstCosts | None = None) -> tuple[str, GraphAdded]:
    """The note that says what tracing adds, and the launches' added cost (`GraphAdded`)."""
    added = graph_added(untraced, traced, nodes, first)
    note = _eager_note(untraced.eager, traced.eager)
    if first is not None:
        note += f"; ≈{added.function_us:.0f} µs to a kernel's first launch in the trace"
    share = f"≈{added.fixed_us:.0f} µs + {added.per_node_us:.2f} µs per kernel node"
    if first is not None:
        share += (f", its first ≈{added.first_fixed_us:.0f} µs + "
                  f"{added.first_per_node_us:.2f} µs per node more")
    note += f"; to a graph launch {share} (all hatched)"
    return note + "; measured now on labkit's probe", added

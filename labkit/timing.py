"""Measuring: warm-up apart from counted runs, host/CPU/GPU time, graph phases, timelines.

Every function reads `labkit.host_us` / `labkit.cpu_us` and CUDA events, so the same code gives
measured figures on a GPU and modelled ones (the simulator's calibrated clock) on the CPU.
"""
from __future__ import annotations

import contextlib
import time

from . import _host_calls
from ._capture import capture
from ._errors import check
from ._handles import stream_handle
from .backends import cpu_us, host_us, rt, start_trace, stop_trace
from .measure import _cupti, _trace
from .measure.timeline import Span, Timeline
from .measure.stats import Stats
from .measure.trace_export import chrome_trace, save_chrome_trace

__all__ = ["measure", "gpu_measure", "wall_and_cpu", "graph_phases", "timeline", "Stats",
           "chrome_trace", "save_chrome_trace"]



def _sync(stream):
    check(rt.cudaStreamSynchronize(stream_handle(stream)), "synchronize")


def measure(fn, *, warmup: int = 3, repeat: int = 30, label: str = "", per: int = 1,
            sync=None, after=None) -> Stats:
    """Host wall time of ``fn()`` in µs (divided by ``per``), after ``warmup`` uncounted calls.

    ``sync``: a stream to synchronize after each call, inside the timed region (so the figure is
    the time until the work is done, not just submitted). Without it only submission is timed.
    ``after``: called with what ``fn()`` returned, after each call, untimed: to release what
    the call made (``after=lambda ex: ex.close()`` for an instantiation), so that neither the
    release is timed nor what is kept alive piles up.
    """
    def call():
        r = fn()
        if sync is not None:
            _sync(sync)
        return r

    for _ in range(warmup):
        r = call()
        if after is not None:
            after(r)
    if sync is not None:
        _sync(sync)
    samples = []
    for _ in range(repeat):
        t0 = host_us()
        r = call()
        samples.append((host_us() - t0) / per)
        if after is not None:
            after(r)
    return Stats(samples, label=label)


def gpu_measure(fn, stream, *, warmup: int = 3, repeat: int = 30, label: str = "",
                per: int = 1) -> Stats:
    """GPU time of the work ``fn()`` queues on ``stream``, from an event pair around it, in µs."""
    h = stream_handle(stream)
    start = check(rt.cudaEventCreate())
    end = check(rt.cudaEventCreate())
    try:
        for _ in range(warmup):
            fn()
        samples = []
        for _ in range(repeat):
            check(rt.cudaEventRecord(start, h))
            fn()
            check(rt.cudaEventRecord(end, h))
            check(rt.cudaEventSynchronize(end))
            samples.append(check(rt.cudaEventElapsedTime(start, end)) * 1000.0 / per)
    finally:
        rt.cudaEventDestroy(start)
        rt.cudaEventDestroy(end)
    return Stats(samples, label=label)


def wall_and_cpu(fn) -> tuple[float, float]:
    """``(wall µs, CPU µs)`` of one call of ``fn``; CPU/wall is the host's utilization."""
    w0, c0 = host_us(), cpu_us()
    fn()
    return host_us() - w0, cpu_us() - c0


def graph_phases(record, stream, *, repeat: int = 5, steady: int = 20) -> dict[str, Stats]:
    """The phases of a graph's life, each timed on its own (host µs).

    ``record(stream)`` submits the work to capture. Returns Stats for ``capture``,
    ``instantiate``, ``upload``, ``first_launch`` (launch + sync of a fresh, not uploaded
    executable), ``uploaded_first_launch``, ``steady_launch`` (launch + sync once warm: the
    host waits for the GPU to run the whole graph, so it grows with the graph's GPU time) and
    ``launch_call`` (the same steady ``cudaGraphLaunch`` call alone, the sync after it untimed:
    what the host pays to submit the graph).
    """
    out = {k: [] for k in ("capture", "instantiate", "upload", "first_launch",
                           "uploaded_first_launch", "steady_launch", "launch_call")}
    record(stream)           # warm-up: JIT, module load, allocations happen here, not in capture
    _sync(stream)
    for _ in range(repeat):
        t0 = host_us()
        with capture(stream) as cap:
            record(stream)
        out["capture"].append(host_us() - t0)
        g = cap.graph
        t0 = host_us()
        ex = g.instantiate()
        out["instantiate"].append(host_us() - t0)
        t0 = host_us()
        ex.launch(stream)
        _sync(stream)
        out["first_launch"].append(host_us() - t0)
        ex2 = g.instantiate()
        t0 = host_us()
        ex2.upload(stream)
        _sync(stream)
        out["upload"].append(host_us() - t0)
        t0 = host_us()
        ex2.launch(stream)
        _sync(stream)
        out["uploaded_first_launch"].append(host_us() - t0)
        for _ in range(steady):
            t0 = host_us()
            ex.launch(stream)
            t1 = host_us()
            _sync(stream)
            out["steady_launch"].append(host_us() - t0)
            out["launch_call"].append(t1 - t0)
        ex.close()
        ex2.close()
        g.close()
    return {k: Stats(v, label=k) for k, v in out.items()}


class _Recording:
    """Filled when the ``with labkit.timing.timeline()`` block ends: ``.timeline``."""

    timeline: Timeline | None = None


@contextlib.contextmanager
def timeline(note: str = "", api: bool = False):
    """Record what the block does: labkit's calls on the CPU row, GPU work per stream.

    The CPU row is labkit's own: each eager launch (with numba's whole dispatch), prepared
    launch, graph launch, synchronization and copy, timed with the host clock, the same on both
    backends. On the simulator the GPU rows come from the model's clock (and the model's other
    host calls, e.g. a learner's raw ``labkit.rt`` calls, join the CPU row); on a GPU from
    CUPTI's kernel, memcpy and memset records (the ``gpu`` extra). A GPU trace is warmed up
    before the block, so its set-up cost stays out of the picture, and the timeline's note says
    what tracing still adds (graph launches show it hatched). Without CUPTI on a GPU, the
    block's GPU time is one event-pair span, and the plot says so.

    Parameters
    ----------
    note : str
        Shown under the plot.
    api : bool
        On a GPU, also record CUDA runtime/driver API calls made outside labkit's calls (a
        learner's raw ``labkit.rt`` calls). These records make every traced call dearer.
    """
    rec = _Recording()
    if start_trace():            # the simulator records its own model's timeline
        _host_calls.start(now=host_us, us_per_tick=1.0)
        try:
            yield rec
        finally:
            host = _host_calls.stop()
            spans = stop_trace()
        rec.timeline = _trace.sim_timeline(host, spans, note)
        return
    ok, why = _cupti.available()
    if ok:
        probe = _trace.trace_probe()
        untraced = probe.host_costs_us()
        probe.fresh()                        # executables whose first traced launch is timed
        kinds = ("kernel", "memcpy", "memset") + (("runtime", "driver") if api else ())
        with _cupti.KernelTrace(kinds=kinds) as tr:
            first = probe.warm()             # CUPTI's set-up cost lands here, unseen
            traced = probe.host_costs_us()
            offset = _trace.clock_offset_ns(_cupti.timestamp_ns)
            t0_cupti = tr.t_enter_ns
            _host_calls.start()
            begin = time.perf_counter_ns()
            try:
                yield rec
            finally:
                host = _host_calls.stop()
        probe.close_fresh()
        added, graph_share = _trace.added_note(untraced, traced, probe.NODES, first)
        if api:
            added += "; API records on: each traced API call costs more than untraced"
        rec.timeline = _trace.gpu_timeline(
            host, tr.spans(t0_cupti), begin_ns=begin, offset_ns=offset, t0_cupti_ns=t0_cupti,
            note="; ".join(p for p in (note, added) if p), warmup_names=probe.names,
            graph_added=graph_share)
        return
    start, end = check(rt.cudaEventCreate()), check(rt.cudaEventCreate())
    check(rt.cudaEventRecord(start, 0))
    _host_calls.start()
    t0 = time.perf_counter_ns()
    try:
        yield rec
    finally:
        t1 = time.perf_counter_ns()
        host = _host_calls.stop()
        check(rt.cudaEventRecord(end, 0))
        check(rt.cudaEventSynchronize(end))
        gpu = check(rt.cudaEventElapsedTime(start, end)) * 1000.0
        rt.cudaEventDestroy(start)
        rt.cudaEventDestroy(end)
    cpu = _trace.shifted(host, t0 / 1e3) or [Span("CPU", "region", 0.0, (t1 - t0) / 1e3, "api")]
    rec.timeline = Timeline(cpu + [Span("GPU (events)", "all GPU work", 0.0, gpu, "kernel")],
                            source="events", note=f"no CUPTI ({why}); {note}")

"""A `Timeline` as Chrome trace-event JSON, the format Perfetto and ``chrome://tracing`` open.

The Trace Event Format's JSON object form: ``{"traceEvents": [...], "displayTimeUnit": "ns",
"otherData": {...}}``. Each span becomes one complete event (``"ph": "X"``) with ``ts`` and
``dur`` in microseconds (the format's unit; the timeline's start is ``ts`` 0), ``name``, ``cat``
(the span's kind) and ``args`` (correlation id, graph id, the tracer's added time, which
``dur`` includes, as the timeline's span does).

Times are whole nanoseconds. Each span's start and end are rounded to the nanosecond, and
``dur`` is the rounded end minus the rounded start: a span that ends where the next begins
still ends there in the file (rounding start and duration each on its own made some host calls
overlap the next by a nanosecond, which Perfetto then mis-nests). ``ts`` and ``dur`` are written
with at most three decimals, which Perfetto reads back as exactly those nanoseconds.

The host rows are threads of one process ("host"), the GPU rows threads of another ("GPU");
metadata events (``"ph": "M"``: ``process_name``, ``process_sort_index``, ``thread_name``,
``thread_sort_index``) name each thread by its role, as the course's timelines label their rows
(`thread_names`): "host: Python thread", "GPU stream 4097 (non-blocking): decode", "GPU stream
4097, graph branch 1", and keep the timeline's order.

Perfetto accepts only events that nest perfectly on one thread (its FAQ: overlapping
B/E/X events are not displayed correctly). A timeline's row may hold spans that overlap without
nesting (graph-launched kernels on a busy stream, a traced call that outlasts the next one), so
such a span goes to an extra thread under its row, named ``"<row's name> (overlap 2)"`` and so
on: nothing is dropped or clipped.

``save_chrome_trace(tl, "trace.json")`` writes the file: open https://ui.perfetto.dev and drop
it there, or load it in ``chrome://tracing``.
"""
from __future__ import annotations

import json
import os
from typing import Mapping, NamedTuple

import labkit
from labkit._streams import Stream

from .timeline import CPU_ROW, Timeline, row_labels

__all__ = ["chrome_trace", "save_chrome_trace", "thread_names", "tracks", "Track", "HOST_PID",
           "GPU_PID"]

HOST_PID, GPU_PID = 1, 2
HOST_THREAD = "host: Python thread"     # labkit records the calls of the thread that made them


def _stream_row(handle: int) -> str:
    return f"stream {labkit.backends.stream_trace_id(handle)}"


def thread_names(timeline: Timeline, stream_names: Mapping | None = None) -> dict[str, str]:
    """Each row of ``timeline`` -> the name its thread gets in the trace, by its role.

    ``"CPU"`` is the Python thread that made the calls ("host: Python thread"); ``"stream N"``
    is "GPU stream N", with "(non-blocking)" where ``stream_names`` names it by a
    `labkit.Stream` (every one is non-blocking) and ": role" where it gives a role;
    ``"stream N branch K"`` (a graph's branch that ran beside its launch stream) is "GPU
    stream N, graph branch K". ``stream_names`` is `labkit.plot.timeline`'s argument: keys are
    streams, raw handles or row names, values are roles.
    """
    roles, non_blocking = {}, set()
    if stream_names:
        # The plots' own matching of streams to rows, so the trace names what the figure labels.
        roles = row_labels([timeline], stream_names, _stream_row)
        non_blocking = set(row_labels([timeline], {k: "" for k in stream_names
                                                   if isinstance(k, Stream)}, _stream_row))
    out = {}
    for row in timeline.rows():
        if row.startswith(CPU_ROW):
            out[row] = HOST_THREAD + row[len(CPU_ROW):]
            continue
        stream, _, branch = row.partition(" branch ")
        name = f"GPU {stream}" + (" (non-blocking)" if row in non_blocking else "")
        role = roles.get(row, "").split(", branch ")[0]
        out[row] = name + (f": {role}" if role else "") + \
            (f", graph branch {branch}" if branch else "")
    return out


def _ns(us: float, t0: float) -> int:
    """Microseconds on the timeline's clock -> whole nanoseconds from ``t0``."""
    return round((us - t0) * 1000)


def _lanes(spans: list[tuple[int, int]]) -> list[int]:
    """For (start, end) sorted by (start, -end): the lane of each, so that each lane nests
    perfectly (a span inside the one open before it, or after it ended)."""
    lanes: list[list[int]] = []      # per lane, the ends of the spans still open (a stack)
    out = []
    for start, end in spans:
        for k, stack in enumerate(lanes):
            while stack and stack[-1] <= start:
                stack.pop()
            if not stack or end <= stack[-1]:
                stack.append(end)
                out.append(k)
                break
        else:
            lanes.append([end])
            out.append(len(lanes) - 1)
    return out


def chrome_trace(timeline: Timeline, stream_names: Mapping | None = None) -> dict:
    """The timeline as a Chrome trace-event JSON object (a dict ready for ``json.dump``).

    Parameters
    ----------
    timeline : labkit.measure.timeline.Timeline
        What ``with labkit.timing.timeline() as rec`` left in ``rec.timeline``.
    stream_names : mapping, optional
        Streams' roles, as `labkit.plot.timeline` takes them (``{stream: "decode"}``): they
        name the streams' threads (`thread_names`).

    Returns
    -------
    dict
        ``traceEvents`` (metadata events, then one ``"X"`` event per span, in row order and by
        start time), ``displayTimeUnit`` and ``otherData`` (the timeline's source and note).
    """
    if not isinstance(timeline, Timeline):
        raise TypeError(f"chrome_trace takes a labkit Timeline, got {type(timeline).__name__}: "
                        "pass rec.timeline from `with labkit.timing.timeline() as rec:`")
    t0 = timeline.start_us if timeline.spans else 0.0
    names = thread_names(timeline, stream_names)
    meta = []
    for pid, name in ((HOST_PID, "host"), (GPU_PID, "GPU")):
        meta.append({"ph": "M", "name": "process_name", "pid": pid, "tid": 0,
                     "args": {"name": name}})
        meta.append({"ph": "M", "name": "process_sort_index", "pid": pid, "tid": 0,
                     "args": {"sort_index": pid}})
    events = []
    tid = 0
    for row in timeline.rows():
        pid = HOST_PID if row.startswith(CPU_ROW) else GPU_PID
        # whole nanoseconds first: lanes and times then agree with what Perfetto reads back
        spans = [(s, _ns(s.start_us, t0), _ns(s.end_us, t0)) for s in timeline.row_spans(row)]
        spans.sort(key=lambda t: (t[1], -t[2]))
        lanes = _lanes([(a, b) for _, a, b in spans])
        first_tid = tid + 1
        for lane in range(max(lanes, default=0) + 1):
            tid += 1
            name = names[row] if lane == 0 else f"{names[row]} (overlap {lane + 1})"
            meta.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid,
                         "args": {"name": name}})
            meta.append({"ph": "M", "name": "thread_sort_index", "pid": pid, "tid": tid,
                         "args": {"sort_index": tid}})
        for (s, start, end), lane in zip(spans, lanes):
            args = {"row": row}
            if s.correlation_id is not None:
                args["correlation_id"] = s.correlation_id
            if s.graph_id is not None:
                args["graph_id"] = s.graph_id
            if s.added_us:
                args["added_by_tracer_us"] = round(s.added_us, 3)
            events.append({"ph": "X", "name": s.name, "cat": s.kind, "pid": pid,
                           "tid": first_tid + lane, "ts": start / 1000,
                           "dur": (end - start) / 1000, "args": args})
    return {"traceEvents": meta + events, "displayTimeUnit": "ns",
            "otherData": {"source": timeline.source, "note": timeline.note,
                          "time_unit": "us", "origin_us": t0}}


def save_chrome_trace(timeline: Timeline, path, stream_names: Mapping | None = None) -> str:
    """Write `chrome_trace` of ``timeline`` to ``path`` (JSON); returns the path written.

    The folder above ``path`` is made if missing. Open the file in https://ui.perfetto.dev
    (Open trace file, or drag it onto the page) or ``chrome://tracing`` (Load).
    """
    path = os.fspath(path)
    folder = os.path.dirname(path)
    if folder:
        os.makedirs(folder, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(chrome_trace(timeline, stream_names), f, ensure_ascii=False)
    return path


class Track(NamedTuple):
    """One thread of a trace file as Perfetto lays it out: its process, its name, and its
    slices as ``(start_ns, end_ns, depth, name, cat)``, depth 0 on top, a slice one deeper than
    the slice it sits inside."""

    process: str
    thread: str
    slices: list[tuple[int, int, int, str, str]]


def tracks(trace) -> list[Track]:
    """The threads of a trace-event JSON (a dict, or the path of a file), in the order its
    sort-index metadata gives, each with its complete (``"X"``) events nested by depth.

    Read from the file alone, with the file's own times read as Perfetto reads them (µs to whole
    nanoseconds), so what it returns is what the file says, whoever wrote it. A slice that starts
    inside another and ends after it is an error: Perfetto would mis-nest it.
    """
    if not isinstance(trace, dict):
        with open(os.fspath(trace), encoding="utf-8") as f:
            trace = json.load(f)
    events = trace.get("traceEvents", [])
    meta = {(e["name"], e["pid"], e.get("tid")): e.get("args", {})
            for e in events if e.get("ph") == "M"}
    by_thread: dict[tuple, list] = {}
    for e in events:
        if e.get("ph") == "X":
            start = round(e["ts"] * 1000)
            by_thread.setdefault((e["pid"], e["tid"]), []).append(
                (start, start + round(e.get("dur", 0) * 1000), e["name"], e.get("cat", "")))

    def order(key):
        pid, tid = key
        return (meta.get(("process_sort_index", pid, 0), {}).get("sort_index", pid),
                meta.get(("thread_sort_index", pid, tid), {}).get("sort_index", tid))

    out = []
    for pid, tid in sorted(by_thread, key=order):
        stack: list[int] = []
        slices = []
        for start, end, name, cat in sorted(by_thread[(pid, tid)], key=lambda t: (t[0], -t[1])):
            while stack and stack[-1] <= start:
                stack.pop()
            if stack and end > stack[-1]:
                raise ValueError(f"slice {name!r} ({start}..{end} ns) starts inside the one "
                                 f"before it on thread {tid} and ends after it ({stack[-1]} ns): "
                                 "Perfetto would mis-nest it; give it a thread of its own")
            slices.append((start, end, len(stack), name, cat))
            stack.append(end)
        out.append(Track(meta.get(("process_name", pid, 0), {}).get("name", f"pid {pid}"),
                         meta.get(("thread_name", pid, tid), {}).get("name", f"tid {tid}"),
                         slices))
    return out

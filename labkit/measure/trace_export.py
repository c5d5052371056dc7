"""A `Timeline` as Chrome trace-event JSON, the format Perfetto and ``chrome://tracing`` open.

The Trace Event Format's JSON object form: ``{"traceEvents": [...], "displayTimeUnit": "ns",
"otherData": {...}}``. Each span becomes one complete event (``"ph": "X"``) with ``ts`` and
``dur`` in microseconds (the format's unit; the timeline's start is ``ts`` 0; rounded to the
nanosecond), ``name``, ``cat`` (the span's kind) and ``args`` (correlation id, graph id, the
tracer's added time, which ``dur`` includes, as the timeline's span does). The host
rows are threads of one process ("host"), the GPU rows threads of another ("GPU"); metadata
events (``"ph": "M"``: ``process_name``, ``thread_name``, ``thread_sort_index``) name them and
keep the timeline's order.

Perfetto accepts only events that nest perfectly on one thread (its FAQ: overlapping
B/E/X events are not displayed correctly). A timeline's row may hold spans that overlap without
nesting (graph-launched kernels on a busy stream, a traced call that outlasts the next one), so
such a span goes to an extra thread under its row, named ``"<row> (overlap 2)"`` and so on:
nothing is dropped or clipped.

``save_chrome_trace(tl, "trace.json")`` writes the file: open https://ui.perfetto.dev and drop
it there, or load it in ``chrome://tracing``.
"""
from __future__ import annotations

import json
import os

from ._spans import CPU_ROW, Timeline

__all__ = ["chrome_trace", "save_chrome_trace", "HOST_PID", "GPU_PID"]

HOST_PID, GPU_PID = 1, 2


def _lanes(spans) -> list[int]:
    """For spans sorted by (start, -end): the lane of each, so that each lane nests perfectly."""
    lanes: list[list[float]] = []      # per lane, the ends of the spans still open (a stack)
    out = []
    for s in spans:
        for k, stack in enumerate(lanes):
            while stack and stack[-1] <= s.start_us:
                stack.pop()
            if not stack or s.end_us <= stack[-1]:
                stack.append(s.end_us)
                out.append(k)
                break
        else:
            lanes.append([s.end_us])
            out.append(len(lanes) - 1)
    return out


def chrome_trace(timeline: Timeline) -> dict:
    """The timeline as a Chrome trace-event JSON object (a dict ready for ``json.dump``).

    Parameters
    ----------
    timeline : labkit.measure._spans.Timeline
        What ``with labkit.timing.timeline() as rec`` left in ``rec.timeline``.

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
    meta = [{"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": name}}
            for pid, name in ((HOST_PID, "host"), (GPU_PID, "GPU"))]
    events = []
    tid = 0
    for row in timeline.rows():
        pid = HOST_PID if row.startswith(CPU_ROW) else GPU_PID
        spans = timeline.row_spans(row)
        lanes = _lanes(spans)
        first_tid = tid + 1
        for lane in range(max(lanes, default=0) + 1):
            tid += 1
            name = row if lane == 0 else f"{row} (overlap {lane + 1})"
            meta.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid,
                         "args": {"name": name}})
            meta.append({"ph": "M", "name": "thread_sort_index", "pid": pid, "tid": tid,
                         "args": {"sort_index": tid}})
        for s, lane in zip(spans, lanes):
            args = {"row": row}
            if s.correlation_id is not None:
                args["correlation_id"] = s.correlation_id
            if s.graph_id is not None:
                args["graph_id"] = s.graph_id
            if s.added_us:
                args["added_by_tracer_us"] = s.added_us
            events.append({"ph": "X", "name": s.name, "cat": s.kind, "pid": pid,
                           "tid": first_tid + lane, "ts": round(s.start_us - t0, 3),
                           "dur": round(s.duration_us, 3), "args": args})
    return {"traceEvents": meta + events, "displayTimeUnit": "ns",
            "otherData": {"source": timeline.source, "note": timeline.note,
                          "time_unit": "us", "origin_us": t0}}


def save_chrome_trace(timeline: Timeline, path) -> str:
    """Write `chrome_trace` of ``timeline`` to ``path`` (JSON); returns the path written.

    Open the file in https://ui.perfetto.dev (drag it onto the page) or ``chrome://tracing``.
    """
    path = os.fspath(path)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(chrome_trace(timeline), f, ensure_ascii=False)
    return path

"""Spans and timelines: what happened where, and when, in microseconds.

A :class:`Timeline` is what ``labkit.timing`` records and ``labkit.plot.timeline`` draws: one
row for the host ("CPU", the API calls made) and one row per stream ("stream 7", the GPU work
queued there), made of `labkit._span.Span`s (re-exported here). Times are microseconds from an
arbitrary origin; only differences matter.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence

from labkit._handles import stream_handle
from labkit._span import CPU_ROW, SPAN_KINDS, Span

__all__ = ["Span", "Timeline", "SPAN_KINDS", "SOURCES", "CPU_ROW"]

SOURCES = ("cupti", "events", "model")


def _natural_key(text: str) -> list:
    # "stream 10" must sort after "stream 2", as Nsight Systems orders its rows.
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", text)]


def _merged(intervals: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """Union of intervals, sorted; nested calls (a runtime call around its driver call) merge."""
    merged: list[list[float]] = []
    for start, end in sorted(intervals):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return [(start, end) for start, end in merged]


@dataclass
class Timeline:
    """Spans recorded over one region, with where they came from.

    Parameters
    ----------
    spans : list of Span
    source : str
        ``"cupti"`` (device spans measured by CUPTI), ``"events"`` (device spans bracketed by
        CUDA event pairs, no CUPTI) or ``"model"`` (the simulator's cost model).
    note : str
        Anything the reader of the plot must know (shown on it); may be empty.
    """

    spans: list[Span] = field(default_factory=list)
    source: str = "model"
    note: str = ""

    def __post_init__(self) -> None:
        if self.source not in SOURCES:
            raise ValueError(
                f"Timeline source {self.source!r} is not one of {', '.join(SOURCES)}; use "
                "'cupti' for CUPTI records, 'events' for CUDA event pairs, 'model' for the simulator")
        self.spans = [Span(*s).checked() for s in self.spans]

    def rows(self) -> list[str]:
        """Row names: CPU rows first, then the GPU rows in natural order."""
        names = {span.row for span in self.spans}
        cpu = sorted((name for name in names if name.startswith(CPU_ROW)), key=_natural_key)
        gpu = sorted((name for name in names if not name.startswith(CPU_ROW)), key=_natural_key)
        return cpu + gpu

    def row_spans(self, row: str) -> list[Span]:
        """The spans of one row, by start time."""
        return sorted((s for s in self.spans if s.row == row), key=lambda s: (s.start_us, -s.end_us))

    @property
    def start_us(self) -> float:
        """Earliest start of any span (raises ValueError on an empty timeline)."""
        self._require_spans()
        return min(span.start_us for span in self.spans)

    @property
    def end_us(self) -> float:
        """Latest end of any span (raises ValueError on an empty timeline)."""
        self._require_spans()
        return max(span.end_us for span in self.spans)

    def window(self, start_us: float, end_us: float) -> "Timeline":
        """A new timeline with the spans that overlap ``[start_us, end_us]``, clipped to it.

        Clipping keeps :meth:`gaps` and :meth:`busy_fraction` honest inside the window.
        """
        if end_us < start_us:
            raise ValueError(f"window end {end_us} µs is before its start {start_us} µs")
        kept = []
        for span in self.spans:
            if span.end_us < start_us or span.start_us > end_us:
                continue
            lo, hi = max(span.start_us, start_us), min(span.end_us, end_us)
            # the tracer's share sits at the span's end: clip it with the span
            added = max(0.0, min(span.added_us - (span.end_us - hi), hi - lo))
            kept.append(span._replace(start_us=lo, end_us=hi, added_us=added))
        return Timeline(kept, self.source, self.note)

    def gaps(self, row: str) -> list[tuple[float, float]]:
        """Idle intervals ``(start_us, end_us)`` between consecutive spans of ``row``.

        Overlapping or nested spans count as one busy stretch; back-to-back spans leave no gap.
        """
        busy = _merged([(s.start_us, s.end_us) for s in self.spans if s.row == row])
        return [(left[1], right[0]) for left, right in zip(busy, busy[1:]) if right[0] > left[1]]

    def busy_fraction(self, row: str, start_us: float | None = None,
                      end_us: float | None = None) -> float:
        """Fraction of time ``row`` was busy, between its first start and last end by default.

        Parameters
        ----------
        row : str
        start_us, end_us : float, optional
            Measure over this interval instead (for example the whole timeline's extent).
        """
        spans = [s for s in self.spans if s.row == row]
        if not spans:
            raise ValueError(f"row {row!r} has no spans; rows here are {self.rows()}")
        lo = min(s.start_us for s in spans) if start_us is None else start_us
        hi = max(s.end_us for s in spans) if end_us is None else end_us
        if hi <= lo:
            # A row of zero-length spans has no extent to be idle in.
            return 1.0
        clipped = [(max(s.start_us, lo), min(s.end_us, hi)) for s in spans
                   if s.end_us > lo and s.start_us < hi]
        busy = sum(end - start for start, end in _merged(clipped))
        return busy / (hi - lo)

    def _require_spans(self) -> None:
        if not self.spans:
            raise ValueError("the timeline has no spans; record a region that does some work")


def row_labels(tls: Sequence[Timeline], stream_names: Mapping | None,
               stream_row: Callable[[int], str]) -> dict[str, str]:
    """Row name -> label. A stream's branch rows ("stream 7 branch 1") follow its label.

    ``stream_names`` maps streams, raw handles or row names to labels; ``stream_row(handle)``
    is the row a handle's work is on in a trace (the plots' and the trace export's own).

    A stream (or handle) names the row "stream <handle>" or the row its trace gives it. On the
    simulator's timelines a name that matches no row is an error; a GPU trace's rows may number
    streams otherwise, so there it only leaves the row as the trace named it."""
    if not stream_names:
        return {}
    rows = {row for tl in tls for row in tl.rows()}
    exact = all(tl.source == "model" for tl in tls)
    out = {}
    for key, label in stream_names.items():
        if isinstance(key, str):
            names = [key]
        else:
            handle = stream_handle(key)
            names = list(dict.fromkeys([f"stream {handle}", stream_row(handle)]))
        hits = [(row, r) for row in names for r in rows
                if r == row or r.startswith(row + " branch ")]
        if not hits and exact:
            raise ValueError(f"stream_names names {names[0]!r}, but no row is {names[0]!r}; "
                             f"the rows here are {sorted(rows)}")
        for row, r in hits:
            out[r] = str(label) + r[len(row):].replace(" branch ", ", branch ")
    return out

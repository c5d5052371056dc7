"""`Span`: one interval of activity on one row of a timeline, the one span type of labkit.

Host calls that labkit records (`labkit._host_calls`), CUPTI's records (`labkit.measure._cupti`)
and the simulator's model clock all produce `Span`s; `labkit.measure.timeline.Timeline` holds them
and `labkit.plot.timeline` draws them. A span is a plain named tuple, cheap enough to make in a
launch's hot path; `checked` validates one, and a `Timeline` checks every span it is given.

A leaf module at the bottom of labkit's layers: it imports nothing from labkit, so every layer,
the simulator included, may use it.
"""
from __future__ import annotations

from typing import NamedTuple

__all__ = ["Span", "SPAN_KINDS", "CPU_ROW"]

SPAN_KINDS = ("api", "launch", "kernel", "memcpy", "memset", "sync", "graph")
CPU_ROW = "CPU"


class Span(NamedTuple):
    """One interval of activity on one row of a timeline, in microseconds.

    Parameters
    ----------
    row : str
        ``"CPU"`` for host calls, ``"stream N"`` (or another GPU row name) for device work.
    name : str
        What ran: an API function name, ``"launch NAME"`` for labkit's launches, or a kernel's
        short name.
    start_us, end_us : float
        Start and end in microseconds; ``end_us >= start_us``.
    kind : str
        One of ``SPAN_KINDS``.
    correlation_id : int, optional
        Links a launch on the CPU row to the work it queued (CUPTI's correlation id).
    graph_id : int, optional
        Set on device work that a graph launch ran.
    added_us : float
        How much of the span a tracer added (its last ``added_us`` µs), estimated from the
        same call measured untraced and traced in the same process; drawn hatched. 0: none.
    target : object, optional
        What a CPU span launched, where labkit recorded it: the `labkit.GraphExec` of a graph
        launch (the tracer's share depends on its kernel nodes). Not drawn.
    """

    row: str
    name: str
    start_us: float
    end_us: float
    kind: str
    correlation_id: int | None = None
    graph_id: int | None = None
    added_us: float = 0.0
    target: object = None

    @property
    def duration_us(self) -> float:
        """Length of the span in microseconds."""
        return self.end_us - self.start_us

    def checked(self) -> "Span":
        """This span, after checking its kind, its times and its tracer's share."""
        if self.kind not in SPAN_KINDS:
            raise ValueError(
                f"Span kind {self.kind!r} is not one of {', '.join(SPAN_KINDS)}; "
                "pick the closest (device work is 'kernel', 'memcpy' or 'memset', host calls "
                "are 'api', 'launch', 'graph' or 'sync')")
        if not self.end_us >= self.start_us:  # also catches NaN
            raise ValueError(
                f"Span {self.name!r} on {self.row!r} ends before it starts "
                f"({self.start_us} > {self.end_us} µs); pass start_us first, then end_us")
        if not 0.0 <= self.added_us <= self.end_us - self.start_us + 1e-9:
            raise ValueError(
                f"Span {self.name!r}: added_us={self.added_us} must lie between 0 and the "
                f"span's duration ({self.end_us - self.start_us} µs)")
        return self

    def shifted(self, by_us: float) -> "Span":
        """The same span ``by_us`` µs later (earlier when negative)."""
        return self._replace(start_us=self.start_us + by_us, end_us=self.end_us + by_us)

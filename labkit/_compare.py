"""`captured`: a function of the stream as a graph, and `compare_outputs`: graph against eager.

``labkit.captured(fn)`` captures ``fn(stream)`` at its first call (or at ``.capture(stream)``)
and replays it at every later call; with the eager switch on (`labkit.eager`) every call runs
``fn(stream)`` itself, looking its names up afresh, as eager code does. That makes it the form
for an eager comparison: `compare_outputs` runs a function both ways from the same starting
data and compares every output buffer.
"""
from __future__ import annotations

import numpy as np

from ._capture import capture
from ._eager import eager, graphs_are_eager
from ._errors import CudaError
from ._handles import stream_handle
from .backends import rt

__all__ = ["captured", "Captured", "compare_outputs", "Comparison"]


class Captured:
    """``fn(stream)`` as a graph: captured at the first call (or by `capture`), replayed at
    every later one.

    With the eager switch on, every call runs ``fn(stream)`` eagerly instead. Made by
    `captured`. ``exec`` is the executable once captured (None before, and when eager).
    """

    def __init__(self, fn):
        self.fn, self.exec, self.graph = fn, None, None
        self._stream = None

    def __call__(self, stream):
        if graphs_are_eager():
            self.fn(stream)
            return
        if self.exec is None or self._stream != stream_handle(stream):
            self.capture(stream)
        self.exec.launch(stream)

    def capture(self, stream):
        """Capture ``fn(stream)`` and instantiate it now, launching nothing (with the eager
        switch on: nothing at all). A later call replays it."""
        if graphs_are_eager():
            return
        self.close()
        with capture(stream) as cap:
            self.fn(stream)
        self.graph = cap.graph
        self.exec = self.graph.instantiate()
        self._stream = stream_handle(stream)

    def close(self):
        for h in (self.exec, self.graph):
            if h is not None:
                h.close()
        self.exec = self.graph = None

    def __repr__(self):
        return f"<labkit.captured {getattr(self.fn, '__name__', 'fn')}: " \
               f"{'captured' if self.exec is not None else 'not captured yet'}>"


def captured(fn) -> Captured:
    """Make ``fn(stream)`` (which launches work on ``stream``) a graph, captured at its first
    call and replayed at each later call; eager at every call with the eager switch on.

    >>> step = labkit.captured(lambda s: decode_step(model, s))
    >>> step(stream)      # the first call captures, instantiates and launches
    """
    if not callable(fn):
        raise TypeError("captured(fn) needs a function fn(stream) that launches work on stream")
    return Captured(fn)


# ------------------------------------------------------------------ graph against eager

class Comparison:
    """What `compare_outputs` found: one row per output buffer."""

    def __init__(self, rows):
        self.rows = rows     # (name, equal, max_abs_diff, first differing flat index or None)

    @property
    def ok(self) -> bool:
        return all(r[1] for r in self.rows)

    @property
    def mismatched(self) -> list[str]:
        return [r[0] for r in self.rows if not r[1]]

    def __bool__(self):
        return self.ok

    def __str__(self):
        width = max([len(r[0]) for r in self.rows] + [6])
        lines = [f"{'buffer':{width}}  graph == eager   max |diff|   first differing element"]
        for name, equal, diff, first in self.rows:
            lines.append(f"{name:{width}}  {'yes' if equal else 'NO':14}  {diff:10.3g}   "
                         f"{'' if first is None else first}")
        return "\n".join(lines)

    __repr__ = __str__


def compare_outputs(fn, stream, outputs: dict, setup=None, calls: int = 1,
                    rtol: float = 0.0, atol: float = 0.0) -> Comparison:
    """Run ``fn(stream)`` eagerly, then as a graph (`captured`), ``calls`` times each, and
    compare every buffer of ``outputs`` (name -> device array) between the two runs.

    ``setup()`` is called before each run: it puts the inputs and any state back where they
    start (the two runs must start from the same data). The eager run goes first, so every
    kernel is compiled before the capture. Equal means within ``rtol``/``atol`` (exact by
    default: the same kernels on the same data).
    """
    if not outputs:
        raise ValueError("outputs must name at least one device array: {name: array}")
    got = {}
    for mode in ("eager", "graph"):
        if setup is not None:
            setup()
        g = captured(fn)
        with eager(mode == "eager"):
            for _ in range(int(calls)):
                g(stream)
        err, = _sync(stream)
        if int(err):
            g.close()
            raise CudaError(err, f"synchronizing after the {mode} run")
        got[mode] = {name: np.asarray(a.copy_to_host()) for name, a in outputs.items()}
        g.close()
    rows = []
    for name in outputs:
        a, b = got["eager"][name], got["graph"][name]
        close = np.isclose(b, a, rtol=rtol, atol=atol, equal_nan=True)
        diff = float(np.max(np.abs(b.astype(np.float64) - a.astype(np.float64)))) if a.size else 0.0
        bad = np.flatnonzero(~close.reshape(-1))
        rows.append((name, bool(close.all()), diff, int(bad[0]) if bad.size else None))
    return Comparison(rows)


def _sync(stream):
    return rt.cudaStreamSynchronize(stream_handle(stream))

"""A host that slows down on purpose, for notebook 06's comparison in rounds.

A real host drifts: a CPU's clock falls as it heats, a neighbour takes more and more of the core,
the process is moved to a busier core. `Drift` makes such a drift on demand, on both backends:
from `Drift.start` on, the host's speed falls steadily until it runs at ``1 / slowest`` of its
speed after ``over_us`` µs, and stays there. A function wrapped by `Drift.slowed` is followed,
at every call, by host work of ``(factor - 1)`` times the call's own duration, so the call takes
``factor`` times as long as on a steady host, as every call would on a slower host.

The added work is real host work: cheap runtime queries (``cudaStreamQuery``) repeated until the
time has passed. A GPU's host pays it in real time; the simulator charges each query by its
calibrated cost model, as it charges every runtime call.
"""
from __future__ import annotations

from ..backends import host_us, rt
from .._handles import stream_handle

__all__ = ["Drift"]


class Drift:
    """A host slowing from full speed to ``1 / slowest`` of it over ``over_us`` µs.

    Parameters
    ----------
    stream : labkit.Stream
        An idle stream the host work queries (it submits nothing).
    slowest : float
        How many times longer every call takes once the drift is complete.
    over_us : float
        Host time (µs) from `start` until the drift is complete.
    """

    def __init__(self, stream, slowest: float = 2.0, over_us: float = 1e5):
        if slowest < 1 or over_us <= 0:
            raise ValueError("a drift slows the host: slowest >= 1, over_us > 0")
        self._h = stream_handle(stream)
        self.slowest, self.over_us = float(slowest), float(over_us)
        self.t0 = None

    def start(self) -> None:
        """The host is at full speed now, and slows from here on."""
        self.t0 = host_us()

    def factor(self) -> float:
        """How many times longer a call takes now than on a steady host (1 before `start`)."""
        if self.t0 is None:
            return 1.0
        done = min(1.0, (host_us() - self.t0) / self.over_us)
        return 1.0 + (self.slowest - 1.0) * done

    def _pause(self, us: float) -> None:
        end = host_us() + us
        while host_us() < end:
            rt.cudaStreamQuery(self._h)

    def slowed(self, fn):
        """``fn`` as a drifting host runs it: each call takes `factor` times as long."""
        def call():
            t0 = host_us()
            out = fn()
            self._pause((self.factor() - 1.0) * (host_us() - t0))
            return out
        call.__name__ = getattr(fn, "__name__", "call")
        return call

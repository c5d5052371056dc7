"""The simulator's virtual clock.

Host time advances by the calibrated cost of each call; GPU work is placed on per-stream
timelines. While a trace is open, every host call and every piece of GPU work is recorded as a
`Span` (row, name, start_us, end_us, kind), which is how the simulator draws timelines.

The host is not perfectly steady, as a GPU server's is not (`HostNoise`): a kernel's first
launch, a stream's and an event's first use cost extra (warm-up), the host runs at one speed for
a stretch of time and then at another, and each call varies a little around its stretch's cost.
All of it is drawn from the calibration's ``host_noise`` with a seeded generator, so a process
sees the same figures run after run. ``LABKIT_SIM_SEED=N`` picks another seed (``random``: a new
one each process); ``LABKIT_SIM_NOISE=0`` turns warm-up and noise off, for tests that need the
model's exact figures.
"""
from __future__ import annotations

import os

import numpy as np

from .._calibration import host_noise as _host_noise, load, params as _params
from .._span import Span
from . import _engine


DEFAULT_SEED = 2024


class HostNoise:
    """How the simulated host departs from its steady costs, from a calibration's ``host_noise``.

    * speed: ``speed_ratios`` are rounds' figures over the fastest round's, as measured on the
      GPU. Those above ``slow_above`` are slow stretches: the host spends that share of its time
      in them, ``stretch_us`` long on average, each at one of those speeds. The rest of the time
      the host drifts: every ``drift_us`` or so (exponential lengths) it takes one of the other
      ratios. The speed is a function of host time alone (from ``origin_us``, when the host was
      made), so adding a call does not reshuffle it.
    * call jitter: each call's cost is multiplied by a ratio drawn from ``call_ratio``'s
      quantile function.
    * spikes: a call is held up (preempted) with probability ``spikes.per_call``, for a time
      drawn from ``spikes.us``'s quantile function, added after any wait it makes.
    * warm-up: `first_use` charges ``warmup_us[kind]`` once per kernel, stream or event.
    """

    _BATCH = 4096

    def __init__(self, spec: dict, seed: int | None, origin_us: float = 0.0):
        self.seed, self.origin_us = seed, origin_us
        # one generator each: the slow stretches and the drift depend on host time only, the
        # jitter on the calls
        self._slow_rng, self._drift_rng, self._call_rng = (
            np.random.default_rng([seed, i]) if seed is not None else np.random.default_rng()
            for i in (1, 2, 3))
        ratios = np.asarray(spec["speed_ratios"], float)
        slow = ratios > spec["slow_above"]
        self._slow_speeds, self._drifts = ratios[slow], ratios[~slow]
        if not len(self._drifts):
            self._drifts = np.array([1.0])
        share = float(slow.mean())
        self._slow_mean = float(spec["stretch_us"])
        self._fast_mean = self._slow_mean * (1 - share) / share if share > 0 else float("inf")
        self._drift_mean = float(spec["drift_us"])
        self._q = np.asarray(spec["call_ratio"]["quantiles"], float)
        self._r = np.asarray(spec["call_ratio"]["ratios"], float)
        self._spike_p = float(spec["spikes"]["per_call"])
        self._sq = np.asarray(spec["spikes"]["quantiles"], float)
        self._su = np.asarray(spec["spikes"]["us"], float)
        self.warmup = dict(spec["warmup_us"])
        self._seen: set = set()
        # the host starts at speed; its first slow stretch comes after a fast period
        self._slow, self._slow_speed = False, 1.0
        self._slow_until = origin_us + float(self._slow_rng.exponential(min(self._fast_mean, 1e300)))
        self._drift, self._drift_until = 1.0, origin_us
        self._ratios, self._spikes, self._i = np.empty(0), np.empty(0), 0

    @staticmethod
    def _pick(rng, values) -> float:
        return float(values[rng.integers(len(values))])

    def speed_at(self, t_us: float) -> float:
        """The host's speed factor (cost over the fastest round's) at host time ``t_us``."""
        while t_us >= self._slow_until:
            self._slow = not self._slow
            if self._slow:
                self._slow_speed = self._pick(self._slow_rng, self._slow_speeds)
            self._slow_until += float(self._slow_rng.exponential(
                self._slow_mean if self._slow else self._fast_mean))
        if self._slow:
            return self._slow_speed
        while t_us >= self._drift_until:
            self._drift = self._pick(self._drift_rng, self._drifts)
            self._drift_until += float(self._drift_rng.exponential(self._drift_mean))
        return self._drift

    def call(self) -> tuple[float, float]:
        """One call's (ratio, spike µs), from batches drawn ahead."""
        if self._i >= len(self._ratios):
            rng, n = self._call_rng, self._BATCH
            self._ratios = np.interp(rng.random(n), self._q, self._r)
            self._spikes = np.where(rng.random(n) < self._spike_p,
                                    np.interp(rng.random(n), self._sq, self._su), 0.0)
            self._i = 0
        self._i += 1
        return float(self._ratios[self._i - 1]), float(self._spikes[self._i - 1])

    def cost(self, cost_us: float, t_us: float) -> tuple[float, float]:
        """A call's (cost, spike µs), started at host time ``t_us``, on this host."""
        if cost_us <= 0.0:
            return cost_us, 0.0
        ratio, spike = self.call()
        return cost_us * self.speed_at(t_us) * ratio, spike

    def first_use(self, kind: str, key) -> float:
        """The warm-up ``kind`` ('kernel_first_launch', 'stream_first_use', 'event_first_use')
        costs the first time ``key`` is used in this process; 0.0 after that."""
        if (kind, key) in self._seen:
            return 0.0
        self._seen.add((kind, key))
        return float(self.warmup[kind])


def _from_env() -> HostNoise | None:
    flag = os.environ.get("LABKIT_SIM_NOISE", "1").strip().lower()
    if flag in ("0", "off", "false", "no"):
        return None
    if flag not in ("1", "on", "true", "yes", ""):
        raise ValueError(f"LABKIT_SIM_NOISE={flag!r}: use 1 (the default: warm-up and host noise "
                         "as calibrated) or 0 (the model's exact figures)")
    raw = os.environ.get("LABKIT_SIM_SEED", "").strip().lower()
    if raw == "random":
        seed = None
    else:
        try:
            seed = int(raw) if raw else DEFAULT_SEED
        except ValueError:
            raise ValueError(f"LABKIT_SIM_SEED={raw!r}: use a whole number, or 'random' for a "
                             "new seed each process") from None
    return HostNoise(_host_noise(), seed, _state["host"])


_state = {"host": 0.0, "cpu": 0.0}
_trace: list | None = None
_P = None
_host: HostNoise | None | bool = False     # False: not looked up yet; None: a steady host


def host() -> HostNoise | None:
    """The simulated host's noise model, or None when ``LABKIT_SIM_NOISE=0``."""
    global _host
    if _host is False:
        _host = _from_env()
    return _host


def reset_noise() -> None:
    """Read ``LABKIT_SIM_NOISE`` and ``LABKIT_SIM_SEED`` again: a fresh, reseeded host."""
    global _host
    _host = False


def first_use(kind: str, key) -> float:
    """Warm-up µs for the first use of ``key`` (see `HostNoise.first_use`); 0.0 on a steady host."""
    h = host()
    return 0.0 if h is None else h.first_use(kind, key)


def _noisy(cost_us: float) -> tuple[float, float]:
    """A host cost as this host perturbs it (the what-if profile's noise included): (cost,
    spike µs)."""
    h = host()
    if h is None:
        return cost_us, 0.0
    return h.cost(cost_us, _state["host"])


def P(name: str) -> float:
    """A cost-model figure, in µs (or GB/s, ns for the names that say so)."""
    global _P
    if _P is None:
        _P = _params()
    return _P[name]


def C(name: str, nodes: int) -> float:
    """A size-dependent cost (µs) for a graph of ``nodes`` nodes: the calibration's measured
    points, interpolated piecewise linearly (extrapolated from the last two beyond them)."""
    entry = load()["params"][f"{name}_base_us"]
    if "sizes" in entry:
        xs, ys = np.asarray(entry["sizes"], float), np.asarray(entry["per_size"], float)
        if nodes > xs[-1]:
            slope = (ys[-1] - ys[-2]) / (xs[-1] - xs[-2])
            return float(ys[-1] + slope * (nodes - xs[-1]))
        return float(np.interp(nodes, xs, ys))
    return P(f"{name}_base_us") + P(f"{name}_per_node_us") * nodes


def sm_count() -> int:
    """The calibrated GPU's SM count (what a device-filling grid is measured against)."""
    return int(load().get("sm_count", 132))


def host_us() -> float:
    return _state["host"]


def cpu_us() -> float:
    return _state["cpu"]


def api(name: str, cost_us: float, wait_until: float | None = None, spin: bool = True) -> None:
    """Advance the host clock for one call; a synchronizing call also waits for the GPU
    (spinning, so the wait is CPU time, unless ``spin`` is False: a blocking-sync wait)."""
    start = _state["host"]
    cost_us, spike = _noisy(cost_us)
    end = start + cost_us
    if wait_until is not None and wait_until > end:
        end = wait_until
    end += spike           # held up (preempted): after the wait too, as a spinning thread is
    _state["host"] = end
    _engine.advance(end)   # what the GPU did by now takes effect: the host may look at memory
    # waits spin, as CUDA's default scheduling does; a blocking wait costs only the call
    _state["cpu"] += (end - start) if spin else min(cost_us, end - start)
    if _trace is not None:
        kind = "sync" if wait_until is not None else (
            "launch" if name.startswith("launch") else "graph" if name == "cudaGraphLaunch" else "api")
        _trace.append(Span("CPU", name, start, end, kind))


def host_work(cost_us: float) -> None:
    """Plain Python work on the host that the model charges (e.g. numba's dispatch)."""
    cost_us, spike = _noisy(cost_us)
    _state["host"] += cost_us + spike
    _state["cpu"] += cost_us + spike
    _engine.advance(_state["host"])


def spin_until(t_us: float) -> None:
    """The host spins (a polling loop) until host time ``t_us``: CPU time, no call of its own,
    so neither a call's cost nor its noise."""
    if t_us > _state["host"]:
        _state["cpu"] += t_us - _state["host"]
        _state["host"] = t_us
    _engine.advance(_state["host"])


def gpu_span(stream: int, name: str, start: float, end: float, kind: str, lane: int = 0) -> None:
    """Record device work; ``lane`` > 0: a graph branch that ran beside the launch stream's."""
    if _trace is not None:
        row = f"stream {stream}" if lane == 0 else f"stream {stream} branch {lane}"
        _trace.append(Span(row, name, start, end, kind))


class Lanes:
    """Which row each node of one graph launch is drawn on.

    CUDA runs a graph's independent branches on inner streams, and a GPU trace shows each on a
    row of its own. A node continues the lane of a dependency whose lane it directly follows;
    otherwise it takes the first lane free at its start, or a new one. A chain stays on lane 0.
    """

    def __init__(self):
        self.last: list[int] = []     # per lane: the node placed last
        self.free_at: list[float] = []
        self.lane_of: dict[int, int] = {}

    def place(self, node: int, deps, start: float, end: float) -> int:
        lane = next((self.lane_of[d] for d in deps if self.last[self.lane_of[d]] == d
                     and self.free_at[self.lane_of[d]] <= start), None)
        if lane is None:
            lane = next((i for i, t in enumerate(self.free_at) if t <= start), len(self.last))
        if lane == len(self.last):
            self.last.append(node)
            self.free_at.append(end)
        else:
            self.last[lane], self.free_at[lane] = node, end
        self.lane_of[node] = lane
        return lane


def start_trace() -> list:
    global _trace
    _trace = []
    return _trace


def stop_trace() -> list:
    global _trace
    out, _trace = _trace or [], None
    return out

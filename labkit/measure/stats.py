"""Summary statistics over raw timing samples, and the cost model the course derives from them.

A :class:`Stats` keeps every sample, so a plot can draw the distribution and a reader can
re-derive any number from it. Percentiles are numpy's (linear interpolation), so a learner who
checks with ``np.percentile`` gets the same answer. `breakeven` is the iteration count after
which a graph's setup has paid for itself.
"""
from __future__ import annotations

import math
from typing import Iterable

import numpy as np


def fmt_value(value: float) -> str:
    """A timing as the course prints it: three significant figures, no exponent for large ones."""
    # Three significant figures reads well for µs timings; large values need no exponent.
    return f"{value:.0f}" if abs(value) >= 1000 else f"{value:.3g}"


class Stats:
    """Raw samples of one measurement, with their summary.

    Parameters
    ----------
    samples : array_like of float
        The measurements, one per repeat (warm-up runs already excluded).
    label : str
        What was measured, for reprs, legends and JSON.
    unit : str
        Unit of the samples; microseconds unless said otherwise.

    Raises
    ------
    ValueError
        If there are no samples or a sample is not finite.
    """

    def __init__(self, samples: Iterable[float], label: str = "", unit: str = "µs") -> None:
        if not hasattr(samples, "__len__"):
            samples = list(samples)  # a generator would become a 0-d object array
        values = np.array(samples, dtype=np.float64).ravel()
        if values.size == 0:
            raise ValueError(
                f"Stats({label!r}) got no samples; run the measurement at least once "
                "(repeats >= 1) before summarizing it")
        if not np.all(np.isfinite(values)):
            raise ValueError(
                f"Stats({label!r}) got a NaN or infinite sample; a timer was read before it "
                "was started or an event was never recorded")
        values.flags.writeable = False  # summaries stay true to the samples they came from
        self.samples = values
        self.label = label
        self.unit = unit

    @classmethod
    def from_samples(cls, samples: Iterable[float], label: str = "", unit: str = "µs") -> "Stats":
        """Build a Stats from raw samples (same as the constructor)."""
        return cls(samples, label, unit)

    @property
    def n(self) -> int:
        """Number of samples."""
        return int(self.samples.size)

    @property
    def mean(self) -> float:
        """Arithmetic mean."""
        return float(np.mean(self.samples))

    @property
    def median(self) -> float:
        """Median, the same number as p50."""
        return self.percentile(50)

    @property
    def p50(self) -> float:
        """50th percentile."""
        return self.percentile(50)

    @property
    def p95(self) -> float:
        """95th percentile."""
        return self.percentile(95)

    @property
    def p99(self) -> float:
        """99th percentile."""
        return self.percentile(99)

    @property
    def min(self) -> float:
        """Smallest sample."""
        return float(np.min(self.samples))

    @property
    def max(self) -> float:
        """Largest sample."""
        return float(np.max(self.samples))

    @property
    def std(self) -> float:
        """Sample standard deviation (ddof=1); 0.0 for a single sample."""
        return float(np.std(self.samples, ddof=1)) if self.n > 1 else 0.0

    @property
    def iqr(self) -> float:
        """Interquartile range, p75 - p25."""
        return self.percentile(75) - self.percentile(25)

    def percentile(self, q: float) -> float:
        """The q-th percentile (0 <= q <= 100), linearly interpolated as numpy does."""
        if not 0 <= q <= 100:
            raise ValueError(f"percentile q={q} is outside 0..100; p95 is percentile(95)")
        return float(np.percentile(self.samples, q))

    def summary(self) -> dict:
        """Label, unit and every summary number, as plain Python values."""
        return {
            "label": self.label, "unit": self.unit, "n": self.n,
            "mean": self.mean, "median": self.median, "p95": self.p95, "p99": self.p99,
            "min": self.min, "max": self.max, "std": self.std, "iqr": self.iqr,
        }

    def to_json(self) -> dict:
        """:meth:`summary` plus the raw samples, ready for ``json.dumps``."""
        return {**self.summary(), "samples": self.samples.tolist()}

    def __len__(self) -> int:
        return self.n

    def __repr__(self) -> str:
        u = self.unit
        return (f"Stats({self.label!r}, n={self.n}, median={fmt_value(self.median)} {u}, "
                f"p95={fmt_value(self.p95)} {u}, p99={fmt_value(self.p99)} {u})")


def throughput(count: float, total_us: float) -> float:
    """Items per second when ``count`` items took ``total_us`` microseconds in all.

    Raises
    ------
    ValueError
        If ``total_us`` is not positive.
    """
    if not total_us > 0:
        raise ValueError(f"throughput needs a positive total time, got {total_us} µs")
    return count / (total_us * 1e-6)


def breakeven(setup_us: float, eager_iter_us: float, graph_iter_us: float) -> float | None:
    """Iterations after which a graph's one-off setup has paid for itself.

    ``setup_us / (eager_iter_us - graph_iter_us)``: from this many iterations on, setup plus
    graph iterations cost no more than eager iterations.

    Parameters
    ----------
    setup_us : float
        One-off cost of the graph (capture + instantiate, and upload if measured apart), µs.
    eager_iter_us, graph_iter_us : float
        Cost of one iteration without and with the graph, µs.

    Returns
    -------
    float or None
        None when the graph iteration is not cheaper: the graph never pays off.
    """
    for name, value in (("setup_us", setup_us), ("eager_iter_us", eager_iter_us),
                        ("graph_iter_us", graph_iter_us)):
        if not (math.isfinite(value) and value >= 0):
            raise ValueError(f"{name}={value} must be a finite time >= 0 µs")
    saving = eager_iter_us - graph_iter_us
    if saving <= 0:
        return None
    return setup_us / saving

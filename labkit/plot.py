"""``labkit.plot`` is `labkit.measure.plot`: this module puts that one in its place, so
``import labkit.plot`` and ``from labkit import plot`` give the same module, loaded on first use."""
import sys

from labkit.measure import plot as _plot

sys.modules[__name__] = _plot

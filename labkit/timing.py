"""``labkit.timing`` is `labkit.measure.timing`: this module puts that one in its place, so
``import labkit.timing`` and ``from labkit import timing`` give the same module, loaded on first use."""
import sys

from labkit.measure import timing as _timing

sys.modules[__name__] = _timing

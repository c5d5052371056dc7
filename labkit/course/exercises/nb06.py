"""Checks for notebook 06's exercise: remove the needless synchronizations from a loop."""
from __future__ import annotations

import numpy as np

from ...backend import rt
from ..._errors import check
from ..._handles import stream_handle
from ..._kernel import to_device
from ...measure.timing import measure
from ..workloads import add_one

__all__ = ["slow_update", "check_fewer_syncs", "N_KERNELS", "MAX_RATIO"]

N_KERNELS = 20
MAX_RATIO = 0.85   # the rewrite must take at most this fraction of the original's time


def slow_update(x, stream):
    """The exercise's starting point: N_KERNELS add_one launches, each followed by a readback
    "to watch progress" -- a copy to the host, which waits for the GPU every time."""
    for _ in range(N_KERNELS):
        add_one[4, 256, stream](x)
        check(rt.cudaStreamSynchronize(stream_handle(stream)), "synchronize")
        x.copy_to_host()


def check_fewer_syncs(fn, stream, repeat: int = 15) -> dict:
    """Check that ``fn(x, stream)`` computes what `slow_update` does, but faster.

    The result must equal the original's (every element +N_KERNELS) and its time until done
    (median over three rounds in alternating order, synchronized) must be at most ``MAX_RATIO``
    of the original's.
    Returns the two timings (µs) and their ratio.
    """
    start = np.arange(1024, dtype=np.float32)
    x = to_device(start)
    fn(x, stream)
    check(rt.cudaStreamSynchronize(stream_handle(stream)), "synchronize")
    got = x.copy_to_host()
    want = start + N_KERNELS
    if not np.array_equal(got, want):
        bad = int(np.count_nonzero(got != want))
        raise AssertionError(
            f"your function changed the result: {bad} of {got.size} elements differ from the "
            f"original's (x + {N_KERNELS}); e.g. element 0 is {got[0]}, expected {want[0]}. "
            "Keep every kernel launch; remove only the waits")
    xs, xf = to_device(start), to_device(start)
    # three rounds in alternating order, so the host's drift cannot favour either side
    runs = {"slow": (lambda: slow_update(xs, stream)), "fast": (lambda: fn(xf, stream))}
    got_us = {"slow": [], "fast": []}
    for r in range(3):
        for name in (("slow", "fast") if r % 2 == 0 else ("fast", "slow")):
            got_us[name].extend(measure(runs[name], warmup=2, repeat=repeat, sync=stream).samples)
    slow, fast = float(np.median(got_us["slow"])), float(np.median(got_us["fast"]))
    ratio = fast / slow
    if ratio > MAX_RATIO:
        raise AssertionError(
            f"your function takes {fast:.1f} µs against the original's {slow:.1f} µs "
            f"(ratio {ratio:.2f}, need ≤ {MAX_RATIO}): there is still a wait or a copy to the "
            "host after every kernel. Launch all kernels, then synchronize once")
    return {"original_us": slow, "yours_us": fast, "ratio": ratio}

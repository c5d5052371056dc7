"""Checks for notebook 06's exercise: remove the needless synchronizations from a loop."""
from __future__ import annotations

import numpy as np

from ... import _hostspans
from ...backend import rt
from ..._errors import check
from ..._handles import stream_handle
from ..._kernel import to_device
from ...measure.timing import measure
from ..workloads import add_one

__all__ = ["slow_update", "check_fewer_syncs", "N_KERNELS", "MAX_RATIO", "MAX_SYNCS"]

N_KERNELS = 20
MAX_RATIO = 0.85   # the rewrite must take at most this fraction of the original's time
MAX_SYNCS = 2      # synchronizations allowed in one call (the one the caller needs, and a spare)


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
    of the original's. It may synchronize through labkit (``Stream.synchronize``,
    ``Event.synchronize``, ``labkit.synchronize``) at most ``MAX_SYNCS`` times per call: dropping
    the copy but keeping a synchronize after every kernel is faster (about 0.74 of the original
    on the H200 and on the simulator) and still wrong.
    Returns the two timings (µs), their ratio and the synchronizations counted in one call.
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
    syncs = _syncs_in_one_call(fn, to_device(start), stream)
    if syncs > MAX_SYNCS:
        raise AssertionError(
            f"your function still synchronizes after every kernel ({syncs} synchronizations "
            f"for {N_KERNELS} kernels, at most {MAX_SYNCS} allowed): each one makes the CPU wait "
            "for the GPU and the GPU for the CPU's next launch. Launch all kernels, then "
            "synchronize once")
    return {"original_us": slow, "yours_us": fast, "ratio": ratio, "syncs": syncs}


def _syncs_in_one_call(fn, x, stream) -> int:
    """How many times ``fn(x, stream)`` synchronizes through labkit, counted by labkit's own
    host-span recorder (the one timelines use, the same on both backends)."""
    _hostspans.start()
    try:
        fn(x, stream)
    finally:
        spans = _hostspans.stop()
    check(rt.cudaStreamSynchronize(stream_handle(stream)), "synchronize")
    return sum(1 for sp in spans if sp.kind == "sync")

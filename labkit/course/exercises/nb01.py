"""Check for notebook 01's exercise: find where the GPU, not the host, becomes the bottleneck.

The learner picks ``iters`` for ``busy(x, iters)``. Below the crossover (a kernel shorter than
one eager launch) the GPU waits for the host; far above it any ``iters`` keeps the GPU busy, so
a blind huge number would pass a check that only looks at the busy fraction. The check measures
both ends itself, on this machine: the eager launch cost of `busy` and its GPU time per loop
iteration, and asks for a kernel that keeps the GPU busy and runs at most `MAX_LAUNCHES` times
one eager launch.
"""
from __future__ import annotations

import numpy as np
import labkit
from labkit import timing
from labkit.course import workloads
from labkit.course.kernels_extra import kernel_gpu_us

__all__ = ["check_gpu_bound", "gpu_busy_fraction", "launch_and_iteration_us", "MAX_LAUNCHES"]

MAX_LAUNCHES = 5.0      # a kernel at most this many eager launches long is "near the crossover"
_PROBE = 10_000


def _setup():
    return labkit.Stream(), labkit.to_device(np.zeros(1024, np.float32))


def gpu_busy_fraction(iters: int, k: int = 10, repeat: int = 5) -> tuple[float, float, float]:
    """``(busy fraction, GPU µs per kernel, wall µs per kernel)`` of ``k`` eager `busy` launches.

    GPU µs per kernel comes from the same kernels replayed back to back in a graph (so no host
    gaps are counted); wall µs per kernel from eager launches plus one synchronize, on the host
    clock. Near 1, the GPU never waits for the host.
    """
    s, x = _setup()
    try:
        def run():
            for _ in range(k):
                workloads.busy[4, 256, s](x, iters)
        wall = timing.measure(run, sync=s, per=k, warmup=1, repeat=repeat).median
        gpu = kernel_gpu_us(lambda st: workloads.busy[4, 256, st](x, iters), s, k=k,
                            repeat=repeat)
    finally:
        s.close()
    return min(gpu / wall, 1.0), gpu, wall


def launch_and_iteration_us(k: int = 10, repeat: int = 5) -> tuple[float, float, float]:
    """``(eager launch µs, GPU µs of busy(x, 1), GPU µs per further loop iteration)``.

    The launch cost is the host time per eager launch of a one-iteration `busy` (submitted
    without waiting, so the GPU's time does not count); the iteration cost comes from the GPU
    times at 1 and at 10,000 iterations, replayed back to back.
    """
    s, x = _setup()
    try:
        def submit():
            for _ in range(k):
                workloads.busy[4, 256, s](x, 1)
        launch = timing.measure(submit, per=k, warmup=1, repeat=repeat).median
        s.synchronize()
        one = kernel_gpu_us(lambda st: workloads.busy[4, 256, st](x, 1), s, k=k, repeat=repeat)
        probe = kernel_gpu_us(lambda st: workloads.busy[4, 256, st](x, _PROBE), s, k=k,
                              repeat=repeat)
    finally:
        s.close()
    return launch, one, max(probe - one, 0.0) / (_PROBE - 1)


def check_gpu_bound(iters, threshold: float = 0.8) -> None:
    """Pass if ``busy(x, iters)`` keeps the GPU busy ≥ ``threshold`` of the time under eager
    launches, with a kernel no longer than `MAX_LAUNCHES` eager launches."""
    if isinstance(iters, bool) or not isinstance(iters, (int, np.integer)):
        raise ValueError(f"iters must be an int (loop iterations per thread), got {iters!r}")
    if not 1 <= iters <= 2_000_000:
        raise ValueError(f"iters={iters} is out of range: pick 1 to 2,000,000 (loop iterations "
                         "per thread)")
    launch, one, per_iter = launch_and_iteration_us()
    kernel = one + per_iter * (int(iters) - 1)       # predicted: a long kernel is not run
    if kernel > MAX_LAUNCHES * launch:
        raise AssertionError(
            f"at iters={iters} a kernel runs about {kernel:,.0f} µs, {kernel / launch:,.1f} times "
            f"one eager launch ({launch:.1f} µs here). The GPU is busy, but this is well past the "
            "crossover, the point where a kernel first runs about as long as its launch. Find "
            f"that point and stay within {MAX_LAUNCHES:g}× of it: there, graphs stop paying off")
    frac, gpu, wall = gpu_busy_fraction(int(iters))
    if frac < threshold:
        raise AssertionError(
            f"at iters={iters} a kernel runs {gpu:.1f} µs on the GPU but each launch costs "
            f"{wall:.1f} µs of wall time: the GPU is busy only {frac:.0%} of the time, so the host "
            f"is still the bottleneck. Make each kernel longer than the launch cost (raise iters)")
    print(f"correct: at iters={iters} a kernel runs {gpu:.1f} µs, {gpu / launch:.1f}× one eager "
          f"launch, and keeps the GPU busy {frac:.0%} of the time: here the host has stopped "
          "being the bottleneck")

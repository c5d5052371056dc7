"""Check for notebook 01's exercise: make the GPU, not the host, the bottleneck."""
from __future__ import annotations

import numpy as np

__all__ = ["check_gpu_bound", "gpu_busy_fraction"]


def gpu_busy_fraction(iters: int, k: int = 10, repeat: int = 5) -> tuple[float, float, float]:
    """``(busy fraction, GPU µs per kernel, wall µs per kernel)`` of ``k`` eager `busy` launches.

    GPU µs per kernel comes from the same kernels replayed back to back in a graph (so no host
    gaps are counted); wall µs per kernel from eager launches plus one synchronize, on the host
    clock. Near 1, the GPU never waits for the host.
    """
    import labkit
    from labkit import timing
    from labkit.course import workloads
    from labkit.course.kernels_extra import kernel_gpu_us
    s = labkit.Stream()
    x = labkit.to_device(np.zeros(1024, np.float32))
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


def check_gpu_bound(iters, threshold: float = 0.8) -> None:
    """Pass if eager launches of ``busy(x, iters)`` keep the GPU busy ≥ ``threshold`` of the time."""
    if isinstance(iters, bool) or not isinstance(iters, (int, np.integer)):
        raise ValueError(f"iters must be an int (loop iterations per thread), got {iters!r}")
    if not 1 <= iters <= 2_000_000:
        raise ValueError(f"iters={iters} is out of range: pick 1 to 2,000,000 (a bigger loop "
                         "just makes the notebook slow)")
    frac, gpu, wall = gpu_busy_fraction(int(iters))
    if frac < threshold:
        raise AssertionError(
            f"at iters={iters} a kernel runs {gpu:.1f} µs on the GPU but each launch costs "
            f"{wall:.1f} µs of wall time: the GPU is busy only {frac:.0%} of the time, so the host "
            f"is still the bottleneck. Make each kernel longer than the launch cost (raise iters)")
    print(f"correct: at iters={iters} the GPU is busy {frac:.0%} of the time "
          f"({gpu:.1f} µs of GPU work per {wall:.1f} µs launch + wait)")

"""Notebook 06's claims: warm-up against steady state, a request loop under the queue model,
needless synchronizations, where a graph does not pay, and comparisons in rounds."""
from __future__ import annotations

from labkit.backends import is_gpu
from labkit.measure.claims import claim

__all__ = ["first_request_pays_the_jit", "first_graph_launch_dearer", "graph_p99_below_eager",
           "graph_less_cpu_launching", "graph_serves_more_at_equal_load", "syncs_in_order",
           "long_kernel_graph_saves_little", "one_kernel_graph_used_once_loses",
           "recapture_saves_at_most_half", "rounds_favour_one_sync", "rounds_see_through_the_drift",
           "free_waits_for_the_device"]


@claim("the first request (with the JIT) costs over 5× a steady one",
       why="the kernel was already compiled (numba's cache), or a busy host slowed the steady "
           "requests", look="the two times printed above")
def first_request_pays_the_jit(first_us, steady_us):
    if not is_gpu:       # the simulator compiles nothing: there is no JIT to see
        return True, f"first {first_us:.0f} µs, steady {steady_us:.0f} µs (no JIT on the simulator)"
    return first_us > 5 * steady_us, f"first {first_us:.0f} µs, steady {steady_us:.0f} µs"


@claim("a graph's first launch (it pays the upload) costs more than a steady one",
       why="this driver uploads at instantiation already, or a busy host stalled a steady launch",
       look="the bar chart")
def first_graph_launch_dearer(first_us, steady_us):
    return first_us > steady_us, f"first {first_us:.1f} µs, steady {steady_us:.1f} µs"


@claim("under the same arrivals, the graph server's p99 latency is below eager's",
       why="your GPU's kernels take longer than a launch here, so both servers wait for the GPU",
       look="the tails of the CDF")
def graph_p99_below_eager(graph_p99, eager_p99):
    return graph_p99 < eager_p99, f"p99 graph {graph_p99:.0f} µs, eager {eager_p99:.0f} µs"


@claim("the graph server spends less CPU submitting work than eager",
       why="a busy host stalled the graph server's launches", look="the CPU(launch) column")
def graph_less_cpu_launching(graph_share, eager_share):
    return (graph_share < eager_share,
            f"CPU(launch) graph {graph_share:.1%}, eager {eager_share:.1%}")


@claim("at the same load, the graph server serves over twice the requests per second",
       why="your GPU's kernels take longer than a launch here, so the GPU, not the host, sets "
           "how fast both servers can go", look="the req/s column")
def graph_serves_more_at_equal_load(graph_rps, eager_rps):
    return graph_rps > 2 * eager_rps, f"graph {graph_rps:.0f} req/s, eager {eager_rps:.0f} req/s"


@claim("sync after each > one sync at end > graph",
       why="your GPU's kernels take longer than a launch here, so all three wait for the GPU and "
           "differ little", look="the three timelines below")
def syncs_in_order(times):
    a, b, c = times.values()
    return a > b > c, ", ".join(f"{k} {v:.0f} µs" for k, v in times.items())


@claim("for one long kernel a graph saves under 5%",
       why="a launch on this host costs a sizeable part of the kernel (a very slow or busy host)",
       look="the two long-kernel bars")
def long_kernel_graph_saves_little(eager_us, graph_us):
    gain = 1 - graph_us / eager_us
    return gain < 0.05, f"eager {eager_us:.0f} µs, graph {graph_us:.0f} µs ({gain:.1%} saved)"


@claim("a one-kernel graph used once costs more than the eager launch",
       why="this host's capture and instantiation are unusually cheap next to a launch",
       look="the two one-kernel bars")
def one_kernel_graph_used_once_loses(graph_us, eager_us):
    return graph_us > eager_us, f"capture+instantiate+launch {graph_us:.1f} µs, eager {eager_us:.1f} µs"


@claim("re-capturing per request saves at most half of eager's time",
       why="recording a launch into a capture is much cheaper than launching it on this host",
       look="the two 'varying' bars")
def recapture_saves_at_most_half(recapture_us, eager_us):
    return (recapture_us > 0.5 * eager_us,
            f"re-capture {recapture_us:.0f} µs, eager {eager_us:.0f} µs per request")


@claim("one synchronize at the end beats a synchronize after each kernel, on the median of the "
       "within-round ratios",
       why="the host was so loaded that its drift outweighed the synchronizations in most "
           "rounds; run the cell again on a quieter machine", look="figure 06-6, lower panel")
def rounds_favour_one_sync(ratios):
    import numpy as np
    return float(np.median(ratios)) > 1, "per round: " + ", ".join(f"{q:.2f}×" for q in ratios)


@claim("on a drifting host, the naive ratio is led astray and the rounds' median stays near the "
       "yardstick measured without the drift",
       why="the drift was too small against the host's own noise, or the host's own slow stretch "
           "fell on the rounds", look="the ratios printed above and the lower panel")
def rounds_see_through_the_drift(rounds_median, naive_ratio, yardstick):
    import numpy as np
    off_rounds = abs(np.log(rounds_median / yardstick))
    off_naive = abs(np.log(naive_ratio / yardstick))
    return off_naive > 0.15 and off_rounds < off_naive / 2, (
        f"rounds {rounds_median:.2f}×, naive {naive_ratio:.2f}×, yardstick {yardstick:.2f}×")


@claim("a request that frees its workspace waits for the background job; one whose workspace was "
       "allocated at start-up does not",
       why="the background job finished before the request's free (a faster GPU, or a slower "
           "host), or the driver did not wait in cudaFree", look="the latencies printed above")
def free_waits_for_the_device(per_request_us, up_front_us, job_us):
    return per_request_us > 0.8 * job_us and up_front_us < 0.5 * job_us, (
        f"per request {per_request_us:.0f} µs, at start-up {up_front_us:.0f} µs, "
        f"job {job_us:.0f} µs")

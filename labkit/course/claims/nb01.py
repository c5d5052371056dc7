"""Notebook 01's timing claims: eager launches against a graph, prepared launches, long kernels.

The course's model: an eager numba launch costs the host a fixed time per kernel (numba's
dispatch plus the driver's launch), a prepared launch only the driver's, and a graph replay
about the tiny kernel's own run time plus a small gap between nodes. Every claim below holds
while a tiny kernel runs well under a launch; on a GPU whose tiny kernels take as long as a
launch, the replay runs at the kernels' pace and the gaps between the three shrink.
"""
from __future__ import annotations

from labkit.measure.claims import claim

__all__ = ["graph_cheaper_per_kernel", "graph_cost_falls_with_k", "eager_kernels_spaced_out",
           "eager_is_host_bound", "graph_launch_is_cheap_for_the_host",
           "prepared_cheaper_than_numba", "graph_beats_prepared", "long_kernels_graph_saves_little",
           "long_kernels_keep_the_gpu_busy"]

_SLOW_KERNELS = ("your GPU's tiny kernels take about as long as a launch here, so a replay runs "
                 "at the kernels' own pace and graphs save less")


# eager ≈ one numba launch, graph ≈ the kernel + its node gap: a fifth leaves a wide margin and
# fails once a tiny kernel runs longer than about a fifth of an eager launch
@claim("at the largest K a graph costs under a fifth of eager launches per kernel",
       why=_SLOW_KERNELS, look="the eager/graph column: where it stops growing with K")
def graph_cheaper_per_kernel(eager_us, graph_us):
    return eager_us > 5 * graph_us, (f"eager {eager_us:.2f} µs, graph {graph_us:.2f} µs "
                                     "per kernel")


@claim("the graph's cost per kernel falls as K grows",
       why="the one launch and synchronize shared by the K kernels are small next to this GPU's "
           "kernel time", look="the graph curve in the plot")
def graph_cost_falls_with_k(first_us, last_us, k_first, k_last):
    return last_us < first_us, f"{first_us:.2f} µs at K={k_first}, {last_us:.2f} µs at K={k_last}"


@claim("eager kernels start over 5× further apart than graph kernels",
       why=_SLOW_KERNELS + " (the GPU, not the host, spaces them)", look="the two timelines")
def eager_kernels_spaced_out(step_eager_us, step_graph_us):
    return step_eager_us > 5 * step_graph_us, (f"a kernel every {step_eager_us:.2f} µs eager, "
                                               f"every {step_graph_us:.2f} µs in the graph")


@claim("eager launches are host-bound: submitting takes over 70% of finishing",
       why="your GPU's kernels take longer than a launch here, so the GPU is the bottleneck",
       look="the bar chart: submit only against submit + sync")
def eager_is_host_bound(submit_us, finish_us):
    return submit_us > 0.7 * finish_us, (f"submit {submit_us:.2f} µs, submit + sync "
                                         f"{finish_us:.2f} µs per kernel")


@claim("one graph launch costs the host under a tenth of eager launches per kernel",
       why="this host's graph launch is unusually dear, or a busy host stalled the measurement",
       look="the 'one graph launch' line above")
def graph_launch_is_cheap_for_the_host(graph_submit_us, eager_submit_us):
    return graph_submit_us * 10 < eager_submit_us, (
        f"graph {graph_submit_us:.3f} µs, eager {eager_submit_us:.2f} µs of host time per kernel")


@claim("a prepared launch costs under 0.6× numba's eager launch",
       why="your GPU's kernels take longer than a prepared launch here, so both wait for the "
           "GPU and the saved dispatch does not show",
       look="the three bars and the timelines below")
def prepared_cheaper_than_numba(prepared_us, eager_us):
    return prepared_us < 0.6 * eager_us, (f"prepared {prepared_us:.2f} µs, numba "
                                          f"{eager_us:.2f} µs per kernel")


# prepared ≈ one cuLaunchKernel, graph ≈ kernel + gap: once a kernel outlasts a prepared launch
# both run at the GPU's pace and tie
@claim("a graph replay beats even prepared launches per kernel",
       why="your GPU's kernels take longer than a prepared launch here, so both run at the "
           "GPU's pace and tie", look="the three timelines")
def graph_beats_prepared(graph_us, prepared_us):
    return graph_us < prepared_us, (f"graph {graph_us:.2f} µs, prepared {prepared_us:.2f} µs "
                                    "per kernel")


@claim("on long kernels (a few hundred µs) a graph saves under 15%",
       why="a launch on this host costs a sizeable part of the kernel (a very slow or busy host)",
       look="the timeline below: gaps between the long kernels")
def long_kernels_graph_saves_little(eager_us, graph_us):
    return eager_us < 1.15 * graph_us, (f"eager {eager_us:.1f} µs, graph {graph_us:.1f} µs "
                                        "per kernel")


@claim("long eager kernels keep the GPU over 90% busy",
       why="this host's launches are slow or were stalled, so the GPU waited",
       look="gaps on the timeline")
def long_kernels_keep_the_gpu_busy(busy_fraction):
    return busy_fraction > 0.9, f"GPU busy {busy_fraction:.0%} of the time"

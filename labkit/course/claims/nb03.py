"""Notebook 03's claims: what a graph costs (capture, instantiate, upload, launch) and when it pays."""
from __future__ import annotations

from labkit.measure.claims import claim

__all__ = ["instantiate_grows_with_nodes", "steady_launch_below_capture", "first_launch_costs_more",
           "upload_takes_the_first_launchs_extra", "pays_off_within_10", "explicit_build_cheaper",
           "same_graph_same_launch", "long_kernel_graph_barely_helps", "tiny_kernel_graph_helps",
           "one_launch_at_a_time",
           "graph_close_to_eager", "fused_far_below_graph"]


@claim("instantiating 1000 nodes costs over 5× instantiating one",
       why="this driver's fixed cost per instantiation is large next to its cost per node",
       look="the instantiate curve")
def instantiate_grows_with_nodes(one_us, thousand_us):
    return thousand_us > 5 * one_us, f"{one_us:.1f} µs for 1 node, {thousand_us:.1f} µs for 1000"


@claim("at 1000 nodes a steady launch is cheaper than capturing the same work",
       why="on this host a capture records launches unusually fast, or the launch was stalled",
       look="the capture and steady launch curves")
def steady_launch_below_capture(steady_us, capture_us):
    return steady_us < capture_us, f"steady launch {steady_us:.1f} µs, capture {capture_us:.1f} µs"


@claim("a fresh executable's first launch costs more than a steady one",
       why="this driver uploads the executable at instantiation already, or a busy host stalled "
           "a steady launch", look="the first and the steady bar")
def first_launch_costs_more(first_us, steady_us):
    return first_us > steady_us, f"first {first_us:.1f} µs, steady {steady_us:.1f} µs"


@claim("after an upload, the first launch is cheaper than a first launch without one",
       why="this driver uploads the executable at instantiation already, or a busy host stalled "
           "the launch", look="the launch part of the stacked bar")
def upload_takes_the_first_launchs_extra(after_upload_us, first_us):
    return after_upload_us < first_us, f"after upload {after_upload_us:.1f} µs, without {first_us:.1f} µs"


@claim("the chain's graph pays off within 10 iterations",
       why="your GPU's kernels take about as long as a launch here, so each iteration saves "
           "little and the setup takes longer to pay back", look="the amortization plot")
def pays_off_within_10(breakeven, setup_us, saving_us):
    shown = "never" if breakeven is None else f"after {breakeven:.2f} iterations"
    return (breakeven is not None and breakeven < 10,
            f"break-even {shown} (setup {setup_us:.0f} µs, saving {saving_us:.0f} µs per iteration)")


@claim("building the chain node by node is cheaper than capturing it from Python",
       why="numba's launch path is unusually fast here, or a busy host stalled the explicit build",
       look="the two build times")
def explicit_build_cheaper(explicit_us, capture_us):
    return explicit_us < capture_us, f"explicit {explicit_us:.0f} µs, capture {capture_us:.0f} µs"


@claim("the same graph launches at the same cost (within 2×) however it was built",
       why="a busy host stalled one of the two measurements", look="the two launch times")
def same_graph_same_launch(explicit_us, captured_us):
    ratio = explicit_us / captured_us
    return 0.5 < ratio < 2, f"explicit {explicit_us:.1f} µs, captured {captured_us:.1f} µs ({ratio:.2f}×)"


@claim("for one long kernel a graph changes the time by under 25 %",
       why="a launch on this host costs a sizeable part of the kernel (a very slow or busy host)",
       look="the 'one long kernel' line")
def long_kernel_graph_barely_helps(eager_us, graph_us):
    return abs(eager_us - graph_us) < 0.25 * eager_us, f"eager {eager_us:.1f} µs, graph {graph_us:.1f} µs"


@claim("for one tiny kernel, a one-node graph is cheaper than numba's eager launch",
       why="numba's dispatch is unusually fast here, or a busy host stalled the graph launch",
       look="the 'one tiny kernel' line")
def tiny_kernel_graph_helps(eager_us, graph_us):
    return graph_us < eager_us, f"eager {eager_us:.1f} µs, graph {graph_us:.1f} µs"


@claim("one executable launched on two streams runs its launches one after another: it takes "
       "over 1.4× as long as two executables of the same graph",
       why="the kernel is short next to a launch on this machine, so the launches' own cost "
           "hides the order; or a busy host stalled one measurement",
       look="the two timelines")
def one_launch_at_a_time(one_executable_us, two_executables_us):
    return (one_executable_us > 1.4 * two_executables_us,
            f"one executable {one_executable_us:.1f} µs, two executables {two_executables_us:.1f} µs")


@claim("the graph of 50 kernels takes about as long as launching them eagerly (within 15 %)",
       why="each kernel here is short next to its launch (a small array or a very fast GPU), so "
           "the graph does save launches; or a busy host stalled one measurement",
       look="the bar chart")
def graph_close_to_eager(graph_us, eager_us):
    return abs(graph_us - eager_us) < 0.15 * eager_us, f"graph {graph_us:.1f} µs, eager {eager_us:.1f} µs"


@claim("the fused kernel takes under a fifth of the graph of small kernels",
       why="your GPU's memory is fast next to its launch and kernel overheads, so the saved "
           "round trips matter less", look="the bar chart")
def fused_far_below_graph(fused_us, graph_us):
    return 5 * fused_us < graph_us, f"fused {fused_us:.1f} µs, graph {graph_us:.1f} µs"

"""Notebook 10's claims: the same ideas in PyTorch, vLLM and llama.cpp, and in the tracing tools."""
from __future__ import annotations

from labkit.measure.claims import claim

__all__ = ["piecewise_between", "graphed_call_cheaper", "nvtx_range_cheap", "device_decision_fastest"]


@claim("a piecewise step costs more per token than the full graph and less than eager launches",
       why="kernels here take longer than their launches, so the eager attention launches hide "
           "behind the GPU's work and the three rows come closer together",
       look="the tokens-per-second bars and the eager launches on the piecewise timeline")
def piecewise_between(eager_us, piecewise_us, graph_us):
    holds = graph_us < piecewise_us < eager_us
    return holds, (f"per token: eager {eager_us:.0f} µs, piecewise {piecewise_us:.0f} µs, "
                   f"full graph {graph_us:.0f} µs")


@claim("one graphed call (copy in, one replay) costs less than calling the function eagerly",
       why="the copy into the static input costs more here than the launches it saves; with more "
           "kernels per call the replay wins",
       look="the kernels per call printed above")
def graphed_call_cheaper(eager_us, graphed_us):
    return graphed_us < eager_us, f"eager {eager_us:.1f} µs, graphed {graphed_us:.1f} µs per call"


@claim("an NVTX range costs a small fraction of a microsecond when no profiler listens",
       why="this Python or this machine is slow; NVTX ranges then cost more than the course "
           "expects, but still only with a profiler attached do they record anything",
       look="the cost per range printed above")
def nvtx_range_cheap(range_us):
    return range_us < 1.0, f"{range_us:.3f} µs per range (push and pop)"


@claim("a step whose decision stays on the device (one graph, no wait) costs less than the step "
       "split into graphs around the host's decision, which costs less than deciding eagerly",
       why="kernels here take longer than a launch and a wait, so the GPU's work dominates all "
           "three", look="the three bars")
def device_decision_fastest(eager_us, split_us, device_us):
    return (device_us < split_us < eager_us,
            f"per step: eager {eager_us:.1f} µs, split {split_us:.1f} µs, "
            f"on the device {device_us:.1f} µs")

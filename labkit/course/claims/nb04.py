"""Notebook 04's claims: independent branches on several streams, eagerly and as one graph."""
from __future__ import annotations

from labkit.measure.claims import claim

__all__ = ["streams_beat_one_stream", "graph_beats_one_stream", "graph_beats_eager_streams"]


@claim("independent branches on several streams finish sooner than on one stream",
       why="your GPU is already full with one branch (kernels too big to run side by side)",
       look="the timelines below")
def streams_beat_one_stream(several_us, one_us):
    return several_us < one_us, f"several streams {several_us:.1f} µs, one stream {one_us:.1f} µs"


@claim("the graph of branches beats running them all on one stream",
       why="your GPU is already full with one branch (kernels too big to run side by side), "
           "or a busy host stalled the graph's measurement", look="the timelines below")
def graph_beats_one_stream(graph_us, one_us):
    return graph_us < one_us, f"graph {graph_us:.1f} µs, one stream {one_us:.1f} µs"


@claim("the graph of branches is no slower than launching the same branches eagerly",
       why="launches are cheap on this host next to the kernels, so the eager branches start "
           "almost together too; or a busy host stalled the graph's measurement",
       look="the staircase in the eager timeline")
def graph_beats_eager_streams(graph_us, eager_us):
    return graph_us <= 1.05 * eager_us, f"graph {graph_us:.1f} µs, eager on several streams {eager_us:.1f} µs"

"""Notebook 05's claims: what each way of changing a graph costs, llama.cpp's rules against eager,
and bucketed graphs against eager launches."""
from __future__ import annotations

from labkit.measure.claims import claim

__all__ = ["reinstantiate_grows_with_nodes", "update_instantiate_recapture_in_order",
           "graph_wins_on_a_stable_step", "rule_beats_recapturing_every_step",
           "warm_up_recovers_after_a_burst",
           "buckets_beat_eager", "best_spacing_in_between"]


@claim("re-instantiating 1000 nodes costs over 5× re-instantiating one",
       why="this driver's fixed cost per instantiation is large next to its cost per node",
       look="the re-instantiate curve")
def reinstantiate_grows_with_nodes(one_us, thousand_us):
    return thousand_us > 5 * one_us, f"{one_us:.1f} µs at 1 node, {thousand_us:.1f} µs at 1000"


@claim("at the largest size: exec update < re-instantiate < re-capture + instantiate",
       why="this driver's exec update is dear next to its instantiation, or a busy host stalled "
           "one measurement", look="the four curves at the right-hand end")
def update_instantiate_recapture_in_order(update_us, instantiate_us, recapture_us):
    return (update_us < instantiate_us < recapture_us,
            f"exec update {update_us:.0f} µs, re-instantiate {instantiate_us:.0f} µs, "
            f"re-capture + instantiate {recapture_us:.0f} µs")


@claim("on a step that never changes, the graph costs under half of eager launches",
       why="your GPU's kernels take longer than a launch here, so both wait for the GPU",
       look="the left group of bars")
def graph_wins_on_a_stable_step(graph_us, eager_us):
    return graph_us < 0.5 * eager_us, f"graph {graph_us:.1f} µs, eager {eager_us:.1f} µs per step"


@claim("on a step that changes every time, llama.cpp's rule costs less than re-capturing "
       "every step",
       why="on this host a capture and an instantiation cost unusually little next to eager "
           "launches, or a busy host stalled one measurement", look="the right group of bars")
def rule_beats_recapturing_every_step(rule_us, recapture_us, eager_us):
    return (rule_us < recapture_us,
            f"rule {rule_us:.1f} µs, re-capture every change {recapture_us:.1f} µs, "
            f"eager {eager_us:.1f} µs per step")


@claim("after a burst of changes, the warm-up rule serves the stable steps that follow faster "
       "than the first rule, which turned graphs off",
       why="on this host a replay costs about what eager launches of the same kernels cost, so "
           "getting graphs back saves nothing", look="the right-hand panel")
def warm_up_recovers_after_a_burst(warm_up_us, first_rule_us):
    return (warm_up_us < first_rule_us,
            f"warm-up {warm_up_us:.1f} µs, first rule {first_rule_us:.1f} µs per step")


@claim("the bucketed graphs serve the stream faster than eager launches",
       why="your GPU's kernels take longer than a launch here, so the rows a bucket pads cost "
           "more GPU time than the graph saves in launches",
       look="the padding column and the latency curves")
def buckets_beat_eager(buckets_ms, eager_ms):
    return buckets_ms < eager_ms, f"buckets {buckets_ms:.1f} ms, eager {eager_ms:.1f} ms"


@claim("the fastest bucket spacing lies between the closest and the farthest",
       why="on this machine captures and padding weigh differently: with slow kernels padding "
           "dominates, with a slow host captures do", look="the curve's lowest point")
def best_spacing_in_between(closest, best, farthest):
    return (closest["total"] > best["total"] < farthest["total"],
            f"r = {closest['r']}: {closest['total']:.1f} ms, best r = {best['r']}: "
            f"{best['total']:.1f} ms, r = {farthest['r']}: {farthest['total']:.1f} ms")

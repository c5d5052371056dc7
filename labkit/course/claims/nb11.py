"""Notebook 11's claims: what many captured sizes cost, two ranks capturing, a stale input found,
what each way of speculative decoding costs."""
from __future__ import annotations

from labkit.measure.claims import claim

__all__ = ["largest_first_holds_one_buffer", "only_warm_thread_local_captures_every_rank",
           "stale_input_found", "speculative_costs"]


@claim("captured largest first, the shared pool holds the largest size's buffer and no more, "
       "well under a buffer per graph",
       why="this device's allocator rounds or caches allocations, so free memory fell by more "
           "than the buffers themselves", look="the memory panel's lowest line")
def largest_first_holds_one_buffer(pool_mib, largest_mib, per_graph_mib):
    holds = abs(pool_mib - largest_mib) <= 0.05 * largest_mib + 2.0 and pool_mib < per_graph_mib / 2
    return holds, (f"pool, largest first: {pool_mib:.1f} MiB; the largest buffer "
                   f"{largest_mib:.1f} MiB; a buffer per graph {per_graph_mib:.1f} MiB")


@claim("only a warm-up with thread-local capture lets both ranks capture while the loader "
       "allocates",
       why="this CUDA version treats another thread's allocation, or an allocation in the "
           "capture, differently from the documented capture modes",
       look="the grid's columns")
def only_warm_thread_local_captures_every_rank(outcomes):
    every = {c: all(v == "ok" for v in o.values()) for c, o in outcomes.items()}
    good = [c for c, ok in every.items() if ok]
    return good == [(True, "thread_local")], (
        "all ok in: " + (", ".join(f"{m} {'with' if w else 'without'} warm-up" for w, m in good)
                         or "none"))


@claim("the graph fed new input arrays computes from the captured one, the copy-in fix is "
       "exact, and the eager run disagrees with the graph",
       why="the new arrays happened to be allocated where the captured input was", look="the "
           "two lines of the figure")
def stale_input_found(stale_errors, copied_errors, graph_out, eager_out):
    holds = max(stale_errors) > 0 and max(copied_errors) == 0 and graph_out != eager_out
    return holds, (f"largest error: new arrays {max(stale_errors)}, copy-in {max(copied_errors)};"
                   f" out[0] graph {graph_out}, eager {eager_out}")


@claim("padding verifies the most positions per token and is the slowest; the device loop, "
       "with the work of a graph per draft length and no host wait per step, is the fastest",
       why="on this device a host wait per step costs less than a conditional node's iteration, "
           "or padded positions cost less than their share of a step",
       look="both panels of the figure")
def speculative_costs(per_token_us, steps_per_token, variants):
    per_length, padded, loop = variants
    holds = (steps_per_token[padded] > steps_per_token[per_length] == steps_per_token[loop]
             and per_token_us[padded] > per_token_us[per_length] > per_token_us[loop])
    return holds, ("µs per token: " + ", ".join(f"{v} {per_token_us[v]:.1f}" for v in variants)
                   + "; positions per token: "
                   + ", ".join(f"{v} {steps_per_token[v]:.2f}" for v in variants))

"""Notebook 11's claims: what many captured sizes cost, two ranks capturing, a stale input found."""
from __future__ import annotations

from labkit.measure.claims import claim

__all__ = ["largest_first_holds_one_buffer", "only_warm_thread_local_captures_every_rank",
           "stale_input_found"]


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

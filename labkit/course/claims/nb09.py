"""Notebook 09's claims: what the graph-memory footprint shows (both backends)."""
from __future__ import annotations

from labkit.measure.claims import claim

__all__ = ["footprint_holds_the_allocation", "trim_gives_back_what_is_unused"]


@claim("a graph allocation that is still live counts in the graph-memory footprint",
       why="the allocation was freed inside the graph (a free node), or another graph freed it",
       look="the footprint bars above: 'used' after the launch")
def footprint_holds_the_allocation(used_before, used_live, nbytes):
    return used_live >= used_before + nbytes, (
        f"used {used_before} B before the launch, {used_live} B with the allocation live "
        f"({nbytes} B allocated)")


@claim("after the free, cudaDeviceGraphMemTrim gives the reserved memory back",
       why="an executable with a live allocation still holds its memory, or the driver keeps "
           "some reserve it does not trim",
       look="the footprint bars above: 'reserved' after the trim")
def trim_gives_back_what_is_unused(reserved_before_trim, reserved_after_trim):
    return reserved_after_trim < reserved_before_trim, (
        f"reserved {reserved_before_trim} B before the trim, {reserved_after_trim} B after")

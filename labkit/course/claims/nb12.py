"""Notebook 12's claims: a disabled kernel's time gone, an urgent kernel first with node
priorities, a programmatic edge closing the gap between two kernels."""
from __future__ import annotations

from labkit.measure.claims import claim

__all__ = ["disabled_kernel_costs_nothing", "priority_puts_urgent_first", "pdl_closes_the_gap"]


@claim("with the logging kernel disabled, a launch takes a small part of its time with it on",
       why="on this GPU the logging kernel is short next to the model's steps",
       look="the two timelines")
def disabled_kernel_costs_nothing(on_us, off_us):
    return off_us < on_us / 2, f"a launch with logging on {on_us:.1f} µs, off {off_us:.1f} µs"


@claim("with node priorities the urgent kernel finishes well before it does without them",
       why="this GPU runs the branches' blocks side by side, so none of them waits for another",
       look="where the urgent kernel sits on each timeline")
def priority_puts_urgent_first(plain_us, priority_us):
    return priority_us < plain_us / 2, (f"urgent kernel done after {plain_us:.1f} µs without "
                                        f"priorities, {priority_us:.1f} µs with them")


@claim("over a programmatic edge the gap between the two kernels closes",
       why="this GPU or driver keeps a gap after the first kernel's last block exits",
       look="the gap between the two kernels on each timeline")
def pdl_closes_the_gap(plain_gap_us, pdl_gap_us):
    return plain_gap_us > 0 and pdl_gap_us < plain_gap_us / 2, (
        f"gap between the kernels: plain edge {plain_gap_us:.2f} µs, programmatic "
        f"{pdl_gap_us:.2f} µs")

"""Notebook 02's timing claim: a kernel's first launch compiles and loads it (a GPU only)."""
from __future__ import annotations

from labkit.measure.claims import claim

__all__ = ["first_launch_much_slower"]


@claim("a kernel's first launch (JIT + module load) is over 10× its second",
       why="the kernel was already compiled (numba's cache) or a busy host slowed the second "
           "launch", look="the two times printed above")
def first_launch_much_slower(first_us, second_us):
    return first_us > 10 * second_us, f"first {first_us:.0f} µs, second {second_us:.1f} µs"

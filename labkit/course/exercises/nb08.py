"""Check for notebook 08's exercise: a WHILE body kernel that counts down and stops at zero."""
from __future__ import annotations

import numpy as np

from ..._kernel import Kernel, kernel, to_device
from ...conditional import conditional_graph, set_condition

__all__ = ["check_countdown", "GUARD"]

GUARD = 50   # the check's own stop: a wrong kernel ends after 50 iterations instead of never


@kernel
def _guard(runs, cap, h):
    # a second kernel in the body: whatever the learner's kernel does, the loop ends at ``cap``
    if runs[0] >= cap:
        set_condition(h, 0)


def check_countdown(countdown, stream, starts=(1, 3, 7)) -> dict:
    """Check ``countdown(left, runs, h)``, a labkit kernel for one WHILE iteration.

    Each iteration must add 1 to ``runs[0]`` and 1 less to ``left[0]``, and stop the loop (set
    the condition to 0) once ``left[0]`` reaches 0: a launch that starts from ``left = k`` runs
    exactly ``k`` iterations. Tried for each ``k`` in ``starts``, in one graph launched once per
    start (the condition's default 1 is assigned again at every launch). Returns the
    iteration counts.
    """
    if not isinstance(countdown, Kernel):
        raise TypeError("decorate countdown with @labkit.kernel")
    left = to_device(np.zeros(1, np.int64))
    runs = to_device(np.zeros(1, np.int64))
    g = conditional_graph()
    cond = g.condition(default=1)
    body = g.while_loop(cond)
    with body.capture(stream):
        countdown[1, 1, stream](left, runs, cond.arg)
        _guard[1, 1, stream](runs, GUARD, cond.arg)
    got = {}
    with g, g.instantiate() as ex:
        for k in starts:
            stream.synchronize()
            left.copy_to_device(np.array([k], np.int64))
            runs.copy_to_device(np.zeros(1, np.int64))
            ex.launch(stream)
            stream.synchronize()
            got[k] = int(runs.copy_to_host()[0])
    bad = {k: v for k, v in got.items() if v != k}
    if bad:
        k, v = next(iter(bad.items()))
        more = (" and never stopped it (the check's guard ended the loop): call "
                "labkit.set_condition(h, 0) when left[0] reaches 0" if v >= GUARD else
                ": stop when left[0] has reached 0 after this iteration's decrement, not one "
                "iteration later or earlier")
        raise AssertionError(f"starting from left = {k} the loop ran {v} iterations, not {k}{more}")
    return got

"""Check for notebook 08's exercise: a WHILE body kernel that counts down and stops at zero."""
from __future__ import annotations

import numpy as np

from ..._kernel import Kernel, kernel, to_device
from ...conditional import conditional_graph, set_condition

__all__ = ["check_countdown", "GUARD", "STARTS"]

GUARD = 50               # the check's own stop: a wrong kernel ends after 50 iterations, not never
STARTS = (0, 1, 3, 7)    # 0 first: WHILE enters its body once from the default value even then


@kernel
def _guard(iters, cap, h):
    # a second kernel in the body, with its own counter: whatever the learner's kernel does (or
    # does not count), the loop ends after ``cap`` iterations
    iters[0] += 1
    if iters[0] >= cap:
        set_condition(h, 0)


def check_countdown(countdown, stream, starts=STARTS) -> dict:
    """Check ``countdown(left, runs, h)``, a labkit kernel for one WHILE iteration.

    The loop's condition starts at its default, 1, at every launch, so the body always runs at
    least once. Each iteration that finds work left (``left[0] > 0``) does one unit of it: adds
    1 to ``runs[0]`` and takes 1 from ``left[0]``; the loop must stop (condition 0) once no work
    is left. A launch from ``left = k`` therefore does exactly ``k`` units of work and leaves
    ``left`` at 0, ``k = 0`` included, in ``k`` iterations (one from 0). Tried for each ``k`` in ``starts`` in one graph, launched
    once per start. Returns ``{k: runs}``.
    """
    if not isinstance(countdown, Kernel):
        raise TypeError("decorate countdown with @labkit.kernel")
    left = to_device(np.zeros(1, np.int64))
    runs = to_device(np.zeros(1, np.int64))
    iters = to_device(np.zeros(1, np.int64))
    g = conditional_graph()
    cond = g.condition(default=1)
    body = g.while_loop(cond)
    with body.capture(stream):
        countdown[1, 1, stream](left, runs, cond.arg)
        _guard[1, 1, stream](iters, GUARD, cond.arg)
    got = {}
    with g, g.instantiate() as ex:
        for k in starts:
            stream.synchronize()
            left.copy_to_device(np.array([k], np.int64))
            runs.copy_to_device(np.zeros(1, np.int64))
            iters.copy_to_device(np.zeros(1, np.int64))
            ex.launch(stream)
            stream.synchronize()
            r, lf, it = (int(a.copy_to_host()[0]) for a in (runs, left, iters))
            got[k] = r
            if it >= GUARD:
                raise AssertionError(
                    f"starting from left = {k} the loop never stopped (the check's guard ended it "
                    f"after {GUARD} iterations; runs = {r}, left = {lf}). Which value of left[0] "
                    "does your stop test wait for, and does left ever get there from this start? "
                    "Remember that WHILE runs its body once before anything has tested left")
            if lf != 0:
                raise AssertionError(
                    f"starting from left = {k} the loop stopped with left = {lf}, not 0: a "
                    "countdown takes one from left[0] for each unit of work it does, and stops "
                    "when nothing is left")
            if r != k:
                raise AssertionError(
                    f"starting from left = {k} the loop did {r} units of work, not {k}: count a "
                    "unit (runs[0] += 1) only in an iteration that takes one from left[0]")
            if it < max(k, 1):
                raise AssertionError(
                    f"starting from left = {k} the loop did its {k} units of work in {it} "
                    f"iteration{'s' if it != 1 else ''}: here an iteration is one unit of work "
                    "(in the decoder, one step makes one token), so a start of k takes k "
                    "iterations. How much should one iteration take from left[0]?")
            if it != max(k, 1):
                raise AssertionError(
                    f"starting from left = {k} the loop ran {it} iterations for {k} "
                    f"unit{'s' if k != 1 else ''} of work: an idle iteration costs a whole body "
                    "(in the decoder, a whole step). Stop the loop in the iteration that takes "
                    "the last unit, not in the next one")
    return got

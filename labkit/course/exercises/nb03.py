"""Check for notebook 03's exercise: when does a graph pay for itself?"""
from __future__ import annotations

import math

__all__ = ["check_breakeven"]


def check_breakeven(answer, setup_us: float, eager_iter_us: float, graph_iter_us: float) -> None:
    """Pass if ``answer`` is the number of iterations after which the graph has paid off.

    That is ``setup_us / (eager_iter_us - graph_iter_us)`` (within 2 %), or None where a graph
    iteration is not cheaper than an eager one.
    """
    from labkit.measure.plot import breakeven
    want = breakeven(setup_us, eager_iter_us, graph_iter_us)
    if want is None:
        if answer is not None:
            raise AssertionError("a graph iteration is not cheaper here, so it never pays off: "
                                 "the answer is None")
        print("correct: the graph never pays off here")
        return
    if answer is None:
        raise AssertionError(f"a graph iteration saves {eager_iter_us - graph_iter_us:.1f} µs, so "
                             "the setup is paid back eventually: give the iteration count")
    try:
        answer = float(answer)
    except (TypeError, ValueError):
        raise ValueError(f"answer must be a number of iterations, got {answer!r}") from None
    if math.isclose(answer, want, rel_tol=0.02):
        print(f"correct: the graph pays off after {want:.1f} iterations")
        return
    if eager_iter_us > 0 and math.isclose(answer, setup_us / eager_iter_us, rel_tol=0.02):
        raise AssertionError("you divided the setup by the eager iteration's cost, but the graph "
                             "iterations are not free: divide by what each iteration saves, "
                             "eager_iter_us - graph_iter_us")
    if graph_iter_us > 0 and math.isclose(answer, setup_us / graph_iter_us, rel_tol=0.02):
        raise AssertionError("you divided the setup by the graph iteration's cost: divide by what "
                             "each iteration saves, eager_iter_us - graph_iter_us")
    raise AssertionError(f"{answer:.1f} is not the break-even: find n where setup + n·graph_iter "
                         f"= n·eager_iter (expected about {want:.1f})")

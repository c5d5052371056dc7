"""Notebook 03's check accepts setup / saving and rejects the usual wrong divisions."""
import labkit  # noqa: F401  (before numba.cuda)
import numpy as np
import pytest

from labkit import timing

from labkit.course import workloads
from labkit.course.exercises.nb03 import check_breakeven
from tests.notebook_sources import run_cell

SETUP, EAGER, GRAPH = 1000.0, 400.0, 50.0


def test_accepts_setup_over_saving():
    check_breakeven(SETUP / (EAGER - GRAPH), SETUP, EAGER, GRAPH)


def test_rejects_dividing_by_the_eager_cost():
    with pytest.raises(AssertionError, match=r"^you divided the setup by the eager iteration's cost"):
        check_breakeven(SETUP / EAGER, SETUP, EAGER, GRAPH)


def test_rejects_the_starters_partial_setup():
    with pytest.raises(AssertionError, match=r"^0\.6 is not the break-even"):
        check_breakeven(200.0 / EAGER * 1.2, SETUP, EAGER, GRAPH)


def test_never_pays_off_when_the_graph_is_not_cheaper():
    check_breakeven(None, SETUP, 50.0, 60.0)
    with pytest.raises(AssertionError, match=r"^a graph iteration is not cheaper here"):
        check_breakeven(3.0, SETUP, 50.0, 60.0)


def _notebooks_exercise(role):
    """The notebook's starter or solution cell, then its check, on a measured 10-node chain."""
    s = labkit.Stream()
    x = labkit.to_device(np.zeros(1024, np.float32))
    phases = {10: timing.graph_phases(lambda st: workloads.chain(10, x, st), s, repeat=3, steady=10)}
    ns = {"phases": phases, "timing": timing, "workloads": workloads, "x": x, "s": s,
          "WARMUP": 1, "REPEAT": 3}
    return run_cell("03", "check", run_cell("03", role, ns))


def test_accepts_the_notebooks_solution():
    assert _notebooks_exercise("solution")["my_breakeven"] > 0


def test_rejects_the_notebooks_starter():
    with pytest.raises(AssertionError, match=r"^you divided the setup by the eager iteration's cost"
                                             r"|is not the break-even"):
        _notebooks_exercise("starter")

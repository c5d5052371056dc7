"""Notebook 03's check accepts setup / saving and rejects the usual wrong divisions."""
import labkit  # noqa: F401  (before numba.cuda)
import pytest

from labkit.course.exercises.nb03 import check_breakeven

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

"""Notebook 00's check accepts 3·x + 1 and rejects the kernels in the wrong order."""
import labkit  # noqa: F401  (before numba.cuda)
import numpy as np
import pytest

from labkit.course import workloads
from labkit.course.exercises.nb00 import check_scale_then_add
from tests.notebook_sources import run_cell

X0 = np.arange(16, dtype=np.float32)


def test_accepts_scale_then_add():
    check_scale_then_add(X0 * 3 + 1, X0)


def test_rejects_add_then_scale_naming_the_order():
    with pytest.raises(AssertionError, match=r"^you got 3·\(x \+ 1\): add_one ran before scale"):
        check_scale_then_add((X0 + 1) * 3, X0)


def test_rejects_add_then_scale_without_giving_the_order_away():
    with pytest.raises(AssertionError, match=r"run in the order they were launched: which one must "
                                             r"run first for 3·x \+ 1\?$"):
        check_scale_then_add((X0 + 1) * 3, X0)


def test_rejects_add_one_alone():
    with pytest.raises(AssertionError, match=r"^only one of the two kernels took effect"):
        check_scale_then_add(X0 + 1, X0)


def test_rejects_scale_alone():
    with pytest.raises(AssertionError, match=r"^only one of the two kernels took effect"):
        check_scale_then_add(X0 * 3, X0)


def test_rejects_a_result_of_another_shape():
    with pytest.raises(ValueError, match=r"^the result has shape \(8,\), the input \(16,\)"):
        check_scale_then_add((X0 * 3 + 1)[:8], X0)


def test_rejects_a_device_array_not_copied_back():
    with pytest.raises(ValueError, match=r"^expected the result copied back"):
        check_scale_then_add([1.0], X0)


def _notebooks_exercise(role):
    """The notebook's starter or solution cell, then its check cell, on the names they use."""
    ns = {"labkit": labkit, "workloads": workloads, "x0": X0, "s": labkit.Stream()}
    return run_cell("00", "check", run_cell("00", role, ns))


def test_the_notebooks_solution_passes_its_check():
    _notebooks_exercise("solution")


def test_the_notebooks_starter_fails_its_check_naming_the_order():
    with pytest.raises(AssertionError, match=r"^you got 3·\(x \+ 1\): add_one ran before scale"):
        _notebooks_exercise("starter")

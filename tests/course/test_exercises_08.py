"""Notebook 08's exercise check accepts the solution and rejects plausible wrong answers."""
import labkit
import pytest
from labkit import set_condition
from labkit.course.exercises import nb08


@labkit.kernel
def right(left, runs, h):
    runs[0] += 1
    left[0] -= 1
    if left[0] == 0:
        set_condition(h, 0)


@labkit.kernel
def one_late(left, runs, h):
    runs[0] += 1
    left[0] -= 1
    if left[0] < 0:          # stops one iteration after left reached 0
        set_condition(h, 0)


@labkit.kernel
def never_stops(left, runs, h):
    runs[0] += 1
    left[0] -= 1


@pytest.fixture
def stream():
    with labkit.Stream() as s:
        yield s


def test_the_solution_runs_k_iterations_from_k(stream):
    assert nb08.check_countdown(right, stream) == {1: 1, 3: 3, 7: 7}


def test_stopping_one_iteration_late_is_rejected(stream):
    with pytest.raises(AssertionError, match=r"left = 1 the loop ran 2 iterations, not 1"):
        nb08.check_countdown(one_late, stream)


def test_a_loop_that_never_stops_is_ended_by_the_guard_and_rejected(stream):
    with pytest.raises(AssertionError, match=r"never stopped it[\s\S]*set_condition\(h, 0\)"):
        nb08.check_countdown(never_stops, stream)

"""Notebook 08's exercise check accepts the countdown that handles a start of 0 and rejects each
plausible wrong one (one test per wrong answer)."""
import labkit
import pytest
from labkit import set_condition
from labkit.course import decoder as dec  # noqa: F401 - the notebook's namespace
from labkit.course.exercises import nb08
from tests.notebook_sources import run_cell


@labkit.kernel
def right(left, runs, h):
    if left[0] > 0:
        runs[0] += 1
        left[0] -= 1
    if left[0] <= 0:
        set_condition(h, 0)


@labkit.kernel
def no_zero_guard(left, runs, h):      # right from 1 up; from 0 it counts down past 0 for ever
    runs[0] += 1
    left[0] -= 1
    if left[0] == 0:
        set_condition(h, 0)


@labkit.kernel
def never_decrements(left, runs, h):   # counts iterations against left, leaves left alone
    runs[0] += 1
    if runs[0] >= left[0]:
        set_condition(h, 0)


@labkit.kernel
def one_late(left, runs, h):           # stops one iteration after there was nothing left
    if left[0] > 0:
        runs[0] += 1
        left[0] -= 1
    else:
        set_condition(h, 0)


@labkit.kernel
def counts_every_iteration(left, runs, h):   # the iteration that finds nothing counts too
    runs[0] += 1
    if left[0] > 0:
        left[0] -= 1
    if left[0] <= 0:
        set_condition(h, 0)


@labkit.kernel
def never_stops(left, runs, h):
    if left[0] > 0:
        runs[0] += 1
        left[0] -= 1


@pytest.fixture
def stream():
    with labkit.Stream() as s:
        yield s


def test_the_right_countdown_does_k_units_of_work_from_every_start(stream):
    assert nb08.check_countdown(right, stream) == {0: 0, 1: 1, 3: 3, 7: 7}


def test_the_notebooks_solution_passes_and_its_starter_fails(stream):
    ns = run_cell("08", "solution", {"labkit": labkit, "set_condition": set_condition,
                                     "stream": stream})
    assert nb08.check_countdown(ns["countdown"], stream) == {0: 0, 1: 1, 3: 3, 7: 7}
    ns = run_cell("08", "starter", {"labkit": labkit, "set_condition": set_condition,
                                    "stream": stream})
    with pytest.raises(AssertionError, match=r"^starting from left = 0 the loop never stopped"):
        run_cell("08", "check", ns)


def test_a_countdown_without_a_guard_for_zero_is_rejected_at_a_start_of_0(stream):
    with pytest.raises(AssertionError, match=r"^starting from left = 0 the loop never stopped "
                                             r"[\s\S]*WHILE runs its body once"):
        nb08.check_countdown(no_zero_guard, stream)


def test_a_countdown_that_never_decrements_left_is_rejected(stream):
    with pytest.raises(AssertionError, match=r"^starting from left = 0 the loop did 1 units of "
                                             r"work, not 0"):
        nb08.check_countdown(never_decrements, stream)


def test_a_countdown_that_never_decrements_left_is_rejected_from_a_start_of_1(stream):
    with pytest.raises(AssertionError, match=r"^starting from left = 1 the loop stopped with "
                                             r"left = 1, not 0"):
        nb08.check_countdown(never_decrements, stream, starts=(1, 3))


def test_stopping_one_iteration_late_is_rejected_by_the_guard_free_count(stream):
    # from 0 it stops at once (right); from 1 it runs one extra, idle iteration: same work,
    # so the check sees that only through the guard's iteration count
    with pytest.raises(AssertionError, match=r"^starting from left = 1 the loop ran 2 iterations "
                                             r"for 1 unit of work"):
        nb08.check_countdown(one_late, stream)


def test_counting_the_idle_iteration_is_rejected(stream):
    with pytest.raises(AssertionError, match=r"^starting from left = 0 the loop did 1 units of "
                                             r"work, not 0: count a unit"):
        nb08.check_countdown(counts_every_iteration, stream)


def test_a_loop_that_never_stops_is_ended_by_the_guard_and_rejected(stream):
    with pytest.raises(AssertionError, match=r"^starting from left = 0 the loop never stopped"):
        nb08.check_countdown(never_stops, stream)


@labkit.kernel
def all_at_once(left, runs, h):        # every unit in the first iteration, then stop
    runs[0] += left[0]
    left[0] = 0
    set_condition(h, 0)


def test_doing_all_the_work_in_one_iteration_is_rejected_as_such(stream):
    # right from 0 and 1 (one iteration is what they take); from 3, one iteration did it all:
    # the message is about the work per iteration, not about idle iterations
    with pytest.raises(AssertionError, match=r"^starting from left = 3 the loop did its 3 units of "
                                             r"work in 1 iteration: here an iteration is one unit"):
        nb08.check_countdown(all_at_once, stream)

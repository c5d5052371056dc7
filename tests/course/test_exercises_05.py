"""Notebook 05's bucket check accepts the solution's buckets and rejects plausible wrong ones."""
import labkit  # noqa: F401  (before numba.cuda)
import numpy as np
import pytest

from labkit.course.exercises import nb05
from tests.notebook_sources import run_cell

REQUESTS = nb05.exercise_requests()
SOLUTION = run_cell("05", "solution", {"ex05": nb05})["buckets"]


def test_the_request_stream_is_seeded_and_mostly_small_with_a_long_tail():
    np.testing.assert_array_equal(REQUESTS, nb05.exercise_requests())
    assert REQUESTS.min() >= 1 and REQUESTS.max() <= nb05.MAX_BATCH
    assert np.median(REQUESTS) <= 4 < 16 < REQUESTS.max()


def test_accepts_the_solutions_buckets(capsys):
    nb05.check_buckets(SOLUTION, REQUESTS)
    assert capsys.readouterr().out.startswith("correct: 6 buckets serve every request with 19.7% padding")


def test_rejects_the_starters_powers_of_two_as_too_many_graphs():
    with pytest.raises(AssertionError, match=r"^7 buckets is more than the 6 graphs you may keep"):
        nb05.check_buckets([1, 2, 4, 8, 16, 32, 64], REQUESTS)


def test_rejects_dropping_one_power_of_two_as_too_padded_and_names_the_worst_bucket():
    with pytest.raises(AssertionError, match=r"^24\.4% of the computed rows are padding \(limit 22%\): "
                                             r"most of it \(433 rows\) comes from requests of 5-8 rows "
                                             r"padded up to 8"):
        nb05.check_buckets([2, 4, 8, 16, 32, 64], REQUESTS)


def test_rejects_buckets_that_cannot_serve_the_largest_request():
    with pytest.raises(AssertionError, match=r"^the largest bucket is 32 but requests go up to 49: "
                                             r".*include a bucket of at least 49"):
        nb05.check_buckets([1, 2, 4, 8, 16, 32], REQUESTS)


def test_rejects_a_repeated_bucket():
    with pytest.raises(AssertionError, match=r"^buckets \[2, 4, 4, 12, 21, 49\] repeat \[4\]"):
        nb05.check_buckets([2, 4, 4, 12, 21, 49], REQUESTS)


@pytest.mark.parametrize("bad", [[], [0, 4, 64], [2.5, 64], None])
def test_rejects_buckets_that_are_not_positive_whole_numbers(bad):
    with pytest.raises(ValueError, match=r"^buckets must be a (non-empty )?list of positive whole numbers"):
        nb05.check_buckets(bad, REQUESTS)


def test_padding_fraction_and_table_agree():
    frac = nb05.padding_fraction(SOLUTION, REQUESTS)
    padded = [min(b for b in SOLUTION if b >= r) for r in REQUESTS]
    assert frac == pytest.approx((sum(padded) - REQUESTS.sum()) / sum(padded))
    assert nb05.padding_table(SOLUTION, REQUESTS).splitlines()[-1] == (
        f"6 buckets; padding: {sum(padded) - REQUESTS.sum()} of {sum(padded)} computed rows = {frac:.1%}")


def test_padding_fraction_refuses_buckets_too_small_for_a_request():
    with pytest.raises(ValueError, match=r"^the largest bucket is 8 but a request has 49 rows"):
        nb05.padding_fraction([1, 2, 4, 8], REQUESTS)


def test_the_notebooks_solution_passes_its_check_cell(capsys):
    run_cell("05", "check", run_cell("05", "solution", {"ex05": nb05}))
    assert "correct: " in capsys.readouterr().out


def test_the_notebooks_starter_fails_its_check_cell():
    with pytest.raises(AssertionError, match=r"^7 buckets is more than the 6 graphs"):
        run_cell("05", "check", run_cell("05", "starter", {"ex05": nb05}))

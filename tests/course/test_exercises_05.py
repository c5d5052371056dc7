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
    assert capsys.readouterr().out.startswith("correct: 6 buckets serve every batch up to 64 rows, "
                                              "with 21.8% padding on this stream")


def test_rejects_the_starters_powers_of_two_as_too_many_graphs():
    with pytest.raises(AssertionError, match=r"^7 buckets is more than the 6 graphs you may keep"):
        nb05.check_buckets([1, 2, 4, 8, 16, 32, 64], REQUESTS)


def test_rejects_dropping_one_power_of_two_as_too_padded_and_names_the_worst_bucket():
    with pytest.raises(AssertionError, match=r"^24\.4% of the computed rows are padding \(limit 24%\): "
                                             r"most of it \(433 rows\) comes from requests of 5-8 rows "
                                             r"padded up to 8"):
        nb05.check_buckets([2, 4, 8, 16, 32, 64], REQUESTS)


def test_rejects_buckets_that_cannot_serve_the_largest_request():
    with pytest.raises(AssertionError, match=r"^the largest bucket is 32 but requests go up to 49: "
                                             r"those requests cannot be served, and the service "
                                             r"accepts batches of up to 64 rows: a request of 33 to 64"):
        nb05.check_buckets([1, 2, 4, 8, 16, 32], REQUESTS)


def test_rejects_a_top_bucket_sized_to_the_samples_largest_request_not_the_services():
    # the old worked answer: 49 serves this sample, but the service accepts up to MAX_BATCH = 64
    assert REQUESTS.max() == 49 < nb05.MAX_BATCH
    with pytest.raises(AssertionError, match=r"^the largest bucket is 49, which covers this sample .*"
                                             r"the service accepts batches of up to 64 rows: a "
                                             r"request of 50 to 64 rows would find no graph"):
        nb05.check_buckets([2, 4, 7, 12, 21, 49], REQUESTS)


def test_rejects_a_top_bucket_above_the_largest_batch_the_service_accepts():
    with pytest.raises(AssertionError, match=r"^the largest bucket is 128, but no batch has more "
                                             r"than 64 rows"):
        nb05.check_buckets([2, 4, 7, 12, 21, 128], REQUESTS)


def test_the_padding_limit_leaves_room_for_more_than_one_answer():
    for good in ([2, 4, 7, 12, 21, 64], [2, 4, 7, 12, 24, 64], [2, 4, 6, 12, 24, 64], [2, 4, 8, 12, 24, 64]):
        nb05.check_buckets(good, REQUESTS)


def test_rejects_a_repeated_bucket():
    with pytest.raises(AssertionError, match=r"^buckets \[2, 4, 4, 12, 21, 64\] repeat \[4\]"):
        nb05.check_buckets([2, 4, 4, 12, 21, 64], REQUESTS)


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

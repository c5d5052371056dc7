"""Notebook 06's exercise check accepts the solution and rejects plausible wrong answers."""
import pytest

import labkit
from labkit.course.exercises import nb06
from labkit.course.workloads import add_one
from tests.notebook_sources import run_cell


def _notebooks(role, stream):
    """The notebook's ``fast_update`` from its starter or solution cell."""
    return run_cell("06", role, {"add_one": add_one, "stream": stream})


def test_check_accepts_one_sync_at_the_end():
    with labkit.Stream() as s:
        out = nb06.check_fewer_syncs(_notebooks("solution", s)["fast_update"], s)
    assert out["ratio"] <= nb06.MAX_RATIO


def test_the_notebooks_check_cell_passes_the_solution_and_fails_the_starter(capsys):
    with labkit.Stream() as s:
        run_cell("06", "check", _notebooks("solution", s))
        with pytest.raises(AssertionError, match=r"^your function takes .* still a wait"):
            run_cell("06", "check", _notebooks("starter", s))


def test_check_rejects_the_unchanged_loop():
    with labkit.Stream() as s:
        with pytest.raises(AssertionError, match=r"^your function takes .* still a wait"):
            nb06.check_fewer_syncs(nb06.slow_update, s)


def test_check_rejects_a_loop_that_drops_kernels():
    def too_few(x, stream):
        for _ in range(nb06.N_KERNELS - 1):
            add_one[4, 256, stream](x)

    with labkit.Stream() as s:
        with pytest.raises(AssertionError, match=r"^your function changed the result"):
            nb06.check_fewer_syncs(too_few, s)


def test_check_rejects_keeping_a_sync_after_every_kernel():
    # the wrong answer issue 15 found passing: only the copy dropped (ratio 0.74 ≤ 0.85)
    def sync_each(x, stream):
        for _ in range(nb06.N_KERNELS):
            add_one[4, 256, stream](x)
            stream.synchronize()

    with labkit.Stream() as s:
        with pytest.raises(AssertionError,
                           match=r"^your function still synchronizes after every kernel \(20 "):
            nb06.check_fewer_syncs(sync_each, s)


def test_check_counts_one_sync_for_the_solution():
    with labkit.Stream() as s:
        out = nb06.check_fewer_syncs(_notebooks("solution", s)["fast_update"], s)
    assert out["syncs"] == 1

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

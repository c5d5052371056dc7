"""Notebook 06's exercise check accepts the solution and rejects plausible wrong answers."""
import pytest

import labkit
from labkit.course.exercises import nb06
from labkit.course.workloads import add_one


def _solution(x, stream):
    for _ in range(nb06.N_KERNELS):
        add_one[4, 256, stream](x)
    stream.synchronize()


def test_check_accepts_one_sync_at_the_end():
    with labkit.Stream() as s:
        out = nb06.check_fewer_syncs(_solution, s)
    assert out["ratio"] <= nb06.MAX_RATIO


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

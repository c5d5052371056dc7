"""Notebook 07's exercise check accepts a k-step graph and rejects a one-step one."""
import pytest

import labkit
from labkit.course import decoder as dec
from labkit.course.exercises import nb07
from tests.notebook_sources import run_cell


def _notebooks(role, stream):
    """The notebook's ``build`` from its starter or solution cell."""
    return run_cell("07", role, {"labkit": labkit, "dec": dec, "stream": stream})


def test_check_accepts_the_notebooks_k_steps_in_one_graph():
    with labkit.Stream() as s:
        out = nb07.check_multi_step(_notebooks("solution", s)["build"], s)
    assert out["kernel_nodes"] == 4 * 65 and len(out["tokens"]) == 12


def test_check_rejects_the_notebooks_one_step_starter():
    with labkit.Stream() as s:
        with pytest.raises(AssertionError, match=r"^the graph has 65 kernel nodes; 4 decode"):
            run_cell("07", "check", _notebooks("starter", s))


def test_check_rejects_a_one_step_graph():
    with labkit.Stream() as s:
        with pytest.raises(AssertionError, match=r"^the graph has 65 kernel nodes; 4 decode"):
            nb07.check_multi_step(lambda m, st, k: dec.capture_step(m, st), s)


def test_check_rejects_a_non_executable():
    with labkit.Stream() as s:
        with pytest.raises(ValueError, match=r"^build\(\.\.\.\) must return a labkit.GraphExec"):
            nb07.check_multi_step(lambda m, st, k: None, s)

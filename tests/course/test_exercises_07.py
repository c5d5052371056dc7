"""Notebook 07's exercise check accepts a k-step graph and rejects a one-step one."""
import pytest

import labkit
from labkit.course import decoder as dec
from labkit.course.exercises import nb07


def _k_steps(m, stream, k):
    dec.capture_step(m, stream).close()      # warms the kernels up (JIT) outside the capture
    with labkit.capture(stream) as cap:
        for _ in range(k):
            dec.step(m, stream)
    return cap.graph.instantiate()


def test_check_accepts_k_steps_in_one_graph():
    with labkit.Stream() as s:
        out = nb07.check_multi_step(_k_steps, s)
    assert out["kernel_nodes"] == 4 * 65 and len(out["tokens"]) == 12


def test_check_rejects_a_one_step_graph():
    with labkit.Stream() as s:
        with pytest.raises(AssertionError, match=r"^the graph has 65 kernel nodes; 4 decode"):
            nb07.check_multi_step(lambda m, st, k: dec.capture_step(m, st), s)


def test_check_rejects_a_non_executable():
    with labkit.Stream() as s:
        with pytest.raises(ValueError, match=r"^build\(\.\.\.\) must return a labkit.GraphExec"):
            nb07.check_multi_step(lambda m, st, k: None, s)

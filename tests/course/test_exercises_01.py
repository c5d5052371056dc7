"""Notebook 01's check accepts a GPU-bound kernel length and rejects the starter's tiny one."""
import labkit  # noqa: F401  (before numba.cuda)
import numpy as np
import pytest

from labkit import timing

from labkit.course import workloads
from labkit.course.exercises.nb01 import check_gpu_bound
from labkit.course.kernels_extra import kernel_gpu_us
from tests.notebook_sources import run_cell

PROBE = 10_000


def _notebooks_exercise(role):
    """The notebook's starter or solution cell, then its check, on the figures they read."""
    s = labkit.Stream()
    x = labkit.to_device(np.zeros(1024, np.float32))
    ns = {"costs": {"eager: submit only": timing.measure(lambda: workloads.chain(20, x, s),
                                                          per=20, repeat=3)},
          "PROBE": PROBE,
          "probe_us": kernel_gpu_us(lambda st: workloads.busy[4, 256, st](x, PROBE), s)}
    return run_cell("01", "check", run_cell("01", role, ns))


def test_accepts_the_notebooks_solution():
    assert _notebooks_exercise("solution")["iters"] > 10


def test_rejects_the_notebooks_starter_as_still_host_bound():
    with pytest.raises(AssertionError, match=r"^at iters=10 .* the host is still the bottleneck"):
        _notebooks_exercise("starter")


def test_rejects_a_non_integer():
    with pytest.raises(ValueError, match=r"^iters must be an int"):
        check_gpu_bound(1e4)

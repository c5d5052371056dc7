"""Notebook 01's check accepts a GPU-bound kernel length and rejects the starter's tiny one."""
import labkit  # noqa: F401  (before numba.cuda)
import numpy as np
import pytest

from labkit import timing
from labkit.course import workloads
from labkit.course.exercises.nb01 import check_gpu_bound
from labkit.course.kernels_extra import kernel_gpu_us


def _solution_iters():
    # what the worked solution computes: a kernel five times longer than one eager launch
    s = labkit.Stream()
    x = labkit.to_device(np.zeros(1024, np.float32))
    launch = timing.measure(lambda: workloads.chain(20, x, s), per=20, repeat=3).median
    probe = kernel_gpu_us(lambda st: workloads.busy[4, 256, st](x, 10_000), s)
    return int(10_000 * 5 * launch / probe)


def test_accepts_the_solutions_iters():
    check_gpu_bound(_solution_iters())


def test_rejects_the_starters_tiny_kernel():
    with pytest.raises(AssertionError, match=r"^at iters=10 .* the host is still the bottleneck"):
        check_gpu_bound(10)


def test_rejects_a_non_integer():
    with pytest.raises(ValueError, match=r"^iters must be an int"):
        check_gpu_bound(1e4)

"""Notebook 01's check asks for an iters near the crossover the learner measured: it accepts
the notebook's solution and rejects each plausible wrong answer, one test each."""
import labkit  # noqa: F401  (before numba.cuda)
import numpy as np
import pytest

from labkit import timing

from labkit.course import workloads
from labkit.course.exercises.nb01 import MAX_LAUNCHES, check_gpu_bound, launch_and_iteration_us
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


def _crossover():
    """iters at which busy's GPU time equals one eager launch, from the check's own figures."""
    launch, one, per_iter = launch_and_iteration_us()
    return 1 + (launch - one) / per_iter


def test_accepts_the_notebooks_solution_near_the_crossover():
    iters = _notebooks_exercise("solution")["iters"]
    assert 0.8 * _crossover() < iters < MAX_LAUNCHES * _crossover()


def test_rejects_the_notebooks_starter_as_still_host_bound():
    with pytest.raises(AssertionError, match=r"^at iters=10 .* the host is still the bottleneck"):
        _notebooks_exercise("starter")


def test_rejects_half_the_crossover_as_still_host_bound():
    iters = int(_crossover() / 2)
    with pytest.raises(AssertionError, match=rf"^at iters={iters} .* busy only \d+% of the time"):
        check_gpu_bound(iters)


def test_rejects_a_blind_million_as_far_past_the_crossover():
    with pytest.raises(AssertionError, match=r"^at iters=1000000 a kernel runs about [\d,]+ µs, "
                                             r"[\d,.]+ times one eager launch .* well past the "
                                             r"crossover"):
        check_gpu_bound(10**6)


def test_rejects_ten_times_the_crossover():
    iters = int(10 * _crossover())
    with pytest.raises(AssertionError, match=rf"^at iters={iters} .* well past the crossover"):
        check_gpu_bound(iters)


def test_rejects_a_non_integer():
    with pytest.raises(ValueError, match=r"^iters must be an int"):
        check_gpu_bound(1e4)


def test_rejects_zero_iterations_as_out_of_range():
    with pytest.raises(ValueError, match=r"^iters=0 is out of range"):
        check_gpu_bound(0)

"""Notebook 03's fused kernel: its numpy reference (what the simulator runs) equals the kernel."""
import labkit  # noqa: F401  (before numba.cuda)
import numpy as np
import pytest

from labkit.course.kernels_extra import add_k

pytestmark = pytest.mark.skipif(labkit.backend != "sim", reason="compares with numba's CUDA simulator")
GRID, BLOCK = (2, 1, 1), (32, 1, 1)


@pytest.mark.parametrize("data", ["whole numbers", "fractions"])
def test_the_fused_kernels_reference_equals_the_kernel_under_numbas_simulator(data):
    rng = np.random.default_rng(0)
    n = 70                       # not a multiple of the block: the bounds check matters
    x = (rng.integers(-1000, 1000, n) if data == "whole numbers"
         else rng.standard_normal(n) * 1e3).astype(np.float32)
    a, b = x.copy(), x.copy()
    add_k.simulate(GRID, BLOCK, a, 7)
    add_k.reference(GRID, BLOCK, b, 7)
    np.testing.assert_array_equal(a, b)
    assert np.array_equal(a[64:], x[64:]) and not np.array_equal(a[:64], x[:64])


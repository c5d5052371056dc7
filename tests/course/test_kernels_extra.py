"""The course's small kernels compute what their numpy references do, under numba's CUDA
simulator (the kernels' own code), so the simulator's results are the kernels'."""
import labkit  # noqa: F401  (before numba.cuda)
import numpy as np
import pytest

from labkit.course.kernels_extra import _bump_ref, _negate_ref, _rows_ref, bump, negate, rows_step

GRID, BLOCK = (1, 1, 1), (32, 1, 1)


@pytest.mark.parametrize("kern, ref, extra", [(negate, _negate_ref, ()), (bump, _bump_ref, ()),
                                               (rows_step, _rows_ref, (70, 3))])
def test_the_reference_equals_the_kernels_own_code(kern, ref, extra):
    data = np.arange(100, dtype=np.float32) - 40
    own, want = data.copy(), data.copy()
    kern.simulate(GRID, BLOCK, own, *extra)
    ref(GRID, BLOCK, want, *extra)
    np.testing.assert_array_equal(own, want)
    assert not np.array_equal(own, data)          # the kernel did change something

"""Notebook 00's check accepts 3·x + 1 and rejects the kernels in the wrong order."""
import labkit  # noqa: F401  (before numba.cuda)
import numpy as np
import pytest

from labkit.course.exercises.nb00 import check_scale_then_add

X0 = np.arange(16, dtype=np.float32)


def test_accepts_scale_then_add():
    check_scale_then_add(X0 * 3 + 1, X0)


def test_rejects_add_then_scale_naming_the_order():
    with pytest.raises(AssertionError, match=r"^you got 3·\(x \+ 1\): add_one ran before scale"):
        check_scale_then_add((X0 + 1) * 3, X0)


def test_rejects_a_device_array_not_copied_back():
    with pytest.raises(ValueError, match=r"^expected the result copied back"):
        check_scale_then_add([1.0], X0)

"""Check for notebook 00's exercise: scale, then add one."""
from __future__ import annotations

import numpy as np

__all__ = ["check_scale_then_add"]


def check_scale_then_add(result, x0, a: float = 3.0) -> None:
    """Pass if ``result`` (a numpy array) equals ``a * x0 + 1``; else say what it looks like."""
    if not isinstance(result, np.ndarray):
        raise ValueError(f"expected the result copied back to the host as a numpy array, got "
                         f"{type(result).__name__}: call .copy_to_host() on the device array")
    x0 = np.asarray(x0, dtype=np.float32)
    if result.shape != x0.shape:
        raise ValueError(f"the result has shape {result.shape}, the input {x0.shape}")
    want = x0 * np.float32(a) + np.float32(1)
    if np.array_equal(result, want):
        print(f"correct: every element is {a:g}·x + 1")
        return
    if np.array_equal(result, (x0 + 1) * np.float32(a)):
        raise AssertionError(f"you got {a:g}·(x + 1): add_one ran before scale. Kernels on "
                             "one stream run in the order they were launched: which one must "
                             f"run first for {a:g}·x + 1?")
    if np.array_equal(result, x0 + 1) or np.array_equal(result, x0 * np.float32(a)):
        raise AssertionError("only one of the two kernels took effect: launch both on the same "
                             "stream and synchronize before copying back")
    bad = int(np.count_nonzero(result != want))
    raise AssertionError(f"{bad} of {result.size} elements differ from {a:g}·x + 1 "
                         f"(first: got {result.ravel()[np.argmax(result != want)]})")

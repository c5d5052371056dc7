"""Check for notebook 00's exercise: scale, then add one."""
from __future__ import annotations

import numpy as np

from ...backends import races, rt

__all__ = ["check_scale_then_add"]


def check_scale_then_add(result, x0, x=None, a: float = 3.0) -> None:
    """Pass if ``result`` (a numpy array) equals ``a * x0 + 1``, computed on the GPU with nothing
    racing on ``x`` (the device array, when given: the simulator's race report on it is read);
    else say what it looks like."""
    if not isinstance(result, np.ndarray):
        raise ValueError(f"expected the result copied back to the host as a numpy array, got "
                         f"{type(result).__name__}: call .copy_to_host() on the device array")
    x0 = np.asarray(x0, dtype=np.float32)
    if result.shape != x0.shape:
        raise ValueError(f"the result has shape {result.shape}, the input {x0.shape}")
    want = x0 * np.float32(a) + np.float32(1)
    if x is not None:
        _refuse_races(x)
        _refuse_host_work(x, result, want)
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


_KERNELS = {"scale", "add_one"}


def _refuse_races(x) -> None:
    """Refuse an answer the simulator saw race on ``x`` (on a GPU no tool sees it:
    `labkit.races` is empty there, and only the values are checked). A fixed answer makes a new
    ``x``, at a new address, so its old races do not count against it."""
    lo = int(x.device_ctypes_pointer.value)
    hi = lo + int(x.nbytes)
    mine = [r for r in races() if r.address is not None and lo <= r.address < hi]
    copy = next((r for r in mine if "memcpy" in (r.first, r.second)), None)
    if copy is not None:
        raise AssertionError(
            "your copy back read x while a kernel could still be writing it: a launch returns "
            "at once, before the kernel runs, and the copy does not wait for stream s. The "
            "result happened to be right (or not) by timing alone. What must the host do "
            "between launching and copying?")
    if mine:
        r = mine[0]
        raise AssertionError(
            f"{r.first} and {r.second} ran on different streams with nothing ordering them "
            f"({r.first_row}, {r.second_row}): the second may start before the first is done, "
            "whatever the order you launched them in. Which stream gives you that order for free?")


def _refuse_host_work(x, result, want) -> None:
    """The GPU's ``x`` must hold what ``result`` says: an answer computed with numpy, or
    finished on the host, leaves ``x`` holding something else."""
    rt.cudaDeviceSynchronize()
    on_gpu = x.copy_to_host()
    if np.array_equal(result, want) and not np.array_equal(on_gpu.reshape(result.shape), want):
        raise AssertionError(
            "result holds 3·x + 1, but the GPU's x does not: part of the work was done on the "
            "host (with numpy), not by the kernels. Launch both kernels on x and copy x back")

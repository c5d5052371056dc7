"""Mapped host memory: pinned host memory the GPU reads and writes directly, as it runs.

``cudaHostAlloc(..., cudaHostAllocMapped)`` gives host memory with a device address. A kernel
that writes there is seen by the host without a copy and without waiting for the stream: the
way a graph that runs for a long time (a whole generation) can hand out results as it makes
them. `mapped_array` makes one; its ``device`` goes to kernels, its ``host`` is a numpy view.

On a GPU this is numba's ``cuda.mapped_array``, and the host sees each write as the GPU makes
it (a kernel orders its writes for the host with ``cuda.threadfence_system()``). On the
simulator, work takes effect when the simulated clock reaches it, so the same polling loop
(`MappedArray.arrivals`) moves the host's clock to the next piece of work at each step
(`labkit.backends.poll_step`) and sees the writes at the simulated times they land.
"""
from __future__ import annotations

import time

import numpy as np

from .backends import host_us, mapped_array as _mapped, poll_step

__all__ = ["MappedArray", "mapped_array"]


class MappedArray:
    """Pinned host memory mapped into the device's address space: pass ``device`` to kernels,
    read ``host`` (numpy) on the host."""

    def __init__(self, shape, dtype):
        self.device, self.host = _mapped(shape, np.dtype(dtype))

    @property
    def shape(self):
        return self.host.shape

    def arrivals(self, count_index: int, done_index: int, timeout_s: float = 60.0):
        """Each advance of the counter at ``host[count_index]`` as the host sees it, as
        ``(count, host µs)``, until ``host[done_index]`` is non-zero and the counter has not
        moved since. The host spins (its CPU time is the loop's).

        Raises
        ------
        TimeoutError
            When the counter stays put for ``timeout_s`` seconds, or (simulator) no GPU work is
            left that could move it.
        """
        host, seen = self.host, 0
        deadline = time.monotonic() + timeout_s
        while True:
            count = int(host[count_index])
            if count != seen:
                seen = count
                yield count, host_us()
                deadline = time.monotonic() + timeout_s
            elif int(host[done_index]):
                if int(host[count_index]) == seen:     # nothing landed after the flag was read
                    return
            elif not poll_step() or time.monotonic() > deadline:
                raise TimeoutError(f"the counter in mapped memory stayed at {seen} (for "
                                   f"{timeout_s} s, or with no GPU work left that could move it): "
                                   "did the graph run, and does its kernel publish there?")

    def __repr__(self):
        return f"<labkit.MappedArray shape={self.host.shape} dtype={self.host.dtype}>"


def mapped_array(shape, dtype) -> MappedArray:
    """New mapped, pinned host memory of ``shape`` and ``dtype`` (zeroed: write ``host`` to
    set it)."""
    a = MappedArray(shape, dtype)
    a.host[...] = 0
    return a

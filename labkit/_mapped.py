"""Mapped host memory: pinned host memory the GPU reads and writes directly, as it runs.

``cudaHostAlloc(..., cudaHostAllocMapped)`` gives host memory with a device address. A kernel
that writes there is seen by the host without a copy and without waiting for the stream: the
way a graph that runs for a long time (a whole generation) can hand out results as it makes
them. `mapped_array` makes one; its ``device`` goes to kernels, its ``host`` is a numpy view.

On a GPU this is numba's ``cuda.mapped_array``, and the host sees each write as the GPU makes
it (a kernel orders its writes for the host with ``cuda.threadfence_system()``). On the
simulator the kernels run when their graph is launched, so `arrivals` says when the host would
have seen each advance of a counter there, on the simulated clock, from the launch it watched
(`watch`); see `labkit.backends.sim.counter_arrivals` for what it can time.
"""
from __future__ import annotations

import numpy as np

from .backends import counter_arrivals as _arrivals, mapped_array as _mapped, watch_launch

__all__ = ["MappedArray", "mapped_array", "watch"]

watch = watch_launch


class MappedArray:
    """Pinned host memory mapped into the device's address space: pass ``device`` to kernels,
    read ``host`` (numpy) on the host."""

    def __init__(self, shape, dtype):
        self.device, self.host = _mapped(shape, np.dtype(dtype))

    @property
    def shape(self):
        return self.host.shape

    def arrivals(self, count_index: int, done_index: int, watched, timeout_s: float = 60.0):
        """Each advance of the counter at ``host[count_index]`` as the host sees it, as
        ``(count, host µs)``, until ``host[done_index]`` is non-zero. ``watched``: what
        `watch` yielded around the launch."""
        return _arrivals(self.host, count_index, done_index, watched, timeout_s)

    def __repr__(self):
        return f"<labkit.MappedArray shape={self.host.shape} dtype={self.host.dtype}>"


def mapped_array(shape, dtype) -> MappedArray:
    """New mapped, pinned host memory of ``shape`` and ``dtype`` (zeroed: write ``host`` to
    set it)."""
    a = MappedArray(shape, dtype)
    a.host[...] = 0
    return a

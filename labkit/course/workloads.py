"""The course's kernels, each with a numpy reference the simulator runs (tests prove them equal),
and the problem sizes that suit the active backend, chosen in one place."""
from __future__ import annotations

import numpy as np
from numba import cuda

from ..backends import is_gpu
from .._kernel import kernel


def course_size(*, cuda, sim):
    """The course's choice of a problem size or repeat count for the active backend.

    Not a difference in behaviour: the simulator computes every kernel with numpy in real time,
    so the course gives it smaller problems and fewer repeats; the results have the same shape.
    """
    return cuda if is_gpu else sim

__all__ = ["add_one", "scale", "busy", "saxpy", "sizes", "chain"]


def _n_threads(grid, block):
    return grid[0] * grid[1] * grid[2] * block[0] * block[1] * block[2]


def _add_one_ref(grid, block, x):
    n = min(x.size, _n_threads(grid, block))
    x.reshape(-1)[:n] += np.float32(1) if x.dtype == np.float32 else 1


@kernel(reference=_add_one_ref)
def add_one(x):
    """x[i] += 1: the tiny kernel of the chain benchmark (4 × 256 threads over 1024 floats)."""
    i = cuda.grid(1)
    if i < x.size:
        x[i] += 1.0


def _scale_ref(grid, block, x, a):
    n = min(x.size, _n_threads(grid, block))
    x.reshape(-1)[:n] *= x.dtype.type(a)


@kernel(reference=_scale_ref)
def scale(x, a):
    """x[i] *= a."""
    i = cuda.grid(1)
    if i < x.size:
        x[i] *= a


def _saxpy_ref(grid, block, out, a, x, y):
    n = min(out.size, _n_threads(grid, block))
    out[:n] = out.dtype.type(a) * x[:n] + y[:n]


@kernel(reference=_saxpy_ref)
def saxpy(out, a, x, y):
    """out = a*x + y."""
    i = cuda.grid(1)
    if i < out.size:
        out[i] = a * x[i] + y[i]


def _busy_ref(grid, block, x, iters):
    n = min(x.size, _n_threads(grid, block))
    x.reshape(-1)[:n] += x.dtype.type(iters)


def _busy_cost(P, grid, block, x, iters):
    return P("kernel_us") + iters * P("busy_ns_per_iter") / 1000.0


@kernel(reference=_busy_ref, cost=_busy_cost)
def busy(x, iters):
    """A long kernel: each thread adds 1.0 ``iters`` times (exact in float32 below 2**24)."""
    i = cuda.grid(1)
    if i < x.size:
        v = x[i]
        for _ in range(iters):
            v += 1.0
        x[i] = v


def chain(k: int, x, stream, grid=4, block=256):
    """Launch ``add_one`` ``k`` times back to back on ``stream``."""
    for _ in range(k):
        add_one[grid, block, stream](x)


def sizes() -> dict:
    """Problem sizes and repeat counts for the active backend (the simulator is slower per launch
    in real time, the GPU faster; both give the same shapes of results)."""
    return dict(kernels=200, sweep=[1, 10, 50, 100, 200, 500, 1000],
                repeat=course_size(cuda=50, sim=10), warmup=course_size(cuda=5, sim=2),
                requests=course_size(cuda=2000, sim=300), tokens=course_size(cuda=64, sim=48))

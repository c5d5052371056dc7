"""Kernels for notebooks 02 and 03, each with a numpy reference the simulator runs.

* `preprocess` and `infer_step`: the two kernels of the seed's C++ capture example;
* `add_k`: the *fused* version of K back-to-back `labkit.course.workloads.add_one` launches: one
  kernel that reads each element once, adds 1.0 ``k`` times in a register and writes it once
  (its docstring says why it is written as it is).
* `fusion_sizes`: array size and repeats for the fusion comparison.
* `negate` (02) and `bump` (06): small kernels that the notebook launches first, to time a
  kernel's first launch (compilation and module load) against its second;
* `rows_step` (05): ``x[:n] += iters`` from a fixed grid, so its time grows with ``n``.
"""
from __future__ import annotations

import numpy as np
from numba import cuda

from .._capture import capture
from .workloads import course_size
from ..timing import gpu_measure
from .._kernel import kernel

__all__ = ["preprocess", "infer_step", "add_k", "request_reference", "fusion_sizes", "kernel_gpu_us",
           "negate", "bump", "rows_step"]


def _n(grid, block, *arrays):
    threads = grid[0] * grid[1] * grid[2] * block[0] * block[1] * block[2]
    return min(min(a.size for a in arrays), threads)


def _preprocess_ref(grid, block, inp, work):
    n = _n(grid, block, inp, work)
    work.reshape(-1)[:n] = inp.reshape(-1)[:n] * np.float32(2.0) + np.float32(1.0)


@kernel(reference=_preprocess_ref)
def preprocess(inp, work):
    """work = 2 * input + 1 (stands in for normalising a request)."""
    i = cuda.grid(1)
    if i < work.size and i < inp.size:
        work[i] = inp[i] * 2.0 + 1.0


def _infer_step_ref(grid, block, work, out):
    n = _n(grid, block, work, out)
    w = work.reshape(-1)[:n]
    out.reshape(-1)[:n] = w * w - np.float32(3.0)


@kernel(reference=_infer_step_ref)
def infer_step(work, out):
    """out = work² - 3 (stands in for one step of a model)."""
    i = cuda.grid(1)
    if i < out.size and i < work.size:
        w = work[i]
        out[i] = w * w - 3.0


def request_reference(x: np.ndarray) -> np.ndarray:
    """What preprocess followed by infer_step computes, in float32 numpy."""
    w = x.astype(np.float32) * np.float32(2.0) + np.float32(1.0)
    return w * w - np.float32(3.0)


def _add_k_ref(grid, block, x, k):
    n = min(x.size, grid[0] * grid[1] * grid[2] * block[0] * block[1] * block[2])
    v = x.reshape(-1)[:n]
    one = np.float32(1.0)
    # k float32 additions of 1.0 give x + k exactly where every partial sum is an exact float32
    # (whole numbers below 2**24): one addition then; elsewhere each step rounds, so repeat it
    if np.all((v == np.floor(v)) & (np.abs(v) + k < 2 ** 24)):
        v += np.float32(k)
    else:
        for _ in range(int(k)):
            v += one


@kernel(reference=_add_k_ref)
def add_k(x, k):
    """x[i] += 1.0, ``k`` times, in one kernel: K add_one launches fused.

    Written so that the additions stay cheap next to the one memory round trip: a ``while``
    loop on a plain counter and a float32 constant. The first version, ``for _ in range(k):
    v += 1.0``, ran several times slower on an H200 than its memory traffic: numba types
    ``v += 1.0`` on float32 data as a float64 addition, and counts a ``range`` loop with 64-bit
    integers and sign checks, about six instructions a step (read in its SASS), so 16 M threads
    of 50 steps each were bound by instruction issue, not memory. The ``while`` loop compiles to
    float32 additions unrolled 16 at a time, about one instruction a step.
    """
    i = cuda.grid(1)
    if i < x.size:
        v = x[i]
        j = 0
        while j < k:
            v += np.float32(1.0)
            j += 1
        x[i] = v


def fusion_sizes() -> dict:
    """Elements, launch shape and K for the fusion comparison on the active backend.

    The array (64 MiB) is large enough that each add_one is limited by memory bandwidth, not
    by its launch, on both backends: with a smaller array on the simulator (16 MiB, tried) each
    kernel ran shorter than numba's launch and the graph came out 2.6x faster than eager there,
    against about 1x on the H200 -- a different conclusion. Only the repeat count differs.
    """
    n = 1 << 24       # 64 MiB on both backends: each add_one then takes longer than its launch
    block = 256
    return dict(n=n, block=block, grid=(n + block - 1) // block, k=50,
                repeat=course_size(cuda=10, sim=3))


def kernel_gpu_us(launch, stream, k: int = 10, repeat: int = 5) -> float:
    """GPU µs per kernel of ``launch(stream)``, with no host gaps between kernels.

    An event pair around eager launches measures the stream's elapsed time, and that includes
    the GPU waiting for the host. Here ``launch`` is captured ``k`` times into one graph, whose
    kernels run back to back, and the graph's replay is timed with events.
    """
    launch(stream)   # warm-up outside the capture
    with capture(stream) as cap:
        for _ in range(k):
            launch(stream)
    with cap.graph as g, g.instantiate(upload_stream=stream) as ex:
        return gpu_measure(lambda: ex.launch(stream), stream, per=k, warmup=1,
                           repeat=repeat).median


def _negate_ref(grid, block, a):
    n = _n(grid, block, a)
    a.reshape(-1)[:n] = -a.reshape(-1)[:n]


@kernel(reference=_negate_ref)
def negate(a):
    i = cuda.grid(1)
    if i < a.size:
        a[i] = -a[i]


def _bump_ref(grid, block, x):
    n = _n(grid, block, x)
    x.reshape(-1)[:n] += np.float32(2.0)


@kernel(reference=_bump_ref)
def bump(x):
    i = cuda.grid(1)
    if i < x.size:
        x[i] += 2.0


def _rows_ref(grid, block, x, n, iters):
    x.reshape(-1)[:n] += x.dtype.type(iters)


def _rows_cost(P, grid, block, x, n, iters):
    passes = -(-n // (grid[0] * block[0]))           # elements each thread handles
    return P("kernel_us") + passes * iters * P("busy_ns_per_iter") / 1000.0


@kernel(reference=_rows_ref, cost=_rows_cost)
def rows_step(x, n, iters):
    """x[:n] += iters; a fixed grid walks the n elements, so the time grows with n."""
    for i in range(cuda.grid(1), n, cuda.gridsize(1)):
        v = x[i]
        for _ in range(iters):
            v += 1.0
        x[i] = v

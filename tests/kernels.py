"""Kernels the tests share: labkit kernels with numpy references that compute the same thing.

``import labkit`` comes first: on the "sim" backend it sets NUMBA_ENABLE_CUDASIM before
numba.cuda is imported. The references follow labkit's contract
``reference(grid, block, *args)`` (3-tuples, in place); only 1-D launches are meaningful for
these kernels, so the references refuse anything else instead of guessing.
"""
from __future__ import annotations

import labkit  # noqa: F401  (must precede numba.cuda)
import numpy as np
from numba import cuda

__all__ = ["add_one", "scale", "copy_into", "add_one_reference", "scale_reference",
           "copy_into_reference", "N", "GRID", "BLOCK"]

N, GRID, BLOCK = 1024, 4, 256   # 1024 float32, grid 4 x 256: the course's standard size


def _covered(grid, block, x) -> int:
    """How many leading elements a 1-D launch of ``grid`` x ``block`` threads touches."""
    if tuple(grid[1:]) != (1, 1) or tuple(block[1:]) != (1, 1):
        raise ValueError(f"these kernels are 1-D: got grid {grid}, block {block}")
    return min(x.size, int(grid[0]) * int(block[0]))


def add_one_reference(grid, block, x):
    """numpy version of `add_one`: the first grid*block elements (bounded by x.size) += 1."""
    n = _covered(grid, block, x)
    x.reshape(-1)[:n] += np.float32(1.0)


def scale_reference(grid, block, x):
    """numpy version of `scale`: the first grid*block elements (bounded by x.size) *= 2."""
    n = _covered(grid, block, x)
    x.reshape(-1)[:n] *= np.float32(2.0)


@labkit.kernel(reference=add_one_reference)
@cuda.jit
def add_one(x):
    i = cuda.grid(1)
    if i < x.size:
        x[i] += 1.0


@labkit.kernel(reference=scale_reference)
@cuda.jit
def scale(x):
    i = cuda.grid(1)
    if i < x.size:
        x[i] *= 2.0



def copy_into_reference(grid, block, dst, src):
    """numpy version of `copy_into`: the first grid*block elements of ``src`` into ``dst``."""
    n = _covered(grid, block, dst)
    dst.reshape(-1)[:n] = src.reshape(-1)[:n]


@labkit.kernel(reference=copy_into_reference)
@cuda.jit
def copy_into(dst, src):
    i = cuda.grid(1)
    if i < dst.size:
        dst[i] = src[i]

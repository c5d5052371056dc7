"""What conditional nodes cost on the GPU.

* ``while_iteration_us``: the GPU time a WHILE iteration adds beyond its body's nodes. A WHILE
  whose one-kernel body counts to N, at N = 10 and N = 1000, less a graph of 10 and 1000 such
  kernels: the difference of the slopes.
* ``conditional_node_us``: a conditional node's own GPU time, its gap included: 100 kernels each
  followed by an IF whose condition is 0, less the 100 kernels alone, per IF.

Both are GPU times between CUDA events (`labkit.timing.gpu_measure`); ``python -m labkit
calibrate`` saves them, and the simulator charges them.
"""
from __future__ import annotations

import numpy as np

from .. import timing
from .._errors import check
from .._kernel import kernel, to_device
from ..backends import rt
from ..conditional import conditional_graph, set_condition
from numba import cuda

__all__ = ["measure", "count_to", "tiny"]


def _count_to_ref(grid, block, a, n, h):
    a[0] += 1
    if a[0] >= n:
        set_condition(h, 0)


@kernel(reference=_count_to_ref)
def count_to(a, n, h):
    """One WHILE iteration: count, and stop the loop once the count reaches ``n``."""
    if cuda.grid(1) == 0:
        a[0] += 1
        if a[0] >= n:
            set_condition(h, 0)


def _tiny_ref(grid, block, a):
    a[0] += 1


@kernel(reference=_tiny_ref)
def tiny(a):
    """The same work without a condition: the plain kernel node to compare with."""
    if cuda.grid(1) == 0:
        a[0] += 1


def _while_exec(a, n, s):
    g = conditional_graph()
    c = g.condition(default=1)
    with g.while_loop(c).capture(s):
        count_to[1, 1, s](a, n, c.arg)
    return g, g.instantiate()


def _plain_exec(a, n, s):
    g = conditional_graph()
    with g.capture(s):
        for _ in range(n):
            tiny[1, 1, s](a)
    return g, g.instantiate()


def _if_chain_exec(a, n, s, with_if):
    g = conditional_graph()
    prev = []
    for _ in range(n):
        with g.capture(s, deps=prev) as cap:
            tiny[1, 1, s](a)
        prev = cap.nodes
        if with_if:
            body = g.if_then(g.condition(default=0), deps=prev)
            with body.capture(s):
                tiny[1, 1, s](a)
            prev = [body.node]
    return g, g.instantiate()


def measure(stream, repeat: int = 10) -> dict:
    """``{"while_iteration_us", "conditional_node_us"}`` with the raw medians beside them (µs)."""
    s = stream
    a = to_device(np.zeros(1, np.int64))
    check(rt.cudaDeviceSynchronize())
    ptr = a.device_ctypes_pointer.value
    out = {}
    for label, make in (("while", _while_exec), ("plain", _plain_exec)):
        for n in (10, 1000):
            g, ex = make(a, n, s)

            def go(ex=ex):
                # the WHILE counts a up to n: reset it first, so every launch runs n iterations
                check(rt.cudaMemsetAsync(ptr, 0, 8, s.handle))
                ex.launch(s)
            out[f"{label}_{n}_us"] = timing.gpu_measure(go, s, repeat=repeat).median
            ex.close()
            g.close()
        out[f"{label}_us_per_step"] = (out[f"{label}_1000_us"] - out[f"{label}_10_us"]) / 990
    out["while_iteration_us"] = out["while_us_per_step"] - out["plain_us_per_step"]
    n = 100
    for label, with_if in (("kernels", False), ("kernels_plus_false_if", True)):
        g, ex = _if_chain_exec(a, n, s, with_if)
        out[f"{label}_{n}_us"] = timing.gpu_measure(lambda ex=ex: ex.launch(s), s,
                                                    repeat=repeat).median
        ex.close()
        g.close()
    out["conditional_node_us"] = (out[f"kernels_plus_false_if_{n}_us"] - out[f"kernels_{n}_us"]) / n
    return out

"""What the capstone decoder's launches and waits cost, measured the way the simulator charges them.

* ``decode_node_us``: the GPU time of one node of the decoder's step graph, its gap included:
  5 step graphs back to back between CUDA events, per node. (``labkit calibrate`` stores it less
  the graph-node gap as ``decode_kernel_us``, what the simulator charges each decoder kernel.)
  The decoder's kernels are not the calibration's tiny ``add_one``: block reductions over 64
  threads, with a ``syncthreads`` per step, and loops over rows; on the H200 they take about
  twice its time, and a decode step is 65 of them.
* ``numba_launch_per_array_us``: what each device-array argument adds to an eager numba launch
  (numba types and marshals every argument in Python, an array as several C values): ``store_kv``
  (5 arrays) less ``silu`` (1 array), per array. The calibration's launch figure is a 1-array
  kernel's.
* ``blocking_sync_wake_us`` and ``blocking_sync_cpu_us``: a wait on a ``cudaEventBlockingSync``
  event sleeps, and the thread wakes some time after the GPU is done: the wake-up's wall time is
  that wait's time less a spinning wait's on the same kernel; its host CPU (this process's, every
  thread), the blocking call's CPU time less ``sync_us`` (the call's own cost).
"""
from __future__ import annotations

import numpy as np

from ..backends import cpu_us, host_us, rt
from ..course import decoder as dec
from ..course.workloads import busy
from .. import timing
from .._errors import check
from .._handles import stream_handle
from .._kernel import to_device

__all__ = ["measure"]

K = 50                  # eager launches per timing
BUSY_ITERS = 50_000     # ~0.5 ms of GPU work on the H200: the waits below really wait


def _event(flags):
    return check(rt.cudaEventCreateWithFlags(flags), "cudaEventCreateWithFlags")


def _wait_costs(stream, ev, x) -> tuple[float, float]:
    """(wall µs from the launch to the wait's return, CPU µs of the wait) for ``busy`` + ``ev``."""
    h = stream_handle(stream)
    t0 = host_us()
    busy[1, 32, stream](x, BUSY_ITERS)
    check(rt.cudaEventRecord(ev, h), "cudaEventRecord")
    c0 = cpu_us()
    check(rt.cudaEventSynchronize(ev), "cudaEventSynchronize")
    return host_us() - t0, cpu_us() - c0


def measure(stream, repeat: int = 10) -> dict:
    """The decoder's cost figures (µs; medians), with the raw medians beside them."""
    s = stream
    m = dec.make_model(seed=0)
    ex = dec.capture_step(m, s)
    per = 5 * m.cfg.kernels_per_token
    pos = m.state["pos"].device_ctypes_pointer.value

    def five_steps():
        # from position 0 each time: every replay moves the position on, and the KV cache
        # has max_seq rows
        check(rt.cudaMemsetAsync(pos, 0, 4, stream_handle(s)), "cudaMemsetAsync")
        for _ in range(5):
            ex.launch(s)
    out = {"decode_node_us": timing.gpu_measure(five_steps, s, repeat=repeat, per=per).median}
    ex.close()
    st = m.state

    def eager(kern, grid, *args):
        def go():
            for _ in range(K):
                kern[grid, dec.TPB, s](*args)
        return go
    one = eager(dec.silu, 2, st["u"])
    five = eager(dec.store_kv, 1, st["k"], st["v"], st["kc"][0], st["vc"][0], st["pos"])
    one(); five(); s.synchronize()
    t1 = timing.measure(one, sync=s, per=K, repeat=repeat).median
    t5 = timing.measure(five, sync=s, per=K, repeat=repeat).median
    out.update(silu_launch_us=t1, store_kv_launch_us=t5, numba_launch_per_array_us=(t5 - t1) / 4)
    x = to_device(np.zeros(1024, np.float32))
    spin = _event(rt.cudaEventDisableTiming)
    block = _event(rt.cudaEventDisableTiming | rt.cudaEventBlockingSync)
    _wait_costs(s, spin, x)
    _wait_costs(s, block, x)
    walls = {"spin": [], "block": []}
    cpus = []
    for _ in range(repeat):        # interleaved, so drift hits both alike
        walls["spin"].append(_wait_costs(s, spin, x)[0])
        w, c = _wait_costs(s, block, x)
        walls["block"].append(w)
        cpus.append(c)
    rt.cudaEventDestroy(spin)
    rt.cudaEventDestroy(block)
    ws, wb = float(np.median(walls["spin"])), float(np.median(walls["block"]))
    out.update(spin_wait_wall_us=ws, blocking_wait_wall_us=wb,
               blocking_sync_wake_us=max(wb - ws, 0.0),
               blocking_wait_cpu_us=float(np.median(cpus)))
    return out

"""How a host departs from its steady costs, measured as the simulator models it (`labkit.sim.clock.HostNoise`).

``python -m labkit calibrate`` records these in the calibration's ``host_noise``:

* ``call_ratio``: a trace of single ``cudaEventRecord`` calls, in blocks; each call over its
  block's median, as a quantile function (what one call adds or saves around its neighbours').
* ``spikes``: the calls of that trace over ``SPIKE_ABOVE`` × their block's median were held up:
  their share, and what they took beyond the median, as a quantile function.
* ``speed_ratios``: a round's figure over the fastest round's, for every host-paced figure of
  the chain benchmark's rounds (`speed_ratios`); those above ``slow_above`` (1.25) are slow
  stretches.
* ``stretch_us``: a slow stretch's mean length, from the same trace (runs of blocks whose median
  is over ``slow_above`` × the fastest tenth's); the trace's length where it saw none.
* ``drift_us``: outside slow stretches, how long one speed lasts: the trace's length over the
  number of jumps between two blocks' medians well beyond their sampling noise.
* ``warmup_us``: a new kernel's first launch (numba's JIT, the module load), a new stream's first
  launch and a new event's first record, each less the same call when steady.
"""
from __future__ import annotations

import numpy as np

import labkit
from labkit import timing
from labkit.backends import is_gpu

__all__ = ["QUANTILES", "SLOW_ABOVE", "SPIKE_ABOVE", "HOST_PACED", "call_trace", "speed_ratios", "warmup", "measure"]

QUANTILES = [0.001, 0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 0.999]
SLOW_ABOVE = 1.25          # a round or block this much over the fastest: a slow stretch
SPIKE_ABOVE = 2.0          # a call this much over its block's median: held up, not jitter
SPIKE_QUANTILES = [0.0, 0.5, 0.9, 0.99, 1.0]
# the chain benchmark's figures that the host paces (graph_us_per_kernel is the GPU's, and
# first_launch_us mostly the upload's)
HOST_PACED = ["eager_us_per_kernel", "prepared_us_per_kernel", "graph_launch_us", "capture_us",
              "instantiate_us", "exec_update_us", "node_update_us", "raw_node_update_us",
              "explicit_build_us"]


def ratios_split(ratios, per_block: int):
    """``ratios`` (all blocks' calls, in order) cut back into blocks."""
    return np.asarray(ratios).reshape(-1, per_block)


def call_trace(stream, blocks: int | None = None, per_block: int = 50) -> dict:
    """``blocks`` × ``per_block`` single ``cudaEventRecord`` calls, each timed alone.

    Returns ``call_ratio`` (quantiles and ratios), ``stretch_us``, ``drift_us`` and what they
    came from.
    ``blocks``: 20,000 on a GPU (a few seconds), 400 on the simulator (each call is slower in
    real time there)."""
    blocks = blocks or (20000 if is_gpu else 400)   # the simulator computes in real time
    rt = labkit.rt
    ev = labkit.Event()
    h, sh = ev.handle, stream.handle
    for _ in range(per_block):                     # the event's and the stream's first use
        rt.cudaEventRecord(h, sh)
    meds, ratios, starts = [], [], []
    for _ in range(blocks):
        starts.append(labkit.host_us())
        t = np.empty(per_block)
        for i in range(per_block):
            t0 = labkit.host_us()
            rt.cudaEventRecord(h, sh)
            t[i] = labkit.host_us() - t0
        m = float(np.median(t))
        meds.append(m)
        ratios.append(t / m)
    stream.synchronize()
    ev.close()
    ratios = np.concatenate(ratios)
    over = np.concatenate([r * m for r, m in zip(ratios_split(ratios, per_block), meds)]) - np.repeat(meds, per_block)
    held = ratios > SPIKE_ABOVE                  # far beyond the jitter: the call was held up
    spikes = {"per_call": float(held.mean()), "quantiles": SPIKE_QUANTILES,
              "us": [float(v) for v in np.quantile(over[held], SPIKE_QUANTILES)] if held.any()
              else [0.0] * len(SPIKE_QUANTILES)}
    ratios = ratios[~held]
    block_us = float(np.diff(starts).mean()) if blocks > 1 else float(np.sum(meds))
    span_us = block_us * blocks
    # the host at speed: the fastest tenth of the blocks (the very fastest is partly luck)
    speed = np.asarray(meds) / np.percentile(meds, 10)
    # slow stretches: runs of at least three blocks above SLOW_ABOVE × the host at speed
    above = speed > SLOW_ABOVE
    slow = above & (np.convolve(above, np.ones(3), "same") >= 2) if blocks > 2 else above
    runs = int(np.sum(slow[1:] & ~slow[:-1]) + slow[0]) if blocks else 0
    if runs:
        stretch, how = block_us * slow.sum() / runs, f"{runs} slow stretches"
    else:
        stretch, how = span_us, "no slow stretch in the trace: its length"
    # drift, outside them: a jump between two blocks' medians well beyond their sampling noise
    # (estimated from the typical jump, which the rarer real changes hardly move)
    fast = np.log(speed[~slow])
    d = np.abs(np.diff(fast))
    noise = float(np.median(d)) if len(d) else 0.0
    changes = int(np.sum(d > max(6 * noise, 0.02))) if len(d) else 0
    drift = block_us * len(fast) / (changes + 1)
    return {"call_ratio": {"quantiles": QUANTILES,
                           "ratios": [float(v) for v in np.quantile(ratios, QUANTILES)]},
            "spikes": spikes, "stretch_us": float(stretch), "drift_us": float(max(drift, block_us)),
            "about": f"{blocks} blocks of {per_block} cudaEventRecord calls, {block_us:.0f} µs a "
                     f"block: {how}, {changes} changes of speed outside them"}


def speed_ratios(per_round: dict) -> list[float]:
    """Each round's figure over the fastest round's, for the host-paced figures of the chain
    benchmark's ``per_round`` (name -> one value per round)."""
    out = []
    for key in HOST_PACED:
        vals = [v for v in per_round.get(key, []) if v]
        if vals:
            out += [v / min(vals) for v in vals]
    return sorted(float(v) for v in out) or [1.0]


def _fresh_kernel():
    """A kernel no one has launched: a new function object, so numba compiles it anew."""
    from numba import cuda

    def _ref(grid, block, x):
        x[: min(x.size, grid[0] * block[0])] += 3.0

    @labkit.kernel(reference=_ref)
    def fresh(x):
        i = cuda.grid(1)
        if i < x.size:
            x[i] += 3.0
    return fresh


def warmup(stream, x, steady_kernel, grid: int = 4, block: int = 256, repeat: int = 10) -> dict:
    """What a first use costs beyond a steady one (µs): ``kernel_first_launch`` (a new kernel's
    first launch and sync, less a steady one), ``stream_first_use`` (a new stream's first
    launch and sync, less its second) and ``event_first_use`` (a new event's
    first record, less its second). ``steady_kernel``: a compiled kernel taking ``x`` (the stream's
    launches). Each is the median over ``repeat`` new objects, at least 0."""
    rt = labkit.rt

    def once(fn, sync):
        t0 = labkit.host_us()
        fn()
        sync.synchronize()
        return labkit.host_us() - t0

    kern = []
    for _ in range(max(1, repeat // 5)):          # compiling is slow on a GPU: fewer of these
        k = _fresh_kernel()
        first = once(lambda: k[grid, block, stream](x), stream)
        steady = timing.measure(lambda: k[grid, block, stream](x), sync=stream, warmup=1, repeat=5).median
        kern.append(first - steady)
    strm, evt = [], []
    for _ in range(repeat):
        s = labkit.Stream()
        a = once(lambda: steady_kernel[grid, block, s](x), s)
        b = once(lambda: steady_kernel[grid, block, s](x), s)
        strm.append(a - b)
        e = labkit.Event()
        rec = []
        for _ in range(2):
            t0 = labkit.host_us()
            rt.cudaEventRecord(e.handle, s.handle)
            rec.append(labkit.host_us() - t0)
        evt.append(rec[0] - rec[1])
        s.synchronize()
        e.close()
        s.close()
    return {name: max(float(np.median(v)), 0.0) for name, v in
            (("kernel_first_launch", kern), ("stream_first_use", strm), ("event_first_use", evt))}


def measure(stream, x, steady_kernel, per_round: dict, blocks: int | None = None,
            per_block: int = 50) -> dict:
    """The calibration's ``host_noise`` section (see the module's docstring); ``x`` and
    ``steady_kernel`` as `warmup` takes them."""
    trace = call_trace(stream, blocks, per_block)
    warm = warmup(stream, x, steady_kernel)
    rounds = len(next(iter(per_round.values()), []))
    return {"source": (f"measured by labkit calibrate: call_ratio, spikes, stretch_us and drift_us from {trace['about']}; "
                       f"speed_ratios from the chain benchmark's {rounds} rounds, "
                       f"{len(HOST_PACED)} host-paced figures; warmup_us: new kernels, streams and "
                       "events against steady ones"),
            "call_ratio": trace["call_ratio"], "spikes": trace["spikes"], "speed_ratios": speed_ratios(per_round),
            "slow_above": SLOW_ABOVE, "stretch_us": trace["stretch_us"], "drift_us": trace["drift_us"],
            "warmup_us": warm}

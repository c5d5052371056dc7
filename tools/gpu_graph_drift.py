"""Diagnose: does the chain benchmark's graph figure move within one process, and when?

Runs `measure_chain` fresh, then after each step of what `labkit calibrate` does, printing
graph µs/kernel, the CUPTI-free GPU time per node (events) and the SM clock (nvidia-smi).
"""
import json
import subprocess
import time

import numpy as np

import labkit
from labkit import calibrate, timing
from labkit.bench import measure_chain, _capture_chain, N
from labkit.workloads import busy, chain


def clock():
    out = subprocess.run(["nvidia-smi", "--query-gpu=clocks.sm,clocks.mem,pstate", "--format=csv,noheader"],
                         capture_output=True, text=True).stdout.strip()
    return out


def row(tag, s=None, ex=None):
    b = measure_chain(200)
    extra = ""
    if ex is not None:
        g = timing.gpu_measure(lambda: ex.launch(s), s, repeat=30, per=200).median
        extra = f" ex-gpu/node {g:.3f}"
    print(f"{tag:28s} graph/k {b['graph_us_per_kernel']:.3f} eager/k {b['eager_us_per_kernel']:.1f} "
          f"launch {b['graph_launch_us']:.2f} inst {b['instantiate_us']:.0f}{extra} | {clock()}", flush=True)


row("fresh")
row("fresh again")
s = labkit.Stream()
x = labkit.to_device(np.zeros(N, np.float32)); y = labkit.to_device(np.zeros(N, np.float32))
chain(2, x, s); busy[1, 32, s](x, 10); s.synchronize()
row("after busy kernel")
g = _capture_chain(200, x, s); ex = g.instantiate(); ex.launch(s); s.synchronize()
row("after calibrate's ex", s, ex)
calibrate._host_round(x, y, s, ex)
row("after one host round", s, ex)
calibrate._host_round(x, y, s, ex)
row("after two host rounds", s, ex)
t0 = time.time()
while time.time() - t0 < 2:
    ex.launch(s)
s.synchronize()
row("after 2 s of replays", s, ex)
time.sleep(3)
row("after 3 s idle", s, ex)

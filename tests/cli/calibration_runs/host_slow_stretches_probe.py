"""Calibrate's interleaving (H0 B0 B1 H1 H2 B2 ...): which step makes the bench slower? Prints the CPU
the process runs on, and times each piece of the host round."""
import os, sys, time
import numpy as np
import labkit
from labkit.cli import calibrate as C
from labkit.cli.bench import measure_chain
from labkit.course.workloads import add_one, busy, chain

def cpu():
    return open("/proc/self/stat").read().split()[38]
def show(tag, r):
    print(tag, f"cpu={cpu()} graph_launch={r['graph_launch_us']:.2f} raw_nu={r['raw_node_update_us']:.2f} "
          f"capture={r['capture_us']:.0f} inst={r['instantiate_us']:.0f}", flush=True)
s = labkit.Stream()
x = labkit.to_device(np.zeros(C.N, np.float32)); y = labkit.to_device(np.zeros(C.N, np.float32))
chain(2, x, s); busy[1, 32, s](x, 10); s.synchronize()
g = C._capture_chain(C.K, x, s); ex = g.instantiate(); ex.launch(s); s.synchronize()
show("start", measure_chain(200))
for i in range(3):
    t0 = time.perf_counter(); C._host_round(x, y, s, ex); dt = time.perf_counter() - t0
    print(f"host round {i}: {dt:.2f} s", flush=True)
    for j in range(3):
        show(f"  after H{i}, bench {j}", measure_chain(200))
    time.sleep(1.0)
    show(f"  after H{i} + 1 s", measure_chain(200))

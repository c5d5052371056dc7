"""Record and draw the timeline of 20 eager and 20 graph-launched add_one kernels.

python tools/gpu_timeline.py OUT.png  (on a GPU: CUPTI spans; on the simulator: the model's)
"""
import sys

import numpy as np

import labkit
from labkit import plot, timing
from labkit.workloads import add_one, chain

s = labkit.Stream()
x = labkit.to_device(np.zeros(1024, np.float32))
chain(2, x, s)
with labkit.capture(s) as cap:
    chain(20, x, s)
ex = cap.graph.instantiate()
ex.launch(s)
s.synchronize()
with timing.timeline() as rec:
    chain(20, x, s)
    ex.launch(s)
    s.synchronize()
tl = rec.timeline
kern = sorted((sp for sp in tl.spans if sp.kind == "kernel"), key=lambda sp: sp.start_us)
starts = np.array([sp.start_us for sp in kern])
print(f"source={tl.source} kernels={len(kern)}")
if len(kern) >= 40:
    print(f"eager start-to-start median {np.median(np.diff(starts[:20])):.2f} µs; "
          f"graph {np.median(np.diff(starts[20:40])):.2f} µs; kernel duration median "
          f"{np.median([sp.end_us - sp.start_us for sp in kern]):.2f} µs")
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
fig, ax = plt.subplots(figsize=(12, 3.5))
plot.timeline(tl, ax=ax, title="20 eager launches, then one graph of 20 kernels")
fig.savefig(sys.argv[1] if len(sys.argv) > 1 else "timeline.png", dpi=120, bbox_inches="tight")

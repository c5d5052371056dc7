"""Session-3 probe (issue 19): what in nb08's process makes the device loop's figures differ from
the command line's: conditional executables left alive, another model and its step graph."""
import sys
import numpy as np
import labkit
from labkit import set_condition
from labkit.course import decoder as dec
from labkit.cli import decode_bench


def rw(tag):
    for row in decode_bench.by_step_size((1, 4), repeat=3):
        S = 1e6 / row["graph_back_to_back_tokens_per_s"]
        R = 1e6 / row["graph_tokens_per_s"] - S
        W = 1e6 / row["device_loop_tokens_per_s"] - S
        print(f"{tag:22s} {row['kernels_per_token']:3d} kernels S {S:7.1f} R {R:5.1f} W {W:5.1f} "
              f"loop/graph {row['device_loop_vs_graph']:.3f}", flush=True)


@labkit.kernel
def count_to(a, n, h):
    a[0] += 1
    if a[0] >= n:
        set_condition(h, 0)


s = labkit.Stream()
rw("fresh")
rw("fresh again")
counter = labkit.to_device(np.zeros(1, np.int64))
alive = []
for _ in range(3):
    g = labkit.conditional_graph()
    c = g.condition(default=1)
    with g.while_loop(c).capture(s):
        count_to[1, 1, s](counter, 50, c.arg)
    ex = g.instantiate(); ex.launch(s); s.synchronize()
    alive.append((g, ex))
rw("3 WHILE execs alive")
for g, ex in alive:
    ex.close(); g.close()
rw("closed them")
model = dec.make_model(seed=0)
sx = dec.capture_step(model, s)
rw("64-pos model+step alive")
sx.close(); del model
rw("step closed, model freed")

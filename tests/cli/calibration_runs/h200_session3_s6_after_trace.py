"""Session-3 probe (issue 15/19): does a traced timeline leave the device loop dearer afterwards?
nb08 inside Jupyter measured W 5.6-5.9 us against 3-4.4 from the CLI; nb08 traces a timeline
(cell 3) before its benches. Measures by_step_size before and after such a trace."""
import json, sys
import labkit
from labkit import timing
from labkit.course import decoder as dec
from labkit.cli import decode_bench


def rw(tag):
    for row in decode_bench.by_step_size((1, 4), repeat=3):
        S = 1e6 / row["graph_back_to_back_tokens_per_s"]
        R = 1e6 / row["graph_tokens_per_s"] - S
        W = 1e6 / row["device_loop_tokens_per_s"] - S
        print(f"{tag:14s} {row['kernels_per_token']:3d} kernels S {S:7.1f} R {R:5.1f} W {W:5.1f} "
              f"loop/graph {row['device_loop_vs_graph']:.3f} match {row['tokens_match']}", flush=True)


mode = sys.argv[1] if len(sys.argv) > 1 else "trace"
rw("before")
s = labkit.Stream()
model = dec.make_model(seed=0)
ex = dec.capture_step(model, s)
if mode == "trace":
    with timing.timeline("three tokens") as rec:
        dec.generate_graph(model, 1, 3, s, exec_=ex)
    print("note:", rec.timeline.note, flush=True)
rw("after " + mode)
rw("after again")

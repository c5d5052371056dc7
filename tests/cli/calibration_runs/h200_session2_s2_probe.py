"""Session-2 probe (issue 15/19): instantiate costs 03 vs 05 vs 06, kernel bandwidth, decode by layers,
and a traced timeline's notes and graph-launch shares. Prints figures; run with LABKIT_BACKEND=cuda."""
import json, statistics as st, sys, time
import numpy as np
import labkit
from labkit import timing
from labkit.course import workloads, kernels_extra

out = {}
s = labkit.Stream()
x = labkit.to_device(np.zeros(1024, np.float32))
workloads.add_one[4, 256, s](x); s.synchronize()

def chain_graph(n, buf):
    with labkit.capture(s) as cap:
        workloads.chain(n, buf, s, 4, 256)
    return cap.graph

def us(fn):
    t0 = time.perf_counter_ns(); r = fn(); return (time.perf_counter_ns() - t0) / 1e3, r

# A. instantiate: 03's way (graph_phases) vs 05's (keep alive) vs close each
for n in (1, 100, 1000):
    ph = timing.graph_phases(lambda st_: workloads.chain(n, x, st_, 4, 256), s, repeat=5, steady=5)
    g = chain_graph(n, x)
    rows = {"close_each": [], "keep_alive": [], "close_each_2": []}
    for key in ("close_each", "keep_alive", "close_each_2"):
        live = []
        for _ in range(7):
            t, ex = us(g.instantiate)
            rows[key].append(t)
            if key == "keep_alive":
                live.append(ex)
            else:
                ex.close()
        for ex in live:
            ex.close()
    # destroy cost of a 1000-node exec
    dts = []
    for _ in range(3):
        ex = g.instantiate(); t, _ = us(ex.close); dts.append(t)
    g.close()
    out[f"inst_{n}"] = {"phases_capture": ph["capture"].median, "phases_instantiate": ph["instantiate"].median,
                        "phases_instantiate_samples": list(ph["instantiate"].samples),
                        **{k: v for k, v in rows.items()}, "close_us": dts}
    print(n, json.dumps(out[f"inst_{n}"]), flush=True)

# 06's way: one-node capture + instantiate + launch, pieces
pieces = {"capture": [], "instantiate": [], "launch_sync": [], "close": []}
for _ in range(20):
    t0 = time.perf_counter_ns()
    with labkit.capture(s) as cap:
        workloads.add_one[4, 256, s](x)
    t1 = time.perf_counter_ns(); ex = cap.graph.instantiate(); t2 = time.perf_counter_ns()
    ex.launch(s); s.synchronize(); t3 = time.perf_counter_ns(); ex.close(); cap.graph.close(); t4 = time.perf_counter_ns()
    for k, a, b in (("capture", t0, t1), ("instantiate", t1, t2), ("launch_sync", t2, t3), ("close", t3, t4)):
        pieces[k].append((b - a) / 1e3)
out["one_node_06"] = {k: st.median(v) for k, v in pieces.items()}
print("06-style one node", out["one_node_06"], flush=True)

# B. bandwidth of add_one over 64 MiB and 32 MiB (one thread per element), 10 back to back
F = kernels_extra.fusion_sizes()
bw = {}
for n in (F["n"] // 2, F["n"]):
    a = labkit.to_device(np.zeros(n, np.float32))
    grid = (n + 255) // 256
    t = timing.gpu_measure(lambda: [workloads.add_one[grid, 256, s](a) for _ in range(10)], s, repeat=10, per=10).median
    bw[n] = t
    print("add_one", n * 4 >> 20, "MiB:", round(t, 2), "µs per kernel", flush=True)
half, full = bw[F["n"] // 2], bw[F["n"]]
out["kernel_GBps"] = 2 * (F["n"] // 2) * 4 / ((full - half) * 1e3)
out["kernel_64MiB_us"] = full
print("kernel bandwidth from the difference:", round(out["kernel_GBps"]), "GB/s", flush=True)

# C. decode by layers
from labkit.cli import decode_bench
out["by_layers"] = decode_bench.by_step_size((1, 2, 4), repeat=5)
for r in out["by_layers"]:
    print(r, flush=True)

# D. a traced timeline like 01's: 20 eager launches, then the 20-kernel graph twice
with labkit.capture(s) as cap:
    workloads.chain(20, x, s, 4, 256)
ex = cap.graph.instantiate(upload_stream=s); ex.launch(s); s.synchronize()
raw = []
for _ in range(30):
    t0 = time.perf_counter_ns(); ex.launch(s); raw.append((time.perf_counter_ns() - t0) / 1e3); s.synchronize()
for trial in range(3):
    with timing.timeline() as rec:
        workloads.chain(20, x, s, 4, 256); s.synchronize()
        ex.launch(s); s.synchronize()
        ex.launch(s); s.synchronize()
    tl = rec.timeline
    gl = [(round(sp.duration_us, 1), round(sp.added_us, 1)) for sp in tl.row_spans("CPU") if sp.name == "cudaGraphLaunch"]
    print(f"trace {trial}: graph launches (duration, hatched) {gl}; untraced median {st.median(raw):.1f}; note: {tl.note}", flush=True)
    out[f"trace_{trial}"] = {"graph": gl, "note": tl.note}
json.dump(out, open(sys.argv[1], "w"), indent=1)

"""Diag: which first launches in a trace cost extra (per trace? per function? per graph?), and
labkit.capture against the raw calls for a one-kernel capture."""
import statistics as st, time
import numpy as np
import labkit
from labkit import timing, rt
from labkit.course import workloads
from labkit._handles import stream_handle

s = labkit.Stream()
x = labkit.to_device(np.zeros(1024, np.float32))
add_one, scale = workloads.add_one, workloads.scale
for _ in range(3):
    add_one[4, 256, s](x); scale[4, 256, s](x, 1.0)
s.synchronize()

def chain_exec(k, n):
    with labkit.capture(s) as cap:
        for _ in range(n):
            k(x)
    ex = cap.graph.instantiate(upload_stream=s); ex.launch(s); s.synchronize()
    return ex

ga = chain_exec(lambda a: add_one[4, 256, s](a), 20)
ga2 = chain_exec(lambda a: add_one[4, 256, s](a), 20)
gs = chain_exec(lambda a: scale[4, 256, s](a, 1.0), 20)

def spans(tl, name=None):
    return [round(sp.duration_us, 1) for sp in tl.row_spans("CPU") if sp.kind in ("launch", "graph")]

for trial in range(3):
    with timing.timeline() as rec:
        for _ in range(4):
            add_one[4, 256, s](x); s.synchronize()
        ga.launch(s); s.synchronize(); ga.launch(s); s.synchronize()
        ga2.launch(s); s.synchronize()
        for _ in range(3):
            scale[4, 256, s](x, 1.0); s.synchronize()
        gs.launch(s); s.synchronize(); gs.launch(s); s.synchronize()
    print(f"trace {trial}: add_one x4, ga x2, ga2, scale x3, gs x2 ->", spans(rec.timeline), flush=True)
# a trace where the graph of scale comes first (scale not launched eagerly in it)
for trial in range(2):
    with timing.timeline() as rec:
        gs.launch(s); s.synchronize(); gs.launch(s); s.synchronize()
        ga.launch(s); s.synchronize()
        add_one[4, 256, s](x); s.synchronize(); add_one[4, 256, s](x); s.synchronize()
    print(f"trace g{trial}: gs x2, ga, add_one x2 ->", spans(rec.timeline), flush=True)
# a brand-new kernel in a trace
from numba import cuda
@labkit.kernel
def fresh_k(a):
    i = cuda.grid(1)
    if i < a.size:
        a[i] *= 1.0
fresh_k[4, 256, s](x); s.synchronize()
with timing.timeline() as rec:
    for _ in range(3):
        fresh_k[4, 256, s](x); s.synchronize()
print("trace new kernel x3 ->", spans(rec.timeline), rec.timeline.note, flush=True)

# capture: labkit vs raw, one kernel
h = stream_handle(s)
raw = {"begin": [], "launch": [], "end": [], "total": []}
lab = {"total": [], "launch_in": []}
for _ in range(30):
    t0 = time.perf_counter_ns()
    rt.cudaStreamBeginCapture(h, rt.cudaStreamCaptureMode.cudaStreamCaptureModeGlobal)
    t1 = time.perf_counter_ns(); add_one[4, 256, s](x); t2 = time.perf_counter_ns()
    err, g = rt.cudaStreamEndCapture(h); t3 = time.perf_counter_ns()
    rt.cudaGraphDestroy(g)
    for k, a, b in (("begin", t0, t1), ("launch", t1, t2), ("end", t2, t3), ("total", t0, t3)):
        raw[k].append((b - a) / 1e3)
    t0 = time.perf_counter_ns()
    with labkit.capture(s) as cap:
        t1 = time.perf_counter_ns(); add_one[4, 256, s](x); t2 = time.perf_counter_ns()
    t3 = time.perf_counter_ns()
    cap.graph.close()
    lab["total"].append((t3 - t0) / 1e3); lab["launch_in"].append((t2 - t1) / 1e3)
print("raw capture (median µs):", {k: round(st.median(v), 1) for k, v in raw.items()})
print("labkit capture (median µs):", {k: round(st.median(v), 1) for k, v in lab.items()})
# 200-kernel chain both ways
for n in (1, 10, 200):
    r, l = [], []
    for _ in range(7):
        t0 = time.perf_counter_ns()
        rt.cudaStreamBeginCapture(h, rt.cudaStreamCaptureMode.cudaStreamCaptureModeGlobal)
        for _ in range(n): add_one[4, 256, s](x)
        err, g = rt.cudaStreamEndCapture(h); r.append((time.perf_counter_ns() - t0) / 1e3); rt.cudaGraphDestroy(g)
        t0 = time.perf_counter_ns()
        with labkit.capture(s) as cap:
            for _ in range(n): add_one[4, 256, s](x)
        l.append((time.perf_counter_ns() - t0) / 1e3); cap.graph.close()
    print(f"capture of {n}: raw {st.median(r):.1f} µs, labkit {st.median(l):.1f} µs", flush=True)
# graph_phases at 1 node, repeat 9, to see capture samples
ph = timing.graph_phases(lambda st_: workloads.chain(1, x, st_, 4, 256), s, repeat=9, steady=5)
print("graph_phases 1 node capture samples", [round(v, 1) for v in ph["capture"].samples],
      "instantiate", [round(v, 1) for v in ph["instantiate"].samples], flush=True)

"""Session-4 probe (issue 15): labkit's share of a one-kernel capture+instantiate+launch,
piece by piece, beside the bare cuda-python calls, interleaved rounds (host µs, medians)."""
import statistics as st, time, cProfile, pstats, io
import numpy as np
import labkit
from numba import cuda
from labkit import rt
from labkit.backend import frees_held
from labkit._graph import Graph
from labkit.course.workloads import add_one

s = labkit.Stream(); h = s.handle
x = labkit.to_device(np.zeros(1024, np.float32)); add_one[4, 256, s](x); s.synchronize()
G = rt.cudaStreamCaptureMode.cudaStreamCaptureModeGlobal
inner = {"raw": [], "labkit": []}

def raw_all():
    rt.cudaStreamBeginCapture(h, G); add_one[4, 256, s](x)
    _, g = rt.cudaStreamEndCapture(h); _, ex = rt.cudaGraphInstantiate(g, 0)
    rt.cudaGraphLaunch(ex, h); rt.cudaStreamSynchronize(h)
    rt.cudaGraphExecDestroy(ex); rt.cudaGraphDestroy(g)
def lab_all():
    with labkit.capture(s) as cap:
        add_one[4, 256, s](x)
    with cap.graph as g, g.instantiate() as ex:
        ex.launch(s); s.synchronize()
def lab_cap_raw_rest():
    with labkit.capture(s) as cap:
        add_one[4, 256, s](x)
    g = cap.graph.handle; _, ex = rt.cudaGraphInstantiate(g, 0)
    rt.cudaGraphLaunch(ex, h); rt.cudaStreamSynchronize(h)
    rt.cudaGraphExecDestroy(ex); cap.graph.close()
def raw_cap_lab_rest():
    rt.cudaStreamBeginCapture(h, G); add_one[4, 256, s](x)
    _, g = rt.cudaStreamEndCapture(h)
    with Graph(g) as gg, gg.instantiate() as ex:
        ex.launch(s); s.synchronize()
def raw_cap1_timed():
    rt.cudaStreamBeginCapture(h, G)
    a = time.perf_counter_ns(); add_one[4, 256, s](x); inner["raw"].append((time.perf_counter_ns() - a) / 1e3)
    _, g = rt.cudaStreamEndCapture(h); rt.cudaGraphDestroy(g)
def lab_cap1_timed():
    with labkit.capture(s) as cap:
        a = time.perf_counter_ns(); add_one[4, 256, s](x); inner["labkit"].append((time.perf_counter_ns() - a) / 1e3)
    cap.graph.close()
def raw_cap0():
    rt.cudaStreamBeginCapture(h, G); _, g = rt.cudaStreamEndCapture(h); rt.cudaGraphDestroy(g)
def lab_cap0():
    with labkit.capture(s) as cap:
        pass
    cap.graph.close()
def held_new():
    with frees_held():
        pass
def held_numba():
    with cuda.defer_cleanup():
        pass
def eager():
    add_one[4, 256, s](x)

rows = dict(raw_all=raw_all, lab_all=lab_all, lab_cap_raw_rest=lab_cap_raw_rest,
            raw_cap_lab_rest=raw_cap_lab_rest, raw_cap0=raw_cap0, lab_cap0=lab_cap0,
            raw_cap1_timed=raw_cap1_timed, lab_cap1_timed=lab_cap1_timed,
            held_new=held_new, held_numba=held_numba, eager=eager)
res = {k: [] for k in rows}
for r in range(6):
    order = list(rows.items()) if r % 2 == 0 else list(rows.items())[::-1]
    for name, fn in order:
        for _ in range(20): fn()
        s.synchronize()
        v = []
        for _ in range(200):
            a = time.perf_counter_ns(); fn(); v.append((time.perf_counter_ns() - a) / 1e3)
        s.synchronize()
        res[name].append(st.median(v))
for name, meds in res.items():
    print(f"{name:18s} median over rounds {st.median(meds):8.2f} µs   rounds {[round(m, 1) for m in meds]}")
for k, v in inner.items():
    print(f"launch inside {k} capture: median {st.median(v):.2f} µs  p10 {np.percentile(v, 10):.2f} p90 {np.percentile(v, 90):.2f}")
pr = cProfile.Profile(); pr.enable()
for _ in range(300): lab_all()
pr.disable(); out = io.StringIO(); pstats.Stats(pr, stream=out).sort_stats("tottime").print_stats(30)
print(out.getvalue()[-7000:])

"""Session-4 probe: why a launch inside labkit.capture costs ~6 us more than inside a bare capture."""
import statistics as st, time
import numpy as np
import labkit
from numba import cuda
from labkit import rt, _capstack
from labkit._capture import Capture
from labkit.backend import frees_held
from labkit.course.workloads import add_one
s = labkit.Stream(); h = s.handle
x = labkit.to_device(np.zeros(1024, np.float32)); add_one[4, 256, s](x); s.synchronize()
G = rt.cudaStreamCaptureMode.cudaStreamCaptureModeGlobal
R = rt.cudaStreamCaptureMode.cudaStreamCaptureModeRelaxed
cfg = add_one.dispatcher[4, 256, cuda.external_stream(h)]
def case(held=False, push=False, numba_direct=False, mode=G, labkit_cap=False):
    v = []
    def f():
        if labkit_cap:
            with labkit.capture(s) as cap:
                a = time.perf_counter_ns(); add_one[4, 256, s](x); v.append(time.perf_counter_ns() - a)
            cap.graph.close(); return
        ctx = frees_held() if held else None
        if ctx: ctx.__enter__()
        st_ = _capstack.push(Capture(s, "global")) if push else None
        rt.cudaStreamBeginCapture(h, mode)
        a = time.perf_counter_ns()
        if numba_direct: cfg(x)
        else: add_one[4, 256, s](x)
        v.append(time.perf_counter_ns() - a)
        _, g = rt.cudaStreamEndCapture(h); rt.cudaGraphDestroy(g)
        if push: _capstack.pop(st_)
        if ctx: ctx.__exit__(None, None, None)
    return f, v
cases = {"bare": dict(), "bare numba direct": dict(numba_direct=True), "held": dict(held=True),
         "pushed": dict(push=True), "held+pushed": dict(held=True, push=True),
         "relaxed": dict(mode=R), "labkit.capture": dict(labkit_cap=True)}
made = {k: case(**kw) for k, kw in cases.items()}
res = {k: [] for k in cases}
for r in range(6):
    items = list(made.items()) if r % 2 == 0 else list(made.items())[::-1]
    for k, (f, v) in items:
        for _ in range(20): f()
        v.clear()
        for _ in range(300): f()
        res[k].append(st.median(v) / 1e3)
for k, m in res.items():
    print(f"launch inside capture, {k:20s} {st.median(m):7.2f} µs  rounds {[round(z, 1) for z in m]}")

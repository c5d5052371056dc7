"""Where labkit.capture's fixed cost goes, against the raw calls (an empty capture, and one kernel)."""
import contextlib, statistics as st, time
import numpy as np
import labkit
from labkit import rt
from labkit.backend import frees_held
from labkit._handles import stream_handle
from labkit.course.workloads import add_one

s = labkit.Stream(); h = stream_handle(s)
x = labkit.to_device(np.zeros(1024, np.float32)); add_one[4, 256, s](x); s.synchronize()
G = rt.cudaStreamCaptureMode.cudaStreamCaptureModeGlobal

def t(fn, n=300):
    for _ in range(20): fn()
    v = []
    for _ in range(n):
        a = time.perf_counter_ns(); fn(); v.append((time.perf_counter_ns() - a) / 1e3)
    return st.median(v)

def raw_empty():
    rt.cudaStreamBeginCapture(h, G); e, g = rt.cudaStreamEndCapture(h); rt.cudaGraphDestroy(g)
def lab_empty():
    with labkit.capture(s) as cap:
        pass
    cap.graph.close()
def raw_one():
    rt.cudaStreamBeginCapture(h, G); add_one[4, 256, s](x); e, g = rt.cudaStreamEndCapture(h); rt.cudaGraphDestroy(g)
def lab_one():
    with labkit.capture(s) as cap:
        add_one[4, 256, s](x)
    cap.graph.close()
def destroy_only():
    rt.cudaStreamBeginCapture(h, G); e, g = rt.cudaStreamEndCapture(h)
    return g
def held():
    with frees_held():
        pass
@contextlib.contextmanager
def cm():
    yield
def cm_only():
    with cm():
        pass
rows = {"raw empty capture (+destroy)": raw_empty, "labkit empty capture (+close)": lab_empty,
        "raw one-kernel capture": raw_one, "labkit one-kernel capture": lab_one,
        "frees_held enter+exit": held, "cudaGetLastError": rt.cudaGetLastError,
        "empty contextmanager": cm_only, "eager add_one": lambda: add_one[4, 256, s](x)}
for r in range(2):
    for name, fn in rows.items():
        print(f"round {r}: {name:32s} {t(fn):8.2f} µs", flush=True)
    s.synchronize()

"""What a CUPTI trace adds to host costs (issue 15). One process, cuda backend.
Prints medians (µs) of the host time of single calls, untraced and inside traces of several kinds."""
import json, os, sys, time
import numpy as np
os.environ.setdefault("LABKIT_BACKEND", "cuda")
import labkit
from labkit import _cupti, timing
from labkit.workloads import add_one
from numba import cuda

out = {}
s = labkit.Stream()
x = labkit.to_device(np.zeros(1024, np.float32))
raw = add_one.dispatcher if hasattr(add_one, "dispatcher") else add_one
nst = cuda.external_stream(int(labkit.stream_handle(s)))
def eager(): raw[4, 256, nst](x)
def lk(): add_one[4, 256, s](x)
p = labkit.prepare(add_one, 4, 256, s, x)
def prep(): p.launch() if hasattr(p, "launch") else p()
with labkit.capture(s) as cap:
    for _ in range(200): add_one[4, 256, s](x)
ex = cap.graph.instantiate()
def glaunch(): ex.launch(s)
calls = {"numba eager": eager, "labkit eager": lk, "prepared": prep, "graph200": glaunch}

def one(fn):
    t0 = time.perf_counter_ns(); fn(); t1 = time.perf_counter_ns(); return (t1 - t0) / 1e3

def untraced(fn, n=200):
    for _ in range(20): fn()
    s.synchronize()
    v = []
    for _ in range(n):
        v.append(one(fn)); s.synchronize()
    return float(np.median(v))

def traced(fn, kinds, finalize, k=5, warm=0):
    _cupti.FINALIZE = finalize
    t_enter = time.perf_counter_ns()
    with _cupti.KernelTrace(kinds=kinds) as tr:
        t_in = time.perf_counter_ns()
        for _ in range(warm): fn(); s.synchronize()
        v = []
        for _ in range(k):
            v.append(one(fn)); s.synchronize()
    t_out = time.perf_counter_ns()
    return {"enter_us": (t_in - t_enter) / 1e3, "calls_us": [round(a, 1) for a in v],
            "exit_us": (t_out - t_in) / 1e3 - sum(v), "records": len(tr.records)}


def graph_trace_only():
    m = _cupti._require(); AK = m.ActivityKind
    _cupti._ensure_callbacks(m)
    res = {}
    for kind in ("GRAPH_TRACE",):
        m.activity_enable(getattr(AK, kind))
        v = []
        for _ in range(6):
            v.append(one(glaunch)); s.synchronize()
        m.activity_flush_all(1)
        m.activity_disable(getattr(AK, kind))
        res[kind] = [round(a, 1) for a in v]
    return res

configs = {
    "all": (_cupti.TRACE_KINDS, True, 0),
    "gpu_detach": (("kernel", "memcpy", "memset"), True, 0),
    "gpu_detach_warm3": (("kernel", "memcpy", "memset"), True, 3),
    "gpu_attached": (("kernel", "memcpy", "memset"), False, 0),
    "runtime_only": (("runtime",), True, 0),
}
which = sys.argv[1]
res = {}
for name, fn in calls.items():
    res[name] = {"untraced": untraced(fn)}
print("untraced", res, flush=True)
if which == "graph_trace":
    res["graph200"]["graph_trace"] = graph_trace_only()
    res["graph200"]["after"] = untraced(glaunch, 50)
else:
    kinds, fin, warm = configs[which]
    for rep in range(2):
        for name, fn in calls.items():
            print("tracing", which, rep, name, flush=True)
            res[name][f"trace{rep}"] = traced(fn, kinds, fin, warm=warm)
            res[name][f"after{rep}"] = untraced(fn, 50)
print("RESULT", which, json.dumps(res), flush=True)

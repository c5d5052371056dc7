"""A GPU check for issue 19 (run from the repository root with LABKIT_BACKEND=cuda): where the device
loop's time and host CPU go — decode_costs, the loop's and back-to-back GPU time per token
(CUDA events), the launch and the blocking wait's CPU (this thread vs the process), and whether
cudaGraphUpload accepts the conditional executable. Prints one JSON line starting "PROBE"."""
import json
import time

import numpy as np

import labkit
from labkit import rt
from labkit.measure import timing
from labkit.course import decoder as dec, device_loop as dl
from labkit.cli import decode_costs

s = labkit.Stream()
out = {}
try:
    out["decode_costs"] = decode_costs.measure(s)
except Exception as e:      # noqa: BLE001 - the rest of the probe still runs
    out["decode_costs_error"] = repr(e)
print(json.dumps(out), flush=True)
m = dec.make_model(seed=0, max_seq=256)
ref = dec.reference_generate(m, 1, 256)
eos, n = dl.eos_for(ref, 192)
ex = dec.capture_step(m, s)
loop = dl.build(m, s)
loop.set(1, 256, eos)
pos = m.state["pos"].device_ctypes_pointer.value


def b2b():
    rt.cudaMemsetAsync(pos, 0, 4, s.handle)   # every round starts at position 0
    for _ in range(n):
        ex.launch(s)


out["tokens"] = n
out["gpu_loop_us_per_token"] = timing.gpu_measure(lambda: loop.exec.launch(s), s, repeat=10).median / n
out["gpu_b2b_us_per_token"] = timing.gpu_measure(b2b, s, repeat=10).median / n
h = s.handle
thr, proc, launch_thr, launch_proc, walls = [], [], [], [], []
for _ in range(10):
    t0, p0, w0 = time.thread_time_ns(), time.process_time_ns(), time.perf_counter_ns()
    loop.exec.launch(s)
    rt.cudaEventRecord(loop._ev, h)
    t1, p1 = time.thread_time_ns(), time.process_time_ns()
    rt.cudaEventSynchronize(loop._ev)
    t2, p2, w2 = time.thread_time_ns(), time.process_time_ns(), time.perf_counter_ns()
    launch_thr.append((t1 - t0) / 1e3); launch_proc.append((p1 - p0) / 1e3)
    thr.append((t2 - t1) / 1e3); proc.append((p2 - p1) / 1e3); walls.append((w2 - w0) / 1e3)
med = lambda v: float(np.median(v))  # noqa: E731
out.update(launch_thread_cpu_us=med(launch_thr), launch_process_cpu_us=med(launch_proc),
           wait_thread_cpu_us=med(thr), wait_process_cpu_us=med(proc), loop_wall_us=med(walls))
out["graph_upload_of_loop"] = str(rt.cudaGraphUpload(loop.exec.handle, h)[0])
rt.cudaGetLastError()
rt.cudaStreamSynchronize(h)
print("PROBE", json.dumps(out), flush=True)

"""Write notebooks 00-03 and their solutions (outputs stripped). Run: python tools/make_notebooks_00_03.py"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from nbgen import code, md, write  # noqa: E402


HEADER = """
import labkit            # first: it chooses the backend before numba.cuda is imported
import numpy as np
import matplotlib.pyplot as plt
from labkit import rt, check, timing, plot
from labkit.course import workloads

print("backend :", labkit.backend, f"({labkit.backend_reason})")
print("device  :", labkit.device_name())
print("figures :", labkit.provenance())
"""

# ----------------------------------------------------------------------------------- 00

def nb00(solution):
    ex = ("""
x = labkit.to_device(x0)
workloads.scale[4, 256, s](x, 3.0)     # scale first ...
workloads.add_one[4, 256, s](x)        # ... then add one
s.synchronize()
result = x.copy_to_host()
""" if solution else """
# Starting point: it runs, but does it compute 3·x + 1?
x = labkit.to_device(x0)
workloads.add_one[4, 256, s](x)
workloads.scale[4, 256, s](x, 3.0)
s.synchronize()
result = x.copy_to_host()
""")
    return [
        md("""
# 00 — Welcome and setup check

This course shows why GPU inference that runs many short kernels stalls on *launch overhead*,
and how CUDA Graphs remove most of it. Every notebook measures what it teaches.

**Prerequisites:** Python and numpy. No GPU is needed: without one, the course runs on a
simulator (explained below). No CUDA experience is assumed beyond "a kernel is a function that
runs on the GPU in many threads at once".

**Learning goals**

1. Check your setup: which backend is active, which GPU (real or simulated), which versions.
2. Know what the simulator is, and what it is not.
3. Read the course's plots: the timeline, and where every figure's numbers come from.
4. Recognise a labkit error: CUDA's error code plus a hint that names the fix.

About 10 minutes.
"""),
        code(HEADER),
        md("""
## Versions

`import labkit` picked the backend once: `LABKIT_BACKEND=auto` (the default) uses a real GPU when
one is usable and the simulator otherwise; `cuda` or `sim` force one. `labkit.rt` is the CUDA
runtime API of that backend, with cuda-python's names and `(err, *values)` results, so the same
cell runs on both.
"""),
        code("""
import sys
from importlib.metadata import version, PackageNotFoundError

for dist in ["numpy", "numba", "numba-cuda", "cuda-bindings", "cuda-core", "matplotlib"]:
    try:
        print(f"{dist:14} {version(dist)}")
    except PackageNotFoundError:
        print(f"{dist:14} not installed")
print(f"{'python':14} {sys.version.split()[0]}")

drv = check(rt.cudaDriverGetVersion(), "cudaDriverGetVersion")
run = check(rt.cudaRuntimeGetVersion(), "cudaRuntimeGetVersion")
props = check(rt.cudaGetDeviceProperties(0), "cudaGetDeviceProperties")
print(f"CUDA driver API {drv // 1000}.{drv % 1000 // 10}, runtime {run // 1000}.{run % 1000 // 10}")
print(f"{props.multiProcessorCount} SMs, compute capability {props.major}.{props.minor}, "
      f"{props.totalGlobalMem / 2**30:.0f} GiB")
"""),
        md("""
## What the simulator is, and what it is not

On the `sim` backend nothing runs on a GPU, yet the notebooks still compute and still time:

* **Results are computed, never faked.** Each kernel runs on the CPU, through a numpy version of
  the kernel that a test proves equal to the numba kernel (or through numba's CUDA simulator).
* **Errors are CUDA's.** Capture rules, error codes and invalidation follow what a real GPU does;
  a conformance suite runs the same scenarios on both backends.
* **The clock is virtual.** Each API call and each kernel advances it by a cost measured on a
  real GPU (the calibration, named in every figure title as "simulated, calibrated on ...").

What it is not: it does not model JIT compilation, caches, SM contention or noise. On the
simulator every repeat of a measurement gives the same number; on a GPU they scatter. The
*shapes* of the results (what grows with what, what is tens of times cheaper) are what carry
over, not the last digit.

First, a kernel: `add_one` adds 1 to each of 1024 floats, launched as `kernel[grid, block, stream](args)`.
"""),
        code("""
s = labkit.Stream()                       # a non-blocking stream (more on why in notebook 02)
x0 = np.arange(1024, dtype=np.float32)
x = labkit.to_device(x0)
workloads.add_one[4, 256, s](x)           # 4 blocks of 256 threads
s.synchronize()
got = x.copy_to_host()
assert np.array_equal(got, x0 + 1), "add_one did not add one"
print("first elements:", got[:5])
"""),
        md("""
## Measuring: repeats, medians and spread

`labkit.timing.measure(fn, sync=stream)` runs `fn` a few times untimed (warm-up), then times it
`repeat` times on the backend's host clock and returns a `Stats` with every sample. Look at the
spread: zero on the simulator, non-zero on a GPU.
"""),
        code("""
st = timing.measure(lambda: workloads.add_one[4, 256, s](x), sync=s, repeat=20,
                    label="one add_one + synchronize")
print(st)
print(f"p5..p95 spread: {st.percentile(5):.2f} .. {st.p95:.2f} µs")
"""),
        md("""
## Reading a timeline

The course draws timelines the way Nsight Systems does: the **CPU** row on top (API calls the
host made), one row per **stream** below (work the GPU ran). Colours: red = a kernel launch (the
overhead this course is about), blue = a graph launch, yellow = a synchronize, green = a kernel
running on the GPU. The second line of every title says where the numbers come from: "measured
on ..." or "simulated, calibrated on ...". On a GPU, spans come from CUPTI when it is installed;
otherwise the plot says it fell back to CUDA events.
"""),
        code("""
with timing.timeline() as rec:
    workloads.chain(5, x, s)              # five add_one launches back to back
    s.synchronize()
plot.timeline(rec.timeline, title="Five eager add_one launches")
plt.show()
"""),
        md("""
Look at the stream row: are the green kernels back to back, or separated by gaps? Notebook 01
measures those gaps.

## When CUDA says no

labkit turns a failing call into a `labkit.CudaError`: CUDA's name and code, its description,
and a hint that names the fix. Here the legacy NULL stream (stream 0), which cannot be captured:
"""),
        code("""
try:
    with labkit.capture(0):
        pass
except labkit.CudaError as e:
    print(e)
    print("code:", e.code, "name:", e.name)
    assert e.code == 900
"""),
        md("""
## Summary

* `import labkit` first; it tells you the backend, the device, and where figures come from.
* The simulator computes real results with a calibrated virtual clock; it has no noise and no
  JIT, so trust its shapes, not its last digit.
* Timelines: CPU on top, streams below; red launches, green kernels.
* Errors come with a hint; read it.

## Exercise

Compute `3·x + 1` on the GPU with the course kernels `workloads.scale(x, a)` (x *= a) and
`workloads.add_one(x)`, on stream `s`, and copy the result to the host as `result`. The starting
code runs but computes something else: fix it, then run the check.
"""),
        code(ex),
        code("""
from labkit.course.exercises.nb00 import check_scale_then_add
check_scale_then_add(result, x0)
""", tags=() if solution else ("raises-exception",)),
    ]


# ----------------------------------------------------------------------------------- 01

def nb01(solution):
    ex = ("""
# A kernel several times longer than one eager launch keeps the GPU busy.
launch_us = costs["eager: submit only"].median
iters = int(PROBE * 5 * launch_us / probe_us)
print("iters =", iters)
""" if solution else """
iters = 10      # loop iterations per thread in busy(x, iters): change this
""")
    return [
        md("""
# 01 — Eager launches: where the time goes

**Prerequisites:** notebook 00.

**Learning goals**

1. Measure the cost per kernel of a chain of K tiny kernels launched one by one ("eager"), for
   K from 1 to 1000, and compare it with the same chain replayed as one graph.
2. See the gaps between kernels on a timeline.
3. Separate *submitting* work (host time) from *finishing* it (host + GPU), for eager launches
   and for one graph launch.
4. Recognise the opposite case: long kernels, where the GPU is the bottleneck, the gaps vanish
   and a graph has little left to remove.

About 20 minutes.
"""),
        code(HEADER + """
SZ = workloads.sizes()                    # problem sizes that suit this backend
REPEAT, WARMUP = SZ["repeat"], SZ["warmup"]
s = labkit.Stream()
x0 = np.zeros(1024, np.float32)
x = labkit.to_device(x0)
"""),
        md("""
## A chain of K tiny kernels

`workloads.chain(K, x, s)` launches `add_one` K times on stream `s`. Each kernel touches 1024
floats: almost no work for a GPU. That is deliberate: it stands for the many small kernels of an
inference step (norms, activations, small matmuls), where each kernel's launch may cost more than
its work. First, check it computes `x + K`.

The very first launch of a kernel in a process also compiles it (numba's JIT) and loads it onto
the GPU; every measurement below therefore starts with untimed warm-up runs.
"""),
        code("""
K = 10
x = labkit.to_device(x0)
workloads.chain(K, x, s)
s.synchronize()
assert np.array_equal(x.copy_to_host(), x0 + K)
print(f"x + {K}: correct")
"""),
        md("""
## Cost per kernel against K

For each K, time the whole chain plus one synchronize and divide by K. Then capture the same
chain into a graph (notebook 02 explains capture), instantiate it once, and time its replay the
same way.

What to look for: the eager cost per kernel should stay roughly flat as K grows, because every
launch pays the same host cost. The graph's cost per kernel should fall as K grows, because one
launch and one synchronize are shared by all K kernels, and at large K it should be tens of
times below eager.
"""),
        code("""
ks = SZ["sweep"]
eager, graph = [], []
for k in ks:
    eager.append(timing.measure(lambda: workloads.chain(k, x, s), sync=s, per=k,
                                warmup=WARMUP, repeat=REPEAT, label=f"eager K={k}"))
    with labkit.capture(s) as cap:
        workloads.chain(k, x, s)
    with cap.graph as g, g.instantiate(upload_stream=s) as ex:
        graph.append(timing.measure(lambda: ex.launch(s), sync=s, per=k,
                                    warmup=WARMUP, repeat=REPEAT, label=f"graph K={k}"))

print(f"{'K':>5} {'eager µs/kernel':>16} {'graph µs/kernel':>16} {'eager/graph':>12}")
for k, e, g in zip(ks, eager, graph):
    print(f"{k:5d} {e.median:16.2f} {g.median:16.2f} {e.median / g.median:11.1f}x")

plot.per_kernel_cost(ks, {"eager": eager, "graph": graph},
                     title="add_one chain: time per kernel (launches + one synchronize)")
plt.show()
assert eager[-1].median > 5 * graph[-1].median, "expected the graph to be much cheaper per kernel at large K"
assert graph[-1].median < graph[0].median, "expected the graph's cost per kernel to fall with K"
"""),
        md("""
## The timeline: gaps between kernels

Record 20 eager launches, then the same 20 kernels as one graph launch, and draw both. On the
eager timeline, each green kernel should be followed by idle time while the host prepares the
next launch; in the graph, the kernels should sit almost back to back.
"""),
        code("""
K_TL = 20
xt = labkit.to_device(x0)
with timing.timeline() as rec_eager:
    workloads.chain(K_TL, xt, s)
    s.synchronize()

with labkit.capture(s) as cap:
    workloads.chain(K_TL, xt, s)
ex_tl = cap.graph.instantiate(upload_stream=s)
ex_tl.launch(s); s.synchronize()          # warm: the first launch is measured in notebook 03
with timing.timeline() as rec_graph:
    ex_tl.launch(s)
    s.synchronize()

fig, axes = plt.subplots(2, 1, figsize=(11, 6), constrained_layout=True)
plot.timeline(rec_eager.timeline, ax=axes[0], title=f"{K_TL} eager launches")
plot.timeline(rec_graph.timeline, ax=axes[1], title=f"the same {K_TL} kernels in one graph launch")
plt.show()
"""),
        md("""
The same thing in numbers: the time from one kernel's start to the next one's start, and how
long the kernels themselves ran. (On a GPU without CUPTI the timeline has no per-kernel spans,
and this cell says so.)
"""),
        code("""
def kernel_spans(tl):
    return sorted((sp for sp in tl.spans if sp.kind == "kernel"), key=lambda sp: sp.start_us)

if rec_eager.timeline.source == "events":
    print("no per-kernel spans without CUPTI:", rec_eager.timeline.note)
else:
    se, sg = kernel_spans(rec_eager.timeline), kernel_spans(rec_graph.timeline)
    step_e = np.median(np.diff([sp.start_us for sp in se]))
    step_g = np.median(np.diff([sp.start_us for sp in sg]))
    run_e = np.median([sp.duration_us for sp in se])
    print(f"eager: a kernel starts every {step_e:.2f} µs and runs {run_e:.2f} µs "
          f"-> the GPU is idle {100 * (1 - run_e / step_e):.0f}% of the time")
    print(f"graph: a kernel starts every {step_g:.2f} µs")
    assert step_e > 5 * step_g, "expected eager kernels to start much further apart than graph kernels"
"""),
        md("""
## Where the time goes

Time the same work two ways: **submit only** (the host launches and returns, no
synchronize) and **submit + sync** (until the GPU has finished). For K = 200 kernels:

* eager, submit only: the host's cost per launch, which is numba's dispatch (checking argument
  types, finding the compiled kernel, flattening every array into kernel parameters) plus the
  driver's launch call;
* eager, submit + sync: if it is close to submit-only, the host is the bottleneck: the GPU
  finishes each tiny kernel long before the next one arrives;
* graph, submit only: one `cudaGraphLaunch` for all 200 kernels;
* graph, submit + sync: the GPU's own time for 200 kernels back to back, plus one launch.

The last column is GPU time from a CUDA event pair around the work. For eager launches it counts
the GPU's idle gaps too, since the stream is "busy" from the first event until the last.
"""),
        code("""
K = SZ["kernels"]
with labkit.capture(s) as cap:
    workloads.chain(K, x, s)
g200 = cap.graph
ex200 = g200.instantiate(upload_stream=s)

def eager_run():
    workloads.chain(K, x, s)

def graph_run():
    ex200.launch(s)

costs = {
    "eager: submit only": timing.measure(eager_run, per=K, warmup=WARMUP, repeat=REPEAT),
    "eager: submit + sync": timing.measure(eager_run, sync=s, per=K, warmup=WARMUP, repeat=REPEAT),
    "graph: submit only": timing.measure(graph_run, per=K, warmup=WARMUP, repeat=REPEAT),
    "graph: submit + sync": timing.measure(graph_run, sync=s, per=K, warmup=WARMUP, repeat=REPEAT),
}
s.synchronize()
gpu_eager = timing.gpu_measure(eager_run, s, per=K, warmup=1, repeat=REPEAT).median
gpu_graph = timing.gpu_measure(graph_run, s, per=K, warmup=1, repeat=REPEAT).median

for name, st in costs.items():
    print(f"{name:22} {st.median:8.2f} µs per kernel")
print(f"{'one graph launch':22} {costs['graph: submit only'].median * K:8.2f} µs of host time for all {K} kernels")
print(f"GPU time per kernel (events): eager {gpu_eager:.2f} µs, graph {gpu_graph:.2f} µs")

plot.bars({k: v for k, v in costs.items()}, ylabel="time per kernel (µs)", log=True,
          title=f"{K} add_one kernels: submitting vs finishing")
plt.show()
assert costs["eager: submit only"].median > 0.7 * costs["eager: submit + sync"].median, \\
    "expected eager launches to be host-bound (submitting takes most of the time)"
assert costs["graph: submit only"].median * 10 < costs["eager: submit only"].median, \\
    "expected one graph launch to cost the host far less per kernel than eager launches"
"""),
        md("""
Read it this way: for eager launches the host is the bottleneck, so the GPU waits between
kernels, and the event-measured GPU time per kernel is about the host's launch cost, not the
kernel's run time. The graph pays the host cost once per *graph*, and then the GPU runs the
kernels back to back. A compiled C++ launch skips numba's Python-side work and is cheaper, but it
still pays the driver's launch once per kernel.
"""),
        md("""
## Numba's share, measured: prepared launches

How much of an eager launch is numba and how much is the driver? Take numba out of the loop:
`labkit.prepare(kernel, grid, block, stream, *args)` does numba's per-call work once (typing the
arguments, finding the compiled kernel, flattening each array into the pointer, shape and stride
values the kernel receives) and keeps the finished parameter block. Calling the result is then
a single `cuLaunchKernel`, which is what a C++ `<<<>>>` launch also comes down to. Its arguments
can be swapped for others of the same dtype and shape (`p(other_x)`); anything else is refused
rather than launched wrongly.

Three ways to run the same K kernels, each timed until the GPU is done: numba's eager launch,
the prepared launch, and the graph replay from above.
"""),
        code("""
prep = labkit.prepare(workloads.add_one, 4, 256, s, x)    # numba's work, done once

def prepared_run():
    for _ in range(K):
        prep()

xp = labkit.to_device(x0)
prep(xp); prep(xp); s.synchronize()                      # rebound to xp: check it computes x + 2
assert np.array_equal(xp.copy_to_host(), x0 + 2)
prep(x)                                                  # back to x

three = {
    "eager (numba)": costs["eager: submit + sync"],
    "prepared launch": timing.measure(prepared_run, sync=s, per=K, warmup=WARMUP, repeat=REPEAT),
    "graph replay": costs["graph: submit + sync"],
}
for name, st in three.items():
    print(f"{name:16} {st.median:7.2f} µs per kernel")
numba_share = three["eager (numba)"].median - three["prepared launch"].median
print(f"numba's dispatch: {numba_share:.2f} µs of each {three['eager (numba)'].median:.2f} µs eager launch "
      f"({numba_share / three['eager (numba)'].median:.0%})")
plot.bars(three, ylabel="time per kernel (µs)", log=True,
          title=f"{K} add_one kernels: numba eager, prepared, graph")
plt.show()
assert three["prepared launch"].median < 0.6 * three["eager (numba)"].median, \\
    "expected a prepared launch to cost well under numba's eager launch"
assert three["graph replay"].median < three["prepared launch"].median, \\
    "expected a graph replay to beat even prepared launches per kernel"
"""),
        code("""
xq = labkit.to_device(x0)
prep_tl = labkit.prepare(workloads.add_one, 4, 256, s, xq)
prep_tl(); s.synchronize()
with timing.timeline() as rec_prep:
    for _ in range(K_TL):
        prep_tl()
    s.synchronize()
fig, axes = plt.subplots(3, 1, figsize=(11, 8), constrained_layout=True)
plot.timeline(rec_eager.timeline, ax=axes[0], title=f"{K_TL} eager numba launches")
plot.timeline(rec_prep.timeline, ax=axes[1], title=f"{K_TL} prepared launches")
plot.timeline(rec_graph.timeline, ax=axes[2], title=f"{K_TL} kernels in one graph launch")
xmax = max(a.get_xlim()[1] for a in axes)
for a in axes:
    a.set_xlim(0, xmax)                                   # one time axis: lengths compare directly
plt.show()
if rec_prep.timeline.source != "events":
    sp = kernel_spans(rec_prep.timeline)
    print(f"prepared: a kernel starts every {np.median(np.diff([k.start_us for k in sp])):.2f} µs")
"""),
        md("""
Prepared launches remove numba's share but not the driver's: each kernel still costs one
`cuLaunchKernel` of host time, several times a tiny kernel's run time, so gaps remain, only
narrower. A graph removes the per-kernel launch itself. Prepared launches are still worth
knowing: they are the fast path for work that cannot be captured (its shape or its control
flow changes every time), and they can be captured too, becoming ordinary kernel nodes.
"""),

        md("""
## When the GPU is the bottleneck

Now make each kernel long: `workloads.busy(x, iters)` loops `iters` times per thread. First find
how long one iteration takes on this backend (replayed back to back, so no host gaps count),
then pick `iters` so a kernel runs about 300 µs, far longer than a launch.
"""),
        code("""
from labkit.course.kernels_extra import kernel_gpu_us

PROBE = 10_000
xb = labkit.to_device(x0)
probe_us = kernel_gpu_us(lambda st: workloads.busy[4, 256, st](xb, PROBE), s)
ITERS = max(1, int(PROBE * 300.0 / probe_us))
print(f"busy(x, {PROBE}) runs {probe_us:.1f} µs on the GPU -> ITERS = {ITERS} for about 300 µs")

K_LONG = 20
def long_chain():
    for _ in range(K_LONG):
        workloads.busy[4, 256, s](xb, ITERS)

with labkit.capture(s) as cap:
    long_chain()
ex_long = cap.graph.instantiate(upload_stream=s)
eager_long = timing.measure(long_chain, sync=s, per=K_LONG, warmup=1, repeat=5)
graph_long = timing.measure(lambda: ex_long.launch(s), sync=s, per=K_LONG, warmup=1, repeat=5)
print(f"long kernels: eager {eager_long.median:.1f} µs per kernel, graph {graph_long.median:.1f} µs "
      f"-> the graph saves {100 * (1 - graph_long.median / eager_long.median):.1f}%")
assert eager_long.median < 1.15 * graph_long.median, "expected the graph to save little on long kernels"
"""),
        code("""
with timing.timeline() as rec_long:
    for _ in range(5):
        workloads.busy[4, 256, s](xb, ITERS)
    s.synchronize()
plot.timeline(rec_long.timeline, title="Five eager launches of a long kernel")
plt.show()
tl = rec_long.timeline
if tl.source != "events":
    row = [r for r in tl.rows() if r != "CPU"][0]
    frac = tl.busy_fraction(row)
    print(f"the GPU was busy {frac:.0%} of the time between the first kernel's start and the last one's end")
    assert frac > 0.9, "expected no gaps between long kernels"
"""),
        md("""
The host now launches the next kernel while the GPU is still running the previous one, so the
launches hide behind the work: the queue never empties and the gaps vanish. A graph can only
remove launch overhead; when there is none left to see, it has nothing to give.

## Summary

* Eager launches from Python cost the host a roughly fixed time per kernel, mostly numba's
  dispatch; with tiny kernels the GPU sits idle between them.
* Most of an eager numba launch is numba's own dispatch: a prepared launch (`labkit.prepare`)
  does that work once and costs about a C++ launch, but still one launch per kernel.
* A graph pays the host cost once per launch, so its cost per kernel falls with K toward the
  GPU's own time per kernel.
* Submitting vs finishing tells you who the bottleneck is: if submit ≈ submit + sync, it is the
  host.
* With long kernels the GPU is the bottleneck, the gaps disappear and a graph gains little.

## Exercise

Find an `iters` for `busy(x, iters)` at which eager launches keep the GPU busy at least 80% of the
time. The check launches 10 eager `busy` kernels, measures their GPU time and their wall time,
and tells you the ratio. Hint: compare the eager launch cost measured above with `probe_us`, the
GPU time of `busy` at `PROBE` iterations.
"""),
        code(ex),
        code("""
from labkit.course.exercises.nb01 import check_gpu_bound
check_gpu_bound(iters)
""", tags=() if solution else ("raises-exception",)),
    ]


# ----------------------------------------------------------------------------------- 02

def nb02(solution):
    ex = ("""
ex_stream = labkit.Stream()
ex_out = labkit.pinned_array(N)
with labkit.capture(ex_stream) as ex_cap:
    preprocess[GRID, BLOCK, ex_stream](inp, work)
    infer_step[GRID, BLOCK, ex_stream](work, out)
    check(rt.cudaMemcpyAsync(ex_out.ctypes.data, ptr(out), ex_out.nbytes, D2H, ex_stream.handle),
          "cudaMemcpyAsync")
print(ex_cap.graph.node_kinds())
""" if solution else """
ex_stream = labkit.Stream()
ex_out = labkit.pinned_array(N)
with labkit.capture(ex_stream) as ex_cap:
    preprocess[GRID, BLOCK, ex_stream](inp, work)
    infer_step[GRID, BLOCK, ex_stream](work, out)
    # your code: copy `out` into ex_out here (rt.cudaMemcpyAsync on ex_stream.handle)
print(ex_cap.graph.node_kinds())
""")
    return [
        md("""
# 02 — Stream capture

**Prerequisites:** notebook 01 (what a launch costs).

**Learning goals**

1. Write the classic C++ capture example in Python through `labkit.rt`, line for line, with
   every return code checked.
2. Do the same with `labkit.capture` (a context manager that always ends the capture) and with
   cuda.core's `GraphBuilder`.
3. Recognise each capture pitfall by its error code, and fix it: the legacy NULL stream, a
   synchronize inside the capture, a host array passed to a numba kernel, a call that global
   mode forbids but relaxed mode allows, and an ignored error that invalidates the capture.
4. Know why every warm-up (JIT, module load, allocation) belongs before the capture.
5. Check that the graph computes exactly what the eager launches compute.

About 30 minutes.

The C++ we translate (one request = `preprocess`, `infer_step`, copy the answer to the host):

```cpp
cudaStreamCreate(&stream);
cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal);
preprocess<<<grid, block, 0, stream>>>(input, work);
infer_step<<<grid, block, 0, stream>>>(work, output);
cudaMemcpyAsync(host_output, output, bytes, cudaMemcpyDeviceToHost, stream);
cudaStreamEndCapture(stream, &graph);
cudaGraphInstantiate(&graph_exec, graph, nullptr, nullptr, 0);
for (request...) cudaGraphLaunch(graph_exec, stream);
cudaStreamSynchronize(stream);
cudaGraphExecDestroy(graph_exec); cudaGraphDestroy(graph); cudaStreamDestroy(stream);
```
"""),
        code(HEADER + """
from labkit.course.kernels_extra import preprocess, infer_step, request_reference

N, BLOCK = 4096, 256
GRID = (N + BLOCK - 1) // BLOCK
GLOBAL = rt.cudaStreamCaptureMode.cudaStreamCaptureModeGlobal
RELAXED = rt.cudaStreamCaptureMode.cudaStreamCaptureModeRelaxed
D2H = rt.cudaMemcpyKind.cudaMemcpyDeviceToHost

def ptr(a):
    \"\"\"The raw device address of a device array, for raw runtime calls.\"\"\"
    return a.device_ctypes_pointer.value

x_host = np.linspace(-1, 1, N, dtype=np.float32)
inp = labkit.to_device(x_host)            # allocations happen here, before any capture
work = labkit.device_array(N)
out = labkit.device_array(N)
host_out = labkit.pinned_array(N)         # page-locked: what cudaMemcpyAsync wants
NBYTES = host_out.nbytes
"""),
        md("""
## Step 0: run it eagerly first

This run gives the reference answer, and it is the **warm-up**: the first launch of each kernel
compiles it and loads it onto the GPU. That must not happen inside a capture (see "Why warm up
first" below).
"""),
        code("""
warm = labkit.Stream()
preprocess[GRID, BLOCK, warm](inp, work)
infer_step[GRID, BLOCK, warm](work, out)
warm.synchronize()
eager_out = out.copy_to_host()
np.testing.assert_allclose(eager_out, request_reference(x_host), rtol=1e-5, atol=1e-6)  # the GPU fuses multiply-adds
print("eager output matches numpy:", eager_out[:4])
"""),
        md("""
## The C++ example, line for line

Every runtime call returns `(err, *values)`; `check` raises a `CudaError` with a hint when `err`
is not success, and returns the values. Kernel launches go through numba, and labkit turns a
failing launch into the same `CudaError`.

Two deliberate changes from the C++:

* `cudaStreamCreateWithFlags(cudaStreamNonBlocking)` instead of `cudaStreamCreate`. A plain
  stream is *blocking*: it synchronizes with the legacy NULL stream. If anything (a library, a
  numba default-stream call) touches the legacy stream while a blocking stream captures, that
  work would have to wait on the capture, which CUDA refuses with
  `cudaErrorStreamCaptureImplicit` (906) and the capture is lost. Demonstrated below.
* `cudaGraphInstantiate(graph, flags)`: since CUDA 12 the call takes flags instead of the
  error-node and log-buffer arguments of the older C++ signature.

The host buffer is pinned (page-locked). A capture also accepts pageable host memory, but a
pageable copy cannot be a truly asynchronous DMA; pinned memory is what `cudaMemcpyAsync` is
designed for.
"""),
        code("""
stream = check(rt.cudaStreamCreateWithFlags(rt.cudaStreamNonBlocking), "cudaStreamCreateWithFlags")
check(rt.cudaStreamBeginCapture(stream, GLOBAL), "cudaStreamBeginCapture")
preprocess[GRID, BLOCK, stream](inp, work)
infer_step[GRID, BLOCK, stream](work, out)
check(rt.cudaMemcpyAsync(host_out.ctypes.data, ptr(out), NBYTES, D2H, stream), "cudaMemcpyAsync")
graph = check(rt.cudaStreamEndCapture(stream), "cudaStreamEndCapture")
graph_exec = check(rt.cudaGraphInstantiate(graph, 0), "cudaGraphInstantiate")

REQUESTS = 10
host_out[:] = 0
for _ in range(REQUESTS):
    check(rt.cudaGraphLaunch(graph_exec, stream), "cudaGraphLaunch")
check(rt.cudaStreamSynchronize(stream), "cudaStreamSynchronize")
raw_out = host_out.copy()

check(rt.cudaGraphExecDestroy(graph_exec), "cudaGraphExecDestroy")
check(rt.cudaGraphDestroy(graph), "cudaGraphDestroy")
check(rt.cudaStreamDestroy(stream), "cudaStreamDestroy")

np.testing.assert_array_equal(raw_out, eager_out)
print(f"{REQUESTS} graph launches, one synchronize: output equals the eager output")
"""),
        md("""
Every launch here replays the same request, on the same buffers: a graph stores the addresses it
was captured with. A server copies each new request into `inp` (or updates the graph, notebook
05).

### Why a non-blocking stream: the blocking one, failing

Capture a *blocking* stream and, meanwhile, launch unrelated work on the legacy NULL stream:
"""),
        code("""
blocking = check(rt.cudaStreamCreate(), "cudaStreamCreate")     # flags 0: a blocking stream
other = labkit.to_device(np.zeros(1024, np.float32))
check(rt.cudaStreamBeginCapture(blocking, GLOBAL), "cudaStreamBeginCapture")
preprocess[GRID, BLOCK, blocking](inp, work)
code_906 = None
try:
    workloads.add_one[4, 256, 0](other)      # unrelated work on the legacy NULL stream
except labkit.CudaError as e:
    code_906 = e.code
    print(e)
err, _ = rt.cudaStreamEndCapture(blocking)
print("cudaStreamEndCapture ->", err)
rt.cudaGetLastError()
check(rt.cudaStreamDestroy(blocking), "cudaStreamDestroy")
assert code_906 == 906 and int(err) == 901
"""),
        md("""
With `cudaStreamNonBlocking` the same legacy-stream launch would simply run: the capturing
stream does not synchronize with stream 0. `labkit.Stream()` is always non-blocking.

## The same with `labkit.capture`

`labkit.capture(stream)` begins the capture, and always ends it, also when the block raises, so
a stream is never left capturing. `cap.graph` is a `labkit.Graph` that owns the handle and keeps
the arrays its kernels use alive.
"""),
        code("""
s = labkit.Stream()
with labkit.capture(s) as cap:
    preprocess[GRID, BLOCK, s](inp, work)
    infer_step[GRID, BLOCK, s](work, out)
    check(rt.cudaMemcpyAsync(host_out.ctypes.data, ptr(out), NBYTES, D2H, s.handle), "cudaMemcpyAsync")
print(cap.graph, cap.graph.node_kinds())
plot.graph_dag(cap.graph, title="One request")
plt.show()

host_out[:] = 0
with cap.graph as g, g.instantiate(upload_stream=s) as ex:
    for _ in range(REQUESTS):
        ex.launch(s)
    s.synchronize()
capture_out = host_out.copy()
np.testing.assert_array_equal(capture_out, eager_out)
print("labkit.capture: output equals the eager output")
"""),
        md("""
## The same with cuda.core's `GraphBuilder`

cuda.core, NVIDIA's Pythonic CUDA API, builds a graph from a stream: `stream.create_graph_builder()`,
`begin_building()`, launch into it, `end_building()`, `complete()` gives a `Graph` with
`.launch(stream)`. numba-cuda launches straight into a builder: `kernel[grid, block, builder](...)`.
The copy goes through the runtime on the builder's stream. This needs a real GPU; on the
simulator the cell says so and skips.
"""),
        code("""
builder_out = None
if labkit.backend == "cuda":
    try:
        from cuda.core import Device
        dev = Device()
        dev.set_current()
        cs = dev.create_stream()
        gb = cs.create_graph_builder().begin_building("global")
        preprocess[GRID, BLOCK, gb](inp, work)
        infer_step[GRID, BLOCK, gb](work, out)
        check(rt.cudaMemcpyAsync(host_out.ctypes.data, ptr(out), NBYTES, D2H,
                                 rt.cudaStream_t(int(gb.stream.handle))), "cudaMemcpyAsync")
        cc_graph = gb.end_building().complete()
        host_out[:] = 0
        for _ in range(REQUESTS):
            cc_graph.launch(cs)
        cs.sync()
        builder_out = host_out.copy()
        cc_graph.close(); gb.close(); cs.close()
        np.testing.assert_array_equal(builder_out, eager_out)
        print("cuda.core GraphBuilder: output equals the eager output")
    except Exception as e:   # an API difference in another cuda.core version should not stop the course
        print(f"the cuda.core GraphBuilder path failed here: {type(e).__name__}: {e}")
else:
    print("cuda.core's GraphBuilder drives a real GPU: run with LABKIT_BACKEND=cuda to see it; skipped on the simulator")
"""),
        md("""
## Pitfalls, each failing

Each cell below makes one classic mistake and shows the code CUDA returns, with labkit's hint.
After each, the stream is checked to be usable again: a failed capture is ended, and nothing
sticks.
"""),
        code("""
def usable_again(stream):
    \"\"\"Not capturing any more, and ordinary work runs on it.\"\"\"
    status = check(rt.cudaStreamIsCapturing(labkit.stream_handle(stream)), "cudaStreamIsCapturing")
    y = labkit.to_device(np.zeros(1024, np.float32))
    workloads.add_one[4, 256, stream](y)
    check(rt.cudaStreamSynchronize(labkit.stream_handle(stream)), "cudaStreamSynchronize")
    assert int(status) == 0 and y.copy_to_host()[0] == 1
    print(f"-> stream {labkit.stream_handle(stream)}: {status.name}, and usable again")

s1 = labkit.Stream()
"""),
        md("""
### 1. The legacy NULL stream

Stream 0 cannot be captured (it synchronizes with every blocking stream). The cell raises, on
purpose:
"""),
        code("""
check(rt.cudaStreamBeginCapture(0, GLOBAL), "cudaStreamBeginCapture on stream 0")
""", tags=("raises-exception",)),
        code("""
rt.cudaGetLastError()
usable_again(0)
"""),
        md("""
### 2. A synchronize inside the capture

While capturing, nothing runs, so there is nothing to wait for: the synchronize is refused (900)
and the capture is invalidated, so `cudaStreamEndCapture` returns 901 and no graph.
"""),
        code("""
check(rt.cudaStreamBeginCapture(s1.handle, GLOBAL), "cudaStreamBeginCapture")
preprocess[GRID, BLOCK, s1](inp, work)
err_sync = rt.cudaStreamSynchronize(s1.handle)[0]
err_end, _ = rt.cudaStreamEndCapture(s1.handle)
print(labkit.CudaError(err_sync, "cudaStreamSynchronize inside the capture"))
print(labkit.CudaError(err_end, "cudaStreamEndCapture"))
rt.cudaGetLastError()
assert (int(err_sync), int(err_end)) == (900, 901)
usable_again(s1)
"""),
        md("""
### 3. A numba launch on a host array

Passed a numpy array, numba silently copies it to the GPU, launches, and copies it back: a
synchronous copy, which a capture refuses.
"""),
        code("""
code_host = None
try:
    with labkit.capture(s1):
        preprocess[GRID, BLOCK, s1](x_host, work)     # x_host is a numpy array, not a device array
except labkit.CudaError as e:
    code_host = e.code
    print(e)
assert code_host == 900
usable_again(s1)
"""),
        md("""
### 4. Global mode forbids, relaxed mode allows: `cudaMalloc`

In global mode, "potentially unsafe" calls such as `cudaMalloc` are refused while *any* stream
captures. Relaxed mode allows them, but the allocation is not part of the graph: it happens once,
now, and every replay reuses that one address. Relaxed mode makes the call legal, not captured.
"""),
        code("""
results = {}
for name, mode in (("global", GLOBAL), ("relaxed", RELAXED)):
    check(rt.cudaStreamBeginCapture(s1.handle, mode), "cudaStreamBeginCapture")
    err_malloc, p = rt.cudaMalloc(4096)
    err_end, g = rt.cudaStreamEndCapture(s1.handle)
    print(f"{name:8} cudaMalloc -> {err_malloc.name:36} cudaStreamEndCapture -> {err_end.name}")
    if int(err_malloc) == 0:
        check(rt.cudaFree(p), "cudaFree")
    if int(err_end) == 0:
        check(rt.cudaGraphDestroy(g), "cudaGraphDestroy")
    rt.cudaGetLastError()
    results[name] = (int(err_malloc), int(err_end))
print("hint for 900:", labkit.hint_for(900))
assert results == {"global": (900, 901), "relaxed": (0, 0)}
usable_again(s1)
"""),
        md("""
### 5. An ignored error invalidates the capture

Someone polls the stream with `cudaStreamQuery` and ignores the return code. The query is refused
(900) and the capture is invalidated; nothing says so until the *next* launch fails with 901,
far from the cause.
"""),
        code("""
check(rt.cudaStreamBeginCapture(s1.handle, GLOBAL), "cudaStreamBeginCapture")
preprocess[GRID, BLOCK, s1](inp, work)
rt.cudaStreamQuery(s1.handle)                 # return code ignored!
launch_code = None
try:
    infer_step[GRID, BLOCK, s1](work, out)    # an innocent launch fails
except labkit.CudaError as e:
    launch_code = e.code
    print("the next launch:", e)
err_end, _ = rt.cudaStreamEndCapture(s1.handle)
print(labkit.CudaError(err_end, "cudaStreamEndCapture"))
rt.cudaGetLastError()
assert launch_code == 901 and int(err_end) == 901
usable_again(s1)
"""),
        md("""
`labkit.capture` helps here: when the capture ends invalidated, it names the first failing call
it saw, so the 901 points back at the 900.
"""),
        code("""
try:
    with labkit.capture(s1):
        preprocess[GRID, BLOCK, s1](inp, work)
        rt.cudaStreamQuery(s1.handle)         # ignored again
except labkit.CudaError as e:
    print(e)
    assert e.code == 901 and "900" in str(e)
usable_again(s1)
"""),
        md("""
## Why warm up first

The first launch of a kernel in a process does far more than a launch: numba compiles the kernel
(JIT), the driver loads the module, numba may allocate. Inside a capture, at best that time is
spent at capture; at worst one of those steps is a call the capture refuses, and the capture is
lost as in the pitfalls above. Time a brand-new kernel's first and second launch:
"""),
        code("""
from numba import cuda

def _negate_ref(grid, block, a):
    a[:] = -a

@labkit.kernel(reference=_negate_ref)
def negate(a):
    i = cuda.grid(1)
    if i < a.size:
        a[i] = -a[i]

y = labkit.to_device(np.ones(1024, np.float32))
times = []
for _ in range(2):
    t0 = labkit.host_us()
    negate[4, 256, s](y)
    s.synchronize()
    times.append(labkit.host_us() - t0)
print(f"first launch {times[0]:.0f} µs, second {times[1]:.1f} µs")
if labkit.backend == "cuda":
    assert times[0] > 10 * times[1], "expected the first launch (JIT + module load) to be far slower"
else:
    print("(the simulator does not model compilation: on a GPU the first launch takes far longer)")
"""),
        md("""
## Graph output equals eager output

All paths computed the same request. Checked with numpy, bit for bit (same kernels, same inputs):
"""),
        code("""
outputs = {"raw labkit.rt": raw_out, "labkit.capture": capture_out}
if builder_out is not None:
    outputs["cuda.core GraphBuilder"] = builder_out
for name, o in outputs.items():
    np.testing.assert_array_equal(o, eager_out)
    print(f"{name:24} == eager")
"""),
        md("""
## Summary

* Capture records work submitted to a stream into a graph; instantiate once, launch many times,
  synchronize once.
* Capture a stream you created, non-blocking, never stream 0.
* Inside a capture: no synchronize, no query, no host arrays to numba, no allocations (global
  mode); relaxed mode permits some of these but does not capture them.
* An ignored error surfaces later as 901: check every return code, or let `labkit.capture` tell
  you the first failing call.
* Warm up (JIT, module load, allocations) before capturing.

## Exercise

Capture one request into a graph that includes the copy of `out` into the pinned host buffer
`ex_out`, so that one graph launch returns the answer. The starting code captures the two kernels
only.
"""),
        code(ex),
        code("""
from labkit.course.exercises.nb02 import check_request_graph
check_request_graph(ex_cap.graph, x_host, ex_out, ex_stream)
""", tags=() if solution else ("raises-exception",)),
    ]


# ----------------------------------------------------------------------------------- 03

def nb03(solution):
    ex = ("""
ph = phases[10]
setup10 = ph["capture"].median + ph["instantiate"].median + ph["upload"].median
eager10 = timing.measure(lambda: workloads.chain(10, x, s), sync=s, warmup=WARMUP, repeat=REPEAT).median
graph10 = ph["steady_launch"].median
my_breakeven = setup10 / (eager10 - graph10)
print(f"break-even after {my_breakeven:.2f} iterations")
""" if solution else """
ph = phases[10]
setup10 = ph["instantiate"].median           # is that all the setup?
eager10 = timing.measure(lambda: workloads.chain(10, x, s), sync=s, warmup=WARMUP, repeat=REPEAT).median
graph10 = ph["steady_launch"].median
my_breakeven = setup10 / eager10
print(f"break-even after {my_breakeven:.2f} iterations")
""")
    return [
        md("""
# 03 — Define, instantiate, launch: what a graph costs, and when it pays

**Prerequisites:** notebooks 01 (launch costs) and 02 (capture).

**Learning goals**

1. Separate the costs of a graph's life (capture, instantiate, upload, launch) and see how each
   grows with the graph's size, from 1 to 1000 nodes.
2. See why the first launch of a new executable is slower than the next ones, and what
   `cudaGraphUpload` changes.
3. Compute and plot when a graph has paid for its setup (break-even).
4. Build the same graph node by node with the explicit graph API and compare it with capture.
5. Know where graphs stop helping: a single long kernel, a one-kernel graph, and kernel fusion.

About 30 minutes.
"""),
        code(HEADER + """
from labkit import explicit
from labkit.course import kernels_extra

SZ = workloads.sizes()
REPEAT, WARMUP = SZ["repeat"], SZ["warmup"]
s = labkit.Stream()
x0 = np.zeros(1024, np.float32)
x = labkit.to_device(x0)
"""),
        md("""
## The phases, separated

`timing.graph_phases(record, stream)` warms `record` up eagerly, then, several times: captures it,
instantiates it, launches the fresh executable once (first launch), instantiates a second one
and uploads it before its first launch, and finally times steady launches. Each phase is timed
on its own, launches including a synchronize.

What to look for: capture from Python costs about as much as running the same launches eagerly
(numba still prepares every launch); instantiate grows with the number of nodes; the steady
launch is the cheap part.
"""),
        code("""
SIZES = [1, 10, 100, 200, 1000]
phases = {}
for n in SIZES:
    phases[n] = timing.graph_phases(lambda st, n=n: workloads.chain(n, x, st), s, repeat=3, steady=10)

names = ["capture", "instantiate", "upload", "first_launch", "uploaded_first_launch", "steady_launch"]
print(f"{'nodes':>5} " + " ".join(f"{n:>22}" for n in names))
for n in SIZES:
    print(f"{n:5d} " + " ".join(f"{phases[n][k].median:19.1f} µs" for k in names))
print("instantiate per node at 1000 nodes:", f"{phases[1000]['instantiate'].median / 1000:.2f} µs")

plot.phase_costs(SIZES, {
    "capture": [phases[n]["capture"] for n in SIZES],
    "instantiate": [phases[n]["instantiate"] for n in SIZES],
    "upload": [phases[n]["upload"] for n in SIZES],
    "first launch": [phases[n]["first_launch"] for n in SIZES],
    "steady launch": [phases[n]["steady_launch"] for n in SIZES],
}, title="add_one chain: the phases of a graph's life")
plt.show()
assert phases[1000]["instantiate"].median > 5 * phases[1]["instantiate"].median, \\
    "expected instantiation to grow with the graph's size"
assert phases[1000]["steady_launch"].median < phases[1000]["capture"].median, \\
    "expected a steady launch to be cheaper than capturing the same work"
"""),
        md("""
## First launch, upload, steady launch

An executable graph must be copied to the device before it can run. `cudaGraphLaunch` of a fresh
executable does that implicitly, so the first launch costs more than the next; `cudaGraphUpload`
(`GraphExec.upload(stream)`, or `instantiate(upload_stream=...)`) does it ahead of time, off the
critical path of the first request. What to look for: the first launch above the steady one, and
the launch that follows an upload close to the steady one.
"""),
        code("""
big = phases[1000]
vals = {"first launch": big["first_launch"], "upload": big["upload"],
        "then launch": big["uploaded_first_launch"], "steady launch": big["steady_launch"]}
for k, v in vals.items():
    print(f"{k:14} {v.median:9.1f} µs")
plot.bars(vals, ylabel="time (µs)", title="1000-node graph: first launch vs upload + launch vs steady")
plt.show()
assert big["first_launch"].median > big["steady_launch"].median, "expected the first launch to cost more"
assert big["uploaded_first_launch"].median < big["first_launch"].median, \\
    "expected a launch after upload to be cheaper than a first launch without upload"
"""),
        md("""
## Break-even

A graph is worth it once its one-off setup has been paid back by cheaper iterations:
`setup / (eager iteration - graph iteration)`. For the K = 200 chain, setup = capture +
instantiate + upload, measured above.
"""),
        code("""
K = SZ["kernels"]
ph = phases[K]
setup_us = ph["capture"].median + ph["instantiate"].median + ph["upload"].median
eager_iter_us = timing.measure(lambda: workloads.chain(K, x, s), sync=s, warmup=WARMUP, repeat=REPEAT).median
graph_iter_us = ph["steady_launch"].median
be = plot.breakeven(setup_us, eager_iter_us, graph_iter_us)
print(f"setup {setup_us:.0f} µs, eager {eager_iter_us:.0f} µs/iter, graph {graph_iter_us:.0f} µs/iter "
      f"-> break-even after {be:.2f} iterations")
plot.amortization(setup_us, eager_iter_us, graph_iter_us, max(10, int(4 * be) + 1),
                  title=f"{K}-kernel chain: when does the graph pay off?")
plt.show()
assert be is not None and be < 10, "expected a 200-kernel graph to pay off within a few iterations"
"""),
        md("""
## Built node by node: the explicit graph API

Instead of capturing, a graph can be built directly: `cudaGraphCreate`, then one `cudaGraphAdd*Node`
call per node, each naming the nodes it depends on. `labkit.explicit` wraps this. Empty and
memcpy nodes go straight through `labkit.rt`. A kernel node needs numba's parameter buffer, so
`explicit.add_kernel_node` lets numba prepare one launch (captured into a scratch graph) and adds a
node with the same parameters to *your* graph; on the simulator it uses the simulated runtime's
kernel node. Here: 5 `add_one` nodes in a chain, then a memcpy node copying the result to a
pinned host buffer.
"""),
        code("""
xe = labkit.to_device(x0)
host_e = labkit.pinned_array(1024)
ge = explicit.new_graph()
prev = []
for _ in range(5):
    prev = [explicit.add_kernel_node(ge, prev, workloads.add_one, 4, 256, xe)]
explicit.add_memcpy_node(ge, prev, host_e.ctypes.data, xe.device_ctypes_pointer.value, host_e.nbytes,
                         rt.cudaMemcpyKind.cudaMemcpyDeviceToHost)
print(ge, ge.node_kinds())
plot.graph_dag(ge, title="Built node by node")
plt.show()
with ge.instantiate(upload_stream=s) as ex_e:
    ex_e.launch(s)
    s.synchronize()
np.testing.assert_array_equal(host_e, x0 + 5)
print("explicit graph computed x + 5")
ge.close()
"""),
        md("""
Now the same 100-node chain both ways. What must agree on both backends: the same nodes and
edges, the same instantiate and launch cost, the same result. The build times differ by backend
and are printed, not asserted: on the simulator an explicit kernel node is one cheap runtime
call; on a GPU, labkit's explicit kernel node includes numba preparing a launch into a scratch
graph, so it costs at least as much as capturing. From Python, what the explicit API buys is
control of the shape (any DAG, without streams and events), not a cheaper build.
"""),
        code("""
NE = 100
xa, xb = labkit.to_device(x0), labkit.to_device(x0)
t0 = labkit.host_us()
g_exp = explicit.chain_graph(workloads.add_one, NE, 4, 256, xa)
t_build = labkit.host_us() - t0
t0 = labkit.host_us()
with labkit.capture(s) as cap:
    workloads.chain(NE, xb, s)
g_cap = cap.graph
t_capture = labkit.host_us() - t0
assert g_exp.node_kinds() == g_cap.node_kinds() and sorted(g_exp.edges) == sorted(g_cap.edges)

res = {}
for name, g in (("explicit", g_exp), ("captured", g_cap)):
    t0 = labkit.host_us()
    ex = g.instantiate()
    t_inst = labkit.host_us() - t0
    ex.upload(s)
    launch = timing.measure(lambda: ex.launch(s), sync=s, warmup=WARMUP, repeat=REPEAT)
    res[name] = (t_inst, launch.median)
    ex.close()
np.testing.assert_array_equal(xa.copy_to_host(), xb.copy_to_host())
print(f"build: explicit {t_build:.0f} µs, capture {t_capture:.0f} µs")
for name, (ti, tl) in res.items():
    print(f"{name:9} instantiate {ti:7.1f} µs   steady launch {tl:7.1f} µs")
ratio = res["explicit"][1] / res["captured"][1]
assert 0.5 < ratio < 2, "expected the same graph to launch at the same cost however it was built"
g_exp.close(); g_cap.close()
"""),
        md("""
## Where graphs stop helping

A graph removes *launch* cost. Three cases where that is not what limits you.

### A single long kernel, and a one-kernel graph

One long `busy` kernel (about 300 µs), and one tiny `add_one`, each launched eagerly and as a
one-node graph. What to look for: for the long kernel the two are nearly equal, since the launch
is a small part of the time. For the tiny kernel a graph saves at most one launch's host cost
per iteration, which from Python is numba's dispatch, but it costs a capture and an instantiation
first.
"""),
        code("""
PROBE = 10_000
xl = labkit.to_device(x0)
probe_us = kernels_extra.kernel_gpu_us(lambda st: workloads.busy[4, 256, st](xl, PROBE), s)
ITERS = max(1, int(PROBE * 300.0 / probe_us))

def one_graph(launch):
    launch()
    s.synchronize()
    with labkit.capture(s) as cap:
        launch()
    return cap.graph, cap.graph.instantiate(upload_stream=s)

rows = {}
for name, launch in (("one long kernel", lambda: workloads.busy[4, 256, s](xl, ITERS)),
                     ("one tiny kernel", lambda: workloads.add_one[4, 256, s](xl))):
    g, ex = one_graph(launch)
    e = timing.measure(launch, sync=s, warmup=WARMUP, repeat=REPEAT).median
    gr = timing.measure(lambda: ex.launch(s), sync=s, warmup=WARMUP, repeat=REPEAT).median
    rows[name] = (e, gr)
    ex.close(); g.close()
    print(f"{name:16} eager {e:8.1f} µs   graph {gr:8.1f} µs   saving {e - gr:6.1f} µs per iteration")
e, gr = rows["one long kernel"]
assert abs(e - gr) < 0.25 * e, f"expected a graph to change little for one long kernel (eager {e:.1f} µs, graph {gr:.1f} µs)"
print("setup of a one-node graph (capture + instantiate):",
      f"{phases[1]['capture'].median + phases[1]['instantiate'].median:.0f} µs")
"""),
        md("""
### Kernel fusion: the graph removes launches, not memory round trips

K = 50 `add_one` kernels over a large array each read the whole array from memory and write it
back. A graph runs them back to back but each still does its round trip. A *fused* kernel,
`kernels_extra.add_k(x, K)`, reads each element once, adds 1 K times in a register, and writes it
once. What to look for: the graph close to eager here (each kernel is long enough to hide its
launch), and the fused kernel far below both.
"""),
        code("""
F = kernels_extra.fusion_sizes()
n, grid, block, KF = F["n"], F["grid"], F["block"], F["k"]
xf0 = np.zeros(n, np.float32)
xu, xg, xfz = labkit.to_device(xf0), labkit.to_device(xf0), labkit.to_device(xf0)

def unfused(arr):
    for _ in range(KF):
        workloads.add_one[grid, block, s](arr)

def fused(arr):
    kernels_extra.add_k[grid, block, s](arr, KF)

unfused(xu); fused(xfz); s.synchronize()     # also the warm-up
np.testing.assert_array_equal(xu.copy_to_host(), xfz.copy_to_host())
print(f"fused and unfused both give x + {KF}")

with labkit.capture(s) as cap:
    unfused(xg)
ex_f = cap.graph.instantiate(upload_stream=s)
t = {
    f"eager ({KF} kernels)": timing.measure(lambda: unfused(xu), sync=s, warmup=1, repeat=F["repeat"]),
    f"graph ({KF} nodes)": timing.measure(lambda: ex_f.launch(s), sync=s, warmup=1, repeat=F["repeat"]),
    "fused (1 kernel)": timing.measure(lambda: fused(xfz), sync=s, warmup=1, repeat=F["repeat"]),
}
mb = xf0.nbytes / 2**20
print(f"array {mb:.0f} MiB: unfused moves {2 * KF * mb:.0f} MiB through memory, fused {2 * mb:.0f} MiB")
for k, v in t.items():
    print(f"{k:18} {v.median:9.1f} µs")
plot.bars(t, ylabel="time per iteration (µs)", log=True, title=f"{KF} additions over {mb:.0f} MiB")
plt.show()
te, tg, tf = (v.median for v in t.values())
assert tg <= 1.1 * te, "expected the graph to be no slower than eager"
assert 5 * tf < tg, "expected the fused kernel to beat the graph of small kernels by far"
ex_f.close()
"""),
        md("""
## Summary

* A graph has a one-off setup (capture, instantiate, upload) that grows with its size, and a
  cheap steady launch.
* The first launch of a fresh executable includes the upload; `upload` moves it off the first
  request.
* Break-even = setup / saving per iteration; for a chain of tiny kernels it comes within a few
  iterations.
* Capture and explicit construction give the same graph; the explicit API is about controlling
  the shape.
* Graphs remove launch cost. For long kernels there is little to remove; for one kernel there is
  at most one launch to save; and the memory traffic between small kernels is only removed by
  fusing them.

## Exercise

For the 10-kernel chain (`phases[10]`), compute after how many iterations its graph pays off,
counting the whole setup. The starting code misses part of the setup and divides by the wrong
quantity. `check_breakeven` compares your number with the right one.
"""),
        code(ex),
        code("""
from labkit.course.exercises.nb03 import check_breakeven
ph = phases[10]
check_breakeven(my_breakeven, ph["capture"].median + ph["instantiate"].median + ph["upload"].median,
                eager10, graph10)
""", tags=() if solution else ("raises-exception",)),
    ]


NOTEBOOKS = {
    "00_setup": nb00,
    "01_eager_launches": nb01,
    "02_stream_capture": nb02,
    "03_define_instantiate_launch": nb03,
}

if __name__ == "__main__":
    for name, fn in NOTEBOOKS.items():
        write(f"{name}.ipynb", fn(False))
        write(f"solutions/{name}_solution.ipynb", fn(True))

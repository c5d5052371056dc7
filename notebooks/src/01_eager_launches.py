# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 01 — Eager launches: where the time goes
#
# **Prerequisites:** notebook 00.
#
# **Learning goals**
#
# 1. Measure the cost per kernel of a chain of K tiny kernels launched one by one ("eager"), for
#    K from 1 to 1000, and compare it with the same chain replayed as one graph.
# 2. See the gaps between kernels on a timeline.
# 3. Separate *submitting* work (host time) from *finishing* it (host + GPU), for eager launches
#    and for one graph launch.
# 4. Split an eager launch into numba's share and the driver's, with prepared launches.
# 5. Recognise the opposite case: long kernels, where the GPU is the bottleneck, the gaps vanish
#    and a graph has little left to remove; and find the crossover between the two.
#
# About 55 minutes.

# %%
import labkit            # first: it chooses the backend before numba.cuda is imported
import numpy as np
import matplotlib.pyplot as plt
from labkit import rt, check, timing, plot
from labkit.course import workloads
from labkit.course.claims import nb01 as claims

print("backend :", labkit.backend, f"({labkit.backend_reason})")
print("device  :", labkit.device_name())
print("figures :", labkit.provenance())

SZ = workloads.sizes()                    # problem sizes that suit this backend
REPEAT, WARMUP = SZ["repeat"], SZ["warmup"]
s = labkit.Stream()
ROLES = {s: "stream s"}                   # how the timelines label the stream's row
x0 = np.zeros(1024, np.float32)
x = labkit.to_device(x0)

# %% [markdown]
# ## A chain of K tiny kernels
#
# `workloads.chain(K, x, s)` launches `add_one` K times on stream `s`. Each kernel touches 1024
# floats: almost no work for a GPU. That is deliberate: it stands for the many small kernels of an
# inference step (norms, activations, small matmuls), where each kernel's launch may cost more than
# its work. First, check it computes `x + K`.
#
# The very first launch of a kernel in a process also compiles it (numba's JIT) and loads it onto
# the GPU; every measurement below therefore starts with untimed warm-up runs.

# %%
K = 10
x = labkit.to_device(x0)
workloads.chain(K, x, s)
s.synchronize()
assert np.array_equal(x.copy_to_host(), x0 + K)
print(f"x + {K}: correct")

# %% [markdown]
# ## Cost per kernel against K
#
# For each K, time the whole chain plus one synchronize and divide by K. Then capture the same
# chain into a graph (notebook 02 explains capture), instantiate it once, and time its replay the
# same way.
#
# What to look for: the eager cost per kernel should stay roughly flat as K grows, because every
# launch pays the same host cost. The graph's cost per kernel should fall as K grows, because one
# launch and one synchronize are shared by all K kernels; at large K it should be many times
# below eager. The last column says how many.

# %%
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
claims.graph_cheaper_per_kernel(eager[-1].median, graph[-1].median)
claims.graph_cost_falls_with_k(graph[0].median, graph[-1].median, ks[0], ks[-1])

# %% [markdown]
# At K = 1 the graph's advantage is smallest: one graph launch for one kernel still pays a launch and
# a synchronize. From a few tens of kernels on, the eager/graph ratio settles: that is the saving
# per kernel that a graph brings to tiny kernels on this machine.
#
# ## The timeline: gaps between kernels
#
# Record 20 eager launches, then the same 20 kernels as one graph launch, and draw both on one
# time axis. On the eager timeline each green kernel should be followed by idle time while the
# host prepares the next launch; in the graph the kernels should sit almost back to back, and
# the whole graph should take a small part of the eager timeline's length.

# %% tags=["key-figure"]
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

plot.timelines([(rec_eager.timeline, f"{K_TL} eager launches"),
                (rec_graph.timeline, f"the same {K_TL} kernels in one graph launch")],
               stream_names=ROLES)
plt.show()


# %% [markdown]
# The same thing in numbers: the time from one kernel's start to the next one's start, and how
# long the kernels themselves ran. (On a GPU without CUPTI the timeline has no per-kernel spans,
# and this cell says so.) On a GPU, tracing itself makes each launch a little dearer: the note
# under each timeline says what the trace added, measured in this process.

# %%
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
    claims.eager_kernels_spaced_out(step_e, step_g)

# %% [markdown]
# Takeaway: with tiny kernels, eager launches leave the GPU idle most of the time; a graph
# closes the gaps.
#
# ## Where the time goes
#
# Time the same work two ways: **submit only** (the host launches and returns, no
# synchronize) and **submit + sync** (until the GPU has finished). For K = 200 kernels:
#
# * eager, submit only: the host's cost per launch, which is numba's dispatch (checking argument
#   types, finding the compiled kernel, flattening every array into kernel parameters) plus the
#   driver's launch call;
# * eager, submit + sync: if it is close to submit-only, the host is the bottleneck: the GPU
#   finishes each tiny kernel long before the next one arrives;
# * graph, submit only: one `cudaGraphLaunch` for all 200 kernels;
# * graph, submit + sync: the GPU's own time for 200 kernels back to back, plus one launch.
#
# The cell's last printed line is GPU time from a CUDA event pair around the work. For eager
# launches it counts the GPU's idle gaps too, since the stream is "busy" from the first event
# until the last.

# %%
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
    "eager: submit + sync": timing.measure(eager_run, sync=s, per=K,
                                           warmup=WARMUP, repeat=REPEAT),
    "graph: submit only": timing.measure(graph_run, per=K, warmup=WARMUP, repeat=REPEAT),
    "graph: submit + sync": timing.measure(graph_run, sync=s, per=K,
                                           warmup=WARMUP, repeat=REPEAT),
}
s.synchronize()
gpu_eager = timing.gpu_measure(eager_run, s, per=K, warmup=1, repeat=REPEAT).median
gpu_graph = timing.gpu_measure(graph_run, s, per=K, warmup=1, repeat=REPEAT).median

for name, st in costs.items():
    print(f"{name:22} {st.median:8.2f} µs per kernel")
print(f"{'one graph launch':22} {costs['graph: submit only'].median * K:8.2f} µs "
      f"of host time for all {K} kernels")
print(f"GPU time per kernel (events): eager {gpu_eager:.2f} µs, graph {gpu_graph:.2f} µs")

plot.bars({k: v for k, v in costs.items()}, ylabel="time per kernel (µs)", log=True,
          title=f"{K} add_one kernels: submitting vs finishing")
plt.show()
claims.eager_is_host_bound(costs["eager: submit only"].median,
                           costs["eager: submit + sync"].median)
claims.graph_launch_is_cheap_for_the_host(costs["graph: submit only"].median,
                                          costs["eager: submit only"].median)

# %% [markdown]
# Read it this way: for eager launches the host is the bottleneck, so the GPU waits between
# kernels, and the event-measured GPU time per kernel is about the host's launch cost, not the
# kernel's run time. The graph pays the host cost once per *graph*, and then the GPU runs the
# kernels back to back.
#
# ### One eager launch, several figures
#
# You now have several figures for "one eager launch": the sweep's µs per kernel, the eager
# timeline's step from one kernel's start to the next, and the submit-only and submit + sync rows
# above. They differ, and each difference has a reason:
#
# - **What is counted.** Submit only is the launch call alone. Submit + sync adds the wait for
#   the last kernel and the synchronize, shared by the K kernels: small at K = 200, most of the
#   figure at K = 1 (the sweep's first row).
# - **When it was measured.** A host does not run at one speed: it drifts, and falls into slow
#   stretches (notebook 06 measures this, and how to compare through it). The sweep's K = 200 and
#   the submit + sync row are the same measurement taken at two moments; their ratio is that drift.
# - **How many, and traced or not.** The timeline's step is the median of 19 gaps in one traced
#   run of 20 launches, a single moment of the host; on a GPU, tracing also makes each launch
#   dearer (the note under the timeline says by how much).
#
# The cell lines them up; look for figures within a few tens of per cent of each other, and for
# the reasons above in their order.

# %%
same = ks.index(K) if K in ks else len(ks) - 1          # the sweep's row at K, or its largest
rows = {f"submit only, K={K}": costs["eager: submit only"].median,
        f"submit + sync, K={K}": costs["eager: submit + sync"].median,
        f"the sweep, K={ks[same]}": eager[same].median}
if rec_eager.timeline.source != "events":
    rows[f"the timeline's step, K={K_TL}, traced"] = step_e
for name, us in rows.items():
    print(f"{name:34} {us:6.2f} µs")
print(f"{f'the sweep, K={ks[0]}..{ks[-1]}':34} {min(e.median for e in eager):6.2f} .. "
      f"{max(e.median for e in eager):.2f} µs")
if ks[same] == K:
    print(f"the same measurement twice (sweep / submit + sync): "
          f"{eager[same].median / costs['eager: submit + sync'].median:.2f}x")

# %% [markdown]
# ## Numba's share, measured: prepared launches
#
# How much of an eager launch is numba and how much is the driver? Take numba out of the loop:
# `labkit.prepare(kernel, grid, block, stream, *args)` does numba's per-call work once (typing the
# arguments, finding the compiled kernel, flattening each array into the pointer, shape and stride
# values the kernel receives) and keeps the finished parameter block. Calling the result is then
# a single driver call, `cuLaunchKernel`. Its arguments can be swapped for others of the same
# dtype and shape (`p(other_x)`); anything else is refused rather than launched wrongly.
#
# Three ways to run the same K kernels, each timed until the GPU is done: numba's eager launch,
# the prepared launch, and the graph replay from above.

# %%
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
    "prepared launch": timing.measure(prepared_run, sync=s, per=K,
                                      warmup=WARMUP, repeat=REPEAT),
    "graph replay": costs["graph: submit + sync"],
}
for name, st in three.items():
    print(f"{name:16} {st.median:7.2f} µs per kernel")
numba_share = three["eager (numba)"].median - three["prepared launch"].median
print(f"numba's dispatch: {numba_share:.2f} µs "
      f"of each {three['eager (numba)'].median:.2f} µs eager launch "
      f"({numba_share / three['eager (numba)'].median:.0%})")
plot.bars(three, ylabel="time per kernel (µs)", log=True,
          title=f"{K} add_one kernels: numba eager, prepared, graph")
plt.show()
claims.prepared_cheaper_than_numba(three["prepared launch"].median,
                                   three["eager (numba)"].median)
claims.graph_beats_prepared(three["graph replay"].median, three["prepared launch"].median)

# %% [markdown]
# The three on one time axis: 20 kernels each, eager, prepared, and in one graph launch.

# %%
xq = labkit.to_device(x0)
prep_tl = labkit.prepare(workloads.add_one, 4, 256, s, xq)
prep_tl(); s.synchronize()
with timing.timeline() as rec_prep:
    for _ in range(K_TL):
        prep_tl()
    s.synchronize()
plot.timelines([(rec_eager.timeline, f"{K_TL} eager numba launches"),
                (rec_prep.timeline, f"{K_TL} prepared launches"),
                (rec_graph.timeline, f"{K_TL} kernels in one graph launch")],
               stream_names=ROLES)
plt.show()
if rec_prep.timeline.source != "events":
    sp = kernel_spans(rec_prep.timeline)
    step_p = np.median(np.diff([k.start_us for k in sp]))
    print(f"prepared: a kernel starts every {step_p:.2f} µs")

# %% [markdown]
# Prepared launches remove numba's share but not the driver's: each kernel still costs one
# `cuLaunchKernel` of host time, several times a tiny kernel's run time, so gaps remain, only
# narrower. A graph removes the per-kernel launch itself. Prepared launches are still worth
# knowing: they are the fast path for work that cannot be captured (its shape or its control
# flow changes every time), and they can be captured too, becoming ordinary kernel nodes.
#
# For comparison with a real GPU, and with a launch from C++, which this course does not
# measure. The C++ launch may sit a little above the prepared launch; the box says why one
# should not read that as C++ being slower:

# %%
from labkit.course import reference
reference.note("01")

# %% [markdown]
# ## When the GPU is the bottleneck
#
# Now make each kernel long: `workloads.busy(x, iters)` loops `iters` times per thread. First find
# how long one iteration takes on this backend (replayed back to back, so no host gaps count),
# then pick `iters` so a kernel runs about 300 µs, far longer than a launch.

# %%
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
print(f"long kernels: eager {eager_long.median:.1f} µs per kernel, "
      f"graph {graph_long.median:.1f} µs "
      f"-> the graph saves {100 * (1 - graph_long.median / eager_long.median):.1f}%")
claims.long_kernels_graph_saves_little(eager_long.median, graph_long.median)

# %%
with timing.timeline() as rec_long:
    for _ in range(5):
        workloads.busy[4, 256, s](xb, ITERS)
    s.synchronize()
plot.timeline(rec_long.timeline, title="Five eager launches of a long kernel",
              stream_names=ROLES)
plt.show()
tl = rec_long.timeline
if tl.source != "events":
    row = [r for r in tl.rows() if r != "CPU"][0]
    frac = tl.busy_fraction(row)
    print(f"the GPU was busy {frac:.0%} of the time "
          "between the first kernel's start and the last one's end")
    claims.long_kernels_keep_the_gpu_busy(frac)

# %% [markdown]
# The host now launches the next kernel while the GPU is still running the previous one, so the
# launches hide behind the work: the queue never empties and the gaps vanish. A graph can only
# remove launch overhead; when there is none left to see, it has nothing to give.
#
# ## Summary
#
# * Eager launches from Python cost the host a roughly fixed time per kernel; with tiny kernels
#   the GPU sits idle between them.
# * Most of an eager numba launch is numba's own dispatch: a prepared launch (`labkit.prepare`)
#   does that work once and leaves only the driver's launch, but that is still one launch per
#   kernel.
# * A graph pays the host cost once per launch, so its cost per kernel falls with K toward the
#   GPU's own time per kernel.
# * Submitting vs finishing tells you who the bottleneck is: if submit ≈ submit + sync, it is the
#   host.
# * With long kernels the GPU is the bottleneck, the gaps disappear and a graph gains little.
#
# ## Exercise
#
# Between tiny kernels (the host is the bottleneck) and long ones (the GPU is) lies a
# **crossover**: the kernel length at which one kernel runs about as long as one eager launch.
# Find an `iters` for `busy(x, iters)` near it: long enough that eager launches keep the GPU
# busy at least 80% of the time, and no more than five times one eager launch long. A huge
# number would keep the GPU busy too, and the check refuses it: the point is to find where the
# host stops being the bottleneck.
#
# The check measures on this machine the eager launch cost of `busy`, its GPU time, and the busy
# fraction of 10 eager launches. Hint: you measured above the eager launch cost per kernel and
# `probe_us`, the GPU time of `busy` at `PROBE` iterations; the GPU time grows in proportion to
# `iters`.

# %% tags=["starter"]
iters = 10      # loop iterations per thread in busy(x, iters): change this

# %% tags=["solution"]
# A kernel about twice as long as one eager launch: past the crossover, and near it.
launch_us = costs["eager: submit only"].median
iters = int(PROBE * 2 * launch_us / probe_us)
print("iters =", iters)

# %% tags=["check"]
from labkit.course.exercises.nb01 import check_gpu_bound
check_gpu_bound(iters)

# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 00 — Welcome and setup check
#
# This course shows why GPU inference that runs many short kernels stalls on *launch overhead*,
# and how CUDA Graphs remove most of it. Every notebook measures what it teaches.
#
# **Prerequisites:** Python and numpy. No GPU is needed: without one, the course runs on a
# simulator (explained below). No CUDA experience is assumed beyond "a kernel is a function that
# runs on the GPU in many threads at once".
#
# **Learning goals**
#
# 1. Check your setup: which backend is active, which GPU (real or simulated), which versions.
# 2. Know what the simulator is, and what it is not.
# 3. Read the course's plots: the timeline, and where every figure's numbers come from.
# 4. Recognise a labkit error: CUDA's error code plus a hint that names the fix.
#
# About 20 minutes.

# %%
import labkit            # first: it chooses the backend before numba.cuda is imported
import numpy as np
import matplotlib.pyplot as plt
from labkit import rt, check, timing, plot
from labkit.course import workloads

print("backend :", labkit.backend, f"({labkit.backend_reason})")
print("device  :", labkit.device_name())
print("figures :", labkit.provenance())

# %% [markdown]
# ## Versions
#
# `import labkit` picked the backend once: `LABKIT_BACKEND=auto` (the default) uses a real GPU when
# one is usable and the simulator otherwise; `cuda` or `sim` force one. `labkit.rt` is the CUDA
# runtime API of that backend, with cuda-python's names and `(err, *values)` results, so the same
# cell runs on both.

# %%
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
print(f"CUDA driver API {drv // 1000}.{drv % 1000 // 10}, "
      f"runtime {run // 1000}.{run % 1000 // 10}")
print(f"{props.multiProcessorCount} SMs, compute capability {props.major}.{props.minor}, "
      f"{props.totalGlobalMem / 2**30:.0f} GiB")

# %% [markdown]
# ## What the simulator is, and what it is not
#
# On the `sim` backend nothing runs on a GPU, yet the notebooks still compute and still time:
#
# * **Results are computed, never faked.** Each kernel runs on the CPU, through a numpy version of
#   the kernel that a test proves equal to the numba kernel (or through numba's CUDA simulator).
# * **Errors are CUDA's.** Capture rules, error codes and invalidation follow what a real GPU does;
#   a conformance suite runs the same scenarios on both backends.
# * **The clock is virtual.** Each API call and each kernel advances it by a cost measured on a
#   real GPU (the calibration, named in every figure title as "simulated, calibrated on ...").
# * **Work runs asynchronously, as on a GPU.** A launch returns before its kernel runs; the
#   kernel takes effect when the virtual clock reaches it, so a read that does not wait for it
#   sees the old values, and a fault comes back from a later call. Where two pieces of work touch
#   one buffer with nothing ordering them, the simulator names both in a `RaceWarning`, which no
#   tool does on a GPU.
#
# * **The host is not perfectly steady.** A kernel's first launch pays for compiling and loading
#   it, and host calls jitter and slow down now and then, drawn from distributions measured on a
#   real GPU's host. The draws are seeded, so a rerun gives the same figures
#   (`LABKIT_SIM_SEED=random` for new ones, `LABKIT_SIM_NOISE=0` for none at all).
#
# What it is not: it does not model caches or contention for the SMs (streaming
# multiprocessors, the GPU's groups of cores that run thread blocks). The *shapes* of the
# results (what grows with what, what is tens of times cheaper) are what carry over, not the
# last digit.
#
# First, a kernel: `add_one` adds 1 to each of 1024 floats, launched as `kernel[grid, block, stream](args)`.

# %%
s = labkit.Stream()                       # a non-blocking stream (more on why in notebook 02)
x0 = np.arange(1024, dtype=np.float32)
x = labkit.to_device(x0)
workloads.add_one[4, 256, s](x)           # 4 blocks of 256 threads
s.synchronize()
got = x.copy_to_host()
assert np.array_equal(got, x0 + 1), "add_one did not add one"
print("first elements:", got[:5])

# %% [markdown]
# ## A GPU works on its own time
#
# Four facts the whole course leans on, said once here:
#
# * **Host memory is not device memory.** `labkit.to_device` copies a numpy array into the GPU's
#   memory, kernels work there, and `copy_to_host()` copies the result back.
# * **A kernel runs in many threads at once**, grouped in blocks: `add_one[4, 256, s]` launches
#   a *grid* of 4 blocks of 256 threads, one thread per element.
# * **A stream is an ordered queue of work.** Work on one stream runs in the order it was
#   queued; work on two streams has no order unless you give it one (an event, notebook 04).
#   The runtime names a stream by a handle: `s.handle` (or `labkit.stream_handle(s)`).
# * **A launch returns at once,** before its kernel has run. Nothing tells you the work is done
#   until you wait for it: `s.synchronize()`. An error inside a kernel comes back the same way,
#   late, from a call after it; `rt.cudaGetLastError()` returns the last error a call reported.
#
# The demo: a long kernel (`busy`: 32 threads each add 1.0 many times in a register, then store
# once), read back right after the launch and again after synchronizing. `copy_to_host()` copies
# on the default stream, which does not wait for `s` (a non-blocking stream): before the sync it
# reads what was there. On the simulator the first read also brings a `RaceWarning` naming the
# kernel and the copy; on a GPU nothing warns you.

# %%
y = labkit.to_device(np.zeros(32, np.float32))
workloads.busy[1, 32, s](y, 200_000)      # queued: the call returns before the kernel runs
print("read right after the launch:", y.copy_to_host()[0])
s.synchronize()                           # wait until everything queued on s has run
print("read after s.synchronize(): ", y.copy_to_host()[0])

# %% [markdown]
# Keep: a launch only queues work. Before you read a result, wait for the stream that made it.
#
# ## Measuring: repeats, medians and spread
#
# `labkit.timing.measure(fn, sync=stream)` runs `fn` a few times untimed (warm-up), then times it
# `repeat` times on the backend's host clock and returns a `Stats` with every sample. Look at the
# spread: no two launches cost quite the same, on a GPU's host or on the simulator, whose seeded
# jitter copies a real host's (see above). The course reports spread as percentiles:
# p5 is the value 5 % of the samples fall below, p95 the value 95 % fall below (p50 is the
# median). Shaded bands in the figures run from p5 to p95, and whiskers on bars up to p95.

# %%
st = timing.measure(lambda: workloads.add_one[4, 256, s](x), sync=s, repeat=20,
                    label="one add_one + synchronize")
print(st)
print(f"p5..p95 spread: {st.percentile(5):.2f} .. {st.p95:.2f} µs")

# %% [markdown]
# ## Reading a timeline
#
# The course draws timelines the way Nsight Systems does: the **CPU** row on top (API calls the
# host made), one row per **stream** below (work the GPU ran). Colours: red = a kernel launch (the
# overhead this course is about), blue = a graph launch, yellow = a synchronize, green = a kernel
# running on the GPU. The second line of every title says where the numbers come from: "measured
# on ..." or "simulated, calibrated on ...". On a GPU, the GPU's rows come from CUPTI (the CUDA
# Profiling Tools Interface, NVIDIA's library for tracing what the GPU ran) when it is installed;
# otherwise the plot says it fell back to CUDA events. The CPU row is labkit's own record of its
# calls (numba's whole dispatch for an eager launch), drawn the same way on both backends.
# Tracing makes some calls dearer on a GPU, most of all the first launch of each kernel and of
# each graph in a trace: the note under each timeline says by how much, measured in the same
# process, and that estimated extra is drawn hatched at the end of the call's bar.

# %% tags=["key-figure"]
with timing.timeline() as rec:
    workloads.chain(5, x, s)              # five add_one launches back to back
    s.synchronize()
plot.timeline(rec.timeline, title="Five eager add_one launches", stream_names={s: "stream s"})
plt.show()

# %% [markdown]
# Look at the stream row: are the green kernels back to back, or separated by gaps? Notebook 01
# measures those gaps. For scale, what one real GPU measured for the pieces of one add_one +
# synchronize. Add up the box's first three rows and set the sum beside the median you measured
# above: the box says why yours is a little larger (and on a GPU, it may be a lot larger: your
# host is not the H200's).

# %%
from labkit.course import reference
reference.note("00")

# %% [markdown]
# ## When CUDA says no
#
# labkit turns a failing call into a `labkit.CudaError`: CUDA's name and code, its description,
# and a hint that names the fix. Here the legacy NULL stream (stream 0), which cannot be captured
# (notebook 02 explains capture). One CUDA error code can have several causes: the hint lists
# the usual ones for that code, and the message starts with the call that failed.

# %%
try:
    with labkit.capture(0):
        pass
except labkit.CudaError as e:
    print(e)
    print("code:", e.code, "name:", e.name)
    assert e.code == 900

# %% [markdown]
# ## Summary
#
# * `import labkit` first; it tells you the backend, the device, and where figures come from.
# * The simulator computes real results with a calibrated virtual clock and seeded jitter, so
#   trust its shapes, not its last digit.
# * Timelines: CPU on top, streams below; red launches, green kernels.
# * Errors come with a hint; read it.
#
# ## Exercise
#
# Compute `3·x + 1` on the GPU with the course kernels `workloads.scale(x, a)` (x *= a) and
# `workloads.add_one(x)`, on stream `s`, and copy the result to the host as `result`. The starting
# code runs but computes something else: fix it, then run the check.

# %% tags=["starter"]
# Starting point: it runs, but does it compute 3·x + 1?
x = labkit.to_device(x0)
workloads.add_one[4, 256, s](x)
workloads.scale[4, 256, s](x, 3.0)
s.synchronize()
result = x.copy_to_host()

# %% tags=["solution"]
x = labkit.to_device(x0)
workloads.scale[4, 256, s](x, 3.0)     # scale first ...
workloads.add_one[4, 256, s](x)        # ... then add one
s.synchronize()
result = x.copy_to_host()

# %% tags=["check"]
from labkit.course.exercises.nb00 import check_scale_then_add
check_scale_then_add(result, x0, x)

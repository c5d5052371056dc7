# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 02 — Stream capture
#
# **Prerequisites:** notebook 01 (what a launch costs).
#
# **Learning goals**
#
# 1. Know what a capture records (and that it runs nothing), what a graph and an executable
#    graph are, what a node freezes, and in what order launches of one executable run.
# 2. Write the classic C++ capture example in Python through `labkit.rt`, line for line, with
#    every return code checked.
# 3. Do the same with `labkit.capture` (a context manager that always ends the capture) and with
#    cuda.core's `GraphBuilder`.
# 4. Recognise each capture pitfall by its error code, and fix it: the legacy NULL stream, a
#    synchronize inside the capture, a host array passed to a numba kernel, an allocation that
#    global mode refuses and relaxed mode lets through uncaptured, an ignored error, and a free
#    you did not write.
# 5. Know why every warm-up (JIT, module load, allocation) belongs before the capture.
#
# About 75 minutes.

# %%
import labkit            # first: it chooses the backend before numba.cuda is imported
import numpy as np
import matplotlib.pyplot as plt
from labkit import rt, check, timing, plot
from labkit.course import workloads
from labkit.course.claims import nb02 as claims

print("backend :", labkit.backend, f"({labkit.backend_reason})")
print("device  :", labkit.device_name())
print("figures :", labkit.provenance())

from labkit.course.kernels_extra import preprocess, infer_step, request_reference

N, BLOCK = 4096, 256
GRID = (N + BLOCK - 1) // BLOCK
GLOBAL = rt.cudaStreamCaptureMode.cudaStreamCaptureModeGlobal
RELAXED = rt.cudaStreamCaptureMode.cudaStreamCaptureModeRelaxed
D2H = rt.cudaMemcpyKind.cudaMemcpyDeviceToHost

def ptr(a):
    """The raw device address of a device array, for raw runtime calls."""
    return a.device_ctypes_pointer.value

x_host = np.linspace(-1, 1, N, dtype=np.float32)
inp = labkit.to_device(x_host)            # allocations happen here, before any capture
work = labkit.device_array(N)
out = labkit.device_array(N)
host_out = labkit.pinned_array(N)         # page-locked: what cudaMemcpyAsync wants
NBYTES = host_out.nbytes

# %% [markdown]
# ## Before the code: what capture records, and what it makes
#
# While a stream is **capturing**, the work submitted to it does not run. Each kernel launch and
# each copy is *recorded* as a node of a graph, with an edge from the work before it on the
# stream. Nothing reaches the GPU until the graph is launched. One request of this notebook,
# captured:
#
# ```text
#  your code, stream s capturing             what is recorded (a graph: a template)
#  ─────────────────────────────             ──────────────────────────────────────
#  cudaStreamBeginCapture(s)                 s starts recording; nothing will run
#  preprocess[grid, block, s](inp, work) ──▶ node 0  kernel preprocess  grid, block, @inp, @work
#                                                │
#  infer_step[grid, block, s](work, out) ──▶ node 1  kernel infer_step  grid, block, @work, @out
#                                                │
#  cudaMemcpyAsync(host_out, out, n, s)  ──▶ node 2  copy n bytes  @out ──▶ @host_out
#  cudaStreamEndCapture(s)               ──▶ the graph                       (@ = an address)
#        │
#        │ cudaGraphInstantiate: checked, every launch prepared once
#        ▼
#  executable graph (a snapshot of the graph as it was then)
#        │
#        │ cudaGraphLaunch(exec, s), as often as you like
#        ▼
#  GPU:  preprocess → infer_step → copy | preprocess → infer_step → copy | ...
#        ╰─────── launch 1 ───────────╯   ╰─────── launch 2 ───────────╯   one after another
# ```
#
# * **What a node freezes.** A kernel node holds the kernel, its launch configuration (grid,
#   block, shared memory) and the *value* of every argument at capture: for an array, its device
#   address (with its shape and strides); for a scalar such as `2.0`, the number itself. A copy
#   node holds its source, destination and size. What is **not** frozen is the data at those
#   addresses: a replay reads whatever `inp` holds at that moment. That is how a server replays
#   one graph for many requests: it copies each request into `inp`, then launches.
# * **Graph and executable graph.** The graph (`cudaGraph_t`, here `cap.graph`) is a template:
#   you can inspect it, edit its nodes, instantiate it. `cudaGraphInstantiate` turns it into an
#   **executable graph** (`cudaGraphExec_t`): it checks the graph and prepares every launch once,
#   so that a replay is a single call. The executable is a snapshot: editing the graph afterwards
#   does not change it (notebook 05 updates an executable on purpose).
# * **Launches of one executable run one after another.** Each launch is ordered behind the
#   earlier work of its stream and behind every earlier launch of the same executable, even
#   one on another stream. To run one graph twice at the same time, instantiate it twice.
#
# Three small demos, on `scale` (`x *= a`) and `add_one`. First: capture runs nothing, and a
# node keeps the scalar and the address it was captured with.

# %%
s = labkit.Stream()
y = labkit.to_device(np.ones(1024, np.float32))
workloads.scale[4, 256, s](y, 1.0)        # warm-up outside the capture (see "Why warm up first")
s.synchronize()

a = 2.0
with labkit.capture(s) as cap:
    workloads.scale[4, 256, s](y, a)      # recorded: scale, 4 × 256, y's address, 2.0
print("after the capture      y =", y.copy_to_host()[:3], "(nothing ran)")

ex = cap.graph.instantiate(upload_stream=s)
a = 10.0                                  # too late: the node holds 2.0
ex.launch(s); s.synchronize()
print("after one launch       y =", y.copy_to_host()[:3])

captured_y = y
y = labkit.to_device(np.ones(1024, np.float32))   # a new array: a new address
ex.launch(s); s.synchronize()
print("after a second launch  y =", y.copy_to_host()[:3],
      " captured_y =", captured_y.copy_to_host()[:3])
assert np.all(captured_y.copy_to_host() == 4) and np.all(y.copy_to_host() == 1)

# %% [markdown]
# Changing `a` or rebinding the name `y` in Python changed nothing the graph holds: the replay
# scaled the captured array by the captured 2.0, twice.
#
# Second: edit the *graph* after instantiation (point its node at the new `y`, with 10.0). The
# executable made before the edit keeps its snapshot; a new instantiation sees the edit.

# %%
cap.graph.set_kernel_args(0, workloads.scale, 4, 256, y, 10.0)   # edit the template
ex.launch(s); s.synchronize()
print("old executable:  captured_y =", captured_y.copy_to_host()[:3],
      " y =", y.copy_to_host()[:3])
ex_new = cap.graph.instantiate(upload_stream=s)
ex_new.launch(s); s.synchronize()
print("new executable:  captured_y =", captured_y.copy_to_host()[:3],
      " y =", y.copy_to_host()[:3])
assert np.all(captured_y.copy_to_host() == 8) and np.all(y.copy_to_host() == 10)

# %% [markdown]
# Third: launch one executable of five `add_one` kernels three times, twice on `s` and once on
# a second stream `s2` in between. The timeline shows the three runs one after another, also the
# one on `s2`.

# %%
s2 = labkit.Stream()
z = labkit.to_device(np.zeros(1024, np.float32))
with labkit.capture(s) as cap5:
    workloads.chain(5, z, s)
ex5 = cap5.graph.instantiate(upload_stream=s)
with timing.timeline() as rec:
    ex5.launch(s)
    ex5.launch(s2)                        # another stream: still after the first launch
    ex5.launch(s)
    s.synchronize(); s2.synchronize()
plot.timeline(rec.timeline, title="One executable (5 kernels) launched 3 times on two streams",
              stream_names={s: "s (launches 1, 3)", s2: "s2 (launch 2)"})
plt.show()
print("z =", z.copy_to_host()[:3], "(three launches of +5)")
assert np.all(z.copy_to_host() == 15)

# %% [markdown]
# Takeaway: a capture records work and its arguments; instantiate takes a snapshot; each launch
# replays that snapshot on whatever data the recorded addresses hold, one launch after another.
#
# ## Step 0: run it eagerly first
#
# Now the request: `preprocess`, `infer_step`, copy the answer to the host. This eager run gives
# the reference answer, and it is the **warm-up**: the first launch of each kernel compiles it
# and loads it onto the GPU. That must not happen inside a capture (see "Why warm up first"
# below).

# %%
warm = labkit.Stream()
preprocess[GRID, BLOCK, warm](inp, work)
infer_step[GRID, BLOCK, warm](work, out)
warm.synchronize()
eager_out = out.copy_to_host()
# a tolerance, not equality: the GPU fuses multiply-adds, numpy does not
np.testing.assert_allclose(eager_out, request_reference(x_host), rtol=1e-5, atol=1e-6)
print("eager output matches numpy:", eager_out[:4])

# %% [markdown]
# ## The C++ example, line for line
#
# The C++ we translate (CUDA 12 or later):
#
# ```cpp
# cudaStreamCreate(&stream);
# cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal);
# preprocess<<<grid, block, 0, stream>>>(input, work);
# infer_step<<<grid, block, 0, stream>>>(work, output);
# cudaMemcpyAsync(host_output, output, bytes, cudaMemcpyDeviceToHost, stream);
# cudaStreamEndCapture(stream, &graph);
# cudaGraphInstantiate(&graph_exec, graph, 0);      // flags; CUDA 11 took 5 arguments here
# for (request...) cudaGraphLaunch(graph_exec, stream);
# cudaStreamSynchronize(stream);
# cudaGraphExecDestroy(graph_exec); cudaGraphDestroy(graph); cudaStreamDestroy(stream);
# ```
#
# In Python every runtime call returns `(err, *values)`: an output argument such as `&graph`
# becomes a returned value. `check` raises a `CudaError` with a hint when `err` is not success,
# and returns the values. Kernel launches go through numba, and labkit turns a failing launch
# into the same `CudaError`.
#
# One deliberate change from the C++: `cudaStreamCreateWithFlags(cudaStreamNonBlocking)` instead
# of `cudaStreamCreate`. A plain stream is *blocking*: it synchronizes with the legacy NULL
# stream. If anything (a library, a numba default-stream call) touches the legacy stream while a
# blocking stream captures, that work would have to wait on the capture, which CUDA refuses with
# `cudaErrorStreamCaptureImplicit` (906), and the capture is lost. Demonstrated below.
#
# The host buffer is pinned (page-locked). A capture also accepts pageable host memory, but a
# pageable copy cannot be a truly asynchronous DMA (direct memory access: the GPU's copy engine
# reading host memory by itself, while the CPU goes on); pinned memory is what `cudaMemcpyAsync`
# is designed for.

# %%
stream = check(rt.cudaStreamCreateWithFlags(rt.cudaStreamNonBlocking),
               "cudaStreamCreateWithFlags")
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

# %% [markdown]
# Every launch here replays the same request, on the same buffers, as the primer said. A server
# copies each new request into `inp` (or updates the graph, notebook 05).
#
# ### Why a non-blocking stream: the blocking one, failing
#
# Capture a *blocking* stream and, meanwhile, launch unrelated work on the legacy NULL stream:

# %%
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

# %% [markdown]
# With `cudaStreamNonBlocking` the same legacy-stream launch would simply run: the capturing
# stream does not synchronize with stream 0. `labkit.Stream()` is always non-blocking.
#
# ## The same with `labkit.capture`
#
# `labkit.capture(stream)` begins the capture, and always ends it, also when the block raises, so
# a stream is never left capturing. `cap.graph` is a `labkit.Graph` that owns the handle and keeps
# the arrays its kernels use alive. The figure draws the recorded graph: the primer's three
# nodes.

# %% tags=["key-figure"]
with labkit.capture(s) as cap:
    preprocess[GRID, BLOCK, s](inp, work)
    infer_step[GRID, BLOCK, s](work, out)
    check(rt.cudaMemcpyAsync(host_out.ctypes.data, ptr(out), NBYTES, D2H, s.handle),
          "cudaMemcpyAsync")
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

# %% [markdown]
# What these steps cost on a real GPU, for scale (your own costs are measured in notebook 03):

# %%
from labkit.course import reference
reference.note("02")

# %% [markdown]
# ## The same with cuda.core's `GraphBuilder`
#
# cuda.core, NVIDIA's Pythonic CUDA API, builds a graph from a stream: `stream.create_graph_builder()`,
# `begin_building()`, launch into it, `end_building()`, `complete()` gives a `Graph` with
# `.launch(stream)`. numba-cuda launches straight into a builder: `kernel[grid, block, builder](...)`.
# The copy goes through the runtime on the builder's stream. This needs a real GPU; on the
# simulator the cell says so and skips.

# %%
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
    except Exception as e:   # another cuda.core version's API should not stop the course
        print(f"the cuda.core GraphBuilder path failed here: {type(e).__name__}: {e}")
else:
    print("cuda.core's GraphBuilder drives a real GPU: run with LABKIT_BACKEND=cuda to see it; "
          "skipped on the simulator")


# %% [markdown]
# ## Pitfalls, each failing
#
# Each cell below makes one classic mistake and shows the code CUDA returns, with labkit's hint.
# After each, the stream is checked to be usable again: a failed capture is ended, and nothing
# sticks.

# %%
def usable_again(stream, name):
    """Not capturing any more, and ordinary work runs on it."""
    status = check(rt.cudaStreamIsCapturing(labkit.stream_handle(stream)),
                   "cudaStreamIsCapturing")
    y = labkit.to_device(np.zeros(1024, np.float32))
    workloads.add_one[4, 256, stream](y)
    check(rt.cudaStreamSynchronize(labkit.stream_handle(stream)), "cudaStreamSynchronize")
    assert int(status) == 0 and y.copy_to_host()[0] == 1
    print(f"-> {name}: not capturing, and usable again")

s1 = labkit.Stream()

# %% [markdown]
# ### 1. The legacy NULL stream
#
# Stream 0 cannot be captured (it synchronizes with every blocking stream). The call fails, on
# purpose; the cell prints the error it raises. It is the same error, with the same hint, that
# `labkit.capture(0)` raised in notebook 00:

# %%
try:
    check(rt.cudaStreamBeginCapture(0, GLOBAL), "cudaStreamBeginCapture on stream 0")
except labkit.CudaError as e:
    print(e)

# %%
rt.cudaGetLastError()
usable_again(0, "stream 0")

# %% [markdown]
# ### 2. A synchronize inside the capture
#
# `cudaStreamSynchronize(s)` waits until everything submitted to `s` has finished. While `s`
# captures, what you submit is only recorded: it will not run before the graph is launched, so
# a wait for it could never end (and work submitted before the capture may still be running).
# CUDA refuses the call instead (900) and invalidates the capture, so `cudaStreamEndCapture`
# returns 901 and no graph. Synchronize before `cudaStreamBeginCapture` (that waits for the
# earlier work), or after the graph has been launched.

# %%
check(rt.cudaStreamBeginCapture(s1.handle, GLOBAL), "cudaStreamBeginCapture")
preprocess[GRID, BLOCK, s1](inp, work)
err_sync = rt.cudaStreamSynchronize(s1.handle)[0]
err_end, _ = rt.cudaStreamEndCapture(s1.handle)
print(labkit.CudaError(err_sync, "cudaStreamSynchronize inside the capture"))
print(labkit.CudaError(err_end, "cudaStreamEndCapture"))
rt.cudaGetLastError()
assert (int(err_sync), int(err_end)) == (900, 901)
usable_again(s1, "s1")

# %% [markdown]
# ### 3. A numba launch on a host array
#
# Given a numpy array instead of a device array, numba does far more than a launch: it allocates
# a temporary device buffer, copies the array into it, launches the kernel on that buffer,
# copies the buffer back into your numpy array, and frees it. Inside a capture the allocation is
# the step that fails. CUDA itself would accept a stream-ordered allocation on a capturing
# stream and record it as an allocation node (notebook 09 shows them). What refuses it here is
# cuda.core: numba-cuda asks cuda.core's device memory pool for the buffer, on your stream, and
# that pool raises an error rather than allocate on a capturing stream (its documentation sends
# graph builders to `GraphMemoryResource` instead). labkit reports it as CUDA reports a refused
# call, 900. (Copies are not the problem: a capture records them, as the request above did.)
# Inside a capture, pass device arrays only (`labkit.to_device`, once, before), so that the
# graph holds your kernel and nothing numba did around it.

# %%
code_host = None
try:
    with labkit.capture(s1):
        preprocess[GRID, BLOCK, s1](x_host, work)     # x_host is a numpy array
except labkit.CudaError as e:
    code_host = e.code
    print(e)
assert code_host == 900
usable_again(s1, "s1")

# %% [markdown]
# ### 4. An allocation: global mode refuses it, relaxed mode lets it through uncaptured
#
# Some calls are *potentially unsafe* during a capture: `cudaMalloc` and `cudaFree`, pinned
# allocations, waiting on a stream or event that is not in the capture. Which of them a capture
# refuses depends on its **mode**, the second argument of `cudaStreamBeginCapture`. In
# **global** mode (the usual one) `cudaMalloc` is refused (900) and the capture is lost. In
# **relaxed** mode it is allowed, but the allocation is not part of the graph: it happens once,
# now, and every replay reuses that one address. Relaxed mode makes the call legal, not
# captured. (Notebook 09 has the whole picture: every mode, from every thread.)

# %%
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
assert results == {"global": (900, 901), "relaxed": (0, 0)}
usable_again(s1, "s1")

# %% [markdown]
# ### 5. An ignored error invalidates the capture
#
# Someone polls the stream with `cudaStreamQuery` and ignores the return code. The query is refused
# (900) and the capture is invalidated; nothing says so until the *next* launch fails with 901,
# far from the cause.

# %%
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
usable_again(s1, "s1")

# %% [markdown]
# `labkit.capture` helps here: when the capture ends invalidated, it names the first failing call
# it saw, so the 901 points back at the 900.

# %%
try:
    with labkit.capture(s1):
        preprocess[GRID, BLOCK, s1](inp, work)
        rt.cudaStreamQuery(s1.handle)         # ignored again
except labkit.CudaError as e:
    print(e)
    assert e.code == 901 and "900" in str(e)
usable_again(s1, "s1")

# %% [markdown]
# ### 6. A free you did not write: numba's deferred frees
#
# When a numba device array is garbage-collected, numba does not free its memory at once. It
# queues the free and empties the queue later: at a later allocation that runs short of memory,
# or once more than ten frees (or a fifth of the GPU's memory) are pending. In plain numba code
# that moment can fall inside a capture: a `cuMemFree` for an array from some earlier cell runs
# while your stream captures, global mode refuses it (900), and the capture is invalidated by a
# line you never wrote.
#
# `labkit.capture` holds numba's frees until the capture has ended, through numba's own
# `cuda.defer_cleanup()`. When you capture with numba without labkit, do the same:
#
# ```python
# from numba import cuda
# with cuda.defer_cleanup():          # numba frees nothing inside this block
#     ...                             # begin the capture, launch, end the capture
# ```
#
# (The simulator frees memory through its own allocator and never inside a capture, so there
# is nothing to show here without a GPU.)
#
# ## Why warm up first
#
# The first launch of a kernel in a process does far more than a launch: numba compiles the kernel
# (JIT), the driver loads the module, numba may allocate. Inside a capture, at best that time is
# spent at capture; at worst one of those steps is a call the capture refuses, and the capture is
# lost as in the pitfalls above. Time a brand-new kernel's first and second launch:

# %%
from labkit.course.kernels_extra import negate   # a[i] = -a[i]; not launched yet in this process

neg = labkit.to_device(np.ones(1024, np.float32))
times = []
for _ in range(2):
    t0 = labkit.host_us()
    negate[4, 256, s](neg)
    s.synchronize()
    times.append(labkit.host_us() - t0)
print(f"first launch {times[0] / 1000:.1f} ms, second {times[1]:.1f} µs "
      f"({times[0] / times[1]:,.0f}× longer)")
claims.first_launch_much_slower(times[0], times[1])

# %% [markdown]
# ## Graph output equals eager output
#
# All paths computed the same request. Checked with numpy, bit for bit (same kernels, same inputs):

# %%
outputs = {"raw labkit.rt": raw_out, "labkit.capture": capture_out}
if builder_out is not None:
    outputs["cuda.core GraphBuilder"] = builder_out
for name, o in outputs.items():
    np.testing.assert_array_equal(o, eager_out)
    print(f"{name:24} == eager")

# %% [markdown]
# ## Summary
#
# * Capture records the work submitted to a stream into a graph and runs none of it. Each node
#   freezes its kernel, launch configuration and argument values (addresses, scalars); the data
#   at those addresses is read at each replay.
# * Instantiate once (a snapshot: later edits of the graph do not reach it), launch many times;
#   launches of one executable run one after another.
# * Capture a stream you created, non-blocking, never stream 0.
# * Inside a capture: no synchronize, no query, no host arrays to numba, no allocations (global
#   mode); relaxed mode permits some of these but does not capture them.
# * An ignored error surfaces later as 901: check every return code, or let `labkit.capture` tell
#   you the first failing call. numba's deferred frees are held by `labkit.capture`; without it,
#   use `cuda.defer_cleanup()`.
# * Warm up (JIT, module load, allocations) before capturing.

# %% [markdown]
# *Going further:* which call is refused in which capture mode, from which thread (the full
# capture-mode matrix) is an optional section of notebook 09, "When a graph goes wrong".

# %% [markdown]
# ## Exercise: a capture that fails
#
# `capture_request` below should capture one request, `preprocess` → `infer_step` → the answer
# copied into the pinned host buffer `ex_out`, so that one graph launch returns the answer for
# whatever request is in `inp` at that moment. It fails. Run it and read its error, then:
#
# 1. set `first_error` to the code of the error it raised (the number in parentheses);
# 2. repair `capture_request` until it returns the graph. Change what is wrong, keep what the
#    request needs.
#
# The check launches your graph after putting a new request into `inp`.

# %%
ex_out = labkit.pinned_array(N)

# %% tags=["starter"]
def capture_request(stream):
    with labkit.capture(stream) as cap:
        preprocess[GRID, BLOCK, stream](x_host, work)
        infer_step[GRID, BLOCK, stream](work, out)
        check(rt.cudaMemcpyAsync(ex_out.ctypes.data, ptr(out), ex_out.nbytes, D2H, stream.handle),
              "cudaMemcpyAsync")
        stream.synchronize()          # wait until the answer is in ex_out
    return cap.graph


try:
    capture_request(labkit.Stream())
except labkit.CudaError as e:
    print(e)

first_error = None                    # your diagnosis: the error code printed above

# %% tags=["solution"]
def capture_request(stream):
    with labkit.capture(stream) as cap:
        preprocess[GRID, BLOCK, stream](inp, work)      # the device input: numba allocates nothing
        infer_step[GRID, BLOCK, stream](work, out)
        check(rt.cudaMemcpyAsync(ex_out.ctypes.data, ptr(out), ex_out.nbytes, D2H, stream.handle),
              "cudaMemcpyAsync")
    return cap.graph                  # synchronize after launching the graph, not in the capture


first_error = 900                     # cudaErrorStreamCaptureUnsupported

# %% tags=["check"]
from labkit.course.exercises import nb02
nb02.check_request_capture(capture_request, first_error, inp, ex_out)

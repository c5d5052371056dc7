# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/OWNER/cuda-graphs-lab/blob/main/notebooks/02_stream_capture.ipynb) In Colab, run `%pip install -q "cuda-graphs-lab[cu12] @ git+https://github.com/OWNER/cuda-graphs-lab"` first.
#
# # 02 — Stream capture
#
# **Prerequisites:** notebook 01 (what a launch costs).
#
# **Learning goals**
#
# 1. Write the classic C++ capture example in Python through `labkit.rt`, line for line, with
#    every return code checked.
# 2. Do the same with `labkit.capture` (a context manager that always ends the capture) and with
#    cuda.core's `GraphBuilder`.
# 3. Recognise each capture pitfall by its error code, and fix it: the legacy NULL stream, a
#    synchronize inside the capture, a host array passed to a numba kernel, a call that global
#    mode forbids but relaxed mode allows, and an ignored error that invalidates the capture.
# 4. Know why every warm-up (JIT, module load, allocation) belongs before the capture.
# 5. Check that the graph computes exactly what the eager launches compute.
#
# About 30 minutes.
#
# The C++ we translate (one request = `preprocess`, `infer_step`, copy the answer to the host):
#
# ```cpp
# cudaStreamCreate(&stream);
# cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal);
# preprocess<<<grid, block, 0, stream>>>(input, work);
# infer_step<<<grid, block, 0, stream>>>(work, output);
# cudaMemcpyAsync(host_output, output, bytes, cudaMemcpyDeviceToHost, stream);
# cudaStreamEndCapture(stream, &graph);
# cudaGraphInstantiate(&graph_exec, graph, nullptr, nullptr, 0);
# for (request...) cudaGraphLaunch(graph_exec, stream);
# cudaStreamSynchronize(stream);
# cudaGraphExecDestroy(graph_exec); cudaGraphDestroy(graph); cudaStreamDestroy(stream);
# ```

# %%
import labkit            # first: it chooses the backend before numba.cuda is imported
import numpy as np
import matplotlib.pyplot as plt
from labkit import rt, check, timing, plot
from labkit.course import workloads

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
# ## Step 0: run it eagerly first
#
# This run gives the reference answer, and it is the **warm-up**: the first launch of each kernel
# compiles it and loads it onto the GPU. That must not happen inside a capture (see "Why warm up
# first" below).

# %%
warm = labkit.Stream()
preprocess[GRID, BLOCK, warm](inp, work)
infer_step[GRID, BLOCK, warm](work, out)
warm.synchronize()
eager_out = out.copy_to_host()
np.testing.assert_allclose(eager_out, request_reference(x_host), rtol=1e-5, atol=1e-6)  # the GPU fuses multiply-adds
print("eager output matches numpy:", eager_out[:4])

# %% [markdown]
# ## The C++ example, line for line
#
# Every runtime call returns `(err, *values)`; `check` raises a `CudaError` with a hint when `err`
# is not success, and returns the values. Kernel launches go through numba, and labkit turns a
# failing launch into the same `CudaError`.
#
# Two deliberate changes from the C++:
#
# * `cudaStreamCreateWithFlags(cudaStreamNonBlocking)` instead of `cudaStreamCreate`. A plain
#   stream is *blocking*: it synchronizes with the legacy NULL stream. If anything (a library, a
#   numba default-stream call) touches the legacy stream while a blocking stream captures, that
#   work would have to wait on the capture, which CUDA refuses with
#   `cudaErrorStreamCaptureImplicit` (906) and the capture is lost. Demonstrated below.
# * `cudaGraphInstantiate(graph, flags)`: since CUDA 12 the call takes flags instead of the
#   error-node and log-buffer arguments of the older C++ signature.
#
# The host buffer is pinned (page-locked). A capture also accepts pageable host memory, but a
# pageable copy cannot be a truly asynchronous DMA (direct memory access: the GPU's copy engine
# reading host memory by itself, while the CPU goes on); pinned memory is what `cudaMemcpyAsync`
# is designed for.

# %%
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

# %% [markdown]
# Every launch here replays the same request, on the same buffers: a graph stores the addresses it
# was captured with. A server copies each new request into `inp` (or updates the graph, notebook
# 05).
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
# the arrays its kernels use alive.

# %% tags=["key-figure"]
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
    except Exception as e:   # an API difference in another cuda.core version should not stop the course
        print(f"the cuda.core GraphBuilder path failed here: {type(e).__name__}: {e}")
else:
    print("cuda.core's GraphBuilder drives a real GPU: run with LABKIT_BACKEND=cuda to see it; skipped on the simulator")


# %% [markdown]
# ## Pitfalls, each failing
#
# Each cell below makes one classic mistake and shows the code CUDA returns, with labkit's hint.
# After each, the stream is checked to be usable again: a failed capture is ended, and nothing
# sticks.

# %%
def usable_again(stream):
    """Not capturing any more, and ordinary work runs on it."""
    status = check(rt.cudaStreamIsCapturing(labkit.stream_handle(stream)), "cudaStreamIsCapturing")
    y = labkit.to_device(np.zeros(1024, np.float32))
    workloads.add_one[4, 256, stream](y)
    check(rt.cudaStreamSynchronize(labkit.stream_handle(stream)), "cudaStreamSynchronize")
    assert int(status) == 0 and y.copy_to_host()[0] == 1
    print(f"-> stream {labkit.stream_handle(stream)}: {status.name}, and usable again")

s1 = labkit.Stream()

# %% [markdown]
# ### 1. The legacy NULL stream
#
# Stream 0 cannot be captured (it synchronizes with every blocking stream). The call fails, on
# purpose; the cell prints the error it raises:

# %%
try:
    check(rt.cudaStreamBeginCapture(0, GLOBAL), "cudaStreamBeginCapture on stream 0")
except labkit.CudaError as e:
    print(e)

# %%
rt.cudaGetLastError()
usable_again(0)

# %% [markdown]
# ### 2. A synchronize inside the capture
#
# While capturing, nothing runs, so there is nothing to wait for: the synchronize is refused (900)
# and the capture is invalidated, so `cudaStreamEndCapture` returns 901 and no graph.

# %%
check(rt.cudaStreamBeginCapture(s1.handle, GLOBAL), "cudaStreamBeginCapture")
preprocess[GRID, BLOCK, s1](inp, work)
err_sync = rt.cudaStreamSynchronize(s1.handle)[0]
err_end, _ = rt.cudaStreamEndCapture(s1.handle)
print(labkit.CudaError(err_sync, "cudaStreamSynchronize inside the capture"))
print(labkit.CudaError(err_end, "cudaStreamEndCapture"))
rt.cudaGetLastError()
assert (int(err_sync), int(err_end)) == (900, 901)
usable_again(s1)

# %% [markdown]
# ### 3. A numba launch on a host array
#
# Passed a numpy array, numba silently copies it to the GPU, launches, and copies it back: a
# synchronous copy, which a capture refuses.

# %%
code_host = None
try:
    with labkit.capture(s1):
        preprocess[GRID, BLOCK, s1](x_host, work)     # x_host is a numpy array, not a device array
except labkit.CudaError as e:
    code_host = e.code
    print(e)
assert code_host == 900
usable_again(s1)

# %% [markdown]
# ### 4. Capture modes: which calls a capture forbids, and to whom
#
# Some calls are *potentially unsafe* during a capture: `cudaMalloc` and `cudaFree`, pinned
# allocations, waiting on or polling a stream or event that is not in the capture. They are
# neither captured nor safe to run while the GPU's work is only being recorded (an allocation
# may synchronize the device). Whether one is refused depends on two modes:
#
# * the **capture's mode**, the second argument of `cudaStreamBeginCapture`: global,
#   thread-local or relaxed;
# * the **calling thread's own mode**, global for every thread until it calls
#   `cudaThreadExchangeStreamCaptureMode(mode)`, which sets it and returns the previous one.
#
# First the classic case, from the capturing thread: in global mode `cudaMalloc` is refused
# (900) and the capture is lost; in relaxed mode it is allowed, but the allocation is not part
# of the graph: it happens once, now, and every replay reuses that one address. Relaxed mode
# makes the call legal, not captured.

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
print("hint for 900:", labkit.hint_for(900))
assert results == {"global": (900, 901), "relaxed": (0, 0)}
usable_again(s1)

# %% [markdown]
# ### The matrix: call × capture mode × calling thread
#
# `labkit.course.capture_modes` runs one *cell* at a time: begin a capture on a non-blocking stream in
# a mode, launch one kernel into it, make one call, then look at the capture and end it. The call
# comes from the capturing thread or from another thread, each either in its default (global)
# mode or after exchanging its own mode to relaxed. The cells below run now, on this backend
# (about a hundred, well under a second); the whole matrix (25 calls, 300 cells) was probed on an
# H200, and the conformance tests hold the simulator to every cell of it.

# %%
from labkit.course import capture_modes

MATRIX_CALLS = ["cudaMalloc", "cudaStreamSynchronize(other)", "cudaEventQuery(outside)",
                "cudaStreamSynchronize(capturing)", "cudaEventQuery(captured)",
                "cudaDeviceSynchronize", "cudaMallocAsync(capturing)", "cudaFreeAsync(capturing)",
                "cudaMemcpy", "cudaStreamCreate", "cudaStreamEndCapture"]
matrix = capture_modes.measure(MATRIX_CALLS)
capture_modes.plot_matrix(matrix["cells"], title=f"{len(matrix['cells'])} capture-mode cells")
plt.show()
print("cudaThreadExchangeStreamCaptureMode returned:")
for what, previous in matrix["exchange"].items():
    print(f"  {what:30} {previous}")

# %% [markdown]
# Reading the figure, row by row:
#
# * **Potentially unsafe calls** (the first three rows): a **global** capture forbids them to
#   every thread; a **thread-local** capture only to the thread that began it; a **relaxed**
#   capture to none. A thread that exchanged its own mode to relaxed is exempt in every mode:
#   that is what `cudaThreadExchangeStreamCaptureMode` is for (a library that must allocate while
#   its caller captures). A refusal is 900 *and* the capture is invalidated: its end returns 901
#   and no graph.
# * **Calls about the capture itself** are refused in every mode, from every thread, relaxed or
#   not: waiting on or querying the capturing stream (900) or an event recorded in the capture
#   (907), and `cudaDeviceSynchronize` (900). Nothing has run yet, so there is nothing to wait
#   for.
# * **Always allowed**: `cudaMallocAsync` on the capturing stream is *captured* (a memory-allocation
#   node of the graph); a synchronous `cudaMemcpy` on the legacy stream (while a non-blocking
#   stream captures); creating streams and events.
# * `cudaFreeAsync` on the capturing stream of memory allocated **before** the capture is refused
#   with 1 (`cudaErrorInvalidValue`), and the capture goes on: a graph can free only memory that
#   a graph allocated.
# * **Ending** a global or thread-local capture from another thread is 908
#   (`cudaErrorStreamCaptureWrongThread`), and the capture is gone: the capturing thread's own end
#   then finds nothing (401). A relaxed capture may be ended from any thread.
#
# The code checks those rules on the cells just measured:

# %%
cell = {(r["call"], r["mode"], r["where"]): r for r in matrix["cells"]}
MODES, WHERES = list(capture_modes.MODES), capture_modes.WHERES


def allowed(call, mode, where):
    return cell[call, mode, where]["rc"] == "cudaSuccess"


for mode in MODES:
    print(f"cudaMalloc during a {mode:12} capture, allowed from:",
          [where for where in WHERES if allowed("cudaMalloc", mode, where)])
assert [allowed("cudaMalloc", m, "capturing") for m in MODES] == [False, False, True]
assert [allowed("cudaMalloc", m, "other") for m in MODES] == [False, True, True]
assert all(allowed("cudaMalloc", m, w) for m in MODES for w in ("capturing_relaxed", "other_relaxed"))
assert not any(allowed(c, m, w) for m in MODES for w in WHERES
               for c in ("cudaStreamSynchronize(capturing)", "cudaEventQuery(captured)",
                         "cudaDeviceSynchronize"))
assert all(allowed("cudaMallocAsync(capturing)", m, w) for m in MODES for w in WHERES)
assert [cell["cudaStreamEndCapture", m, "other"]["rc"] for m in MODES] == [
    "cudaErrorStreamCaptureWrongThread", "cudaErrorStreamCaptureWrongThread", "cudaSuccess"]
assert matrix["exchange"]["new thread sets relaxed, gets"] == "cudaStreamCaptureModeGlobal"
print("the live matrix shows every rule above")
usable_again(s1)

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
usable_again(s1)

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
usable_again(s1)

# %% [markdown]
# ## Why warm up first
#
# The first launch of a kernel in a process does far more than a launch: numba compiles the kernel
# (JIT), the driver loads the module, numba may allocate. Inside a capture, at best that time is
# spent at capture; at worst one of those steps is a call the capture refuses, and the capture is
# lost as in the pitfalls above. Time a brand-new kernel's first and second launch:

# %%
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
    labkit.expect(times[0] > 10 * times[1], "a kernel's first launch (JIT + module load) is over 10× its second",
                  measured=f"first {times[0]:.0f} µs, second {times[1]:.1f} µs",
                  why="the kernel was already compiled (numba's cache) or a busy host slowed "
                      "the second launch", look="the two times printed above")
else:
    print("(the simulator does not model compilation: on a GPU the first launch takes far longer)")

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
# * Capture records work submitted to a stream into a graph; instantiate once, launch many times,
#   synchronize once.
# * Capture a stream you created, non-blocking, never stream 0.
# * Inside a capture: no synchronize, no query, no host arrays to numba, no allocations (global
#   mode); relaxed mode permits some of these but does not capture them.
# * An ignored error surfaces later as 901: check every return code, or let `labkit.capture` tell
#   you the first failing call.
# * Warm up (JIT, module load, allocations) before capturing.
#
# ## Exercise
#
# Capture one request into a graph that includes the copy of `out` into the pinned host buffer
# `ex_out`, so that one graph launch returns the answer. The starting code captures the two kernels
# only.

# %% tags=["starter"]
ex_stream = labkit.Stream()
ex_out = labkit.pinned_array(N)
with labkit.capture(ex_stream) as ex_cap:
    preprocess[GRID, BLOCK, ex_stream](inp, work)
    infer_step[GRID, BLOCK, ex_stream](work, out)
    # your code: copy `out` into ex_out here (rt.cudaMemcpyAsync on ex_stream.handle)
print(ex_cap.graph.node_kinds())

# %% tags=["solution"]
ex_stream = labkit.Stream()
ex_out = labkit.pinned_array(N)
with labkit.capture(ex_stream) as ex_cap:
    preprocess[GRID, BLOCK, ex_stream](inp, work)
    infer_step[GRID, BLOCK, ex_stream](work, out)
    check(rt.cudaMemcpyAsync(ex_out.ctypes.data, ptr(out), ex_out.nbytes, D2H, ex_stream.handle),
          "cudaMemcpyAsync")
print(ex_cap.graph.node_kinds())

# %% tags=["check"]
from labkit.course.exercises.nb02 import check_request_graph
check_request_graph(ex_cap.graph, x_host, ex_out, ex_stream)

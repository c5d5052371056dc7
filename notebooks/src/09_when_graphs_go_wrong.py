# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 09 — When a graph goes wrong
#
# **Prerequisites:** notebooks [02](02_stream_capture.ipynb) (capture and its pitfalls),
# [05](05_graph_update.ipynb) (static buffers, who owns a graph's memory) and
# [07](07_capstone_decode.ipynb) (the decoder).
#
# **Learning goals**
#
# 1. Read a CUDA error during capture or replay and know its likely cause and fix (the decoder
#    ring).
# 2. Debug a graph with a method: run it eagerly first (one switch), compare every output buffer
#    of graph and eager, and bisect the captured region to the first stage that differs.
# 3. Keep what a graph references alive and valid at every launch: numba's deferred frees,
#    buffers freed under an executable, and what labkit keeps alive for you.
# 4. Let a graph own its memory: allocation and free nodes, AutoFreeOnLaunch, the footprint and
#    its trim, and why frameworks give their graphs a private pool.
# 5. Know which calls another thread may make while you capture, in each capture mode, and why
#    kernels are compiled and loaded before a capture.
#
# About 85 minutes, the exercise included. The full capture-mode matrix near the end is
# optional.

# %%
import gc
import threading

import labkit            # first: it chooses the backend before numba.cuda is imported
import numpy as np
import matplotlib.pyplot as plt
from labkit import rt, check
from labkit.course import decoder as dec
from labkit.course.workloads import add_one, scale, saxpy
from labkit.course.claims import nb09 as claims
from labkit.course.exercises import nb09 as ex09

print("backend :", labkit.backend, f"({labkit.backend_reason})")
print("device  :", labkit.device_name())

N, BLOCK = 1024, 256
GRID = N // BLOCK
s, side = labkit.Stream(), labkit.Stream()
x = labkit.to_device(np.zeros(N, np.float32))
y = labkit.to_device(np.zeros(N, np.float32))


def first_line(e):
    """An error's first line: its call, CUDA's name and code, CUDA's words."""
    return str(e).splitlines()[0]

# %% [markdown]
# ## 1. The decoder ring: error → likely cause → fix
#
# When a capture or a replay fails, CUDA gives an error code and few words. labkit adds a hint to
# every `CudaError` it raises; the table below is made from those same hints
# (`labkit.decoder_ring()`), so the table and the messages you meet can never disagree.

# %%
labkit.decoder_ring([900, 901, 904, 905, 907, 908, 910, 1, 700])

# %% [markdown]
# [Notebook 02](02_stream_capture.ipynb) showed 900 and 901 at length (a synchronize, a host
# array, an allocation, an ignored error). Here each common row of the ring fails once, then runs
# with its fix. The fixes are one line each: that is the point of knowing the code.

# %%
def sync_inside():                    # 900: wait for work that is only recorded
    with labkit.capture(s):
        add_one[GRID, BLOCK, s](x)
        s.synchronize()

def sync_after():
    with labkit.capture(s) as cap:
        add_one[GRID, BLOCK, s](x)
    s.synchronize()                   # after the capture: nothing recorded is waited for
    return cap.graph

def unjoined():                       # 904: a side stream forked in, never joined back
    with labkit.capture(s):
        fork = labkit.Event()
        check(rt.cudaEventRecord(fork.handle, s.handle))
        check(rt.cudaStreamWaitEvent(side.handle, fork.handle, 0))
        add_one[GRID, BLOCK, side](y)

def joined():
    with labkit.capture(s) as cap:
        with labkit.fork(s, side):    # fork, and join back when the block ends
            add_one[GRID, BLOCK, side](y)
    return cap.graph

def outside_event():                  # 905: wait inside the capture on work outside it
    done = labkit.Event()
    add_one[GRID, BLOCK, side](y)
    check(rt.cudaEventRecord(done.handle, side.handle))
    with labkit.capture(s):
        check(rt.cudaStreamWaitEvent(s.handle, done.handle, 0))
        add_one[GRID, BLOCK, s](x)

def outside_synced():
    add_one[GRID, BLOCK, side](y)
    side.synchronize()                # finished before the capture begins: nothing to wait on
    with labkit.capture(s) as cap:
        add_one[GRID, BLOCK, s](x)
    return cap.graph

def query_captured():                 # 907: ask a captured event for a status it does not have
    e = labkit.Event()
    with labkit.capture(s):
        add_one[GRID, BLOCK, s](x)
        check(rt.cudaEventRecord(e.handle, s.handle))
        check(rt.cudaEventQuery(e.handle))

def query_after_launch():
    e = labkit.Event()
    with labkit.capture(s) as cap:
        add_one[GRID, BLOCK, s](x)
    ex = cap.graph.instantiate()
    ex.launch(s)
    check(rt.cudaEventRecord(e.handle, s.handle))   # recorded outside, after the launch
    s.synchronize()
    check(rt.cudaEventQuery(e.handle))              # complete now
    ex.close()
    return cap.graph


ring_rows = [(sync_inside, sync_after), (unjoined, joined), (outside_event, outside_synced),
             (query_captured, query_after_launch)]
for broken, fixed in ring_rows:
    try:
        broken()
        raise AssertionError(f"{broken.__name__} should have failed")
    except labkit.CudaError as e:
        code = e.code
        where_and_code, _, cuda_words = first_line(e).rpartition(": ")
        print(f"{broken.__name__:18} -> {where_and_code}\n{'':22}({cuda_words})")
    rt.cudaGetLastError()
    g = fixed()
    print(f"{fixed.__name__:18} -> a graph, no error (the fix for {code})")
    g.close()

# %% [markdown]
# The other rows have their own sections: 700 and 1 below (lifetimes, graph memory), 908 with
# threads, 910 in [notebook 05](05_graph_update.ipynb) ("A topology change makes the update
# fail").
#
# **Takeaway:** read the code first; the ring gives the likely cause and the one-line fix.

# %% [markdown]
# ## 2. A debugging method: eager first, compare, bisect
#
# A graph that raises is the easy case. The hard one runs without an error and computes
# something else. The method that works (NVIDIA's own advice for PyTorch graphs says the same):
#
# 1. **Run it eagerly first**, through the same code, with graphs switched off. labkit has one
#    switch: `LABKIT_GRAPHS=eager` in the environment (before you start Jupyter or Python), or
#    `with labkit.eager():` around a block. Then `labkit.captured(fn)` and `labkit.graphed`
#    call their function eagerly at every call, and `labkit.capture` records the labkit
#    launches of its block instead of capturing them (an executable made from it makes those
#    launches one by one; a block cannot run again, so a function is the better form to
#    compare). If the eager run is wrong too, the bug is not the graph's.
# 2. **Compare every output buffer** of the graph run with the eager run:
#    `labkit.compare_outputs(fn, stream, outputs, setup=...)` runs `fn(stream)` both ways from
#    the same starting data and tells you which buffers differ, and where.
# 3. **Bisect the captured region**: capture only its first half; if that half already differs,
#    the culprit is in it, otherwise in the second half. Repeat.
#
# The demo: a pipeline of six stages on four buffers. Stage 3 scales by a factor that grows at
# each call, read from a Python counter. Eagerly that is fine; in a graph the factor is frozen at
# its capture-time value (a node freezes its scalar arguments, notebook 02).

# %%
bufs = {name: labkit.device_array(N) for name in ("a", "b", "c", "out")}
counter = {"t": 0}
a0 = np.linspace(0, 1, N, dtype=np.float32)


def reset():
    for name, arr in bufs.items():
        arr.copy_to_device(a0 if name == "a" else np.zeros(N, np.float32))
    counter["t"] = 0


def stage1(st): saxpy[GRID, BLOCK, st](bufs["b"], np.float32(2.0), bufs["a"], bufs["b"])
def stage2(st): add_one[GRID, BLOCK, st](bufs["b"])
def stage3(st):
    counter["t"] += 1                 # host state: a graph sees it once, at capture
    scale[GRID, BLOCK, st](bufs["b"], np.float32(1.0 + 0.5 * counter["t"]))
def stage4(st): saxpy[GRID, BLOCK, st](bufs["c"], np.float32(-1.0), bufs["b"], bufs["a"])
def stage5(st): add_one[GRID, BLOCK, st](bufs["c"])
def stage6(st): saxpy[GRID, BLOCK, st](bufs["out"], np.float32(0.5), bufs["c"], bufs["a"])

stages = [stage1, stage2, stage3, stage4, stage5, stage6]


def pipeline(st, upto=len(stages)):
    for stage in stages[:upto]:
        stage(st)

# %% [markdown]
# First, eagerly through the same code. `labkit.captured(pipeline)` is the pipeline as a graph
# (captured at the first call, replayed at the next ones); inside `labkit.eager()` the very same
# object runs the pipeline eagerly. Three calls each, from the same start:

# %%
runs = {}
for mode in ("eager", "graph"):
    reset()
    step = labkit.captured(pipeline)
    with labkit.eager(mode == "eager"):
        for _ in range(3):
            step(s)
    s.synchronize()
    runs[mode] = bufs["out"].copy_to_host()
    step.close()
print("out[-1], eager:", runs["eager"][-1], "  graph:", runs["graph"][-1])

# %% [markdown]
# The two differ, and nothing raised. Now which buffers differ? `compare_outputs` runs both ways
# from `reset()` and compares each buffer:

# %%
outputs = {name: bufs[name] for name in ("b", "c", "out")}
report = labkit.compare_outputs(pipeline, s, outputs, setup=reset, calls=3)
print(report)

# %% [markdown]
# Every buffer from `b` on differs, so `out` alone would not have told us where. Bisect the
# stages: compare the graph of the first `k` stages with the same `k` stages run eagerly.

# %% tags=["key-figure"]
def first_bad_stage(n_stages):
    lo, hi = 0, n_stages              # the first `lo` stages agree; all `hi` stages do not
    tried = []
    while hi - lo > 1:
        mid = (lo + hi) // 2
        ok = labkit.compare_outputs(lambda st: pipeline(st, mid), s, outputs,
                                    setup=reset, calls=3).ok
        tried.append((mid, ok))
        lo, hi = (mid, hi) if ok else (lo, mid)
    return hi, tried


bad, tried = first_bad_stage(len(stages))
for k, ok in tried:
    print(f"first {k} stages: graph {'==' if ok else '!='} eager")
print(f"-> the first stage that differs is stage {bad}: {stages[bad - 1].__name__}")
assert stages[bad - 1] is stage3

fig, ax = plt.subplots(figsize=(7, 2.2))
ax.barh([f"try {i + 1}: first {k}" for i, (k, _) in enumerate(tried)], [k for k, _ in tried],
        color=["tab:green" if ok else "tab:red" for _, ok in tried])
ax.axvline(bad - 0.5, color="k", ls="--", lw=1, label=f"stage {bad} begins the difference")
ax.legend(loc="lower right", fontsize=8)
ax.set_xlim(0, len(stages))
ax.set_xlabel("stages captured (green: graph equals eager, red: differs)")
ax.set_title(f"bisecting {len(stages)} stages: {len(tried)} comparisons find stage {bad}")
ax.invert_yaxis()
plt.tight_layout()
plt.show()

# %% [markdown]
# A few comparisons for six stages; a graph of a thousand kernels needs about ten. The fix for
# this one is the decoder's (notebook 07): keep the counter on the device and let a kernel
# advance it, or update the node's argument before each launch (notebook 05).
#
# **Takeaway:** eager first (one switch), then compare every output buffer, then bisect.

# %% [markdown]
# ## 3. Stale inputs and overwritten outputs
#
# [Notebook 05](05_graph_update.ipynb) ("New data, same graph: static buffers" and "Who owns the
# memory a graph uses") showed the first classic: a name rebound to a new array, while the graph
# still reads the array it was captured with. Copy new data *into* the captured buffer instead. The
# eager switch finds this bug, because eager code looks the name up again at each call:

# %%
inp = labkit.to_device(np.ones(N, np.float32))
res = labkit.device_array(N)
double = labkit.captured(lambda st: saxpy[GRID, BLOCK, st](res, np.float32(2.0), inp, inp))
for mode in ("eager", "graph"):
    with labkit.eager(mode == "eager"):
        inp = labkit.to_device(np.ones(N, np.float32))       # request 1
        double(s)
        inp = labkit.to_device(np.full(N, 5.0, np.float32))  # request 2: a NEW buffer (the bug)
        double(s)
        s.synchronize()
        print(f"{mode:5}: request 2 gives {res.copy_to_host()[0]:4.1f}  (2×5 + 5 = 15 expected)")
double.close()

# %% [markdown]
# The other half: an **output overwritten by the next replay**. A replay writes into the same
# output buffer every time. Keep a result by copying it out (to the host, or into a buffer of
# your own) before the next launch; a reference to the buffer is not a copy. (`labkit.graphed`'s
# static outputs behave the same: [notebook 10](10_frameworks_and_tools.ipynb).)

# %%
inp.copy_to_device(np.ones(N, np.float32))
double = labkit.captured(lambda st: saxpy[GRID, BLOCK, st](res, np.float32(2.0), inp, inp))
double(s)
kept_ref = res                        # a reference: the same device buffer
s.synchronize()
kept_copy = res.copy_to_host()        # a copy
inp.copy_to_device(np.full(N, 5.0, np.float32))
double(s)
s.synchronize()
print("first result, by reference:", kept_ref.copy_to_host()[0], "  by copy:", kept_copy[0])
double.close()

# %% [markdown]
# **Takeaway:** copy inputs in and outputs out; a graph's buffers are reused at every replay.

# %% [markdown]
# ## 4. Lifetimes: keep what a graph references alive
#
# A node holds addresses, not arrays. CUDA's rule: the memory at those addresses must be valid
# whenever a launch that uses it runs, as for any kernel. Between launches you may free a buffer,
# if before the next launch you point the node at a valid one (a node update, notebook 05). The
# safe practice, and labkit's: keep every buffer an executable refers to until it is destroyed.
#
# **What labkit keeps alive for you.** The arguments of every labkit kernel launched inside a
# capture: the graph and its executables hold them. Deleting your last name for an array does
# not free it while an executable can still use it:

# %%
tmp = labkit.to_device(np.zeros(N, np.float32))
with labkit.capture(s) as cap:
    add_one[GRID, BLOCK, s](tmp)
keeper = cap.graph.instantiate()
address = tmp.device_ctypes_pointer.value
del tmp
gc.collect()
keeper.launch(s)
keeper.launch(s)
s.synchronize()
back = np.empty(N, np.float32)
check(rt.cudaMemcpy(back.ctypes.data, address, back.nbytes,
                    rt.cudaMemcpyKind.cudaMemcpyDeviceToHost))
print("the array with no name left, after two replays:", back[:3])
keeper.close()
cap.graph.close()

# %% [markdown]
# **What labkit cannot keep alive:** memory it never sees as an array. A raw pointer from
# `cudaMalloc`, the addresses in a raw `cudaMemcpyAsync`, memory another library owns, and
# anything you free yourself. Below, a buffer from `cudaMalloc` is wrapped as an array
# (`ex09.raw_array`), captured, and freed while the executable still uses it. On the simulator
# the replay faults with CUDA's code for it, `cudaErrorIllegalAddress` (700).
#
# **When 700 arrives, and what it leaves.** A launch only queues work, so `launch` itself
# returns success: the fault happens later, when the kernel runs, and comes back from the next
# call that waits for the GPU (here `synchronize`). It is *sticky*: the process's CUDA context
# is lost, and every call after it returns 700 too, even a `cudaMalloc`. There is no way back
# on a GPU but to restart the process (in Jupyter, restart the kernel). The simulator does the
# same, and offers what a GPU has not, `labkit.reset_after_fault()`, so this notebook can go on.
# On a GPU the same mistake either faults so, or silently reads and writes whatever now lives
# there: so on a GPU this cell only prints the error.

# %%
if labkit.backend == "sim":
    p = check(rt.cudaMalloc(N * 4), "cudaMalloc")
    raw = ex09.raw_array(p, N, np.float32)
    with labkit.capture(s) as cap:
        add_one[GRID, BLOCK, s](raw)
    freed_exec = cap.graph.instantiate()
    check(rt.cudaFree(p), "cudaFree")             # the executable still writes there
    freed_exec.launch(s)                          # queued: the launch call succeeds
    print("the launch returned: no error yet")
    try:
        s.synchronize()                           # the fault comes back from the wait
    except labkit.CudaError as e:
        code_freed = e.code
        print(first_line(e))
    print("a cudaMalloc after it:", rt.cudaMalloc(16)[0].name, "(sticky)")
    assert code_freed == 700
    labkit.reset_after_fault()                    # the simulator only: a GPU restarts instead
    freed_exec.close()
    cap.graph.close()
else:
    print(labkit.CudaError(700, "cudaStreamSynchronize"))

# **numba's deferred frees.** [Notebook 02](02_stream_capture.ipynb) (pitfall 6) told the story:
# numba frees a collected array later, at a moment of its choosing, and if that moment falls
# inside your capture the `cuMemFree` is refused and the capture is lost. Underneath is one CUDA
# rule, shown here with the runtime itself: a free inside a global-mode capture is refused (900)
# and invalidates it.

# %%
p = check(rt.cudaMalloc(4096), "cudaMalloc")
try:
    with labkit.capture(s):
        add_one[GRID, BLOCK, s](x)
        check(rt.cudaFree(p), "cudaFree inside the capture")
except labkit.CudaError as e:
    print(first_line(e).rpartition(": ")[0])
    assert e.code == 900
rt.cudaGetLastError()
with labkit.capture(s) as cap:                    # the fix: free outside the capture
    add_one[GRID, BLOCK, s](x)
check(rt.cudaFree(p), "cudaFree after the capture")
print("freed after the capture: a graph of", len(cap.graph), "node")
cap.graph.close()

# %% [markdown]
# In plain numba code (no labkit) the free is one you never wrote, so the fix is numba's own
# `cuda.defer_cleanup()` around the capture, which holds every free until the block ends:
#
# ```python
# from numba import cuda
# stream = cuda.stream()
# with cuda.defer_cleanup():                  # numba frees nothing inside this block
#     rt.cudaStreamBeginCapture(stream.handle.value, GLOBAL)
#     my_kernel[grid, block, stream](d_x)
#     err, graph = rt.cudaStreamEndCapture(stream.handle.value)
# ```
#
# `labkit.capture` does exactly this for you. On a GPU the next cell makes numba's free fall
# inside a plain capture (a dozen collected arrays: numba empties its queue once more than ten
# frees are pending), then holds it with `cuda.defer_cleanup()`. The simulator frees collected
# memory through its own allocator, never by a runtime call inside a capture, so it has nothing
# to show here.

# %%
if labkit.backend == "cuda":
    import contextlib
    from numba import cuda

    def plain_numba_capture(hold):
        ns = cuda.stream()
        h = ns.handle.value
        d = cuda.to_device(np.zeros(N, np.float32))
        add_one.dispatcher[GRID, BLOCK, ns](d)                 # warm: compiled, loaded
        ns.synchronize()
        garbage = [cuda.device_array(16) for _ in range(12)]  # to be collected mid-capture
        ctx = cuda.defer_cleanup() if hold else contextlib.nullcontext()
        with ctx:
            check(rt.cudaStreamBeginCapture(
                h, rt.cudaStreamCaptureMode.cudaStreamCaptureModeGlobal))
            add_one.dispatcher[GRID, BLOCK, ns](d)
            del garbage[:]                                     # numba queues 12 frees...
            gc.collect()
            add_one.dispatcher[GRID, BLOCK, ns](d)
            err, graph = rt.cudaStreamEndCapture(h)
        rt.cudaGetLastError()
        if int(err) == 0:
            rt.cudaGraphDestroy(graph)
        return err

    for hold in (False, True):
        try:
            print(f"{'with' if hold else 'without'} cuda.defer_cleanup(): the capture ends with",
                  plain_numba_capture(hold).name)
        except Exception as e:          # numba's own error, if its free raises here
            rt.cudaGetLastError()
            print(f"{'with' if hold else 'without'} cuda.defer_cleanup():", type(e).__name__, e)
else:
    print("(shown on a GPU only: the simulator has no deferred frees)")

# %% [markdown]
# **Takeaway:** a graph owns nothing it did not allocate. Its buffers must be valid while a
# launch runs; keep them until the executables that use them are destroyed (the safe practice),
# and free nothing while a capture is open.

# %% [markdown]
# ## 5. The graph owns its memory: allocation and free nodes
#
# There is one kind of memory a graph does own: memory it allocates itself. Inside a capture,
# `cudaMallocAsync` on the capturing stream is not refused (global mode or not): it becomes an
# **allocation node**, and `cudaFreeAsync` a **free node**. Each launch allocates anew, in
# stream order, and the free node gives it back; the address is fixed when the node is made, so
# every launch uses the same one (NVIDIA's graphMemoryNodes sample).

# %%
NB = N * 4
host_result = labkit.pinned_array(N)
H2D, D2H = rt.cudaMemcpyKind.cudaMemcpyHostToDevice, rt.cudaMemcpyKind.cudaMemcpyDeviceToHost
AUTO_FREE = rt.cudaGraphInstantiateFlags.cudaGraphInstantiateFlagAutoFreeOnLaunch


def capture_scratch(free_it):
    """A graph that allocates a scratch buffer, copies x into it and from it to the host,
    and (if free_it) frees it."""
    with labkit.capture(s) as cap:
        d = check(rt.cudaMallocAsync(NB, s.handle), "cudaMallocAsync in the capture")
        check(rt.cudaMemcpyAsync(d, x.device_ctypes_pointer.value, NB,
                                 rt.cudaMemcpyKind.cudaMemcpyDeviceToDevice, s.handle))
        check(rt.cudaMemcpyAsync(host_result.ctypes.data, d, NB, D2H, s.handle))
        if free_it:
            check(rt.cudaFreeAsync(d, s.handle), "cudaFreeAsync in the capture")
    return cap.graph, d


x.copy_to_device(np.full(N, 3.0, np.float32))
g_free, _ = capture_scratch(free_it=True)
print("nodes:", g_free.node_kinds())
ex_free = g_free.instantiate()
for _ in range(3):
    ex_free.launch(s)
s.synchronize()
print("three launches, each allocating and freeing:", host_result[:2])
ex_free.close()
g_free.close()

# %% [markdown]
# **Without the free node**, the allocation outlives the launch: the memory is the caller's to
# free (by `cudaFreeAsync`, `cudaFree` or another graph's free node). Launching again while it
# is live is refused with `cudaErrorInvalidValue` (1). An executable instantiated with
# `cudaGraphInstantiateFlagAutoFreeOnLaunch` frees it itself at the next launch instead.

# %%
g_keep, d_keep = capture_scratch(free_it=False)
ex_keep = g_keep.instantiate()
ex_keep.launch(s)
try:
    ex_keep.launch(s)
except labkit.CudaError as e:
    code_relaunch = e.code
    print("relaunch, allocation live:", first_line(e))
rt.cudaGetLastError()
assert code_relaunch == 1
s.synchronize()
check(rt.cudaFree(d_keep), "cudaFree of the graph's allocation")
ex_keep.close()

ex_auto = g_keep.instantiate(flags=AUTO_FREE)
for _ in range(3):
    ex_auto.launch(s)
s.synchronize()
print("with AutoFreeOnLaunch, three launches:", host_result[:2])

# %% [markdown]
# **The footprint.** `cudaDeviceGetGraphMemAttribute` reports the memory in use by graph
# allocations (`UsedMemCurrent`) and the memory CUDA holds for them (`ReservedMemCurrent`).
# Freeing makes memory unused but keeps it reserved for the next launch; `cudaDeviceGraphMemTrim`
# gives back what no graph uses. (A GPU reserves in larger pieces than it allocates, so there the
# figures are at least the allocation.)

# %%
ATTR = rt.cudaGraphMemAttributeType


def footprint():
    return {key: int(check(rt.cudaDeviceGetGraphMemAttribute(0, a)))
            for key, a in (("used", ATTR.cudaGraphMemAttrUsedMemCurrent),
                           ("reserved", ATTR.cudaGraphMemAttrReservedMemCurrent))}


snapshots = {"live after the launches": footprint()}
check(rt.cudaFreeAsync(d_keep, s.handle), "cudaFreeAsync of the last launch's allocation")
s.synchronize()
snapshots["after the free"] = footprint()
check(rt.cudaDeviceGraphMemTrim(0), "cudaDeviceGraphMemTrim")
snapshots["after the trim"] = footprint()
for when, f in snapshots.items():
    print(f"{when:25} used {f['used']:7} B   reserved {f['reserved']:7} B")

fig, ax = plt.subplots(figsize=(7, 2.6))
pos = np.arange(len(snapshots))
ax.bar(pos - 0.2, [f["used"] / 1024 for f in snapshots.values()], 0.4, label="used")
ax.bar(pos + 0.2, [f["reserved"] / 1024 for f in snapshots.values()], 0.4, label="reserved")
ax.set_xticks(pos, list(snapshots))
ax.set_ylabel("KiB of graph memory")
ax.set_title("the graph-memory footprint (cudaDeviceGetGraphMemAttribute)")
ax.legend()
plt.tight_layout()
plt.show()
claims.footprint_holds_the_allocation(snapshots["after the free"]["used"],
                                      snapshots["live after the launches"]["used"], NB)
claims.trim_gives_back_what_is_unused(snapshots["after the free"]["reserved"],
                                      snapshots["after the trim"]["reserved"])
ex_auto.close()
g_keep.close()

# %% [markdown]
# **Why frameworks use a private pool instead.** Graph memory nodes need the allocation inside
# the capture and a free in a graph or by hand; a graph with memory nodes has one executable at
# a time and cannot be cloned. PyTorch does it differently: while it captures, its caching
# allocator serves the model's allocations from a **private memory pool** kept for that graph,
# so the addresses the graph baked in stay reserved for it between replays. The pool still grows
# during the capture: when it has no free block, the allocator calls `cudaMalloc`, switching the
# capturing thread to relaxed mode for that call so that global mode does not refuse it
# (`cudaMallocMaybeCapturing` in PyTorch's `CUDACachingAllocator.cpp`). That `cudaMalloc` is not
# captured: it runs once, during the capture, and the replays reuse its memory. Several graphs captured one after another can
# share one pool (`torch.cuda.graph(pool=...)`), which is how vLLM keeps one graph per batch size
# without one copy of the scratch memory per graph. `labkit.graphed` keeps its own buffers the
# same way ([notebook 10](10_frameworks_and_tools.ipynb)).
#
# **Takeaway:** memory allocated in the capture belongs to the graph: free it in the graph (or
# instantiate with AutoFreeOnLaunch), and watch the footprint.

# %% [markdown]
# ## 6. Threads and capture modes
#
# A capture's **mode** decides who may make potentially unsafe calls (an allocation, a free,
# a synchronizing call) while it is open. In **global** mode, the default, *no thread* of the
# process may: a `cudaMalloc` from another thread (a data loader, a logger, a library's helper
# thread) is refused and invalidates your capture. **Thread-local** mode refuses them only to
# the capturing thread; **relaxed** mode refuses them to no one (and captures none of them).

# %%
def another_thread_allocates(mode):
    seen = {}

    def other():
        err, p = rt.cudaMalloc(4096)
        seen["malloc"] = err.name
        if int(err) == 0:
            rt.cudaFree(p)

    try:
        with labkit.capture(s, mode=mode) as cap:
            add_one[GRID, BLOCK, s](x)
            t = threading.Thread(target=other)
            t.start()
            t.join()
        outcome = f"capture ok, {len(cap.graph)} node"
        cap.graph.close()
    except labkit.CudaError as e:
        outcome = f"capture lost: {e.name} ({e.code})"
    rt.cudaGetLastError()
    return seen["malloc"], outcome


modes = {}
for mode in ("global", "thread_local", "relaxed"):
    modes[mode] = another_thread_allocates(mode)
    print(f"{mode:12}: the other thread's cudaMalloc -> {modes[mode][0]}\n"
          f"{'':14}then {modes[mode][1]}")
assert modes["global"][0] == "cudaErrorStreamCaptureUnsupported"
assert modes["thread_local"][0] == modes["relaxed"][0] == "cudaSuccess"

# %% [markdown]
# Capture in thread-local mode when other threads of your process allocate while you capture
# (`labkit.capture(s, mode="thread_local")`). A library that must allocate *inside* your capture
# can exchange its own thread's mode to relaxed (`cudaThreadExchangeStreamCaptureMode`). And a
# global or thread-local capture must be ended by the thread that began it, or the end fails
# with 908 (`cudaErrorStreamCaptureWrongThread`).
#
# **Takeaway:** in global mode, every thread of your process is inside your capture's rules.

# %% [markdown]
# ### Optional: the full capture-mode matrix
#
# Skip this on a first reading. It answers "which call is refused, in which mode, from which
# thread" once and for all. Whether a potentially unsafe call is refused depends on two modes:
#
# * the **capture's mode**, the second argument of `cudaStreamBeginCapture`: global,
#   thread-local or relaxed;
# * the **calling thread's own mode**, global for every thread until it calls
#   `cudaThreadExchangeStreamCaptureMode(mode)`, which sets it and returns the previous one.
#
# `labkit.course.capture_modes` runs one *cell* at a time: begin a capture on a non-blocking
# stream in a mode, launch one kernel into it, make one call, then look at the capture and end
# it. The call comes from the capturing thread or from another thread, each either in its
# default (global) mode or after exchanging its own mode to relaxed. The cells below run now, on
# this backend (one per square of the figure, in about a second); on a real GPU every cell gives
# the code the simulator gives.

# %%
from labkit.course import capture_modes

MATRIX_CALLS = ["cudaMalloc", "cudaStreamSynchronize(other)", "cudaEventQuery(outside)",
                "cudaStreamSynchronize(capturing)", "cudaEventQuery(captured)",
                "cudaDeviceSynchronize", "cudaMallocAsync(capturing)",
                "cudaFreeAsync(capturing)", "cudaMemcpy", "cudaStreamCreate",
                "cudaStreamEndCapture"]
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
#   (907), and `cudaDeviceSynchronize` (900). The work they would wait for is only recorded and
#   will not run before a launch.
# * **Always allowed**: `cudaMallocAsync` on the capturing stream is *captured* (an allocation
#   node, section 5); a synchronous `cudaMemcpy` on the legacy stream (while a non-blocking
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
    print(f"{mode:12}: cudaMalloc allowed from",
          ", ".join(where for where in WHERES if allowed("cudaMalloc", mode, where)))
assert [allowed("cudaMalloc", m, "capturing") for m in MODES] == [False, False, True]
assert [allowed("cudaMalloc", m, "other") for m in MODES] == [False, True, True]
assert all(allowed("cudaMalloc", m, w) for m in MODES
           for w in ("capturing_relaxed", "other_relaxed"))
assert not any(allowed(c, m, w) for m in MODES for w in WHERES
               for c in ("cudaStreamSynchronize(capturing)", "cudaEventQuery(captured)",
                         "cudaDeviceSynchronize"))
assert all(allowed("cudaMallocAsync(capturing)", m, w) for m in MODES for w in WHERES)
assert [cell["cudaStreamEndCapture", m, "other"]["rc"] for m in MODES] == [
    "cudaErrorStreamCaptureWrongThread", "cudaErrorStreamCaptureWrongThread", "cudaSuccess"]
assert matrix["exchange"]["new thread sets relaxed, gets"] == "cudaStreamCaptureModeGlobal"
print("the live matrix shows every rule above")

# %% [markdown]
# ## 7. Kernels compiled or loaded inside a capture
#
# numba compiles a kernel at its first launch, and the driver loads its module then (lazy loading,
# the default on Linux since CUDA 12.2). [Notebook 02](02_stream_capture.ipynb) ("Why warm up
# first") timed that first launch. Inside a capture it costs you twice: the compilation's time lands
# in the capture, and some of the work around it may be a call the capture refuses. Drivers older
# than CUDA 12.3 could not load a module while a stream captured at all, so a kernel's first launch
# inside a capture failed; libraries worked around it by loading every module before capturing
# (NVIDIA Warp still does on such drivers:
# `warp.config.enable_graph_capture_module_load_by_default`). Newer drivers load it during the
# capture. The rule that works everywhere: **run every kernel once, eagerly, before you capture**
# (the decoder's `capture_step` does: one eager step first).
#
# ## Summary
#
# * The decoder ring (`labkit.decoder_ring()`): the code names the cause; 900/901 a refused call
#   during capture, 904/905 a fork not joined or a dependency outside the capture, 907 a captured
#   event queried for its status, 908 the wrong thread, 910 a topology change, 1 a relaunch with
#   a live graph allocation, 700 a replay into freed memory.
# * Method: eager first (`LABKIT_GRAPHS=eager` or `labkit.eager()`), then
#   `labkit.compare_outputs` for every output buffer, then bisect the captured region.
# * Copy inputs into the captured buffers and copy outputs out before the next replay.
# * A graph's buffers must be valid while a launch that uses them runs. labkit keeps the
#   arguments of its kernels alive with the graph; raw pointers, memory you free and other
#   libraries' memory are yours to keep alive, safest until every executable using them is
#   gone. Free nothing inside a capture (numba: `cuda.defer_cleanup()`).
# * `cudaMallocAsync`/`cudaFreeAsync` in a capture make allocation and free nodes; a live
#   allocation blocks a relaunch unless AutoFreeOnLaunch; watch the footprint and trim it.
# * In global mode, other threads must not allocate while you capture: use thread-local mode.
# * Warm up every kernel before capturing.
#
# ## Exercise: fix a broken decode
#
# `decode` below captures one step of the capstone's decoder with `labkit.captured`
# (`step.capture(stream)` captures it without launching it) and replays it once per token, from
# the prompt token. It has three bugs, each a mistake from this notebook. Find them with the
# method: run the check and read the error; run it again inside `with labkit.eager():` (the
# graph switched off) and compare with the graph run and with `dec.reference_generate`. Fix
# the bugs in the cell, one at a time. The check runs your `decode` on a fresh model and
# compares its tokens with numpy's. `ex09.start(m, token)` copies a token and position 0 into
# the model's buffers; `m.state` holds the buffers the step reads and writes.

# %% tags=["starter"]
stream = labkit.Stream()


def decode(m, prompt_token, n_tokens, stream):
    scratch = check(rt.cudaMalloc(m.cfg.vocab * 8), "cudaMalloc")      # the logits' buffer
    m.state["logits"] = ex09.raw_array(scratch, m.cfg.vocab)
    ex09.start(m, 0)                          # warm up: every kernel compiled and loaded
    dec.step(m, stream)
    stream.synchronize()

    def one_token(st):
        dec.step(m, st)
        st.synchronize()                      # wait for the token
    step = labkit.captured(one_token)
    step.capture(stream)                      # capture once, before decoding
    check(rt.cudaFree(scratch), "cudaFree")   # the graph is built: done with the scratch
    m.state["tok"] = labkit.to_device(np.array([prompt_token], np.int32))   # the prompt
    m.state["pos"] = labkit.to_device(np.zeros(1, np.int32))                # position 0
    for _ in range(n_tokens):
        step(stream)
    stream.synchronize()
    tokens = m.state["history"].copy_to_host()[:n_tokens]
    step.close()
    return tokens

# %% tags=["solution"]
stream = labkit.Stream()


def decode(m, prompt_token, n_tokens, stream):
    scratch = check(rt.cudaMalloc(m.cfg.vocab * 8), "cudaMalloc")      # the logits' buffer
    m.state["logits"] = ex09.raw_array(scratch, m.cfg.vocab)
    ex09.start(m, 0)                          # warm up: every kernel compiled and loaded
    dec.step(m, stream)
    stream.synchronize()

    def one_token(st):
        dec.step(m, st)                       # bug 3 fixed: no synchronize inside the capture
    step = labkit.captured(one_token)
    step.capture(stream)                      # capture once, before decoding
    ex09.start(m, prompt_token)               # bug 1 fixed: copy INTO the captured buffers
    for _ in range(n_tokens):
        step(stream)
    stream.synchronize()
    tokens = m.state["history"].copy_to_host()[:n_tokens]
    step.close()
    check(rt.cudaFree(scratch), "cudaFree")   # bug 2 fixed: free after the executable is gone
    return tokens

# %% tags=["check"]
tokens = ex09.check_decode(decode, stream)
print("your decode's tokens equal numpy's:", tokens)

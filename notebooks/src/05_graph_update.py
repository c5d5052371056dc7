# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 05 — Dynamic input: new data, changed graphs, shapes that vary
#
# A graph is frozen at capture: its kernels, their launch shapes and their arguments, including
# the *address* of every buffer. Inference is not frozen: every request brings new data, some
# steps alternate between buffers, a step's work changes now and then, and the batch size changes
# from one request to the next. This notebook shows the tool for each case and measures what it
# costs.
#
# **Prerequisites:** notebooks 02 (stream capture) and 03 (instantiate, launch, the cost of each
# phase).
#
# **Learning goals**
#
# 1. Run a captured graph on new data through its static buffers: copy in, replay, copy out.
# 2. Know why rebinding a Python name does not change what a graph reads, and who keeps the
#    memory a graph uses alive.
# 3. Point one kernel node at other buffers (`cudaGraphExecKernelNodeSetParams`), update a whole
#    executable from a new capture (`cudaGraphExecUpdate`), and recognise a failed update (a
#    topology change, error 910).
# 4. Compare the cost of node update, exec update, re-instantiate and re-capture against graph
#    size, and use llama.cpp's warm-up rule for a step that keeps changing (`UpdatingGraph`).
# 5. Serve varying batch sizes with `labkit.GraphCache`, one graph per shape or padded buckets,
#    and choose buckets that serve every batch the service accepts.
#
# About 105 minutes.

# %%
import labkit            # first: it chooses the backend before numba.cuda is imported
import numpy as np
from labkit import rt, check, timing, plot
from labkit.course import workloads, reference
from labkit.course.workloads import add_one, saxpy
from labkit.course.claims import nb05 as claims

print("backend :", labkit.backend, f"({labkit.backend_reason})")
print("device  :", labkit.device_name())
print("figures :", labkit.provenance())

import gc
import itertools
import weakref

import matplotlib.pyplot as plt
from labkit.cache import UpdatingGraph
from labkit.course.exercises import nb05 as ex05

# Every size and repeat count of this notebook, in one place. The simulator is slower per launch
# in real time, so it serves fewer requests; the shapes of the results are the same.
SZ = workloads.sizes()
REPEAT, WARMUP = SZ["repeat"], SZ["warmup"]
GRAPH_SIZES = [1, 10, 100, 1000]          # nodes, for the cost of each update strategy
N_REQUESTS = SZ["requests"]               # requests in the served stream (section 8)

N, GRID, BLOCK = 1024, 4, 256
H2D = rt.cudaMemcpyKind.cudaMemcpyHostToDevice
D2H = rt.cudaMemcpyKind.cudaMemcpyDeviceToHost
s = labkit.Stream()

def ptr(a):
    """The device address of a device array, for raw runtime calls."""
    return a.device_ctypes_pointer.value


# %% [markdown]
# ## 1. New data, same graph: static buffers
#
# A kernel node holds the addresses of its arrays, not their contents. To run a graph on new data,
# write the data into the array the graph was captured with, replay, and read the answer from the
# array it writes: **copy in, replay, copy out**. The arrays never move ("static buffers"); only
# what is in them changes. PyTorch's `torch.cuda.graphs` and vLLM serve requests this way.
#
# ```
#   host request ──copy in──▶ [ inp ] ──▶ saxpy ──▶ add_one ──▶ [ out ] ──copy out──▶ host answer
#                              fixed address, captured                fixed address, captured
# ```
#
# Our model is two kernels: `out = 2·inp + bias`, then `out += 1`. Each request goes through the
# graph and, for comparison, through the same kernels launched eagerly, and both are checked
# against numpy.

# %%
bias_h = np.linspace(0, 1, N, dtype=np.float32)
inp, out, bias = labkit.device_array(N), labkit.device_array(N), labkit.to_device(bias_h)
h_in, h_out = labkit.pinned_array(N), labkit.pinned_array(N)   # page-locked staging buffers
NBYTES = h_in.nbytes

def model(st):
    saxpy[GRID, BLOCK, st](out, 2.0, inp, bias)     # out = 2·inp + bias
    add_one[GRID, BLOCK, st](out)                    # out += 1

def reference_out(req):
    return np.float32(2) * req + bias_h + np.float32(1)

model(s); s.synchronize()                            # warm-up (JIT) before capturing
with labkit.capture(s) as cap:
    model(s)
g_model = cap.graph
ex_model = g_model.instantiate(upload_stream=s)

def copy(dst, src, kind):
    check(rt.cudaMemcpyAsync(dst, src, NBYTES, kind, s.handle), "cudaMemcpyAsync")

rng = np.random.default_rng(5)
for i in range(3):
    req = rng.standard_normal(N).astype(np.float32)
    h_in[:] = req
    copy(ptr(inp), h_in.ctypes.data, H2D)            # copy in, to the captured input buffer
    ex_model.launch(s)                               # replay
    copy(h_out.ctypes.data, ptr(out), D2H)           # copy out, from the captured output buffer
    s.synchronize()
    from_graph = h_out.copy()
    model(s)                                         # the same request, eagerly
    copy(h_out.ctypes.data, ptr(out), D2H)
    s.synchronize()
    np.testing.assert_array_equal(from_graph, h_out)
    np.testing.assert_allclose(from_graph, reference_out(req), rtol=1e-6)
    print(f"request {i}: graph == eager == numpy   out[:3] = {from_graph[:3]}")

# %% [markdown]
# The copies can be captured too. Then the pinned host buffers are the graph's static buffers,
# and one launch serves a request: copy in, both kernels, copy out. Write the next request into
# `h_in` only after the previous launch has finished (the synchronize), or the copy node may
# read a half-written buffer.

# %%
with labkit.capture(s) as cap:
    copy(ptr(inp), h_in.ctypes.data, H2D)
    model(s)
    copy(h_out.ctypes.data, ptr(out), D2H)
g_io = cap.graph
ex_io = g_io.instantiate(upload_stream=s)
print("nodes:", g_io.node_kinds())

for i in range(3):
    req = rng.standard_normal(N).astype(np.float32)
    h_in[:] = req                   # the host buffer is the graph's input now
    ex_io.launch(s)
    s.synchronize()                 # before reading h_out, and before h_in is written again
    np.testing.assert_allclose(h_out, reference_out(req), rtol=1e-6)
print("3 requests, one graph launch each, all equal to numpy")

# %% [markdown]
# **Takeaway:** a graph reads and writes fixed addresses; new data goes *into* them.
#
# ## 2. Rebinding a name changes nothing
#
# The most common first bug with graphs. `inp = labkit.to_device(new)` makes a **new** buffer and
# points the Python name at it. Eager code looks the name up at every call, so it follows; the
# graph holds the old address, so it goes on reading the old buffer. Nothing fails: the answer
# is silently computed from old data.
#
# ```
#   before:   inp ──▶ buffer A ◀── graph's node reads here
#   after:    inp ──▶ buffer B       buffer A ◀── graph's node still reads here
# ```
#
# `captured` below keeps the buffer the graph was captured with, only so that we can show the fix.

# %%
first, second = np.full(N, 1.0, np.float32), np.full(N, 100.0, np.float32)
captured = inp                               # buffer A: the one g_model's nodes read
inp.copy_to_device(first)

inp = labkit.to_device(second)               # the bug: buffer B under the old name
ex_model.launch(s)
s.synchronize()
from_graph = out.copy_to_host()
model(s)                                     # eager code looks the name up at each call
s.synchronize()
from_eager = out.copy_to_host()
print("graph computed from the old buffer:", from_graph[:2], "  eager from the new one:", from_eager[:2])
np.testing.assert_allclose(from_graph, reference_out(first), rtol=1e-6)
np.testing.assert_allclose(from_eager, reference_out(second), rtol=1e-6)

captured.copy_to_device(second)              # the fix: new data into the captured buffer
ex_model.launch(s)
s.synchronize()
np.testing.assert_allclose(out.copy_to_host(), reference_out(second), rtol=1e-6)
print("after copying into the captured buffer, the graph computes from the new data")
inp = captured                               # the name and the graph agree again

# %% [markdown]
# **Takeaway:** to give a graph new data, copy into its buffers (section 1); to point it at other
# buffers, update it (sections 4 and 5). Never rebind and replay.
#
# ## 3. Who owns the memory a graph uses
#
# A graph stores addresses. It does not own the buffers behind them, and it does not know your
# Python names.
#
# **labkit keeps the arrays a capture used alive.** Every labkit kernel launched during a capture
# records its arguments; the `Graph` and every `GraphExec` made from it keep them (`keepalive`).
# Below, the only Python name for `tmp` disappears when the function returns, yet the buffer lives
# on as long as the graph does, and the replay writes into it. (That is also why buffer A of
# section 2 would have stayed alive without `captured`.)

# %%
def capture_on_temporary():
    tmp = labkit.to_device(np.full(N, 41, np.float32))    # named only inside this function
    with labkit.capture(s) as c:
        add_one[GRID, BLOCK, s](tmp)
    return c.graph, weakref.ref(tmp)

g_tmp, tmp_ref = capture_on_temporary()
ex_tmp = g_tmp.instantiate()
gc.collect()
print("is the buffer alive after the function returned?", tmp_ref() is not None)
ex_tmp.launch(s)
s.synchronize()
assert tmp_ref() is not None and np.all(tmp_ref().copy_to_host() == 42)
print("the replay wrote 42 into it; argument tuples kept by the graph:", len(g_tmp.keepalive),
      "and by the executable:", len(ex_tmp.keepalive))
ex_tmp.close(); g_tmp.close()

# %% [markdown]
# **Raw pointers are not tracked.** The copy nodes of `g_io` (section 1) were made from raw
# addresses (`h_in.ctypes.data`) through `rt.cudaMemcpyAsync`; labkit never saw the arrays, so
# nothing but your own name keeps `h_in` and `h_out` alive. The same holds for memory from
# `rt.cudaMalloc`.

# %%
kept = {id(arg) for args in g_io.keepalive for arg in args}
for name, arr in (("inp", inp), ("out", out), ("bias", bias), ("h_in", h_in), ("h_out", h_out)):
    print(f"{name:5} kept alive by g_io: {id(arr) in kept}")
assert id(inp) in kept and id(h_in) not in kept

# %% [markdown]
# **What goes wrong when a buffer is freed under a graph.** The graph goes on reading and writing
# the address. If the allocator has since given that memory to another array, a replay silently
# corrupts that array. If the address is no longer mapped, the kernel faults with
# `cudaErrorIllegalAddress` (700), a *sticky* error: the CUDA context is unusable from then on and
# the process has to be restarted. It comes back late, from the next call that waits for the GPU
# (a launch only queues the work). We do not try it here; labkit's message for that error says
# where to look:

# %%
print(labkit.CudaError(700, "cudaStreamSynchronize"))

# %% [markdown]
# **Takeaway:** CUDA's rule is that a buffer must be valid while a launch that uses it runs (or
# the node must be updated to another before the next launch, section 4). The safe practice: keep
# every buffer a graph uses alive until every executable that uses it is destroyed (labkit does
# this for kernel arguments, you do it for raw pointers), and destroy executables before freeing.
#
# ## 4. Point one kernel node at other buffers
#
# Some work alternates between two buffers: step *t* reads `a` and writes `b`, step *t+1* reads
# `b` and writes `a` (ping-pong, as a decode loop may do with its state). Two graphs, one per
# direction, would do; so does changing one node's arguments in the one executable:
# `GraphExec.set_kernel_args(index, kernel, grid, block, *args)` sets kernel node `index` (in
# capture order) with `cudaGraphExecKernelNodeSetParams`. The change applies to the next
# launches; launches already queued keep the old arguments, other nodes keep theirs, and the
# `Graph` it was instantiated from is not changed.
#
# The step here is `nxt = 0.5·cur + bias` (node 0), followed by a node that counts the steps
# (node 1), which we never touch.

# %%
a_h = np.ones(N, np.float32)
a, b = labkit.to_device(a_h), labkit.device_array(N)
steps = labkit.to_device(np.zeros(N, np.float32))

with labkit.capture(s) as cap:
    saxpy[GRID, BLOCK, s](b, 0.5, a, bias)      # node 0: b = 0.5·a + bias
    add_one[GRID, BLOCK, s](steps)              # node 1: steps += 1
g_pp = cap.graph
ex_pp = g_pp.instantiate(upload_stream=s)

want, src, dst = a_h.copy(), a, b
for t in range(6):
    ex_pp.set_kernel_args(0, saxpy, GRID, BLOCK, dst, 0.5, src, bias)   # node 0 only
    ex_pp.launch(s)
    want = np.float32(0.5) * want + bias_h
    src, dst = dst, src                          # the buffer just written is read next
s.synchronize()
np.testing.assert_allclose(src.copy_to_host(), want, rtol=1e-6)
assert np.all(steps.copy_to_host() == 6), "node 1 should have kept its arguments"
print("6 ping-pong steps == numpy; node 1 counted", int(steps.copy_to_host()[0]), "steps")

# %% [markdown]
# ## 5. Update a whole executable from a new capture, and when that fails
#
# When many nodes change (other buffers, other scalars, other grids), capture the work again and
# copy every node's parameters into the existing executable with `cudaGraphExecUpdate`
# (`GraphExec.update(graph)`), which skips instantiating. It succeeds when the new graph has the
# same **topology**: the same number of nodes, of the same kinds, with the same edges (the CUDA
# programming guide lists a few more rules, e.g. a kernel node may not move to another context).
#
# Here the model is captured again on other buffers, and the executable of section 1 is updated.

# %%
inp2 = labkit.to_device(rng.standard_normal(N).astype(np.float32))
out2 = labkit.device_array(N)

def model_on(st, x, y):                     # the same two kernels, on other buffers
    saxpy[GRID, BLOCK, st](y, 2.0, x, bias)
    add_one[GRID, BLOCK, st](y)

with labkit.capture(s) as cap:
    model_on(s, inp2, out2)
g_other = cap.graph
res = ex_model.update(g_other)
print(res)
assert res.ok
ex_model.launch(s)
s.synchronize()
np.testing.assert_allclose(out2.copy_to_host(), reference_out(inp2.copy_to_host()), rtol=1e-6)
print("the updated executable reads inp2 and writes out2; nothing was instantiated")

# %% [markdown]
# Add a third kernel and the new graph no longer matches the executable node for node. `update`
# then returns a failed `UpdateResult` holding CUDA's `cudaErrorGraphExecUpdateFailure` (910),
# rather than raising, and leaves the executable as it was: it still runs the two-kernel graph.
# The fallback is to instantiate the new graph.

# %%
with labkit.capture(s) as cap:
    model_on(s, inp2, out2)
    add_one[GRID, BLOCK, s](out2)           # a third kernel: one node more
g_three = cap.graph
res = ex_model.update(g_three)
print(res)
print(labkit.CudaError(res.code, "cudaGraphExecUpdate"))
assert not res.ok and res.code == 910

ex_model.launch(s)                          # the old executable still works
s.synchronize()
np.testing.assert_allclose(out2.copy_to_host(), reference_out(inp2.copy_to_host()), rtol=1e-6)
print("old executable after the failed update: still the two-kernel model")

ex_three = g_three.instantiate(upload_stream=s)
ex_three.launch(s)
s.synchronize()
np.testing.assert_allclose(out2.copy_to_host(), reference_out(inp2.copy_to_host()) + 1, rtol=1e-6)
print("new executable, instantiated: three kernels")

# %% [markdown]
# **Takeaway:** same topology, new parameters: update. New topology: instantiate. A failed update
# costs its call and breaks nothing.
#
# ## 6. What each strategy costs, against graph size
#
# Four ways to make an executable run with new parameters, from the narrowest to the widest:
#
# | strategy | changes | call |
# | --- | --- | --- |
# | node update | one kernel node's arguments | `GraphExec.kernel_node` handle (`cudaGraphExecKernelNodeSetParams`) |
# | exec update | every node's parameters, from a graph already captured | `GraphExec.update` (`cudaGraphExecUpdate`) |
# | re-instantiate | a new executable from a graph already captured | `Graph.instantiate` (`cudaGraphInstantiate`) |
# | re-capture + instantiate | everything, from the Python code | `labkit.capture` + `instantiate` |
#
# Each is timed alone (host time, µs) on chains of 1 to 1000 `add_one` nodes. The updates need a
# second graph of the same topology: the same chain, captured on another buffer. The node update
# goes through a handle, `h = ex.kernel_node(0, add_one, GRID, BLOCK, y5)`: it builds the node's
# parameter block once, and each `h(buffer)` rebinds the block's argument and makes the one driver
# call. `set_kernel_args` (section 4) is the easy form of the same call; it checks and packs the
# arguments afresh each time, which the line printed after the figure shows it costs.

# %% tags=["key-figure"]
x5, y5 = labkit.to_device(np.zeros(N, np.float32)), labkit.to_device(np.zeros(N, np.float32))
costs = {k: [] for k in ("node update", "exec update", "re-instantiate", "re-capture + instantiate")}
easy = []                                      # set_kernel_args, the easy form, per size

def chain_graph(n, buf):
    with labkit.capture(s) as cap:
        workloads.chain(n, buf, s, GRID, BLOCK)
    return cap.graph

for n in GRAPH_SIZES:
    g, g2 = chain_graph(n, x5), chain_graph(n, y5)
    ex = g.instantiate(upload_stream=s)
    assert ex.update(g2).ok and ex.update(g).ok
    targets = itertools.cycle([g2, g])
    rep = REPEAT if n < 1000 else max(3, REPEAT // 3)
    h = ex.kernel_node(0, add_one, GRID, BLOCK, y5)
    bufs = itertools.cycle([y5, x5])               # a real change at every call
    costs["node update"].append(timing.measure(lambda: h(next(bufs)), repeat=rep, warmup=WARMUP))
    easy.append(timing.measure(lambda: ex.set_kernel_args(0, add_one, GRID, BLOCK, next(bufs)),
                               repeat=rep, warmup=WARMUP))
    costs["exec update"].append(timing.measure(
        lambda: ex.update(next(targets)), repeat=rep, warmup=WARMUP))
    # each new executable is closed right after its timed call (after=, untimed): see below
    costs["re-instantiate"].append(timing.measure(
        g.instantiate, repeat=rep, warmup=WARMUP, after=lambda e: e.close()))

    def recapture(n=n):
        gg = chain_graph(n, x5)
        return gg.instantiate(), gg
    costs["re-capture + instantiate"].append(timing.measure(
        recapture, repeat=rep, warmup=1, after=lambda pair: [h.close() for h in pair]))
    for h in (ex, g, g2):
        h.close()

width = {k: max(14, len(k) + 3) for k in costs}                # one column per strategy
print(f"{'nodes':>5}" + "".join(f"{k:>{width[k]}}" for k in costs))
for i, n in enumerate(GRAPH_SIZES):
    print(f"{n:5d}" + "".join(f"{costs[k][i].median:{width[k] - 3}.1f} µs" for k in costs))
plot.phase_costs(GRAPH_SIZES, costs, title="Changing what an executable runs: four strategies")
plt.show()


# %%
# Which is cheaper, updating the executable or instantiating a new one? Printed, per size.
for i, n in enumerate(GRAPH_SIZES):
    eu, ri = costs["exec update"][i].median, costs["re-instantiate"][i].median
    cheaper = "exec update" if eu < ri else "re-instantiate"
    print(f"{n:5d} nodes: exec update {eu:8.1f} µs, re-instantiate {ri:8.1f} µs "
          f"-> {cheaper} cheaper by {max(eu, ri) / min(eu, ri):.1f}x")
nu = [st.median for st in costs["node update"]]
print(f"node update: {min(nu):.1f} to {max(nu):.1f} µs over {GRAPH_SIZES[0]} to {GRAPH_SIZES[-1]} nodes; "
      f"set_kernel_args (the easy form) {min(e.median for e in easy):.1f} to "
      f"{max(e.median for e in easy):.1f} µs")
big = {k: v[-1].median for k, v in costs.items()}
claims.reinstantiate_grows_with_nodes(costs["re-instantiate"][0].median, big["re-instantiate"])
claims.update_instantiate_recapture_in_order(big["exec update"], big["re-instantiate"],
                                             big["re-capture + instantiate"])

# %% [markdown]
# What to read from it:
#
# - **re-capture + instantiate** is the widest, and as the graph grows by far the most expensive:
#   from Python, capturing costs about as much as launching the same kernels eagerly (numba
#   prepares every launch, notebook 03), and then comes the instantiation.
# - **re-instantiate** grows with the graph: the driver builds the executable node by node.
#   Each new executable here is closed right after its timed call (`timing.measure(...,
#   after=...)`, untimed); on a GPU, instantiating grows dearer while many large executables are
#   alive, which a server that caches many of them pays.
# - **exec update** also grows with the graph (every node's parameters are compared and copied),
#   and at the largest size it stays well below re-instantiating; the printed lines say where it
#   stands at the small sizes. It needs a graph to update from, and capturing that graph costs
#   what the top curve shows minus the instantiation.
# - **node update** changes one node, so it does not grow with the graph: the flat bottom line.
#   `set_kernel_args` is in the printed line beside it: on a GPU it costs the host a little more,
#   since it packs the arguments afresh at each call (the simulator charges only the driver
#   call). For a graph of a few nodes an exec update costs about as little; from tens of nodes
#   on, the node update is the cheapest by a widening margin.
#
# **Takeaway:** when a few nodes of a large graph change, update those nodes; when many change,
# one exec update from a new capture replaces many node updates, but the capture costs about an
# eager run. Instantiate only when the topology changed.
#
# The figures measured on a real GPU, for comparison with yours:

# %%
reference.note("05")

# %% [markdown]
# ## 7. A step that keeps changing: llama.cpp's rule
#
# A decode loop's step is usually the same graph every time, but not always: a new prompt
# length, a cache that grew, a batch that changed. llama.cpp's CUDA backend decides per step,
# before capturing anything, by comparing the step's nodes (their operations, shapes and
# addresses) with the last step's. Its rule is a **warm-up**:
#
# - **the same as the last step**: replay the executable; if there is none yet, this is the
#   second step in a row with this graph, so capture it now (the warm-up is complete) and
#   instantiate it, or update the executable from it (`cudaGraphExecUpdate`), instantiating when
#   the update fails;
# - **changed** (and the very first step): run the step eagerly and capture nothing. A graph
#   that changes again at the next step would never be replayed, so its capture would be wasted.
#
# A capture costs about an eager run *plus* the update or the instantiation, so the warm-up
# spends it only on a step that has shown it repeats. Graphs are off altogether only on GPUs
# older than Volta or when `GGML_CUDA_DISABLE_GRAPHS` is set.
#
# The rule used to be different: llama.cpp captured every changed step at once, counted the
# changes in a row, and after 4 turned graphs off for good, even once the step was stable again
# (a prompt's changing steps could leave a long decode without graphs). The course keeps that
# first rule as `UpdatingGraph(max_changed=4)`, to measure it against the current one.
#
# `UpdatingGraph()` is the current rule. Each step calls `ug.run(record, key, stream)`:
# `record(stream)` submits the step's work (the same function eagerly and inside a capture), and
# `key` stands for what llama.cpp compares, here the number of kernels, since equal keys promise
# equal graphs. Below, a step of 8 or 9 kernels: stable, a change now and then, then a change at
# every step, then stable again.

# %%
K_STEP = 8                                       # kernels in one step
xu = labkit.to_device(np.zeros(N, np.float32))

def record(k):
    """One step of k add_one kernels on xu: the same code eagerly and inside a capture."""
    return lambda st: workloads.chain(k, xu, st, GRID, BLOCK)

pattern = [8, 8, 8, 9, 9, 8, 8] + [9, 8] * 4 + [9, 9, 9]
with UpdatingGraph() as ug:
    outcomes = [ug.run(record(k), k, s) for k in pattern]
    s.synchronize()
assert np.all(xu.copy_to_host() == sum(pattern)), "every step should run its own kernels"
for t, (k, o) in enumerate(zip(pattern, outcomes)):
    print(f"step {t:2d}: {k} kernels -> {o}")

# %% [markdown]
# Read the outcomes against the rule. The first step runs eagerly, the second captures, the
# third replays. Each change runs eagerly once and is captured at its first repeat (a new
# instantiation here, since 8 and 9 kernels are different topologies). While the step changes at
# every turn nothing is captured at all, and graphs come back at the first repeat.
#
# Does the rule pay, and what did the change of rule buy? Each sequence of 40 steps is served
# four ways: eagerly, with a capture at every change (no rule), with the first rule and with the
# current one. The time per step includes everything: captures, updates, instantiations,
# launches and the final wait. The last sequence is the case the new rule was written for: a
# burst of changing steps (a prompt being processed), then a long stable decode.

# %%
STEPS = 40
sequences = {
    "stable": [K_STEP] * STEPS,
    "changes now and then": ([K_STEP] * 10 + [K_STEP + 1] * 10) * (STEPS // 20),
    "changes every step": [K_STEP, K_STEP + 1] * (STEPS // 2),
    "a burst, then stable": [K_STEP, K_STEP + 1] * 4 + [K_STEP] * (STEPS - 8),
}
HOWS = {"eager": None, "re-capture every change": STEPS,
        "first rule (off after 4)": 4, "current rule (warm-up)": None}

def run_sequence(ks, how):
    """Serve one sequence of steps; returns µs per step."""
    t0 = labkit.host_us()
    if how == "eager":
        for k in ks:
            record(k)(s)
    else:
        with UpdatingGraph(max_changed=HOWS[how]) as upd:
            for k in ks:
                upd.run(record(k), k, s)
    s.synchronize()
    return (labkit.host_us() - t0) / len(ks)

per_step = {name: {how: timing.Stats([run_sequence(ks, how) for _ in range(3)], label=how)
                   for how in HOWS}
            for name, ks in sequences.items()}
width = max(len(h) for h in HOWS) + 2
print(f"{'µs per step':21s}" + "".join(f"{how:>{width}}" for how in HOWS))
for name, row in per_step.items():
    print(f"{name:21s}" + "".join(f"{st.median:{width}.1f}" for st in row.values()))

fig, axes = plt.subplots(1, 4, figsize=(17, 5.2), sharey=True)   # one time axis for all four
for ax, (name, row) in zip(axes, per_step.items()):
    plot.bars(row, ax=ax, ylabel="time per step (µs)", title=name, provenance="")
    ax.tick_params(axis="x", labelrotation=30)
fig.suptitle(f"A step of {K_STEP} or {K_STEP + 1} kernels, {STEPS} steps, served four ways\n"
             f"{labkit.provenance()}", y=1.06)
plt.show()
every, burst = per_step["changes every step"], per_step["a burst, then stable"]
claims.graph_wins_on_a_stable_step(per_step["stable"]["current rule (warm-up)"].median,
                                   per_step["stable"]["eager"].median)
claims.rule_beats_recapturing_every_step(every["current rule (warm-up)"].median,
                                         every["re-capture every change"].median,
                                         every["eager"].median)
claims.warm_up_recovers_after_a_burst(burst["current rule (warm-up)"].median,
                                      burst["first rule (off after 4)"].median)

# %% [markdown]
# Read the four panels on their shared axis. A stable step is the graph's home ground: one
# eager warm-up step, one capture, then replays, far below eager. A change now and then costs
# one eager step and one capture per change: a little above the stable case, still far below
# eager. A step that changes every time is where capturing stops paying: re-capturing every
# change costs more than not using graphs at all, the first rule pays four captures before it
# gives up, and the warm-up never captures, so it costs about what eager costs. After a burst of
# changes the first rule has turned graphs off for good and serves the whole stable stretch
# eagerly; the warm-up is back to replays two steps after the burst.
#
# **Takeaway:** replay while the step repeats; run a changed step eagerly and capture it only
# once it repeats, so a step that keeps changing costs no more than eager, and a step that
# settles gets its graph back.

# %% [markdown]
# ## 8. Shapes that vary: a cache of graphs
#
# A server's batch size changes from request to request, and each size is another graph (another
# launch shape, other scalars, other copy sizes). Capturing every request anew would cost what
# section 7 just showed, so servers keep **one executable per shape** and pick the right one per
# request. `labkit.GraphCache(build, buckets=None, max_entries=None)` does that:
#
# - `build(size, stream)` captures the work for one size and returns the graph;
# - without `buckets`, every distinct batch size gets its own graph (*exact shapes*), captured the
#   first time it is seen. `torch.compile(mode="reduce-overhead")` works this way: it records a
#   new CUDA graph for each distinct input shape it meets;
# - with `buckets`, a request is padded up to the smallest bucket that holds it. vLLM works this
#   way: it captures one graph per size in its `cudagraph_capture_sizes` list (1, 2, 4, then
#   multiples of 8, by default) before serving, and pads each batch up to the next captured size;
# - `max_entries` bounds the number of executables kept (each holds device memory); the least
#   recently used one is destroyed to make room (LRU eviction);
# - it counts hits, misses, evictions, requested and padded elements.
#
# The work must cost more when the batch is larger, or padding would be free. Our kernel
# `rows_step` walks `n` elements with one block of `ROW` threads, so its time grows with the
# number of rows (it is `labkit.course.kernels_extra.rows_step`: `x[:n] += iters`).

# %%
ROW, LAYERS, ITERS = 256, 8, 100     # elements per batch row; kernels per request; work per element
MAX_BATCH = ex05.MAX_BATCH

from labkit.course.kernels_extra import rows_step
print("rows_step's code and its reference agree")

# %% [markdown]
# A request of `b` rows: copy its rows into the static buffer `x_srv`, run `LAYERS` kernels over
# the first `b` rows (eagerly, or as a graph), copy the rows back, wait for them. A graph for a
# bucket of `B ≥ b` rows computes `B` rows: the rows past `b` hold whatever the buffer had and are
# never copied out, so padding costs time but cannot change an answer. Every request's answer is
# checked.
#
# The requests come from a seeded generator with a realistic spread: mostly small batches and a
# long tail. The service accepts batches of up to `MAX_BATCH` rows and may keep `MAX_GRAPHS`
# executables.

# %%
MAX_GRAPHS = 8
x_srv = labkit.device_array(MAX_BATCH * ROW)              # the static buffer every graph uses
h_req, h_res = labkit.pinned_array(MAX_BATCH * ROW), labkit.pinned_array(MAX_BATCH * ROW)
srv = labkit.Stream()

def step(rows, st):
    """The model's work for a batch of `rows` rows."""
    for _ in range(LAYERS):
        rows_step[1, ROW, st](x_srv, rows * ROW, ITERS)

def build(size, st):                                      # GraphCache calls this on a miss
    with labkit.capture(st) as cap:
        step(size, st)
    return cap.graph

def serve(requests, run):
    """Serve each request with run(rows, stream); return the per-request latencies (µs)."""
    lat = []
    for i, rows in enumerate(requests):
        n, value = int(rows) * ROW, float(i % 1000)
        h_req[:n] = value                                 # the request's data
        t0 = labkit.host_us()
        check(rt.cudaMemcpyAsync(ptr(x_srv), h_req.ctypes.data, 4 * n, H2D, srv.handle))
        run(int(rows), srv)
        check(rt.cudaMemcpyAsync(h_res.ctypes.data, ptr(x_srv), 4 * n, D2H, srv.handle))
        srv.synchronize()
        lat.append(labkit.host_us() - t0)
        assert np.all(h_res[:n] == value + LAYERS * ITERS), f"request {i} got a wrong answer"
    return timing.Stats(lat, label="request latency")

requests = ex05.request_stream(N_REQUESTS, seed=7)
print(f"{len(requests)} requests, {len(set(requests))} distinct batch sizes; rows per request: "
      f"median {np.median(requests):.0f}, p90 {np.percentile(requests, 90):.0f}, "
      f"p99 {np.percentile(requests, 99):.0f}, max {requests.max()}")
step(1, srv); srv.synchronize()                           # warm-up

# %%
POW2 = [1, 2, 4, 8, 16, 32, 64]                 # up to MAX_BATCH: every accepted batch has a graph
caches = {
    "exact shapes": labkit.GraphCache(build, max_entries=MAX_GRAPHS, stream=srv),
    "buckets": labkit.GraphCache(build, buckets=POW2, max_entries=MAX_GRAPHS, stream=srv),
}
served = {"eager": serve(requests, step)}
for name, cache in caches.items():
    served[name] = serve(requests, cache.run)

for name, st in served.items():
    line = f"{name:17} total {st.samples.sum() / 1e3:7.1f} ms   p50 {st.p50:6.1f} µs   p99 {st.p99:7.1f} µs"
    if name in caches:
        c = caches[name].stats()
        line += (f"\n{'':17} hit rate {c['hit_rate']:4.0%}   misses {c['misses']:3d}   "
                 f"evictions {c['evictions']:3d}   padding {c['padding_fraction']:4.0%}")
    print(line)

fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(13, 4.6))
plot.bars({k: v.samples.sum() / 1e3 for k, v in served.items()}, ax=ax1,
          ylabel="time to serve all requests (ms)", title=f"{len(requests)} requests")
plot.latency_cdf(served, ax=ax2, title="Latency per request")
plt.show()

shape, bucket = caches["exact shapes"].stats(), caches["buckets"].stats()
assert shape["padded_elements"] == 0 and bucket["padded_elements"] > 0
assert bucket["misses"] <= len(POW2) < shape["misses"]
claims.buckets_beat_eager(served["buckets"].samples.sum() / 1e3, served["eager"].samples.sum() / 1e3)
print(f"exact shapes: {len(set(requests))} sizes for {MAX_GRAPHS} slots -> {shape['evictions']} "
      f"evictions, each a later re-capture; buckets: {bucket['misses']} captures in all")
for c in caches.values():
    c.close()

# %% [markdown]
# With exact shapes, the stream has more distinct sizes than the cache has slots, so the rare
# sizes keep evicting each other and every eviction is paid again later as a capture and an
# instantiation: the long tail of the latency curve. The seven power-of-two buckets fit in the
# cache, so there are at most seven captures and every other request hits; the price is the
# padded rows each request computes. Without a bound (`max_entries=None`) exact shapes would stop
# missing once every size was seen, but would keep one executable per size, each holding device
# memory. The buckets' own tail comes from their few misses: each first request of a bucket pays
# a capture and an instantiation; where that puts their p99 against eager's depends on how a
# capture compares with an eager request on your machine. The total, on the left, is what a
# server pays.
#
# The buckets go up to `MAX_BATCH`, not to the largest request in this sample: a later request
# of any accepted size must find a graph.
#
# ### How far apart should the buckets be?
#
# Space the buckets by a ratio *r*: 1, *r*, *r*², … (rounded up), up to `MAX_BATCH`. Close buckets
# (small *r*) mean little padding but more graphs than the cache holds, hence misses; far buckets
# mean few graphs and much padding. Each point below serves the same stream with the same
# `MAX_GRAPHS` slots; the time is split into requests that missed (they include a capture and an
# instantiation) and requests that hit (their time grows with the padding).

# %%
def geometric_buckets(r, top=MAX_BATCH):
    if r == 1:
        return list(range(1, top + 1))
    out, v = [], 1.0
    while v < top:
        out.append(int(np.ceil(v)))
        v *= r
    return sorted(set(out + [top]))

RATIOS = [1, 1.25, 1.5, 2, 3, 4, 8, 64]
sweep = []
for r in RATIOS:
    bk = geometric_buckets(r)
    cache = labkit.GraphCache(build, buckets=bk, max_entries=MAX_GRAPHS, stream=srv)
    missed = []

    def run(rows, st, cache=cache, missed=missed):
        before = cache.misses
        cache.run(rows, st)
        missed.append(cache.misses > before)
    lat = serve(requests, run).samples
    c = cache.stats()
    cache.close()
    sweep.append(dict(r=r, buckets=len(bk), misses=c["misses"], padding=c["padding_fraction"],
                      total=lat.sum() / 1e3, miss_ms=lat[np.array(missed)].sum() / 1e3,
                      hit_ms=lat[~np.array(missed)].sum() / 1e3))
    print(f"r = {r:5}: {len(bk):2d} buckets, {c['misses']:3d} misses, padding {c['padding_fraction']:4.0%}, "
          f"total {sweep[-1]['total']:7.1f} ms")
best = min(sweep, key=lambda p: p["total"])
print(f"fastest: r = {best['r']} ({best['buckets']} buckets)")

# %%
with plot.style():
    fig, ax = plt.subplots(figsize=(8, 5.4))
    xs = [p["buckets"] for p in sweep]
    for key, label in (("total", "all requests"), ("miss_ms", "requests that missed"),
                       ("hit_ms", "requests that hit")):
        ax.plot(xs, [p[key] for p in sweep], marker="o", label=label,
                linewidth=2.5 if key == "total" else 1.5)
    ax.axhline(served["eager"].samples.sum() / 1e3, color=plot.color_for("eager"), linestyle="--",
               linewidth=1, label="eager, all requests")
    ax.plot([best["buckets"]], [best["total"]], marker="*", markersize=16, color="black",
            linestyle="none", label=f"fastest: r = {best['r']}")
    for p in sweep:
        ax.annotate(f"r={p['r']}\n{p['padding']:.0%} pad", (p["buckets"], p["total"]),
                    textcoords="offset points", xytext=(0, 8), ha="center", fontsize=8)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xticks(xs, [str(x) for x in xs])
    ax.tick_params(axis="x", which="minor", bottom=False, labelbottom=False)
    ax.set_xlabel("number of buckets (fewer = farther apart = more padding)")
    ax.set_ylabel("time to serve the stream (ms, log)")
    # headroom for the two-line r labels above the highest point (a fifth of the log range),
    # and the legend under the axes, where it covers no point and no label
    lo, hi = ax.get_ylim()
    ax.set_ylim(lo, hi * (hi / lo) ** 0.2)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.16), ncols=3)
    ax.set_title(f"Bucket spacing, {MAX_GRAPHS} graphs kept\n{labkit.provenance()}")
plt.show()
claims.best_spacing_in_between(sweep[0], best, sweep[-1])

# %% [markdown]
# Read the curve from the left (two buckets: 1 and `MAX_BATCH`) to the right (a bucket for every
# size). Fewer, farther buckets cost hit time: every request computes its padded rows. More,
# closer buckets cost miss time as soon as there are more of them than the `MAX_GRAPHS` slots:
# LRU eviction turns the cache into a capture-per-request machine. The fastest spacing sits where
# the two meet, and its place depends on the stream, on what a padded row costs and on what a
# capture costs. Measure it for your own traffic.

# %%
for h in (ex_model, ex_io, ex_pp, ex_three, g_model, g_io, g_pp, g_other, g_three):
    h.close()

# %% [markdown]
# ## Summary
#
# - New data goes into the buffers a graph was captured with: copy in, replay, copy out (or
#   capture the copies too). Rebinding a Python name does not move a graph; it silently leaves it
#   on the old buffer.
# - A graph refers to memory it does not own, which must be valid whenever a launch uses it.
#   labkit keeps kernel arguments alive; raw pointers are yours to keep alive, safest until the
#   executables that use them are gone.
# - `set_kernel_args` / `kernel_node` change one kernel node of an executable
#   (`cudaGraphExecKernelNodeSetParams`); `update` replaces every node's parameters from a new
#   capture of the same topology (`cudaGraphExecUpdate`). A topology change fails with 910, the
#   old executable keeps working, and the new graph must be instantiated.
# - From narrowest to widest, and from cheapest to dearest: node update, exec update,
#   re-instantiate, re-capture + instantiate. Only the node update stays flat as the graph grows.
# - A step that keeps changing is cheaper eager. llama.cpp's rule, `UpdatingGraph`: replay while
#   the step repeats, run a changed step eagerly, and capture it once it repeats (a warm-up). Its
#   first rule, which turned graphs off for good after 4 changes in a row, lost the graphs of
#   every stable step that followed a burst of changes.
# - For batch sizes that vary, keep one executable per shape (`GraphCache`): exact shapes as
#   `torch.compile` records them, or buckets as vLLM's capture sizes, which must cover every batch
#   the service accepts. With a bounded cache the best spacing lies between the extremes: measure
#   it.
#
# ## Exercise: a server that keeps its executable
#
# A model server answers requests for several customers. Each customer has an *adapter*, a
# buffer of `N` floats added to the input; every so often a new version of the model arrives.
# `ex05.Server` has version 1 captured once on its static buffers and instantiated:
#
# ```
#   node 0: saxpy[GRID, BLOCK, stream](out, 1.0, inp, adapter)   out = inp + adapter
#   node 1: scale[GRID, BLOCK, stream](out, w)                   out *= w (the version's weight)
#   nodes 2…: add_one[GRID, BLOCK, stream](out), ex05.LAYERS of them
# ```
#
# It gives you `self.stream`, `self.inp` and `self.out` (the static buffers), `self.adapters`
# (the customers' adapters, `"A"`, `"B"`, `"C"`), `self.adapter` (the one in use, A at first)
# and `self.ex` (the executable). Write its three methods, so that the server never captures
# and instantiates where it need not:
#
# - `answer(request)`: serve one request (a numpy array of `N` floats) with `self.ex` and
#   return the answer, a numpy array;
# - `use_adapter(adapter)`: later requests use `adapter`. The adapters belong to their
#   customers: never write into one;
# - `new_version(graph)`: later requests run `graph`, a new version captured on the same static
#   buffers **with adapter A**, whichever adapter is in use. One version has a node more.
#
# The check serves a scripted day (`ex05.day()`: 17 requests, adapter switches, two new versions)
# and compares every answer with numpy. When your server passes, it prints what each change cost
# it, beside capturing and instantiating anew.

# %% tags=["starter"]
class MyServer(ex05.Server):
    def answer(self, request):
        ...

    def use_adapter(self, adapter):
        ...

    def new_version(self, graph):
        ...

# %% tags=["solution"]
class MyServer(ex05.Server):
    def answer(self, request):
        self.inp.copy_to_device(request)         # into the buffer the graph was captured with
        self.ex.launch(self.stream)
        self.stream.synchronize()                 # the answer is there once the replay is done
        return self.out.copy_to_host()

    def use_adapter(self, adapter):
        self.adapter = adapter                    # remembered: a new version needs it again
        self.ex.set_kernel_args(0, saxpy, ex05.GRID, ex05.BLOCK, self.out, 1.0, self.inp, adapter)

    def new_version(self, graph):
        if not self.ex.update(graph).ok:          # 910: another topology
            old, self.ex = self.ex, graph.instantiate(upload_stream=self.stream)
            old.close()                           # nothing launches it any more
        self.use_adapter(self.adapter)            # the update copied node 0 from the new graph too

# %% tags=["check"]
ex05.check_server(MyServer, s)

# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/OWNER/cuda-graphs-lab/blob/main/notebooks/05_graph_update.ipynb) In Colab, run `%pip install -q "cuda-graphs-lab[cu12] @ git+https://github.com/OWNER/cuda-graphs-lab"` first.
#
# # 05 — Dynamic input: update a graph, or keep one per shape
#
# A graph is frozen at capture: its kernels, their launch shapes and their arguments, including
# the *address* of every buffer. Inference is not frozen: every request brings new data, some
# steps alternate between buffers, and the batch size changes from one request to the next. This
# notebook shows the tool for each case, and measures what each costs.
#
# **Prerequisites:** notebooks 02 (stream capture) and 03 (instantiate, launch, the cost of each
# phase).
#
# **Learning goals**
#
# 1. Run a captured graph on new data through its static buffers: copy in, replay, copy out.
# 2. Point one kernel node at other buffers (`cudaGraphExecKernelNodeSetParams`), and update a
#    whole executable from a new capture (`cudaGraphExecUpdate`).
# 3. Recognise a failed update (a topology change, error 910), know that the old executable still
#    works, and fall back to instantiating, by hand and with `labkit.cache.UpdatingGraph`.
# 4. Compare the cost of node update, exec update, re-instantiate and re-capture against graph size.
# 5. Serve varying batch sizes with `labkit.GraphCache`, one graph per shape or padded buckets as
#    vLLM does; read its hit rate and padding waste; find the bucket spacing past which padding
#    costs more than it saves.
# 6. Know who owns the memory a graph uses, and what goes wrong when it is freed too early.
#
# About 35 minutes.

# %%
import labkit            # first: it chooses the backend before numba.cuda is imported
import numpy as np
import networkx as nx
from labkit import rt, check, timing, plot
from labkit.course import workloads
from labkit.course.workloads import add_one, saxpy, busy

print("backend :", labkit.backend, f"({labkit.backend_reason})")
print("device  :", labkit.device_name())
print("figures :", labkit.provenance())

import gc
import itertools
import weakref

import matplotlib.pyplot as plt
from numba import cuda
from labkit.cache import UpdatingGraph
from labkit.course.exercises import nb05 as ex05

# Every size and repeat count of this notebook, in one place. The simulator is slower per launch
# in real time, so it serves fewer requests; the shapes of the results are the same.
SZ = workloads.sizes()
REPEAT, WARMUP = SZ["repeat"], SZ["warmup"]
GRAPH_SIZES = [1, 10, 100, 1000]          # nodes, for the cost of each update strategy
N_REQUESTS = SZ["requests"]               # requests in the served stream (section 6)

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

def reference(req):
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
    np.testing.assert_allclose(from_graph, reference(req), rtol=1e-6)
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
    np.testing.assert_allclose(h_out, reference(req), rtol=1e-6)
print("3 requests, one graph launch each, all equal to numpy")

# %% [markdown]
# ## 2. Point one kernel node at other buffers
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
# ## 3. Update a whole executable from a new capture
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
np.testing.assert_allclose(out2.copy_to_host(), reference(inp2.copy_to_host()), rtol=1e-6)
print("the updated executable reads inp2 and writes out2; nothing was instantiated")

# %% [markdown]
# ## 4. A topology change makes the update fail
#
# Add a third kernel and the new graph no longer matches the executable node for node. `update`
# then returns a failed `UpdateResult` holding CUDA's `cudaErrorGraphExecUpdateFailure` (910),
# rather than raising, and it leaves the executable as it was.

# %%
with labkit.capture(s) as cap:
    model_on(s, inp2, out2)
    add_one[GRID, BLOCK, s](out2)           # a third kernel: one node more
g_three = cap.graph
res = ex_model.update(g_three)
print(res)
print(labkit.CudaError(res.code, "cudaGraphExecUpdate"))
assert not res.ok and res.code == 910

# %% [markdown]
# The old executable still works: it runs the two-kernel graph it had. The fallback is to
# instantiate the new graph.

# %%
ex_model.launch(s)
s.synchronize()
np.testing.assert_allclose(out2.copy_to_host(), reference(inp2.copy_to_host()), rtol=1e-6)
print("old executable after the failed update: still the two-kernel model")

ex_three = g_three.instantiate(upload_stream=s)
ex_three.launch(s)
s.synchronize()
np.testing.assert_allclose(out2.copy_to_host(), reference(inp2.copy_to_host()) + 1, rtol=1e-6)
print("new executable, instantiated: three kernels")


# %% [markdown]
# ### Update, else instantiate: `UpdatingGraph`
#
# llama.cpp's CUDA backend works like this: when a step's graph differs from the last one, it
# captures it again and updates its executable with `cudaGraphExecUpdate`; when the update fails
# it instantiates the new graph. And when the graph has needed changing several steps in a row,
# it stops using graphs for that model, since each change costs more than it saves.
#
# `labkit.cache.UpdatingGraph` is that strategy in small: `refresh(graph)` updates the executable,
# or instantiates `graph` when the update fails; after `max_failures` failed updates in a row it
# stops trying updates and instantiates directly (a success in between resets the count). Below,
# the step's graph has 2 or 3 kernels: first it changes now and then, then at every step.

# %%
def capture_step(k, x):
    with labkit.capture(s) as cap:
        workloads.chain(k, x, s, GRID, BLOCK)     # k add_one kernels
    return cap.graph

xu = labkit.to_device(np.zeros(N, np.float32))
ug = UpdatingGraph(max_failures=3)
pattern = [2, 2, 2, 3, 3, 2, 2] + [2, 3] * 4     # kernels per step: stable, then flapping
outcomes = []
for k in pattern:
    outcomes.append(ug.refresh(capture_step(k, xu)))
    ug.launch(s)
s.synchronize()
assert np.all(xu.copy_to_host() == sum(pattern)), "every step should run the kernels it captured"
for t, (k, o) in enumerate(zip(pattern, outcomes)):
    print(f"step {t:2d}: {k} kernels -> {o}")
print(ug.stats())
assert ug.failed_updates == 5 and not ug.updates_enabled

# %% [markdown]
# Steps 0–6 show the good case: updates whenever the shape repeats, one failed update (and an
# instantiation) when it changes. From step 8 on the graph changes every step, each update fails,
# and after three failures in a row `UpdatingGraph` no longer tries: each later step costs one
# instantiation instead of a failed update plus an instantiation. Section 5 puts numbers on
# these costs.

# %% [markdown]
# ## 5. What each strategy costs, against graph size
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
# call. `set_kernel_args` (section 2) is the easy form of the same call; it checks and packs the
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

print(f"{'nodes':>5}" + "".join(f"{k:>26}" for k in costs))
for i, n in enumerate(GRAPH_SIZES):
    print(f"{n:5d}" + "".join(f"{costs[k][i].median:23.1f} µs" for k in costs))
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
ri0, ri1 = costs["re-instantiate"][0].median, costs["re-instantiate"][-1].median
labkit.expect(ri1 > 5 * ri0, f"re-instantiating {GRAPH_SIZES[-1]} nodes costs over 5× "
              f"re-instantiating {GRAPH_SIZES[0]}",
              measured=f"{ri0:.1f} µs at {GRAPH_SIZES[0]} nodes, {ri1:.1f} µs at {GRAPH_SIZES[-1]}",
              why="this driver's fixed cost per instantiation is large next to its cost per node",
              look="the re-instantiate curve")
labkit.expect(big["exec update"] < big["re-instantiate"] < big["re-capture + instantiate"],
              f"at {GRAPH_SIZES[-1]} nodes: exec update < re-instantiate < re-capture + instantiate",
              measured=", ".join(f"{k} {big[k]:.0f} µs" for k in
                                 ("exec update", "re-instantiate", "re-capture + instantiate")),
              why="this driver's exec update is dear next to its instantiation, or a busy host "
                  "stalled one measurement", look="the four curves at the right-hand end")

# %% [markdown]
# What to read from it:
#
# - **re-capture + instantiate** is the widest, and as the graph grows by far the most expensive:
#   from Python, capturing costs about as much as launching the same kernels eagerly (numba
#   prepares every launch, notebook 03), and then comes the instantiation.
# - **re-instantiate** grows with the graph: the driver builds the executable node by node.
#   Each new executable here is closed right after its timed call (`timing.measure(...,
#   after=...)`, untimed). That matters on a GPU: on the H200, instantiating the 1000-node chain
#   cost about 2,000 µs with no other such executable alive, and 6,500–8,700 µs once five or six
#   were kept alive (probe of 2026-12-03). A server that caches many large executables pays
#   that; the simulator does not model it.
# - **exec update** also grows with the graph (every node's parameters are compared and copied),
#   and at the largest size it stays well below re-instantiating; the printed lines say where it
#   stands at the small sizes on this backend. It needs a graph to update from, and capturing that
#   graph costs what the top line shows minus the instantiation.
# - **node update** changes one node, so it does not grow with the graph: the flat bottom line.
#   On the H200 the handle took about 1.6 µs, twice the bare driver call with the same block
#   (0.8 µs, measured beside it by `python -m labkit bench --wrapper`); `set_kernel_args` a little
#   more (1.7–2.9 µs in one H200 run). For a graph of one or a few nodes an exec update costs a
#   few µs too (it has only those nodes to compare); from tens of nodes on, the node update is the
#   cheapest by a widening margin, about 10× cheaper than an exec update of a 100-node graph on
#   the H200 (2.3 against 20.7 µs). So when a few nodes of a
#   large graph change, update those nodes; when many change, or the shape
#   of a kernel's launch does, one exec update from a new capture replaces many node updates.

# %% [markdown]
# ## 6. Shapes that vary: a cache of graphs
#
# A server's batch size changes from request to request. An update can change a kernel's grid and
# its scalar arguments, so one could re-capture and update for every new batch size; but from
# Python a re-capture costs about as much as running the work eagerly (notebook 03), which would
# undo the graph's saving. Servers instead keep **one executable per shape** and pick the right one
# per request. `labkit.GraphCache(build, buckets=None, max_entries=None)` does that:
#
# - `build(size, stream)` captures the work for one size and returns the graph;
# - without `buckets`, every distinct batch size gets its own graph (*exact shape*);
# - with `buckets`, a request is padded up to the smallest bucket that holds it: vLLM captures
#   a list of batch sizes ahead of time and pads each batch to the next one (*bucketed*);
# - `max_entries` bounds the number of executables kept (each holds device memory); the least
#   recently used one is destroyed to make room (LRU eviction: least recently used first);
# - it counts hits, misses, evictions, requested and padded elements.
#
# The work must cost more when the batch is larger, or padding would be free. Our kernel
# `rows_step` walks `n` elements with one block of `ROW` threads, so its time grows with the
# number of rows. The simulator runs its numpy reference, which we check against the kernel's own
# code first.

# %%
ROW, LAYERS, ITERS = 256, 8, 100     # elements per batch row; kernels per request; work per element
MAX_BATCH = ex05.MAX_BATCH

def _rows_ref(grid, block, x, n, iters):
    x.reshape(-1)[:n] += x.dtype.type(iters)

def _rows_cost(P, grid, block, x, n, iters):
    passes = -(-n // (grid[0] * block[0]))           # elements each thread handles
    return P("kernel_us") + passes * iters * P("busy_ns_per_iter") / 1000.0

@labkit.kernel(reference=_rows_ref, cost=_rows_cost)
def rows_step(x, n, iters):
    """x[:n] += iters; a fixed grid walks the n elements, so the time grows with n."""
    for i in range(cuda.grid(1), n, cuda.gridsize(1)):
        v = x[i]
        for _ in range(iters):
            v += 1.0
        x[i] = v

probe = np.arange(100, dtype=np.float32)
own, ref = probe.copy(), probe.copy()
rows_step.simulate((1, 1, 1), (32, 1, 1), own, 70, 3)   # the kernel's code (GPU or numba's simulator)
_rows_ref((1, 1, 1), (32, 1, 1), ref, 70, 3)
np.testing.assert_array_equal(own, ref)
print("rows_step's code and its reference agree")

# %% [markdown]
# A request of `b` rows: copy its rows into the static buffer `x_srv`, run `LAYERS` kernels over
# the first `b` rows (eagerly, or as a graph), copy the rows back, wait for them. A graph for a
# bucket of `B ≥ b` rows computes `B` rows: the rows past `b` hold whatever the buffer had and are
# never copied out, so padding costs time but cannot change an answer. Every request's answer is
# checked.
#
# The requests come from a seeded generator with a realistic spread: mostly small batches and a
# long tail. The server may keep `MAX_GRAPHS` executables.

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
POW2 = [1, 2, 4, 8, 16, 32, 64]
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
        line += (f"   hit rate {c['hit_rate']:4.0%}   misses {c['misses']:3d}   "
                 f"evictions {c['evictions']:3d}   padding {c['padding_fraction']:4.0%}")
    print(line)

fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(13, 4.6))
plot.bars({k: v.samples.sum() / 1e3 for k, v in served.items()}, ax=ax1,
          ylabel="time to serve all requests (ms)", title=f"{len(requests)} requests")
plot.latency_cdf(served, ax=ax2, title="Latency per request")
plt.show()

# %%
shape, bucket = caches["exact shapes"].stats(), caches["buckets"].stats()
assert shape["padded_elements"] == 0 and bucket["padded_elements"] > 0
assert bucket["misses"] <= len(POW2) < shape["misses"]
# Model: a graph saves ~20 µs of launches per kernel but pays GPU time for each padded row; on the
# H200 (kernels ~1 µs) it wins 2.8×, with 10× slower kernels (slow-gpu) eager wins, 126 vs 148 ms.
labkit.expect(served["buckets"].samples.sum() < served["eager"].samples.sum(),
              "the bucketed graphs serve the stream faster than eager launches",
              measured=f"buckets {served['buckets'].samples.sum() / 1e3:.1f} ms, eager "
                       f"{served['eager'].samples.sum() / 1e3:.1f} ms",
              why="your GPU's kernels take longer than a launch here, so the rows a bucket pads "
                  "cost more GPU time than the graph saves in launches",
              look="the padding column and the latency CDF")
print(f"exact shapes: {len(set(requests))} sizes for {MAX_GRAPHS} slots -> {shape['evictions']} "
      f"evictions, each a later re-capture; buckets: {bucket['misses']} captures in all")
for c in caches.values():
    c.close()

# %% [markdown]
# *When this holds:* while the launches a graph saves cost more than the GPU time of the rows it
# pads, as with the H200's ~1 µs kernels. On a GPU whose kernels are 10× slower, eager launches
# of the exact sizes win.


# %% [markdown]
# With exact shapes, the stream has more distinct sizes than the cache has slots, so the rare
# sizes keep evicting each other and every eviction is paid again as a capture and an
# instantiation later: the long tail of the latency curve. The seven power-of-two buckets fit in
# the cache, so there are at most seven captures and every other request hits; the price is the padded rows each request
# computes. Without a bound (`max_entries=None`) exact shapes would stop missing once every size
# was seen, but would keep one executable for each, and each holds device memory.
#
# The buckets' own tail comes from their few misses: each first request of a bucket pays a
# capture and an instantiation. Whether that puts their p99 above or below eager's depends on how
# a capture compares with an eager request on the machine: on the H200 the buckets' p99 came out
# below eager's (387 against 429 µs in one run), on the simulator above it (283 against 155 µs).
# The total time, the left panel, favours the buckets on both.
#
# ### How far apart should the buckets be?
#
# Space the buckets by a ratio *r*: 1, *r*, *r*², … (rounded up), up to the largest batch. Close
# buckets (small *r*) mean little padding but more graphs than the cache holds, hence misses; far
# buckets mean few graphs and much padding. Each point below serves the same stream with the same
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
labkit.expect(sweep[0]["total"] > best["total"] < sweep[-1]["total"],
              "the fastest bucket spacing lies between the closest and the farthest",
              measured=f"r = {sweep[0]['r']}: {sweep[0]['total']:.1f} ms, best r = {best['r']}: "
                       f"{best['total']:.1f} ms, r = {sweep[-1]['r']}: {sweep[-1]['total']:.1f} ms",
              why="on this machine captures and padding weigh differently: with slow kernels "
                  "padding dominates, with a slow host captures do",
              look="the curve's lowest point")


# %% [markdown]
# Read the curve from the left (two buckets: 1 and the largest batch) to the right (a bucket for
# every size). Fewer, farther buckets cost hit time: every request computes its padded rows.
# More, closer buckets cost miss time as soon as there are more of them than the `MAX_GRAPHS`
# slots: LRU eviction turns the cache into a capture-per-request machine. The fastest spacing sits
# where the two meet, and its place depends on the stream (how spread out the sizes are), on what
# a padded row costs, and on what a capture costs. Measure it for your own traffic.

# %% [markdown]
# ## 7. Who owns the memory a graph uses
#
# A graph stores addresses. It does not own the buffers behind them, and it does not know your
# Python names.
#
# **labkit keeps the arrays a capture used alive.** Every labkit kernel launched during a capture
# records its arguments; the `Graph` and every `GraphExec` made from it keep them (`keepalive`).
# Below, the only Python name for `tmp` disappears when the function returns, yet the buffer lives
# on as long as the graph does, and the replay writes into it.

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
# **Rebinding a name changes nothing.** `inp = labkit.to_device(new)` makes a new buffer and
# points the name at it; the graph still reads the old one, which labkit keeps alive. The fix is
# section 1 (copy into the captured buffer) or section 3 (update the graph).

# %%
first, second = np.full(N, 1.0, np.float32), np.full(N, 100.0, np.float32)
inp.copy_to_device(first)                    # the buffer named `inp` holds the first data
with labkit.capture(s) as c:
    model(s)                                 # the graph gets the address `inp` names now
g_rb = c.graph
ex_rb = g_rb.instantiate()

inp = labkit.to_device(second)               # a new buffer under the old name
ex_rb.launch(s)
s.synchronize()
from_graph = out.copy_to_host()
model(s)                                     # eager code looks the name up at each call
s.synchronize()
from_eager = out.copy_to_host()
np.testing.assert_allclose(from_graph, reference(first), rtol=1e-6)
np.testing.assert_allclose(from_eager, reference(second), rtol=1e-6)
print("graph computed from the old buffer:", from_graph[:2], "  eager from the new one:", from_eager[:2])
ex_rb.close(); g_rb.close()

# %% [markdown]
# **What goes wrong when a buffer is freed under a graph.** The graph goes on reading and writing
# the address. If the allocator has since given that memory to another array, a replay silently
# corrupts that array. If the address is no longer mapped, the kernel faults with
# `cudaErrorIllegalAddress` (700), a *sticky* error: the CUDA context is unusable from then on and
# the process has to be restarted. We do not try it here; labkit's message for that error says
# where to look:

# %%
print(labkit.CudaError(700, "cudaGraphLaunch"))

# %% [markdown]
# So: keep every buffer a graph uses alive until every executable that uses it is destroyed
# (labkit does this for kernel arguments, you do it for raw pointers); destroy executables before
# freeing; and treat a graph's buffers as owned by the graph. `GraphCache` eviction destroys an
# executable together with its graph, which is what lets labkit release their arrays.

# %%
for h in (ex_model, ex_io, ex_pp, ex_three, g_model, g_io, g_pp, g_other, g_three):
    h.close()
ug.close()

# %% [markdown]
# ## Summary
#
# - New data goes into the buffers a graph was captured with: copy in, replay, copy out (or
#   capture the copies too). Rebinding a Python name does not move a graph.
# - `set_kernel_args` changes one kernel node of an executable (`cudaGraphExecKernelNodeSetParams`);
#   `update` replaces every node's parameters from a new capture of the same topology
#   (`cudaGraphExecUpdate`). A topology change fails with 910, and the old executable keeps
#   working; instantiate the new graph. `UpdatingGraph` does update-else-instantiate, and stops
#   trying updates that keep failing.
# - From narrowest to widest: node update, exec update, re-instantiate, re-capture + instantiate,
#   and in that order from cheapest to dearest. A node update costs a microsecond or two whatever
#   the graph's size (through a `kernel_node` handle); the last three grow with the graph, and for
#   large graphs an exec update is far cheaper than instantiating, and instantiating far cheaper
#   than capturing again from Python.
# - For batch sizes that vary, keep one executable per shape (`GraphCache`). Exact shapes waste no
#   rows but need a graph per size; buckets (vLLM's capture sizes) need few graphs but compute
#   padding. With a bounded cache the best spacing lies between the extremes: measure it.
# - A graph refers to memory it does not own. labkit keeps kernel arguments alive; raw pointers
#   are yours to keep alive until the executables that use them are gone.
#
# ## Exercise: choose the buckets
#
# A server may keep at most `ex05.MAX_BUCKETS` graphs, and at most `ex05.MAX_PADDING` of the rows
# it computes may be padding. Choose the buckets for the request stream `ex05.exercise_requests()`
# (seeded, the same for everyone). The starting point, powers of two up to 64, serves every
# request but needs too many graphs, and dropping one is not enough. `ex05.padding_table` shows
# which bucket the padding comes from; the last cell serves the stream with your buckets.

# %% tags=["starter"]
ex_requests = ex05.exercise_requests()
buckets = [1, 2, 4, 8, 16, 32, 64]      # starting point: powers of two up to the largest batch
print(ex05.padding_table(buckets, ex_requests))

# %% tags=["solution"]
ex_requests = ex05.exercise_requests()
# Most requests are small: spend most buckets there, about one per step in the cumulative
# count; the tail above 20 rows is rare, so one bucket covers it, and that bucket need only be
# as large as the largest request.
buckets = [2, 4, 7, 12, 21, int(ex_requests.max())]
print(ex05.padding_table(buckets, ex_requests))

# %%
cache = labkit.GraphCache(build, buckets=buckets, stream=srv)
lat = serve(ex_requests, cache.run)
print(f"your buckets: {cache.stats()['misses']} graphs captured, "
      f"{cache.stats()['padding_fraction']:.1%} padding, {lat.samples.sum() / 1e3:.1f} ms in all")
cache.close()

# %% tags=["check"]
ex05.check_buckets(buckets, ex_requests)

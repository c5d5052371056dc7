# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 04 — Several streams in one graph: fork, join and overlap
#
# A stream is a queue: what you put on it runs in order. Work that does not depend on each
# other can go on *different* streams and then run at the same time. Stream capture records
# this too: when a second stream waits on an event recorded on the capturing stream, it joins
# the capture, and the graph gets *branches* instead of one chain.
#
# **Prerequisites:** notebooks 02 (stream capture) and 03 (instantiate, launch, amortization).
#
# **Learning goals**
#
# 1. Fork a side stream into a capture and join it back, with the raw calls
#    (`cudaEventRecord`, `cudaStreamWaitEvent`) and with `labkit.fork`; read the resulting DAG.
# 2. Recognise the three ways a multi-stream capture fails (a fork never joined, a wait on an
#    event from outside the capture, ending the capture on the wrong stream) and recover.
# 3. Measure when branches pay: small kernels that leave most of the GPU idle, run on one
#    stream, on several streams, and as one graph, and read why from their timelines.
#
# About 45 minutes.

# %%
import labkit            # first: it chooses the backend before numba.cuda is imported
import numpy as np
import networkx as nx
from labkit import rt, check, timing, plot
from labkit.course import workloads, reference
from labkit.course.claims import nb04 as claims
from labkit.course.workloads import add_one, saxpy, busy

print("backend :", labkit.backend, f"({labkit.backend_reason})")
print("device  :", labkit.device_name())
print("figures :", labkit.provenance())

# %%
N, GRID, BLOCK = 1024, 4, 256
origin, side = labkit.Stream(), labkit.Stream()
a = labkit.to_device(np.zeros(N, np.float32))
b = labkit.to_device(np.zeros(N, np.float32))

# %% [markdown]
# Two words first. An **event** is a marker in a stream: `cudaEventRecord(e, s)` puts it after
# the work queued on `s` so far, and `cudaStreamWaitEvent(t, e)` makes stream `t`'s next work
# wait until the GPU reaches that marker. It is how one stream's work is ordered after
# another's, outside a capture and inside one. A graph is a **DAG**, a directed acyclic graph:
# nodes (kernels, copies) joined by edges that say "after"; two nodes with no path of edges
# between them have no order, and may run at the same time.
#
# ## 1. Fork and join with the raw API
#
# The recipe has four steps:
#
# 1. **fork** — record an event on the origin stream (the one capturing) and make the side stream
#    wait on it. The side stream is now part of the capture; its next node depends on everything
#    the origin had captured so far.
# 2. put work on both streams: these become two branches;
# 3. **join** — record an event on the side stream and make the origin wait on it;
# 4. end the capture on the origin, the stream that began it.
#
# Events used only for ordering are cheaper without timing (`cudaEventDisableTiming`).

# %%
fork_ev = check(rt.cudaEventCreateWithFlags(rt.cudaEventDisableTiming))
join_ev = check(rt.cudaEventCreateWithFlags(rt.cudaEventDisableTiming))
mode = rt.cudaStreamCaptureMode.cudaStreamCaptureModeGlobal

check(rt.cudaStreamBeginCapture(int(origin), mode))
add_one[GRID, BLOCK, origin](a)                         # before the fork: a = 1
check(rt.cudaEventRecord(fork_ev, int(origin)))         # fork ...
check(rt.cudaStreamWaitEvent(int(side), fork_ev, 0))    # ... the side stream joins the capture
add_one[GRID, BLOCK, side](b)                           # branch on the side stream: b = 1
add_one[GRID, BLOCK, origin](a)                         # branch on the origin:      a = 2
check(rt.cudaEventRecord(join_ev, int(side)))           # join ...
check(rt.cudaStreamWaitEvent(int(origin), join_ev, 0))  # ... the origin waits for the side
saxpy[GRID, BLOCK, origin](a, 1.0, a, b)                # after the join: a = a + b = 3
raw = labkit.Graph(check(rt.cudaStreamEndCapture(int(origin))))

print(raw, "| side stream still capturing?", side.is_capturing())

# %% [markdown]
# The event record and the wait do not become nodes: they only add edges. Four kernels, so
# four nodes; the first kernel feeds both branches and both branches feed the last: four edges,
# a diamond. The check below asserts exactly that, from the graph the runtime returns.

# %%
g = raw.to_networkx()
print("nodes:", raw.node_kinds())
print("edges:", raw.edges)
root = [n for n in g if g.in_degree(n) == 0]
sink = [n for n in g if g.out_degree(n) == 0]
assert len(raw) == 4 and len(raw.edges) == 4, "expected a diamond: 4 nodes, 4 edges"
assert len(root) == 1 and g.out_degree(root[0]) == 2 and len(sink) == 1 and g.in_degree(sink[0]) == 2
plot.graph_dag(raw, title="Fork/join, raw API");

# %%
ex = raw.instantiate()
ex.launch(origin)
origin.synchronize()
print("a:", a.copy_to_host()[:4], " b:", b.copy_to_host()[:4])
assert np.all(a.copy_to_host() == 3) and np.all(b.copy_to_host() == 1)
ex.close(); raw.close()
for e in (fork_ev, join_ev):
    check(rt.cudaEventDestroy(e))

# %% [markdown]
# Keep: a fork is an event recorded on the capturing stream and waited on by the side stream; a
# join is the same the other way round. Events add edges, not nodes.

# %% [markdown]
# ## 2. The same with `labkit.fork`
#
# `labkit.fork(origin, *side_streams)` is a context manager that does steps 1 and 3: it forks
# the side streams on entry and joins them back on exit, also if the block raises. Here it
# forks three streams, so the graph has four branches.

# %%
s2, s3 = labkit.Stream(), labkit.Stream()
xs = [labkit.to_device(np.zeros(N, np.float32)) for _ in range(4)]

with labkit.capture(origin) as cap:
    add_one[GRID, BLOCK, origin](xs[0])
    with labkit.fork(origin, side, s2, s3):
        for s, x in zip([origin, side, s2, s3], xs):
            add_one[GRID, BLOCK, s](x)
    saxpy[GRID, BLOCK, origin](xs[0], 1.0, xs[0], xs[1])

four = cap.graph
print(four)
assert len(four) == 6 and len(four.edges) == 8   # 1 -> 4 branches -> 1
plot.graph_dag(four, title="Four branches with labkit.fork");

# %% [markdown]
# ## 3. What goes wrong
#
# Each case below fails on purpose. labkit turns the error code into a `labkit.CudaError` with a
# hint; we catch and print it, then check that both streams are no longer capturing and still
# work. `labkit.Event(timing=False)` is section 1's event without timing, in one call.
#
# **A fork never joined.** The side stream did work that the origin never waits for. When the
# origin ends the capture, the runtime refuses: the graph would have a loose end.

# %%
fork_ev = labkit.Event(timing=False)
try:
    with labkit.capture(origin):
        add_one[GRID, BLOCK, origin](a)
        fork_ev.record(origin)
        check(rt.cudaStreamWaitEvent(int(side), int(fork_ev), 0))
        add_one[GRID, BLOCK, side](b)       # ... and no join
except labkit.CudaError as e:
    print(e)
    unjoined = e
assert unjoined.code == 904   # cudaErrorStreamCaptureUnjoined
print("capturing afterwards? origin:", origin.is_capturing(), " side:", side.is_capturing())

# %% [markdown]
# **A wait on an event recorded outside the capture.** The event marks work that is not part of
# the graph, so the graph cannot depend on it: the wait itself fails and the whole capture is
# invalidated (labkit still ends it, so the stream is not left capturing).

# %%
outside = labkit.Event(timing=False)
add_one[GRID, BLOCK, side](b)
outside.record(side)                       # recorded before the capture begins
try:
    with labkit.capture(origin):
        add_one[GRID, BLOCK, origin](a)
        check(rt.cudaStreamWaitEvent(int(origin), int(outside), 0), "waiting on an outside event")
except labkit.CudaError as e:
    print(e)
    isolation = e
assert isolation.code == 905   # cudaErrorStreamCaptureIsolation
print("capturing afterwards? origin:", origin.is_capturing())

# %% [markdown]
# **Ending on the wrong stream.** Only the stream that began the capture can end it. Ending it on
# the side stream fails *and* invalidates the capture, so when labkit then ends it on the origin
# that fails too, and labkit's error names the first failing call.

# %%
fork_ev = labkit.Event(timing=False)
try:
    with labkit.capture(origin):
        add_one[GRID, BLOCK, origin](a)
        fork_ev.record(origin)
        check(rt.cudaStreamWaitEvent(int(side), int(fork_ev), 0))
        err, _ = rt.cudaStreamEndCapture(int(side))       # wrong stream
        wrong_end = labkit.CudaError(err, "cudaStreamEndCapture on the side stream")
        print(wrong_end, end="\n\n")
except labkit.CudaError as e:
    print(e)
    origin_end = e
assert wrong_end.code == 903 and origin_end.code == 901   # Unmatched, then Invalidated

# %%
# Both streams are usable again: eager work on each runs and gives the right values.
rt.cudaGetLastError()
origin.synchronize(); side.synchronize()
a.copy_to_device(np.zeros(N, np.float32)); b.copy_to_device(np.zeros(N, np.float32))
add_one[GRID, BLOCK, origin](a)
add_one[GRID, BLOCK, side](b)
origin.synchronize(); side.synchronize()
assert not origin.is_capturing() and not side.is_capturing()
assert np.all(a.copy_to_host() == 1) and np.all(b.copy_to_host() == 1)
print("both streams work")

# %% [markdown]
# Keep: every side stream must be joined back before the capture ends, may wait only on events
# recorded inside the capture, and the capture ends on the stream that began it.

# %% [markdown]
# **Branches that race.** Two branches have no order between them, so if one writes a buffer
# the other reads, what the reader sees depends on which ran first: a *data race*. Below, one
# branch adds one to `a` in place while the other reads `a`. A GPU runs it without a word; the
# simulator names both nodes and the buffer when the graph is instantiated (`labkit.races()`
# holds the report too), and the fix is an edge between them, or a buffer of each branch's own.

# %%
with labkit.capture(origin) as cap:
    with labkit.fork(origin, side):
        add_one[GRID, BLOCK, origin](a)          # writes a, in place
        saxpy[GRID, BLOCK, side](b, 2.0, a, b)   # reads a: before the add, or after?
racing = cap.graph.instantiate()
if labkit.backend == "sim":
    r = labkit.races()[-1]                       # the report as data, for a program to use
    print(f"{r.first} and {r.second} race on the array passed as {r.buffer}: {r.kind}, "
          "between unordered "
          f"{'graph nodes' if r.where == 'graph' else 'streams'}")
else:
    print("on a GPU no tool reports this race: the graph just runs")
racing.close(); cap.graph.close()

# %% [markdown]
# Keep: branches of a graph run in no order; a buffer one branch writes is the other's only
# after an edge.
#
# ## 4. Overlap, measured
#
# Branches only help when the GPU has room to run them side by side. Our kernel here is
# `workloads.busy` launched with **one block of 32 threads**: it keeps one of the GPU's many
# SMs busy for a while and leaves the rest idle, like a small decode step of a small model.
#
# We run `BRANCHES` independent branches of `DEPTH` such kernels three ways:
#
# - **one stream**: everything in one queue, so every kernel waits for the one before it;
# - **several streams, eager**: each branch on its own stream, launched one kernel at a time
#   from Python;
# - **one graph**: the multi-stream version captured once and launched with one call.
#
# Each figure is the host time from the first launch until all work is done (synchronized).

# %%
BRANCHES, DEPTH, ITERS = 4, 2, 10_000      # ITERS: each kernel far outlasts its launch
streams = [origin, side, s2, s3][:BRANCHES]
bufs = [labkit.to_device(np.zeros(32, np.float32)) for _ in range(BRANCHES)]

def one_stream():
    for x in bufs:
        for _ in range(DEPTH):
            busy[1, 32, origin](x, ITERS)

def many_streams():
    with labkit.fork(origin, *streams[1:]):
        for s, x in zip(streams, bufs):
            for _ in range(DEPTH):
                busy[1, 32, s](x, ITERS)

with labkit.capture(origin) as cap:
    many_streams()
branches = cap.graph
graph_ex = branches.instantiate(upload_stream=origin)
print(branches)

def one_graph():
    graph_ex.launch(origin)


# %%
# The three versions compute the same thing: each buffer gets DEPTH * ITERS added.
for fn in (one_stream, many_streams, one_graph):
    for x in bufs:
        x.copy_to_device(np.zeros(32, np.float32))
    fn()
    origin.synchronize()
    assert all(np.all(x.copy_to_host() == DEPTH * ITERS) for x in bufs), fn.__name__
print("same results")

# %% tags=["key-figure"]
SZ = workloads.sizes()
runs = {}
for label, fn in [("eager, one stream", one_stream), ("eager, several streams", many_streams),
                  ("graph, several streams", one_graph)]:
    runs[label] = timing.measure(fn, sync=origin, repeat=SZ["repeat"], warmup=SZ["warmup"], label=label)
    print(f"{label:24} {runs[label].median:8.1f} µs")
plot.bars(runs, ylabel="time until all branches are done (µs)", title="Independent branches");

# %%
one, many, graph = (runs[k].median for k in runs)
print(f"several streams vs one stream: {one / many:.2f}x faster")
print(f"graph vs one stream          : {one / graph:.2f}x faster")
print(f"graph vs several streams     : {many / graph:.2f}x faster")
claims.streams_beat_one_stream(many, one)
claims.graph_beats_one_stream(graph, one)
claims.graph_beats_eager_streams(graph, many)

# %% [markdown]
# Timelines of one run each show *why*. They share one time axis, so a shorter timeline is a
# faster run; rows are named by the stream's role (the origin, side streams 1 to 3). Look for:
#
# - **one stream**: the kernels sit end to end on one row, so the total is about the sum of all
#   kernel times;
# - **several streams, eager**: kernels on different rows overlap, but each launch costs the CPU
#   a whole numba dispatch, so the later branches start late (the staircase); the grey `api`
#   spans on the CPU row are the fork's and the join's event calls;
# - **graph**: one launch on the CPU row (a sliver at its start: it is short), and the branches start together on the simulator. On a
#   real GPU they start a few µs apart, as the GPU's front end starts them one after another,
#   and they still overlap. The graph was launched on the origin, and runs its branches on
#   streams of its own: they are drawn as branches of the origin.

# %%
recs = []
for label, fn in [("eager, one stream", one_stream), ("eager, several streams", many_streams),
                  ("graph, several streams", one_graph)]:
    with timing.timeline() as rec:
        fn()
        origin.synchronize()
    recs.append((rec.timeline, label))
plot.timelines(recs, stream_names={origin: "origin", side: "side 1", s2: "side 2", s3: "side 3"});

# %% [markdown]
# Why the speedup: one block of 32 threads occupies a small part of one SM, so on one stream the
# GPU is almost idle for the whole run, one kernel at a time. On several streams the hardware
# runs kernels from different streams at once on different SMs, so the branches take about as
# long as one branch. Eagerly, though, the branches cannot start before Python has launched them;
# the graph submits every branch in one call, so it gets the overlap without paying each launch.
#
# On the simulator streams never contend for SMs, so the overlap there is ideal; on a real GPU it
# holds as long as the kernels together fit on the GPU (these do, by a wide margin). Kernels that
# fill the GPU on their own gain little from branches: there is no idle hardware to fill.
#
# Keep: branches pay when each kernel leaves most of the GPU idle; a graph gets their overlap
# without paying each launch from Python.

# %%
reference.note("04")

# %%
graph_ex.close(); branches.close(); four.close()

# %% [markdown]
# ## Summary
#
# - A side stream joins a capture by waiting on an event recorded on a capturing stream (fork),
#   and must be joined back by the origin waiting on an event recorded on it. Events add edges,
#   not nodes. `labkit.fork` does both ends.
# - An unjoined fork (904), a wait on an event from outside the capture (905) and ending on the
#   wrong stream (903, then 901 on the origin) all lose the graph; labkit always ends the capture,
#   so the streams are usable afterwards.
# - Independent small kernels overlap on several streams; a graph of branches gets that overlap
#   without the per-launch CPU cost of eager multi-stream code.
#
# ## Exercise: a diamond
#
# Capture this computation so that the two middle kernels can run at the same time:
# `x = 1`, then `u = 2x` and `v = 3x` (independent), then `w = u + v`. The starting code gives the
# right values but the wrong shape. Change it until the check passes.

# %% tags=["starter"]
# Starting point: it computes the right values, but is it a diamond?
x = labkit.to_device(np.zeros(N, np.float32))
u, v, w = (labkit.to_device(np.zeros(N, np.float32)) for _ in range(3))
zeros = labkit.to_device(np.zeros(N, np.float32))

with labkit.capture(origin) as cap:
    add_one[GRID, BLOCK, origin](x)                     # x = 1
    saxpy[GRID, BLOCK, origin](u, 2.0, x, zeros)        # u = 2x
    saxpy[GRID, BLOCK, origin](v, 3.0, x, zeros)        # v = 3x
    saxpy[GRID, BLOCK, origin](w, 1.0, u, v)            # w = u + v
diamond = cap.graph

# %% tags=["solution"]
x = labkit.to_device(np.zeros(N, np.float32))
u, v, w = (labkit.to_device(np.zeros(N, np.float32)) for _ in range(3))
zeros = labkit.to_device(np.zeros(N, np.float32))

with labkit.capture(origin) as cap:
    add_one[GRID, BLOCK, origin](x)                     # x = 1
    with labkit.fork(origin, side):                     # the two branches on two streams
        saxpy[GRID, BLOCK, origin](u, 2.0, x, zeros)    # u = 2x
        saxpy[GRID, BLOCK, side](v, 3.0, x, zeros)      # v = 3x
    saxpy[GRID, BLOCK, origin](w, 1.0, u, v)            # w = u + v, after the join
diamond = cap.graph

# %%
ex = diamond.instantiate()
ex.launch(origin)
origin.synchronize()
plot.graph_dag(diamond, title="Your graph");

# %% tags=["check"]
from labkit.course.exercises.nb04 import check_diamond
check_diamond(diamond, w.copy_to_host(), np.full(N, 5.0, np.float32))

# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 03 — Define, instantiate, launch: what a graph costs, and when it pays
#
# **Prerequisites:** notebooks 01 (launch costs) and 02 (capture).
#
# **Learning goals**
#
# 1. Know what instantiation does, what an executable graph freezes, and why editing a graph
#    after instantiating it changes nothing that runs.
# 2. Separate the costs of a graph's life (capture, instantiate, upload, launch) and see how each
#    grows with the graph's size, from 1 to 1000 nodes.
# 3. See why the first launch of a new executable is slower than the next ones, and what
#    `cudaGraphUpload` changes.
# 4. Compute when a graph has paid for its setup (break-even), and write that computation.
# 5. Build the same graph node by node with the explicit graph API and compare it with capture.
# 6. Know where graphs stop helping (a single long kernel, memory traffic between kernels), and
#    why a one-kernel graph still helps from Python.
#
# About 65 minutes.

# %%
import labkit            # first: it chooses the backend before numba.cuda is imported
import numpy as np
import matplotlib.pyplot as plt
from labkit import rt, check, timing, plot, explicit
from labkit.course import workloads, kernels_extra, reference
from labkit.course.claims import nb03 as claims

print("backend :", labkit.backend, f"({labkit.backend_reason})")
print("device  :", labkit.device_name())
print("figures :", labkit.provenance())

SZ = workloads.sizes()
REPEAT, WARMUP = SZ["repeat"], SZ["warmup"]
s = labkit.Stream()
x0 = np.zeros(1024, np.float32)
x = labkit.to_device(x0)

# %% [markdown]
# ## What instantiation does
#
# Notebook 02 recorded work into a graph and launched it. This notebook is about the step in
# between, and what each step costs. First, the two forms a CUDA graph takes. What capture or
# the explicit graph API returns is a `cudaGraph_t`: a **template**, a description of work. It
# holds nodes, the edges that order them, and for each kernel node its kernel, its launch shape
# (grid, block) and its arguments. Nothing runs from a template, and it can still be edited.
#
# `cudaGraphInstantiate` turns a template into a `cudaGraphExec_t`, an **executable graph**. It
# does the slow work once, so that each launch has little left to do:
#
# 1. it **validates** the graph: every node well formed, no cycle, nothing the GPU cannot run
#    (the runtime checks here what it did not check while the graph was built);
# 2. it **allocates** what the launches will need, on the host and on the device;
# 3. it **builds the launch work**: every node's kernel, launch shape and parameters, and the
#    order between nodes, in the form the GPU's front end consumes.
#
# CUDA's programming guide calls the result a snapshot of the template, set up ahead so that a
# launch has as little as possible left to do.
#
# ```text
#   capture, or the explicit API
#               │
#               ▼
#   ┌──────────────────────────────────────────┐
#   │ cudaGraph_t: the TEMPLATE                │
#   │ nodes and edges; each kernel node holds  │
#   │ kernel, grid, block and arguments        │
#   │ (array addresses, scalar values)         │
#   │ still editable                           │
#   └────────────────────┬─────────────────────┘
#                        │  cudaGraphInstantiate, once:
#                        │  validate, allocate, build the launch work
#                        ▼
#   ┌──────────────────────────────────────────┐
#   │ cudaGraphExec_t: the EXECUTABLE          │
#   │ a snapshot: nodes, edges, kernels, grid, │
#   │ block and arguments frozen               │
#   │ editing the template no longer reaches it│
#   └────────────────────┬─────────────────────┘
#                        │  cudaGraphUpload (optional, once), then
#                        │  cudaGraphLaunch, many times
#                        ▼
#   stream:  [ launch 1 ][ launch 2 ][ launch 3 ] ...   one after another
# ```
#
# **What is frozen.** The executable keeps the nodes and edges, each kernel, its grid and block,
# and each argument's *value* at capture: for an array, its **address** (not its contents); for
# a scalar, the number. So a graph reads whatever data sits at those addresses when it runs:
# writing new input into the same array before each launch is how you feed a graph. Pointing a
# node at another array, or changing a scalar, needs an update of the executable (notebook 05)
# or a new instantiation.
#
# Because the executable is a snapshot, an edit of the template reaches the GPU only through a
# new instantiation, and that has the cost measured below. The demo (notebook 02 showed the
# same with `scale`): capture `add_one(a)`, instantiate it, then edit the *template* so that its
# node adds to `b` instead (`Graph.set_kernel_args`, which calls CUDA's
# `cudaGraphKernelNodeSetParams` on the template's node). What to look for: the old executable
# still adds to `a`; only a new instantiation sees the edit.

# %%
a = labkit.to_device(np.zeros(1024, np.float32))
b = labkit.to_device(np.zeros(1024, np.float32))
with labkit.capture(s) as cap:
    workloads.add_one[4, 256, s](a)
template = cap.graph
old = template.instantiate()                                # a snapshot: add_one(a)
template.set_kernel_args(0, workloads.add_one, 4, 256, b)   # edit the template: add_one(b)

old.launch(s)
s.synchronize()
print("old executable launched:  a[0] =", a.copy_to_host()[0], "  b[0] =", b.copy_to_host()[0])
assert a.copy_to_host()[0] == 1 and b.copy_to_host()[0] == 0    # the edit did not reach it

new = template.instantiate()                                # a new snapshot sees the edit
new.launch(s)
s.synchronize()
print("new executable launched:  a[0] =", a.copy_to_host()[0], "  b[0] =", b.copy_to_host()[0])
assert a.copy_to_host()[0] == 1 and b.copy_to_host()[0] == 1
old.close(); new.close(); template.close()

# %% [markdown]
# **Launches of one executable run one after another.** An executable may run only once at a
# time: each launch waits for the previous launch of the same executable to finish, even when
# it is launched on another stream (CUDA's `cudaGraphLaunch` documentation says so). Each
# instantiation makes its own executable, with its own resources: two executables of the same
# template are independent and can overlap. The demo: a
# graph of one long kernel that keeps one SM busy, launched on two streams, first as one
# executable, then as two. What to look for: one executable takes about twice as long as two,
# and in the timelines (one time axis) its two launches sit end to end, the two executables'
# side by side.
#
# Side by side, the two executables add to the same buffer at the same time, with nothing
# ordering them: a *data race* (on a GPU some additions are lost), and on the simulator you
# see it reported as a `RaceWarning` naming both kernels and the buffer. Only time matters in
# this demo; a real program gives each executable its own buffer, or orders them
# ([notebook 04](04_multi_stream.ipynb) shows how).

# %%
xb = labkit.to_device(np.zeros(32, np.float32))
with labkit.capture(s) as cap:
    workloads.busy[1, 32, s](xb, 5_000)          # one block of 32 threads: room for another
long_graph = cap.graph
s2 = labkit.Stream()
one = long_graph.instantiate(upload_stream=s)
other = long_graph.instantiate(upload_stream=s2)
s.synchronize(); s2.synchronize()

def launch_on_both(second):
    """``one`` on stream 1, then ``second`` on stream 2; both streams waited for."""
    one.launch(s)
    second.launch(s2)
    s.synchronize(); s2.synchronize()

cases = {"one executable on two streams": one, "two executables of one graph": other}
times, recs = {}, []
for label, second in cases.items():
    times[label] = timing.measure(lambda: launch_on_both(second), warmup=1, repeat=5).median
    with timing.timeline() as rec:
        launch_on_both(second)
    recs.append((rec.timeline, label))
    print(f"{label:30} {times[label]:7.1f} µs until both launches are done")
plot.timelines(recs, stream_names={s: "stream 1", s2: "stream 2"})
plt.show()
claims.one_launch_at_a_time(*times.values())
one.close(); other.close(); long_graph.close()

# %% [markdown]
# Keep: a template is a description you may edit; an executable is a frozen snapshot of it,
# built once by instantiation, and launched as often as you like, one launch at a time.
#
# ## The phases, separated
#
# What does each step cost, and how does it grow with the graph? `timing.graph_phases(record,
# stream)` warms `record` up eagerly, then, several times: captures it, instantiates it, launches
# the fresh executable once (first launch), instantiates a second one and uploads it before its
# first launch, and finally times steady launches. Each phase is timed on its own.
#
# The launch phases include a synchronize: "steady launch + sync" is the time until the GPU has
# *run* the graph, so it grows with the graph's GPU time (1000 kernels take a while to run).
# "launch call alone" times the same `cudaGraphLaunch` call without the wait: what the host pays
# to submit the graph.
#
# What to look for: capture from Python costs about as much as running the same launches eagerly
# (numba still prepares every launch; the break-even below times those eager launches, so you can
# compare); instantiate grows with the number of nodes; the launch
# call alone is the cheap part, a few µs, and grows far more slowly than the graph.

# %%
SIZES = [1, 10, 100, 200, 1000]
phases = {}
for n in SIZES:
    phases[n] = timing.graph_phases(lambda st, n=n: workloads.chain(n, x, st), s, repeat=3, steady=10)

columns = {"capture": "capture", "instantiate": "instantiate", "upload": "upload",
           "first_launch": "first", "uploaded_first_launch": "after upload",
           "steady_launch": "steady", "launch_call": "call alone"}
print("µs per phase (first, after upload and steady: a launch with its synchronize)")
print(f"{'nodes':>5}" + "".join(f"{c:>13}" for c in columns.values()))
for n in SIZES:
    print(f"{n:5d}" + "".join(f"{phases[n][k].median:13.1f}" for k in columns))
print("instantiate per node at 1000 nodes:", f"{phases[1000]['instantiate'].median / 1000:.2f} µs")

plot.phase_costs(SIZES, {
    "capture": [phases[n]["capture"] for n in SIZES],
    "instantiate": [phases[n]["instantiate"] for n in SIZES],
    "upload": [phases[n]["upload"] for n in SIZES],
    "first launch": [phases[n]["first_launch"] for n in SIZES],
    "steady launch + sync": [phases[n]["steady_launch"] for n in SIZES],
    "launch call alone": [phases[n]["launch_call"] for n in SIZES],
}, title="add_one chain: the phases of a graph's life (launches + sync, except the call alone)")
plt.show()
claims.instantiate_grows_with_nodes(phases[1]["instantiate"].median, phases[1000]["instantiate"].median)
claims.steady_launch_below_capture(phases[1000]["steady_launch"].median, phases[1000]["capture"].median)

# %% [markdown]
# Keep: the setup (capture, instantiate, upload) grows with the graph and is paid once; the
# launch call stays a few µs. Setup costs also move from run to run with the host's speed, so
# compare them within one run.
#
# ## First launch = upload + launch
#
# An executable graph must be copied to the device before it can run. `cudaGraphLaunch` of a fresh
# executable does that itself, so the first launch costs more than the next. `cudaGraphUpload`
# (`GraphExec.upload(stream)`, or `instantiate(upload_stream=...)`) does it ahead of time, off the
# critical path of the first request. What to look for: the first launch, measured as one call,
# about as tall as an upload and the launch after it stacked; and that launch close to a steady
# one. All these launches include the synchronize after them (the GPU running the 1000 kernels
# is part of each bar), so compare them with each other, not with the launch call alone.

# %%
big = phases[1000]
first, up, after_up, steady = (big[k].median for k in ("first_launch", "upload",
                                                       "uploaded_first_launch", "steady_launch"))
print(f"first launch, one call   {first:9.1f} µs")
print(f"upload, then launch      {up:9.1f} + {after_up:.1f} = {up + after_up:.1f} µs")
print(f"steady launch            {steady:9.1f} µs")
plot.bars({"first launch": first, "upload, then launch": {"upload": up, "launch": after_up},
           "steady launch": steady},
          ylabel="time until the GPU is done (µs)", title="1000-node graph: the first launch uploads it")
plt.show()
claims.first_launch_costs_more(first, steady)
claims.upload_takes_the_first_launchs_extra(after_up, first)

# %% [markdown]
# ## Break-even
#
# A graph is worth it once its one-off setup has been paid back by cheaper iterations. After
# n iterations eagerly you have paid `n × eager`; with a graph, `setup + n × graph`. The graph
# has paid off once `n ≥ setup / (eager - graph)`. For the K = 200 chain, setup = capture +
# instantiate + upload, measured above; an eager iteration is timed with its synchronize, like
# the steady graph launch.

# %% tags=["key-figure"]
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
claims.pays_off_within_10(be, setup_us, eager_iter_us - graph_iter_us)

# %% [markdown]
# Keep: for a chain of tiny kernels the setup is paid back within a few iterations, because
# each iteration saves a whole chain of numba launches.
#
# ## Built node by node: the explicit graph API
#
# Instead of capturing, a graph can be built directly: `cudaGraphCreate`, then one `cudaGraphAdd*Node`
# call per node, each naming the nodes it depends on. `labkit.explicit` wraps this. Empty and
# memcpy nodes go straight through `labkit.rt`. A kernel node needs a *parameter block*: the
# kernel's function handle, grid, block and a pointer to each argument. `explicit.add_kernel_node`
# builds that block once (`kernel.params(grid, block, *args)` does the same by hand, for reuse) and
# passes it to `cudaGraphAddKernelNode`, the same block a prepared launch uses. Here: 5 `add_one`
# nodes in a chain, then a memcpy node copying the result to a pinned host buffer.

# %%
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

# %% [markdown]
# Now the same 100-node chain both ways. What must agree: the same nodes and edges, the same
# instantiate and launch cost, the same result. The build differs. Capture goes through numba's
# whole launch path once per kernel (most of it Python dispatch) and the driver records each
# launch as a node. The explicit build reuses one parameter block and makes one driver call per
# node. What to look for: the explicit build several times cheaper than the capture, and the
# two graphs then equal in every way.

# %%
NE = 100
xa, xb = labkit.to_device(x0), labkit.to_device(x0)

def captured_chain(buf):
    with labkit.capture(s) as cap:
        workloads.chain(NE, buf, s)
    return cap.graph


def build_cost(build, repeat=5):
    """Median host µs of ``build()`` (each graph closed after), and one more graph to keep."""
    t = timing.measure(lambda: build().close(), repeat=repeat, warmup=1)
    return t.median, build()


t_build, g_exp = build_cost(lambda: explicit.chain_graph(workloads.add_one, NE, 4, 256, xa))
t_capture, g_cap = build_cost(lambda: captured_chain(xb))
assert g_exp.node_kinds() == g_cap.node_kinds() and sorted(g_exp.edges) == sorted(g_cap.edges)

res = {}
for name, g in (("explicit", g_exp), ("captured", g_cap)):
    t_inst = timing.measure(lambda: g.instantiate().close(), repeat=5, warmup=1).median
    ex = g.instantiate()
    ex.upload(s)
    launch = timing.measure(lambda: ex.launch(s), sync=s, warmup=WARMUP, repeat=REPEAT)
    res[name] = (t_inst, launch.median)
    ex.close()
np.testing.assert_array_equal(xa.copy_to_host(), xb.copy_to_host())
print(f"build: explicit {t_build:.0f} µs, capture {t_capture:.0f} µs ({t_capture / t_build:.1f}x)")
for name, (ti, tl) in res.items():
    print(f"{name:9} instantiate {ti:7.1f} µs   steady launch {tl:7.1f} µs")
claims.explicit_build_cheaper(t_build, t_capture)
claims.same_graph_same_launch(res["explicit"][1], res["captured"][1])
g_exp.close(); g_cap.close()

# %% [markdown]
# Keep: the explicit API buys two things from Python: control of the shape (any DAG, without
# streams and events), and a build without numba's dispatch. Capture stays the easy way when the
# work is already written as launches on a stream.
#
# ## Where graphs stop helping
#
# A graph removes *launch* cost. Two cases where that is not what limits you.
#
# ### A single long kernel, and a one-kernel graph
#
# One long `busy` kernel (about 300 µs), and one tiny `add_one`, each launched eagerly and as a
# one-node graph. What to look for: for the long kernel the two are nearly equal, since the
# launch is a small part of the time: this is where a graph stops helping.
#
# The tiny kernel is a different story, and it is about Python, not about graphs. A one-node
# graph saves one launch's host cost per iteration. From Python that launch is numba's dispatch
# (typing the arguments, flattening them, building the launch), while `cudaGraphLaunch` of one
# node is a single driver call, so the graph comes out several times faster: the line prints by
# how much. From C++, where an eager launch is itself a single `cuLaunchKernel` call, a one-node
# graph has little to remove. `labkit.prepare` (notebook 01) gets most of the same saving from
# Python without a graph. And the graph costs a capture and an instantiation first.

# %%
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
    print(f"{name:16} eager {e:6.1f} µs   graph {gr:6.1f} µs   saves {e - gr:5.1f} µs"
          f"   (eager / graph {e / gr:.1f}x)")
print("setup of a one-node graph (capture + instantiate):",
      f"{phases[1]['capture'].median + phases[1]['instantiate'].median:.0f} µs")
claims.long_kernel_graph_barely_helps(*rows["one long kernel"])
claims.tiny_kernel_graph_helps(*rows["one tiny kernel"])

# %% [markdown]
# ### Kernel fusion: the graph removes launches, not memory round trips
#
# K = 50 `add_one` kernels over a large array (64 MiB): each kernel reads the whole array from
# memory and writes it back, so together they move the array through memory 50 times. A graph
# runs them back to back, but each still does its round trip. A *fused* kernel,
# `kernels_extra.add_k(x, K)`, reads each element once, adds 1 K times in a register, and writes
# it once: one round trip.
#
# What to look for: the graph close to eager here (over 64 MiB each kernel runs longer than its
# launch, so the launches were already hidden), and the fused kernel far below both. The last
# column divides the bytes each version moves by its time: every version is limited by memory
# bandwidth, and the fused one simply has 50 times less to move. (Its time also holds one
# launch, a sizeable part of so short a time.)

# %%
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
moved = [2 * KF * xf0.nbytes, 2 * KF * xf0.nbytes, 2 * xf0.nbytes]     # bytes read + written
for (k, v), nbytes in zip(t.items(), moved):
    print(f"{k:18} {v.median:9.1f} µs   moves {nbytes / 2**20:6.0f} MiB   "
          f"{nbytes / v.median / 1e6:5.2f} TB/s")
plot.bars(t, ylabel="time per iteration (µs)", log=True,
          title=f"{KF} additions over {xf0.nbytes / 2**20:.0f} MiB")
plt.show()
te, tg, tf = (v.median for v in t.values())
claims.graph_close_to_eager(tg, te)
claims.fused_far_below_graph(tf, tg)
ex_f.close()

# %% [markdown]
# Keep: a graph removes launches; only fusing kernels removes the memory traffic between them.
#
# **How the fused loop is written matters.** `add_k` adds `np.float32(1.0)` in a `while` loop.
# Its first version, `for _ in range(k): v += 1.0`, ran several times slower on a real GPU than
# its memory traffic allows (the reference note below has the figure), for two reasons read in
# its machine code: numba types `v += 1.0` on float32 data as a **float64** addition (a Python
# float is a double), and it counts a `range` loop with 64-bit integers and sign checks. That
# made each of the 50 steps about six instructions. The chain of 50 dependent additions is not
# the problem: with 16 M threads the GPU always has other warps ready while one waits. The
# *number* of instructions is: 16 M threads × 50 steps × six instructions took the GPU longer
# to execute than moving the array took. The `while` loop on float32
# compiles to about one instruction a step. The simulator charges a kernel for the memory it
# moves, not for its instructions, so it cannot show this difference: on a GPU, a profiler can.
#
# ## Summary
#
# * A graph is a template; instantiation validates it, allocates what it needs and builds its
#   launch work once, into an executable: a frozen snapshot (topology, kernels, launch shapes,
#   argument addresses and values) that later edits of the template do not reach. Launches of
#   one executable run one at a time.
# * A graph has a one-off setup (capture, instantiate, upload) that grows with its size, and a
#   cheap steady launch.
# * The first launch of a fresh executable includes the upload; `upload` moves it off the first
#   request.
# * Break-even = setup / saving per iteration; for a chain of tiny kernels it comes within a few
#   iterations.
# * Capture and explicit construction give the same graph. The explicit API controls the shape,
#   and from Python it builds several times faster, since it skips numba's launch path.
# * Graphs remove launch cost. For long kernels there is little to remove; for one tiny kernel
#   there is one launch to save, which from Python (numba's dispatch) is worth several times the
#   graph launch; and the memory traffic between small kernels is only removed by fusing them.
# * A launch timed with its synchronize measures the GPU's work too: time the launch call alone to
#   see what the host pays.

# %%
reference.note("03")

# %% [markdown]
# ## Exercise: when does a graph pay off?
#
# Write `pays_off_after(ph, eager_us)`: given a graph's phases `ph` (a dict like `phases[10]`,
# whose values have a `.median`) and the cost of one eager iteration `eager_us`, return after how
# many iterations the graph has paid for its whole setup, or `None` if it never does. The
# starting code misses part of the setup and divides by the wrong quantity.
#
# `chain_costs()` measures a 10-kernel chain's phases and its eager iteration once, on this
# machine; your cell prints what your function makes of them, and `check_pays_off` judges your
# function on the same figures, then on made-up costs. The break-even itself or the whole number
# of iterations are both accepted.

# %% tags=["starter"]
from labkit.course.exercises.nb03 import chain_costs


def pays_off_after(ph, eager_us):
    setup = ph["instantiate"].median          # is that all the setup?
    return setup / eager_us                   # is a graph iteration free?


ph10, eager10 = chain_costs()        # the chain the check judges your function on
print(f"10-kernel chain: capture + instantiate + upload "
      f"{sum(ph10[k].median for k in ('capture', 'instantiate', 'upload')):.0f} µs, "
      f"graph iteration {ph10['steady_launch'].median:.1f} µs, eager iteration {eager10:.1f} µs")
print("its graph pays off after", pays_off_after(ph10, eager10), "iterations")

# %% tags=["solution"]
import math
from labkit.course.exercises.nb03 import chain_costs


def pays_off_after(ph, eager_us):
    setup = ph["capture"].median + ph["instantiate"].median + ph["upload"].median
    saving = eager_us - ph["steady_launch"].median    # a launch + sync, like the eager iteration
    if saving <= 0:
        return None
    return math.ceil(setup / saving)


ph10, eager10 = chain_costs()        # the chain the check judges your function on
print(f"10-kernel chain: capture + instantiate + upload "
      f"{sum(ph10[k].median for k in ('capture', 'instantiate', 'upload')):.0f} µs, "
      f"graph iteration {ph10['steady_launch'].median:.1f} µs, eager iteration {eager10:.1f} µs")
print("its graph pays off after", pays_off_after(ph10, eager10), "iterations")

# %% tags=["check"]
from labkit.course.exercises.nb03 import check_pays_off
check_pays_off(pays_off_after)

# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/OWNER/cuda-graphs-lab/blob/main/notebooks/03_define_instantiate_launch.ipynb) In Colab, run `%pip install -q "cuda-graphs-lab[cu12] @ git+https://github.com/OWNER/cuda-graphs-lab"` first.
#
# # 03 — Define, instantiate, launch: what a graph costs, and when it pays
#
# **Prerequisites:** notebooks 01 (launch costs) and 02 (capture).
#
# **Learning goals**
#
# 1. Separate the costs of a graph's life (capture, instantiate, upload, launch) and see how each
#    grows with the graph's size, from 1 to 1000 nodes.
# 2. See why the first launch of a new executable is slower than the next ones, and what
#    `cudaGraphUpload` changes.
# 3. Compute and plot when a graph has paid for its setup (break-even).
# 4. Build the same graph node by node with the explicit graph API and compare it with capture.
# 5. Know where graphs stop helping (a single long kernel, kernel fusion), and why a one-kernel
#    graph still helps from Python.
#
# About 30 minutes.

# %%
import labkit            # first: it chooses the backend before numba.cuda is imported
import numpy as np
import matplotlib.pyplot as plt
from labkit import rt, check, timing, plot
from labkit.course import workloads

print("backend :", labkit.backend, f"({labkit.backend_reason})")
print("device  :", labkit.device_name())
print("figures :", labkit.provenance())

from labkit import explicit
from labkit.course import kernels_extra

SZ = workloads.sizes()
REPEAT, WARMUP = SZ["repeat"], SZ["warmup"]
s = labkit.Stream()
x0 = np.zeros(1024, np.float32)
x = labkit.to_device(x0)

# %% [markdown]
# ## The phases, separated
#
# `timing.graph_phases(record, stream)` warms `record` up eagerly, then, several times: captures it,
# instantiates it, launches the fresh executable once (first launch), instantiates a second one
# and uploads it before its first launch, and finally times steady launches. Each phase is timed
# on its own. The launch phases include a synchronize: "steady launch + sync" is the time until
# the GPU has *run* the graph, so it grows with the graph's GPU time (1000 kernels take a while
# to run). "launch call alone" times the same `cudaGraphLaunch` call without the wait: what the
# host pays to submit the graph.
#
# What to look for: capture from Python costs about as much as running the same launches eagerly
# (numba still prepares every launch); instantiate grows with the number of nodes; the launch
# call alone is the cheap part, a few µs, and grows far more slowly than the graph.

# %%
SIZES = [1, 10, 100, 200, 1000]
phases = {}
for n in SIZES:
    phases[n] = timing.graph_phases(lambda st, n=n: workloads.chain(n, x, st), s, repeat=3, steady=10)

names = ["capture", "instantiate", "upload", "first_launch", "uploaded_first_launch", "steady_launch",
         "launch_call"]
print(f"{'nodes':>5} " + " ".join(f"{n:>22}" for n in names))
for n in SIZES:
    print(f"{n:5d} " + " ".join(f"{phases[n][k].median:19.1f} µs" for k in names))
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
i1, i1000 = phases[1]["instantiate"].median, phases[1000]["instantiate"].median
labkit.expect(i1000 > 5 * i1, "instantiating 1000 nodes costs over 5× instantiating one",
              measured=f"{i1:.1f} µs for 1 node, {i1000:.1f} µs for 1000",
              why="this driver's fixed cost per instantiation is large next to its cost per node",
              look="the instantiate curve")
labkit.expect(phases[1000]["steady_launch"].median < phases[1000]["capture"].median,
              "at 1000 nodes a steady launch is cheaper than capturing the same work",
              measured=f"steady launch {phases[1000]['steady_launch'].median:.1f} µs, capture "
                       f"{phases[1000]['capture'].median:.1f} µs",
              why="on this host a capture records launches unusually fast, or the launch was stalled",
              look="the capture and steady launch curves")

# %% [markdown]
# **How far to trust one instantiate figure.** On the H200 the 1000-node instantiation read
# 1,300 µs in the calibration's fastest round and 2,000–3,400 µs in other runs the same day: the
# host's speed drifts (notebook 06), and the driver's work depends on what it already holds.
# Notebook 05 times it again, each new executable closed after its timed call, and says why:
# with several other large executables kept alive, the H200 instantiated the same chain 3–4×
# slower. The setups here are medians of three, each taken right after the previous executables
# were torn down; notebook 06 times the same one-node capture, instantiation and launch in a
# tight loop and gets less. Quote setup costs as a range, from several runs.

# %% [markdown]
# ## First launch, upload, steady launch
#
# An executable graph must be copied to the device before it can run. `cudaGraphLaunch` of a fresh
# executable does that implicitly, so the first launch costs more than the next; `cudaGraphUpload`
# (`GraphExec.upload(stream)`, or `instantiate(upload_stream=...)`) does it ahead of time, off the
# critical path of the first request. What to look for: the first launch above the steady one, and
# the launch that follows an upload close to the steady one. All three launches here include the
# synchronize after them (the GPU running the 1000 kernels is part of each bar), so compare them
# with each other, not with the launch call alone.

# %%
big = phases[1000]
vals = {"first launch": big["first_launch"], "upload": big["upload"],
        "then launch": big["uploaded_first_launch"], "steady launch": big["steady_launch"]}
for k, v in vals.items():
    print(f"{k:14} {v.median:9.1f} µs")
plot.bars(vals, ylabel="time until the GPU is done (µs)",
          title="1000-node graph: first launch vs upload + launch vs steady (each + sync)")
plt.show()
labkit.expect(big["first_launch"].median > big["steady_launch"].median,
              "a 1000-node graph's first launch costs more than a steady one",
              measured=f"first {big['first_launch'].median:.1f} µs, steady {big['steady_launch'].median:.1f} µs",
              why="this driver uploads the executable at instantiation already, or a busy host "
                  "stalled a steady launch", look="the bar chart")
labkit.expect(big["uploaded_first_launch"].median < big["first_launch"].median,
              "after an upload, the first launch is cheaper than a first launch without one",
              measured=f"after upload {big['uploaded_first_launch'].median:.1f} µs, without "
                       f"{big['first_launch'].median:.1f} µs",
              why="this driver uploads the executable at instantiation already, or a busy host "
                  "stalled the launch", look="the bar chart")

# %% [markdown]
# ## Break-even
#
# A graph is worth it once its one-off setup has been paid back by cheaper iterations:
# `setup / (eager iteration - graph iteration)`. For the K = 200 chain, setup = capture +
# instantiate + upload, measured above.

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
labkit.expect(be is not None and be < 10, f"a {K}-kernel graph pays off within 10 iterations",
              measured=f"break-even after {be if be is None else round(be, 2)} iterations "
                       f"(setup {setup_us:.0f} µs, saving {eager_iter_us - graph_iter_us:.0f} µs per iteration)",
              why="your GPU's kernels take about as long as a launch here, so each iteration "
                  "saves little and the setup takes longer to pay back",
              look="the amortization plot")

# %% [markdown]
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
# launch path once per kernel (about 19 µs each on the H200, most of it Python dispatch) and the
# driver records each launch as a node. The explicit build reuses one parameter block and makes one
# driver call per node: on the H200 `python -m labkit bench` built a 200-node chain explicitly in
# 340–390 µs against 2,700–3,200 µs to capture it, and the single builds timed below (medians of a
# few) point the same way. So the explicit API buys two things from Python:
# control of the shape (any DAG, without streams and events), and a build without numba's dispatch.
# Capture stays the easy way when the work is already written as launches on a stream.

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
print(f"build: explicit {t_build:.0f} µs, capture {t_capture:.0f} µs")
for name, (ti, tl) in res.items():
    print(f"{name:9} instantiate {ti:7.1f} µs   steady launch {tl:7.1f} µs")
ratio = res["explicit"][1] / res["captured"][1]
labkit.expect(0.5 < ratio < 2, "the same graph launches at the same cost (within 2×) however it was built",
              measured=f"explicit {res['explicit'][1]:.1f} µs, captured {res['captured'][1]:.1f} µs "
                       f"per launch ({ratio:.2f}×)",
              why="a busy host stalled one of the two measurements", look="the two launch times")
g_exp.close(); g_cap.close()

# %% [markdown]
# ## Where graphs stop helping
#
# A graph removes *launch* cost. Three cases where that is not what limits you.
#
# ### A single long kernel, and a one-kernel graph
#
# One long `busy` kernel (about 300 µs), and one tiny `add_one`, each launched eagerly and as a
# one-node graph. What to look for: for the long kernel the two are nearly equal, since the launch
# is a small part of the time: this is where a graph stops helping.
#
# The tiny kernel is a different story, and it is about Python, not about graphs. A one-node
# graph saves one launch's host cost per iteration. From Python that launch is numba's dispatch
# (typing the arguments, flattening them, building the launch: about 15-20 µs on the H200),
# while `cudaGraphLaunch` of one node costs a few µs, so the graph comes out several times faster
# (about 4× on the H200: 3.9–4.3× over runs). From C++, where an eager launch is one
# `cuLaunchKernel` of a few µs, the same one-node graph would be about 1×: it has nothing to remove. `labkit.prepare` (notebook 01)
# gets most of the same saving from Python without a graph. And the graph costs a capture and an
# instantiation first.

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
    print(f"{name:16} eager {e:8.1f} µs   graph {gr:8.1f} µs   saving {e - gr:6.1f} µs per iteration"
          f"   (eager / graph {e / gr:.1f}x)")
e, gr = rows["one long kernel"]
labkit.expect(abs(e - gr) < 0.25 * e, "for one ~300 µs kernel a graph changes the time by under 25%",
              measured=f"eager {e:.1f} µs, graph {gr:.1f} µs",
              why="a launch on this host costs a sizeable part of 300 µs (a very slow or busy host)",
              look="the 'one long kernel' line")
print("setup of a one-node graph (capture + instantiate):",
      f"{phases[1]['capture'].median + phases[1]['instantiate'].median:.0f} µs")

# %% [markdown]
# ### Kernel fusion: the graph removes launches, not memory round trips
#
# K = 50 `add_one` kernels over a large array each read the whole array from memory and write it
# back. A graph runs them back to back but each still does its round trip. A *fused* kernel,
# `kernels_extra.add_k(x, K)`, reads each element once, adds 1 K times in a register, and writes it
# once. What to look for: the graph close to eager here (over 64 MiB each kernel runs longer than
# its launch, so the launches are already hidden), and the fused kernel far below both.
#
# The fused kernel is not limited by memory, though. On the H200 it moved its 128 MiB at about
# 0.44 TB/s, a tenth of the memory's bandwidth: its 50 dependent additions per element now take
# longer than its single round trip. The simulator models every kernel as memory-bound, so it
# draws the fused kernel faster than the GPU runs it; the conclusion (fusion wins by far, a graph
# does not) is the same on both.

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
mb = xf0.nbytes / 2**20
print(f"array {mb:.0f} MiB: unfused moves {2 * KF * mb:.0f} MiB through memory, fused {2 * mb:.0f} MiB")
for k, v in t.items():
    print(f"{k:18} {v.median:9.1f} µs")
plot.bars(t, ylabel="time per iteration (µs)", log=True, title=f"{KF} additions over {mb:.0f} MiB")
plt.show()
te, tg, tf = (v.median for v in t.values())
labkit.expect(tg <= 1.1 * te, "the graph is no slower than eager (within 10%)",
              measured=f"graph {tg:.1f} µs, eager {te:.1f} µs",
              why="a busy host stalled the graph's measurement", look="the bar chart")
labkit.expect(5 * tf < tg, "the fused kernel takes under a fifth of the graph of small kernels",
              measured=f"fused {tf:.1f} µs, graph {tg:.1f} µs",
              why="your GPU's memory is fast next to its launch and kernel overheads, so the saved "
                  "round trips matter less", look="the bar chart")
ex_f.close()

# %% [markdown]
# ## Summary
#
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
#   graph launch and from C++ about nothing; and the memory traffic between small kernels is only
#   removed by fusing them.
# * A launch timed with its synchronize measures the GPU's work too: time the launch call alone to
#   see what the host pays.
#
# ## Exercise
#
# For the 10-kernel chain (`phases[10]`), compute after how many iterations its graph pays off,
# counting the whole setup. The starting code misses part of the setup and divides by the wrong
# quantity. `check_breakeven` compares your number with the right one.

# %% tags=["starter"]
ph = phases[10]
setup10 = ph["instantiate"].median           # is that all the setup?
eager10 = timing.measure(lambda: workloads.chain(10, x, s), sync=s, warmup=WARMUP, repeat=REPEAT).median
graph10 = ph["steady_launch"].median
my_breakeven = setup10 / eager10
print(f"break-even after {my_breakeven:.2f} iterations")

# %% tags=["solution"]
ph = phases[10]
setup10 = ph["capture"].median + ph["instantiate"].median + ph["upload"].median
eager10 = timing.measure(lambda: workloads.chain(10, x, s), sync=s, warmup=WARMUP, repeat=REPEAT).median
graph10 = ph["steady_launch"].median
my_breakeven = setup10 / (eager10 - graph10)
print(f"break-even after {my_breakeven:.2f} iterations")

# %% tags=["check"]
from labkit.course.exercises.nb03 import check_breakeven
ph = phases[10]
check_breakeven(my_breakeven, ph["capture"].median + ph["instantiate"].median + ph["upload"].median,
                eager10, graph10)

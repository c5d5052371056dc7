# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/OWNER/cuda-graphs-lab/blob/main/notebooks/06_measuring.ipynb) In Colab, run `%pip install -q "cuda-graphs-lab[cu12] @ git+https://github.com/OWNER/cuda-graphs-lab"` first.
#
# # 06 — Measuring in practice
#
# **Prerequisites:** notebooks 01–05 (eager launches, capture, instantiation and amortization,
# multi-stream graphs, graph update).
#
# **You will learn to**
# - keep warm-up (JIT compilation, module load, allocation, graph upload) out of steady-state figures;
# - drive a seeded request loop and report p50/p95/p99 latency (the latency that 50 %, 95 %, 99 % of
#   requests stay under), throughput and CPU utilization, eager against graph;
# - find and remove synchronizations that cost time and buy nothing;
# - compare two versions in alternating rounds, so the host's drift cannot pick the winner;
# - recognise the workloads where a graph does **not** pay, and decide with a short checklist.

# %%
import numpy as np
import labkit
from labkit import rt, check, timing, plot
from labkit.course import workloads
from labkit.course.workloads import add_one, busy, chain
from numba import cuda

print("backend:", labkit.backend, "|", labkit.device_name(), "|", labkit.provenance())
SZ = workloads.sizes()
stream = labkit.Stream()


# %% [markdown]
# ## 1. Warm-up is not steady state
#
# The first call of a kernel pays for things later calls do not: numba compiles the kernel (JIT)
# and the driver loads the module; the first request of a server also allocates its buffers; a
# graph that was never uploaded pays the upload at its first launch. We time the first call and
# the later ones separately with `labkit.host_us`.
#
# **Honest note on the simulator:** it does not model numba's JIT or module loading (the
# kernel's Python is not compiled there), so on `sim` the first and later kernel calls cost the
# same. What it *does* model is `cudaMalloc` and a graph's first-launch upload. On a GPU all of
# it is measured. The kernel below is new to this process, so on a GPU its first call includes
# the compilation.

# %%
def _bump_ref(grid, block, x):
    x[: min(x.size, grid[0] * block[0])] += 2.0

@labkit.kernel(reference=_bump_ref)
def bump(x):                       # defined here, so nothing has compiled it yet
    i = cuda.grid(1)
    if i < x.size:
        x[i] += 2.0

def request(x):
    for _ in range(10):
        bump[4, 256, stream](x)
    stream.synchronize()

x = labkit.to_device(np.zeros(1024, np.float32))
t0 = labkit.host_us(); request(x); first_us = labkit.host_us() - t0
steady = timing.measure(lambda: request(x), warmup=0, repeat=SZ["repeat"], label="steady")
print(f"first request: {first_us:.0f} µs   steady median: {steady.median:.0f} µs "
      f"(ratio {first_us / steady.median:.1f}x)")
if labkit.backend == "cuda":
    labkit.expect(first_us > 5 * steady.median, "the first request (with the JIT) costs over 5× a steady one",
                  measured=f"first {first_us:.0f} µs, steady {steady.median:.0f} µs",
                  why="the kernel was already compiled (numba's cache), or a busy host slowed the "
                      "steady requests", look="the two times printed above")
else:
    print("simulator: JIT and module load are not modelled, so the ratio is about 1 here")


# %% [markdown]
# Allocation and graph upload are modelled on both backends. `cudaMalloc` of a workspace per
# request, against reusing one allocated at start-up; and a graph's first launch without
# `upload()`, against an uploaded first launch and the steady launch (`timing.graph_phases`).

# %%
def malloc_free():
    p = check(rt.cudaMalloc(1 << 20)); check(rt.cudaFree(p))

alloc = timing.measure(malloc_free, warmup=1, repeat=SZ["repeat"], label="cudaMalloc+cudaFree 1 MiB")
ph = timing.graph_phases(lambda s: chain(50, x, s), stream, repeat=3, steady=10)
warm = {"first kernel request": first_us, "steady kernel request": steady,
        "cudaMalloc+Free 1 MiB": alloc, "graph 1st launch (no upload)": ph["first_launch"],
        "graph 1st launch (uploaded)": ph["uploaded_first_launch"], "graph steady launch": ph["steady_launch"]}
for k, v in warm.items():
    print(f"{k:32s} {getattr(v, 'median', v):9.1f} µs")
labkit.expect(ph["first_launch"].median > ph["steady_launch"].median,
              "a graph's first launch (it pays the upload) costs more than a steady one",
              measured=f"first {ph['first_launch'].median:.1f} µs, steady {ph['steady_launch'].median:.1f} µs",
              why="this driver uploads at instantiation already, or a busy host stalled a steady launch",
              look="the bar chart")
plot.bars(warm, ylabel="host time (µs)", log=True, title="06-1 Warm-up costs vs steady state");

# %% [markdown]
# **Rule:** run every path once (better: a few times) before the clock starts, allocate at
# start-up, and `upload()` graphs ahead of their first real use. `timing.measure` does the
# warm-up for you (`warmup=`).

# %% [markdown]
# ## 2. A request loop: latency percentiles, throughput, CPU
#
# A server sees requests arriving at random times with random sizes. We draw them from a seeded
# generator: sizes are 16, 32, 64 or 128 short kernels (think: a batch's sequence-length bucket),
# arrivals are a Poisson process whose rate loads the *eager* server to about 70 %.
#
# Each request is served once, for real, and its service time measured; the arrivals are then
# replayed against those service times as a single-worker FIFO queue (first in, first out), so a
# request's latency is its waiting time plus its service time. The latencies are therefore a
# *model* fed with measured service times, and figure 06-2's title says so. For the graph server
# one graph per size bucket is captured and uploaded at start-up (warm-up, section 1).

# %%
rng = np.random.default_rng(2024)
N_REQ = SZ["requests"]
BUCKETS = [16, 32, 64, 128]
sizes = rng.choice(BUCKETS, size=N_REQ, p=[0.4, 0.3, 0.2, 0.1])
xs = labkit.to_device(np.zeros(1024, np.float32))

execs = {}
for k in BUCKETS:
    with labkit.capture(stream) as cap:
        chain(k, xs, stream)
    execs[k] = cap.graph.instantiate(upload_stream=stream)
chain(1, xs, stream); stream.synchronize()          # warm-up of the eager path

def serve(kind, k):
    """Serve one request: (wall µs, CPU µs of the submission alone)."""
    t0 = labkit.host_us()
    _, cpu_submit = timing.wall_and_cpu(
        (lambda: chain(k, xs, stream)) if kind == "eager" else (lambda: execs[k].launch(stream)))
    stream.synchronize()
    return labkit.host_us() - t0, cpu_submit

service = {kind: np.array([serve(kind, int(k)) for k in sizes]) for kind in ("eager", "graph")}
mean_eager = service["eager"][:, 0].mean()
arrivals = np.cumsum(rng.exponential(mean_eager / 0.7, size=N_REQ))
print(f"{N_REQ} requests; mean eager service {mean_eager:.0f} µs, "
      f"mean graph service {service['graph'][:, 0].mean():.0f} µs")


# %% tags=["key-figure"]
def fifo(arrivals, service_us):
    """Latency (wait + service) of each request through one FIFO worker, and the makespan."""
    lat, free = np.empty_like(service_us), arrivals[0]
    for i, (a, s) in enumerate(zip(arrivals, service_us)):
        start = max(a, free)
        free = start + s
        lat[i] = free - a
    return lat, free - arrivals[0]

rows, lats = {}, {}
for kind, sv in service.items():
    lat, span = fifo(arrivals, sv[:, 0])
    lats[kind] = timing.Stats(lat, label=kind)
    rows[kind] = dict(p50=lats[kind].p50, p95=lats[kind].p95, p99=lats[kind].p99,
                      throughput=N_REQ / span * 1e6,
                      cpu_launch=sv[:, 1].sum() / span,       # CPU busy submitting work
                      cpu_spin=sv[:, 0].sum() / span)         # wall time: submit + wait in synchronize
print(f"{'':6s} {'p50 µs':>8s} {'p95 µs':>8s} {'p99 µs':>8s} {'req/s':>8s} {'CPU(launch)':>12s} {'busy(wall)':>11s}")
for kind, r in rows.items():
    print(f"{kind:6s} {r['p50']:8.0f} {r['p95']:8.0f} {r['p99']:8.0f} {r['throughput']:8.0f} "
          f"{r['cpu_launch']:12.1%} {r['cpu_spin']:11.1%}")
labkit.expect(rows["graph"]["p99"] < rows["eager"]["p99"], "the graph server's p99 latency is below eager's",
              measured=f"p99 graph {rows['graph']['p99']:.0f} µs, eager {rows['eager']['p99']:.0f} µs",
              why="your GPU's kernels take longer than a launch here, so both servers wait for the GPU",
              look="the tails of the CDF")
labkit.expect(rows["graph"]["cpu_launch"] < rows["eager"]["cpu_launch"],
              "the graph server spends less CPU submitting work than eager",
              measured=f"CPU(launch) graph {rows['graph']['cpu_launch']:.1%}, eager "
                       f"{rows['eager']['cpu_launch']:.1%}",
              why="a busy host stalled the graph server's launches", look="the CPU(launch) column")
plot.latency_cdf(lats, logx=True, title="06-2 Request latency (wait + service), eager vs graph",
                 model="one-worker FIFO queue replayed over the measured service times");

# %% [markdown]
# Read the table and the CDF together. Throughput is set by the arrivals (both servers keep
# up), so it hardly differs; the difference is in the **tail**: eager requests queue behind slow
# eager requests, which p95/p99 show far more than p50. `CPU(launch)` is the share of the
# makespan one core spends submitting work, in CPU time (`timing.wall_and_cpu`) — the graph's
# should be a small fraction of eager's. `busy(wall)` is not CPU time: it is the worker's wall
# time per request (submitting, then waiting in `cudaStreamSynchronize`) as a share of the
# makespan. By default that wait spins, so the core is busy for all of it, but the spin is not
# work and can be turned into sleep (blocking-sync scheduling) at some latency cost.

# %% [markdown]
# ## 3. Needless synchronizations
#
# A synchronize after each kernel makes the GPU wait for the CPU's next launch and the CPU wait
# for the GPU: neither runs ahead. Three versions of the same 50-kernel chain:

# %%
K = 50
def sync_each():
    for _ in range(K):
        add_one[4, 256, stream](x); stream.synchronize()
def sync_end():
    chain(K, x, stream); stream.synchronize()
with labkit.capture(stream) as cap:
    chain(K, x, stream)
g50 = cap.graph.instantiate(upload_stream=stream)
def graph_once():
    g50.launch(stream); stream.synchronize()

variants = {"sync after each": sync_each, "one sync at end": sync_end, "graph": graph_once}
samples = {k: [] for k in variants}
for r in range(3):                      # three rounds in alternating order (section 5 says why)
    for k in (list(variants) if r % 2 == 0 else list(variants)[::-1]):
        samples[k].extend(timing.measure(variants[k], warmup=2, repeat=SZ["repeat"]).samples)
res = {k: timing.Stats(v, label=k) for k, v in samples.items()}
for k, v in res.items():
    print(f"{k:16s} median {v.median:8.1f} µs  ({v.median / K:.2f} µs per kernel)")
labkit.expect(res["sync after each"].median > res["one sync at end"].median > res["graph"].median,
              "sync after each > one sync at end > graph",
              measured=", ".join(f"{k} {v.median:.0f} µs" for k, v in res.items()),
              why="your GPU's kernels take longer than a launch here, so all three wait for the GPU "
                  "and differ little", look="the three timelines below")
plot.bars(res, ylabel=f"time for {K} kernels (µs)", title="06-3 Synchronizations removed");

# %%
import matplotlib.pyplot as plt
for name in ("sync after each", "one sync at end", "graph"):
    f = variants[name]; f()                    # warm
    with timing.timeline(note=name) as rec:
        f()
    plot.timeline(rec.timeline, title=f"06-4 Timeline: {name}", max_labels=0)
    plt.show()

# %% [markdown]
# In the first timeline the stream row shows a gap before every kernel: the GPU idles while
# the CPU returns from the synchronize and launches again. With one synchronize at the end there
# is no wait on the CPU's side any more, but the stream row still has gaps: each tiny kernel runs
# in about a microsecond while numba needs about 20 µs to launch the next one, so the GPU waits for the
# CPU's launch rate (the gaps are the launches, not synchronizations). Only the graph runs its
# kernels back to back: one `cudaGraphLaunch` submits all 50, and the GPU no longer waits for the
# host. On a GPU the timeline is traced with CUPTI (NVIDIA's profiling interface), which makes
# each launch a little dearer; the note under each figure says by how much.

# %% [markdown]
# ## 4. When *not* to use a graph
#
# A graph removes per-launch CPU cost. Where there is little of it, or where the graph cannot be
# reused, it buys nothing — or costs more:
#
# 1. **One long kernel:** the launch is a tiny fraction of the kernel's run time.
# 2. **A one-kernel graph used once:** capture + instantiate costs more than the launch it saves.
#    The bar beside it makes the same graph in bare cuda-python calls, every code still checked:
#    the difference, which the cell prints, is labkit's own share (holding numba's frees during the
#    capture, keeping the arguments alive with the graph, reading the executable's nodes). On the
#    H200 it was about 20–30 µs of 50–65 (the bare calls: 33–49 µs); the simulator charges CUDA's
#    calls only, so there the two bars match. Either way the graph used once loses.
# 3. **A topology that changes every request:** re-capturing and instantiating per request
#    gains little or nothing. With numba, recording a launch into a capture costs the host nearly
#    as much as launching it (the dispatch is the same), and instantiate and one launch come on top;
#    on the H200 the two came out within about a third of each other, in either order from one run
#    to the next. The graph's advantage, paying the launches once and replaying many times, is gone.

# %%
ITERS = 1_000_000              # milliseconds of GPU work per launch
xl = labkit.to_device(np.zeros(1024, np.float32))
busy[4, 256, stream](xl, ITERS); stream.synchronize()
with labkit.capture(stream) as cap:
    busy[4, 256, stream](xl, ITERS)
gl = cap.graph.instantiate(upload_stream=stream)
def long_eager():
    busy[4, 256, stream](xl, ITERS); stream.synchronize()
def long_graph():
    gl.launch(stream); stream.synchronize()
le = timing.measure(long_eager, repeat=SZ["repeat"]); lg = timing.measure(long_graph, repeat=SZ["repeat"])
gain = 1 - lg.median / le.median
print(f"one long kernel: eager {le.median:.0f} µs, graph {lg.median:.0f} µs -> saves {gain:.1%}")
labkit.expect(gain < 0.05, "for one long kernel a graph saves under 5%",
              measured=f"eager {le.median:.0f} µs, graph {lg.median:.0f} µs ({gain:.1%} saved)",
              why="a launch on this host costs a sizeable part of the kernel (a very slow or busy host)",
              look="the two long-kernel bars")

def one_eager():
    add_one[4, 256, stream](x); stream.synchronize()
def one_graph_fresh():
    with labkit.capture(stream) as cap:
        add_one[4, 256, stream](x)
    with cap.graph as g, g.instantiate() as ex:
        ex.launch(stream); stream.synchronize()
h = stream.handle
def one_graph_raw():       # the same graph in bare cuda-python calls, every return code checked
    check(rt.cudaStreamBeginCapture(h, rt.cudaStreamCaptureMode.cudaStreamCaptureModeGlobal),
          "cudaStreamBeginCapture")
    add_one[4, 256, stream](x)
    g = check(rt.cudaStreamEndCapture(h), "cudaStreamEndCapture")
    ex = check(rt.cudaGraphInstantiate(g, 0), "cudaGraphInstantiate")
    check(rt.cudaGraphLaunch(ex, h), "cudaGraphLaunch")
    check(rt.cudaStreamSynchronize(h), "cudaStreamSynchronize")
    check(rt.cudaGraphExecDestroy(ex), "cudaGraphExecDestroy")
    check(rt.cudaGraphDestroy(g), "cudaGraphDestroy")
oe = timing.measure(one_eager, repeat=SZ["repeat"]); og = timing.measure(one_graph_fresh, repeat=SZ["repeat"])
ogr = timing.measure(one_graph_raw, repeat=SZ["repeat"])
print(f"one kernel: eager {oe.median:.1f} µs, capture+instantiate+launch {og.median:.1f} µs "
      f"with labkit, {ogr.median:.1f} µs in bare calls (labkit's share {og.median - ogr.median:.1f} µs)")
labkit.expect(og.median > oe.median, "a one-kernel graph used once costs more than the eager launch",
              measured=f"capture+instantiate+launch {og.median:.1f} µs, eager {oe.median:.1f} µs",
              why="this host's capture and instantiation are unusually cheap next to a launch",
              look="the two one-kernel bars")

def request_sizes():       # the same seeded sequence of sizes for both servers
    return iter(np.random.default_rng(5).integers(10, 60, size=4 * SZ["repeat"] + 20))
ks = request_sizes()
def changing_eager():
    chain(int(next(ks)), x, stream); stream.synchronize()
ce = timing.measure(changing_eager, repeat=SZ["repeat"])
ks = request_sizes()
def changing_recapture():
    k = int(next(ks))
    with labkit.capture(stream) as cap:
        chain(k, x, stream)
    with cap.graph as g, g.instantiate() as ex:
        ex.launch(stream); stream.synchronize()
cr = timing.measure(changing_recapture, repeat=SZ["repeat"])
print(f"changing topology: eager {ce.median:.0f} µs, re-capture per request {cr.median:.0f} µs")
print(f"re-capture per request / eager: {cr.median / ce.median:.2f}")
labkit.expect(cr.median > 0.5 * ce.median, "re-capturing per request saves at most half of eager's time",
              measured=f"re-capture {cr.median:.0f} µs, eager {ce.median:.0f} µs per request",
              why="recording a launch into a capture is much cheaper than launching it on this host",
              look="the two 'varying' bars")
plot.bars({"long: eager": le, "long: graph": lg, "1 kernel: eager": oe, "1 kernel: new graph": og,
           "1 kernel: same, bare calls": ogr, "varying: eager": ce, "varying: re-capture": cr}, log=True,
          ylabel="time per request (µs)", title="06-5 Where a graph does not pay");

# %% [markdown]
# ## 5. Comparing two versions fairly: rounds, in alternating order
#
# A GPU server's host does not run at one speed. Other tenants, the CPU's clock and where the
# process was scheduled all move it, by more than the effect you may be trying to see: on the
# course's H200, `python -m labkit bench` measured numba's eager launch at 22.8 µs per kernel in
# one run and 51.4 µs in a run a few minutes later, same code, same machine; the graph replay
# stayed at 0.84–0.86 µs in both. Measure version A for a minute, then version B, and the drift
# lands on one side only.
#
# A drift like that cannot hide a 20× gap: eager against a graph (06-3) comes out the same
# way however the host moves. It matters when two versions are close, and most changes you will
# want to judge are close: a synchronize removed, a copy moved, two kernels fused. So take the
# close pair from 06-3: the 50-kernel chain with a synchronize after each kernel, against the same
# chain with one synchronize at the end, about 1.3× apart. Both are paced by the host (numba's
# launch, and the synchronize's round trip), so a host that slows down slows both. A slow stretch
# that falls on one version only can shrink the gap, widen it, or, as large as the 2× the H200's
# host moved between runs, turn it round.
#
# **(a) The naive way:** all of one version's samples, then all of the other's.

# %%
ROUNDS = 6
N = 4 * SZ["repeat"]                   # calls of each version per round
pair = {"sync after each": sync_each, "one sync at end": sync_end}
A, B = pair
naive = {name: timing.measure(fn, warmup=2, repeat=ROUNDS * N, label=name)     # A's block, then B's
         for name, fn in pair.items()}
naive_ratio = naive[A].median / naive[B].median
for name, st in naive.items():
    print(f"{name:16s} one block of {st.n} calls, median {st.median:7.1f} µs")
print(f"naive ratio {A} / {B}: {naive_ratio:.2f}x, from two medians taken one after the other")

# %% [markdown]
# **(b) In rounds:** the same number of calls, cut into rounds of `N` calls of each version, in
# alternating order (A B, B A, A B, ...). Each round gives one median per version and one ratio,
# taken from two figures measured moments apart. We report the median of those ratios over the
# rounds and their range. `python -m labkit calibrate` works this way.

# %%
per_round = {name: [] for name in pair}
for r in range(ROUNDS):
    for name in (list(pair) if r % 2 == 0 else list(pair)[::-1]):     # alternate the order
        per_round[name].append(timing.measure(pair[name], warmup=1, repeat=N).median)
ratios = np.array(per_round[A]) / np.array(per_round[B])
ratio_median = float(np.median(ratios))
for name, vals in per_round.items():
    print(f"{name:16s} µs, round by round: " + "  ".join(f"{v:7.1f}" for v in vals))
print(f"{'within-round ratio':37s}" + "  ".join(f"{q:6.2f}x" for q in ratios))
print(f"median over rounds {ratio_median:.2f}x, range {ratios.min():.2f}x .. {ratios.max():.2f}x "
      f"(spread {ratios.max() / ratios.min() - 1:.0%}); naive {naive_ratio:.2f}x")
labkit.expect(ratio_median > 1, "one synchronize at the end beats a synchronize after each kernel, "
              "on the median of the within-round ratios",
              measured=f"{A} / {B} per round: " + ", ".join(f"{q:.2f}×" for q in ratios),
              why="the host was so loaded that its drift outweighed the synchronizations in most "
                  "rounds; run the cell again on a quieter machine",
              look="figure 06-6, lower panel")


# %%
def mark(ax, lines):
    """Draw horizontal reference lines on ``ax`` and redraw its legend with them.

    Parameters
    ----------
    ax : matplotlib.axes.Axes
        Axes already drawn by a `labkit.plot` function.
    lines : list of (float, str, dict)
        ``(y, label, style)``: where the line goes, its legend entry, and matplotlib line
        properties (``color``, ``linestyle``, ...).
    """
    with plot.style():
        for y, label, line_style in lines:
            ax.axhline(y, label=label, linewidth=1.2, **line_style)
        ax.legend(loc="lower right")

xs_round = range(1, ROUNDS + 1)
with plot.style():
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(8, 8))      # stacked: long titles fit
plot.per_kernel_cost(xs_round, per_round, ax=top, logx=False,
                     title=f"06-6 {A} vs {B}, {K} kernels, round by round")
mark(top, [(naive[name].median, f"{name}: naive block", dict(color=c, linestyle="--"))
           for name, c in zip(pair, plot.colors_for(per_round))])
top.set_ylabel(f"time for {K} kernels (µs, median of the round)")
plot.per_kernel_cost(xs_round, {"within-round ratio": ratios}, ax=bottom, logx=False,
                     title=f"Within-round ratio, {A} / {B}")
bottom.get_lines()[0].set_color("#637939")     # not the colour of either version
mark(bottom, [(ratio_median, "median over rounds", dict(color="black")),
              (naive_ratio, "naive blocks", dict(color="grey", linestyle="--")),
              (1.0, "a tie", dict(color="grey", linestyle=":"))])
bottom.set_ylabel("ratio (×)")
top.set_ylim(0, 1.2 * max(max(v) for v in per_round.values()))     # headroom above the top line
bottom.set_ylim(0, 1.2 * max(ratios.max(), naive_ratio))
for ax in (top, bottom):
    ax.set_xlabel("round"); ax.set_xticks(list(xs_round))
plt.show()

# %% [markdown]
# **What to look at.** On the simulator every round gives the same figures, and the naive
# blocks agree with the rounds to the digit: its clock is a model, and a model does not drift.
# The lines are flat by construction, so they show the method, not the host. On a GPU host the
# rounds move, and the figure shows three things:
#
# - above, the two versions' lines: when the host slows down for a while, both rise in
#   the same rounds, since both are paced by the host;
# - below, the within-round ratio: a slow stretch longer than a round lands on both of that
#   round's figures, so it cancels in their ratio; the jitter from one call to the next does
#   not cancel, and makes the ratio wobble a little from round to round. Read the median, and
#   quote the range;
# - the dashed lines: the naive blocks. Where a dashed line above lies off its version's
#   round-by-round line, or the naive ratio lies outside the rounds' range below, the
#   host changed speed between the two blocks and the naive ratio carries it. On a quiet host
#   the naive blocks can agree with the rounds; nothing in them tells you whether that run was a
#   quiet one, and the rounds do.
#
# The rounds that the packaged calibration measured on the H200
# (`labkit/calibration/h200-bench.json`, the 200-kernel chain benchmark, one round every few
# seconds) are drawn below as they were measured; on any backend this cell reads the file, it
# does not measure.

# %%
import json
from importlib import resources
h200 = json.loads(resources.files("labkit").joinpath("calibration/h200-bench.json").read_text())
rounds = h200["per_round"]
shown = {"eager": rounds["eager_us_per_kernel"], "prepared": rounds["prepared_us_per_kernel"],
         "graph": rounds["graph_us_per_kernel"]}
for name, vals in shown.items():
    lo, hi = min(vals), max(vals)
    print(f"{name:8s} {lo:6.2f} .. {hi:6.2f} µs per kernel over {len(vals)} rounds "
          f"(spread {hi / lo - 1:.0%})")
source = (f"measured on {h200['device']} by `labkit calibrate` "
          f"({h200['rounds']} rounds; labkit/calibration/h200-bench.json)")
ax = plot.per_kernel_cost(range(1, h200["rounds"] + 1), shown, logx=False, provenance=source,
                          title="06-7 The H200's rounds, as measured")
ax.set_xlabel("round"); ax.set_yscale("log")
ax.set_ylim(min(map(min, shown.values())) / 1.5, max(map(max, shown.values())) * 1.5);

# %% [markdown]
# Within one calibration run, a minute long, most rounds stay close to each other, with the odd
# slow one (the spreads printed above); separate runs minutes apart differed by up to 2× on the
# host's figures. So compare versions within rounds, repeat whole runs, not only samples, before
# you quote a host cost, and quote a range.

# %% [markdown]
# ## 6. A decision checklist
#
# Ask, in order — each question points at the figure that answers it:
#
# 1. **Is the CPU's launch cost a large part of the time?** Many kernels of a few µs each: yes
#    (notebook 01's per-kernel cost figure; 06-3 here). One long kernel: no (06-5, "long").
# 2. **Will the same graph run many times?** Compare the one-off capture + instantiate with the
#    saving per replay: the break-even of notebook 03's amortization figure; a graph used once
#    loses (06-5, "1 kernel").
# 3. **Is the topology stable between runs?** Fixed shapes, or a few buckets captured ahead
#    (06-2): yes. Only parameters change: update in place (notebook 05). The structure changes
#    every request: stay eager (06-5, "varying"), or bucket the shapes.
# 4. **Is the state device-resident?** Values that change each run (a position, a token) must be
#    read from device memory by the kernels, not baked in as arguments (notebook 07).
# 5. **Have you measured warm, with percentiles, in rounds?** Exclude the first call (06-1), look
#    at p95/p99 under a realistic arrival pattern, not only the mean (06-2), and compare versions
#    in alternating rounds (06-6).

# %% [markdown]
# ## Summary
#
# - First calls pay JIT, module load, allocation and graph upload: measure them apart (06-1).
# - Under random arrivals the graph's lower service time shows most in the latency tail and in
#   the CPU time spent launching (06-2).
# - A synchronize after each kernel stalls both sides; one at the end lets the CPU run ahead; a
#   graph also removes the per-launch cost (06-3, 06-4).
# - A graph does not pay for one long kernel, for a graph used once, or for a topology that
#   changes every request (06-5).
# - The host's speed drifts: compare versions in alternating rounds and quote medians over rounds
#   with their range (06-6, 06-7).
#
# ## Exercise: remove the needless waits
#
# `labkit.course.exercises.nb06.slow_update(x, stream)` launches 20 `add_one` kernels and, after each,
# synchronizes and copies `x` to the host "to watch progress". Write `fast_update(x, stream)`
# with the same result, at most 0.85× the time. Start from the copy below.

# %% tags=["starter"]
from labkit.course.exercises import nb06

def fast_update(x, stream):
    for _ in range(nb06.N_KERNELS):
        add_one[4, 256, stream](x)
        stream.synchronize()
        x.copy_to_host()


# %% tags=["solution"]
from labkit.course.exercises import nb06

def fast_update(x, stream):
    for _ in range(nb06.N_KERNELS):
        add_one[4, 256, stream](x)
    stream.synchronize()            # once, at the end: the only wait the caller needs


# %% tags=["check"]
print(nb06.check_fewer_syncs(fast_update, stream))

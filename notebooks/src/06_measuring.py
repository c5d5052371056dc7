# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 06 — Measuring in practice
#
# **Prerequisites:** notebooks 01–05 (eager launches, capture, instantiation and amortization,
# multi-stream graphs, graph update).
#
# **You will learn to**
# - keep warm-up (JIT compilation, module load, allocation, graph upload) out of steady-state figures;
# - drive a seeded request loop through a queue model and report p50/p95/p99 latency (the latency
#   that 50 %, 95 %, 99 % of requests stay under), throughput, utilization and CPU use, eager
#   against graph, at the same arrivals and at the same load;
# - find and remove synchronizations that cost time and buy nothing;
# - recognise the workloads where a graph does **not** pay;
# - compare two versions in alternating rounds, so the host's drift cannot pick the winner, and
#   decide with a short checklist.
#
# About 60 minutes.

# %%
import numpy as np
import matplotlib.pyplot as plt
import labkit
from labkit import rt, check, timing, plot
from labkit.course import workloads, reference
from labkit.course.workloads import add_one, busy, chain
from labkit.course.claims import nb06 as claims

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
# The kernel below is new to this process, so its first call includes the compilation and the
# module load, and comes out many times dearer than a steady one. On a GPU that is measured; the
# simulator compiles nothing, but charges a kernel's first launch as a GPU pays it (unless its host
# model is switched to the exact one, `LABKIT_SIM_NOISE=0`). Either way, read your own two
# figures: the first request is never a sample of the steady state.

# %%
from labkit.course.kernels_extra import bump   # x[i] += 2; not launched yet in this process

def request(x):
    for _ in range(10):
        bump[4, 256, stream](x)
    stream.synchronize()

x = labkit.to_device(np.zeros(1024, np.float32))
t0 = labkit.host_us(); request(x); first_us = labkit.host_us() - t0
steady = timing.measure(lambda: request(x), warmup=0, repeat=SZ["repeat"], label="steady")
print(f"first request: {first_us:.0f} µs   steady median: {steady.median:.0f} µs "
      f"(ratio {first_us / steady.median:.1f}x)")
claims.first_request_pays_the_jit(first_us, steady.median)


# %% [markdown]
# A graph's first launch pays its upload, unless `upload()` did it ahead; `timing.graph_phases`
# sets that first launch beside an uploaded first launch and the steady launch.

# %%
ph = timing.graph_phases(lambda s: chain(50, x, s), stream, repeat=3, steady=10)
warm = {"first kernel request": first_us, "steady kernel request": steady,
        "graph 1st launch (no upload)": ph["first_launch"],
        "graph 1st launch (uploaded)": ph["uploaded_first_launch"],
        "graph steady launch": ph["steady_launch"]}
for k, v in warm.items():
    print(f"{k:32s} {getattr(v, 'median', v):9.1f} µs")
claims.first_graph_launch_dearer(ph["first_launch"].median, ph["steady_launch"].median)
plot.bars(warm, ylabel="host time (µs, log: dots)", log=True,
          title="06-1 Warm-up costs vs steady state");

# %% [markdown]
# **Allocate at start-up.** A `cudaMalloc` costs a few µs, so allocating a request's workspace
# per request looks cheap. It is not, for two reasons. `cudaFree` first waits until the *whole
# device* is idle, every stream's work included, since that work may still use the memory; a
# request that frees its workspace waits for whatever else the GPU was doing. And a large
# `cudaMalloc` (hundreds of MiB) costs the driver far more than a small one; the simulator
# charges every allocation the same, so only the first reason shows here.
#
# Below, a background job (one long kernel) runs on a stream of its own while a request of ten
# kernels is served on `stream`: once with a workspace allocated, used and freed per request,
# once with a workspace allocated at start-up.

# %%
bg = labkit.Stream()                        # the background job's stream: not the request's
y = labkit.to_device(np.zeros(32, np.float32))
WS = 1 << 20                                # the request's workspace: 1 MiB
workspace = check(rt.cudaMalloc(WS))       # allocated once, at start-up

def request_with_workspace(ws=None):
    p = ws if ws is not None else check(rt.cudaMalloc(WS))
    check(rt.cudaMemsetAsync(p, 0, WS, stream.handle))    # the request uses its workspace
    chain(10, x, stream)
    stream.synchronize()
    if ws is None:
        check(rt.cudaFree(p))               # waits for the device: the background job too

job = timing.measure(lambda: (busy[1, 32, bg](y, 200_000), bg.synchronize()), warmup=1, repeat=3)
alloc_ways = {"allocate per request": None, "allocated at start-up": workspace}
lat = {name: [] for name in alloc_ways}
for r in range(5):
    for name, ws in alloc_ways.items():
        busy[1, 32, bg](y, 200_000)         # the job starts just before the request
        t0 = labkit.host_us()
        request_with_workspace(ws)
        lat[name].append(labkit.host_us() - t0)
        bg.synchronize()
lat = {name: timing.Stats(v, label=name) for name, v in lat.items()}
print(f"background job alone: {job.median:.0f} µs")
for name, st in lat.items():
    print(f"{name:22s} request latency, median {st.median:7.0f} µs")
claims.free_waits_for_the_device(lat["allocate per request"].median,
                                 lat["allocated at start-up"].median, job.median)
plot.bars(lat, ylabel="request latency (µs)",
          title="06-1b A request beside a background job")
plt.show()
check(rt.cudaFree(workspace))

# %% [markdown]
# **Rule:** run every path once (better: a few times) before the clock starts, allocate at
# start-up, and `upload()` graphs ahead of their first real use. `timing.measure` does the
# warm-up for you (`warmup=`).

# %% [markdown]
# ## 2. A request loop: latency percentiles, throughput, CPU
#
# A server sees requests arriving at random times with random sizes. We draw them from a seeded
# generator: sizes are 16, 32, 64 or 128 short kernels (think: a batch's sequence-length bucket),
# arrivals are a Poisson process (independent arrivals at a steady average rate).
#
# **The queue model.** Running a server for real while requests arrive is slow to do and hard to
# repeat. Instead, each request is served once, for real, and its *service time* measured: submit
# the work, wait for it. Then the arrivals are replayed against those service times through a
# **single-worker FIFO queue** (first in, first out): one worker takes the requests in arrival
# order; a request that arrives while the worker is busy waits. For each request:
#
# | column | meaning |
# | --- | --- |
# | arrival | when the request arrives |
# | start | when the worker takes it: its arrival, or when the previous request finishes, whichever is later |
# | service | its measured service time |
# | finish | start + service |
# | wait | start − arrival: time in the queue |
# | latency | finish − arrival = wait + service: what the client sees |
#
# The first requests of the eager server, through the model (µs since the first arrival):

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
mean_service = {kind: sv[:, 0].mean() for kind, sv in service.items()}
gaps = rng.exponential(1.0, size=N_REQ)             # arrival gaps, in units of the mean gap

def fifo(arrivals, service_us):
    """One FIFO worker: start, finish and latency (wait + service) of each request."""
    start, finish = np.empty_like(service_us), np.empty_like(service_us)
    free = arrivals[0]
    for i, (a, sv) in enumerate(zip(arrivals, service_us)):
        start[i] = max(a, free)
        finish[i] = free = start[i] + sv
    return start, finish, finish - arrivals

LOAD = 0.7                                          # the eager worker is busy 70 % of the time
arrivals = np.cumsum(gaps * mean_service["eager"] / LOAD)
start, finish, latency = fifo(arrivals, service["eager"][:, 0])
t = arrivals[0]
print(f"{'request':>7} {'size':>5} {'arrival':>9} {'start':>9} {'service':>8} {'finish':>9} "
      f"{'wait':>7} {'latency':>8}")
for i in range(6):
    print(f"{i:7d} {sizes[i]:5d} {arrivals[i] - t:9.0f} {start[i] - t:9.0f} "
          f"{service['eager'][i, 0]:8.0f} {finish[i] - t:9.0f} {start[i] - arrivals[i]:7.0f} "
          f"{latency[i]:8.0f}")
print(f"mean service: eager {mean_service['eager']:.0f} µs, "
      f"graph {mean_service['graph']:.0f} µs")

# %% [markdown]
# Two fair ways to compare the servers, and the table reports both:
#
# - **the same arrivals**: both servers get the stream that keeps the eager worker busy 70 % of the
#   time. The graph server, faster per request, is busy far less: that idle share is its **spare
#   capacity**, room for more traffic;
# - **the same load**: each server gets arrivals that keep *it* busy 70 % of the time (the graph
#   server's arrivals come faster, in proportion to its shorter service). Now the throughput
#   column shows how much more traffic the graph server carries at the same utilization.
#
# The table's columns: **p50/p95/p99**, latency percentiles (µs); **req/s**, requests served per
# second of the replay; **busy**, the share of the replay the worker spends serving (its
# utilization: its wall time, including the wait in `cudaStreamSynchronize`, which by default
# usually spins, so the core is busy for all of it); **CPU(launch)**, the share one core spends
# submitting work, in CPU time (`timing.wall_and_cpu`).

# %% tags=["key-figure"]
def replay(kind, arrivals):
    sv = service[kind]
    _, finish, lat = fifo(arrivals, sv[:, 0])
    span = finish[-1] - arrivals[0]
    return timing.Stats(lat, label=kind), dict(throughput=N_REQ / span * 1e6,
                                                busy=sv[:, 0].sum() / span,
                                                cpu_launch=sv[:, 1].sum() / span)

cases = {"eager": ("eager", arrivals),
         "graph, same arrivals": ("graph", arrivals),
         "graph, same load": ("graph", np.cumsum(gaps * mean_service["graph"] / LOAD))}
lats, rows = {}, {}
for name, (kind, arr) in cases.items():
    lats[name], rows[name] = replay(kind, arr)
print(f"{'':21s} {'p50 µs':>8s} {'p95 µs':>8s} {'p99 µs':>8s} {'req/s':>8s} {'busy':>6s} "
      f"{'CPU(launch)':>12s}")
for name, r in rows.items():
    st = lats[name]
    print(f"{name:21s} {st.p50:8.0f} {st.p95:8.0f} {st.p99:8.0f} {r['throughput']:8.0f} "
          f"{r['busy']:6.1%} {r['cpu_launch']:12.1%}")
claims.graph_p99_below_eager(lats["graph, same arrivals"].p99, lats["eager"].p99)
claims.graph_less_cpu_launching(rows["graph, same arrivals"]["cpu_launch"],
                                rows["eager"]["cpu_launch"])
claims.graph_serves_more_at_equal_load(rows["graph, same load"]["throughput"],
                                       rows["eager"]["throughput"])
plot.latency_cdf(lats, logx=True, title="06-2 Request latency (wait + service), eager vs graph",
                 model="one-worker FIFO queue replayed over the measured service times");

# %% [markdown]
# Read the table and the CDF together. At the **same arrivals**, throughput is set by the
# arrivals (both servers keep up), so it hardly differs; the difference is in the worker's busy
# share and in the **tail**: eager requests queue behind slow eager requests, which p95/p99 show
# far more than p50, while the graph server is idle most of the time. At the **same load**, the
# graph server carries many times the eager server's requests per second with the worker just as
# busy, and its latencies stay short because each service is short. `CPU(launch)` is the cost a
# graph removes: the graph's share is a small fraction of eager's.
#
# **Takeaway:** compare servers at the same arrivals (latency, spare capacity) or at the same
# load (throughput), and say which.

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
claims.syncs_in_order({k: v.median for k, v in res.items()})
plot.bars(res, ylabel=f"time for {K} kernels (µs)", title="06-3 Synchronizations removed");

# %%
recorded = []
for name in ("sync after each", "one sync at end", "graph"):
    f = variants[name]; f()                    # warm
    with timing.timeline(note=name) as rec:
        f()
    recorded.append((rec.timeline, f"06-4 {name}"))
plot.timelines(recorded, stream_names={stream: "GPU stream"}, max_labels=0)   # one time axis
plt.show()

# %% [markdown]
# The three timelines share one time axis, so a shorter one looks shorter. In the first, the
# stream row shows a gap before every kernel: the GPU idles while the CPU returns from the
# synchronize and launches again. With one synchronize at the end there is no wait on the CPU's
# side any more, but the stream row still has gaps: each tiny kernel finishes long before numba
# has launched the next one, so the GPU waits for the CPU's launch rate (the gaps are the
# launches, not synchronizations). Only the graph runs its kernels back to back: one
# `cudaGraphLaunch` submits all 50, and the GPU no longer waits for the host. On a GPU the
# timeline is traced with CUPTI (NVIDIA's profiling interface), which makes each launch a little
# dearer; the note under the figure says by how much.

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
#    capture, keeping the arguments alive with the graph, reading the executable's nodes). The
#    simulator charges CUDA's calls only, so there the two bars match; on a GPU labkit's share is
#    visible. Either way the graph used once loses.
# 3. **A topology that changes every request:** re-capturing and instantiating per request gains
#    little or nothing. With numba, recording a launch into a capture costs the host nearly as
#    much as launching it (the dispatch is the same), and instantiate and one launch come on top,
#    so the two bars come out close, in either order depending on the host. The graph's
#    advantage, paying the launches once and replaying many times, is gone; notebook 05's
#    `UpdatingGraph` runs such steps eagerly for that reason.

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
le = timing.measure(long_eager, repeat=SZ["repeat"])
lg = timing.measure(long_graph, repeat=SZ["repeat"])
print(f"one long kernel: eager {le.median:.0f} µs, graph {lg.median:.0f} µs "
      f"-> saves {1 - lg.median / le.median:.1%}")
claims.long_kernel_graph_saves_little(le.median, lg.median)

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
oe = timing.measure(one_eager, repeat=SZ["repeat"])
og = timing.measure(one_graph_fresh, repeat=SZ["repeat"])
ogr = timing.measure(one_graph_raw, repeat=SZ["repeat"])
print(f"one kernel: eager {oe.median:.1f} µs, capture+instantiate+launch {og.median:.1f} µs "
      f"with labkit,\n{ogr.median:.1f} µs in bare calls (labkit's share "
      f"{og.median - ogr.median:.1f} µs)")
claims.one_kernel_graph_used_once_loses(og.median, oe.median)

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
print(f"changing topology: eager {ce.median:.0f} µs, "
      f"re-capture per request {cr.median:.0f} µs (ratio {cr.median / ce.median:.2f})")
claims.recapture_saves_at_most_half(cr.median, ce.median)
plot.bars({"long: eager": le, "long: graph": lg,
           "1 kernel: eager": oe, "1 kernel: new graph": og, "1 kernel: same, bare calls": ogr,
           "varying: eager": ce, "varying: re-capture": cr},
          log=True, ylabel="time per request (µs)", title="06-5 Where a graph does not pay");

# %% [markdown]
# ## 5. Comparing two versions fairly: rounds, in alternating order
#
# A GPU server's host does not run at one speed. Other tenants, the CPU's clock and where the
# process was scheduled all move it, by more than the effect you may be trying to see: a
# host-bound figure such as numba's launch cost can double between two runs minutes apart, on
# the same machine with the same code, while the GPU's own work hardly moves. Measure version A
# for a minute, then version B, and the drift lands on one side only.
#
# A drift like that cannot hide a gap of ten times or more: eager against a graph (06-3) comes out
# the same way however the host moves. It matters when two versions are close, and most changes
# you will want to judge are close: a synchronize removed, a copy moved, two kernels fused. So
# take the close pair from 06-3: the 50-kernel chain with a synchronize after each kernel, against
# the same chain with one synchronize at the end. 06-3 measured them in alternating rounds, so
# their ratio there is our yardstick. Both are paced by the host (numba's launch, and the
# synchronize's round trip), so a host that slows down slows both.
#
# A real host's drift comes when it likes, so we make one that comes on cue:
# `labkit.course.host_drift.Drift` slows the host steadily while a measurement runs, until every
# call takes twice as long (it follows each call with host work, as a neighbour taking more and
# more of the core would). Each method below gets the same drift from the start, over the time
# its calls take on a steady host.
#
# **(a) The naive way:** all of one version's samples, then all of the other's.

# %%
from labkit.course.host_drift import Drift

ROUNDS = 6
N = 4 * SZ["repeat"]                   # calls of each version per round
pair = {"sync after each": sync_each, "one sync at end": sync_end}
A, B = pair
yardstick = res[A].median / res[B].median            # 06-3, in alternating rounds, no drift
steady_us = ROUNDS * N * sum(timing.measure(fn, warmup=1, repeat=N).median for fn in pair.values())
drift = Drift(stream, slowest=2.0, over_us=steady_us)   # half speed by the end
on_drifting_host = {name: drift.slowed(fn) for name, fn in pair.items()}

drift.start()
naive = {name: timing.measure(fn, warmup=2, repeat=ROUNDS * N, label=name)   # A's, then B's
         for name, fn in on_drifting_host.items()}
naive_ratio = naive[A].median / naive[B].median
for name, st in naive.items():
    print(f"{name:16s} one block of {st.n} calls, median {st.median:7.1f} µs")
print(f"naive ratio {A} / {B}: {naive_ratio:.2f}x, from two medians taken one after the other; "
      f"06-3's yardstick: {yardstick:.2f}x")

# %% [markdown]
# **(b) In rounds:** the same number of calls on the same drifting host, cut into rounds of `N`
# calls of each version, in alternating order (A B, B A, A B, ...). Each round gives one median
# per version and one ratio, taken from two figures measured moments apart. We report the median
# of those ratios over the rounds and their range. `python -m labkit calibrate` works this way.

# %%
drift.start()                          # the same drift again, from full speed
per_round = {name: [] for name in pair}
for r in range(ROUNDS):
    for name in (list(pair) if r % 2 == 0 else list(pair)[::-1]):     # alternate the order
        per_round[name].append(timing.measure(on_drifting_host[name], warmup=1, repeat=N).median)
ratios = np.array(per_round[A]) / np.array(per_round[B])
ratio_median = float(np.median(ratios))
for name, vals in per_round.items():
    print(f"{name:16s} µs, round by round: " + "  ".join(f"{v:7.1f}" for v in vals))
print(f"{'within-round ratio':37s}" + "  ".join(f"{q:6.2f}x" for q in ratios))
print(f"median over rounds {ratio_median:.2f}x, "
      f"range {ratios.min():.2f}x .. {ratios.max():.2f}x; naive {naive_ratio:.2f}x; "
      f"yardstick {yardstick:.2f}x")
claims.rounds_favour_one_sync(ratios)
claims.rounds_see_through_the_drift(ratio_median, naive_ratio, yardstick)


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
                     title=f"06-6 {A} vs {B}, {K} kernels, rounds on a slowing host")
mark(top, [(naive[name].median, f"{name}: naive block", dict(color=c, linestyle="--"))
           for name, c in zip(pair, plot.colors_for(per_round))])
top.set_ylabel(f"time for {K} kernels (µs, median of the round)")
plot.per_kernel_cost(xs_round, {"within-round ratio": ratios}, ax=bottom, logx=False,
                     title=f"Within-round ratio, {A} / {B}")
bottom.get_lines()[0].set_color("#637939")     # not the colour of either version
mark(bottom, [(ratio_median, "median over rounds", dict(color="black")),
              (naive_ratio, "naive blocks", dict(color="grey", linestyle="--")),
              (yardstick, "06-3, steady host", dict(color="#d62728", linestyle="-.")),
              (1.0, "a tie", dict(color="grey", linestyle=":"))])
bottom.set_ylabel("ratio (×)")
top.set_ylim(0, 1.2 * max(max(v) for v in per_round.values()))     # headroom above the top line
bottom.set_ylim(0, 1.2 * max(ratios.max(), naive_ratio))
for ax in (top, bottom):
    ax.set_xlabel("round"); ax.set_xticks(list(xs_round))
plt.show()

# %% [markdown]
# **What to look at.** The figure shows three things:
#
# - above, the two versions' lines: both climb as the host slows, round after round, since both
#   are paced by the host. The dashed lines are the naive blocks: A's block ran while the host
#   was still fast, B's while it was slow, so B's dashed line sits high and A's low;
# - below, the within-round ratio: the slowdown lands on both of a round's figures, so it cancels
#   in their ratio. What is left is the drift *within* a round (the version measured second runs
#   on a slightly slower host), which the alternating order turns into a wobble up and down from
#   one round to the next; on the simulator the modelled host's own slow stretches add to it.
#   Read the median, and quote the range;
# - the dashed line below is the naive ratio: the drift went into it whole, and it sits far from
#   the yardstick of 06-3 (dash-dotted), maybe on the other side of a tie. The rounds' median stays
#   near the yardstick.
#
# Without the drift the naive blocks can agree with the rounds; nothing in them tells you whether
# a run was a quiet one, and the rounds do.
#
# The drift here was made on cue; a real host's comes on its own. Here is a real host: the rounds of
# the packaged calibration's chain benchmark, measured on a GPU server, one round every few
# seconds, drawn as they were measured (this cell reads a file; it measures nothing).

# %%
import json
from importlib import resources
bench = json.loads(resources.files("labkit").joinpath("calibration/h200-bench.json").read_text())
rounds = bench["per_round"]
shown = {"eager": rounds["eager_us_per_kernel"], "prepared": rounds["prepared_us_per_kernel"],
         "graph": rounds["graph_us_per_kernel"]}
for name, vals in shown.items():
    lo, hi = min(vals), max(vals)
    print(f"{name:8s} {lo:6.2f} .. {hi:6.2f} µs per kernel (spread {hi / lo - 1:.0%})")
ax = plot.per_kernel_cost(range(1, len(shown["eager"]) + 1), shown, logx=False,
                          provenance=f"measured on {bench['device']} by `labkit calibrate`",
                          title="06-7 A real host's rounds, as measured")
ax.set_xlabel("round"); ax.set_yscale("log")
ax.set_ylim(min(map(min, shown.values())) / 1.5, max(map(max, shown.values())) * 1.5);

# %% [markdown]
# Within one run most rounds stay close to each other, with the odd slow one (the spreads printed
# above): the host-bound lines (eager, prepared) move, the GPU-bound one (graph) hardly does.
# Whole runs minutes apart can differ by more than rounds within a run. So compare versions
# within rounds, repeat whole runs, not only samples, before you quote a host cost, and quote a
# range.
#
# For reference, the figures of this notebook on a real GPU:

# %%
reference.note("06")

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
#    (06-2; notebook 05's `GraphCache`): yes. Only parameters change: update in place (notebook
#    05). The structure changes every request: stay eager (06-5, "varying"), or bucket the shapes.
# 4. **Is the state device-resident?** Values that change each run (a position, a token) must be
#    read from device memory by the kernels, not baked in as arguments (notebook 07).
# 5. **Have you measured warm, with percentiles, in rounds?** Exclude the first call (06-1), look
#    at p95/p99 under a realistic arrival pattern, at a load you state, not only the mean (06-2),
#    and compare versions in alternating rounds (06-6).

# %% [markdown]
# ## Summary
#
# - First calls pay JIT, module load, allocation and graph upload: measure them apart (06-1).
# - A queue model replays measured service times under seeded arrivals. At the same arrivals the
#   graph's shorter service shows in the latency tail, the spare capacity and the CPU time spent
#   launching; at the same load, in the throughput (06-2).
# - A synchronize after each kernel stalls both sides; one at the end lets the CPU run ahead; a
#   graph also removes the per-launch cost (06-3, 06-4).
# - A graph does not pay for one long kernel, for a graph used once, or for a topology that
#   changes every request (06-5).
# - The host's speed drifts: compare versions in alternating rounds and quote medians over rounds
#   with their range (06-6, 06-7).
#
# ## Exercise: remove the needless waits
#
# `labkit.course.exercises.nb06.slow_update(x, stream)` launches 20 `add_one` kernels and, after
# each, synchronizes and copies `x` to the host "to watch progress". Write `fast_update(x, stream)`
# with the same result, done when it returns, in at most 0.85× the time. The check counts every wait one call makes (a
# synchronize, through labkit or the raw runtime, and a copy to the host) before it times your
# function against the original. Start from the copy below.

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

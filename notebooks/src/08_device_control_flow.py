# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 08 — Control flow on the device: conditional nodes
#
# **Prerequisites:** notebooks 01–07 (the capstone's decoder). **Time:** about 75 minutes.
#
# **You will learn to**
# - see on a timeline the host round trip per token that a graph per token leaves behind;
# - build WHILE, IF, IF/ELSE and SWITCH nodes whose condition a kernel sets on the GPU;
# - run the capstone's whole generation, until the end-of-sequence token, in one graph launch;
# - stream each token to the host as the GPU makes it, with no launch per token;
# - weigh what that gains (host CPU, stopping exactly at EOS, a steady stream) and what it does
#   not (tokens/s when the GPU is the bottleneck), beside the middle way of k steps per launch.

# %%
import numpy as np
import matplotlib.pyplot as plt
import labkit
from labkit import plot, set_condition, timing
from labkit.course import decode_bench, decoder as dec, device_loop as dl, reference, show
from labkit.course.claims import nb08 as claims

print("backend:", labkit.backend, "|", labkit.device_name(), "|", labkit.provenance())
stream = labkit.Stream()

# %% [markdown]
# ## 1. The round trip that graphs leave behind
#
# In notebook 07 one graph replay is one token. But the host still decides, after every token,
# whether to launch the next: it waits for the GPU, and launches again. On the timeline below
# each token's graph is followed by a gap in which the GPU idles while the host notices the end
# and the next launch travels to the GPU.

# %%
model = dec.make_model(seed=0, max_seq=decode_bench.MAX_SEQ)   # the decode bench's decoder
step_exec = dec.capture_step(model, stream)
with timing.timeline("three tokens, one graph each") as rec:
    dec.generate_graph(model, 1, 3, stream, exec_=step_exec)
plot.timeline(rec.timeline, title="08-1 One graph per token: the host decides between tokens",
              stream_names=show.stream_roles(rec.timeline))
plt.show()

# %% [markdown]
# ## 2. Conditional nodes: what CUDA offers
#
# A *conditional node* holds one or more body graphs and a *condition*, a value that a kernel
# sets on the GPU. No host is involved in the decision.
#
# | CUDA call | what it does |
# | --- | --- |
# | `cudaGraphConditionalHandleCreate(&h, graph, default, flags)` | makes the condition `h`; with `flags = cudaGraphCondAssignDefault` every launch starts from `default`; without the flag the value at the start of a launch is undefined, so code must set it before a node reads it and must not count on it persisting from one launch to the next |
# | `cudaGraphAddNode(..., params)` with a `cudaConditionalNodeParams` (`handle`, `type`, `size`) | adds the node and returns its empty body graphs, to fill with node calls or by capture (`cudaStreamBeginCaptureToGraph`) |
# | `cudaGraphSetConditional(h, value)` | **device code**: a kernel sets the condition |
#
# The node types: **IF** (its body runs once if the value is not 0) and **WHILE** (tests the value
# before each iteration and runs its body again while it is not 0) since CUDA 12.3 (its release
# notes, and NVIDIA's `graphConditionalNodes` sample, which needs a 12.3 driver for them; a blog
# post of NVIDIA's says 12.4); **IF/ELSE** (an IF with a second body for 0) and **SWITCH** (body
# number `value`, none if there is no such body) since CUDA 12.8. A body may hold kernels, empty nodes, copies, memsets, child graphs and
# other conditionals; not host functions or memory allocations (instantiate refuses those, and
# labkit's error says so).
#
# `labkit.conditional_graph()` makes these calls through `labkit.rt`, the same on both backends;
# `labkit.set_condition(h, value)` is `cudaGraphSetConditional` for numba kernels. A WHILE that
# counts:

# %%
@labkit.kernel
def count_to(a, n, h):
    a[0] += 1
    if a[0] >= n:
        set_condition(h, 0)     # stop after this iteration


counter = labkit.to_device(np.zeros(1, np.int64))
g = labkit.conditional_graph()
cond = g.condition(default=1)          # cudaGraphCondAssignDefault: every launch starts at 1
body = g.while_loop(cond)
with body.capture(stream):
    count_to[1, 1, stream](counter, 50, cond.arg)
count_exec = g.instantiate()
count_exec.launch(stream)
stream.synchronize()
print(g, "->", counter.copy_to_host()[0], "iterations in one launch")
assert counter.copy_to_host()[0] == 50

# %% [markdown]
# ### The same WHILE node, call by call
#
# Here is what `conditional_graph()`, `condition()`, `while_loop()` and `body.capture()` do, with
# the raw calls of the table, in cuda-python's names (`labkit.rt` is `cuda.bindings.runtime` on a
# GPU, and the simulator's copy of it here). NVIDIA's `graphConditionalNodes` sample makes the same
# calls in C++. Three things the wrapper hides: the node's parameters are a
# `cudaGraphNodeParams` whose `conditional` member you fill; `cudaGraphAddNode` hands the empty body
# back in that same struct (`conditional.phGraph_out`); and the kernel receives the handle as a
# plain 64-bit integer.

# %%
from labkit import check, rt

raw_counter = labkit.to_device(np.zeros(1, np.int64))
raw_stream = check(rt.cudaStreamCreateWithFlags(rt.cudaStreamNonBlocking),
                   "cudaStreamCreateWithFlags")
graph = check(rt.cudaGraphCreate(0), "cudaGraphCreate")
ASSIGN_DEFAULT = int(rt.cudaGraphConditionalHandleFlags.cudaGraphCondAssignDefault)
handle = check(rt.cudaGraphConditionalHandleCreate(graph, 1, ASSIGN_DEFAULT),
               "cudaGraphConditionalHandleCreate")      # default 1, reset at every launch

params = rt.cudaGraphNodeParams()
params.type = rt.cudaGraphNodeType.cudaGraphNodeTypeConditional
params.conditional.handle = handle
params.conditional.type = rt.cudaGraphConditionalNodeType.cudaGraphCondTypeWhile
params.conditional.size = 1                             # a WHILE has one body
node = check(rt.cudaGraphAddNode(graph, None, None, 0, params), "cudaGraphAddNode")
body_graph = params.conditional.phGraph_out[0]          # the empty body, to fill

# relaxed: a first launch that loads the kernel's module is allowed inside the capture
check(rt.cudaStreamBeginCaptureToGraph(raw_stream, body_graph, None, None, 0,
                                       rt.cudaStreamCaptureMode.cudaStreamCaptureModeRelaxed),
      "cudaStreamBeginCaptureToGraph")
count_to[1, 1, raw_stream](raw_counter, 50, np.uint64(int(handle)))
check(rt.cudaStreamEndCapture(raw_stream), "cudaStreamEndCapture")

graph_exec = check(rt.cudaGraphInstantiate(graph, 0), "cudaGraphInstantiate")
check(rt.cudaGraphLaunch(graph_exec, raw_stream), "cudaGraphLaunch")
check(rt.cudaStreamSynchronize(raw_stream), "cudaStreamSynchronize")
print("raw calls ->", raw_counter.copy_to_host()[0], "iterations in one launch")
assert raw_counter.copy_to_host()[0] == counter.copy_to_host()[0]

check(rt.cudaGraphExecDestroy(graph_exec), "cudaGraphExecDestroy")
check(rt.cudaGraphDestroy(graph), "cudaGraphDestroy")       # the body goes with its node
check(rt.cudaStreamDestroy(raw_stream), "cudaStreamDestroy")

# %% [markdown]
# Both counted to 50 in one launch. The wrapper adds what these lines leave to you: it refuses a
# second node on one condition before CUDA does, its errors say what to change (a body that
# holds a host function or an allocation is named as the reason instantiate failed), and it holds
# numba's deferred frees during the capture, so an array collected in an earlier cell is not
# freed inside it (notebook 09 shows why that matters). From here on, the course uses the
# wrapper.

# %% [markdown]
# ## 3. IF, IF/ELSE and SWITCH
#
# A kernel upstream decides; the node downstream runs the body it picked. Below, `decide` copies
# a flag into the condition, and an IF/ELSE adds to `out[0]` on 1 or to `out[1]` on 0; then a
# SWITCH whose condition no kernel sets stays at its default, 2, and runs its third body.

# %%
@labkit.kernel
def decide(flag, h):
    set_condition(h, flag[0])


@labkit.kernel
def add_one_at(out, i):
    out[i] += 1


out = labkit.to_device(np.zeros(3, np.int64))
for value in (1, 0):
    flag = labkit.to_device(np.array([value], np.int64))
    gi = labkit.conditional_graph()
    c = gi.condition(default=0)
    with gi.capture(stream) as head:
        decide[1, 1, stream](flag, c.arg)
    then, other = gi.if_else(c, deps=head.nodes)
    with then.capture(stream):
        add_one_at[1, 1, stream](out, 0)
    with other.capture(stream):
        add_one_at[1, 1, stream](out, 1)
    with gi, gi.instantiate() as ex:
        ex.launch(stream)
        stream.synchronize()
    print(f"flag {value}: out = {out.copy_to_host()}")
assert out.copy_to_host().tolist() == [1, 1, 0]

sw = labkit.conditional_graph()
choice = sw.condition(default=2)
for i, b in enumerate(sw.switch(choice, 3)):
    with b.capture(stream):
        add_one_at[1, 1, stream](out, i)
with sw, sw.instantiate() as ex:
    ex.launch(stream)
    stream.synchronize()
print("SWITCH on 2 ran body 2:", out.copy_to_host())
assert out.copy_to_host().tolist() == [1, 1, 1]

# %% [markdown]
# ## 4. The decoder as one WHILE graph
#
# `labkit.course.device_loop` puts notebook 07's step in a WHILE body. Here are its two kernels
# of its own and how the graph is built. `start` runs once, before the loop: it sets the token,
# the position and a stop flag from a control buffer (prompt, EOS, limit) that the host writes
# only when they change. The body is the step's kernels but the last, then `advance_or_stop`,
# which does the step's last kernel's work (the position moves on) and, in the same thread, sets
# the condition to 0 when the step made the end-of-sequence token or the position reached the
# limit. So the body has exactly one step's kernels, and the loop's only extra GPU work per token
# is the WHILE iteration.

# %%
show.source(dl.start, dl.advance_or_stop, dl.DeviceLoop.__init__, dl.DeviceLoop._last_kernel)

# %% [markdown]
# The host launches once and waits once, sleeping on an event made with
# `cudaEventBlockingSync`. We pick an end-of-sequence token from numpy's own generation, about
# two thirds of the way to the model's last position, and check that the loop stops exactly
# there with numpy's tokens.

# %%
ref = dec.reference_generate(model, 1, model.cfg.max_seq)
eos, n_eos = dl.eos_for(ref, 2 * model.cfg.max_seq // 3)
loop = dl.build(model, stream)
r = loop.run(1, model.cfg.max_seq, eos)
print(f"EOS token {eos}, which numpy makes as token {n_eos}: the loop made {len(r.tokens)} "
      f"tokens and stopped at EOS: {r.stopped_at_eos}")
assert np.array_equal(r.tokens, dl.reference_until_eos(model, 1, model.cfg.max_seq, eos))
loop.close()

# %% [markdown]
# ### Every way to run the generation, measured
#
# `decode_bench.measure` (also `python -m labkit bench --decode --json`) runs each way in
# interleaved rounds and checks every one's tokens against numpy's:
#
# - **eager** and **graph per token**: notebook 07's, a synchronize after each token;
# - **back to back**: the step graph launched N times with one synchronize at the end, the
#   GPU-bound limit, which cannot stop at EOS;
# - **k per launch**: a graph of k steps (07's exercise), launched until the host finds EOS among
#   the k tokens it reads back after each launch;
# - **device loop**: the WHILE graph, one launch per generation;
# - **streaming loop**: the same, publishing each token as it is made (section 5).
#
# Host CPU is this process's CPU time over a whole generation, per token. A synchronize spins
# while it waits, so the rows that wait per token pay the GPU's time in host CPU too; the device
# loop's host sleeps, and pays one launch and one wake-up per generation.

# %% tags=["key-figure"]
res = decode_bench.measure(repeat=3, m=model, stream=stream, n_tokens=n_eos)   # the same EOS
assert res["tokens_match"], "a decoder's tokens differ from numpy's"   # correctness, not a claim
rows = {"eager": "eager", "graph per token": "graph", "back to back": "graph_back_to_back",
        f"{res['k_per_launch']} per launch": "k_per_launch", "device loop": "device_loop",
        "streaming loop": "device_loop_streaming"}
with plot.style():
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.6))
plot.bars({n: res[f"{k}_tokens_per_s"] for n, k in rows.items()}, ax=axes[0],
          ylabel="tokens/s", title="throughput")
plot.bars({n: res[f"{k}_host_cpu_us_per_token"] for n, k in rows.items()}, ax=axes[1],
          ylabel="host CPU µs per token (log)", log=True,
          title=f"host CPU over a {res['tokens']}-token generation")
fig.suptitle("08-2 The generation every way", fontsize=11)
plt.show()
print(f"{'':16s} {'tokens/s':>9s} {'host CPU µs/token':>18s}")
for n, k in rows.items():
    print(f"{n:16s} {res[f'{k}_tokens_per_s']:9,.0f} {res[f'{k}_host_cpu_us_per_token']:18.1f}")
claims.loop_frees_the_host(res["device_loop_host_cpu_us_per_token"],
                           res["graph_host_cpu_us_per_token"])
claims.loop_near_back_to_back(res["device_loop_tokens_per_s"],
                              res["graph_back_to_back_tokens_per_s"])

# %% [markdown]
# Read the right-hand bars first: the device loop's host CPU per token is a small fraction of
# one graph per token's, because its host sleeps through the generation. The streaming loop's
# host does not sleep: a thread watches for tokens (section 5). On the left, the device loop
# comes close to back to back, the most the GPU can do.
#
# ### Two rows to take apart
#
# Two bars on the left deserve a second look. **k per launch** makes one launch and one wait per
# k tokens instead of per token, yet it is barely faster than a graph per token, and with an
# unlucky EOS it is slower. The **streaming loop** does more work per token than the plain device
# loop (it also publishes each token), yet it comes out ahead. Both follow from what each row runs
# that the others do not, and from when its clock stops. `S`, the GPU time of one step, is back to
# back's time per token; `R`, one graph per token's round trip, is what it adds to `S`.
#
# - **k per launch** saves a round trip on every token but the last of each launch. It pays in
#   two ways. The host finds EOS only when a launch is done, so the last launch runs the steps
#   after EOS that its k-step graph holds, each a whole step of GPU work: up to k − 1 of them,
#   depending on where EOS falls. And each launch copies its k tokens back, so its round trip is
#   longer than `R`. When a step is long beside a round trip, as in this decoder, a single wasted
#   step costs as much as many saved round trips.
# - **The device loop's** host sleeps in `cudaEventSynchronize` on a `cudaEventBlockingSync`
#   event: the operating system wakes it some time after the GPU is done, and the clock stops only
#   then. The streaming loop's clock stops when its watching thread, which spins, sees the last
#   token: no wake-up, and not even the end of the graph. The lead is the price of the device
#   loop's nearly idle host, paid once per generation.

# %%
n, k = res["tokens"], res["k_per_launch"]
S = 1e6 / res["graph_back_to_back_tokens_per_s"]
R = 1e6 / res["graph_tokens_per_s"] - S
wasted = res["k_per_launch_wasted_steps"]
launches = (n + wasted) / k                       # k steps each, the last ones past EOS
k_trip = (1e6 * n / res["k_per_launch_tokens_per_s"] - (n + wasted) * S) / launches
print(f"one step S = {S:.1f} µs; one graph per token's round trip R = {R:.1f} µs")
print(f"{k} per launch: {launches:.0f} launches save {n - launches:.0f} round trips "
      f"of a graph per token's ({(n - launches) * R:,.0f} µs);")
print(f"  each of its own takes {k_trip:.1f} µs ({launches * (k_trip - R):,.0f} µs more in all);")
print(f"  {wasted:.0f} step(s) ran past EOS ({wasted * S:,.0f} µs; "
      f"{k - 1} would be {(k - 1) * S:,.0f} µs)")
loop_wall = 1e6 * n / res["device_loop_tokens_per_s"]
stream_wall = 1e6 * n / res["device_loop_streaming_tokens_per_s"]
print(f"device loop: {loop_wall:,.0f} µs until its host wakes")
print(f"streaming loop: {stream_wall:,.0f} µs until its thread sees the last token, "
      f"{loop_wall - stream_wall:,.0f} µs sooner")

# %% [markdown]
# Set the saved round trips against the other two costs: what is left is k per launch's whole
# gain, and the worst case of k − 1 wasted steps would take most or all of it. A shorter step, or
# a longer generation, is where k per launch pulls ahead. The streaming loop's lead is one wake-up
# per generation, and it pays for it in host CPU, the right-hand bars: the watching thread spins
# all the while.
#
# ### Where the tokens/s gain comes from, and its ceiling
#
# Per token, with a step of `S` µs of GPU work (what back to back runs at):
#
# - one graph per token costs `S + R`, where `R` is the host round trip: the wait's return, the
#   next launch, its arrival at the GPU;
# - the device loop costs `S + W`, where `W` is one WHILE iteration on the device (plus its one
#   wake-up, shared by all the generation's tokens).
#
# So the loop's gain over one graph per token is `(S + R) / (S + W)`: it grows as the step
# shrinks, and it can never pass `R / W`. The cell below measures `R` and `W` from the rows,
# for the decoder with 1, 2 and 4 layers (20, 35 and 65 kernels per token), each making as many
# tokens as above. The 4-layer decoder is the one you just measured: its row is 08-2's figures,
# not a second measurement, so the two agree.

# %%
sweep = decode_bench.by_step_size((1, 2, 4), repeat=3, n_tokens=res["tokens"],
                                  max_seq=model.cfg.max_seq, measured=res)
assert all(row["tokens_match"] for row in sweep), "a decoder's tokens differ from numpy's"
print(f"{'kernels':>7} {'S µs':>7} {'R µs':>6} {'W µs':>6} {'loop / graph per token':>23}")
for row in sweep:
    S = 1e6 / row["graph_back_to_back_tokens_per_s"]
    R = 1e6 / row["graph_tokens_per_s"] - S
    W = 1e6 / row["device_loop_tokens_per_s"] - S
    print(f"{row['kernels_per_token']:7d} {S:7.1f} {R:6.1f} {W:6.1f} "
          f"{row['device_loop_vs_graph']:22.3f}×")
gain_pct = {f"{row['kernels_per_token']} kernels": 100 * (row["device_loop_vs_graph"] - 1)
            for row in sweep}             # the gain itself: a ratio's bar from 0 would hide it
ax = plot.bars(gain_pct, ylabel="gain over a graph per token (% tokens/s)",
               title="08-3 The device loop's gain as the step shrinks")
lo, hi = ax.get_ylim()
ax.set_ylim(min(lo, 1.3 * min(gain_pct.values())), hi)   # a loss shows below 0
ax.axhline(0.0, color="0.4", lw=0.8)
plt.show()
claims.gain_small_at_a_large_step(sweep[-1]["kernels_per_token"],
                                  sweep[-1]["device_loop_vs_graph"])

# %% [markdown]
# The bars grow as the step shrinks, and at the full 65-kernel step the gain is a few per cent
# at most: this decoder is GPU-bound, and the round trip `R` the loop removes is small beside the
# step `S`, and not much larger than what its iteration `W` adds. A gain that small is within a host's run-to-run drift, so measure
# several times before you quote one. A slower host (a longer `R`) or a shorter step is where
# the loop pulls ahead.
#
# ## 5. Streaming: every token to the host as it is made
#
# The device loop has a cost the bars do not show: the host sees **no token until the whole
# generation ends**. A chat client that prints tokens as they come would wait for the last one.
# The fix keeps the single launch: the body's last kernel also **publishes** the token it just
# made to *mapped* pinned host memory (`labkit.mapped_array`: `cudaHostAlloc` with
# `cudaHostAllocMapped`, host memory with a device address). It writes the token, fences
# (`cuda.threadfence_system()`, so the host sees the writes in order), then the count; a host
# thread watches the count and takes each token as it arrives. No launch, copy or synchronize
# per token.

# %%
show.source(dl.advance_stop_publish, dl.StreamingLoop.run)

# %% [markdown]
# On a GPU the host reads the memory as the GPU writes it. On the simulator the kernels run at
# the launch, and labkit reads off when the host would have seen each token from the simulated
# GPU's clock: the end of each WHILE iteration.
#
# The figure compares when each token reaches the host: one graph per token (a sync each), k
# steps per launch (the host reads k tokens after each launch), the device loop (everything at
# the end) and the streaming loop. It is one generation of each, drawn in its colour from 08-2;
# their tokens/s are 08-2's, over several rounds, and this cell does not print them again.

# %%
limit = model.cfg.max_seq
live = dl.StreamingLoop(model, stream)
st = live.run(1, limit, eos)
assert st.stopped_at_eos and np.array_equal(st.tokens,
                                            dl.reference_until_eos(model, 1, limit, eos))
g1 = dec.generate_graph(model, 1, len(st.tokens), stream, exec_=step_exec)
k = res["k_per_launch"]
k_exec = dl.capture_steps(model, stream, k)
kr = dl.k_per_launch(model, k_exec, k, 1, limit, stream, eos)
with dl.build(model, stream) as whole:
    wr = whole.run(1, limit, eos)
arrivals = {"graph per token": np.cumsum(g1.token_us), f"{k} per launch": kr.arrival_us,
            "device loop": np.full(len(wr.tokens), wr.wall_us), "streaming loop": st.arrival_us}
color = dict(zip(rows, plot.colors_for(list(rows))))          # each row's colour in 08-2
step_us = 1e6 / res["graph_back_to_back_tokens_per_s"]
print(f"{'':16s} {'first token µs':>15s} {'gap p50 µs':>11s} {'gap p99 µs':>11s}")
for name, t in arrivals.items():
    gaps = np.diff(t)
    print(f"{name:16s} {t[0]:15.0f} {np.percentile(gaps, 50):11.1f} "
          f"{np.percentile(gaps, 99):11.1f}")
print(f"streaming: {len(st.tokens)} tokens equal numpy's, stopped at EOS; {k} per launch ran "
      f"{kr.wasted} step(s) past EOS")
with plot.style():
    fig, (ax, zoom) = plt.subplots(1, 2, figsize=(12, 4.6))
first = 3 * k                                            # the first few tokens, close up
for a in (ax, zoom):
    for name, t in arrivals.items():
        a.step(np.r_[0.0, t] / 1e3, np.arange(len(t) + 1), where="post", label=name,
               color=color[name])
    a.set_xlabel("time since the generation's first launch (ms)")
ax.set_xlim(0, None)
ax.set_ylim(0, None)
zoom.set_xlim(0, 1.05 * first * step_us / 1e3)
zoom.set_ylim(0, first + 1)
ax.set_ylabel("tokens the host has")
ax.set_title(f"the whole generation, {len(st.tokens)} tokens", fontsize=10)
zoom.set_title(f"its first {first} tokens", fontsize=10)
ax.legend(fontsize=9)
fig.suptitle(f"08-4 When each token reaches the host ({labkit.provenance()})", fontsize=11)
plt.show()
claims.stream_is_steady(float(np.median(st.inter_token_us)), step_us)
live.close()

# %% [markdown]
# The device loop's curve is a wall at the end: its time to first token is the whole generation.
# The streaming loop's is a straight line, a token about every step from the first, like one
# graph per token's but without the host's launch and wait per token. k per launch climbs in
# stairs of k: a client gets its tokens in bursts, and the last launch runs a few steps past EOS
# for nothing (the check comes late). It is still the practical middle way where conditional
# nodes are not available: one launch per k tokens, and a host that can act between launches.
#
# ### What it gains, honestly

# %%
reference.note("08")

# %% [markdown]
# - **Tokens/s barely move** at this step size (08-3): the loop removes a host round trip per
#   token and adds a WHILE iteration, and the two are of the same order.
# - **The host is free**, in the sleeping device loop: one launch per *generation* instead of per
#   token, and a busy or slow host no longer stretches each token.
# - **It stops exactly at EOS**, which back-to-back replays cannot, and k per launch only k − 1
#   steps late.
# - **Streaming costs a watching thread.** The streaming loop gives the client each token as it
#   is made with one launch, but a host thread spins on the count. A thread that polls less often
#   (a short sleep between reads) spends less CPU and delivers a little later.
# - **Where conditional nodes stop paying:** when the host must act on every token with logic
#   a kernel cannot run (sampling with host-side randomness, a stop rule written in Python, a
#   tool call), or when a body would need a host function or an allocation (it cannot hold them).
#   Then the round trip is the work, and a graph per token (or k per launch) is the right shape.
#
# ## Summary
#
# - A graph per token still leaves the host deciding between tokens; a conditional node moves that
#   decision to the GPU (`cudaGraphSetConditional`, `labkit.set_condition`, in a kernel).
# - IF and WHILE (CUDA 12.3), IF/ELSE and SWITCH (CUDA 12.8) bodies are ordinary graphs: capture
#   into them or add nodes.
# - A whole generation in one launch frees the host and stops exactly at EOS; published to mapped
#   host memory, its tokens reach the host one by one as they are made. Tokens/s gain little
#   when the GPU is the bottleneck.
#
# ## Exercise: a countdown loop
#
# Write `countdown(left, runs, h)`, one WHILE iteration of a countdown. Each iteration that finds
# work left (`left[0] > 0`) does one unit of it: add 1 to `runs[0]` and take 1 from `left[0]`. The
# loop must stop (`set_condition(h, 0)`) as soon as no work is left. So a launch from `left = k`
# does exactly `k` units in `k` iterations and leaves `left` at 0. Mind `k = 0`: the condition's
# default is 1, so the body runs once before anything has looked at `left`. The check tries
# k = 0, 1, 3 and 7, with a guard kernel of its own in the body, so a loop that never stops ends
# after 50 iterations instead of hanging a GPU.

# %% tags=["starter"]
@labkit.kernel
def countdown(left, runs, h):
    runs[0] += 1
    # your code: take one from left[0], and call set_condition(h, 0) when the loop must stop
    pass

# %% tags=["solution"]
@labkit.kernel
def countdown(left, runs, h):
    if left[0] > 0:
        runs[0] += 1
        left[0] -= 1
    if left[0] <= 0:
        set_condition(h, 0)

# %% tags=["check"]
from labkit.course.exercises import nb08
print("units of work per start:", nb08.check_countdown(countdown, stream))

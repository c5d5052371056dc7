# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/OWNER/cuda-graphs-lab/blob/main/notebooks/08_device_control_flow.ipynb) In Colab, run `%pip install -q "cuda-graphs-lab[cu12] @ git+https://github.com/OWNER/cuda-graphs-lab"` first.
#
# # 08 — Control flow on the device: conditional nodes
#
# **Prerequisites:** notebooks 01–07 (the capstone's decoder).
#
# **You will learn to**
# - see on a timeline why a host round trip per token remains after CUDA Graphs;
# - build WHILE, IF and SWITCH nodes whose condition a kernel sets on the GPU (`set_condition`);
# - run the capstone's whole generation, until the end-of-sequence token, in one graph launch;
# - judge honestly what that gains (host CPU, jitter, stopping exactly at EOS) and what it does not
#   (tokens/s when the GPU is the bottleneck).

# %%
import numpy as np
import matplotlib.pyplot as plt
import labkit
from labkit import plot, timing
from labkit.course import decoder as dec, device_loop as dl
from labkit.cli import decode_bench
from labkit import set_condition

print("backend:", labkit.backend, "|", labkit.device_name(), "|", labkit.provenance())
stream = labkit.Stream()

# %% [markdown]
# ## 1. The round trip that graphs leave behind
#
# In notebook 07 one graph replay is one token. But the host still decides, after every token,
# whether to launch the next: it waits for the GPU, reads (or at least waits for) the token, and
# launches again. On the timeline below each token's graph is followed by a gap in which the GPU
# idles while the host notices the end and launches the next replay.

# %%
model = dec.make_model(seed=0)
step_exec = dec.capture_step(model, stream)
with timing.timeline("three tokens, one graph each") as rec:
    dec.generate_graph(model, 1, 3, stream, exec_=step_exec)
plot.timeline(rec.timeline, title="one graph per token: the host decides between tokens")
plt.show()

# %% [markdown]
# ## 2. A WHILE loop that counts
#
# A *conditional node* holds one or more body graphs and a *condition* (a handle). A kernel sets
# the condition on the device with `set_condition(handle, value)`; WHILE runs its body again for
# as long as the value is not 0, testing it before every iteration. `labkit.conditional_graph()`
# builds such a graph with `cudaGraphConditionalHandleCreate`, `cudaGraphAddNode` and
# `cudaStreamBeginCaptureToGraph` (capture into the body) — the same calls on both backends.

# %%
@labkit.kernel
def count_to(a, n, h):
    a[0] += 1
    if a[0] >= n:
        set_condition(h, 0)     # stop after this iteration


counter = labkit.to_device(np.zeros(1, np.int64))
g = labkit.conditional_graph()
cond = g.condition(default=1)          # every launch starts at 1: the loop runs
body = g.while_loop(cond)
with body.capture(stream):
    count_to[1, 1, stream](counter, 50, cond.arg)
count_exec = g.instantiate()
count_exec.launch(stream)
stream.synchronize()
print(g, "->", counter.copy_to_host()[0], "iterations in one launch")
assert counter.copy_to_host()[0] == 50

# %% [markdown]
# ## 3. An IF that skips work, and a SWITCH
#
# A kernel upstream decides; the IF node runs its body only when the value is non-zero. Its
# body may hold kernels, copies, memsets, events, child graphs and other conditionals — not host
# functions or allocations (instantiate refuses those, and labkit's error says so).

# %%
@labkit.kernel
def decide(flag, h):
    set_condition(h, flag[0])


@labkit.kernel
def expensive(out, i):
    out[i] += 1


def if_graph(flag, out):
    g = labkit.conditional_graph()
    c = g.condition(default=0)
    with g.capture(stream) as head:
        decide[1, 1, stream](flag, c.arg)
    with g.if_then(c, deps=head.nodes).capture(stream):
        expensive[1, 1, stream](out, 0)
    return g


out = labkit.to_device(np.zeros(3, np.int64))
for value in (0, 1):
    flag = labkit.to_device(np.array([value], np.int64))
    gi = if_graph(flag, out)
    with gi.instantiate() as ex:
        ex.launch(stream)
        stream.synchronize()
    print(f"flag {value}: body ran {out.copy_to_host()[0]} time(s) so far")

sw = labkit.conditional_graph()
choice = sw.condition(default=2)
for i, b in enumerate(sw.switch(choice, 3)):
    with b.capture(stream):
        expensive[1, 1, stream](out, i)
with sw.instantiate() as ex:
    ex.launch(stream)
    stream.synchronize()
print("SWITCH on 2 ran body 2:", out.copy_to_host())
assert out.copy_to_host().tolist() == [1, 0, 1]

# %% [markdown]
# ## 4. The decoder as one WHILE graph
#
# `labkit.course.device_loop` puts notebook 07's step (65 kernels) in a WHILE body. Its last
# kernel, `advance_or_stop`, does what the step's last kernel does (move the position on) and, in
# the same thread, sets the condition to 0 when the step produced the end-of-sequence token or
# the position reached the limit: the stop test costs no kernel of its own, so the body has
# exactly the step's kernels, and the loop's only extra GPU work per token is the WHILE iteration. The prompt, EOS, limit, token, position and a stop flag all
# live in device memory; the host launches once and waits once (sleeping on a
# `cudaEventBlockingSync` event). We pick an EOS token that numpy's reference produces at about
# token 48, and check the loop stops exactly there.

# %%
ref = dec.reference_generate(model, 1, model.cfg.max_seq)
eos, n_eos = dl.eos_for(ref, 48)
loop = dl.build(model, stream)
r = loop.run(1, model.cfg.max_seq, eos)
print(f"EOS token {eos}: the loop made {len(r.tokens)} tokens, stopped at EOS: {r.stopped_at_eos}")
assert np.array_equal(r.tokens, dl.reference_until_eos(model, 1, model.cfg.max_seq, eos))
loop.close()

# %% [markdown]
# ### Eager, one graph per token, back to back, and the device loop
#
# `decode_bench.measure` (also `python -m labkit bench --decode --json`) runs the four in
# interleaved rounds and checks every decoder's tokens against numpy. *Back to back* launches
# the step graph N times with one synchronize: the GPU-bound limit, but it cannot stop at EOS.
# Host CPU is this process's CPU time over a whole generation, its launches and waits included,
# per token. A synchronize spins while it waits, so back to back, which spins once through the
# whole generation, costs the host about as much as a graph per token; the device loop's host
# sleeps on its event, and pays one launch and one wake-up per generation.

# %% tags=["key-figure"]
res = decode_bench.measure(repeat=3, m=model, stream=stream)
names = ["eager", "graph per token", "back to back", "device loop"]
tps = [res["eager_tokens_per_s"], res["graph_tokens_per_s"],
       res["graph_back_to_back_tokens_per_s"], res["device_loop_tokens_per_s"]]
cpu = [res["eager_host_cpu_us_per_token"], res["graph_host_cpu_us_per_token"],
       res["graph_back_to_back_host_cpu_us_per_token"], res["device_loop_host_cpu_us_per_token"]]
with plot.style():
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.4))
plot.bars(dict(zip(names, tps)), ax=axes[0], ylabel="tokens/s", title="throughput")
plot.bars(dict(zip(names, cpu)), ax=axes[1], ylabel="host CPU µs per token (log)", log=True,
          title=f"host CPU, whole generation of {res['tokens']} tokens")
plt.show()
print({k: (round(v, 2) if isinstance(v, float) else v) for k, v in res.items()})

# %%
assert res["tokens_match"], "a decoder's tokens differ from numpy's"   # correctness, not a claim
cpu_loop, cpu_graph = res["device_loop_host_cpu_us_per_token"], res["graph_host_cpu_us_per_token"]
# On the H200 (185-token generations): 2.0 µs per token for the loop (one launch, then the host
# sleeps on an event) against ~127 µs for one graph per token with a sync each; a tenth leaves
# a wide margin.
labkit.expect(cpu_loop <= 0.1 * cpu_graph,
              "the device loop costs the host at most a tenth of the CPU per token of one graph per token",
              measured=f"{cpu_loop:.1f} µs vs {cpu_graph:.1f} µs of host CPU per token",
              why="one launch per generation, and the host sleeps while the GPU decodes; "
                  "a host that spins instead of sleeping pays the whole wait",
              look="the right-hand plot")
ratio = res["device_loop_tokens_per_s"] / res["graph_back_to_back_tokens_per_s"]
# On the H200 0.97 (8,427 vs 8,708 tokens/s, 185 tokens), on the simulator 0.96: each WHILE
# iteration adds ~3-4 µs to a ~115 µs step; 0.85 leaves room for the host's run-to-run drift.
labkit.expect(ratio >= 0.85, "the device loop makes at least 0.85× the back-to-back limit",
              measured=f"{ratio:.2f}× ({res['device_loop_tokens_per_s']:.0f} vs "
                       f"{res['graph_back_to_back_tokens_per_s']:.0f} tokens/s)",
              why="each iteration adds a few µs to the step; on a GPU whose steps are much "
                  "shorter that share grows",
              look="the left-hand plot")

# %% [markdown]
# ### Where the tokens/s gain comes from, and its ceiling
#
# Per token, with a step of `S` µs of GPU work (what back to back runs at):
#
# - one graph per token costs `S + R`, where `R` is the host round trip: the launch, the wait's
#   wake-up, the next launch reaching the GPU;
# - the device loop costs `S + W`, where `W` is one WHILE iteration on the device.
#
# So the loop's gain over one graph per token is `(S + R) / (S + W)`: it grows as the step
# shrinks, and it can never pass `R / W`. The cell below measures `R` and `W` from the three
# rows, for the decoder with 1, 2 and 4 layers (20, 35 and 65 kernels per token).

# %%
sweep = decode_bench.by_step_size((1, 2, 4), repeat=3)
print(f"{'kernels':>7} {'S µs':>7} {'R µs':>6} {'W µs':>6} {'loop / graph per token':>23}")
for row in sweep:
    step = 1e6 / row["graph_back_to_back_tokens_per_s"]
    R = 1e6 / row["graph_tokens_per_s"] - step
    W = 1e6 / row["device_loop_tokens_per_s"] - step
    print(f"{row['kernels_per_token']:7d} {step:7.1f} {R:6.1f} {W:6.1f} {row['device_loop_vs_graph']:22.3f}×")
assert all(row["tokens_match"] for row in sweep), "a decoder's tokens differ from numpy's"
ax = plot.bars({f"{row['kernels_per_token']} kernels": row["device_loop_vs_graph"] for row in sweep},
               ylabel="device loop / one graph per token (tokens/s)",
               title="The device loop's gain as the step shrinks")
ax.axhline(1.0, color="0.4", lw=0.8, ls="--")
ax.set_ylim(0.8, max(1.2, 1.05 * max(row["device_loop_vs_graph"] for row in sweep)))
plt.show()
# On the H200, from the command line (`python -m labkit bench --decode --by-layers 1 2 4`,
# four runs on 2026-12-03/04): 1.045-1.12× at 20 kernels, 1.05-1.06× at 35, 1.03-1.05× at 65,
# with R 6-9 µs and W 3-4.5 µs. This notebook under Jupyter on 2026-12-04: 1.10×, 1.05×, 1.04×.
# The claim is the large step's: there the gain stays small; a tenth leaves room for drift.
big_step = sweep[-1]
labkit.expect(abs(big_step["device_loop_vs_graph"] - 1) < 0.1,
              f"at {big_step['kernels_per_token']} kernels per token the device loop is within 10% "
              "of one graph per token in tokens/s",
              measured=f"{big_step['device_loop_vs_graph']:.3f}×",
              why="this host's round trip is much longer (a busy or slow host), or this GPU's "
                  "WHILE iteration much dearer, than the H200's", look="the step-size bars")

# %% [markdown]
# ### What it gains, honestly
#
# - **Tokens/s barely move.** This decoder is GPU-bound, and the round trip the loop removes
#   (`R`, 6–9 µs on the H200) is only about twice what its WHILE iteration adds (`W`, 3–4.5 µs).
#   At 65 kernels per token the loop measured 1.03–1.05× one graph per token on the H200, at 20
#   kernels 1.05–1.12× (the round trip varies with the host's state), and the ceiling `R / W` is
#   about 2× for a step that does nothing. (One run of this notebook on 2026-12-03 measured
#   0.99–1.00× at every size; no later run, inside Jupyter or from the command line, repeated it:
#   measure a few times before you quote a gain this small.)
# - **Where `W` goes.** Timed with CUDA events on the H200, a WHILE iteration adds about 2.3 µs
#   of GPU time to the step. The rest of `W`, about 1.4 µs per token of a 185-token generation,
#   is the host waking up: the sleeping wait (`cudaEventBlockingSync`) returns about 250 µs after
#   the GPU finishes, a spinning wait about 70 µs, but spinning burns the CPU the loop was meant
#   to free. Two decode steps per WHILE iteration halve the iteration's share (2.3 → 1.4 µs per
#   token) and lifted the 65-kernel gain by about 0.01 (1.03 → 1.04× and 1.04 → 1.05× in two
#   runs), at a price: a step after the
#   end-of-sequence token runs for nothing, and the buffers need room for it. So 1.05× or more
#   at 65 kernels is within noise of the best this GPU and host can do; a slower host (a longer
#   `R`) or a shorter step is where the loop pulls ahead.
# - **The host is free.** One launch per *generation* instead of per token: the CPU time per
#   token drops from a spinning wait per token to one launch and one wake-up shared by all the
#   generation's tokens (a few µs per token here, less the longer the generation), and a busy or slow
#   host (`--host-load`) no longer stretches each token. Per-token latency loses the host's jitter.
# - **It stops exactly at EOS**, which back-to-back replays cannot: they run a fixed count.
# - **It pays most for small, fast steps and slow hosts**, where the round trip `R` is a large
#   share of a token: the step-size bars measure the first.
#
# **Where conditional nodes stop paying:** whenever the host must act per token — sampling with
# host-side randomness or logic, streaming each token to a client, a stop rule written in Python,
# or a body that needs a host function or an allocation (a body cannot hold them). Then the round
# trip is the work, and a graph per token is the right shape.

# %% [markdown]
# ## Summary
#
# - A graph per token still leaves the host deciding between tokens; a conditional node moves
#   that decision to the GPU (`set_condition` in a kernel).
# - WHILE, IF, IF/ELSE and SWITCH bodies are ordinary graphs: capture into them or add nodes.
# - A whole generation in one launch frees the host and stops exactly at EOS; it adds ~2.3 µs
#   of GPU time per iteration (plus one wake-up per generation) and gains little tokens/s when
#   the GPU is the bottleneck.

# %% [markdown]
# ## Exercise: a countdown loop
#
# Write `countdown(left, runs, h)`, one WHILE iteration: add 1 to `runs[0]`, take 1 from
# `left[0]`, and stop the loop once `left[0]` has reached 0 — so a launch that starts at
# `left = k` runs exactly `k` iterations. The check runs it for k = 1, 3 and 7 (with its own
# guard kernel, so a loop that never stops ends after 50 iterations instead of hanging a GPU).

# %% tags=["starter"]
@labkit.kernel
def countdown(left, runs, h):
    runs[0] += 1
    # your code: take one from left[0], and call set_condition(h, 0) when the loop must stop
    pass

# %% tags=["solution"]
@labkit.kernel
def countdown(left, runs, h):
    runs[0] += 1
    left[0] -= 1
    if left[0] == 0:
        set_condition(h, 0)

# %% tags=["check"]
from labkit.course.exercises import nb08
print("iterations per start:", nb08.check_countdown(countdown, stream))

# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 07 — Capstone: a token-by-token decode loop
#
# **Prerequisites:** notebooks 01–06. **Time:** about 75 minutes.
#
# **You will learn to**
# - see why decoding one token at a time is the textbook case for CUDA Graphs: one token is dozens
#   of tiny kernels;
# - keep the state that changes every token (the KV-cache position, the token id) in device
#   memory, so one captured step serves every token;
# - prefill a prompt eagerly, then decode with a graph, and read time to first token,
#   inter-token latency and tokens per second, with the tokens checked against numpy;
# - say what the gain becomes at a real model's size, and where it comes from;
# - capture the step and write the replay loop yourself (the exercise).

# %%
import numpy as np
import matplotlib.pyplot as plt
import labkit
from labkit import plot, timing
from labkit.course import decoder as dec, reference, show, workloads
from labkit.course.claims import nb07 as claims
from labkit.course.decoder import whatif

print("backend:", labkit.backend, "|", labkit.device_name(), "|", labkit.provenance())
N_TOK = workloads.sizes()["tokens"]
stream = labkit.Stream()

# %% [markdown]
# ## 1. The model, and one step of it
#
# `labkit.course.decoder` is a small transformer decoder written as numba kernels. Per layer:
# RMSNorm, the Q/K/V projections (matrix-vector products), a KV-cache write, attention scores,
# softmax, the weighted sum of values, the output projection, a residual add, RMSNorm, MLP up,
# SiLU, MLP down, a residual add. Then a final RMSNorm, the logits and a greedy argmax. Every
# kernel has a numpy reference that the tests prove equal to it, and the weights come from
# numpy's seeded generator: nothing is downloaded.

# %%
model = dec.make_model(seed=0)
print(model.cfg)
print("kernels per token:", model.cfg.kernels_per_token)

# %% [markdown]
# Here is one decode step, exactly as it runs. `step_to_token` walks `launches`, the step's
# kernels in order; `step` adds the last one, `advance`. Look at which arguments are device
# arrays: the token `tok` and the position `pos` are among them. No Python number that changes
# from token to token is passed to any kernel.

# %%
show.source(dec.step, dec.step_to_token, dec.launches)

# %% [markdown]
# And one of its kernels, the matrix-vector product that most of the step's time goes into at a
# real size: one block per output row, each thread summing a stride of the row, then a block
# reduction (`block_reduce`, shared by every reduction, so they all add in one order).

# %%
show.source(dec.matvec)

# %% [markdown]
# ## 2. The position changes every token: how can one graph serve them all?
#
# A captured graph freezes each kernel's arguments, scalars included (notebook 03). Were the
# KV-cache position a Python `int`, every replay would write and attend at the position of the
# capture. Two ways out:
#
# - **Update the nodes before each replay** (notebook 05): every node whose kernel takes the
#   position gets new parameters, one host call each, every token. The cell below counts them.
# - **Keep the state on the device**: the kernels read `pos[0]` and `tok[0]` from one-element
#   device arrays; `argmax` writes the next token into `tok`, and the step's last kernel,
#   `advance`, moves `pos` on. Between two replays the host changes nothing, so one
#   `cudaGraphLaunch` is the whole per-token host cost.
#
# Serving engines sit between the two: vLLM's host writes the positions of the next step into
# static input buffers (one small copy) before each replay, and the graph reads them there. A
# GPU that advances its own position, as here, is what notebook 08 builds on to run a whole
# generation without the host.

# %%
pos_nodes = sum(any(a is model.state["pos"] for a in args)
                for _, _, _, args in dec.launches(model.cfg, model.dev, model.state))
print(f"nodes that read the position: {pos_nodes} of {model.cfg.kernels_per_token} "
      "(node updates per token, were it a Python int)")
exec_step = dec.capture_step(model, stream)
print(exec_step.graph, "| kernel nodes:", len(exec_step.graph.kernel_nodes()))
assert len(exec_step.graph.kernel_nodes()) == model.cfg.kernels_per_token

# %% [markdown]
# ## 3. Prefill, then decode: the same tokens three ways
#
# A request starts with a prompt. The **prefill** runs it through the model, filling the KV cache
# (here eagerly, one position at a time; a serving engine runs the prompt as one batched pass).
# Then **decode** makes one token per step: eagerly, or by replaying the captured step. The
# numpy reference does the same arithmetic. The weights are float64, so a different summation
# order on the GPU is very unlikely to flip a near-tie in the argmax; the cell checks every token
# anyway.

# %%
PROMPT = [1, 17, 42, 99]
N_TOK = min(N_TOK, model.cfg.max_seq - (len(PROMPT) - 1))   # prompt and tokens share a KV cache
ref = dec.reference_generate(model, PROMPT, N_TOK)
eager = dec.generate_eager(model, PROMPT, N_TOK, stream)
graph = dec.generate_graph(model, PROMPT, N_TOK, stream)
print("numpy :", ref)
print("eager :", eager.tokens)
print("graph :", graph.tokens)
assert np.array_equal(eager.tokens, ref) and np.array_equal(graph.tokens, ref), "token mismatch"
print("identical: yes")

# %% [markdown]
# ## 4. Time to first token, inter-token latency, tokens per second
#
# Three numbers describe a generation as its user feels it: the **time to first token** (the
# prefill, then the first step), the **inter-token latency** (the gap between tokens after that)
# and **tokens per second**. The prefill is eager in both rows, so it costs the same; the graph
# changes what comes after it. (On a GPU the table also has PyTorch rows, eager and replaying a
# `torch.cuda.CUDAGraph`.)

# %% tags=["key-figure"]
rows = {"numba eager": eager, "numba graph": graph}
if labkit.backend == "cuda":
    try:
        for name, g in (("torch eager", False), ("torch CUDAGraph", True)):
            r = dec.torch_generate(model, PROMPT, N_TOK, graph=g)
            rows[name] = r
            same = np.array_equal(r.tokens, ref)
            print(f"{name}: tokens {'match' if same else 'DIFFER'} numpy's")
    except Exception as exc:      # no torch, or a torch without CUDA
        print(f"PyTorch rows skipped: {type(exc).__name__}: {exc}")

print(f"{'':16s} {'TTFT µs':>9s} {'ITL p50 µs':>11s} {'ITL p99 µs':>11s} {'tokens/s':>9s} "
      f"{'setup µs':>9s}")
for name, r in rows.items():
    itl = timing.Stats(r.inter_token_us, label=name)
    print(f"{name:16s} {r.ttft_us:9.0f} {itl.p50:11.1f} {itl.p99:11.1f} {r.tokens_per_s:9.0f} "
          f"{r.setup_us:9.0f}")
print(f"graph / eager, tokens per second: {graph.tokens_per_s / eager.tokens_per_s:.1f}×")
claims.graph_decodes_faster(eager.tokens_per_s, graph.tokens_per_s)
plot.bars({n: r.tokens_per_s for n, r in rows.items()}, ylabel="tokens per second",
          title="07-1 Decode throughput (after the same eager prefill)")
plt.show()

# %%
# 07-2: the jitter in µs, each gap less its row's median (the table has the levels)
jitter = {n: np.asarray(r.inter_token_us) - np.median(r.inter_token_us) for n, r in rows.items()}
for n, j in jitter.items():
    print(f"{n:16s} gaps from {j.min():+8.1f} to {j.max():+8.1f} µs around the median; "
          f"p99 {np.percentile(j, 99):+7.1f} µs")
plot.latency_cdf({n: timing.Stats(j, label=n, unit="µs from its row's median")
                  for n, j in jitter.items()},
                 title="07-2 Inter-token jitter, each gap less its row's median");

# %% [markdown]
# Read the two rows side by side: the time to first token differs only by its first step, since
# the prefill is eager in both; the inter-token latency falls by about the factor the throughput
# rises. (A graph for the prefill too would need one per prompt length, and a prompt's pass is
# long enough to hide its launches: serving engines have mostly captured decode, and run the
# prefill, or at least its attention, eagerly.) The
# eager row is host time (a numba dispatch per kernel) and moves with your host's speed and
# load; the graph row is mostly the GPU's time for the step's kernels. 07-2 shows how steady each
# row is, in µs: each gap less its row's median, so both curves centre on 0 and their widths
# compare directly. Eager's curve spreads over far more µs than the graph's: every one of its
# kernel launches can be held up by the host, while a replay is one launch. Where a curve's top
# reaches right, the host's hiccups reached those tokens.
#
# On a GPU run, "torch CUDAGraph" replays a captured step too, yet it comes out slower than
# "numba graph": PyTorch runs the same step as many more, smaller operations (each multiply,
# mean, `rsqrt`, mask and index is a kernel of its own where the course's kernels fuse them), so
# its graph holds several times the nodes, and a replay costs GPU time for every node. A graph
# removes launch cost; it does not merge kernels.
#
# The capture, instantiation and upload (`setup µs`) are paid once. It is timed around labkit's
# calls, so on a GPU it also holds labkit's own share of the capture (notebook 06 measures that
# share beside the bare cuda-python calls); the simulator charges only CUDA's costs.
# `plot.breakeven` gives the number of tokens after which the graph has paid for itself:

# %%
be = plot.breakeven(graph.setup_us, np.median(eager.token_us), np.median(graph.token_us))
print(f"setup {graph.setup_us:.0f} µs; the graph pays for itself after "
      f"{'never' if be is None else f'{be:.1f}'} tokens of a {N_TOK}-token generation")
claims.graph_pays_back_within_a_generation(be, N_TOK)
plot.amortization(graph.setup_us, np.median(eager.token_us), np.median(graph.token_us), N_TOK,
                  title="07-3 When does capturing the step pay off?", xlabel="tokens",
                  legend="below");       # the break-even label keeps the top left

# %% [markdown]
# A capture runs nothing (notebook 02): it costs the launches it records, cheaper than running
# them, plus instantiate and upload. So the printed break-even is a few tokens at most, and
# every generation after the first reuses the graph for free.
#
# ## 5. The timeline of one token
#
# Eager: the CPU row is a wall of launches and the GPU row mostly gaps, since each kernel takes
# less time than the CPU needs to launch the next. Graph: one launch call, then the kernels back
# to back. The two timelines share one time axis. On a GPU the timeline is a CUPTI trace,
# and tracing makes each launch a little dearer (the note under each figure says by how much).

# %%
tls = {}
for name in ("eager", "graph"):
    dec.reset(model, PROMPT[0], stream)
    with timing.timeline(note=f"one token, {name}") as rec:
        if name == "eager":
            dec.step(model, stream)
        else:
            exec_step.launch(stream)
        stream.synchronize()
    tls[name] = rec.timeline
for name, tl in tls.items():
    gpu_rows = [r for r in tl.rows() if r != "CPU"]
    if gpu_rows:
        print(f"{name}: the GPU is busy {tl.busy_fraction(gpu_rows[0]):.0%} of the token's time")
plot.timelines([(tl, f"07-4 One token, {name}") for name, tl in tls.items()],
               stream_names=show.stream_roles(*tls.values()), max_labels=0)
plt.show()

# %% [markdown]
# ## 6. What if the model were real size?
#
# The capstone's model is tiny on purpose: its kernels take about a microsecond each, so the
# launches are what you see. A real model is different. Decoding one token of a batch-1, 7B-class
# model reads every weight once: about 14 GB in bf16, which even the fastest memory takes
# milliseconds to stream. The cell below prices the **same step**, kernel for kernel, at that size
# with the simulator's own cost model (each kernel: its measured floor plus its bytes at the
# GPU's memory bandwidth, from the calibration) and sets it beside the host's launch cost per
# token for three launch paths: numba's, a C++ `<<<>>>` launch and PyTorch's eager dispatch
# (the last two from the reference data below). An eager token takes the longer of the host's
# launches and the GPU's kernels, since they overlap; a graph token, one launch and the kernels.
# Both pay the same gap between kernels on the GPU, the one measured between graph nodes (an
# eager stream's real gap is larger; the calibration does not measure it, so the model leaves
# that difference out). **This is a model, not a measurement.**

# %%
priced = whatif.table()
for p in priced:
    print(f"{p.label}: {p.kernels} kernels, {p.gb:.3f} GB read and written per token")
    print(f"    GPU {p.gpu_us:,.0f} µs per token; one graph launch {p.graph_launch_us:.1f} µs")
    for k, v in p.host_us.items():
        pace = "host-bound" if v > p.gpu_us else "GPU-bound"    # which side sets the pace
        print(f"    eager {k:8s} launches {v:7,.0f} µs per token, {pace:10s}  "
              f"graph / eager {p.speedup[k]:.2f}×")
with plot.style():
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
for ax, p in zip(axes, priced):
    bars = ax.bar(list(p.speedup), list(p.speedup.values()), color=["#2a7", "#47a", "#c74"])
    ax.bar_label(bars, fmt="%.2f×", fontsize=9)
    ax.axhline(1.0, color="0.4", lw=0.8, ls="--")
    ax.set_ylim(0, 1.15 * max(p.speedup.values()))
    ax.set_title(p.label, fontsize=10)
    ax.set_xlabel("launch path")
axes[0].set_ylabel("graph / eager, tokens per second")
axes[1].axhspan(*whatif.published_gain(), color="0.85", zorder=0,
                label="llama.cpp, published (7B, batch 1)")
axes[1].legend(fontsize=8, loc="upper right")
fig.suptitle("07-5 The graph's gain by size and launch path: a model on the package's "
             "calibration, not a measurement (each panel its own scale)", fontsize=10)
plt.show()
reference.note("07")

# %% [markdown]
# Where the gain comes from, at each size:
#
# - **The capstone's size.** Every launch path takes longer to launch the step than the GPU
#   takes to run it: the host sets the pace, and the graph removes nearly all of it. The gain
#   is launch cost over GPU time, large for numba and real even for C++.
# - **7B-class.** The step's kernels now take milliseconds, bound by memory bandwidth. A launch
#   path faster than that hides behind the GPU, and the model gives it no gain (both sides pay
#   the same GPU time; the graph adds only its one launch); a slower one still sets the pace, and
#   the graph saves the difference. numba's dispatch is far slower; PyTorch's is close to the GPU's time, so its
#   modelled gain is small whichever side it falls on.
# - **What the model leaves out** is where llama.cpp's published gain (the shaded band) comes
#   from: the gap the GPU leaves between eagerly launched kernels, and the host's own work per
#   token. So read the model's small gains at real size as a floor for a fast launch path, not
#   a forecast. Where the host does much per token, real gains stay large: PyTorch's gpt-fast
#   reports about four times the tokens per second of eager PyTorch for a 7B model at batch 1
#   ("Accelerating Generative AI with PyTorch II: GPT, Fast"), with `torch.compile`, its CUDA
#   graphs and a static KV cache together, so that figure counts the compiler's kernel fusion
#   too.
#
# ## Summary
#
# - One decode step is dozens of short kernels; launched eagerly, the CPU's launch cost, not the
#   GPU, sets the token rate (07-4).
# - Keeping the position and the token in device memory makes a single captured step valid for
#   every token: no node updates, nothing for the host to change between replays.
# - After the same eager prefill, the graph decode makes exactly numpy's tokens at a multiple of
#   the tokens per second and a fraction of the inter-token latency (07-1, 07-2); its setup is
#   paid back within a few tokens (07-3).
# - At a real model's size the weights' bytes set the pace; in the model the gain shrinks to what
#   the launches cost beyond the GPU's time (07-5), a floor: a framework with much host work per
#   token still reports a multiple.
#
# ## Exercise: the capstone is yours
#
# Write the two pieces the graph decode needs:
#
# - `build(model, stream, k)`: capture `k` decode steps (`dec.step(model, stream)`) into one
#   graph and return the instantiated executable. With `k = 1` it is the step graph above; with
#   larger `k` one launch makes `k` tokens.
# - `decode(exec_, launches, stream)`: replay `exec_` that many times, one after another, and
#   return a list of each replay's latency in µs, from just before its launch until its tokens
#   are ready (`labkit.host_us()` reads the host's clock; CUDA events recorded on the stream
#   around the launch, `labkit.Event()` with `record` and `elapsed_ms`, are a right answer too).
#
# The check prefills a prompt of its own, runs your two functions for k = 1, 3 and 5, and
# compares every token with numpy's. It also makes one replay's launch slow on purpose: your
# latencies should show which.

# %% tags=["starter"]
from labkit.course.exercises import nb07

def build(model, stream, k):
    dec.capture_step(model, stream).close()   # the kernels compile and load outside your capture
    # your code: capture k decode steps on `stream`, instantiate, return the executable
    return None


def decode(exec_, launches, stream):
    latencies = []
    # your code: one replay at a time, each timed until its tokens are ready
    return latencies


# %% tags=["solution"]
from labkit.course.exercises import nb07

def build(model, stream, k):
    dec.capture_step(model, stream).close()   # the kernels compile and load outside your capture
    with labkit.capture(stream) as cap:
        for _ in range(k):
            dec.step(model, stream)
    return cap.graph.instantiate(upload_stream=stream)


def decode(exec_, launches, stream):
    latencies = []
    for _ in range(launches):
        t0 = labkit.host_us()
        exec_.launch(stream)
        stream.synchronize()
        latencies.append(labkit.host_us() - t0)
    return latencies


# %% tags=["check"]
nb07.check_capstone(build, decode, stream)

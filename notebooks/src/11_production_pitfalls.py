# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 11 — What goes wrong in production, and the fix
#
# The course so far built graphs by hand, one at a time. A serving engine captures dozens of
# them at start-up, draws random numbers inside them, feeds them tensors a framework allocated,
# runs them on several GPUs at once, and must be debugged when an answer comes out wrong. Each
# section here takes one thing practitioners hit, in the order of their issue trackers: the idea,
# the smallest demo that shows it on the simulator (or your GPU), one figure and one takeaway.
#
# **Prerequisites:** notebooks 05 (static buffers, a cache of graphs), 07 (the decoder), 08
# (conditional nodes), 09 (the eager switch, capture modes) and 10 (the frameworks' vocabulary).
#
# **You will learn to**
# - say what each captured size costs in memory and start-up time, and bound both as engines do:
#   a short list of sizes with padding, one shared pool, the largest size captured first;
# - draw random numbers inside a graph so that every replay draws new ones, and map that onto
#   PyTorch's graph-safe generator;
# - capture collectives safely: the same collectives on every rank, thread-local capture,
#   communicator set-up before capture, and what hangs when a rule is broken;
# - find an input that moved since capture with an address check and with the eager switch;
# - serve speculative decoding, whose accepted count changes at every step, with graphs: a
#   graph per draft length, padding, or the count on the device with a conditional node;
# - reach for the right debugging tool, on a GPU and on the simulator;
# - decide, from a symptom, what the cause is and which section shows the fix.
#
# About 95 minutes, the exercise included.

# %%
import numpy as np
import matplotlib
import matplotlib.pyplot as plt
import labkit
from labkit import plot
from labkit.course import frameworks as fw, production as pr
from labkit.course.claims import nb11 as claims

print("backend:", labkit.backend, "|", labkit.device_name(), "|", labkit.provenance())
stream = labkit.Stream()

# %% [markdown]
# ## 1. Many captured sizes: memory and start-up time
#
# A graph freezes its shapes, so an engine that serves batches of 1 to 512 sequences captures one
# graph per batch size it supports and pads each batch up to the next captured size (notebook 05,
# section 8). Every captured size costs twice:
#
# - **memory**: each graph's kernels read and write buffers at fixed addresses, and those buffers
#   stay allocated as long as the graph may be replayed;
# - **start-up time**: every size is warmed up, captured and instantiated before the first
#   request is served.
#
# vLLM's default list, unless you give one, has this many sizes (its rule, read in its source:
# 1, 2, 4, then every 8 below 256, then every 16 up to twice `max_num_seqs`, at most 512):

# %%
sizes = pr.capture_sizes(max_num_seqs=256)
print(f"{len(sizes)} sizes:", sizes[:8], "...", sizes[-3:])

# %% [markdown]
# Here each size's graph is a model step of 8 kernels over `size × 1024` floats, and its buffer
# comes from one of three places:
#
# - **a buffer per graph**: each graph allocates its own, so memory is the sum over all sizes;
# - **one pool, smallest first**: graphs take their buffer from a shared pool and give it back
#   after the capture (they are replayed one at a time, so they may share). Captured from the
#   smallest size up, each new size finds no free buffer large enough, and the pool grows;
# - **one pool, largest first**: the first capture makes the largest buffer, and every smaller
#   size reuses it.
#
# The memory is what the device's free memory fell by (`cudaMemGetInfo`), the start-up time what
# capturing and instantiating took on the clock, for the first 1, 8, 16, 32 and all of vLLM's
# sizes.

# %% tags=["key-figure"]
counts = [1, 8, 16, 32, len(sizes)]
mem_mib = {s: [] for s in pr.STRATEGIES}
startup_ms = {s: [] for s in pr.STRATEGIES}
for k in counts:
    for strategy in pr.STRATEGIES:
        graphs, mem, startup = pr.capture_all(sizes[:k], strategy, stream)
        mem_mib[strategy].append(mem / 2**20)
        startup_ms[strategy].append(startup / 1e3)
        for ex, _ in graphs.values():
            ex.close()
        del graphs
for strategy in pr.STRATEGIES:
    print(f"{strategy:26s} memory (MiB): " + ", ".join(f"{m:.1f}" for m in mem_mib[strategy])
          + "   start-up (ms): " + ", ".join(f"{t:.1f}" for t in startup_ms[strategy]))
largest_mib = max(sizes) * 1024 * 4 / 2**20
claims.largest_first_holds_one_buffer(mem_mib["one pool, largest first"][-1], largest_mib,
                                      mem_mib["a buffer per graph"][-1])

fig, (ax_m, ax_t) = plt.subplots(1, 2, figsize=(13, 4.6))
styles = {"a buffer per graph": dict(lw=5, alpha=0.45, marker="o", ms=9),
          "one pool, smallest first": dict(lw=1.5, ls="--", marker="x"),
          "one pool, largest first": dict(lw=1.5, marker="o")}
for strategy in pr.STRATEGIES:              # the first two coincide: the wide line lies beneath
    ax_m.plot(counts, mem_mib[strategy], label=strategy, **styles[strategy])
ax_t.plot(counts, startup_ms["a buffer per graph"], marker="o", color="C3")
ax_m.set(xlabel="captured sizes", ylabel="device memory for the graphs' buffers (MiB)",
         title="Memory", ylim=(0, None))
ax_t.set(xlabel="captured sizes", ylabel="start-up: capture + instantiate (ms)",
         title="Start-up time", ylim=(0, None))
ax_m.legend()
fig.suptitle(f"11-1 The cost of capturing many batch sizes\n{labkit.provenance()}", y=1.04)
plt.show()

# %% [markdown]
# Memory grows with the *sum* of the captured sizes when each graph owns its buffers, and when a
# shared pool is filled from the smallest size up; captured largest first, the pool holds one
# buffer, the largest size's, whatever the number of sizes. Start-up time grows with the number
# of sizes whatever the memory does: every size is one more capture and instantiation.
#
# Engines bound both the same ways:
#
# - **fewer sizes, with padding**: a capture-size list (vLLM's `cudagraph_capture_sizes` and
#   `max_cudagraph_capture_size`, SGLang's `--cuda-graph-max-bs`, TensorRT-LLM's
#   `cuda_graph_config.batch_sizes`); a batch above the largest size runs eagerly;
# - **one pool shared by all graphs** (PyTorch's `pool=` / `graph_pool_handle()`, which vLLM and
#   TensorRT-LLM pass to every capture);
# - **largest first**: vLLM, SGLang and TensorRT-LLM capture from the largest size down, so the
#   smaller graphs reuse the larger ones' memory.
#
# Real models keep far more than one buffer per graph, so the frameworks' own figures are larger
# than yours:

# %%
fw.reports_note()

# %% [markdown]
# **Takeaway:** every captured size costs start-up time, and memory too unless all graphs share
# one pool filled largest first; capture the sizes your traffic needs, not every size.

# %% [markdown]
# ## 2. Random numbers inside a graph
#
# Sampling, dropout and noise draw random numbers on the GPU. A GPU generator is usually
# *counter-based*: number `i` of the stream is a hash of the seed and of `offset + i`, and after
# each draw the offset moves on by the numbers drawn. Here is one: `uniform_at(out, seed,
# offset)` fills `out` with numbers `offset` … `offset + n - 1` of `seed`'s stream.
#
# Called eagerly, the host passes a new offset at every call. Captured, the seed and offset are
# *kernel arguments*, frozen into the graph like any argument (notebook 03): every replay draws
# the very same numbers.

# %%
N_RAND, SEED, REPLAYS = 256, 11, 4
rand = labkit.device_array(N_RAND, np.float32)
blocks = (N_RAND + 255) // 256
pr.uniform_at[blocks, 256, stream](rand, SEED, 0)          # compiled and loaded
stream.synchronize()

with labkit.capture(stream) as cap:
    pr.uniform_at[blocks, 256, stream](rand, SEED, 0)      # offset 0, frozen at capture
frozen = []
with cap.graph, cap.graph.instantiate() as ex:
    for _ in range(REPLAYS):
        ex.launch(stream)
        stream.synchronize()
        frozen.append(rand.copy_to_host())
print("every replay drew the same numbers:",
      all(np.array_equal(frozen[0], f) for f in frozen))

# %% [markdown]
# The fix keeps the generator's state **on the device**: the seed and the offset live in a small
# device array, the drawing kernel reads them at every run (`uniform_from_state`), and a
# one-thread kernel in the same graph moves the offset on (`advance_state`). A replay then runs
# the draw with whatever offset the last replay left, and moves it on for the next.

# %%
state = labkit.to_device(np.array([SEED, 0], np.uint64))
pr.uniform_from_state[blocks, 256, stream](rand, state)    # compiled and loaded
pr.advance_state[1, 1, stream](state, 0)
stream.synchronize()

with labkit.capture(stream) as cap:
    pr.uniform_from_state[blocks, 256, stream](rand, state)
    pr.advance_state[1, 1, stream](state, N_RAND)
fresh = []
with cap.graph, cap.graph.instantiate() as ex:
    for _ in range(REPLAYS):
        ex.launch(stream)
        stream.synchronize()
        fresh.append(rand.copy_to_host())
want = pr.uniform_reference(SEED, 0, REPLAYS * N_RAND)
assert np.array_equal(np.concatenate(fresh), want), "the replays continue the stream"
print("replays drew numbers 0 …", REPLAYS * N_RAND - 1, "of the stream, each once; offset now",
      int(state.copy_to_host()[1]))

fig, axes = plt.subplots(1, 2, figsize=(13, 4), sharey=True)
for ax, draws, name in ((axes[0], frozen, "seed and offset as arguments"),
                        (axes[1], fresh, "state on the device, advanced in the graph")):
    for k, d in enumerate(draws):
        ax.plot(np.arange(32), d[:32], marker=".", lw=1, label=f"replay {k + 1}")
    ax.set(title=name, xlabel="index in the draw", ylim=(0, 1))
axes[0].set_ylabel("number drawn")
axes[1].legend(loc="upper right", fontsize=8)
fig.suptitle(f"11-2 The first 32 numbers of {REPLAYS} replays: on the left the replays lie on top "
             f"of each other\n{labkit.provenance()}", y=1.05)
plt.show()

# %% [markdown]
# PyTorch does exactly this for its CUDA generators. During a capture, its random kernels read
# the generator's seed and offset from device memory, and the capture records how far the graph
# moves the offset; each replay moves the generator's offset on by that much, so every replay
# draws new numbers and the eager code after it continues the stream. A generator you made
# yourself is registered with the graph (`CUDAGraph.register_generator_state`), and
# `Generator.graphsafe_get_state()` / `graphsafe_set_state()` save and restore a generator's
# state without breaking a capture. numba's device-side generator
# (`numba.cuda.random.xoroshiro128p`) keeps one state per thread in a device array that each
# draw updates: graph-safe for the same reason. What is not graph-safe: a seed or offset the
# host computes and passes as an argument, or copies in during the capture.
#
# **Takeaway:** a generator's state must live in device memory and move on inside the graph;
# anything the host passed at capture is replayed unchanged.

# %% [markdown]
# ## 3. Collectives inside a graph (NCCL)
#
# With tensor parallelism each GPU is a *rank*, and every layer ends in a collective (an
# all-reduce) through NCCL. NCCL's collectives can be captured, under rules its user guide states
# (the sources are listed at the end of this section):
#
# 1. **Every rank captures the same collectives.** Whether a collective is captured is a
#    collective property: all ranks of the communicator capture it, and each replays the graph
#    of that same capture. A rank that replays a graph while another runs the same step eagerly,
#    or a different graph, waits in a collective its peers never join: the job **hangs**, with
#    no error, until a timeout (if any) kills it.
# 2. **Thread-local capture when threads share a process.** With one thread per GPU in one
#    process, a global-mode capture in one thread refuses unsafe calls from every other thread
#    (notebook 09, section 6): the other ranks' set-up, a data loader's allocation.
# 3. **Warm up before capture.** A communicator allocates its buffers and connects its peers on
#    first use. Make the collectives once eagerly, then capture.
# 4. One GPU per process is the reliable layout: with several GPUs in one process,
#    `cudaGraphLaunch` may block and deadlock.
#
# The simulator has no NCCL, but it has rules 2 and 3: two "ranks", threads with a stream each,
# capture their step at the same time while a third thread (a data loader) allocates; each
# rank's communicator needs a buffer, allocated before the capture (warm-up) or on first use,
# inside it.

# %%
outcomes = {}
for warm in (False, True):
    for mode in ("global", "thread_local"):
        outcomes[(warm, mode)] = pr.ranks_capture(mode, warm_up=warm)
        print(f"warm-up {'yes' if warm else 'no ':3}  {mode:12}  "
              + "   ".join(f"{who}: {what}" for who, what in sorted(outcomes[(warm, mode)].items())))
claims.only_warm_thread_local_captures_every_rank(outcomes)

names = ["rank 0", "rank 1", "loader"]
cols = [(w, m) for w in (False, True) for m in ("global", "thread_local")]
ok = np.array([[outcomes[c][n] == "ok" for c in cols] for n in names], float)
fig, ax = plt.subplots(figsize=(8.5, 3))
ax.imshow(ok, cmap=matplotlib.colors.ListedColormap(["#f4b6b6", "#b6e3b6"]), vmin=0, vmax=1,
          aspect="auto")
ax.set_xticks(range(len(cols)), [f"{m}\n{'warm-up' if w else 'no warm-up'}" for w, m in cols])
ax.set_yticks(range(len(names)), names)
for i, n in enumerate(names):
    for j, c in enumerate(cols):
        what = outcomes[c][n]
        text = ("ok" if what == "ok" else "capture lost" if what.startswith("capture lost")
                else "call refused")
        ax.text(j, i, text, ha="center", va="center", fontsize=9)
ax.set_title(f"11-3 Two ranks capturing while a loader allocates\n"
             f"{labkit.provenance()}", fontsize=10)
plt.show()

# %% [markdown]
# Without a warm-up the set-up runs inside the rank's own capture, and is refused in both modes:
# only the warm-up moves it out. With the warm-up, global mode still loses a capture to the
# loader's allocation; thread-local mode loses none. Look at the global-mode column with
# warm-up: one rank captured and the other did not. On a real cluster that is rule 1 broken,
# and the next replay hangs. An engine therefore captures the same sizes in the same order on
# every rank, and treats a capture that fails on one rank as a failed start-up, never as a reason
# for that rank alone to run eagerly.
#
# PyTorch adds its own care: before a capture it waits for NCCL work still pending, and XLA
# makes a warm-up iteration for NCCL set-up before it captures. Documented, not demonstrated
# here: the rules of the user guide, as read in:

# %%
fw.sources_note("NCCL")

# %% [markdown]
# **Takeaway:** warm the communicators up, capture in thread-local mode, and make every rank
# capture and replay the same graphs: a rank that differs does not fail, it hangs.

# %% [markdown]
# ## 4. Stale addresses: an input that moved since capture
#
# A graph reads its inputs at the addresses it was captured with. Framework code often makes a
# *new* tensor for every step (`x = embed(tokens)`) and hands that to the graph. The graph still
# reads the old one: the answer is quietly computed from stale data, or, once the old tensor is
# freed and its memory reused, from whatever lives there now. vLLM's piecewise graphs and
# PyTorch's static inputs have both produced silent wrong answers this way.
#
# The demo: a step `out = 2·x + 1` captured with one input, then served the framework way, a new
# input array per step.

# %%
from labkit.course.workloads import saxpy

N_IN, STEPS_IN = 1024, 6
ones = labkit.to_device(np.ones(N_IN, np.float32))
out = labkit.device_array(N_IN, np.float32)
x = labkit.to_device(np.zeros(N_IN, np.float32))
saxpy[4, 256, stream](out, 2.0, x, ones)                  # compiled and loaded
stream.synchronize()
with labkit.capture(stream) as cap:
    saxpy[4, 256, stream](out, 2.0, x, ones)              # out = 2·x + 1, x's address frozen
step = cap.graph.instantiate()
guard = pr.AddressCheck(x=x)

errors = {"new array each step": [], "copy into the captured input": []}
for how in errors:
    for t in range(STEPS_IN):
        data = np.full(N_IN, float(t + 1), np.float32)
        if how == "new array each step":
            x_now = labkit.to_device(data)                # what framework code does
        else:
            x.copy_to_device(data)                        # static input: copy in, same address
            x_now = x
        step.launch(stream)
        stream.synchronize()
        errors[how].append(float(np.abs(out.copy_to_host() - (2 * data + 1)).max()))
    print(f"{how:30s} largest error per step: {errors[how]}")

try:
    guard.check(x=labkit.to_device(np.ones(N_IN, np.float32)))
except RuntimeError as exc:
    print("address check:", exc)
guard.check(x=x)                                            # the captured input: passes
print("address check passes for the captured input")

# %% [markdown]
# `AddressCheck` is the course's version of the check frameworks can make for you. PyTorch's
# `torch.cuda.graph(..., check_input_liveness=True)` tracks the tensors a capture used and
# raises at replay when one of them has been freed; vLLM's `cudagraph_copy_inputs=True` copies
# piecewise inputs into buffers it owns, so a moved input cannot be missed. Both cost a little
# per replay: turn them on while you debug, or where inputs come from code you do not control.
#
# The eager switch finds the same bug without knowing what to look for: run the step through
# `labkit.captured` once as a graph and once eagerly (`labkit.eager()`), and compare. Eagerly,
# the step looks its names up afresh at every call, so it reads the new input; the graph reads
# the one it captured.

# %%
current = {"x": labkit.to_device(np.zeros(N_IN, np.float32))}
results = {}
for mode in ("graph", "eager"):
    fn = labkit.captured(lambda st: saxpy[4, 256, st](out, 2.0, current["x"], ones))
    with labkit.eager(mode == "eager"):
        for t in range(3):
            current["x"] = labkit.to_device(np.full(N_IN, float(t + 1), np.float32))
            fn(stream)
    stream.synchronize()
    results[mode] = out.copy_to_host()
    fn.close()
print("graph and eager agree:", np.array_equal(results["graph"], results["eager"]),
      f"(graph out[0] = {results['graph'][0]}, eager out[0] = {results['eager'][0]})")
claims.stale_input_found(errors["new array each step"], errors["copy into the captured input"],
                         results["graph"][0], results["eager"][0])

fig, ax = plt.subplots(figsize=(7.5, 4))
for how, errs in errors.items():
    ax.plot(range(1, STEPS_IN + 1), errs, marker="o", label=how)
ax.set(xlabel="step", ylabel="largest error of out (absolute)", ylim=(0, None),
       title=f"11-4 A graph fed a new input array each step\n{labkit.provenance()}")
ax.legend()
plt.show()
step.close()

# %% [markdown]
# **Takeaway:** a graph's inputs are addresses; copy new data into the captured buffers, and
# when a wrong answer appears, check the addresses or run the step eagerly beside the graph.

# %% [markdown]
# ## 5. Speculative decoding: a count that changes every step
#
# Speculative decoding makes several tokens per step of the big (*target*) model. A small
# *draft* model guesses the next k tokens; the target then takes the last accepted token and
# the k guesses in one pass and computes its own pick at each of those k + 1 positions. The
# guesses that agree with its picks, from the first on, are accepted, and the target's pick just
# after them comes free: n accepted guesses make n + 1 tokens. Engines also change k as they go:
# a longer draft while guesses land, a shorter one after a miss.
#
# A graph freezes its shapes, and here two of them move at every step: how many positions the
# pass verifies (k + 1), and where the next step starts (n + 1 further on). Engines answer in
# three ways:
#
# - **(a) a graph per draft length**: capture k = 1 … K; after each step the host waits, reads
#   n, picks the next k and launches that graph. K graphs to capture and keep, and a host round
#   trip per step.
# - **(b) padding to the longest draft**: one graph that always verifies K + 1 positions; a
#   shorter draft is padded, and the padded positions are computed for nothing. The host still
#   waits for n after every step, to know when the answer is long enough.
# - **(c) the count on the device and a conditional node**: the accept kernel leaves n and the
#   next k in device memory; one graph runs the whole generation, a WHILE node over steps whose
#   SWITCH node runs the branch for the k the draft chose (notebook 08). The host launches once
#   and waits once.
#
# The demo uses the course's decoder (notebook 07) as the target. It takes one position per
# step, so its "one pass over k + 1 positions" is k + 1 decode steps in a row: the same shapes
# change with k, only slower than a batched pass. The draft model is simple on purpose: a table
# holding, for each position, the target's own greedy token (numpy's), made wrong at about a
# third of the positions by a seeded coin. The accept rule never looks at the table: it compares
# the guesses with what the target computed. The next draft length is n + 1, at most K = 4.

# %%
from labkit import timing
from labkit.course import decoder as dec

N_SPEC, K_MAX = 40, 4
target = dec.make_model(seed=0, max_seq=64)
spec = pr.Speculative(target, stream, pr.guesses(target, 1, wrong=0.3), k_max=K_MAX)
want = dec.reference_generate(target, 1, N_SPEC)
per_token, steps_per_token = {}, {}
for variant in pr.SPEC_VARIANTS:
    toks, rounds, steps = spec.run(variant, N_SPEC)
    assert np.array_equal(toks, want), f"{variant}: the tokens differ from numpy's"
    per_token[variant] = timing.measure(lambda: spec.run(variant, N_SPEC), warmup=1, repeat=3,
                                        per=N_SPEC, label=variant)
    steps_per_token[variant] = steps / N_SPEC
    print(f"{variant:30s} {rounds} steps of the target for {N_SPEC} tokens, "
          f"{steps} positions verified, {per_token[variant].median:6.1f} µs per token")
print("every variant's tokens are numpy's greedy tokens")
claims.speculative_costs({v: s.median for v, s in per_token.items()}, steps_per_token,
                         pr.SPEC_VARIANTS)

with plot.style():
    fig, axes = plt.subplots(1, 2, figsize=(13, 4.6))
plot.bars(per_token, ax=axes[0], ylabel="time per generated token (µs)",
          title="time, host waits included")
plot.bars(steps_per_token, ax=axes[1], ylabel="positions verified per generated token",
          title="work the GPU did")
fig.suptitle(f"11-5 Speculative decoding, {N_SPEC} tokens with drafts of up to {K_MAX} "
             "guesses", fontsize=11)
plt.show()
spec.close()

# %% [markdown]
# All three make the same tokens as numpy and take the same number of steps; they differ in
# what each step costs. Look at the right-hand panel first: padding verifies K + 1 positions at
# every step, so its work per token is the highest, and its time per token on the left follows.
# A graph per draft length does only the work the draft asked for, but its host waits after
# every step; the device loop does the same work with no wait between steps, and comes out the
# fastest. Here a step is hundreds of kernels, so the waits are a small share; the smaller the
# step, the more the loop gains (notebook 08, section 4, where a smaller model gains more). What the bars do not show: (a) captured
# K graphs, each with its memory and start-up time (section 1), and (c) holds every branch in
# one graph, which is about as large.
#
# vLLM captures its graphs per number of tokens in the batch, speculative positions included,
# and pads a step up to the next captured size: (a) and (b) together.
#
# **Takeaway:** a changing accepted count breaks a fixed graph only if the host must see it:
# capture per length or pad when it must, or keep the count on the device and let a conditional
# node choose the work.

# %% [markdown]
# ## 6. The practitioner's debugging tools
#
# On a GPU, these are the tools to reach for, each for one question. The GPU issue runs each
# command on a real GPU; the simulator has an equivalent for most.
#
# | question | on a GPU | on the simulator |
# | --- | --- | --- |
# | does any kernel read or write out of bounds, or race? | `compute-sanitizer --tool memcheck python step.py` (and `--tool racecheck` for shared-memory races); both follow kernels launched from a graph | buffers are bounds-checked at every launch; unordered accesses to one buffer are reported as a race naming both (notebook 04) |
# | which kernel failed? | `CUDA_LAUNCH_BLOCKING=1` makes every launch synchronous, so the error comes back from the launch that caused it. It does not split a graph: a replay is one launch, so an error inside it still names only `cudaGraphLaunch`; run the step eagerly to find the kernel | errors come back from the next synchronizing call, as on a GPU; the eager switch (notebook 09) runs every graph kernel by kernel |
# | what did I capture? | `cudaGraphDebugDotPrint(graph, "g.dot", flags)`, or PyTorch's `g.debug_dump("g.dot")` with `CUDAGraph(keep_graph=True)`; view with Graphviz | the same `cudaGraphDebugDotPrint` (`pr.dot_text(graph)`), and `plot.graph_dag(graph)` |
# | does my step synchronize where I did not expect? | `torch.cuda.set_sync_debug_mode("warn")` (or `"error"`) reports each synchronizing call; Nsight Systems shows the waits | a sync inside a capture is refused with error 900 (notebook 10, section 6) |
# | is the graph the slow part? | Nsight Systems with `--cuda-graph-trace=node` (notebook 10, section 7) | `labkit.timing.timeline()` and the Perfetto export |
#
# Here is what a DOT print says about the sampler graph of section 2, and its picture:

# %%
with labkit.capture(stream) as cap:
    pr.uniform_from_state[blocks, 256, stream](rand, state)
    pr.advance_state[1, 1, stream](state, N_RAND)
print(pr.dot_text(cap.graph))
plot.graph_dag(cap.graph, title="11-6 The sampler graph of section 2");
plt.show()
cap.graph.close()

# %% [markdown]
# **Takeaway:** to find a graph's bug, make it eager first (`GGML_CUDA_DISABLE_GRAPHS`,
# `enforce_eager`, `labkit.eager()`); then the kernel-level tools can name the kernel.

# %% [markdown]
# ## 7. A decision checklist
#
# **Graphs or not?** Use them when the host's launch time is a large part of a step: many small
# kernels, small batches, decode (notebooks 01 and 06). Leave them out when kernels are long,
# when the step's shape changes at nearly every call (llama.cpp's warm-up then keeps it eager,
# notebook 05), or while you are still debugging.
#
# **Which framework mode?** vLLM: keep the default `FULL_AND_PIECEWISE`; `PIECEWISE` when your
# attention backend cannot run in a full graph; `-O0` / `enforce_eager` to debug. PyTorch:
# `torch.compile(mode="reduce-overhead")` and check the skip counter (notebook 10, section 5);
# `torch.cuda.graph` by hand when you own the static buffers. llama.cpp: on by default;
# `GGML_CUDA_DISABLE_GRAPHS=1` to compare.
#
# **Symptom → cause → fix**, each with the section that shows it:
#
# | symptom | likely cause | fix | shown in |
# | --- | --- | --- | --- |
# | capture fails with 900 / 901 / 906 | a sync, an allocation or a legacy-stream call in the capture, or another thread's | move it out; warm up first; thread-local mode | 02, 09 §6, 10 §6, 11 §3 |
# | no speed-up at all | the framework skipped the graph and runs eagerly | read `cudagraph_skips` / `perf_hints` | 10 §5 |
# | the answer is wrong, only with graphs | an input moved since capture; an output kept across replays | static inputs, address check; clone outputs | 11 §4, 10 §2 |
# | every sample is the same | the RNG seed or offset was frozen at capture | generator state on the device | 11 §2 |
# | out of memory at start-up, or slow start-up | too many captured sizes, each with its own memory | fewer sizes with padding, one pool, largest first | 11 §1, 05 §8 |
# | multi-GPU job hangs | ranks captured different collectives, or one fell back to eager | warm up, thread-local, same graphs on every rank | 11 §3 |
# | a changing step is slower with graphs | a capture per change | capture only once the step repeats | 05 §7 |
# | speculative decoding breaks the graph | the number of accepted tokens changes the shape | a graph per draft length, padding to the longest draft, or the count on the device with a conditional node | 11 §5, 05 §8, 08 |
#
# **Takeaway:** start from the symptom; every row's fix is one you have now run.

# %% [markdown]
# ## Summary
#
# - Each captured size costs start-up time, and memory unless all graphs share one pool filled
#   from the largest size down; engines capture a short list of sizes and pad.
# - A generator's seed and offset passed as arguments are frozen at capture; keep its state in
#   device memory and advance it inside the graph, as PyTorch's graph-safe generator does.
# - Collectives in a graph: warm up first, capture in thread-local mode when threads share a
#   process, and keep every rank on the same graphs, or the job hangs.
# - A graph reads its inputs where they were at capture: copy new data in, and check addresses
#   (`check_input_liveness`, `AddressCheck`) or compare against eager when answers go wrong.
# - Speculative decoding changes the verified length and the accepted count at every step:
#   capture a graph per draft length, pad to the longest, or keep the count on the device and
#   let a WHILE and a SWITCH node choose the work, with no host wait between steps.
# - Debug eager first; compute-sanitizer, `CUDA_LAUNCH_BLOCKING`, a DOT print and the sync debug
#   mode each answer one question.
#
# ## Exercise: a sampler graph that draws new numbers at every replay
#
# Write `record(stream, out, state)`: the work of one draw of `out.size` numbers, which the check
# captures **once** and replays several times. `state` is a device array `[seed, offset]`
# (uint64). Replay `k` must leave numbers `k·n` … `k·n + n - 1` of the seed's stream in `out`:
# new numbers at every replay, none repeated and none skipped, exactly as an eager loop would
# draw them. The starter passes the seed and offset as arguments, section 2's bug.

# %% tags=["starter"]
from labkit.course.exercises import nb11


def record(stream, out, state):
    blocks = (out.size + 255) // 256
    pr.uniform_at[blocks, 256, stream](out, nb11.SEED, 0)

# %% tags=["solution"]
from labkit.course.exercises import nb11


def record(stream, out, state):
    blocks = (out.size + 255) // 256
    pr.uniform_from_state[blocks, 256, stream](out, state)   # read seed and offset on the device
    pr.advance_state[1, 1, stream](state, out.size)          # then move the offset on, in the graph

# %% tags=["check"]
nb11.check_sampler(record, stream)

# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 10 — The same ideas in PyTorch, vLLM and llama.cpp, and in the tools practitioners trace with
#
# **Prerequisites:** notebooks 02, 05 and 07 (capture, static buffers, the capstone's decoder);
# 08 for the last row of the map.
#
# **You will learn to**
# - map each idea of the course onto raw CUDA, cuda.core, labkit, PyTorch, vLLM and llama.cpp;
# - use a graphed callable in the manner of PyTorch's `make_graphed_callables`, and avoid the bug
#   every user of one meets once: its outputs are overwritten by the next call;
# - measure a *piecewise* step (attention eager, the rest graphed) against the full graph and eager
#   launches, and say when a serving engine pays that price;
# - confirm that `torch.compile(mode="reduce-overhead")` really captured, since it silently runs
#   eagerly when it cannot;
# - name what cannot be captured (a host sync, `.item()`, a branch on a GPU value, a new shape),
#   say how frameworks split around it, and write a step that never waits for the GPU;
# - open the course's timelines in Perfetto, and see labkit's phases as NVTX ranges in Nsight
#   Systems.

# %%
import importlib.util
import json
import os

import numpy as np
import matplotlib.pyplot as plt
import labkit
from labkit import plot, timing
from labkit.course import decoder as dec, frameworks as fw, reference, workloads
from labkit.course.claims import nb10 as claims

print("backend:", labkit.backend, "|", labkit.device_name(), "|", labkit.provenance())
N_TOK = workloads.sizes()["tokens"]
stream = labkit.Stream()

# %% [markdown]
# ## 1. One map, six vocabularies
#
# Every framework that replays CUDA graphs meets the problems this course met, and solves them
# the same way under other names. Each row links to the notebook where the course shows the idea.
#
# **In CUDA, in cuda.core and in labkit**
#
# | idea | raw CUDA | cuda.core 1.2 | labkit |
# | --- | --- | --- | --- |
# | [capture](02_stream_capture.ipynb) | `cudaStreamBeginCapture` … `EndCapture`, `cudaGraphInstantiate`, `cudaGraphLaunch` | `b = stream.create_graph_builder()`, `b.begin_building()` … `b.end_building()`, `g = b.complete()`, `g.launch(stream)` | `labkit.capture(stream)`, `.instantiate()`, `.launch(stream)` |
# | [static buffers](05_graph_update.ipynb) | kernel arguments are addresses, frozen at capture: copy new data into the same buffers | the same (`Buffer`s kept alive by you) | `labkit.graphed`'s `static_inputs` / `static_outputs`; the decoder's `pos` and `tok` ([07](07_capstone_decode.ipynb)) |
# | [memory pool](09_when_graphs_go_wrong.ipynb) | graph allocation nodes (`cudaMallocAsync` in a capture), or memory allocated before | `GraphMemoryResource` (allocations inside a graph) | preallocated buffers, allocated once at capture (section 2) |
# | [per-shape graphs and padding](05_graph_update.ipynb) | one executable per shape | — | `labkit.GraphCache`; notebook 05's buckets |
# | [updates](05_graph_update.ipynb) | `cudaGraphExecUpdate`, `cudaGraphExecKernelNodeSetParams` | `g.update(builder)`; a node through `g[node]` (an `ExecutableKernelNode`) | `GraphExec.update`, `set_kernel_args`, `KernelNode` |
# | [the eager fallback](06_measuring.ipynb) | launch kernel by kernel | `launch(stream, config, kernel, *args)` | call the function itself |
# | [piecewise graphs](07_capstone_decode.ipynb) (section 3 here) | several executables with eager launches between them | — | `frameworks.PiecewiseStep` (this notebook) |
# | [conditional nodes](08_device_control_flow.ipynb) | `cudaGraphConditionalHandleCreate`, IF / WHILE / SWITCH nodes | `b.create_condition()`, `b.if_then`, `b.if_else`, `b.switch`, `b.while_loop` | `labkit.conditional_graph`, `set_condition` |
#
# **In PyTorch and vLLM** (the same rows)
#
# | idea | PyTorch | vLLM |
# | --- | --- | --- |
# | [capture](02_stream_capture.ipynb) | `g = torch.cuda.CUDAGraph()`, `with torch.cuda.graph(g):`, `g.replay()`; `capture_error_mode=` `"global"` (the default), `"thread_local"` or `"relaxed"` is the capture mode of notebook 09 | captures its model once per capture size at start-up, through `torch.cuda.graph` |
# | [static buffers](05_graph_update.ipynb) | `make_graphed_callables` copies inputs into static tensors; a replay writes the same output tensors; `torch.cuda.graph(..., check_input_liveness=True)` raises at replay when an input the capture used has been freed | each captured size reads and writes the same persistent tensors every step; `cudagraph_copy_inputs=True` copies inputs into its own buffers for callers that cannot keep them (piecewise only) |
# | [memory pool](09_when_graphs_go_wrong.ipynb) | a private pool per graph; `pool=` shares one between graphs: `torch.cuda.graph_pool_handle()`, another graph's `pool()`, or a `torch.cuda.MemPool` | all its graphs share one pool, so many sizes cost little memory |
# | [per-shape graphs and padding](05_graph_update.ipynb) | `torch.compile(mode="reduce-overhead")` records a graph per input shape (CUDA graph trees) | `cudagraph_capture_sizes`: a batch is padded up to the next captured size. Unless you list them: 1, 2, 4, then every 8 up to 248, then every 16 from 256 up to `max_cudagraph_capture_size`, which defaults to twice `max_num_seqs`, at most 512 |
# | [updates](05_graph_update.ipynb) | `torch.cuda.CUDAGraph(keep_graph=True)` keeps the captured graph: `raw_cuda_graph()` hands it to cuda-python to read or edit, and `instantiate()` makes the executable from it (edits after that need another `instantiate()`); graph trees record a new graph instead of updating | — |
# | [the eager fallback](06_measuring.ipynb) | graph trees skip graphs they cannot use and run eagerly (section 5 shows how to notice); `torch.compiler.cudagraph_mark_step_begin()` marks a new iteration | `CUDAGraphMode.NONE` (`-O0`, or `enforce_eager`); batches above the largest captured size run eagerly |
# | [piecewise graphs](07_capstone_decode.ipynb) (section 3 here) | `make_graphed_callables` on parts of a network; Inductor's graph partition (on by default) splits a compiled graph at operations tagged `cudagraph_unsafe` and graphs the rest | `CUDAGraphMode` (below) chooses full or piecewise graphs; piecewise graphs split at `splitting_ops` (the attention operations by default), or at `cudagraph_unsafe` operations with `use_inductor_graph_partition` |
# | [conditional nodes](08_device_control_flow.ipynb) | `torch.cond()` captured by `torch.cuda.graph` becomes conditional IF nodes, in recent versions only (pytorch/pytorch#168912), in eager PyTorch and `torch.compile`'s `"eager"` and `"cudagraphs"` backends, not Inductor's; its follow-up issue (#175001) lists what does not work yet, such as random numbers inside a branch | — |
#
# vLLM's `CUDAGraphMode` has five values. `NONE`: no graphs. `PIECEWISE`: attention runs eagerly
# between graphs of the rest (section 3). `FULL`: one graph for the whole step, for every batch,
# where the attention backend supports it. `FULL_DECODE_ONLY`: full graphs for batches of decode
# steps only, mixed prefill and decode batches eager. `FULL_AND_PIECEWISE`: full graphs for decode
# batches and piecewise graphs for prefill and mixed batches. The optimisation level picks the
# default: `-O0` gives `NONE`, `-O1` `PIECEWISE`, and `-O2`, the default level, gives
# `FULL_AND_PIECEWISE` (so does `-O3`); a mode you set yourself wins over the level's.
#
# **In llama.cpp** (its CUDA backend, ggml-cuda)
#
# | idea | llama.cpp |
# | --- | --- |
# | [capture](02_stream_capture.ipynb) | captures a ggml graph's kernels with `cudaStreamBeginCapture` in relaxed mode |
# | [static buffers](05_graph_update.ipynb) | reuses a graph while every node's properties (op, shapes, data addresses) match the last call's |
# | [memory pool](09_when_graphs_go_wrong.ipynb) | — |
# | [per-shape graphs and padding](05_graph_update.ipynb) | one graph per ggml graph, keyed by its first node; a graph unused for 10 seconds is evicted |
# | [updates](05_graph_update.ipynb) | a **warm-up**: a changed ggml graph runs eagerly, and is captured at the next call that matches it; the capture then updates the executable (`cudaGraphExecUpdate`), or is instantiated if that fails |
# | [the eager fallback](06_measuring.ipynb) | every changed call runs eagerly; graphs are off on GPUs older than Volta, for ggml graphs with nodes it cannot capture, and when `GGML_CUDA_DISABLE_GRAPHS` is set. Its first rule turned graphs off for good after 4 updates in a row ([05](05_graph_update.ipynb), section 7, measures both) |
# | [piecewise graphs](07_capstone_decode.ipynb) (section 3 here) | — |
# | [conditional nodes](08_device_control_flow.ipynb) | — |
#
# A dash means the engine has no such mechanism that we found in its code or documentation.
# These engines change quickly: the note below names the file and commit each row was read in;
# check your version's source before relying on a detail.

# %%
fw.sources_note("llama.cpp", "vLLM", "PyTorch")

# %% [markdown]
# ## 2. A graphed callable, and its overwritten outputs
#
# PyTorch's `torch.cuda.make_graphed_callables(fn, sample_args)` turns a function into a graph you
# call like the function. `labkit.graphed(fn, *sample_args)` does the same steps on labkit:
#
# 1. **static inputs**: one device array per sample argument, same shape and dtype;
# 2. **warm-up on a side stream**: `fn` runs a few times (3 by default, as in PyTorch) on a stream
#    of its own, so every kernel is compiled and loaded before the capture;
# 3. **capture** one call on that stream; the arrays it returns are the **static outputs**;
# 4. **a call** copies its arguments into the static inputs, replays the graph once, waits for
#    the replay, and returns the static outputs.
#
# That wait is labkit's, not PyTorch's: a PyTorch graphed callable returns as soon as the replay
# is queued, and stream order keeps whatever uses the outputs after it. labkit waits so that a
# call's result can be read at once (`copy_to_host`, a timing); its calls pay the GPU's time.
#
# Where does the memory come from? Here, *preallocated buffers*: the static inputs are allocated
# before the capture, and what `fn` allocates is allocated once, during the capture (relaxed mode
# lets an allocation run while capturing; it is not recorded), and kept alive with the graph.
# Graph allocation nodes (notebook 09, section 5) are the other way: `fn`'s temporaries freed
# inside the graph, its outputs left allocated and, with `AutoFreeOnLaunch`, freed by the next
# launch, which allocates them again at the same address. labkit does not take it because numba
# allocates with `cudaMalloc`, not `cudaMallocAsync` on the capturing stream, so there is no
# allocation to capture; and a graph with memory nodes allows one executable at a time.
# PyTorch's private pool is the preallocated way through its caching allocator: during a capture,
# allocations come from a pool that only that graph, or the graphs that share the pool, use.
#
# The function here is one layer's MLP half from the capstone's model: RMSNorm, up projection,
# SiLU, down projection, four kernels, out of place.

# %%
model = dec.make_model(seed=0)
mlp = fw.mlp_block(model)
rng = np.random.default_rng(10)
x_a, x_b = rng.standard_normal(64), rng.standard_normal(64)

g = labkit.graphed(mlp, x_a)
print(g)
print("static input:", g.static_inputs[0].shape, "| static output:", g.static_outputs.shape)
want_a, want_b = fw.mlp_reference(model, x_a), fw.mlp_reference(model, x_b)   # numpy's answers
print("answer for x_a matches numpy:", np.allclose(g(x_a).copy_to_host(), want_a))

# %% [markdown]
# ### The bug: keeping what a call returned
#
# Every call returns *the same* device array. Keep the result of one call, call again, and the
# first result has changed under you. PyTorch's graphed callables and `torch.compile`'s CUDA graphs
# behave alike; the latter raises "accessing tensor output of CUDAGraphs that has been overwritten
# by a subsequent run", and its remedy is this notebook's: clone the output first.

# %%
out_a = g(x_a)
out_b = g(x_b)
print("out_a is out_b:", out_a is out_b)
print("out_a still holds the answer for x_a:", np.allclose(out_a.copy_to_host(), want_a))
print("out_a now holds the answer for x_b:  ", np.allclose(out_a.copy_to_host(), want_b))

# %% [markdown]
# ### The fix: copy what you keep, before the next call

# %%
kept_a = g(x_a).copy_to_host()
kept_b = g(x_b).copy_to_host()
assert np.allclose(kept_a, want_a) and np.allclose(kept_b, want_b)
print("both kept results are right: each was copied out before the next call")

# %% [markdown]
# A graph's buffers have the sample's shape and dtype, so a different input is refused with what
# to do instead:

# %%
try:
    g(x_a.astype(np.float32))
except ValueError as exc:
    print("refused:", exc)

# %% [markdown]
# What does a graphed call cost against the same work launched eagerly? Compare like with like:
# `fw.mlp_eager_call` does what a graphed call does (copy the input into buffers allocated once,
# run the four kernels, wait), launching the four kernels one by one where the graphed call
# launches one graph. (Calling `mlp` itself would also allocate three arrays per call.)

# %%
eager_mlp = fw.mlp_eager_call(model, stream)
assert np.allclose(eager_mlp(x_a).copy_to_host(), want_a)
eager_call = timing.measure(lambda: eager_mlp(x_a), label="eager call")
graphed_call = timing.measure(lambda: g(x_a), label="graphed call")
print(f"per call: eager {eager_call.p50:.1f} µs, graphed {graphed_call.p50:.1f} µs "
      f"({eager_call.p50 / graphed_call.p50:.1f}x)")
claims.graphed_call_cheaper(eager_call.p50, graphed_call.p50)

# %% [markdown]
# **Takeaway:** a graphed callable is capture plus static buffers behind a function call; what it
# returns belongs to the graph, so copy what you keep.

# %% [markdown]
# ## 3. Piecewise graphs: attention eager, the rest graphed
#
# vLLM's `PIECEWISE` mode captures a model as several graphs, and runs its attention between them
# eagerly. Why pay launches again? Attention kernels are the ones whose launch parameters
# depend on the batch: how many sequences, how long each is, how the KV cache is laid out, how many
# splits a kernel uses. A graph freezes launch parameters, so a fully captured step must either fix
# them (pad every batch to a captured shape, with attention kernels written to read lengths from
# device memory, as the course's decoder does) or leave attention out. An engine pays the piecewise
# price when its attention kernels cannot run inside a graph for the batches it serves: mixed
# prefill and decode batches, or an attention backend that does not support full capture.
# That is why vLLM also has `FULL` and `FULL_AND_PIECEWISE` modes: full graphs where attention
# allows it (uniform decode batches), piecewise otherwise.
#
# The capstone's step splits the same way: per layer, the three attention kernels (scores, softmax,
# weighted sum) run eagerly; each run of kernels between them is one graph.

# %%
PROMPT = 1
piecewise = fw.PiecewiseStep(model, stream)
print(f"per token: {piecewise.pieces} graph replays + {piecewise.eager_kernels} eager kernels"
      f" = {piecewise.kernels} kernels (the full graph: {model.cfg.kernels_per_token})")

ref = dec.reference_generate(model, PROMPT, N_TOK)
eager = dec.generate_eager(model, PROMPT, N_TOK, stream)
full = dec.generate_graph(model, PROMPT, N_TOK, stream)
piece = fw.generate_piecewise(model, PROMPT, N_TOK, stream, step=piecewise)
for name, r in (("eager", eager), ("piecewise", piece), ("full graph", full)):
    assert np.array_equal(r.tokens, ref), f"{name} tokens differ from numpy's"
print("all three decode numpy's tokens exactly:", ref[:8], "...")

# %% tags=["key-figure"]
rows = {"numba eager": eager, "numba piecewise": piece, "numba full graph": full}
med = {n: float(np.median(r.token_us)) for n, r in rows.items()}
for n, r in rows.items():
    print(f"{n:18s} {r.tokens_per_s:9.0f} tokens/s   {med[n]:8.1f} µs per token")
claims.piecewise_between(med["numba eager"], med["numba piecewise"], med["numba full graph"])
plot.bars({n: r.tokens_per_s for n, r in rows.items()}, ylabel="tokens per second", log=True,
          title="10-1 Decode throughput: eager, piecewise, full graph");
plt.show()

# %% [markdown]
# Piecewise lands between the two: it removes most of the eager step's launch time, and still pays
# one launch for each eager attention kernel and one for each piece. The timelines of one token show where the
# difference goes; they share one time axis.

# %%
full_exec = dec.capture_step(model, stream)
tls = {}
for name in ("eager", "piecewise", "full graph"):
    dec.reset(model, PROMPT, stream)
    with timing.timeline() as rec:
        if name == "eager":
            dec.step(model, stream)
        elif name == "piecewise":
            piecewise(stream)
        else:
            full_exec.launch(stream)
        stream.synchronize()
    tls[name] = rec.timeline
plot.timelines([(tl, f"10-2 One token, {n}") for n, tl in tls.items()],
               stream_names={stream: "decode"}, max_labels=0);
plt.show()

# %% [markdown]
# **Takeaway:** piecewise capture trades a few launches per layer for the freedom to run
# attention with launch parameters chosen per batch.

# %% [markdown]
# ## 4. The same step in PyTorch and CuPy (on a GPU)
#
# On a GPU with PyTorch installed, the next cell adds three rows to the table above:
#
# - **`torch.cuda.graph`**: the capstone's step written in PyTorch (`dec.torch_generate`), warmed up
#   on a side stream, captured once, replayed per token:
#   ```python
#   s = torch.cuda.Stream()
#   s.wait_stream(torch.cuda.current_stream())   # the warm-up waits for the tensors' set-up
#   with torch.cuda.stream(s):
#       one_step()                   # warm-up, three times
#   torch.cuda.current_stream().wait_stream(s)
#   g = torch.cuda.CUDAGraph()
#   with torch.cuda.graph(g):        # its own side stream; a private memory pool
#       one_step()
#   g.replay()                       # per token
#   ```
# - **`torch.compile(mode="reduce-overhead")`**: the same function compiled; PyTorch records the
#   CUDA graph itself after warm-up, and `torch.compiler.cudagraph_mark_step_begin()` before each
#   token says a new iteration starts (`fw.torch_compile_generate`). PyTorch may also decide not to
#   use graphs (it skips them for some operations, and says so only in its logs): the row says
#   whether it did, from PyTorch's own count of skipped graphs;
# - **CuPy's stream capture** of the numba step, launched on a CuPy stream:
#   ```python
#   s = cupy.cuda.Stream(non_blocking=True)
#   with numba.cuda.defer_cleanup():  # no numba free inside the capture (notebook 09)
#       s.begin_capture()
#       dec.step(model, numba.cuda.external_stream(s.ptr))   # the same numba launches
#       graph = s.end_capture()
#   graph.launch(s)                  # per token
#   ```
#
# Each row checks its tokens against numpy's. On the simulator these rows need a GPU, and the
# cell says so; the numba rows above are labkit's equivalent of the same graphs.

# %%
gpu_rows = {}
if labkit.backend != "cuda":
    print("The PyTorch and CuPy rows need a GPU (backend 'cuda'); this is the simulator.\n"
          "labkit's rows above are the same step: eager, piecewise and one captured graph.")
else:
    if importlib.util.find_spec("torch") is not None:
        gpu_rows["torch CUDAGraph"] = dec.torch_generate(model, PROMPT, N_TOK, graph=True)
        gpu_rows["torch.compile reduce-overhead"] = fw.torch_compile_generate(model, PROMPT,
                                                                              N_TOK)
    else:
        print("PyTorch is not installed here: pip install torch for its rows")
    if importlib.util.find_spec("cupy") is not None:
        gpu_rows["CuPy stream capture"] = fw.cupy_capture_generate(model, PROMPT, N_TOK)
    else:
        print("CuPy is not installed here: pip install cupy-cuda12x (or -cuda13x) for its row")
for n, r in gpu_rows.items():
    same = "same tokens as numpy" if np.array_equal(r.tokens, ref) else "TOKENS DIFFER"
    print(f"{n:30s} {r.tokens_per_s:9.0f} tokens/s   ({same}; numba full graph "
          f"{full.tokens_per_s:.0f} tokens/s)" + (f"\n{'':30s} {r.note}" if r.note else ""))

# %% [markdown]
# ## 5. Did `torch.compile` really capture?
#
# `torch.compile(mode="reduce-overhead")` asks for CUDA graphs; it does not promise them. When
# Inductor finds a reason it cannot graph a compiled function (it mutates an input, it mixes in
# CPU tensors, its shapes keep changing, a custom operation is marked unsafe), it runs that
# function eagerly, and at the default log level it says nothing. Your step is then exactly as
# slow as before, and looks fine. Three ways to know:
#
# - **the counter**: `torch._dynamo.utils.counters["inductor"]["cudagraph_skips"]` goes up by
#   one for every function Inductor declined to graph. Read it before and after your warm-up; it
#   should not move;
# - **the log**: `TORCH_LOGS="perf_hints"` (or `torch._logging.set_logs(perf_hints=True)`)
#   prints each skip with its reason, "skipping cudagraphs due to …"; `TORCH_LOGS="cudagraphs"`
#   shows what the graph trees record and replay;
# - **the profile**: a replay is one `cudaGraphLaunch` per step in a Nsight Systems or PyTorch
#   profiler trace; a column of kernel launches means eager.
#
# On a GPU with PyTorch, the next cell compiles three small functions and reads the counter and
# the messages for each: one Inductor can graph, one that mutates its input, one that mixes in a
# CPU tensor.

# %%
if labkit.backend != "cuda" or importlib.util.find_spec("torch") is None:
    print("This check needs a GPU and PyTorch (backend 'cuda', pip install torch); this is "
          f"backend {labkit.backend!r}.\nlabkit never falls back silently: an uncapturable "
          "call inside labkit.capture raises, as section 6 shows.")
else:
    for name, (skips, messages) in fw.torch_compile_capture_check().items():
        verdict = "graphed" if skips == 0 else f"NOT graphed ({skips} skip{'s' * (skips > 1)})"
        print(f"{name:15s} {verdict}")
        for m in messages[:2]:
            print(f"{'':15s} {m}")

# %% [markdown]
# **Takeaway:** read the skip counter after warm-up, or turn on `perf_hints`: a graph you asked
# for is not a graph you got.

# %% [markdown]
# ## 6. What cannot be captured, how frameworks split around it, and code that never waits
#
# A capture records work for the GPU; anything in the step that needs the *host* to see a GPU
# result cannot be recorded, because at replay no host code runs. In a framework these are:
#
# | in the step | why a graph cannot hold it | what frameworks do |
# | --- | --- | --- |
# | a host sync: `torch.cuda.synchronize()`, `.item()`, `.cpu()`, `.tolist()`, printing a GPU value | the host waits for the GPU in the middle of the step; inside a capture the wait is refused (error 900) and the capture is invalidated | PyTorch's `torch.compile` breaks the compiled graph at `.item()` (a *graph break*) and graphs the pieces; `torch.cuda.set_sync_debug_mode("warn")` reports each sync |
# | a branch on a GPU value: `if x.max() > t:` | the branch needs the value on the host, so it needs a sync, and a graph records only the branch taken at capture | a graph break; or `torch.cond`, which keeps both branches and decides on the GPU ([08](08_device_control_flow.ipynb)) |
# | a new shape | launch shapes are frozen into the graph | another graph per shape, or padding to a captured size ([05](05_graph_update.ipynb)) |
# | an operation that cannot run in a graph (CPU work, some attention kernels, a library call that does not support capture) | it runs on the host, or launches work whose parameters change every step | Inductor's graph partition and vLLM's `splitting_ops` leave it out and graph the pieces around it; llama.cpp runs the whole ggml graph eagerly |
#
# The course's toy version: a step adds one to `x`, then, if `x[0]` has grown past a threshold,
# halves every element, else adds one again. Written as a host decision, it waits for the GPU
# and reads `x` each step (`fw.HostDecision.eager`), and a capture of it is refused:

# %%
x_dec = labkit.to_device(np.zeros(1024, np.float32))
decision = fw.HostDecision(x_dec, 6.0, stream)
try:
    with labkit.capture(stream):
        decision.eager(stream)
except labkit.CudaError as exc:
    print("refused:", str(exc).splitlines()[0])

# %% [markdown]
# Two ways out. A framework **splits** the step around what it cannot capture: the first half is
# one graph, the host reads and decides eagerly, and each branch is a graph of its own
# (`split`). That removes launches, but still waits for the GPU once per step. The better way
# **moves the decision onto the device**: a one-thread kernel writes the decision into a flag,
# and one kernel holding both branches reads it (`on_device`). The whole step is then one graph,
# and the host never waits for it: it only queues work. The three give the same numbers; what do
# they cost per step?

# %%
STEPS_DEC = 20
per_step_dec, finals = {}, {}
for how in ("eager", "split", "on_device"):
    x_dec.copy_to_device(np.zeros(1024, np.float32))
    stream.synchronize()
    syncs0, t0 = decision.syncs, labkit.host_us()
    for _ in range(STEPS_DEC):
        getattr(decision, how)(stream)
    stream.synchronize()
    per_step_dec[how] = (labkit.host_us() - t0) / STEPS_DEC
    finals[how] = x_dec.copy_to_host()
    print(f"{how:10s} {per_step_dec[how]:7.1f} µs per step, "
          f"{decision.syncs - syncs0} waits for the GPU in {STEPS_DEC} steps")
assert all(np.array_equal(finals["eager"], v) for v in finals.values()), "same numbers each way"
claims.device_decision_fastest(per_step_dec["eager"], per_step_dec["split"],
                               per_step_dec["on_device"])
plot.bars({"host decides (eager)": per_step_dec["eager"],
           "split: graphs around the host's decision": per_step_dec["split"],
           "decision on the device: one graph": per_step_dec["on_device"]},
          ylabel="time per step (µs)", title="10-3 A step with a data-dependent decision");
plt.show()
decision.close()

# %% [markdown]
# The split removes most launches but keeps the wait; the on-device decision removes both. Code
# that never synchronizes keeps every value the next step needs on the GPU (the decoder's token
# and position in [07](07_capstone_decode.ipynb) are the same idea), decides with kernels or
# conditional nodes instead of `if` on the host, and copies a result to the host only when the
# host needs it, asynchronously, once per many steps. In PyTorch,
# `torch.cuda.set_sync_debug_mode("error")` turns every hidden sync in your step into an error
# you can find.
#
# **Takeaway:** a value the host must see ends the graph; keep decisions on the device and the
# whole step is one graph that never waits.

# %% [markdown]
# ## 7. Traces in the tools practitioners use
#
# ### Perfetto and `chrome://tracing`
#
# The course draws its timelines with matplotlib. The same timeline exports to the Chrome
# trace-event JSON format, which [Perfetto](https://ui.perfetto.dev) and `chrome://tracing` open:
# one complete event per span, the host's calls on a thread named "host: Python thread", each
# stream on a thread of a "GPU" process named by its role, as figure 10-2 labels it. Start and
# end of each span are rounded to the same whole nanosecond, so a call that ends where the next
# begins still does in the file, and Perfetto nests nothing wrongly. The cell writes the trace of
# the piecewise token beside this notebook, in `traces/`.

# %%
trace_path = os.path.join("traces", "10_piecewise_token.json")
timing.save_chrome_trace(tls["piecewise"], trace_path, stream_names={stream: "decode"})
with open(trace_path, encoding="utf-8") as f:
    trace = json.load(f)
spans = [e for e in trace["traceEvents"] if e["ph"] == "X"]
threads = [e["args"]["name"] for e in trace["traceEvents"] if e["name"] == "thread_name"]
print(f"wrote {trace_path}: {len(spans)} events for {len(tls['piecewise'].spans)} spans, "
      f"threads {threads}")
for e in spans[:4]:
    print(json.dumps({k: e[k] for k in ("name", "cat", "ph", "ts", "dur", "pid", "tid")},
                     separators=(",", ":")))
plot.trace_file(trace_path, title="10-4 The exported file, drawn here as Perfetto's timeline "
                                  "would lay it out");
plt.show()

# %% [markdown]
# Download the file: [traces/10_piecewise_token.json](traces/10_piecewise_token.json) (in
# Jupyter it sits beside this notebook). The figure is not a screenshot of Perfetto: it is
# matplotlib drawing the file's own events the way Perfetto lays out a trace, one track per
# thread, under its process, a slice inside another one level below it. To see it in Perfetto:
#
# 1. open https://ui.perfetto.dev in Chrome or Firefox (the file stays on your computer: the
#    page reads it in the browser);
# 2. click **Open trace file** in the left sidebar and choose `10_piecewise_token.json` (or drag
#    the file onto the page);
# 3. expand the **host** and **GPU** processes; press `W`/`S` to zoom, `A`/`D` to pan, click a
#    slice for its times and `args` (correlation id, graph id), drag across slices to sum them.
#
# In Chrome, `chrome://tracing` → **Load** opens the same file.

# %% [markdown]
# ### NVTX ranges and Nsight Systems
#
# labkit wraps the phases of a graph's life in NVTX ranges, in the domain `labkit`: `capture`,
# `instantiate`, `upload`, `launch` and `update`. Nothing records them until a profiler listens;
# under Nsight Systems they appear on the CPU thread's row, above the CUDA calls they contain.
# On a GPU machine with Nsight Systems, the course's script
# [nsys/profile.sh](nsys/profile.sh) profiles a small program,
# [nsys/graph_step.py](nsys/graph_step.py), which captures four kernels into a graph and
# replays it 20 times. From the notebooks folder:
#
# ```
# bash nsys/profile.sh node    # nsys profile --trace=cuda,nvtx,osrt --cuda-graph-trace=node ...
# bash nsys/profile.sh graph   # the same with --cuda-graph-trace=graph
# ```
#
# It checks that `nsys` is on the `PATH` and says where to get it if not, writes
# `nsys/nsys-reports/graph_step_node.nsys-rep` (or `_graph`), and prints the commands that open it:
# `nsys stats --report cuda_api_sum,cuda_gpu_kern_sum,nvtx_sum` for tables, the Nsight Systems
# GUI for the timeline. For your own program, the command is the same with your script:
#
# ```
# nsys profile --trace=cuda,nvtx,osrt --cuda-graph-trace=node -o my_decode python my_decode.py
# ```
#
# `--cuda-graph-trace=graph` shows each graph launch as one span on the GPU; `node` shows every
# kernel node, which is what you need to see a graph's insides, and adds more tracing overhead to
# each launch (the course's own GPU timelines trace kernels the same way and say what it adds).
# What does a range cost when nothing listens?

# %%
print("labkit's NVTX ranges:", ", ".join(fw.NVTX_PHASES))
range_us = fw.nvtx_range_us()
print(f"one range (push + pop), no profiler attached: {range_us:.3f} µs of real time")
claims.nvtx_range_cheap(range_us)

# %% [markdown]
# That is real time on your CPU, not the simulator's clock: on the simulator the ranges change no
# figure of the course at all.
#
# **Takeaway:** export the timeline to see it in Perfetto; run `nsys/profile.sh` (or `nsys` with
# NVTX on your own program) to see labkit's phases beside the CUDA calls, per graph or per node.

# %%
reference.note("10")

# %% [markdown]
# ## Summary
#
# - Capture, static buffers, a memory pool, graphs per shape with padding, updates, an eager
#   fallback, piecewise graphs and conditional nodes: PyTorch, vLLM and llama.cpp each have their
#   names for what this course built by hand.
# - A graphed callable copies inputs into static buffers and replays; its outputs are the graph's,
#   overwritten by the next call, so copy what you keep.
# - Piecewise capture removes most of the launch time and leaves attention, whose launch
#   parameters depend on the batch, eager. Your piecewise step sat between eager and the full graph.
#   vLLM chooses with `CUDAGraphMode`: `FULL_AND_PIECEWISE` (full graphs for decode batches,
#   piecewise for the rest) by default at `-O2`, `PIECEWISE` at `-O1`, `NONE` at `-O0`.
# - llama.cpp graphs a ggml graph only once it repeats (a warm-up) and runs a changed one eagerly;
#   PyTorch's `keep_graph=True` and `raw_cuda_graph()` let cuda-python edit what it captured.
# - `reduce-overhead` may silently run eagerly: read Inductor's `cudagraph_skips` counter or its
#   `perf_hints` log after warm-up.
# - A host sync, `.item()`, a branch on a GPU value or a new shape cannot be captured; frameworks
#   split their graphs around them. Keeping decisions on the device makes the step one graph that
#   never waits, and it was your fastest.
# - Timelines export to Perfetto; NVTX ranges name labkit's phases in Nsight Systems, where
#   `--cuda-graph-trace=node` opens a graph up.
#
# ## Exercise: serve requests through one graph
#
# `nb10.make_graphed()` is a graphed callable for `3x + 1` over 1024 float32 values (think of one
# value per request row of a batch). Requests come in several sizes, one of them larger than the
# graph. Write `serve(g, requests)` that returns, for each request `r`, a numpy array equal to
# `3r + 1`, computed by `g`: one call per request, or per piece of a request too large for one
# call. You will need what this notebook showed: the graph's shape is fixed, and its output is
# overwritten by the next call. `g.static_inputs[0].shape` gives the graph's size.

# %% tags=["starter"]
def serve(g, requests):
    results = []
    for r in requests:
        out = g(r)
        results.append(out)
    return results

# %% tags=["solution"]
def serve(g, requests):
    size = g.static_inputs[0].shape[0]
    results = []
    for r in requests:
        pieces = []
        for lo in range(0, max(r.size, 1), size):    # larger than the graph: piece by piece
            piece = r[lo:lo + size]
            padded = np.zeros(size, np.float32)      # pad up to the captured size
            padded[:piece.size] = piece
            out = g(padded)
            pieces.append(out.copy_to_host()[:piece.size])   # copy out before the next call
        results.append(np.concatenate(pieces))
    return results

# %% tags=["check"]
from labkit.course.exercises import nb10
nb10.check_serve(serve)

# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 12 — New in CUDA 12.3 to 13.3: what graphs gained
#
# CUDA keeps adding to graphs. Current llama.cpp launches its kernels with programmatic
# dependent launch; NVIDIA's own tools name graph nodes by IDs that appeared in CUDA 13.1;
# CUDA 13.3 can capture again into a graph you already have. Each section here takes one of
# these features: the idea, the CUDA version and the page of CUDA's documentation that has it,
# the smallest demo on the simulator (or your GPU), one figure where it helps, and one takeaway.
# A few of them are older than 12.3 (switching nodes off, node priorities, device launch, memory
# pools); each section names its version.
#
# **Prerequisites:** notebooks 02 (capture), 03 (instantiate, the explicit API), 04 (branches of
# a graph) and 05 (updating an executable).
#
# **You will learn to**
# - read a graph's DOT print and find a node in it by the IDs your code can ask for;
# - switch a kernel off in an executable, and on again, without making a new one;
# - give a latency-critical branch priority over background work;
# - close the gap between two kernels with a programmatic edge, and say when that is wrong;
# - capture again into an existing graph, and say what that keeps that a new capture does not;
# - say what a graph launchable from the device may contain;
# - keep a pool's memory between steps, and say whose memory a captured allocation is;
# - find cuda.core's names for all of this.
#
# About 70 minutes, the exercise included.

# %%
import numpy as np
import labkit
from labkit import plot, rt, check
from labkit.course import new_in_13 as nc
from labkit.course.workloads import busy
from labkit.course.claims import nb12 as claims
from cuda.bindings.driver import cuuint64_t as cuuint64

print("backend:", labkit.backend, "|", labkit.device_name(), "|", labkit.provenance())
major, minor = divmod(check(rt.cudaDriverGetVersion()), 1000)
print(f"the driver reports CUDA {major}.{minor // 10}")
stream = labkit.Stream()

# %% [markdown]
# ## 1. What did I capture? The DOT print, and the IDs that name its nodes
#
# `cudaGraphDebugDotPrint` writes a graph as a Graphviz DOT file: its nodes, their kinds,
# kernel names and copy directions, and with `flags` each node's parameters. Since
# **CUDA 13.1** every graph, executable and node has an ID your code can ask for
# (`cudaGraphGetId`, `cudaGraphExecGetId`, `cudaGraphNodeGetLocalId`), and the DOT print names
# nodes by the same numbers, so the picture and your code point at one node. A node's *tools
# ID* (`cudaGraphNodeGetToolsId`) is the number profiling tools use for it.
# (CUDA Runtime API, *Graph Management*: `cudaGraphDebugDotPrint`, `cudaGraphGetId`,
# `cudaGraphNodeGetLocalId`, `cudaGraphNodeGetToolsId`.)
#
# The graph here is a model step (`nc.model_step`, whose kernel is named `add_one`), a slow
# debugging kernel that logs a checksum (`log_step`), and another step:

# %%
x = labkit.to_device(np.zeros(1024, np.float32))
log = labkit.to_device(np.zeros(1, np.float32))
with labkit.capture(stream) as cap:
    nc.model_step[4, 256, stream](x)
    nc.log_step[1, 32, stream](x, log, nc.LOG_ITERS)
    nc.model_step[4, 256, stream](x)
graph = cap.graph

text = nc.dot_text(graph)
print(text)

# %% [markdown]
# Read it as a picture, each node labelled with its local ID and kernel:

# %%
plot.graph_dag(nc.dot_to_networkx(text), title="12-1 The DOT print, drawn");

# %% [markdown]
# The same nodes asked for by their IDs: the DOT print's node name is built from the graph's ID
# and the node's local ID.

# %%
for row in nc.node_ids(graph):
    print(f"local ID {row['local_id']}  tools ID {row['tools_id']:#x}  {row['kind']:<7}"
          f" {row['kernel'] or '':<9} -> in the DOT print: {row['dot_name']}")
assert {r["dot_name"] for r in nc.node_ids(graph)} == {n["name"] for n in nc.dot_nodes(text)}

# %% [markdown]
# Keep: a DOT print shows what was captured; its node names are the graph's ID and each node's
# local ID, numbers your code can ask for, so "node 1 in the picture" is a node you can reach.

# %% [markdown]
# ## 2. Switch a kernel off in an executable, without making a new one
#
# `cudaGraphNodeSetEnabled(exec, node, 0)` turns a kernel, memcpy or memset node of an
# executable into an empty one for the launches that follow; `1` turns it back on. The node is
# named by its handle in the graph the executable was made from, and nothing is instantiated
# again. (CUDA Runtime API, *Graph Management*: `cudaGraphNodeSetEnabled`; since CUDA 11.6,
# and cuda.core's `graph[node].disable()` since cuda.core 1.2.) The debugging kernel of
# section 1 is the one to switch off in production:

# %% tags=["key-figure"]
ex = graph.instantiate()
log_node = next(n for n in nc.nodes_of(graph) if nc.kernel_name(n) == "log_step")

timelines = {}
for label, on in (("logging on", 1), ("logging off", 0)):
    check(rt.cudaGraphNodeSetEnabled(ex.handle, log_node, on))
    ex.launch(stream)                                   # a warm launch first
    stream.synchronize()
    with labkit.timing.timeline() as rec:
        ex.launch(stream)
        stream.synchronize()
    timelines[label] = rec.timeline
check(rt.cudaGraphNodeSetEnabled(ex.handle, log_node, 1))   # back on, as it was made

plot.timelines([(timelines[k], f"12-2 {k}") for k in timelines],
               stream_names={stream: "the model"});


def gpu_us(tl):
    spans = nc.kernel_spans(tl)
    return spans[-1].end_us - spans[0].start_us


claims.disabled_kernel_costs_nothing(gpu_us(timelines["logging on"]),
                                     gpu_us(timelines["logging off"]))

# %% [markdown]
# Keep: a disabled node does no work and takes no time, in the same executable; switch
# debugging kernels off and on with one call instead of keeping two graphs.

# %% [markdown]
# ## 3. An urgent branch before the background work: node priorities
#
# A kernel node can carry a priority (`cudaGraphKernelNodeSetAttribute` with
# `cudaLaunchAttributePriority`; lower numbers go sooner, as stream priorities). An executable
# uses those priorities only when it is instantiated with
# `cudaGraphInstantiateFlagUseNodePriority`; otherwise every node has its launch stream's
# priority. Priorities matter only where kernels compete for the GPU: when the SMs are full,
# the waiting blocks of the higher priority kernel are scheduled first. (CUDA Runtime API,
# `cudaGraphInstantiate` and `cudaGraphKernelNodeSetAttribute`; since CUDA 11.7.)
#
# The simulator's model of that competition: within one launch, kernels whose grids each have
# at least one block per SM fill the GPU and run one at a time. Here a background branch of two
# long kernels (`busy`) and an urgent branch of one short kernel (`respond`) start together:

# %%
WIDE = 1024                              # blocks: more than the GPU's SMs
background = labkit.to_device(np.zeros(WIDE * 32, np.float32))
urgent = labkit.to_device(np.zeros(WIDE * 32, np.float32))
side = labkit.Stream()
with labkit.capture(stream) as cap:
    with labkit.fork(stream, side):
        busy[WIDE, 32, stream](background, 2000)     # background work, on the capturing stream
        busy[WIDE, 32, stream](background, 2000)
        nc.respond[WIDE, 32, side](urgent, 300)       # the urgent kernel, on its own branch
branches = cap.graph
urgent_node = next(n for n in nc.nodes_of(branches) if nc.kernel_name(n) == "respond")
nc.set_priority(urgent_node, -5)

runs = {}
use_priority = rt.cudaGraphInstantiateFlags.cudaGraphInstantiateFlagUseNodePriority
for label, flags in (("stream priority", 0), ("node priorities", use_priority)):
    with branches.instantiate(flags=flags) as bex:
        bex.launch(stream)
        stream.synchronize()
        with labkit.timing.timeline() as rec:
            bex.launch(stream)
            stream.synchronize()
    runs[label] = rec.timeline

plot.timelines([(runs[k], f"12-3 {k}") for k in runs], stream_names={stream: "graph"});


def urgent_done_us(tl):
    spans = nc.kernel_spans(tl)
    return next(s.end_us for s in spans if s.name == "respond") - spans[0].start_us


claims.priority_puts_urgent_first(urgent_done_us(runs["stream priority"]),
                                  urgent_done_us(runs["node priorities"]))

# %% [markdown]
# Keep: a node's priority counts only in an executable instantiated with
# `cudaGraphInstantiateFlagUseNodePriority`, and only where kernels compete for the GPU; then
# the urgent branch stops waiting behind background work.

# %% [markdown]
# ## 4. Programmatic dependent launch: no gap between two kernels
#
# Between two dependent kernels a GPU idles: the second is launched only once the first has
# finished. With *programmatic dependent launch* (PDL), the second is launched while the first
# still runs, so it is ready to start the moment the first lets it. In a graph the dependency
# becomes a *programmatic edge*: `cudaGraphAddDependencies` with edge data whose `from_port` is
# `cudaGraphKernelNodePortProgrammatic` (CUDA 12.3; PDL itself needs compute capability 9.0).
# That port opens once every block of the first kernel has called
# `cudaTriggerProgrammaticLaunchCompletion()` or exited. (CUDA Runtime API, `cudaGraphEdgeData`
# and `cudaGraphAddDependencies`; CUDA Programming Guide, *Programmatic Dependent Launch and
# Synchronization*.) llama.cpp's CUDA backend launches with PDL for exactly this gap.
#
# A numba kernel cannot call the trigger, so its dependent starts when its last block exits:
# the gap goes, but the two never overlap. (A CUDA C++ kernel that triggers early lets the next
# one start over its tail.) The simulator follows that rule; how much a GPU saves per edge is
# measured by `python -m labkit bench --pdl`. Two kernels on separate buffers, once with a
# plain edge and once with a programmatic one:

# %%
a = labkit.to_device(np.zeros(WIDE * 32, np.float32))
b = labkit.to_device(np.zeros(1024, np.float32))


def two_kernels(programmatic):
    with labkit.capture(stream) as cap:
        busy[WIDE, 32, stream](a, 500)
        nc.model_step[4, 256, stream](b)
    first, second = nc.nodes_of(cap.graph)
    if programmatic:                     # the captured edge, made programmatic
        check(rt.cudaGraphRemoveDependencies(cap.graph.handle, [first], [second], None, 1))
        check(rt.cudaGraphAddDependencies(cap.graph.handle, [first], [second],
                                          [nc.programmatic_edge()], 1))
    return cap.graph


pdl = {}
for label, programmatic in (("plain edge", False), ("programmatic edge", True)):
    with two_kernels(programmatic) as g, g.instantiate() as gex:
        gex.launch(stream)
        stream.synchronize()
        with labkit.timing.timeline() as rec:
            gex.launch(stream)
            stream.synchronize()
    pdl[label] = rec.timeline

plot.timelines([(pdl[k], f"12-4 {k}") for k in pdl], stream_names={stream: "graph"});
gaps = {k: nc.kernel_spans(t)[1].start_us - nc.kernel_spans(t)[0].end_us for k, t in pdl.items()}
print({k: f"{v:+.2f} µs" for k, v in gaps.items()}, "(the gap from the first kernel's end to the second's start)")
claims.pdl_closes_the_gap(gaps["plain edge"], gaps["programmatic edge"])

# %% [markdown]
# The catch: the second kernel starts before the first's work is complete as CUDA counts it (its
# writes flushed), so nothing guarantees it sees them. CUDA kernels wait for them with `cudaGridDependencySynchronize()`
# where they need them; a numba kernel cannot call it. So with numba a programmatic edge is
# right only when the second kernel does not read what the first writes. Here it does, and the
# simulator's race report says so when the graph is instantiated (a GPU says nothing, and the
# numbers are sometimes stale):

# %%
labkit.clear_races()
with labkit.capture(stream) as cap:
    nc.model_step[4, 256, stream](b)
    nc.log_step[1, 32, stream](b, log, 1)        # reads b, which the first kernel writes
first, second = nc.nodes_of(cap.graph)
check(rt.cudaGraphRemoveDependencies(cap.graph.handle, [first], [second], None, 1))
check(rt.cudaGraphAddDependencies(cap.graph.handle, [first], [second],
                                  [nc.programmatic_edge()], 1))
cap.graph.instantiate().close()
print(f"{len(labkit.races())} race(s) reported")
labkit.clear_races()

# %% [markdown]
# **On a stream, from Python.** In CUDA C++ the second kernel asks for PDL when it is launched:
# `cudaLaunchKernelEx` with the launch attribute `cudaLaunchAttributeProgrammaticStreamSerialization`;
# captured, that launch becomes exactly the programmatic edge above (Programming Guide, *Use in
# CUDA Graphs*). What Python can call today:
#
# | from Python | PDL on a launch? |
# | --- | --- |
# | numba-cuda 0.30: `k[grid, block, stream](...)` | no: it builds its launch configuration without the attribute |
# | cuda-bindings 13.5, runtime module | no: it has no `cudaLaunchKernelEx` |
# | cuda-bindings 13.5, driver module: `cuLaunchKernelEx` | yes: `CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION` |
# | cuda.core 1.2: `LaunchConfig(..., programmatic_stream_serialization=True)` | yes, for kernels cuda.core launches |
# | inside a numba kernel: `cudaGridDependencySynchronize`, `cudaTriggerProgrammaticLaunchCompletion` | no |
#
# `labkit.prepare(kernel, grid, block, stream, *args, programmatic=True)` takes the driver's
# way with a numba kernel: `cuLaunchKernelEx` with the attribute (CUDA Driver API,
# `cuLaunchKernelEx`; CUDA 12.0). Without the trigger the second kernel may start once every
# block of the first has exited, before the first's writes are flushed. Captured, the launch
# gives the programmatic edge:

# %%
with labkit.capture(stream) as cap:
    busy[WIDE, 32, stream](a, 500)
    labkit.prepare(nc.model_step, 4, 256, stream, b, programmatic=True)()
_, _, (edge,), _ = check(rt.cudaGraphGetEdges(cap.graph.handle, 1))
print(f"captured edge: from_port {edge.from_port} "
      f"(cudaGraphKernelNodePortProgrammatic = {rt.cudaGraphKernelNodePortProgrammatic}), "
      f"type {rt.cudaGraphDependencyType(edge.type).name}")
cap.graph.close()

# %% [markdown]
# Keep: a programmatic edge lets the next kernel start the moment its predecessor lets it (for
# a numba kernel, when its last block exits), so the gap between them goes; from Python a stream launch gets it only through the driver's
# `cuLaunchKernelEx` (or cuda.core), not numba's launch. Without `cudaGridDependencySynchronize`
# in the second kernel, use it only where the second does not read the first's output.

# %% [markdown]
# ## 5. Capture again into the graph you have (CUDA 13.3)
#
# Notebook 05 updated an executable from a newly captured graph with `cudaGraphExecUpdate`.
# That works, but every capture makes a new graph with new nodes, so anything that named the
# old graph's nodes (a node handle kept for `cudaGraphNodeSetEnabled`, or for
# `cudaGraphExecKernelNodeSetParams`) names nodes of a graph that is no longer the source.
# `cudaStreamBeginRecaptureToGraph(stream, mode, graph, None)` captures into the existing graph
# instead: the capture must make the same nodes in the same order, each of the same kind after
# the same nodes, and each keeps its handle and takes the new parameters. A topology mismatch
# fails the recapture. (CUDA Runtime API, *Stream Management*: `cudaStreamBeginRecaptureToGraph`,
# CUDA 13.3.)

# %%
x2 = labkit.to_device(np.zeros(1024, np.float32))
y2 = labkit.to_device(np.zeros(1024, np.float32))
with labkit.capture(stream) as cap:
    nc.model_step[4, 256, stream](x2)
    nc.model_step[4, 256, stream](x2)
step_graph = cap.graph
step_ex = step_graph.instantiate()
before = [int(n) for n in nc.nodes_of(step_graph)]

with labkit.capture(stream) as cap:              # (a) a new capture, then an update
    nc.model_step[4, 256, stream](y2)
    nc.model_step[4, 256, stream](y2)
check(rt.cudaGraphExecUpdate(step_ex.handle, cap.graph.handle))
new_capture = [int(n) for n in nc.nodes_of(cap.graph)]

check(rt.cudaStreamBeginRecaptureToGraph(           # (b) a recapture into the graph we have
    int(stream), rt.cudaStreamCaptureMode.cudaStreamCaptureModeGlobal, step_graph.handle, None))
nc.model_step[4, 256, stream](y2)
nc.model_step[4, 256, stream](y2)
check(rt.cudaStreamEndCapture(int(stream)))
check(rt.cudaGraphExecUpdate(step_ex.handle, step_graph.handle))
recaptured = [int(n) for n in nc.nodes_of(step_graph)]

print("node   first capture   after recapture   a new capture")
for i, (p, q, r) in enumerate(zip(before, recaptured, new_capture)):
    print(f"{i:>4}   {p:#14x}   {q:#15x}   {r:#13x}")
assert before == recaptured and not set(before) & set(new_capture)

step_ex.launch(stream)
stream.synchronize()
print("y after one launch:", y2.copy_to_host()[:4], "| x untouched:", x2.copy_to_host()[:4])

# %% [markdown]
# Keep: a recapture gives the graph's own nodes new parameters and keeps their handles, so
# whatever names those nodes keeps working; a new capture gives you a new graph to update from.

# %% [markdown]
# ## 6. Graphs launched from the device
#
# Instantiated with `cudaGraphInstantiateFlagDeviceLaunch`, an executable can be launched by a
# kernel, with `cudaGraphLaunch` in device code (CUDA 12.0). Such a graph may hold only kernel,
# memcpy, memset and child graph nodes; its copies may touch only device memory and
# page-locked, mapped host memory; and the flag does not combine with
# `cudaGraphInstantiateFlagAutoFreeOnLaunch`. (CUDA Programming Guide, *Device Graph Launch*;
# CUDA Runtime API, `cudaGraphInstantiate`.) numba's kernels cannot call `cudaGraphLaunch`, so
# here the host launches a device-launchable graph; what the flag checks is what you can try:

# %%
device_flag = rt.cudaGraphInstantiateFlags.cudaGraphInstantiateFlagDeviceLaunch
with step_graph.instantiate(flags=device_flag) as dex:
    dex.launch(stream)
    stream.synchronize()
print("a graph of kernels: instantiated for device launch, and launched from the host")

host_out = np.zeros(1024, np.float32)                # pageable host memory
with labkit.capture(stream) as cap:
    nc.model_step[4, 256, stream](x2)
    check(rt.cudaMemcpyAsync(host_out, x2.device_ctypes_pointer.value, host_out.nbytes,
                             rt.cudaMemcpyKind.cudaMemcpyDeviceToHost, int(stream)))
try:
    cap.graph.instantiate(flags=device_flag)
except labkit.CudaError as e:
    print("a copy into pageable memory:", e.name)

# %% [markdown]
# Keep: a device-launchable graph holds kernels, copies between device-visible memory, memsets
# and child graphs only; instantiate with the flag to find out early.

# %% [markdown]
# ## 7. Memory pools, and what a graph does with them
#
# Stream-ordered allocation is older than this notebook's other features: `cudaMallocAsync`,
# `cudaFreeAsync`, `cudaMemPoolCreate`, `cudaMallocFromPoolAsync` and the pool attributes came
# in **CUDA 11.2**, and captured allocations (memory allocation and free nodes) in CUDA 11.4.
# What came since is about where a pool's memory lives: pools of host memory (CUDA 12.6) and of
# managed memory, with `cudaMemGetDefaultMemPool` / `cudaMemSetMemPool` naming a pool by
# location and allocation type (CUDA 13.0). (CUDA Runtime API, *Stream Ordered Memory
# Allocator*; CUDA Programming Guide, *Stream-Ordered Memory Allocator* and *Graph Memory
# Nodes*; CCCL's *Memory Pools* page for the 12.6 and 13.0 versions.)
#
# Two things matter for graphs. A pool keeps freed memory for the next allocation, and gives
# what it holds past its *release threshold* (`cudaMemPoolAttrReleaseThreshold`, default 0)
# back at the next synchronize. And `cudaMallocFromPoolAsync` in a capture does not allocate
# from the pool: it makes an allocation node, and its documentation says the memory then belongs
# to the graph, not to the pool; the pool only lends its properties.
# Watch both in the pool's and the device's graph-memory counters:

# %%
A = rt.cudaMemPoolAttr
MB = 1 << 20
props = rt.cudaMemPoolProps()
props.allocType = rt.cudaMemAllocationType.cudaMemAllocationTypePinned
props.location.type = rt.cudaMemLocationType.cudaMemLocationTypeDevice
props.location.id = 0
pool = check(rt.cudaMemPoolCreate(props))


def counters(when):
    used = int(check(rt.cudaMemPoolGetAttribute(pool, A.cudaMemPoolAttrUsedMemCurrent)))
    held = int(check(rt.cudaMemPoolGetAttribute(pool, A.cudaMemPoolAttrReservedMemCurrent)))
    graph = int(check(rt.cudaDeviceGetGraphMemAttribute(
        0, rt.cudaGraphMemAttributeType.cudaGraphMemAttrReservedMemCurrent)))
    print(f"{when:<37} pool: used {used / MB:4.1f} MB, reserved {held / MB:4.1f} MB"
          f" | graph: {graph / MB:4.1f} MB")


def step(s):
    """One step's scratch buffer: allocated, used, freed, in stream order."""
    p = check(rt.cudaMallocFromPoolAsync(8 * MB, pool, int(s)))
    check(rt.cudaMemsetAsync(p, 0, 8 * MB, int(s)))
    check(rt.cudaFreeAsync(p, int(s)))


for threshold in (0, 64 * MB):
    check(rt.cudaMemPoolSetAttribute(pool, A.cudaMemPoolAttrReleaseThreshold,
                                     cuuint64(threshold)))
    step(stream)
    counters(f"threshold {threshold // MB:>2} MB, during a step")
    stream.synchronize()
    counters(f"threshold {threshold // MB:>2} MB, after synchronize")

with labkit.capture(stream) as cap:
    step(stream)
kinds = [check(rt.cudaGraphNodeGetType(n)).name[len("cudaGraphNodeType"):]
         for n in nc.nodes_of(cap.graph)]
print("captured step:", " -> ".join(kinds))
with cap.graph.instantiate() as pex:
    pex.launch(stream)
    stream.synchronize()
    counters("after a launch of the captured step")
cap.graph.close()
check(rt.cudaMemPoolDestroy(pool))

# %% [markdown]
# After the launch the pool's 8 MB reserved is still what the 64 MB threshold kept from the
# eager step; its used count stays at 0 while the graph's allocation lives.
#
# Keep: with a release threshold a pool keeps its memory across synchronizes, so the next
# step's allocation is a reuse, not a new one; in a capture the same call makes an allocation
# node, and its memory is the graph's (counted by `cudaDeviceGetGraphMemAttribute`, kept for
# the next launch until `cudaDeviceGraphMemTrim`), not the pool's. (On a GPU the reserved
# figures are rounded up to the driver's allocation granularity.)

# %% [markdown]
# ## 8. The same in cuda.core
#
# cuda.core 1.2 has Python names for most of the above: `GraphBuilder` captures a stream,
# `GraphDefinition` builds a graph node by node, and `graph[node]` is a node of an executable,
# to update or to switch off. `GraphCompleteOptions(use_node_priority=True)` and
# `device_launch=True` are the instantiate flags of sections 3 and 6, `DeviceMemoryResource` is a
# memory pool (its `attributes.release_threshold`), and `GraphMemoryResource` allocates inside a
# graph. Recapture (section 5), the node IDs (section 1) and setting a node's priority have no
# cuda.core name in 1.2. (cuda.core documentation, `cuda.core.graph`.)

# %%
for core, raw in nc.cuda_core_names():
    print(f"{core}\n    CUDA: {raw}")

# %% [markdown]
# cuda.core drives the driver itself, so it needs a GPU. On one, this cell builds a memset node
# with `GraphDefinition`, instantiates it and switches the node off through `graph[node]`; on
# the simulator it says what it would do.

# %%
shown = nc.cuda_core_demo()
print("simulator: cuda.core needs a GPU; the table above is what it would call" if shown is None
      else f"cuda.core: the memset node enabled {shown[0]} before disable(), {shown[1]} after")

# %% [markdown]
# Keep: `graph[node].disable()` is `cudaGraphNodeSetEnabled`, `graph.update(definition)` is
# `cudaGraphExecUpdate`: the same executable graph, named in Python.

# %% [markdown]
# ## Summary
#
# - The DOT print names nodes by the graph's ID and their local IDs (CUDA 13.1), which your code
#   can ask for; a node's tools ID is the one profilers use.
# - `cudaGraphNodeSetEnabled` switches kernel, memcpy and memset nodes off and on in an
#   executable; a disabled node takes no time.
# - Node priorities count with `cudaGraphInstantiateFlagUseNodePriority`, where kernels compete.
# - A programmatic edge (PDL) lets a kernel start as soon as its predecessor's blocks have
#   triggered or exited, with no gap; it must not read the predecessor's output unless it waits
#   with `cudaGridDependencySynchronize`.
# - `cudaStreamBeginRecaptureToGraph` (CUDA 13.3) captures again into a graph, keeping its nodes.
# - A device-launchable graph holds kernels, device-visible copies, memsets and child graphs.
# - A pool keeps freed memory up to its release threshold; captured, `cudaMallocFromPoolAsync`
#   makes an allocation node whose memory is the graph's, not the pool's.
#
# ## Exercise: switch the logging off, and on again
#
# Write `set_logging(ex, graph, on)`. `graph` is a graph made as section 1's was (a step, the
# logging kernel, a step; the check makes its own) and `ex` an executable made from it. After `set_logging(ex, graph, False)` the launches
# of `ex` must run the model's steps but not the logging kernel; after
# `set_logging(ex, graph, True)`, the logging kernel again. Change `ex` itself: the check keeps
# using the executable it gave you. Find the logging node by its kernel's name
# (`nc.kernel_name`) or by its local ID in the DOT print (an ID names a node; the call wants the
# node itself, from `nc.nodes_of(graph)`). The starter does nothing yet.

# %% tags=["starter"]
from labkit.course.exercises import nb12


def set_logging(ex, graph, on):
    pass

# %% tags=["solution"]
from labkit.course.exercises import nb12


def set_logging(ex, graph, on):
    node = next(n for n in nc.nodes_of(graph) if nc.kernel_name(n) == "log_step")
    check(rt.cudaGraphNodeSetEnabled(ex.handle, node, int(on)))

# %% tags=["check"]
nb12.check_logging_switch(set_logging, stream)

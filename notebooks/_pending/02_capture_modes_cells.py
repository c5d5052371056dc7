# Pending cells for notebook 02 (jupytext percent format), from issue 16: the capture-mode section.
#
# They REPLACE two cells of notebooks/02_stream_capture.ipynb (cells 21 and 22, 0-based), in
# notebooks/src/02_stream_capture.py the "### 4." markdown cell and the code cell after it:
#   markdown cell starting "### 4. Global mode forbids, relaxed mode allows: `cudaMalloc`"
#   code cell starting     "results = {}"
# They use what the notebook defines before them: labkit, np, plt, rt, check, plot, GLOBAL,
# RELAXED, s1 and usable_again (cells 1 and 13). No cell is tagged: none fails on purpose.
# To try them alone on the simulator: python notebooks/_pending/run_02_capture_modes_cells.py

# %% [markdown]
# ### 4. Capture modes: which calls a capture forbids, and to whom
#
# Some calls are *potentially unsafe* during a capture: `cudaMalloc` and `cudaFree`, pinned
# allocations, waiting on or polling a stream or event that is not in the capture. They are
# neither captured nor safe to run while the GPU's work is only being recorded (an allocation
# may synchronize the device). Whether one is refused depends on two modes:
#
# * the **capture's mode**, the second argument of `cudaStreamBeginCapture`: global,
#   thread-local or relaxed;
# * the **calling thread's own mode**, global for every thread until it calls
#   `cudaThreadExchangeStreamCaptureMode(mode)`, which sets it and returns the previous one.
#
# First the classic case, from the capturing thread: in global mode `cudaMalloc` is refused
# (900) and the capture is lost; in relaxed mode it is allowed, but the allocation is not part
# of the graph: it happens once, now, and every replay reuses that one address. Relaxed mode
# makes the call legal, not captured.

# %%
results = {}
for name, mode in (("global", GLOBAL), ("relaxed", RELAXED)):
    check(rt.cudaStreamBeginCapture(s1.handle, mode), "cudaStreamBeginCapture")
    err_malloc, p = rt.cudaMalloc(4096)
    err_end, g = rt.cudaStreamEndCapture(s1.handle)
    print(f"{name:8} cudaMalloc -> {err_malloc.name:36} cudaStreamEndCapture -> {err_end.name}")
    if int(err_malloc) == 0:
        check(rt.cudaFree(p), "cudaFree")
    if int(err_end) == 0:
        check(rt.cudaGraphDestroy(g), "cudaGraphDestroy")
    rt.cudaGetLastError()
    results[name] = (int(err_malloc), int(err_end))
print("hint for 900:", labkit.hint_for(900))
assert results == {"global": (900, 901), "relaxed": (0, 0)}
usable_again(s1)

# %% [markdown]
# ### The matrix: call × capture mode × calling thread
#
# `labkit.capture_modes` runs one *cell* at a time: begin a capture on a non-blocking stream in
# a mode, launch one kernel into it, make one call, then look at the capture and end it. The call
# comes from the capturing thread or from another thread, each either in its default (global)
# mode or after exchanging its own mode to relaxed. The cells below run now, on this backend
# (about a hundred, well under a second); the whole matrix (25 calls, 300 cells) was probed on an
# H200, and the conformance tests hold the simulator to every cell of it.

# %%
from labkit import capture_modes

MATRIX_CALLS = ["cudaMalloc", "cudaStreamSynchronize(other)", "cudaEventQuery(outside)",
                "cudaStreamSynchronize(capturing)", "cudaEventQuery(captured)",
                "cudaDeviceSynchronize", "cudaMallocAsync(capturing)", "cudaFreeAsync(capturing)",
                "cudaMemcpy", "cudaStreamCreate", "cudaStreamEndCapture"]
matrix = capture_modes.measure(MATRIX_CALLS)
plot.capture_matrix(matrix["cells"], title=f"{len(matrix['cells'])} capture-mode cells")
plt.show()
print("cudaThreadExchangeStreamCaptureMode returned:")
for what, previous in matrix["exchange"].items():
    print(f"  {what:30} {previous}")

# %% [markdown]
# Reading the figure, row by row:
#
# * **Potentially unsafe calls** (the first three rows): a **global** capture forbids them to
#   every thread; a **thread-local** capture only to the thread that began it; a **relaxed**
#   capture to none. A thread that exchanged its own mode to relaxed is exempt in every mode:
#   that is what `cudaThreadExchangeStreamCaptureMode` is for (a library that must allocate while
#   its caller captures). A refusal is 900 *and* the capture is invalidated: its end returns 901
#   and no graph.
# * **Calls about the capture itself** are refused in every mode, from every thread, relaxed or
#   not: waiting on or querying the capturing stream (900) or an event recorded in the capture
#   (907), and `cudaDeviceSynchronize` (900). Nothing has run yet, so there is nothing to wait
#   for.
# * **Always allowed**: `cudaMallocAsync` on the capturing stream is *captured* (a memory-allocation
#   node of the graph); a synchronous `cudaMemcpy` on the legacy stream (while a non-blocking
#   stream captures); creating streams and events.
# * `cudaFreeAsync` on the capturing stream of memory allocated **before** the capture is refused
#   with 1 (`cudaErrorInvalidValue`), and the capture goes on: a graph can free only memory that
#   a graph allocated.
# * **Ending** a global or thread-local capture from another thread is 908
#   (`cudaErrorStreamCaptureWrongThread`), and the capture is gone: the capturing thread's own end
#   then finds nothing (401). A relaxed capture may be ended from any thread.
#
# The code checks those rules on the cells just measured:

# %%
cell = {(r["call"], r["mode"], r["where"]): r for r in matrix["cells"]}
MODES, WHERES = list(capture_modes.MODES), capture_modes.WHERES


def allowed(call, mode, where):
    return cell[call, mode, where]["rc"] == "cudaSuccess"


for mode in MODES:
    print(f"cudaMalloc during a {mode:12} capture, allowed from:",
          [where for where in WHERES if allowed("cudaMalloc", mode, where)])
assert [allowed("cudaMalloc", m, "capturing") for m in MODES] == [False, False, True]
assert [allowed("cudaMalloc", m, "other") for m in MODES] == [False, True, True]
assert all(allowed("cudaMalloc", m, w) for m in MODES for w in ("capturing_relaxed", "other_relaxed"))
assert not any(allowed(c, m, w) for m in MODES for w in WHERES
               for c in ("cudaStreamSynchronize(capturing)", "cudaEventQuery(captured)",
                         "cudaDeviceSynchronize"))
assert all(allowed("cudaMallocAsync(capturing)", m, w) for m in MODES for w in WHERES)
assert [cell["cudaStreamEndCapture", m, "other"]["rc"] for m in MODES] == [
    "cudaErrorStreamCaptureWrongThread", "cudaErrorStreamCaptureWrongThread", "cudaSuccess"]
assert matrix["exchange"]["new thread sets relaxed, gets"] == "cudaStreamCaptureModeGlobal"
print("the live matrix shows every rule above")
usable_again(s1)

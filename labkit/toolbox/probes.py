"""Two measurements the GPU issue asks for, beside the chain benchmark (``python -m labkit bench
--pdl`` / ``--capture-share``).

`pdl_saving`: what a programmatic edge (PDL, CUDA 12.3+) saves between two kernels. Two graphs
of the same chain of K kernels, one per buffer, joined by plain edges in one and by programmatic
edges (``cudaGraphKernelNodePortProgrammatic``) in the other, launched alternately and timed
with events around each launch. The saving per edge is (plain - programmatic) / (K - 1). On a GPU
it is measured; on the simulator it is the model's node gap (a programmatic edge releases its
dependent at its predecessor's end, ``pdl_overlap_us`` = 0, as CUDA's rule gives for kernels
that never trigger early). numba kernels neither trigger early nor wait for their predecessor
(they have no ``griddepcontrol`` instruction), so the chain's kernels write separate buffers:
a start before the predecessor's writes are flushed races with nothing.

`capture_share`: labkit's share of a one-kernel capture, beside the bare calls, in one process.
Five ways, interleaved, each timed with the backend's host clock, `labkit.host_us` (on a GPU
``time.perf_counter``; on the simulator its calibrated model's clock, so there the figures are
the model's, never the simulator's own Python time, and labkit's Python costs nothing there;
nothing waits for the GPU): the bare calls (``cudaStreamBeginCapture`` → numba's own launch →
``cudaStreamEndCapture`` → ``cudaGraphDestroy``); the same with labkit's launch; the same inside
numba's ``defer_cleanup`` (what labkit's capture adds first); ``labkit.capture`` around the
launch; and an empty ``labkit.capture``. The differences place labkit's share.
"""
from __future__ import annotations

import gc
import statistics

import numpy as np

import labkit
from labkit.backends import frees_held, is_gpu
from labkit.course.workloads import add_one, busy

rt = labkit.rt
GLOBAL = rt.cudaStreamCaptureMode.cudaStreamCaptureModeGlobal


def _ok(result, what: str):
    if int(result[0]) != 0:
        raise labkit.CudaError(result[0], what)
    return result[1] if len(result) == 2 else result[1:]


def _programmatic_edge():
    d = rt.cudaGraphEdgeData()
    d.from_port = rt.cudaGraphKernelNodePortProgrammatic
    d.type = rt.cudaGraphDependencyType.cudaGraphDependencyTypeProgrammatic
    return d


def _chain_exec(stream: int, bufs, launch, edge):
    """An executable graph of one kernel per buffer, each joined to the last by ``edge``
    (None: a plain edge). Each kernel is captured into the graph on its own, then joined."""
    g = _ok(rt.cudaGraphCreate(0), "cudaGraphCreate")
    nodes = []
    for b in bufs:
        _ok(rt.cudaStreamBeginCaptureToGraph(stream, g, None, None, 0, GLOBAL),
            "cudaStreamBeginCaptureToGraph")
        launch(b, stream)
        nodes.append(rt.cudaStreamGetCaptureInfo(stream)[4][0])
        _ok(rt.cudaStreamEndCapture(stream), "cudaStreamEndCapture")
    for a, b in zip(nodes, nodes[1:]):
        _ok(rt.cudaGraphAddDependencies(g, [a], [b], None if edge is None else [edge], 1),
            "cudaGraphAddDependencies")
    return _ok(rt.cudaGraphInstantiate(g, 0), "cudaGraphInstantiate")


def _timed_us(stream: int, ge, start, end) -> float:
    _ok(rt.cudaEventRecord(start, stream), "cudaEventRecord")
    _ok(rt.cudaGraphLaunch(ge, stream), "cudaGraphLaunch")
    _ok(rt.cudaEventRecord(end, stream), "cudaEventRecord")
    _ok(rt.cudaEventSynchronize(end), "cudaEventSynchronize")
    return _ok(rt.cudaEventElapsedTime(start, end), "cudaEventElapsedTime") * 1000.0


def _quantiles(xs) -> dict:
    p10, p50, p90 = np.percentile(xs, [10, 50, 90])
    return {"p10": float(p10), "p50": float(p50), "p90": float(p90)}


def pdl_saving(kernels: int = 32, repeat: int = 200, busy_iters: int = 0) -> dict:
    """The chain with plain edges against programmatic edges: each one's event-timed
    quantiles (µs) and the saving per edge. ``busy_iters``: the course's busy kernel (one
    block of 32 threads, that many iterations) instead of add_one (4 × 256)."""
    if kernels < 2 or repeat < 1:
        raise ValueError(f"pdl_saving needs 2 or more kernels and 1 or more repeats, got "
                         f"kernels={kernels}, repeat={repeat}")
    s = labkit.Stream()
    h = s.handle
    bufs = [labkit.to_device(np.zeros(1024, np.float32)) for _ in range(kernels)]
    if busy_iters:
        def launch(b, stream):
            busy[1, 32, stream](b, busy_iters)
    else:
        def launch(b, stream):
            add_one[4, 256, stream](b)
    plain = _chain_exec(h, bufs, launch, None)
    pdl = _chain_exec(h, bufs, launch, _programmatic_edge())
    start = _ok(rt.cudaEventCreate(), "cudaEventCreate")
    end = _ok(rt.cudaEventCreate(), "cudaEventCreate")
    for _ in range(10):                               # warm-up: the upload, the clocks
        _timed_us(h, plain, start, end)
        _timed_us(h, pdl, start, end)
    t_plain, t_pdl = [], []
    for i in range(repeat):                           # alternate which goes first
        pair = [(plain, t_plain), (pdl, t_pdl)]
        for ge, out in (pair if i % 2 else pair[::-1]):
            out.append(_timed_us(h, ge, start, end))
    for ge in (plain, pdl):
        rt.cudaGraphExecDestroy(ge)
    q_plain, q_pdl = _quantiles(t_plain), _quantiles(t_pdl)
    return {"backend": labkit.backend, "device": labkit.device_name(), "kernels": kernels,
            "repeat": repeat,
            "kernel": f"busy({busy_iters}) 1x32" if busy_iters else "add_one 4x256",
            "plain_us": q_plain, "programmatic_us": q_pdl,
            "saving_per_edge_us": (q_plain["p50"] - q_pdl["p50"]) / (kernels - 1)}


def capture_share(repeat: int = 200, rounds: int = 5) -> dict:
    """Host µs of a one-kernel capture five ways (see the module's docstring): each way's
    median over its rounds' medians, every round's median, and labkit's share (labkit - bare).

    The simulator has no numba launch of its own (its kernels run through labkit), so there
    "bare" launches through labkit too and only the capture's own share is compared."""
    if repeat < 1 or rounds < 1:
        raise ValueError(f"capture_share needs repeat and rounds of 1 or more, got {repeat}, "
                         f"{rounds}")
    s = labkit.Stream()
    h = s.handle
    x = labkit.to_device(np.zeros(1024, np.float32))
    numba_launch = add_one.dispatcher[4, 256, h] if is_gpu else add_one[4, 256, s]

    def bare():
        rt.cudaStreamBeginCapture(h, GLOBAL)
        numba_launch(x)
        _, g = rt.cudaStreamEndCapture(h)
        rt.cudaGraphDestroy(g)

    def bare_labkit_launch():
        rt.cudaStreamBeginCapture(h, GLOBAL)
        add_one[4, 256, s](x)
        _, g = rt.cudaStreamEndCapture(h)
        rt.cudaGraphDestroy(g)

    def bare_frees_held():
        with frees_held():
            bare()

    def with_labkit():
        with labkit.capture(s) as cap:
            add_one[4, 256, s](x)
        cap.graph.close()

    def labkit_empty():
        with labkit.capture(s) as cap:
            pass
        cap.graph.close()

    ways = {"bare": bare, "bare+labkit_launch": bare_labkit_launch,
            "bare+frees_held": bare_frees_held, "labkit": with_labkit, "labkit_empty": labkit_empty}
    for f in ways.values():                           # warm-up: the JIT, the first capture
        for _ in range(20):
            f()
    labkit.synchronize()
    per_round: dict[str, list[float]] = {k: [] for k in ways}
    gc.disable()                                      # a collection would land in one way only
    try:
        for r in range(rounds):
            for name in (list(ways) if r % 2 == 0 else list(reversed(ways))):
                f, ts = ways[name], []
                for _ in range(repeat):
                    t0 = labkit.host_us()
                    f()
                    ts.append(labkit.host_us() - t0)
                per_round[name].append(statistics.median(ts))
            gc.collect()
    finally:
        gc.enable()
    med = {k: statistics.median(v) for k, v in per_round.items()}
    return {"backend": labkit.backend, "device": labkit.device_name(), "repeat": repeat,
            "rounds": rounds, "median_us": med, "per_round_us": per_round,
            "labkit_share_us": med["labkit"] - med["bare"]}

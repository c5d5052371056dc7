"""Calibration: measure the simulator's cost model on a real GPU (``python -m labkit calibrate``).

Each figure is measured as the simulator uses it (see labkit/sim/runtime.py) and saved with its
spread, the GPU, driver, versions and date, and the host's noise (`labkit.measure.host_noise`),
as one JSON file in the layout ``labkit/calibration/calibration.schema.json`` describes. Run it on
the GPU the course should imitate; commit the file as ``labkit/calibration/h200.json`` (or point
LABKIT_CALIBRATION at it): one run writes the whole file.

A GPU host's own speed drifts by tens of per cent from minute to minute (clocks, the CPU's
frequency, other tenants). So the host costs are measured in several rounds, and each round
also runs the chain benchmark (`labkit.toolbox.chain.measure_chain`), alternating which goes first:
the model's figures and the benchmark it is checked against come from the same minutes. Each
figure's ``value`` is its fastest round's (see `_fig`), and its ``spread`` is over the rounds.
``--bench-out`` saves the benchmark's figures and rounds, which the fidelity test compares the
simulator with.
"""
from __future__ import annotations

import datetime
from importlib import metadata

import numpy as np

import labkit
from labkit import explicit, timing
from labkit._calibration import SCHEMA_NAME
from labkit.measure import _cupti, host_noise
from labkit.backends import is_gpu
from labkit.toolbox.chain import (BLOCK, GRID, N, capture_chain, host_stats, measure_chain,
                                  node_updates, prepared_chain)
from labkit.measure.stats import Stats
from labkit.course.workloads import add_one, busy, chain

rt = labkit.rt
K = 200                               # the chain benchmark's length
SIZES = [1, 10, 100, 200, 1000]       # graph sizes of the per-node fits
END_CAPTURE_PER_NODE_US = 0.3         # chosen: a share of the capture figure; not separable from the host


def _fit(sizes, values):
    """Least-squares base + per-node slope."""
    slope, base = np.polyfit(np.asarray(sizes, float), np.asarray(values, float), 1)
    return float(max(base, 0.0)), float(max(slope, 0.0))


# Each round's figure is the median of its own samples. Over the rounds, the fastest one is taken:
# on the H200's host, whole stretches of seconds ran every driver call 1.7–2.2× slower (a raw node
# update 0.75 µs, then 1.4–1.7 µs for a second or more, often after the process had slept; the
# host's power states, not CUDA's nor labkit's), and 6 of 7 rounds of a calibration fell into them.
# The fastest round is the host at speed, the figure the simulator charges (``value``); the spread
# over the rounds stays beside it, and the simulator's host noise draws its slower stretches from
# those rounds (``host_noise.speed_ratios``). (Python's timeit reasons the same way about repeats.)
def _fig(values, over: str = "rounds", source: str | None = None) -> dict:
    st = Stats(values)
    return {"value": float(min(values)),
            "source": source or f"the fastest of {st.n} {over}" + (
                ", each the median of its own calls" if over == "rounds" else ""),
            "spread": {"over": over, "n": st.n, "min": float(min(values)), "p10": st.percentile(10),
                       "median": st.median, "p90": st.percentile(90)}}


PDL_OVERLAP_US = 0.0
PDL_SOURCE = ("0 by CUDA's rule, not measured: a programmatic edge's port "
              '(cudaGraphKernelNodePortProgrammatic) activates when every block of the first kernel'
              " has called cudaTriggerProgrammaticLaunchCompletion or exited (cuda-bindings' "
              'GraphKernelNodePort; CUDA Programming Guide, Programmatic Dependent Launch). numba '
              "kernels cannot trigger, so the second starts no earlier than the first's last "
              "block's exit: no overlap; what PDL removes is the launch gap between them. A kernel "
              'that triggers early would start sooner; `python -m labkit bench --pdl` measures the '
              'saving per edge')


def _v(value, source: str, **extra) -> dict:
    """One figure of the calibration: the value the simulator charges and where it came from."""
    return {"value": float(value), "source": source, **extra}


def _host_round(x, y, s, ex) -> dict:
    """One round of the host-cost figures (µs); the sweeps as lists over SIZES."""
    r = {}
    r["numba_launch_us"] = timing.measure(lambda: chain(K, x, s), sync=s, per=K, repeat=20).median
    prep = labkit.prepare(add_one, GRID, BLOCK, s, x)
    prepared_chain(prep, 2); s.synchronize()
    r["prepared_launch_us"] = timing.measure(lambda: prepared_chain(prep, K), sync=s, per=K,
                                             repeat=20).median

    def begin_end():
        rt.cudaStreamBeginCapture(s.handle, rt.cudaStreamCaptureMode.cudaStreamCaptureModeGlobal)
        _, gg = rt.cudaStreamEndCapture(s.handle)
        rt.cudaGraphDestroy(gg)
    r["begin_capture_us"] = timing.measure(begin_end, repeat=50).median
    cap = host_stats(lambda: capture_chain(K, x, s).close(), s, 10, warmup=1).median
    # what one launch adds to a capture, so that begin + K launches + end is the whole capture
    r["capture_launch_us"] = max(cap - r["begin_capture_us"], 0.0) / K - END_CAPTURE_PER_NODE_US
    for name in ("graph_launch", "instantiate", "upload", "exec_update"):
        r[name] = []
    for n in SIZES:
        gn = capture_chain(n, x, s)
        gn2 = capture_chain(n, y, s)      # other buffers: an update that changes every node
        r["instantiate"].append(host_stats(lambda: gn.instantiate().close(), s, 15, warmup=2).median)
        en = gn.instantiate()
        t0 = labkit.host_us(); en.launch(s); s.synchronize(); first = labkit.host_us() - t0
        steady = timing.measure(lambda: en.launch(s), sync=s, repeat=10).median
        r["upload"].append(max(first - steady, 0.0))
        r["graph_launch"].append(host_stats(lambda: en.launch(s), s, 100).median)
        ups = []
        for i in range(16):
            t0 = labkit.host_us(); en.update(gn2 if i % 2 == 0 else gn); ups.append(labkit.host_us() - t0)
        r["exec_update"].append(float(np.median(ups)))
        en.close(); gn.close(); gn2.close()
    # the node update the benchmark times (kernel node 0 pointed at the other buffer): through
    # labkit's handle, and as the raw driver call with the same prebuilt block (what the
    # simulator's cudaGraphExecKernelNodeSetParams charges; labkit's share is the difference)
    nu = node_updates(ex, x, y, repeat=200, rounds=1)
    r["node_update_us"], r["raw_node_update_us"] = nu["labkit"], nu["raw"]
    # the chain built node by node, one prebuilt block: what each cudaGraphAddKernelNode charges
    r["add_kernel_node_us"] = host_stats(lambda: explicit.chain_graph(add_one, K, GRID, BLOCK, x).close(),
                                    s, 10, warmup=1).median / K
    ev = labkit.Event()
    r["api_us"] = host_stats(lambda: rt.cudaEventRecord(ev.handle, s.handle), s, 200).median
    ev.close()
    r["sync_us"] = timing.measure(lambda: rt.cudaStreamSynchronize(s.handle), repeat=200).median
    r["one_launch_us"] = timing.measure(lambda: add_one[GRID, BLOCK, s](x), sync=s, repeat=50).median
    return r



def kernel_GBps(s) -> float:
    """GB/s that ``add_one`` moves (it reads and writes each float) over 64 MiB, from the
    difference between 64 and 32 MiB, ten kernels back to back: no launch gap in it. A simple
    numba kernel reaches less than a device-to-device copy (``device_GBps``)."""
    t = {}
    for n in (1 << 23, 1 << 24):
        a = labkit.device_array(n, np.float32)
        grid = (n + 255) // 256
        t[n] = timing.gpu_measure(lambda: [add_one[grid, 256, s](a) for _ in range(10)], s,
                                  repeat=10, per=10).median
    return 2 * 4 * ((1 << 24) - (1 << 23)) / ((t[1 << 24] - t[1 << 23]) * 1e3)


def measure(rounds: int = 7, *, require_gpu: bool = True) -> dict:
    """Calibrate: ``rounds`` interleaved rounds of host costs and the chain benchmark.

    Returns the whole calibration file's contents, with the benchmark's figures under ``bench``
    (which `main` writes to a file of their own).
    ``require_gpu=False`` lets the simulator calibrate itself, which the tests use to check
    that each figure is measured the way the simulator models it.
    """
    if require_gpu and not is_gpu:
        raise SystemExit("calibrate measures a real GPU: run it with LABKIT_BACKEND=cuda on a GPU host")
    if rounds < 1:
        raise ValueError(f"rounds must be at least 1, got {rounds}")
    s = labkit.Stream()
    x = labkit.to_device(np.zeros(N, np.float32))
    y = labkit.to_device(np.zeros(N, np.float32))
    chain(2, x, s); busy[1, 32, s](x, 10); s.synchronize()
    g = capture_chain(K, x, s)
    ex = g.instantiate()
    ex.launch(s); s.synchronize()
    hosts, benches = [], []
    for i in range(rounds):            # alternate the order, so drift hits both alike
        if i % 2:
            benches.append(measure_chain(K))
        hosts.append(_host_round(x, y, s, ex))
        if not i % 2:
            benches.append(measure_chain(K))
    P = {}
    for name in ("numba_launch_us", "prepared_launch_us", "begin_capture_us", "capture_launch_us",
                 "node_update_us", "raw_node_update_us", "add_kernel_node_us", "api_us", "sync_us"):
        P[name] = _fig([h[name] for h in hosts])
    for name in ("graph_launch", "instantiate", "upload", "exec_update"):
        per_size = np.min([h[name] for h in hosts], axis=0).tolist()   # fastest round, as _fig
        base, per = _fit(SIZES, per_size)
        P[f"{name}_base_us"] = _v(base, "the fastest round at each size (per_size); value: their "
                                  "least-squares intercept", sizes=SIZES, per_size=per_size,
                                  per_size_rounds=[h[name] for h in hosts])
        P[f"{name}_per_node_us"] = _v(per, "the size sweep's least-squares slope")
    P["end_capture_per_node_us"] = _v(END_CAPTURE_PER_NODE_US,
                                      "chosen, not measured (end capture is not separable from the "
                                      "host): this share of the measured capture per node is "
                                      "charged at cudaStreamEndCapture, and capture_launch_us is the rest")
    # GPU time of one node of a graph of tiny kernels: 5 replays back to back, so the wait for
    # the first one to start is spread over 5 × K nodes
    gpu = timing.gpu_measure(lambda: [ex.launch(s) for _ in range(5)], s, repeat=30, per=5 * K)
    # copies and memory
    small, big = labkit.pinned_array(1024, np.float32), labkit.pinned_array(16 << 20, np.float32)
    dsmall, dbig = labkit.device_array(1024, np.float32), labkit.device_array(16 << 20, np.float32)
    H2D = rt.cudaMemcpyKind.cudaMemcpyHostToDevice

    def copies(dst, src, n, kind, times):
        d, h = dst.device_ctypes_pointer.value, getattr(src, "ctypes", None)
        sp = h.data if h is not None else src.device_ctypes_pointer.value

        def go():           # back to back: the GPU's time per copy, not the launch gap before it
            for _ in range(times):
                rt.cudaMemcpyAsync(d, sp, n, kind, s.handle)
        return go
    bw = timing.gpu_measure(copies(dbig, big, big.nbytes, H2D, 1), s, repeat=10).median
    P["memcpy_GBps"] = _v(big.nbytes / (bw * 1e3), "a 64 MiB pinned host-to-device copy")
    # 20 and 40 small copies: the difference per copy is one copy's time, no launch gap in it;
    # less the bytes' time at that bandwidth, what is left is the copy's fixed latency
    t20, t40 = (timing.gpu_measure(copies(dsmall, small, 4096, H2D, n), s, repeat=30).median
                for n in (20, 40))
    P["memcpy_latency_us"] = _v((t40 - t20) / 20 - 4096 / (P["memcpy_GBps"]["value"] * 1e3),
                                "20 against 40 small copies back to back, per copy, less the bytes' time")
    d2 = labkit.device_array(16 << 20, np.float32)
    D2D = rt.cudaMemcpyKind.cudaMemcpyDeviceToDevice
    # two lengths of device-to-device copy: the difference is bandwidth alone, no latency; such
    # a copy reads and writes every byte, 2 × its size of memory traffic
    half, full = (timing.gpu_measure(copies(d2, dbig, n, D2D, 5), s, repeat=10, per=5).median
                  for n in (dbig.nbytes // 2, dbig.nbytes))
    P["device_GBps"] = _v(dbig.nbytes / ((full - half) * 1e3),
                          "two lengths of device-to-device copy, the difference")
    P["kernel_GBps"] = _v(kernel_GBps(s), "add_one over 32 and 64 MiB, one thread per element, "
                          "ten back to back: the difference, the bandwidth numba's simple kernels reach")

    def malloc_free():
        _, p = rt.cudaMalloc(1 << 20)
        rt.cudaFree(p)
    # cudaFree costs one small API call: the rest is cudaMalloc's
    P["malloc_us"] = _fig(timing.measure(malloc_free, repeat=30).samples - P["api_us"]["value"], "calls",
                          "the fastest of 30 calls (cudaMalloc and cudaFree of 1 MiB, less api_us)")
    # a spinning kernel at two lengths: the difference is the loop alone, without the launch
    iters = 100_000
    b1, b2 = (timing.gpu_measure(lambda: busy[1, 32, s](x, n), s, repeat=5).median
              for n in (iters, 2 * iters))

    from labkit.measure import conditional_costs  # WHILE iterations and conditional nodes
    cond = conditional_costs.measure(s)
    for name in ("while_iteration_us", "conditional_node_us"):
        P[name] = _v(cond[name], "labkit.measure.conditional_costs", inputs=cond)
    from labkit.course import decode_costs  # the decoder's kernels, numba's per-array cost, waits
    dc = decode_costs.measure(s)
    src = {"inputs": dc, "source": "labkit.course.decode_costs"}
    P["numba_launch_per_array_us"] = _v(dc["numba_launch_per_array_us"], **src)
    P["blocking_sync_wake_us"] = _v(dc["blocking_sync_wake_us"], **src)
    P["blocking_sync_cpu_us"] = _v(max(dc["blocking_wait_cpu_us"] - P["sync_us"]["value"], 0.0), **src)

    # the host's noise: a trace of single calls, new kernels, streams and events (host costs, so
    # before CUPTI attaches), and the benchmark's rounds
    noise = host_noise.measure(s, x, add_one, _bench_summary(benches)["per_round"])

    # One kernel's GPU time from a CUPTI trace, last of all: while CUPTI is attached every
    # launch is dearer, so no host cost may be measured after it.
    # A trace that fails must not lose the rounds measured above: fall back, and say why.
    kern, why = None, ""
    try:
        with timing.timeline() as rec:
            ex.launch(s); s.synchronize()
        if rec.timeline.source in ("model", "cupti"):     # kernel by kernel, not one event pair
            d = [sp.end_us - sp.start_us for sp in rec.timeline.spans if sp.kind == "kernel"]
            kern, why = (float(np.median(d)), "") if d else (None, "the trace held no kernel")
        else:
            why = "no CUPTI: " + _cupti.available()[1]
    except Exception as e:    # noqa: BLE001 - recorded in the file, not hidden
        why = f"the trace failed: {type(e).__name__}: {e}"
    kernel_us = kern if kern is not None else 0.8 * gpu.median
    P["kernel_us"] = _v(kernel_us, "the median kernel of one replay of the chain in a trace"
                        if kern is not None else f"0.8 × graph node ({why})")
    P["graph_node_gap_us"] = _v(max(gpu.median - kernel_us, 0.0), "one node of a graph of tiny "
                                "kernels (5 replays back to back) less kernel_us")
    P["decode_kernel_us"] = _v(max(dc["decode_node_us"] - P["graph_node_gap_us"]["value"], 0.0), **src)
    P["pdl_overlap_us"] = _v(PDL_OVERLAP_US, PDL_SOURCE)
    P["busy_ns_per_iter"] = _v((b2 - b1) * 1000.0 / iters, "the busy kernel at 100,000 and 200,000 "
                               "iterations, the difference")
    one = float(min(h["one_launch_us"] for h in hosts))           # fastest round, as _fig
    # one launch + sync, less numba's launch and the kernel: the time from the launch call's
    # return to the kernel's start (the sync returns as the kernel ends)
    P["launch_latency_us"] = _v(max(one - P["numba_launch_us"]["value"] - kernel_us, 0.5),
                                "one launch and its sync, less numba_launch_us and kernel_us")
    ex.close(); g.close()
    bench = _bench_summary(benches)
    props = labkit.check(rt.cudaGetDeviceProperties(0))
    drv = labkit.check(rt.cudaDriverGetVersion())
    rtv = labkit.check(rt.cudaRuntimeGetVersion())
    return {
        "schema": SCHEMA_NAME,
        "gpu": labkit.device_name(),
        "sm_count": int(props.multiProcessorCount),
        "compute_capability": [int(props.major), int(props.minor)],
        "total_mem": int(props.totalGlobalMem),
        "driver": f"CUDA driver API {drv // 1000}.{drv % 1000 // 10}",
        "cuda_runtime": f"{rtv // 1000}.{rtv % 1000 // 10}",
        "numba_cuda": metadata.version("numba-cuda"),
        "cuda_bindings": metadata.version("cuda-bindings"),
        "numpy": np.__version__,
        "date": datetime.date.today().isoformat(),
        "source": f"python -m labkit calibrate ({rounds} rounds)",
        "params": anchor_to_bench(P, bench),
        "host_noise": noise,
        "bench": bench,
    }


# The chain benchmark, run in the same rounds, times some of the calls the simulator charges
# with more repeats, interleaved with the raw driver call (3 × 100 alternating node updates, say).
# On the H200 its figures and the host rounds' single passes over the same calls differed by up
# to 1.9× (a node update 1.65 against 3.0 µs, an explicit build 379 against 739 µs),
# and the simulator must reproduce the benchmark that the notebooks and the README quote. So each
# such figure is taken from the benchmark; a size sweep keeps its shape (how the cost grows with
# the node count) and is scaled to the benchmark's figure at the chain's length.
DIRECT = {"numba_launch_us": "eager_us_per_kernel", "prepared_launch_us": "prepared_us_per_kernel",
          "node_update_us": "node_update_us", "raw_node_update_us": "raw_node_update_us"}
SWEEPS = {"graph_launch": "graph_launch_us", "instantiate": "instantiate_us",
          "exec_update": "exec_update_us"}


def anchor_to_bench(P: dict, bench: dict, k: int = K) -> dict:
    """``P`` with the figures the benchmark measures taken from it (see above); the host
    rounds' own figures stay in each one's ``spread`` (and a sweep's in ``per_size_fastest``)."""
    P = {name: dict(v) for name, v in P.items()}

    def take(name, value, how):
        P[name]["value"], P[name]["source"] = float(value), how
    for name, key in DIRECT.items():
        take(name, bench[key], f"the chain benchmark's {key}")
    end = P["end_capture_per_node_us"]["value"]
    take("capture_launch_us", max(bench["capture_us"] - P["begin_capture_us"]["value"], 0.0) / k - end,
         "the chain benchmark's capture_us, less begin and end, per launch")
    take("add_kernel_node_us", bench["explicit_build_us"] / k,
         "the chain benchmark's explicit_build_us, per node")
    for name, key in SWEEPS.items():
        sweep = P[f"{name}_base_us"]
        at_k = float(np.interp(k, sweep["sizes"], sweep["per_size"]))
        if at_k <= 0:
            continue
        f = bench[key] / at_k
        how = f"the sweep scaled by {f:.3f} to the chain benchmark's {key}"
        sweep["per_size_fastest"] = sweep["per_size"]
        sweep["per_size"] = [v * f for v in sweep["per_size"]]
        take(f"{name}_base_us", sweep["value"] * f, how)
        take(f"{name}_per_node_us", P[f"{name}_per_node_us"]["value"] * f, how)
    return P


def _bench_summary(benches: list[dict]) -> dict:
    """The benchmark's figures, each from its fastest round (see `_fig`), with every round's value."""
    out = {k: benches[0][k] for k in ("backend", "device", "kernels")}
    keys = [k for k, v in benches[0].items() if isinstance(v, float)]
    for k in keys:
        vals = [b[k] for b in benches if b[k] is not None]
        out[k] = float(min(vals)) if vals else None
    out["rounds"] = len(benches)
    out["statistic"] = "each figure from its fastest round; per_round holds them all"
    out["per_round"] = {k: [b[k] for b in benches] for k in keys}
    return out

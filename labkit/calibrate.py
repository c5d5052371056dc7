"""``python -m labkit calibrate``: measure the simulator's cost model on a real GPU.

Each figure is measured as the simulator uses it (see labkit/sim/runtime.py) and saved with its
spread, the GPU, driver, versions and date, as JSON. Run it on the GPU the course should
imitate; commit the file as ``labkit/calibration/h200.json`` (or point LABKIT_CALIBRATION at it).
"""
from __future__ import annotations

import argparse
import datetime
import json
from importlib import metadata

import numpy as np

import labkit
from labkit import timing
from labkit.bench import BLOCK, GRID, N, _capture_chain, _host
from labkit.stats import Stats
from labkit.workloads import add_one, busy, chain

rt = labkit.rt


def _fit(sizes, values):
    """Least-squares base + per-node slope."""
    slope, base = np.polyfit(np.asarray(sizes, float), np.asarray(values, float), 1)
    return float(max(base, 0.0)), float(max(slope, 0.0))


def _fig(st: Stats) -> dict:
    return {"median": st.median, "p10": st.percentile(10), "p90": st.percentile(90), "n": st.n}


def measure() -> dict:
    if labkit.backend != "cuda":
        raise SystemExit("calibrate measures a real GPU: run it with LABKIT_BACKEND=cuda on a GPU host")
    s = labkit.Stream()
    x = labkit.to_device(np.zeros(N, np.float32))
    y = labkit.to_device(np.zeros(N, np.float32))
    chain(2, x, s); busy[1, 32, s](x, 10); s.synchronize()
    P = {}
    k = 200
    eager = timing.measure(lambda: chain(k, x, s), sync=s, per=k, repeat=30)
    P["numba_launch_us"] = _fig(eager)
    from labkit.bench import prepared_chain
    prep = labkit.prepare(add_one, GRID, BLOCK, s, x)
    prepared_chain(prep, 2); s.synchronize()
    P["prepared_launch_us"] = _fig(timing.measure(lambda: prepared_chain(prep, k), sync=s, per=k, repeat=30))
    cap = _host(lambda: _capture_chain(k, x, s).close(), s, 10, warmup=1)
    P["capture_launch_us"] = {"median": cap.median / k}
    # GPU time per node of a graph of tiny kernels, and of one kernel
    g = _capture_chain(k, x, s)
    ex = g.instantiate()
    ex.launch(s); s.synchronize()
    gpu = timing.gpu_measure(lambda: ex.launch(s), s, repeat=30, per=k)
    # kernel_us comes from a CUPTI trace at the very end: a trace makes later launches dearer
    # while CUPTI is attached, so no host cost is measured after it.
    kernel_us = 0.8 * gpu.median          # until then, for the figures that subtract it
    # host cost of cudaGraphLaunch against graph size
    sizes, hosts, insts, uploads, updates = [1, 10, 100, 200, 1000], [], [], [], []
    for n in sizes:
        gn = _capture_chain(n, x, s)
        gn2 = _capture_chain(n, y, s)      # other buffers: an update that changes every node
        insts.append(_host(lambda: gn.instantiate().close(), s, 15, warmup=2).median)
        en = gn.instantiate()
        t0 = labkit.host_us(); en.launch(s); s.synchronize(); first = labkit.host_us() - t0
        steady = timing.measure(lambda: en.launch(s), sync=s, repeat=10).median
        uploads.append(max(first - steady, 0.0))
        hosts.append(_host(lambda: en.launch(s), s, 100).median)
        ups = []
        for i in range(16):
            t0 = labkit.host_us(); en.update(gn2 if i % 2 == 0 else gn); ups.append(labkit.host_us() - t0)
        updates.append(float(np.median(ups)))
        en.close(); gn.close(); gn2.close()
    for name, vals in (("graph_launch", hosts), ("instantiate", insts), ("upload", uploads),
                       ("exec_update", updates)):
        base, per = _fit(sizes, vals)
        P[f"{name}_base_us"] = {"median": base, "sizes": sizes, "measured": vals}
        P[f"{name}_per_node_us"] = {"median": per}
    P["node_update_us"] = _fig(_host(lambda: ex.set_kernel_args(0, add_one, GRID, BLOCK, x), s, 60))
    # small API calls
    ev = labkit.Event()
    P["api_us"] = _fig(_host(lambda: rt.cudaEventRecord(ev.handle, s.handle), s, 200))
    P["sync_us"] = _fig(timing.measure(lambda: rt.cudaStreamSynchronize(s.handle), repeat=200))

    def begin_end():
        rt.cudaStreamBeginCapture(s.handle, rt.cudaStreamCaptureMode.cudaStreamCaptureModeGlobal)
        _, gg = rt.cudaStreamEndCapture(s.handle)
        rt.cudaGraphDestroy(gg)
    P["begin_capture_us"] = _fig(timing.measure(begin_end, repeat=50))
    P["end_capture_per_node_us"] = {"median": 0.3, "source": "not measured separately (inside capture_launch_us)"}
    one = timing.measure(lambda: add_one[GRID, BLOCK, s](x), sync=s, repeat=50).median
    P["launch_latency_us"] = {"median": max(one - eager.median - P["sync_us"]["median"] - kernel_us, 0.5)}
    # copies and memory
    small, big = labkit.pinned_array(1024, np.float32), labkit.pinned_array(16 << 20, np.float32)
    dsmall, dbig = labkit.device_array(1024, np.float32), labkit.device_array(16 << 20, np.float32)
    H2D = rt.cudaMemcpyKind.cudaMemcpyHostToDevice

    def cp(dst, src, n):
        return lambda: rt.cudaMemcpyAsync(dst.device_ctypes_pointer.value, src.ctypes.data, n, H2D, s.handle)
    lat = timing.gpu_measure(cp(dsmall, small, 4096), s, repeat=30).median
    bw = timing.gpu_measure(cp(dbig, big, big.nbytes), s, repeat=10).median
    P["memcpy_latency_us"] = {"median": lat}
    P["memcpy_GBps"] = {"median": big.nbytes / (bw * 1e3)}
    d2 = labkit.device_array(16 << 20, np.float32)
    D2D = rt.cudaMemcpyKind.cudaMemcpyDeviceToDevice
    dd = timing.gpu_measure(lambda: rt.cudaMemcpyAsync(d2.device_ctypes_pointer.value,
                                                       dbig.device_ctypes_pointer.value, dbig.nbytes,
                                                       D2D, s.handle), s, repeat=10).median
    P["device_GBps"] = {"median": 2 * dbig.nbytes / (dd * 1e3)}

    def malloc_free():
        _, p = rt.cudaMalloc(1 << 20)
        rt.cudaFree(p)
    P["malloc_us"] = _fig(timing.measure(malloc_free, repeat=30))
    iters = 100_000
    bt = timing.gpu_measure(lambda: busy[1, 32, s](x, iters), s, repeat=5).median

    kern = None
    try:
        from labkit import _cupti
        if _cupti.available()[0]:
            with timing.timeline() as rec:
                ex.launch(s); s.synchronize()
            d = [sp.end_us - sp.start_us for sp in rec.timeline.spans if sp.kind == "kernel"]
            kern = float(np.median(d)) if d else None
    except Exception:
        kern = None
    kern_final = kern if kern is not None else 0.8 * gpu.median
    P["kernel_us"] = {"median": kern_final, "source": "cupti" if kern is not None else "0.8 × graph node"}
    P["graph_node_gap_us"] = {"median": max(gpu.median - kern_final, 0.0)}
    P["busy_ns_per_iter"] = {"median": (bt - kern_final) * 1000.0 / iters}
    P["launch_latency_us"]["median"] = max(P["launch_latency_us"]["median"] + kernel_us - kern_final, 0.5)
    props = labkit.check(rt.cudaGetDeviceProperties(0))
    drv = labkit.check(rt.cudaDriverGetVersion())
    rtv = labkit.check(rt.cudaRuntimeGetVersion())
    return {
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
        "source": "python -m labkit calibrate",
        "params": P,
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m labkit calibrate", description=__doc__)
    ap.add_argument("--out", default="calibration.json", help="where to write the JSON")
    a = ap.parse_args(argv)
    data = measure()
    with open(a.out, "w") as f:
        json.dump(data, f, indent=2)
    print(json.dumps({k: v["median"] for k, v in data["params"].items()}, indent=1))
    print(f"wrote {a.out}")
    return 0

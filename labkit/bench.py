"""``python -m labkit bench``: the chain benchmark (add one to 1024 float32, grid 4 × 256, K launches).

Prints a table, or with ``--json`` a last line holding one JSON object. On a GPU it also prints
CuPy and PyTorch reference rows when they are importable, and with ``--wrapper`` the host cost
of `GraphExec.launch` against a raw ``cudaGraphLaunch`` on the same executable.
"""
from __future__ import annotations

import argparse
import json

import numpy as np

import labkit
from labkit import timing
from labkit.stats import Stats
from labkit.workloads import add_one, chain

rt = labkit.rt
GRID, BLOCK, N = 4, 256, 1024


def _host(fn, stream, repeat, warmup=3) -> Stats:
    """Host µs of ``fn()`` alone; the stream is drained between calls, outside the timing."""
    for _ in range(warmup):
        fn()
        stream.synchronize()
    out = []
    for _ in range(repeat):
        t0 = labkit.host_us()
        fn()
        out.append(labkit.host_us() - t0)
        stream.synchronize()
    return Stats(out)


def _capture_chain(k, x, s):
    with labkit.capture(s) as cap:
        chain(k, x, s, GRID, BLOCK)
    return cap.graph


def prepared_chain(p, k: int):
    """The chain through one prepared launch: ``k`` calls, no numba dispatch."""
    for _ in range(k):
        p()


def measure_chain(k: int = 200, repeat: int = 20) -> dict:
    """The chain benchmark's figures (µs), as `python -m labkit bench --json` reports them."""
    s = labkit.Stream()
    x = labkit.to_device(np.zeros(N, np.float32))
    y = labkit.to_device(np.zeros(N, np.float32))
    chain(2, x, s)                                      # JIT and module load, before anything is timed
    s.synchronize()
    eager = timing.measure(lambda: chain(k, x, s), sync=s, per=k, repeat=repeat)
    prep = labkit.prepare(add_one, GRID, BLOCK, s, x)
    prepared = timing.measure(lambda: prepared_chain(prep, k), sync=s, per=k, repeat=repeat)
    capture = _host(lambda: _capture_chain(k, x, s).close(), s, max(5, repeat // 2), warmup=1)
    g = _capture_chain(k, x, s)
    inst = _host(lambda: g.instantiate().close(), s, max(5, repeat // 2), warmup=1)
    firsts = []
    for _ in range(max(5, repeat // 2)):
        ex = g.instantiate()
        t0 = labkit.host_us()
        ex.launch(s)
        s.synchronize()
        firsts.append(labkit.host_us() - t0)
        ex.close()
    ex = g.instantiate()
    graph = timing.measure(lambda: ex.launch(s), sync=s, per=k, repeat=repeat)
    launch = _host(lambda: ex.launch(s), s, repeat)
    g2 = _capture_chain(k, y, s)
    upd = []
    for i in range(max(5, repeat // 2)):
        t0 = labkit.host_us()
        r = ex.update(g2 if i % 2 == 0 else g)
        upd.append(labkit.host_us() - t0)
        assert r.ok, r
    node = _host(lambda: ex.set_kernel_args(0, add_one, GRID, BLOCK, y), s, repeat)
    saving = (eager.median - graph.median) * k
    out = {
        "backend": labkit.backend,
        "device": labkit.device_name(),
        "kernels": k,
        "eager_us_per_kernel": eager.median,
        "graph_us_per_kernel": graph.median,
        "prepared_us_per_kernel": prepared.median,
        "graph_launch_us": launch.median,
        "capture_us": capture.median,
        "instantiate_us": inst.median,
        "first_launch_us": float(np.median(firsts)),
        "exec_update_us": float(np.median(upd)),
        "node_update_us": node.median,
        "breakeven_replays": (capture.median + inst.median) / saving if saving > 0 else None,
    }
    for h in (ex, g, g2):
        h.close()
    s.close()
    return out


def wrapper_overhead(k: int = 200, repeat: int | None = None) -> dict:
    """Host µs per `GraphExec.launch` against raw ``rt.cudaGraphLaunch`` on the same executable."""
    repeat = repeat or (2000 if labkit.backend == "cuda" else 50)
    s = labkit.Stream()
    x = labkit.to_device(np.zeros(N, np.float32))
    chain(1, x, s)
    g = _capture_chain(k, x, s)
    ex = g.instantiate()
    ex.launch(s)
    s.synchronize()
    raw_h, stream_h = ex.handle, s.handle

    def timed(fn):
        out = []
        for i in range(repeat):
            t0 = labkit.host_us()
            fn()
            out.append(labkit.host_us() - t0)
            if i % 16 == 15:   # keep the queue short so launches never block on a full queue
                s.synchronize()
        s.synchronize()
        return Stats(out)

    rows = {}
    for rnd in range(3):        # interleave, so drift hits both alike
        rows.setdefault("raw", []).append(timed(lambda: rt.cudaGraphLaunch(raw_h, stream_h)).median)
        rows.setdefault("wrapper", []).append(timed(lambda: ex.launch(s)).median)
    raw, wrap = float(np.median(rows["raw"])), float(np.median(rows["wrapper"]))
    ex.close(); g.close(); s.close()
    return {"raw_launch_us": raw, "wrapper_launch_us": wrap, "ratio": wrap / raw}


def _reference_rows(k: int, repeat: int) -> list[tuple[str, float]]:
    rows = []
    try:
        import cupy as cp
        a = cp.zeros(N, cp.float32)
        st = cp.cuda.Stream(non_blocking=True)
        with st:
            def eager():
                for _ in range(k):
                    a.__iadd__(1)
            eager(); st.synchronize()
            t = timing.measure(lambda: (eager(), st.synchronize()), per=k, repeat=repeat)
            rows.append(("CuPy eager", t.median))
            st.begin_capture()
            eager()
            cg = st.end_capture()
            cg.launch(); st.synchronize()
            t = timing.measure(lambda: (cg.launch(), st.synchronize()), per=k, repeat=repeat)
            rows.append(("CuPy graph", t.median))
    except Exception as e:  # a reference row is optional: say why it is missing
        rows.append((f"CuPy unavailable ({type(e).__name__})", float("nan")))
    try:
        import torch
        a = torch.zeros(N, device="cuda")
        st = torch.cuda.Stream()
        with torch.cuda.stream(st):
            def teager():
                for _ in range(k):
                    a.add_(1)
            teager(); st.synchronize()
            t = timing.measure(lambda: (teager(), st.synchronize()), per=k, repeat=repeat)
            rows.append(("PyTorch eager", t.median))
            tg = torch.cuda.CUDAGraph()
            with torch.cuda.graph(tg, stream=st):
                teager()
            tg.replay(); torch.cuda.synchronize()
            t = timing.measure(lambda: (tg.replay(), torch.cuda.synchronize()), per=k, repeat=repeat)
            rows.append(("PyTorch CUDAGraph", t.median))
    except Exception as e:
        rows.append((f"PyTorch unavailable ({type(e).__name__})", float("nan")))
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m labkit bench", description=__doc__)
    ap.add_argument("--kernels", type=int, default=200, help="kernels in the chain (default 200)")
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--json", action="store_true", help="end with one line of JSON")
    ap.add_argument("--wrapper", action="store_true",
                    help="also compare GraphExec.launch with a raw cudaGraphLaunch")
    ap.add_argument("--decode", action="store_true", help="the decoder four ways (labkit/decode_bench.py)")
    ap.add_argument("--host-load", action="store_true", help="with --decode: repeat under a host load")
    a = ap.parse_args(argv)
    if a.decode:
        from labkit import decode_bench
        return decode_bench.main(a)
    if a.kernels < 1:
        ap.error("--kernels must be at least 1")
    res = measure_chain(a.kernels, a.repeat)
    print(f"chain benchmark: {a.kernels} × add_one over {N} float32 (grid {GRID} × {BLOCK}), "
          f"{labkit.provenance()}")
    for key, v in res.items():
        if isinstance(v, float):
            print(f"  {key:22s} {v:12.2f}")
    if labkit.backend == "cuda":
        for name, v in _reference_rows(a.kernels, a.repeat):
            print(f"  {name + ' µs/kernel':22s} {v:12.2f}")
    if a.wrapper:
        w = wrapper_overhead(a.kernels)
        print(f"  GraphExec.launch {w['wrapper_launch_us']:.2f} µs vs raw cudaGraphLaunch "
              f"{w['raw_launch_us']:.2f} µs: {w['ratio']:.3f}×")
    if a.json:
        print(json.dumps(res))
    return 0

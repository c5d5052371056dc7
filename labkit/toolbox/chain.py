"""The chain benchmark (add one to 1024 float32, grid 4 × 256, K launches): ``python -m labkit bench``.

`measure_chain` times eager launches, capture, instantiation and replay; on a GPU,
`reference_rows` adds CuPy and PyTorch rows when they are importable. `wrapper_overhead` measures
labkit's share beside the raw calls, in the same process, interleaved: `GraphExec.launch`
against a raw ``cudaGraphLaunch``, a `labkit._graph.KernelNode` update against a raw
``cuGraphExecKernelNodeSetParams`` with the same prebuilt block, and a ``@labkit.kernel``
launch against numba's bare ``k[grid, block, stream](x)``.

``node_update_us`` / ``raw_node_update_us``: one kernel node of the chain's executable pointed
at the other buffer, alternately, through labkit's handle / the raw driver call.
``explicit_build_us``: the chain built node by node (`labkit.explicit.chain_graph`).
"""
from __future__ import annotations

import numpy as np

import labkit
from labkit import explicit, timing
from labkit.backends import bare_launch
from labkit.measure.stats import Stats
from labkit.course.workloads import add_one, chain, course_size

rt = labkit.rt
GRID, BLOCK, N = 4, 256, 1024


def host_stats(fn, stream, repeat, warmup=3) -> Stats:
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


def capture_chain(k, x, s):
    with labkit.capture(s) as cap:
        chain(k, x, s, GRID, BLOCK)
    return cap.graph


def interleaved(fns: dict, repeat: int, rounds: int = 3, drain=None) -> dict:
    """Host µs per call of each of ``fns`` (name -> fn), measured in ``rounds`` alternating
    rounds so that drift hits them alike: the median over rounds of each round's median.
    ``drain``: a stream synchronized every 16 calls (outside the timing), so queued work never
    makes a call wait."""
    got = {name: [] for name in fns}
    for r in range(rounds):
        order = list(fns.items()) if r % 2 == 0 else list(fns.items())[::-1]
        for name, fn in order:
            fn()                                    # warm: first-call costs are not the figure
            out = []
            for i in range(repeat):
                t0 = labkit.host_us()
                fn()
                out.append(labkit.host_us() - t0)
                if drain is not None and i % 16 == 15:
                    drain.synchronize()
            if drain is not None:
                drain.synchronize()
            got[name].append(Stats(out).median)
    return {name: float(np.median(v)) for name, v in got.items()}


def node_updates(ex, a, b, repeat: int, rounds: int = 3) -> dict:
    """Kernel node 0 of ``ex`` pointed at ``a`` and ``b`` alternately: labkit's handle and the raw
    driver call with the same prebuilt blocks, interleaved. ``{"labkit": µs, "raw": µs}``."""
    h = ex.kernel_node(0, add_one, GRID, BLOCK, b)
    h(a); h(b)                                      # both blocks built, before any timing
    pa, pb = h.params.with_args(a), h.params.with_args(b)
    fa, xa = pa.native.raw_exec_set(ex.handle, h.node)
    fb, xb = pb.native.raw_exec_set(ex.handle, h.node)
    flip = [0, 0]

    def via_labkit():
        flip[0] ^= 1
        h(a) if flip[0] else h(b)

    def raw():
        flip[1] ^= 1
        fa(*xa) if flip[1] else fb(*xb)
    t = interleaved({"labkit": via_labkit, "raw": raw}, repeat, rounds)
    h(a)                                            # leave node 0 on the buffer it was captured with
    return t


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
    capture = host_stats(lambda: capture_chain(k, x, s).close(), s, max(5, repeat // 2), warmup=1)
    g = capture_chain(k, x, s)
    inst = host_stats(lambda: g.instantiate().close(), s, max(5, repeat // 2), warmup=1)
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
    launch = host_stats(lambda: ex.launch(s), s, repeat)
    g2 = capture_chain(k, y, s)
    upd = []
    for i in range(max(5, repeat // 2)):
        t0 = labkit.host_us()
        r = ex.update(g2 if i % 2 == 0 else g)
        upd.append(labkit.host_us() - t0)
        assert r.ok, r
    node = node_updates(ex, x, y, repeat=max(repeat, 20) * 5)
    build = host_stats(lambda: explicit.chain_graph(add_one, k, GRID, BLOCK, x).close(), s,
                  max(5, repeat // 2), warmup=1)
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
        "node_update_us": node["labkit"],
        "raw_node_update_us": node["raw"],
        "explicit_build_us": build.median,
        "breakeven_replays": (capture.median + inst.median) / saving if saving > 0 else None,
    }
    for h in (ex, g, g2):
        h.close()
    s.close()
    return out


def wrapper_overhead(k: int = 200, repeat: int | None = None) -> dict:
    """labkit's share beside the raw calls, in one process, interleaved (host µs per call).

    ``raw_launch_us`` / ``wrapper_launch_us``: ``rt.cudaGraphLaunch`` / `GraphExec.launch` on the
    same executable. ``raw_node_update_us`` / ``node_update_us``: see `node_updates`.
    ``bare_kernel_launch_us`` / ``kernel_launch_us``: numba's ``k[grid, block, stream](x)`` /
    the same launch through ``@labkit.kernel``. Each ``*_ratio`` is labkit's over the raw one.
    """
    repeat = repeat or course_size(cuda=2000, sim=50)
    s = labkit.Stream()
    x = labkit.to_device(np.zeros(N, np.float32))
    y = labkit.to_device(np.zeros(N, np.float32))
    chain(1, x, s)
    g = capture_chain(k, x, s)
    ex = g.instantiate()
    ex.launch(s)
    s.synchronize()
    raw_h, stream_h = ex.handle, s.handle
    launch = interleaved({"raw": lambda: rt.cudaGraphLaunch(raw_h, stream_h),
                          "wrapper": lambda: ex.launch(s)}, repeat, drain=s)
    node = node_updates(ex, x, y, repeat)
    bare = bare_launch(add_one, GRID, BLOCK, int(stream_h))
    eager = interleaved({"bare": lambda: bare(x), "labkit": lambda: add_one[GRID, BLOCK, s](x)},
                        max(repeat // 4, 20), drain=s)
    ex.close(); g.close(); s.close()
    return {"raw_launch_us": launch["raw"], "wrapper_launch_us": launch["wrapper"],
            "ratio": launch["wrapper"] / launch["raw"],
            "raw_node_update_us": node["raw"], "node_update_us": node["labkit"],
            "node_update_ratio": node["labkit"] / node["raw"],
            "bare_kernel_launch_us": eager["bare"], "kernel_launch_us": eager["labkit"],
            "kernel_launch_ratio": eager["labkit"] / eager["bare"]}


def reference_rows(k: int, repeat: int) -> list[tuple[str, float]]:
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

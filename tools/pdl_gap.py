"""How much a programmatic edge (PDL) saves between two kernels, on this backend.

    python tools/pdl_gap.py [--kernels K] [--repeat R] [--busy ITERS] [--json]

Builds two graphs of the same chain of K kernels, one kernel per buffer: one joined by plain
edges, one by programmatic edges (``cudaGraphKernelNodePortProgrammatic``, CUDA 12.3+). Both are
launched alternately, R times each after a warm-up, and timed with events around each launch.
Prints the medians and p10/p90 of each and the saving per edge:
(plain - programmatic) / (K - 1). On a GPU this is measured; on the simulator it is the model's
``pdl_overlap_us`` plus its rounding, which is what the measurement calibrates.

numba kernels neither trigger early nor wait on their predecessor (they have no
``griddepcontrol`` call), so the dependent may start once the primary's blocks have all started;
the chain's kernels write separate buffers so the early start races with nothing.
``--busy ITERS`` runs the course's busy kernel (longer kernels) instead of add_one.
"""
from __future__ import annotations

import argparse
import json
import statistics

import labkit  # noqa: F401  (before numba.cuda)
import numpy as np
from labkit import rt
from labkit.course.workloads import add_one, busy

E = rt.cudaError_t
GLOBAL = rt.cudaStreamCaptureMode.cudaStreamCaptureModeGlobal


def ok(result):
    if result[0] != E.cudaSuccess:
        raise RuntimeError(f"CUDA call failed: {result[0]!r}")
    return result[1] if len(result) == 2 else result[1:]


def programmatic_edge():
    d = rt.cudaGraphEdgeData()
    d.from_port = rt.cudaGraphKernelNodePortProgrammatic
    d.type = rt.cudaGraphDependencyType.cudaGraphDependencyTypeProgrammatic
    return d


def chain(stream, bufs, launch, edge):
    """A graph of one kernel per buffer, each node joined to the last by ``edge`` (None: plain)."""
    g = ok(rt.cudaGraphCreate(0))
    nodes = []
    for b in bufs:
        ok(rt.cudaStreamBeginCaptureToGraph(stream, g, None, None, 0, GLOBAL))
        launch(b, stream)
        info = rt.cudaStreamGetCaptureInfo(stream)
        nodes.append(info[4][0])
        ok(rt.cudaStreamEndCapture(stream))
    for a, b in zip(nodes, nodes[1:]):
        ok(rt.cudaGraphAddDependencies(g, [a], [b], None if edge is None else [edge], 1))
    return g, ok(rt.cudaGraphInstantiate(g, 0))


def timed_ms(stream, ge, start, end):
    ok(rt.cudaEventRecord(start, stream))
    ok(rt.cudaGraphLaunch(ge, stream))
    ok(rt.cudaEventRecord(end, stream))
    ok(rt.cudaEventSynchronize(end))
    return ok(rt.cudaEventElapsedTime(start, end))


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernels", type=int, default=32)
    ap.add_argument("--repeat", type=int, default=200)
    ap.add_argument("--busy", type=int, default=0, metavar="ITERS")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    if args.kernels < 2 or args.repeat < 1:
        ap.error("--kernels must be 2 or more and --repeat 1 or more")

    stream = ok(rt.cudaStreamCreateWithFlags(rt.cudaStreamNonBlocking))
    bufs = [labkit.to_device(np.zeros(1024, np.float32)) for _ in range(args.kernels)]
    if args.busy:
        def launch(b, s):
            busy[1, 32, s](b, args.busy)
    else:
        def launch(b, s):
            add_one[4, 256, s](b)
    _, plain = chain(stream, bufs, launch, None)
    _, pdl = chain(stream, bufs, launch, programmatic_edge())
    start, end = ok(rt.cudaEventCreate()), ok(rt.cudaEventCreate())
    for _ in range(10):                                  # warm-up: upload, clocks
        timed_ms(stream, plain, start, end)
        timed_ms(stream, pdl, start, end)
    t_plain, t_pdl = [], []
    for i in range(args.repeat):                         # alternate which goes first
        order = ((plain, t_plain), (pdl, t_pdl)) if i % 2 else ((pdl, t_pdl), (plain, t_plain))
        for ge, out in order:
            out.append(timed_ms(stream, ge, start, end) * 1000.0)
    med_plain, med_pdl = statistics.median(t_plain), statistics.median(t_pdl)
    saving = (med_plain - med_pdl) / (args.kernels - 1)
    row = {"backend": str(labkit.backend), "kernels": args.kernels, "repeat": args.repeat,
           "kernel": f"busy({args.busy})" if args.busy else "add_one 4x256",
           "plain_us": {"p10": pct(t_plain, .1), "p50": med_plain, "p90": pct(t_plain, .9)},
           "programmatic_us": {"p10": pct(t_pdl, .1), "p50": med_pdl, "p90": pct(t_pdl, .9)},
           "saving_per_edge_us": saving}
    print(f"backend {row['backend']}: {args.kernels} x {row['kernel']}, {args.repeat} launches each")
    for name in ("plain_us", "programmatic_us"):
        q = row[name]
        print(f"  {name[:-3]:>13}: p50 {q['p50']:9.2f} us  (p10 {q['p10']:.2f}, p90 {q['p90']:.2f})")
    print(f"  saving per edge: {saving:.3f} us")
    if args.json:
        print(json.dumps(row))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

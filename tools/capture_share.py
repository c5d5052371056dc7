"""labkit's share of a one-kernel capture, beside the bare calls, in one process.

    python tools/capture_share.py [--repeat R] [--rounds N] [--json]

Each round times R captures of one ``add_one`` launch five ways, interleaved, with
``time.perf_counter_ns`` around each (host time; nothing waits for the GPU):

- ``bare``: ``cudaStreamBeginCapture`` → numba's own launch (the kernel's dispatcher) →
  ``cudaStreamEndCapture`` → ``cudaGraphDestroy``;
- ``bare+labkit_launch``: the same with labkit's launch (``add_one[grid, block, s](x)``);
- ``bare+frees_held``: bare inside numba's ``defer_cleanup`` (what labkit's capture adds first);
- ``labkit``: ``with labkit.capture(s): add_one[grid, block, s](x)``, then the graph dropped;
- ``labkit_no_launch``: an empty ``labkit.capture`` (its fixed cost).

Prints each way's median over the rounds' medians and labkit's share (labkit - bare), so the
difference can be placed: launch, frees_held, the rest of the context manager.
"""
from __future__ import annotations

import argparse
import gc
import json
import statistics
import time

import labkit  # noqa: F401  (before numba.cuda)
import numpy as np
from labkit import rt
from labkit.backend import frees_held
from labkit.course.workloads import add_one

GLOBAL = rt.cudaStreamCaptureMode.cudaStreamCaptureModeGlobal


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    if args.repeat < 1 or args.rounds < 1:
        ap.error("--repeat and --rounds must be 1 or more")
    s = labkit.Stream()
    h = labkit.stream_handle(s)
    x = labkit.to_device(np.zeros(1024, np.float32))
    # numba's own launch; the simulator has none of its own (its kernels run through labkit),
    # so there "bare" launches through labkit too and only the capture's share is compared.
    numba_launch = (add_one.dispatcher[4, 256, h] if labkit.backend == "cuda"
                    else add_one[4, 256, s])

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
        del cap

    def labkit_no_launch():
        with labkit.capture(s) as cap:
            pass
        del cap

    ways = {"bare": bare, "bare+labkit_launch": bare_labkit_launch,
            "bare+frees_held": bare_frees_held, "labkit": with_labkit,
            "labkit_no_launch": labkit_no_launch}
    for f in ways.values():                       # warm-up: JIT, first capture
        for _ in range(20):
            f()
    labkit.synchronize()
    per_round = {k: [] for k in ways}
    gc.disable()
    try:
        for r in range(args.rounds):
            names = list(ways) if r % 2 == 0 else list(reversed(ways))
            for name in names:
                f, ts = ways[name], []
                for _ in range(args.repeat):
                    t0 = time.perf_counter_ns()
                    f()
                    ts.append((time.perf_counter_ns() - t0) / 1000.0)
                per_round[name].append(statistics.median(ts))
            gc.collect()
    finally:
        gc.enable()
    med = {k: statistics.median(v) for k, v in per_round.items()}
    print(f"backend {labkit.backend}: one-kernel capture, {args.rounds} rounds x {args.repeat}")
    for k, v in med.items():
        rounds = ", ".join(f"{t:.1f}" for t in per_round[k])
        print(f"  {k:>19}: {v:7.2f} us   (rounds: {rounds})")
    print(f"  labkit's share (labkit - bare): {med['labkit'] - med['bare']:.2f} us")
    if args.json:
        print(json.dumps({"backend": str(labkit.backend), "median_us": med,
                          "per_round_us": per_round}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

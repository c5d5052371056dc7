"""Small wrong programs for the debugging tools that notebook 11 names (GPU only).

    compute-sanitizer --tool memcheck  python sanitizer/wrong_programs.py oob    [--graph]
    compute-sanitizer --tool racecheck python sanitizer/wrong_programs.py shared [--graph]
    CUDA_LAUNCH_BLOCKING=1             python sanitizer/wrong_programs.py oob    [--graph]

``oob``: a kernel writes one block past the end of its 1,024-element array, between two correct
kernels. ``shared``: a block's threads write one shared-memory slot and read it back without
``cuda.syncthreads()``. ``--graph`` captures the three kernels and launches the graph instead of
launching them eagerly. Each mode prints which call returned the error first, so a run with and
without ``CUDA_LAUNCH_BLOCKING`` shows where the error surfaces.
"""
from __future__ import annotations

import argparse
import sys

import numpy as np
from cuda.bindings import runtime as rt
from numba import cuda, float32


@cuda.jit
def add_one(x):
    i = cuda.grid(1)
    if i < x.size:
        x[i] += 1.0


@cuda.jit
def write_past_end(x):
    i = cuda.grid(1)
    x[i + x.size] = 1.0              # every thread writes outside the array


@cuda.jit
def shared_race(x):
    s = cuda.shared.array(1, float32)
    s[0] = cuda.threadIdx.x          # every thread writes the same slot ...
    x[cuda.grid(1)] = s[0]           # ... and reads it back, with no syncthreads between


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("mode", choices=["oob", "shared"])
    ap.add_argument("--graph", action="store_true")
    args = ap.parse_args(argv)
    x = cuda.to_device(np.zeros(1024, np.float32))
    err, s = rt.cudaStreamCreateWithFlags(rt.cudaStreamNonBlocking)
    bad = write_past_end if args.mode == "oob" else shared_race
    cs = cuda.external_stream(int(s))

    def three():
        add_one[4, 256, cs](x)
        bad[4, 256, cs](x)
        add_one[4, 256, cs](x)

    if args.graph:
        # compile first (numba's JIT must not run inside the capture), on the first quarter
        # of a larger array: the same type, and the write "past the end" stays inside it
        big = cuda.to_device(np.zeros(4096, np.float32))
        for k in (add_one, bad):
            k[4, 256, cs](big[:1024])
        rt.cudaStreamSynchronize(s)
        print("warm-up (in bounds):", rt.cudaGetLastError()[0].name)
        err, = rt.cudaStreamBeginCapture(s, rt.cudaStreamCaptureMode.cudaStreamCaptureModeGlobal)
        three()
        err, g = rt.cudaStreamEndCapture(s)
        err, ge = rt.cudaGraphInstantiate(g, 0)
        print("captured and instantiated:", err.name)
        err, = rt.cudaGraphLaunch(ge, s)
        print("cudaGraphLaunch returned:", err.name)
    else:
        for i, k in enumerate((add_one, bad, add_one)):
            k[4, 256, cs](x)
            print(f"launch {i + 1} ({k.py_func.__name__}); cudaGetLastError:",
                  rt.cudaGetLastError()[0].name)
    err, = rt.cudaStreamSynchronize(s)
    print("cudaStreamSynchronize returned:", err.name)
    print("and the next call (cudaMalloc):", rt.cudaMalloc(16)[0].name)
    return 0 if err == rt.cudaError_t.cudaSuccess else 1


if __name__ == "__main__":
    sys.exit(main())

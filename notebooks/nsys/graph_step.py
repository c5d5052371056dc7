"""A small graph to profile with Nsight Systems: capture four kernels once, replay them.

    python graph_step.py [REPLAYS]

Run it under ``nsys`` with ``profile.sh`` beside it (notebook 10, section 7). It captures four
kernels (x += 1, x *= 2, twice) on a labkit stream, instantiates the graph, uploads it and
replays it REPLAYS times (default 20), then checks the result against numpy. labkit wraps each
phase in an NVTX range of the domain ``labkit`` (capture, instantiate, upload, launch), so the
report shows those names on the Python thread's row above the CUDA calls inside them; with
``--cuda-graph-trace=node`` each replay's four kernels appear on the stream's row.

It needs a GPU: on the simulator there is no CUDA for nsys to trace, and it says so.
"""
import sys

import labkit  # before numba.cuda: labkit picks the backend
import numpy as np
from numba import cuda


@labkit.kernel
@cuda.jit
def add_one(x):
    i = cuda.grid(1)
    if i < x.size:
        x[i] += 1.0


@labkit.kernel
@cuda.jit
def double(x):
    i = cuda.grid(1)
    if i < x.size:
        x[i] *= 2.0


def main(replays: int) -> None:
    if labkit.backend != "cuda":
        sys.exit(f"graph_step.py: labkit chose the {labkit.backend!r} backend, which runs no "
                 "CUDA for nsys to trace; run it on a machine with an NVIDIA GPU "
                 "(LABKIT_BACKEND=cuda python graph_step.py says why labkit cannot use it)")
    n, block = 1 << 16, 256
    grid = n // block
    stream = labkit.Stream()
    x = labkit.to_device(np.zeros(n, np.float32))
    add_one[grid, block, stream](x)        # compile both kernels before the capture
    double[grid, block, stream](x)
    stream.synchronize()
    x.copy_to_device(np.zeros(n, np.float32))
    with labkit.capture(stream) as cap:    # NVTX range "capture"
        for _ in range(2):
            add_one[grid, block, stream](x)
            double[grid, block, stream](x)
    graph = cap.graph.instantiate(upload_stream=stream)   # ranges "instantiate", "upload"
    for _ in range(replays):
        graph.launch(stream)               # range "launch", one cudaGraphLaunch each
    stream.synchronize()
    want = np.zeros(n, np.float32)
    for _ in range(replays):
        want = ((want + 1) * 2 + 1) * 2
    got = x.copy_to_host()
    assert np.array_equal(got, want), "the replays computed something else than numpy"
    print(f"graph_step.py: {replays} replays of a 4-kernel graph on {labkit.device_name()}, "
          f"result checked against numpy")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 20)

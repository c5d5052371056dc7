"""timing.graph_phases times the steady cudaGraphLaunch call alone beside launch + sync (a
"steady launch" that waits for the GPU reads as if the launch call grew)."""
from __future__ import annotations

import numpy as np

import labkit
from labkit import timing
from labkit.course import workloads


def test_the_launch_call_alone_excludes_the_wait_for_the_gpu():
    with labkit.Stream() as s:
        x = labkit.to_device(np.zeros(1024, np.float32))
        ph = timing.graph_phases(lambda st: workloads.chain(100, x, st), s, repeat=1, steady=3)
    assert len(ph["launch_call"].samples) == len(ph["steady_launch"].samples) == 3
    assert ph["launch_call"].median < ph["steady_launch"].median

"""Launches of one executable graph run one after another, even on different streams.

CUDA's cudaGraphLaunch: "Only one instance of graphExec may be executing at a time. Each launch
is ordered behind both any previous work in stream and any previous launches of graphExec. To
execute a graph concurrently, it must be instantiated multiple times." Notebook 03 shows it.
"""
import numpy as np
import pytest

import labkit
from labkit import timing
from labkit.course import workloads as w

pytestmark = pytest.mark.skipif(labkit.backend != "sim", reason="reads the simulator's model timeline")


def _busy_graph(stream):
    x = labkit.to_device(np.zeros(32, np.float32))
    with labkit.capture(stream) as cap:
        w.busy[1, 32, stream](x, 2000)
    return cap.graph


def _kernel_spans(launch_pairs, *streams):
    with timing.timeline() as rec:
        for ex, st in launch_pairs:
            ex.launch(st)
        for st in streams:
            st.synchronize()
    return sorted((sp for sp in rec.timeline.spans if sp.kind == "kernel"), key=lambda sp: sp.start_us)


def test_one_executable_launched_on_two_streams_runs_its_launches_one_after_another():
    s1, s2 = labkit.Stream(), labkit.Stream()
    g = _busy_graph(s1)
    ex = g.instantiate(upload_stream=s1)
    s1.synchronize()
    first, second = _kernel_spans([(ex, s1), (ex, s2)], s1, s2)
    assert first.row != second.row
    assert second.start_us >= first.end_us


def test_two_executables_of_one_graph_on_two_streams_overlap():
    s1, s2 = labkit.Stream(), labkit.Stream()
    g = _busy_graph(s1)
    ex1, ex2 = g.instantiate(upload_stream=s1), g.instantiate(upload_stream=s2)
    s1.synchronize(); s2.synchronize()
    first, second = _kernel_spans([(ex1, s1), (ex2, s2)], s1, s2)
    assert second.start_us < first.end_us

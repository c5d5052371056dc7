"""Checks for notebook 07's exercise: one graph that decodes several tokens per launch."""
from __future__ import annotations

import numpy as np

from .. import decoder as dec
from ..._errors import check
from ..._handles import stream_handle
from ...backend import rt

__all__ = ["check_multi_step"]


def check_multi_step(build, stream, k: int = 4, launches: int = 3, seed: int = 11) -> dict:
    """Check ``build(model, stream, k)``: it must return a `labkit.GraphExec` that decodes
    ``k`` tokens per launch.

    A fresh model is made; the executable is launched ``launches`` times and the tokens must
    equal the numpy reference's ``k * launches`` tokens; the graph must hold ``k`` steps'
    kernels. Returns the tokens and the node count.
    """
    m = dec.make_model(seed=seed)
    ex = build(m, stream, k)
    if not hasattr(ex, "launch") or not hasattr(ex, "graph"):
        raise ValueError(f"build(...) must return a labkit.GraphExec (from "
                         f"graph.instantiate()), got {type(ex).__name__}")
    want_nodes = k * m.cfg.kernels_per_token
    got_nodes = len(ex.graph.kernel_nodes())
    if got_nodes != want_nodes:
        raise AssertionError(
            f"the graph has {got_nodes} kernel nodes; {k} decode steps are {want_nodes} "
            f"({m.cfg.kernels_per_token} per step). Call labkit.course.decoder.step {k} times inside "
            "one capture")
    dec._reset(m, 7, stream)
    for _ in range(launches):
        ex.launch(stream)
    check(rt.cudaStreamSynchronize(stream_handle(stream)), "synchronize")
    n = k * launches
    got = m.state["history"].copy_to_host()[:n]
    want = dec.reference_generate(m, 7, n)
    if not np.array_equal(got, want):
        first = int(np.argmax(got != want))
        raise AssertionError(
            f"the tokens differ from the numpy reference from token {first} on "
            f"(got {got[first]}, expected {want[first]}): does each captured step read the "
            "position and token from device memory, so that the replays continue where the "
            "last one stopped?")
    return {"tokens": got, "kernel_nodes": got_nodes}

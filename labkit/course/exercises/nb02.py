"""Check for notebook 02's exercise: capture the whole request, copy to the host included."""
from __future__ import annotations

import numpy as np
import labkit
from labkit.course.kernels_extra import request_reference

__all__ = ["check_request_graph"]


def check_request_graph(graph, x_host, out_host, stream) -> None:
    """Pass if ``graph`` is preprocess → infer_step → copy to ``out_host``, and computes it.

    Parameters
    ----------
    graph : labkit.Graph
        What your capture produced (``cap.graph``).
    x_host : numpy array
        The input that the graph's input buffer holds.
    out_host : pinned numpy array
        The host buffer the graph should copy the result into.
    stream : labkit.Stream
        A stream to launch on.
    """
    if not isinstance(graph, labkit.Graph):
        raise ValueError(f"pass the captured graph (cap.graph), got {type(graph).__name__}")
    kinds = graph.node_kinds()
    if kinds.count("memcpy") == 0:
        raise AssertionError(f"the graph has nodes {kinds} but no memcpy: put the "
                             "cudaMemcpyAsync of the output into the pinned host buffer inside the "
                             "capture, so "
                             "one graph launch returns the answer")
    if kinds != ["kernel", "kernel", "memcpy"]:
        raise AssertionError(f"expected nodes ['kernel', 'kernel', 'memcpy'] (preprocess, "
                             f"infer_step, the copy), got {kinds}")
    if sorted(graph.edges) != [(0, 1), (1, 2)]:
        raise AssertionError(f"expected a chain 0 → 1 → 2, got edges {graph.edges}: capture all "
                             "three on the one stream, in order")
    out_host[...] = np.nan
    with graph.instantiate() as ex:
        ex.launch(stream)
        labkit.check(labkit.rt.cudaStreamSynchronize(labkit.stream_handle(stream)))
    want = request_reference(np.asarray(x_host))
    if not np.allclose(out_host, want):
        raise AssertionError("the graph ran but the pinned host buffer does not hold infer_step(preprocess(x)): "
                             "check the copy inside the capture: its destination (the pinned "
                             "buffer you pass to this check), its source (the output buffer "
                             "infer_step wrote) and its size (the whole buffer, in bytes)")
    print(f"correct: nodes {kinds}, and one launch fills out_host with the request's answer")

"""Check for notebook 02's exercise: diagnose a failing capture by its error code, then fix it.

The starting code captures one request (``preprocess`` → ``infer_step`` → the copy of the answer
into a pinned host buffer) and fails. The learner writes down the code the failure raised and
repairs the capture so that one graph launch returns the answer of whatever request is in the
input buffer at launch time.
"""
from __future__ import annotations

import numpy as np
import labkit
from labkit.course.kernels_extra import request_reference

__all__ = ["check_request_capture"]

_REFUSED = 900          # cudaErrorStreamCaptureUnsupported: what the starting code raises


def _diagnosis(first_error) -> int | None:
    """The learner's ``first_error`` as a code: an int, an int-like enum, or an error's name."""
    if first_error is None or first_error is Ellipsis:
        return None
    if isinstance(first_error, str):
        try:
            return int(getattr(labkit.rt.cudaError_t, first_error.strip()))
        except AttributeError:
            raise ValueError(f"first_error = {first_error!r} is not the name of a CUDA error; "
                             "write the code (the number in parentheses) or the error's name "
                             "(cudaError...)") from None
    try:
        return int(first_error)
    except (TypeError, ValueError):
        raise ValueError(f"first_error must be the error code (a number) or its name, got "
                         f"{type(first_error).__name__}") from None


def check_request_capture(capture_request, first_error, inp, out_host) -> None:
    """Pass if ``first_error`` is the starting code's error and ``capture_request`` is fixed.

    Parameters
    ----------
    capture_request : callable
        ``capture_request(stream) -> labkit.Graph``: your repaired capture of one request.
    first_error : int or str
        The code (or name) of the error the starting code raised, as it printed it.
    inp : device array
        The request's input buffer, which the graph must read at each launch.
    out_host : pinned numpy array
        The host buffer the graph must copy the answer into.
    """
    code = _diagnosis(first_error)
    if code is None:
        raise AssertionError("first_error is not set yet: run the starting code, read the error "
                             "it prints, and write its code (the number in parentheses)")
    if code == 901:
        raise AssertionError("901 says the capture had already been invalidated: it is the "
                             "error a call reports after an earlier refusal. Which code did the "
                             "first failing call print?")
    if code != _REFUSED:
        raise AssertionError(f"the starting code does not raise {code}: run it again and copy the "
                             "code its error prints, in parentheses after the error's name")
    if not callable(capture_request):
        raise ValueError("pass your function capture_request itself, not what it returned")

    stream = labkit.Stream()
    try:
        graph = capture_request(stream)
    except labkit.CudaError as e:
        raise AssertionError(f"your capture still fails: {e.name} ({e.code}) from "
                             f"{e.context or 'a CUDA call'}. Its hint names the cause; one "
                             "capture can hold more than one mistake, so run it again after "
                             "each fix") from None
    if not isinstance(graph, labkit.Graph):
        raise ValueError(f"capture_request must return the captured graph (cap.graph), got "
                         f"{type(graph).__name__}")
    kinds = graph.node_kinds()
    if "memcpy" not in kinds:
        raise AssertionError(f"the graph has nodes {kinds} but no copy: the answer must reach "
                             "the pinned host buffer inside the capture, so one launch returns it")
    if kinds != ["kernel", "kernel", "memcpy"]:
        raise AssertionError(f"the graph has nodes {kinds}; one request is two kernels and one "
                             "copy out. Anything the capture records runs again at every launch: "
                             "prepare the input before the capture")
    if sorted(graph.edges) != [(0, 1), (1, 2)]:
        raise AssertionError(f"expected a chain 0 → 1 → 2, got edges {graph.edges}: capture all "
                             "three on the one stream, in order")

    # A new request in the input buffer: the graph must read it at launch, not at capture.
    keep = inp.copy_to_host()
    rng = np.random.default_rng()
    fresh = rng.uniform(-1, 1, keep.shape).astype(keep.dtype)
    try:
        inp.copy_to_device(fresh)
        out_host[...] = np.nan
        with graph.instantiate() as ex:
            ex.launch(stream)
            stream.synchronize()
        got = np.array(out_host, copy=True)
    finally:
        inp.copy_to_device(keep)
        graph.close()
    if np.allclose(got, request_reference(keep)) and not np.allclose(got, request_reference(fresh)):
        raise AssertionError("a launch returned the answer for the request that was in the input "
                             "when you captured, not for the one in the input buffer now: the "
                             "graph reads another buffer than inp (a copy made for the capture)")
    if not np.allclose(got, request_reference(fresh)):
        raise AssertionError("the graph ran, but the pinned host buffer does not hold "
                             "infer_step(preprocess(x)) for the request in inp: check what the "
                             "kernels read and write, and the copy's source, destination and size")
    print(f"correct: {labkit.CudaError(code).name} ({code}) diagnosed, and the repaired capture "
          f"({kinds}) answers whatever request is in inp when it is launched")

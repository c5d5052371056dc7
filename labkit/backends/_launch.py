"""The eager launch that both backends share: written once, around each backend's own submit.

Around the backend's launch of a kernel (numba's dispatch on a GPU, the modelled one on the
simulator), every eager launch through labkit

- is a span of the timeline's CPU row while one is recording (numba's whole dispatch included);
- is refused when the labkit.Stream it was made for has been closed (a closed stream's handle
  may belong to another stream by now);
- keeps its arguments alive with the graph while a capture is open: the graph refers to
  buffers it does not own.
"""
from __future__ import annotations

from typing import Callable

from .. import _open_captures, _host_calls
from .._handles import stream_handle

__all__ = ["HOST_ARRAY", "eager_launch"]

# what a launch error adds when an argument is a numpy array, on both backends
HOST_ARRAY = " on a host array (numba would allocate a temporary device buffer for it)"


def eager_launch(k, owner, submit: Callable[..., None], grid=None, block=None) -> Callable[..., None]:
    """``launch(*args)``: ``submit(*args)`` (the backend's own launch of kernel ``k``, which
    raises a CudaError on failure), with the span, the closed-stream check and the keep-alive.

    ``owner``: the labkit.Stream the launch goes to, or None (a raw handle or a builder).
    ``grid``, ``block``: the launch's, for a capture that records launches (the eager switch,
    `labkit._eager`) instead of capturing them."""
    label = f"launch {k.name}"

    def launch(*args):
        rec = _host_calls.active    # a timeline is open: numba's whole dispatch is the span
        t0 = rec.now() if rec is not None else 0
        if owner is not None and owner.handle is None:
            stream_handle(owner)                   # raises: the stream was closed
        if _open_captures.open_count and _open_captures.record(k, grid, block, args):
            return                                 # the eager switch: recorded, not launched
        submit(*args)
        if rec is not None:
            rec.add(label, "launch", t0)
        if _open_captures.open_count:   # the graph refers to buffers it does not own: keep them
            _open_captures.keep(args, k)
    return launch

"""labkit: the helper package of CUDA Graphs Lab.

``import labkit`` chooses the backend once (``LABKIT_BACKEND=auto|cuda|sim``, see
`labkit.backend`): "cuda" runs on a real GPU through cuda-python and numba-cuda; "sim" runs
everything on the CPU simulator, whose clock is calibrated on a real GPU. ``labkit.rt`` is the
runtime API of the chosen backend, with cuda-python's names and ``(err, *values)`` results, so
raw-API code runs unchanged on both.
"""
from . import backend as _be   # the package; the attribute labkit.backend is its name
from ._errors import CudaError, check, hint_for
from ._handles import stream_handle
from ._kernel import kernel, Kernel, to_device, device_array, pinned_array
from ._prepared import prepare, PreparedLaunch, LaunchParams, launch_params
from ._streams import Stream, Event, synchronize
from ._graph import Graph, GraphExec, KernelNode, UpdateResult
from ._capture import capture, fork
from .cache import GraphCache

backend = _be.name
backend_reason = _be.reason
backend_error = _be.error
rt = _be.rt
host_us = _be.host_us
cpu_us = _be.cpu_us

__all__ = [
    "backend", "backend_error", "backend_reason", "rt", "check", "CudaError", "hint_for",
    "kernel", "Kernel", "to_device", "device_array", "pinned_array", "stream_handle",
    "Stream", "Event", "synchronize", "capture", "fork", "Graph", "GraphExec", "KernelNode",
    "UpdateResult", "host_us", "cpu_us", "device_name", "provenance", "GraphCache",
    "prepare", "PreparedLaunch", "LaunchParams", "launch_params",
]


def device_name() -> str:
    """The GPU's name ("NVIDIA H200"), or the simulated one's."""
    props = check(rt.cudaGetDeviceProperties(0), "cudaGetDeviceProperties")
    return props.name.decode(errors="replace").rstrip("\x00")


def provenance() -> str:
    """What a figure's title says about where its numbers came from."""
    return _be.provenance(device_name())

"""labkit: the helper package of CUDA Graphs Lab.

``import labkit`` chooses the backend once (``LABKIT_BACKEND=auto|cuda|sim``): "cuda" runs on a
real GPU through cuda-python and numba-cuda; "sim" runs everything on the CPU simulator, whose
clock is calibrated on a real GPU. ``labkit.rt`` is the runtime API of the chosen backend, with
cuda-python's names and ``(err, *values)`` results, so raw-API code runs unchanged on both.
"""
from ._state import backend, backend_error, backend_reason, rt, host_us, cpu_us
from ._errors import CudaError, check, hint_for
from ._kernel import kernel, Kernel, to_device, device_array, pinned_array, stream_handle
from ._streams import Stream, Event, synchronize
from ._capture import capture, fork
from ._graph import Graph, GraphExec, UpdateResult
from .cache import GraphCache
from ._prepared import prepare, PreparedLaunch
from .conditional import Condition, Body, ConditionalGraph, conditional_graph, conditional_in_capture, set_condition

__all__ = [
    "backend", "backend_error", "backend_reason", "rt", "check", "CudaError", "hint_for",
    "kernel", "Kernel", "to_device", "device_array", "pinned_array", "stream_handle",
    "Stream", "Event", "synchronize", "capture", "fork", "Graph", "GraphExec", "UpdateResult",
    "host_us", "cpu_us", "device_name", "provenance", "GraphCache",
    "prepare", "PreparedLaunch",
    "Condition", "Body", "ConditionalGraph", "conditional_graph", "conditional_in_capture", "set_condition",
]


def device_name() -> str:
    """The GPU's name ("NVIDIA H200"), or the simulated one's."""
    props = check(rt.cudaGetDeviceProperties(0), "cudaGetDeviceProperties")
    return props.name.decode(errors="replace").rstrip("\x00")


def provenance() -> str:
    """What a figure's title says about where its numbers came from."""
    if backend == "cuda":
        return f"measured on {device_name()}"
    from ._calibration import load
    return f"simulated, calibrated on {load()['gpu']}"

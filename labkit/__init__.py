"""labkit: the helper package of CUDA Graphs Lab.

``import labkit`` chooses the backend once (``LABKIT_BACKEND=auto|cuda|sim``): "cuda" runs on a
real GPU through cuda-python and numba-cuda; "sim" runs everything on the CPU simulator, whose
clock is calibrated on a real GPU. ``labkit.rt`` is the runtime API of the chosen backend, with
cuda-python's names and ``(err, *values)`` results, so raw-API code runs unchanged on both.

The package is grouped by role: the core (capture, graphs, cache, kernels, streams, the
backend) at the top; ``labkit.measure`` (timing, stats, spans, CUPTI, plots); ``labkit.course``
(the course's kernels, the decoder, the exercises); ``labkit.cli`` (``python -m labkit VERB``).
``labkit.timing`` and ``labkit.plot`` stay public names for ``labkit.measure.timing`` and
``labkit.measure.plot``: ``from labkit import timing, plot`` or ``labkit.timing.measure(...)``
load them on first use (so ``import labkit`` does not import matplotlib). ``import
labkit.timing`` does not work: use ``from labkit import timing``.
"""
import importlib as _importlib

from ._state import backend, backend_error, backend_reason, rt, host_us, cpu_us
from ._errors import CudaError, check, hint_for
from ._kernel import kernel, Kernel, to_device, device_array, pinned_array, stream_handle
from ._streams import Stream, Event, synchronize
from ._capture import capture, fork
from ._graph import Graph, GraphExec, UpdateResult
from .cache import GraphCache
from ._prepared import prepare, PreparedLaunch
from .measure.claims import expect, ClaimFailed

__all__ = [
    "backend", "backend_error", "backend_reason", "rt", "check", "CudaError", "hint_for",
    "kernel", "Kernel", "to_device", "device_array", "pinned_array", "stream_handle",
    "Stream", "Event", "synchronize", "capture", "fork", "Graph", "GraphExec", "UpdateResult",
    "host_us", "cpu_us", "device_name", "provenance", "GraphCache",
    "prepare", "PreparedLaunch", "timing", "plot", "expect", "ClaimFailed",
]

# Public names for modules that live in labkit.measure, imported when first asked for.
_LAZY_MODULES = {"timing": "labkit.measure.timing", "plot": "labkit.measure.plot"}


def __getattr__(name):
    if name in _LAZY_MODULES:
        module = _importlib.import_module(_LAZY_MODULES[name])
        globals()[name] = module   # later lookups skip this function
        return module
    raise AttributeError(f"module 'labkit' has no attribute {name!r}")


def device_name() -> str:
    """The GPU's name ("NVIDIA H200"), or the simulated one's."""
    props = check(rt.cudaGetDeviceProperties(0), "cudaGetDeviceProperties")
    return props.name.decode(errors="replace").rstrip("\x00")


def provenance() -> str:
    """What a figure's title says about where its numbers came from."""
    if backend == "cuda":
        return f"measured on {device_name()}"
    from ._calibration import load, profile
    if profile():
        return f"simulated, what-if profile '{profile()}' (not a measurement) on {load()['gpu']}'s calibration"
    return f"simulated, calibrated on {load()['gpu']}"

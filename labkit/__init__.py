"""labkit: the helper package of CUDA Graphs Lab.

``import labkit`` chooses the backend once (``LABKIT_BACKEND=auto|cuda|sim``, see
`labkit.backend`): "cuda" runs on a real GPU through cuda-python and numba-cuda; "sim" runs
everything on the CPU simulator, whose clock is calibrated on a real GPU. ``labkit.rt`` is the
runtime API of the chosen backend, with cuda-python's names and ``(err, *values)`` results, so
raw-API code runs unchanged on both.

The package is grouped by role: the core (capture, graphs, cache, kernels, streams, the
backend) here; ``labkit.measure`` (timing, stats, spans, CUPTI, plots, the course's claims);
``labkit.course`` (the course's kernels, the decoder, the exercises); ``labkit.cli``
(``python -m labkit VERB``). ``labkit.timing`` and ``labkit.plot`` are public names for
``labkit.measure.timing`` and ``labkit.measure.plot``, loaded on first use (so ``import labkit``
does not import matplotlib); use ``from labkit import timing``, not ``import labkit.timing``.
"""
import importlib as _importlib

from . import backend as _be   # the package; the attribute labkit.backend is its name
from ._errors import CudaError, check, hint_for
from ._handles import stream_handle
from ._kernel import kernel, Kernel, to_device, device_array, pinned_array
from ._prepared import prepare, PreparedLaunch, LaunchParams, launch_params
from ._streams import Stream, Event, synchronize
from ._graph import Graph, GraphExec, KernelNode, UpdateResult
from ._capture import capture, fork
from .cache import GraphCache
from ._graphed import graphed, Graphed
from .conditional import (Body, Condition, ConditionalGraph, conditional_graph,
                          conditional_in_capture, set_condition)

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
    "prepare", "PreparedLaunch", "LaunchParams", "launch_params", "timing", "plot",
    "expect", "ClaimFailed",
    "Condition", "Body", "ConditionalGraph", "conditional_graph", "conditional_in_capture",
    "set_condition", "graphed", "Graphed",
]

# Public names for what lives in labkit.measure (above this core), imported when first asked for.
_LAZY_MODULES = {"timing": "labkit.measure.timing", "plot": "labkit.measure.plot"}
_LAZY_NAMES = {"expect": "labkit.measure.claims", "ClaimFailed": "labkit.measure.claims"}


def __getattr__(name):
    if name in _LAZY_MODULES:
        module = _importlib.import_module(_LAZY_MODULES[name])
        globals()[name] = module   # later lookups skip this function
        return module
    if name in _LAZY_NAMES:
        value = getattr(_importlib.import_module(_LAZY_NAMES[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'labkit' has no attribute {name!r}")


def device_name() -> str:
    """The GPU's name ("NVIDIA H200"), or the simulated one's."""
    props = check(rt.cudaGetDeviceProperties(0), "cudaGetDeviceProperties")
    return props.name.decode(errors="replace").rstrip("\x00")


def provenance() -> str:
    """What a figure's title says about where its numbers came from."""
    return _be.provenance(device_name())

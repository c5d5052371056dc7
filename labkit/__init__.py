"""labkit: the helper package of CUDA Graphs Lab.

``import labkit`` chooses the backend once (``LABKIT_BACKEND=auto|cuda|sim``, see
`labkit.backend`): "cuda" runs on a real GPU through cuda-python and numba-cuda; "sim" runs
everything on the CPU simulator, whose clock is calibrated on a real GPU. ``labkit.rt`` is the
runtime API of the chosen backend, with cuda-python's names and ``(err, *values)`` results, so
raw-API code runs unchanged on both.

The package is grouped by role: the core (capture, graphs, cache, kernels, streams, the
backend) here; ``labkit.measure`` (timing, stats, spans, CUPTI, plots, the course's claims);
``labkit.course`` (the course's kernels, the decoder, the exercises); ``labkit.cli``
(``python -m labkit VERB``). ``labkit.timing`` and ``labkit.plot`` are
``labkit.measure.timing`` and ``labkit.measure.plot`` themselves, loaded on first use (so
``import labkit`` does not import matplotlib); ``import labkit.timing`` works too.

``labkit.backend`` is the active backend's name, a str ("cuda" or "sim") that notebooks print
and compare; it is a `BackendName`, so ``labkit.backend.is_gpu`` (any name of the package
`labkit.backend`) reaches the package it would otherwise hide.
"""
import importlib as _importlib

from . import backend as _be
from ._errors import CudaError, check, decoder_ring, hint_for
from .sim._races import RaceWarning
from ._handles import stream_handle
from ._kernel import kernel, Kernel, to_device, device_array, pinned_array
from ._mapped import MappedArray, mapped_array
from ._prepared import prepare, PreparedLaunch, LaunchParams, launch_params
from ._streams import Stream, Event, synchronize
from ._graph import Graph, GraphExec, KernelNode, UpdateResult
from ._capture import capture, fork
from ._eager import eager, graphs_are_eager, EagerGraph, EagerExec
from ._captured import captured, Captured, compare_outputs, Comparison
from .cache import GraphCache
from ._graphed import graphed, Graphed
from .conditional import (Body, Condition, ConditionalGraph, conditional_graph,
                          conditional_in_capture, set_condition)



class BackendName(str):
    """The active backend's name ("cuda" or "sim"), a str, through which the names of the
    package `labkit.backend` stay reachable: ``labkit.backend.is_gpu``, ``labkit.backend.rt``.

    ``labkit.backend`` was the name first (notebooks print it and compare it with "cuda"), and
    a plain str hid the package of the same name (``labkit.backend.rt`` was an AttributeError
    on a str). A str method's name would win over a package name, but the package has none.
    """

    __slots__ = ()

    def __getattr__(self, attr):
        return getattr(_be, attr)

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(_be.__all__))


backend = BackendName(_be.name)
backend_reason = _be.reason
backend_error = _be.error
rt = _be.rt
host_us = _be.host_us
cpu_us = _be.cpu_us
races = _be.races
clear_races = _be.clear_races
reset_after_fault = _be.reset_after_fault

__all__ = [
    "backend", "backend_error", "backend_reason", "rt", "check", "CudaError", "hint_for",
    "kernel", "Kernel", "to_device", "device_array", "pinned_array", "stream_handle",
    "MappedArray", "mapped_array",
    "Stream", "Event", "synchronize", "capture", "fork", "Graph", "GraphExec", "KernelNode",
    "UpdateResult", "host_us", "cpu_us", "device_name", "provenance", "GraphCache",
    "prepare", "PreparedLaunch", "LaunchParams", "launch_params", "timing", "plot",
    "expect", "ClaimFailed", "BackendName",
    "Condition", "Body", "ConditionalGraph", "conditional_graph", "conditional_in_capture",
    "set_condition", "graphed", "Graphed", "eager", "graphs_are_eager", "captured",
    "Captured", "EagerGraph", "EagerExec", "compare_outputs", "Comparison", "decoder_ring",
    "races", "clear_races", "RaceWarning", "reset_after_fault",
]

# Public names for what lives in labkit.measure (above this core), imported when first asked for.
_LAZY_MODULES = {"timing": "labkit.timing", "plot": "labkit.plot"}
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

"""labkit: the helper package of CUDA Graphs Lab, the library the notebooks use.

``import labkit`` chooses the backend once (``LABKIT_BACKEND=auto|cuda|sim``, see
`labkit.backends`): "cuda" runs on a real GPU through cuda-python and numba-cuda; "sim" runs
everything on the CPU simulator (`labkit.sim`), whose clock is calibrated on a real GPU.
``labkit.rt`` is the runtime API of the chosen backend, with cuda-python's names and
``(err, *values)`` results, so raw-API code runs unchanged on both. ``labkit.backend`` is the
chosen backend's name, a plain str ("cuda" or "sim").

Where the code is (one module per concept; cuda.core's name for it in brackets):

- kernels and arrays: `labkit.kernel`, `to_device`, `device_array`, `pinned_array`,
  `mapped_array` (``_kernel``, ``_mapped``); a launch's parameters built once, `prepare`
  (``_prepared``) [cuda.core: ``LaunchConfig`` + ``launch``];
- streams and events: `Stream`, `Event`, `synchronize` (``_streams``) [``Stream``, ``Event``];
- capture and graphs: `capture`, `fork` (``_capture``), `Graph`, `GraphExec` (``_graph``)
  [cuda.core: ``GraphBuilder``, ``Graph``], the per-shape cache `GraphCache` (``cache``), graphs
  built node by node (``explicit``), conditional nodes (``conditional``), `graphed` callables
  (``_graphed``), the eager switch `eager` (``_eager``) and `captured` / `compare_outputs`
  (``_compare``);
- errors: `check`, `CudaError`, `decoder_ring` (``_errors``);
- timing and plots: ``labkit.timing`` and ``labkit.plot``, loaded on first use (so ``import
  labkit`` does not import matplotlib); their statistics, spans, traces and claims are
  ``labkit.measure``;
- the backend and its simulator: ``labkit.backends``, ``labkit.sim``, ``labkit.calibration``.

Beside the library, and never imported by it: ``labkit.course`` (the course's own kernels,
decoder, exercises, claims and reference notes), ``labkit.toolbox`` (the maintainers'
procedures: benchmarks, calibration, the measurements document) and ``labkit.cli`` (``python -m
labkit VERB``, which calls them). Types not named here stay importable from their modules
(``from labkit._graph import KernelNode``).
"""
import importlib as _importlib

from . import backends as _be
from ._errors import CudaError, check, decoder_ring
from .sim._races import RaceWarning
from ._handles import stream_handle
from ._kernel import kernel, to_device, device_array, pinned_array
from ._mapped import mapped_array
from ._prepared import prepare
from ._streams import Stream, Event, synchronize
from ._graph import Graph, GraphExec
from ._capture import capture, fork
from ._eager import eager
from ._compare import captured, compare_outputs
from .cache import GraphCache
from ._graphed import graphed
from .conditional import conditional_graph, set_condition



backend: str = _be.name      # "cuda" or "sim"; the implementation is labkit.backends
backend_reason = _be.reason
backend_error = _be.error      # for `python -m labkit doctor`, which reports it; not in __all__
rt = _be.rt
host_us = _be.host_us
cpu_us = _be.cpu_us
races = _be.races
clear_races = _be.clear_races
reset_after_fault = _be.reset_after_fault

__all__ = [
    "backend", "backend_reason", "rt", "check", "CudaError", "decoder_ring",
    "kernel", "to_device", "device_array", "pinned_array", "mapped_array", "stream_handle",
    "prepare", "Stream", "Event", "synchronize",
    "capture", "fork", "Graph", "GraphExec", "GraphCache", "conditional_graph", "set_condition",
    "graphed", "eager", "captured", "compare_outputs",
    "host_us", "cpu_us", "device_name", "provenance", "timing", "plot",
    "races", "clear_races", "RaceWarning", "reset_after_fault",
]

# labkit.timing and labkit.plot sit above this core (they import it): imported when first asked for.
_LAZY_MODULES = {"timing": "labkit.timing", "plot": "labkit.plot"}


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
    return _be.provenance(device_name())

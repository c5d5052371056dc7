"""GPU kernel, memcpy, memset and CUDA API spans from CUPTI's Activity API (cupti-python).

Needs the ``cu13`` extra: ``pip install 'cuda-graphs-lab[cu13]'``, which brings cupti-python 13.x
for a CUDA 13 driver. (For CUDA 12 no cupti-python installs cleanly beside numba-cuda 0.30:
12.8.0 pins cuda-bindings 12.8, 12.6.0 the old all-in-one cuda-python 12.6.) Importing this
module never fails: where cupti cannot load, :func:`available` says why and
:class:`KernelTrace` refuses to start with that reason.

Kernels launched from a graph arrive as ordinary CONCURRENT_KERNEL records (with a graph id),
so one trace shows eager and graph-launched work the same way.

Not supported:

- more than one trace at a time: CUPTI's activity buffers belong to the whole process;
- per-thread or per-context filtering: a trace collects every thread's and context's records;
- kinds other than concurrent kernel, memcpy, memset, runtime API and driver API.

Kernel records name kernels by their symbols; a labkit kernel's is turned back into its Python
name (`labkit._kernel.python_name`), any other kernel's is shown as CUPTI reports it.
"""
from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from typing import Callable, Iterable

from labkit._kernel import python_name
from labkit.measure.timeline import CPU_ROW, Span, Timeline

# CUpti_ActivityKind and CUpti_CallbackDomain values from cupti_activity.h / cupti_callbacks.h.
# They are C ABI and stable; they let records be converted (and tested) without the module.
_C_ACTIVITY_KIND = {"memcpy": 1, "memset": 2, "kernel_serial": 3, "driver": 4, "runtime": 5,
                    "kernel": 10}
_C_DOMAIN = {"driver": 1, "runtime": 2}
# CUpti_ActivityMemcpyKind, for names like "memcpy HtoD".
_MEMCPY_DIRECTION = {1: "HtoD", 2: "DtoH", 3: "HtoA", 4: "AtoH", 5: "AtoA", 6: "AtoD",
                     7: "DtoA", 8: "DtoD", 9: "HtoH", 10: "PtoP"}
_BUFFER_BYTES = 8 * 1024 * 1024
_INSTALL_HINT = ("on a CUDA 13 driver, install the cu13 extra (pip install 'cuda-graphs-lab[cu13]', "
                 "which brings cupti-python); for CUDA 12 there is no cupti-python that installs "
                 "beside numba-cuda 0.30")

TRACE_KINDS = ("kernel", "memcpy", "memset", "runtime", "driver")
DEFAULT_KINDS = TRACE_KINDS

_module = None            # the cupti.cupti module, once it loaded and answered
_why_not: str | None = None
_state_lock = threading.Lock()
_active: "KernelTrace | None" = None
_callbacks_registered = False


def _load():
    """Import cupti once; remember the module or the reason it cannot be used."""
    global _module, _why_not
    if _module is not None or _why_not is not None:
        return _module
    try:
        from cupti import cupti as module
    except ImportError as exc:
        _why_not = f"cupti-python is not installed ({exc}); {_INSTALL_HINT}"
        return None
    except Exception as exc:  # the wheel is there but libcupti.so (or its deps) would not load
        _why_not = (f"cupti-python is installed but libcupti could not be loaded "
                    f"({type(exc).__name__}: {exc}); {_INSTALL_HINT}")
        return None
    try:
        # The bindings load libcupti lazily; one cheap call proves the library works.
        module.get_timestamp()
    except Exception as exc:
        _why_not = (f"cupti-python imported but CUPTI does not answer "
                    f"({type(exc).__name__}: {exc}); check that libcupti matches the driver's "
                    f"CUDA version, or {_INSTALL_HINT}")
        return None
    _module = module
    return module


def available() -> tuple[bool, str]:
    """Whether CUPTI tracing can be used here, and why (not).

    Returns
    -------
    (bool, str)
        ``(True, "cupti-python ... loaded")`` or ``(False, reason with the fix)``.
    """
    module = _load()
    if module is None:
        return False, str(_why_not)
    version = getattr(module, "__version__", None) or _package_version()
    return True, f"cupti-python {version} loaded" if version else "cupti-python loaded"


def _package_version() -> str | None:
    try:
        from importlib.metadata import version

        return version("cupti-python")
    except Exception:  # metadata is a nicety for the message, never a reason to fail
        return None


def _require():
    module = _load()
    if module is None:
        raise RuntimeError(f"CUPTI tracing is not available: {_why_not}. Without CUPTI, "
                           "labkit's timeline falls back to CUDA event pairs")
    return module


def timestamp_ns() -> int:
    """CUPTI's clock now, in ns: the clock of every record's start and end."""
    return int(_require().get_timestamp())


# --------------------------------------------------------------------------- records

@dataclass(frozen=True)
class Record:
    """The fields of one activity record, copied out of CUPTI's buffer.

    CUPTI hands records to a callback and reuses the buffer after it returns, so only plain
    values are kept. ``kind`` is "kernel", "memcpy", "memset", "runtime" or "driver".
    """

    kind: str
    start_ns: int
    end_ns: int
    name: str = ""
    stream_id: int | None = None
    correlation_id: int | None = None
    graph_id: int | None = None
    cbid: int | None = None
    bytes: int | None = None
    copy_kind: int | None = None


def _kind_names() -> dict[int, str]:
    """Activity-kind code -> our kind name, from the module's enum when it is loaded."""
    names = {code: name for name, code in _C_ACTIVITY_KIND.items()}
    names[_C_ACTIVITY_KIND["kernel_serial"]] = "kernel"
    if _module is not None:
        enum = _module.ActivityKind
        for attr, name in (("CONCURRENT_KERNEL", "kernel"), ("KERNEL", "kernel"),
                           ("MEMCPY", "memcpy"), ("MEMSET", "memset"),
                           ("RUNTIME", "runtime"), ("DRIVER", "driver")):
            if hasattr(enum, attr):
                names[int(getattr(enum, attr))] = name
    return names


def record_from_activity(activity, kind_names: dict[int, str] | None = None) -> Record | None:
    """Copy the fields we use out of one cupti activity object (None for other kinds).

    Parameters
    ----------
    activity : object
        A cupti ``Activity*`` object (or anything with the same attributes: ``kind``,
        ``start``, ``end``, and per kind ``name``, ``stream_id``, ``correlation_id``,
        ``graph_id``, ``cbid``, ``bytes``, ``copy_kind``).
    kind_names : dict, optional
        Activity-kind code -> kind name; CUPTI's codes by default.
    """
    kind = (kind_names or _kind_names()).get(int(activity.kind))
    if kind is None:
        return None
    graph_id = getattr(activity, "graph_id", 0) or None  # 0: not launched from a graph
    return Record(
        kind=kind,
        start_ns=int(activity.start),
        end_ns=int(activity.end),
        name=str(getattr(activity, "name", "") or "") if kind == "kernel" else "",
        stream_id=getattr(activity, "stream_id", None) if kind not in ("runtime", "driver") else None,
        correlation_id=getattr(activity, "correlation_id", None),
        graph_id=graph_id,
        cbid=getattr(activity, "cbid", None) if kind in ("runtime", "driver") else None,
        bytes=getattr(activity, "bytes", None) if kind in ("memcpy", "memset") else None,
        copy_kind=getattr(activity, "copy_kind", None) if kind == "memcpy" else None,
    )


# --------------------------------------------------------------------------- names

def _strip_version(api_name: str) -> str:
    # Runtime callback names carry the ABI version: "cudaLaunchKernel_v7000".
    return re.sub(r"_v\d+$", "", api_name)


def api_span_kind(api_name: str) -> str:
    """The span kind of a CUDA API call: "graph", "launch", "sync" or "api"."""
    lowered = api_name.lower()
    if "graphlaunch" in lowered:
        return "graph"
    if "launch" in lowered and "kernel" in lowered:  # cuLaunchKernel(Ex), cudaLaunchKernel, ...
        return "launch"
    if "synchronize" in lowered:
        return "sync"
    return "api"


def _callback_name(domain: str, cbid: int) -> str:
    """CUPTI's name for an API callback id, or a placeholder when cupti cannot say."""
    if _module is not None:
        try:
            enum = _module.CallbackDomain
            code = enum.DRIVER_API if domain == "driver" else enum.RUNTIME_API
            return str(_module.get_callback_name(code, cbid))
        except Exception:  # an id unknown to this CUPTI still deserves a span
            pass
    return f"{domain} API cbid {cbid}"


def records_to_spans(records: Iterable[Record], t0_ns: int | None = None,
                     api_name: Callable[[str, int], str] | None = None,
                     kernel_name: Callable[[str], str] | None = None) -> list[Span]:
    """Convert records to spans in µs relative to ``t0_ns`` (the earliest record by default).

    Parameters
    ----------
    records : iterable of Record
    t0_ns : int, optional
        CUPTI timestamp (ns) that becomes 0 µs, e.g. from :func:`timestamp_ns`.
    api_name : callable, optional
        ``(domain, cbid) -> name`` for runtime/driver records, domain "runtime" or "driver";
        CUPTI's callback names by default.
    kernel_name : callable, optional
        ``symbol -> name`` for kernel records (`labkit._kernel.python_name`: the Python name of
        a labkit kernel); the symbol as CUPTI reports it by default.

    Returns
    -------
    list of Span
        Device work on rows ``"stream <id>"``, API calls on row ``"CPU"``, by start time.
        Records without timestamps (start and end 0) or ending before they start are left out.
    """
    name_of = api_name or _callback_name
    timed = [r for r in records if not (r.start_ns == 0 and r.end_ns == 0) and r.end_ns >= r.start_ns]
    if not timed:
        return []
    origin = min(r.start_ns for r in timed) if t0_ns is None else int(t0_ns)
    spans = []
    for r in sorted(timed, key=lambda r: (r.start_ns, -r.end_ns)):
        start_us, end_us = (r.start_ns - origin) / 1e3, (r.end_ns - origin) / 1e3
        if r.kind in ("runtime", "driver"):
            name = _strip_version(name_of(r.kind, r.cbid)) if r.cbid is not None else r.kind
            spans.append(Span(CPU_ROW, name, start_us, end_us, api_span_kind(name),
                              r.correlation_id))
            continue
        if r.kind == "kernel":
            name = (kernel_name(r.name) if kernel_name else r.name) if r.name else "kernel"
        elif r.kind == "memcpy":
            name = f"memcpy {_MEMCPY_DIRECTION.get(r.copy_kind, '')}".strip()
        else:
            name = "memset"
        spans.append(Span(f"stream {r.stream_id}", name, start_us, end_us, r.kind,
                          r.correlation_id, r.graph_id))
    return spans


# --------------------------------------------------------------------------- tracing

def _buffer_requested():
    # (buffer size in bytes, max records: 0 = as many as fit)
    return _BUFFER_BYTES, 0


def _buffer_completed(activities) -> None:
    trace = _active
    if trace is None:  # records from before a trace started, or after it ended
        return
    try:
        names = _kind_names()
        trace._add([r for r in (record_from_activity(a, names) for a in activities)
                    if r is not None])
    except Exception as exc:  # never raise into CUPTI's thread; report it from spans()
        trace._callback_error = exc


def _ensure_callbacks(module) -> None:
    global _callbacks_registered
    if not _callbacks_registered:
        # Registered once per process; the callbacks route records to whichever trace is active.
        module.activity_register_callbacks(_buffer_requested, _buffer_completed)
        _callbacks_registered = True


# CUPTI stays attached to the driver after its activities are disabled, and while attached it
# makes every later launch dearer. So each trace detaches CUPTI at its end (cuptiFinalize), and
# the next one attaches again. Only at a trace's end: detaching while a trace's state is still
# registered makes the next launch fail.
def _detach(module) -> None:
    global _callbacks_registered
    try:
        module.finalize()
    except Exception:   # a CUPTI that cannot detach still traced correctly: keep going
        return
    _callbacks_registered = False


def _synchronize_device() -> str | None:
    """Wait for the current context's work, so its records are complete; an error or None."""
    try:
        from cuda.bindings import driver
    except ImportError:
        return None
    (err,) = driver.cuCtxSynchronize()
    if err in (driver.CUresult.CUDA_SUCCESS, driver.CUresult.CUDA_ERROR_INVALID_CONTEXT):
        return None  # no context current: this thread has queued nothing to wait for
    return err.name


class KernelTrace:
    """Record GPU kernels, copies, memsets and CUDA API calls made inside a ``with`` block.

    Parameters
    ----------
    kinds : sequence of str
        Which records to collect, from ``TRACE_KINDS`` (all by default).
    synchronize : bool
        Synchronize the current context on exit, so every kernel launched in the block has
        finished and its record is complete. The ``cuCtxSynchronize`` call appears in the trace.

    Examples
    --------
    >>> with KernelTrace() as trace:          # doctest: +SKIP
    ...     for _ in range(20):
    ...         add_one[4, 256, stream](x)
    >>> kernels = [s for s in trace.spans() if s.kind == "kernel"]   # doctest: +SKIP
    """

    def __init__(self, kinds: Iterable[str] = DEFAULT_KINDS, synchronize: bool = True) -> None:
        self.kinds = tuple(kinds)
        unknown = [k for k in self.kinds if k not in TRACE_KINDS]
        if unknown:
            raise ValueError(f"unknown trace kinds {unknown}; choose from {TRACE_KINDS}")
        self.synchronize = synchronize
        self.t_enter_ns: int | None = None
        self.t_exit_ns: int | None = None
        self._records: list[Record] = []
        self._lock = threading.Lock()
        self._enabled: list = []
        self._callback_error: Exception | None = None

    def _add(self, records: list[Record]) -> None:
        with self._lock:
            self._records.extend(records)

    def _activity_kind(self, module, kind: str):
        attr = {"kernel": "CONCURRENT_KERNEL", "memcpy": "MEMCPY", "memset": "MEMSET",
                "runtime": "RUNTIME", "driver": "DRIVER"}[kind]
        # CONCURRENT_KERNEL, not KERNEL: the latter serializes kernels and changes timings.
        return getattr(module.ActivityKind, attr)

    def _disable_all(self, module) -> None:
        for code in reversed(self._enabled):
            try:
                module.activity_disable(code)
            except Exception:  # disabling is best effort; the first error is already raised
                pass
        self._enabled.clear()

    def __enter__(self) -> "KernelTrace":
        global _active
        module = _require()
        with _state_lock:
            if _active is not None:
                raise RuntimeError(
                    "a KernelTrace is already recording; CUPTI's activity buffers are "
                    "process-wide, so traces cannot nest. Let the first with-block end first")
            _ensure_callbacks(module)
            # Hand out records left from earlier work while no trace is active, so they are
            # dropped rather than counted in this one.
            module.activity_flush_all(1)
            _active = self
        try:
            for kind in self.kinds:
                code = self._activity_kind(module, kind)
                module.activity_enable(code)
                self._enabled.append(code)
        except Exception as exc:
            self._disable_all(module)
            _active = None
            raise RuntimeError(
                f"CUPTI refused to enable {kind} activity records ({exc}); another profiler "
                "(Nsight Systems, torch.profiler) may hold CUPTI - stop it and retry") from exc
        self.t_enter_ns = int(module.get_timestamp())
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        global _active
        module = _module
        sync_error = None
        try:
            if self.synchronize:
                sync_error = _synchronize_device()
            self.t_exit_ns = int(module.get_timestamp())
            module.activity_flush_all(1)  # forced: hand over partly filled buffers too
        finally:
            self._disable_all(module)
            _active = None
            _detach(module)
        if sync_error and exc_type is None:
            raise RuntimeError(f"cuCtxSynchronize at the end of the trace returned {sync_error}: "
                               "a kernel in the traced block failed; its records may be partial")
        return False

    def timestamp_ns(self) -> int:
        """CUPTI's clock now (ns), to mark a moment inside the block for aligning spans."""
        return timestamp_ns()

    @property
    def records(self) -> list[Record]:
        """The raw records collected so far (a copy)."""
        with self._lock:
            return list(self._records)

    def spans(self, t0_ns: int | None = None) -> list[Span]:
        """The trace as spans, in µs from ``t0_ns`` (the earliest record by default).

        See :func:`records_to_spans` for rows, kinds and names.
        """
        if self._callback_error is not None:
            raise RuntimeError(f"reading CUPTI's records failed: {self._callback_error!r}")
        return records_to_spans(self.records, t0_ns, kernel_name=python_name)

    def timeline(self, t0_ns: int | None = None, note: str = "") -> Timeline:
        """The trace as a :class:`~labkit.measure.timeline.Timeline` with source "cupti"."""
        return Timeline(self.spans(t0_ns), source="cupti", note=note)

"""The stream-capture mode matrix: which call, under which capture mode, from which thread.

The cells use `labkit.rt` and one labkit kernel only, so they run unchanged on a GPU and on the
simulator. ``tests/conformance/capture_modes_probe.py`` writes a backend's whole matrix to a log
(the H200's is committed beside it); ``tests/conformance/test_capture_modes.py`` runs every
logged cell on the current backend and compares it field by field; notebook 02 measures a part
of it live and draws it with `plot_matrix`.

A cell is (call, mode, where). Every cell begins a capture on a non-blocking stream in ``mode``
from the calling (main) thread, launches one kernel into it, makes ``call`` from ``where``, and
records:

- ``rc``: the call's error name (a raised CudaError's name; ``NotImplementedError`` where the
  backend lacks the call; ``setup failed: ...`` where the setup outside the capture failed);
- ``peek``: cudaPeekAtLastError in the calling thread, right after the call;
- ``exchange`` / ``exchange_back`` (``*_relaxed`` wheres): what cudaThreadExchangeStreamCaptureMode
  returned when the calling thread set relaxed before the call, and global after it;
- ``thread_last_error`` (other-thread wheres): cudaGetLastError in that thread, after the peek;
- ``status`` / ``info``: cudaStreamIsCapturing / cudaStreamGetCaptureInfo on the capturing stream;
- ``end`` / ``graph``: what cudaStreamEndCapture (main thread) returns, and whether a graph came;
- ``last_error``: the main thread's cudaGetLastError after the end;
- ``clean``: "ok" when, after undoing the cell, no capture is open and cudaDeviceSynchronize
  succeeds (else what was wrong: the cells after it are suspect; the probe's ``--isolate``
  runs each call in its own process).

Wheres: ``capturing`` (the main thread, which began the capture), ``capturing_relaxed`` (it,
after exchanging its mode to relaxed), ``other`` (a new threading.Thread while the capture is
open), ``other_relaxed`` (that thread, after exchanging to relaxed). `CALLS` is ordered so the
calls most likely to disturb the process (legacy launch, device sync, ending from another
thread) come last.
"""
from __future__ import annotations

import threading

import labkit  # the package is initialised before its submodules: labkit.rt is the backend's
import numpy as np

from labkit._capture import CAPTURE_MODES
from labkit.backends import is_gpu

from .capture_figure import capture_matrix
from .workloads import add_one

__all__ = ["MODES", "WHERES", "CALLS", "FIELDS", "Hung", "Env", "prepare", "run_cell",
           "exchange_semantics", "measure", "outcome", "table", "codes_from", "plot_matrix"]

_rt = labkit.rt
_E = _rt.cudaError_t
_OK = _E.cudaSuccess
MODES = CAPTURE_MODES
WHERES = ("capturing", "capturing_relaxed", "other", "other_relaxed")
FIELDS = ("rc", "peek", "exchange", "exchange_back", "thread_last_error", "status", "info",
          "end", "graph", "last_error", "clean")   # what a conformance test compares
_NOT_CAPTURING = _rt.cudaStreamCaptureStatus.cudaStreamCaptureStatusNone
_D2H = _rt.cudaMemcpyKind.cudaMemcpyDeviceToHost
N, GRID, BLOCK = 1024, 4, 256
SIZE, JOIN_S = 4096, 30


def _name(x) -> str:
    return getattr(x, "name", str(x))


def _ok(result):
    """A setup step's value; raises if it failed, so no cell measures a broken setup."""
    if result[0] != _OK:
        raise RuntimeError(f"setup call failed: {_name(result[0])}")
    return result[1] if len(result) > 1 else None


class Env:
    """What every cell shares: the capturing stream, another stream, a device buffer."""

    def __init__(self):
        self.cap = _ok(_rt.cudaStreamCreateWithFlags(_rt.cudaStreamNonBlocking))
        self.other = _ok(_rt.cudaStreamCreateWithFlags(_rt.cudaStreamNonBlocking))
        self.arr = labkit.to_device(np.zeros(N, np.float32))
        self.buf = self.arr.device_ctypes_pointer.value
        self.host = np.zeros(16, np.float32)


class _Cell:
    """One cell's objects; ``after`` holds what undoes them once the capture has ended."""

    def __init__(self, env: Env):
        self.env, self.cap, self.other = env, env.cap, env.other
        self.after, self.ptr, self.event, self.stream = [], None, None, None

    def keep(self, result, undo):
        """Undo ``result``'s value after the capture, if the call made one; pass result on."""
        if result[0] == _OK:
            self.after.append(lambda v=result[1]: undo(v))
        return result

    def retry(self, result, undo, *args):
        """Run ``undo(*args)`` after the capture unless ``result`` succeeded; pass it on."""
        if result[0] != _OK:
            self.after.append(lambda: undo(*args))
        return result

    def free_async(self, ptr):
        err = _rt.cudaFreeAsync(ptr, self.other)[0]
        return (err if err != _OK else _rt.cudaStreamSynchronize(self.other)[0],)


# ------------------------------------------------------------------ setups (main thread)

def _device_ptr(c):
    c.ptr = _ok(_rt.cudaMalloc(SIZE))


def _host_ptr(c):
    c.ptr = _ok(_rt.cudaMallocHost(SIZE))


def _async_ptr(c):
    c.ptr = _ok(_rt.cudaMallocAsync(SIZE, c.other))
    _ok(_rt.cudaStreamSynchronize(c.other))


def _bare_event(c):
    c.event = _ok(_rt.cudaEventCreate())


def _event(c):
    _bare_event(c)
    c.after.append(lambda e=c.event: _rt.cudaEventDestroy(e))


def _outside_event(c):
    _event(c)
    _ok(_rt.cudaEventRecord(c.event, c.other))
    _ok(_rt.cudaStreamSynchronize(c.other))


def _record_in_capture(c):   # runs after the capture began
    _ok(_rt.cudaEventRecord(c.event, c.cap))


def _stream(c):
    c.stream = _ok(_rt.cudaStreamCreate())


def _free_async_in_capture(c):
    c.after.append(lambda: c.free_async(c.ptr))   # a captured free never runs: free it after
    return _rt.cudaFreeAsync(c.ptr, c.cap)


def _legacy_launch(c):
    add_one[GRID, BLOCK, 0](c.env.arr)
    return (_OK,)


# name: (call in the calling thread, setup before the capture, setup inside it)
CALLS = {
    "cudaMalloc": (lambda c: c.keep(_rt.cudaMalloc(SIZE), _rt.cudaFree), None, None),
    "cudaFree": (lambda c: c.retry(_rt.cudaFree(c.ptr), _rt.cudaFree, c.ptr), _device_ptr, None),
    "cudaMallocHost": (lambda c: c.keep(_rt.cudaMallocHost(SIZE), _rt.cudaFreeHost), None, None),
    "cudaFreeHost": (lambda c: c.retry(_rt.cudaFreeHost(c.ptr), _rt.cudaFreeHost, c.ptr),
                     _host_ptr, None),
    # A captured allocation is a node of the graph: it never exists once the graph is destroyed.
    "cudaMallocAsync(capturing)": (lambda c: _rt.cudaMallocAsync(SIZE, c.cap), None, None),
    "cudaMallocAsync(other)": (lambda c: c.keep(_rt.cudaMallocAsync(SIZE, c.other), c.free_async),
                               None, None),
    "cudaFreeAsync(capturing)": (_free_async_in_capture, _async_ptr, None),
    "cudaFreeAsync(other)": (lambda c: c.retry(_rt.cudaFreeAsync(c.ptr, c.other), c.free_async,
                                               c.ptr), _async_ptr, None),
    "cudaMemcpy": (lambda c: _rt.cudaMemcpy(c.env.host.ctypes.data, c.env.buf, 64, _D2H),
                   None, None),
    "cudaMemset": (lambda c: _rt.cudaMemset(c.env.buf, 0, 64), None, None),
    "cudaStreamSynchronize(capturing)": (lambda c: _rt.cudaStreamSynchronize(c.cap), None, None),
    "cudaStreamSynchronize(other)": (lambda c: _rt.cudaStreamSynchronize(c.other), None, None),
    "cudaStreamQuery(capturing)": (lambda c: _rt.cudaStreamQuery(c.cap), None, None),
    "cudaStreamQuery(other)": (lambda c: _rt.cudaStreamQuery(c.other), None, None),
    "cudaEventSynchronize(captured)": (lambda c: _rt.cudaEventSynchronize(c.event), _event,
                                       _record_in_capture),
    "cudaEventSynchronize(outside)": (lambda c: _rt.cudaEventSynchronize(c.event),
                                      _outside_event, None),
    "cudaEventQuery(captured)": (lambda c: _rt.cudaEventQuery(c.event), _event,
                                 _record_in_capture),
    "cudaEventQuery(outside)": (lambda c: _rt.cudaEventQuery(c.event), _outside_event, None),
    "cudaStreamCreate": (lambda c: c.keep(_rt.cudaStreamCreate(), _rt.cudaStreamDestroy),
                         None, None),
    "cudaStreamDestroy": (lambda c: c.retry(_rt.cudaStreamDestroy(c.stream),
                                            _rt.cudaStreamDestroy, c.stream), _stream, None),
    "cudaEventCreate": (lambda c: c.keep(_rt.cudaEventCreate(), _rt.cudaEventDestroy),
                        None, None),
    "cudaEventDestroy": (lambda c: c.retry(_rt.cudaEventDestroy(c.event), _rt.cudaEventDestroy,
                                           c.event), _bare_event, None),
    "launch(legacy stream)": (_legacy_launch, None, None),
    "cudaDeviceSynchronize": (lambda c: _rt.cudaDeviceSynchronize(), None, None),
    "cudaStreamEndCapture": (lambda c: c.keep(_rt.cudaStreamEndCapture(c.cap),
                                              _rt.cudaGraphDestroy), None, None),
}


def _describe(exc) -> str:
    if isinstance(exc, labkit.CudaError):
        return exc.name
    if isinstance(exc, NotImplementedError):
        return "NotImplementedError"
    return f"{type(exc).__name__}: {exc}"


def _make_call(fn, c) -> str:
    try:
        return _name(fn(c)[0])
    except Exception as exc:   # a raised launch error is this cell's result, not the probe's
        return _describe(exc)


def _end_open_capture(stream):
    if _rt.cudaStreamIsCapturing(stream)[1] != _NOT_CAPTURING:
        err, g = _rt.cudaStreamEndCapture(stream)
        if err == _OK and g is not None:
            _rt.cudaGraphDestroy(g)


def _undo(c, rec):
    errors = []
    for undo in c.after:
        try:
            err = undo()[0]
            if err != _OK:
                errors.append(_name(err))
        except Exception as exc:
            errors.append(_describe(exc))
    if errors:
        rec["cleanup"] = errors
    _end_open_capture(c.cap)
    _rt.cudaGetLastError()
    err = _rt.cudaDeviceSynchronize()[0]   # fails while any capture is open, or after a sticky error
    _rt.cudaGetLastError()
    rec["clean"] = "ok" if err == _OK else f"cudaDeviceSynchronize after the cell: {_name(err)}"


class Hung(RuntimeError):
    """The other thread did not return: the process cannot be trusted for more cells."""


def run_cell(call: str, mode: str, where: str, env: Env) -> dict:
    """Run one cell of the matrix on the active backend and return its record.

    Parameters
    ----------
    call : str
        A key of `CALLS`, e.g. ``"cudaMalloc"`` or ``"cudaStreamSynchronize(other)"``.
    mode : str
        The capture's mode: ``"global"``, ``"thread_local"`` or ``"relaxed"``.
    where : str
        One of `WHERES`: the thread that makes the call, and whether it exchanged its own
        mode to relaxed first.
    env : Env
        The shared objects, from `prepare`.

    Returns
    -------
    dict
        ``call``, ``mode``, ``where`` and the fields of the module docstring.

    Raises
    ------
    Hung
        When the other thread did not return within 30 s (its record is ``args[0]``).
    """
    if call not in CALLS or mode not in MODES or where not in WHERES:
        raise ValueError(f"no cell ({call!r}, {mode!r}, {where!r}): choose the call from "
                         f"{list(CALLS)}, the mode from {list(MODES)}, where from {list(WHERES)}")
    fn, before, during = CALLS[call]
    c, rec = _Cell(env), {"call": call, "mode": mode, "where": where}
    try:
        if before is not None:
            before(c)
    except Exception as exc:
        rec["rc"] = "setup failed: " + _describe(exc)
        _undo(c, rec)
        return rec
    err = _rt.cudaStreamBeginCapture(env.cap, MODES[mode])[0]
    if err != _OK:
        rec["rc"] = f"setup failed: cudaStreamBeginCapture {_name(err)}"
        _undo(c, rec)
        return rec
    add_one[GRID, BLOCK, env.cap](env.arr)   # one node, so a good end has something to return
    if during is not None:
        during(c)

    def body():
        x = _rt.cudaThreadExchangeStreamCaptureMode
        if where.endswith("_relaxed"):
            rec["exchange"] = _name(x(MODES["relaxed"])[1])
        rec["rc"] = _make_call(fn, c)
        rec["peek"] = _name(_rt.cudaPeekAtLastError()[0])
        if where.endswith("_relaxed"):   # back to every thread's default, whatever came back
            rec["exchange_back"] = _name(x(MODES["global"])[1])
        if where.startswith("other"):
            rec["thread_last_error"] = _name(_rt.cudaGetLastError()[0])

    if where.startswith("capturing"):
        body()
    else:
        t = threading.Thread(target=body, name=f"capture-mode cell {call}", daemon=True)
        t.start()
        t.join(JOIN_S)
        if t.is_alive():
            rec["rc"] = f"hung: no return in {JOIN_S} s"
            raise Hung(rec)
    err, st = _rt.cudaStreamIsCapturing(env.cap)
    rec["status"] = _name(st) if err == _OK else _name(err)
    info = _rt.cudaStreamGetCaptureInfo(env.cap)
    rec["info"] = _name(info[1]) if info[0] == _OK else _name(info[0])
    err, g = _rt.cudaStreamEndCapture(env.cap)
    rec["end"], rec["graph"] = _name(err), g is not None and int(g) != 0
    if rec["graph"]:
        _rt.cudaGraphDestroy(g)
    rec["last_error"] = _name(_rt.cudaGetLastError()[0])
    _undo(c, rec)
    return rec


def exchange_semantics() -> dict:
    """What cudaThreadExchangeStreamCaptureMode returns: per CUDA, the calling thread's previous
    mode (every thread starts in global). Leaves the calling thread in global."""
    got, x = {}, _rt.cudaThreadExchangeStreamCaptureMode
    got["main sets relaxed, gets"] = _name(x(MODES["relaxed"])[1])
    got["main sets thread_local, gets"] = _name(x(MODES["thread_local"])[1])

    def other():
        got["new thread sets relaxed, gets"] = _name(x(MODES["relaxed"])[1])
        got["new thread sets global, gets"] = _name(x(MODES["global"])[1])
    t = threading.Thread(target=other)
    t.start()
    t.join(JOIN_S)
    got["main sets global, gets"] = _name(x(MODES["global"])[1])
    return got


def prepare() -> Env:
    """Make the shared objects and use every call once outside any capture, so no cell pays a
    first use (a module load, a memory pool's creation) inside its capture."""
    env = Env()
    add_one[GRID, BLOCK, env.cap](env.arr)
    _ok((_rt.cudaStreamSynchronize(env.cap)[0],))    # the legacy stream does not wait for it
    add_one[GRID, BLOCK, 0](env.arr)
    c = _Cell(env)
    for warm in (lambda: _rt.cudaFree(_ok(_rt.cudaMalloc(SIZE))),
                 lambda: _rt.cudaFreeHost(_ok(_rt.cudaMallocHost(SIZE))),
                 lambda: c.free_async(_ok(_rt.cudaMallocAsync(SIZE, env.other))),
                 lambda: _rt.cudaMemset(env.buf, 0, 64),
                 lambda: _rt.cudaMemcpy(env.host.ctypes.data, env.buf, 64, _D2H),  # staging buffer
                 lambda: _rt.cudaStreamDestroy(_ok(_rt.cudaStreamCreate())),
                 lambda: _rt.cudaEventDestroy(_ok(_rt.cudaEventCreate()))):
        try:
            warm()
        except NotImplementedError:
            pass   # the cells record it
    _ok((_rt.cudaDeviceSynchronize()[0],))
    _rt.cudaGetLastError()
    return env


def measure(calls=None, modes=None, wheres=None) -> dict:
    """Run cells of the matrix on the active backend, in one process.

    Parameters
    ----------
    calls, modes, wheres : sequence of str, optional
        Which rows, modes and columns (default: all, in `CALLS`, `MODES`, `WHERES` order).

    Returns
    -------
    dict
        ``exchange`` (`exchange_semantics`) and ``cells`` (a list of `run_cell` records); and
        ``aborted`` (why) when a call from the other thread hung and later cells were not run.
    """
    from numba import cuda   # after labkit: on "sim" labkit has set NUMBA_ENABLE_CUDASIM

    calls = list(CALLS) if calls is None else list(calls)
    modes = list(MODES) if modes is None else list(modes)
    wheres = list(WHERES) if wheres is None else list(wheres)
    log = {"exchange": None, "cells": []}
    with cuda.defer_cleanup():   # numba must not free arrays (cuMemFree) inside a capture
        env = prepare()
        log["exchange"] = exchange_semantics()
        try:
            for call in calls:
                for mode in modes:
                    for where in wheres:
                        log["cells"].append(run_cell(call, mode, where, env))
        except Hung as exc:
            log["cells"].append(exc.args[0])
            log["aborted"] = f"{exc.args[0]['call']} hung; later cells not run"
        finally:
            for s in (env.cap, env.other):
                _rt.cudaStreamDestroy(s)
    return log


_SHORT = {"cudaStreamCaptureStatusActive": "A", "cudaStreamCaptureStatusInvalidated": "I",
          "cudaStreamCaptureStatusNone": "N"}


def _num(name: str) -> str:
    code = getattr(_E, name, None) if name.startswith("cuda") else None
    if code is not None:
        return str(int(code))
    return "NI" if name == "NotImplementedError" else name.split(":")[0][:9]


def outcome(rec: dict) -> str:
    """A cell as ``"rc/status/end"``: the call's code, the capture's status after it (A active,
    I invalidated, N none) and cudaStreamEndCapture's code, e.g. ``"900/I/901"``; ``NI``: not in
    this backend; a trailing ``!``: the setup failed; ``*``: the cell left the process unclean."""
    if "end" not in rec:
        return _num(rec["rc"].removeprefix("setup failed: ")) + "!"
    dirty = "" if rec.get("clean") == "ok" else "*"
    return f"{_num(rec['rc'])}/{_SHORT.get(rec['status'], '?')}/{_num(rec['end'])}{dirty}"


def table(cells) -> str:
    """One block per mode: a row per call, a column per where, each cell its `outcome`."""
    by_key = {(r["call"], r["mode"], r["where"]): r for r in cells}
    lines = []
    for mode in dict.fromkeys(r["mode"] for r in cells):
        lines.append(f"\n{mode:<34}" + "".join(f"{w:>18}" for w in WHERES))
        for call in dict.fromkeys(r["call"] for r in cells):
            row = [outcome(by_key[call, mode, w]) if (call, mode, w) in by_key else "-"
                   for w in WHERES]
            lines.append(f"{call:<34}" + "".join(f"{x:>18}" for x in row))
    return "\n".join(lines)


def codes_from() -> str:
    """Where the matrix's error codes come from, for its title: the active backend's runtime."""
    if is_gpu:
        return f"error codes returned by the CUDA runtime on {labkit.device_name()}"
    return "error codes returned by the simulator's runtime (a conformance test holds it to a GPU's)"


def plot_matrix(cells, source: str | None = None, **kwargs):
    """`labkit.course.capture_figure.capture_matrix` of measured cells, columns in `WHERES`
    order, each square the call's code as `outcome` writes it, titled by where the codes come
    from (``source``; `codes_from()` by default)."""
    return capture_matrix(cells, codes_from() if source is None else source,
                          wheres=WHERES, code=lambda rec: outcome(rec).split("/")[0], **kwargs)

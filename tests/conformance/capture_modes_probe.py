"""Probe the stream-capture mode matrix: which call, under which mode, from which thread.

Run: ``PYTHONPATH=$PWD LABKIT_BACKEND=cuda|sim python tests/conformance/capture_modes_probe.py
--out LOG.json`` (``--only CALL,CALL`` runs some calls; ``--isolate`` runs each call in its own
process, for when one call leaves the process unusable). Only `labkit.rt` and one labkit kernel
are used, so the same cells run on a GPU and on the simulator.

A cell is (call, mode, where). Every cell begins a capture on a non-blocking stream in ``mode``
from the main thread, launches one kernel into it, makes ``call`` from ``where``, then records:

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
  succeeds (else what was wrong: the cells after it are suspect; rerun with --isolate).

Wheres: ``capturing`` (the main thread, which began the capture), ``capturing_relaxed`` (it,
after exchanging its mode to relaxed), ``other`` (a new threading.Thread while the capture is
open), ``other_relaxed`` (that thread, after exchanging to relaxed). Calls are ordered so the
ones most likely to disturb the process (legacy launch, device sync, ending from another
thread) come last. A conformance test reuses `prepare`, `run_cell` and `exchange_semantics`.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import labkit  # before numba.cuda: on "sim" it sets NUMBA_ENABLE_CUDASIM
import numpy as np
from labkit import CudaError, rt
from numba import cuda

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))   # tests/kernels.py
from kernels import BLOCK, GRID, N, add_one  # noqa: E402

E = rt.cudaError_t
OK = E.cudaSuccess
_M = rt.cudaStreamCaptureMode
MODES = {"global": _M.cudaStreamCaptureModeGlobal,
         "thread_local": _M.cudaStreamCaptureModeThreadLocal,
         "relaxed": _M.cudaStreamCaptureModeRelaxed}
NOT_CAPTURING = rt.cudaStreamCaptureStatus.cudaStreamCaptureStatusNone
WHERES = ("capturing", "capturing_relaxed", "other", "other_relaxed")
SIZE, JOIN_S = 4096, 30
D2H = rt.cudaMemcpyKind.cudaMemcpyDeviceToHost
FIELDS = ("rc", "peek", "exchange", "exchange_back", "thread_last_error", "status", "info",
          "end", "graph", "last_error")   # what a conformance test compares with the GPU's log


def _name(x) -> str:
    return getattr(x, "name", str(x))


def _ok(result):
    """A setup step's value; raises if it failed, so no cell measures a broken setup."""
    if result[0] != OK:
        raise RuntimeError(f"setup call failed: {_name(result[0])}")
    return result[1] if len(result) > 1 else None


class Env:
    """What every cell shares: the capturing stream, another stream, a device buffer."""

    def __init__(self):
        self.cap = _ok(rt.cudaStreamCreateWithFlags(rt.cudaStreamNonBlocking))
        self.other = _ok(rt.cudaStreamCreateWithFlags(rt.cudaStreamNonBlocking))
        self.arr = labkit.to_device(np.zeros(N, np.float32))
        self.buf = self.arr.device_ctypes_pointer.value
        self.host = np.zeros(16, np.float32)


class Cell:
    """One cell's objects; ``after`` holds what undoes them once the capture has ended."""

    def __init__(self, env: Env):
        self.env, self.cap, self.other = env, env.cap, env.other
        self.after, self.ptr, self.event, self.stream = [], None, None, None

    def keep(self, result, undo):
        """Undo ``result``'s value after the capture, if the call made one; pass result on."""
        if result[0] == OK:
            self.after.append(lambda v=result[1]: undo(v))
        return result

    def retry(self, result, undo, *args):
        """Run ``undo(*args)`` after the capture unless ``result`` succeeded; pass it on."""
        if result[0] != OK:
            self.after.append(lambda: undo(*args))
        return result

    def free_async(self, ptr):
        err = rt.cudaFreeAsync(ptr, self.other)[0]
        return (err if err != OK else rt.cudaStreamSynchronize(self.other)[0],)


# ------------------------------------------------------------------ setups (main thread)

def _device_ptr(c):
    c.ptr = _ok(rt.cudaMalloc(SIZE))


def _host_ptr(c):
    c.ptr = _ok(rt.cudaMallocHost(SIZE))


def _async_ptr(c):
    c.ptr = _ok(rt.cudaMallocAsync(SIZE, c.other))
    _ok(rt.cudaStreamSynchronize(c.other))


def _bare_event(c):
    c.event = _ok(rt.cudaEventCreate())


def _event(c):
    _bare_event(c)
    c.after.append(lambda e=c.event: rt.cudaEventDestroy(e))


def _outside_event(c):
    _event(c)
    _ok(rt.cudaEventRecord(c.event, c.other))
    _ok(rt.cudaStreamSynchronize(c.other))


def _record_in_capture(c):   # runs after the capture began
    _ok(rt.cudaEventRecord(c.event, c.cap))


def _stream(c):
    c.stream = _ok(rt.cudaStreamCreate())


def _free_async_in_capture(c):
    c.after.append(lambda: c.free_async(c.ptr))   # a captured free never runs: free it after
    return rt.cudaFreeAsync(c.ptr, c.cap)


def _legacy_launch(c):
    add_one[GRID, BLOCK, 0](c.env.arr)
    return (OK,)


# name: (call in the calling thread, setup before the capture, setup inside it)
CALLS = {
    "cudaMalloc": (lambda c: c.keep(rt.cudaMalloc(SIZE), rt.cudaFree), None, None),
    "cudaFree": (lambda c: c.retry(rt.cudaFree(c.ptr), rt.cudaFree, c.ptr), _device_ptr, None),
    "cudaMallocHost": (lambda c: c.keep(rt.cudaMallocHost(SIZE), rt.cudaFreeHost), None, None),
    "cudaFreeHost": (lambda c: c.retry(rt.cudaFreeHost(c.ptr), rt.cudaFreeHost, c.ptr),
                     _host_ptr, None),
    # A captured allocation is a node of the graph: it never exists once the graph is destroyed.
    "cudaMallocAsync(capturing)": (lambda c: rt.cudaMallocAsync(SIZE, c.cap), None, None),
    "cudaMallocAsync(other)": (lambda c: c.keep(rt.cudaMallocAsync(SIZE, c.other), c.free_async),
                               None, None),
    "cudaFreeAsync(capturing)": (_free_async_in_capture, _async_ptr, None),
    "cudaFreeAsync(other)": (lambda c: c.retry(rt.cudaFreeAsync(c.ptr, c.other), c.free_async,
                                               c.ptr), _async_ptr, None),
    "cudaMemcpy": (lambda c: rt.cudaMemcpy(c.env.host.ctypes.data, c.env.buf, 64, D2H), None, None),
    "cudaMemset": (lambda c: rt.cudaMemset(c.env.buf, 0, 64), None, None),
    "cudaStreamSynchronize(capturing)": (lambda c: rt.cudaStreamSynchronize(c.cap), None, None),
    "cudaStreamSynchronize(other)": (lambda c: rt.cudaStreamSynchronize(c.other), None, None),
    "cudaStreamQuery(capturing)": (lambda c: rt.cudaStreamQuery(c.cap), None, None),
    "cudaStreamQuery(other)": (lambda c: rt.cudaStreamQuery(c.other), None, None),
    "cudaEventSynchronize(captured)": (lambda c: rt.cudaEventSynchronize(c.event), _event,
                                       _record_in_capture),
    "cudaEventSynchronize(outside)": (lambda c: rt.cudaEventSynchronize(c.event), _outside_event,
                                      None),
    "cudaEventQuery(captured)": (lambda c: rt.cudaEventQuery(c.event), _event, _record_in_capture),
    "cudaEventQuery(outside)": (lambda c: rt.cudaEventQuery(c.event), _outside_event, None),
    "cudaStreamCreate": (lambda c: c.keep(rt.cudaStreamCreate(), rt.cudaStreamDestroy), None, None),
    "cudaStreamDestroy": (lambda c: c.retry(rt.cudaStreamDestroy(c.stream), rt.cudaStreamDestroy,
                                            c.stream), _stream, None),
    "cudaEventCreate": (lambda c: c.keep(rt.cudaEventCreate(), rt.cudaEventDestroy), None, None),
    "cudaEventDestroy": (lambda c: c.retry(rt.cudaEventDestroy(c.event), rt.cudaEventDestroy,
                                           c.event), _bare_event, None),
    "launch(legacy stream)": (_legacy_launch, None, None),
    "cudaDeviceSynchronize": (lambda c: rt.cudaDeviceSynchronize(), None, None),
    "cudaStreamEndCapture": (lambda c: c.keep(rt.cudaStreamEndCapture(c.cap), rt.cudaGraphDestroy),
                             None, None),
}


def _describe(exc) -> str:
    if isinstance(exc, CudaError):
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
    if rt.cudaStreamIsCapturing(stream)[1] != NOT_CAPTURING:
        err, g = rt.cudaStreamEndCapture(stream)
        if err == OK and g is not None:
            rt.cudaGraphDestroy(g)


def _undo(c, rec):
    errors = []
    for undo in c.after:
        try:
            err = undo()[0]
            if err != OK:
                errors.append(_name(err))
        except Exception as exc:
            errors.append(_describe(exc))
    if errors:
        rec["cleanup"] = errors
    _end_open_capture(c.cap)
    rt.cudaGetLastError()
    err = rt.cudaDeviceSynchronize()[0]   # fails while any capture is open, or after a sticky error
    rt.cudaGetLastError()
    rec["clean"] = "ok" if err == OK else f"cudaDeviceSynchronize after the cell: {_name(err)}"


class Hung(RuntimeError):
    """The other thread did not return: the process cannot be trusted for more cells."""


def run_cell(call: str, mode: str, where: str, env: Env) -> dict:
    """Run one cell of the matrix and return its record (see the module docstring)."""
    fn, before, during = CALLS[call]
    c, rec = Cell(env), {"call": call, "mode": mode, "where": where}
    try:
        if before is not None:
            before(c)
    except Exception as exc:
        rec["rc"] = "setup failed: " + _describe(exc)
        _undo(c, rec)
        return rec
    err = rt.cudaStreamBeginCapture(env.cap, MODES[mode])[0]
    if err != OK:
        rec["rc"] = f"setup failed: cudaStreamBeginCapture {_name(err)}"
        _undo(c, rec)
        return rec
    add_one[GRID, BLOCK, env.cap](env.arr)   # one node, so a good end has something to return
    if during is not None:
        during(c)

    def body():
        if where.endswith("_relaxed"):
            rec["exchange"] = _name(rt.cudaThreadExchangeStreamCaptureMode(MODES["relaxed"])[1])
        rec["rc"] = _make_call(fn, c)
        rec["peek"] = _name(rt.cudaPeekAtLastError()[0])
        if where.endswith("_relaxed"):   # back to every thread's default, whatever came back
            rec["exchange_back"] = _name(rt.cudaThreadExchangeStreamCaptureMode(MODES["global"])[1])
        if where.startswith("other"):
            rec["thread_last_error"] = _name(rt.cudaGetLastError()[0])

    if where.startswith("capturing"):
        body()
    else:
        t = threading.Thread(target=body, name=f"probe {call}", daemon=True)
        t.start()
        t.join(JOIN_S)
        if t.is_alive():
            rec["rc"] = f"hung: no return in {JOIN_S} s"
            raise Hung(rec)
    err, st = rt.cudaStreamIsCapturing(env.cap)
    rec["status"] = _name(st) if err == OK else _name(err)
    info = rt.cudaStreamGetCaptureInfo(env.cap)
    rec["info"] = _name(info[1]) if info[0] == OK else _name(info[0])
    err, g = rt.cudaStreamEndCapture(env.cap)
    rec["end"], rec["graph"] = _name(err), g is not None and int(g) != 0
    if rec["graph"]:
        rt.cudaGraphDestroy(g)
    rec["last_error"] = _name(rt.cudaGetLastError()[0])
    _undo(c, rec)
    return rec


def exchange_semantics() -> dict:
    """What cudaThreadExchangeStreamCaptureMode returns: per CUDA, the calling thread's previous
    mode (every thread starts in global). Leaves the main thread in global."""
    got, x = {}, rt.cudaThreadExchangeStreamCaptureMode
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
    add_one[GRID, BLOCK, 0](env.arr)
    c = Cell(env)
    for warm in (lambda: rt.cudaFree(_ok(rt.cudaMalloc(SIZE))),
                 lambda: rt.cudaFreeHost(_ok(rt.cudaMallocHost(SIZE))),
                 lambda: c.free_async(_ok(rt.cudaMallocAsync(SIZE, env.other))),
                 lambda: rt.cudaMemset(env.buf, 0, 64),
                 lambda: rt.cudaMemcpy(env.host.ctypes.data, env.buf, 64, D2H),   # staging buffer
                 lambda: rt.cudaStreamDestroy(_ok(rt.cudaStreamCreate())),
                 lambda: rt.cudaEventDestroy(_ok(rt.cudaEventCreate()))):
        try:
            warm()
        except NotImplementedError:
            pass   # the cells record it
    _ok((rt.cudaDeviceSynchronize()[0],))
    rt.cudaGetLastError()
    return env


def header() -> dict:
    from importlib import metadata

    def version(dist):
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            return None
    return {"backend": labkit.backend, "backend_reason": labkit.backend_reason,
            "gpu": labkit.device_name(), "driver_version": rt.cudaDriverGetVersion()[1],
            "runtime_version": rt.cudaRuntimeGetVersion()[1],
            "cuda_bindings": version("cuda-bindings"), "numba_cuda": version("numba-cuda"),
            "numba": version("numba"), "python": platform.python_version(),
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}


def probe(calls) -> dict:
    log = {"header": header(), "exchange": None, "cells": []}
    with cuda.defer_cleanup():   # numba must not free arrays (cuMemFree) inside a capture
        env = prepare()
        log["exchange"] = exchange_semantics()
        try:
            for call in calls:
                for mode in MODES:
                    for where in WHERES:
                        log["cells"].append(run_cell(call, mode, where, env))
        except Hung as exc:
            log["cells"].append(exc.args[0])
            log["aborted"] = f"{exc.args[0]['call']} hung; later cells not run (use --isolate)"
    return log


def probe_isolated(calls) -> dict:
    """Each call in its own process: one that breaks the context cannot touch the others."""
    log = {"header": header(), "exchange": None, "cells": []}
    for call in calls:
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "part.json"
            cmd = [sys.executable, __file__, "--quiet", "--only", call, "--out", str(out)]
            p = subprocess.run(cmd, capture_output=True, text=True, env=os.environ)
            part = json.loads(out.read_text()) if out.exists() else None
        if part is None:
            log.setdefault("crashed", {})[call] = f"exit {p.returncode}: {p.stderr[-400:]}"
            continue
        log["exchange"] = log["exchange"] or part["exchange"]
        log["cells"] += part["cells"]
        if "aborted" in part:
            log["aborted"] = part["aborted"]
    return log


def table(log) -> str:
    """One block per mode: a row per call, a column per where; 'rc/status/end' as numbers."""
    def num(name):
        code = getattr(E, name, None) if name.startswith("cuda") else None
        if code is not None:
            return str(int(code))
        return "NI" if name == "NotImplementedError" else name.split(":")[0][:9]
    short = {"cudaStreamCaptureStatusActive": "A", "cudaStreamCaptureStatusInvalidated": "I",
             "cudaStreamCaptureStatusNone": "N"}
    h = log["header"]
    lines = [f"backend {h['backend']} on {h['gpu']}, driver {h['driver_version']}, runtime "
             f"{h['runtime_version']}; cell = call's rc / capture status after (A active, "
             "I invalidated, N none) / cudaStreamEndCapture's rc; NI: not in this backend",
             f"exchange: {log['exchange']}"]
    cells = {(r["call"], r["mode"], r["where"]): r for r in log["cells"]}
    for mode in MODES:
        lines.append(f"\n{mode:<34}" + "".join(f"{w:>18}" for w in WHERES))
        for call in dict.fromkeys(r["call"] for r in log["cells"]):
            row = []
            for where in WHERES:
                r = cells.get((call, mode, where))
                if r is None:
                    row.append("-")
                elif "end" not in r:
                    row.append(num(r["rc"].removeprefix("setup failed: ")) + "!")
                else:
                    dirty = "" if r.get("clean") == "ok" else "*"
                    status = short.get(r["status"], "?")
                    row.append(f"{num(r['rc'])}/{status}/{num(r['end'])}{dirty}")
            lines.append(f"{call:<34}" + "".join(f"{x:>18}" for x in row))
    lines.append("\n'!': setup failed (shown: why); '*': the cell did not leave the process clean")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="where to write the JSON log")
    ap.add_argument("--only", help="comma-separated call names (default: all, in order)")
    ap.add_argument("--isolate", action="store_true", help="one process per call")
    ap.add_argument("--quiet", action="store_true", help="no table on stdout")
    args = ap.parse_args(argv)
    calls = list(CALLS) if not args.only else args.only.split(",")
    unknown = [c for c in calls if c not in CALLS]
    if unknown:
        ap.error(f"unknown calls {unknown}; choose from {list(CALLS)}")
    log = probe_isolated(calls) if args.isolate else probe(calls)
    Path(args.out).write_text(json.dumps(log, indent=1) + "\n")
    if not args.quiet:
        print(table(log))
    return 1 if "aborted" in log or "crashed" in log else 0


if __name__ == "__main__":
    sys.exit(main())

"""Probe the stream-capture mode matrix on the current backend and write its log.

Run: ``PYTHONPATH=$PWD LABKIT_BACKEND=cuda|sim python tests/conformance/capture_modes_probe.py
--out LOG.json`` (``--only CALL,CALL`` runs some calls; ``--isolate`` runs each call in its own
process, for when one call leaves the process unusable). It prints the table, one block per
mode. The cells, what each records and the table's notation are `labkit.course.capture_modes`'s (the
notebooks measure part of the matrix through it, so it lives in the package); this script adds
the log's header (backend, GPU, driver and versions, date) and the command line.

The H200's log is ``capture_modes_h200.json`` (its table ``capture_modes_h200.txt``);
``test_capture_modes.py`` holds every backend to it, cell by cell.
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
from pathlib import Path

import labkit  # before numba.cuda: on "sim" it sets NUMBA_ENABLE_CUDASIM
from labkit import rt
from labkit.course import capture_modes


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
    log = {"header": header()}
    log.update(capture_modes.measure(calls))
    if "aborted" in log:
        log["aborted"] += " (use --isolate)"
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
    """The log's header line, the exchange semantics, and `capture_modes.table` of its cells."""
    h = log["header"]
    return "\n".join([
        f"backend {h['backend']} on {h['gpu']}, driver {h['driver_version']}, runtime "
        f"{h['runtime_version']}; cell = call's rc / capture status after (A active, "
        "I invalidated, N none) / cudaStreamEndCapture's rc; NI: not in this backend",
        f"exchange: {log['exchange']}",
        capture_modes.table(log["cells"]),
        "\n'!': setup failed (shown: why); '*': the cell did not leave the process clean"])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="where to write the JSON log")
    ap.add_argument("--only", help="comma-separated call names (default: all, in order)")
    ap.add_argument("--isolate", action="store_true", help="one process per call")
    ap.add_argument("--quiet", action="store_true", help="no table on stdout")
    args = ap.parse_args(argv)
    calls = list(capture_modes.CALLS) if not args.only else args.only.split(",")
    unknown = [c for c in calls if c not in capture_modes.CALLS]
    if unknown:
        ap.error(f"unknown calls {unknown}; choose from {list(capture_modes.CALLS)}")
    log = probe_isolated(calls) if args.isolate else probe(calls)
    Path(args.out).write_text(json.dumps(log, indent=1) + "\n")
    if not args.quiet:
        print(table(log))
    return 1 if "aborted" in log or "crashed" in log else 0


if __name__ == "__main__":
    sys.exit(main())

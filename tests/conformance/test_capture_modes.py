"""Every cell of the H200's capture-mode matrix, run on the current backend, field by field.

The log (``capture_modes_h200.json``, written by ``capture_modes_probe.py`` on the H200) is the
truth: each test runs one (call, mode, where) cell through `labkit.course.capture_modes.run_cell` and
compares every field the probe records (the call's code, the last errors of both threads, the
mode exchanges, the capture's status, the end's code and graph, a clean process after).
"""
from __future__ import annotations

import json
from pathlib import Path

import labkit  # noqa: F401  (before numba.cuda: on "sim" it sets NUMBA_ENABLE_CUDASIM)
import pytest
from labkit.course import capture_modes as cm
from numba import cuda

LOG = json.loads((Path(__file__).parent / "capture_modes_h200.json").read_text())
CELLS = LOG["cells"]


@pytest.fixture(scope="module")
def env():
    with cuda.defer_cleanup():   # numba must not free arrays (cuMemFree) inside a capture
        yield cm.prepare()


def _id(cell) -> str:
    return f"{cell['call']}-{cell['mode']}-{cell['where']}"


def test_the_log_is_a_clean_gpu_run_of_the_whole_matrix():
    assert LOG["header"]["backend"] == "cuda", "the log must come from a GPU, not the simulator"
    assert "aborted" not in LOG and "crashed" not in LOG
    want = {(c, m, w) for c in cm.CALLS for m in cm.MODES for w in cm.WHERES}
    assert {(r["call"], r["mode"], r["where"]) for r in CELLS} == want
    assert [_id(r) for r in CELLS if r.get("clean") != "ok"] == []


def test_exchanging_the_capture_mode_returns_the_calling_threads_previous_mode():
    assert cm.exchange_semantics() == LOG["exchange"]


def test_a_new_thread_starts_in_global_mode_whatever_its_parent_set():
    import threading

    x, got = labkit.rt.cudaThreadExchangeStreamCaptureMode, {}
    assert x(cm.MODES["relaxed"])[0] == labkit.rt.cudaError_t.cudaSuccess
    try:
        t = threading.Thread(target=lambda: got.update(child=x(cm.MODES["global"])[1]))
        t.start()
        t.join(cm.JOIN_S)
    finally:
        parent = x(cm.MODES["global"])[1]
    assert got["child"] == cm.MODES["global"]
    assert parent == cm.MODES["relaxed"]


@pytest.mark.parametrize("logged", CELLS, ids=_id)
def test_the_cell_matches_the_h200(logged, env):
    got = cm.run_cell(logged["call"], logged["mode"], logged["where"], env)
    diff = [f"{f}: H200 {logged.get(f)}, here {got.get(f)}"
            for f in cm.FIELDS if got.get(f) != logged.get(f)]
    assert not diff, (f"{_id(logged)}: the H200 gives {cm.outcome(logged)}, here "
                      f"{cm.outcome(got)}; " + "; ".join(diff))


def test_the_last_error_is_the_calling_threads_own(res):
    """CUDA documents the last error as per host thread. The log cannot show it (the other
    thread reads its own error, which clears it), so this test is its check on a GPU."""
    import threading

    rt, E, seen = labkit.rt, labkit.rt.cudaError_t, {}
    s = res.stream()
    rt.cudaGetLastError()
    assert rt.cudaStreamEndCapture(s) == (E.cudaErrorIllegalState, None)   # not capturing

    def other():
        seen["peek"] = rt.cudaPeekAtLastError()[0]
        rt.cudaStreamEndCapture(s)          # its own 401, which the main thread must not get
        seen["own"] = rt.cudaGetLastError()[0]
    t = threading.Thread(target=other)
    t.start()
    t.join(cm.JOIN_S)
    assert seen == {"peek": E.cudaSuccess, "own": E.cudaErrorIllegalState}
    assert rt.cudaGetLastError() == (E.cudaErrorIllegalState,)
    assert rt.cudaGetLastError() == (E.cudaSuccess,)

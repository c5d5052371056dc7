"""Fixtures for the conformance suite: one file of scenarios, run unchanged on both backends.

Every test gets `res`, which creates the streams, events, graphs and executables it needs and,
at teardown, ends any capture still open (so one test's leak cannot poison the next, as an
open capture does on a real GPU), destroys everything, and fails the test that leaked.
"""
from __future__ import annotations

import sys
from pathlib import Path

import labkit  # before numba.cuda: on "sim" it sets NUMBA_ENABLE_CUDASIM
import pytest
from labkit import rt
from numba import cuda

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))   # tests/kernels.py

OK = rt.cudaError_t.cudaSuccess
NOT_CAPTURING = rt.cudaStreamCaptureStatus.cudaStreamCaptureStatusNone
PER_THREAD_STREAM = 2


def pytest_report_header(config):
    return f"labkit backend: {labkit.backend} ({labkit.backend_reason}); device: {labkit.device_name()}"


class Resources:
    """What a test created, so teardown can undo it in the right order."""

    def __init__(self):
        self.streams, self.events, self.graphs, self.execs, self.pinned = [], [], [], [], []

    def stream(self, nonblocking: bool = True):
        """A raw cudaStream_t: non-blocking, or a blocking one from cudaStreamCreate."""
        err, s = (rt.cudaStreamCreateWithFlags(rt.cudaStreamNonBlocking) if nonblocking
                  else rt.cudaStreamCreate())
        assert err == OK, err
        self.streams.append(s)
        return s

    def event(self, timing: bool = True):
        err, e = rt.cudaEventCreateWithFlags(rt.cudaEventDefault if timing
                                             else rt.cudaEventDisableTiming)
        assert err == OK, err
        self.events.append(e)
        return e

    def graph(self, g):
        """Own a raw cudaGraph_t (ignored when None, as after a failed end)."""
        if g is not None and int(g) != 0:
            self.graphs.append(g)
        return g

    def exec(self, ge):
        if ge is not None and int(ge) != 0:
            self.execs.append(ge)
        return ge

    def pinned_ptr(self, ptr):
        self.pinned.append(ptr)
        return ptr

    def teardown(self) -> list[str]:
        leaks = []
        watched = [(s, f"stream {int(s):#x}") for s in self.streams]
        watched.append((PER_THREAD_STREAM, "the per-thread stream"))
        for s, name in watched:
            err, status = rt.cudaStreamIsCapturing(s)
            if err == OK and status != NOT_CAPTURING:
                leaks.append(f"{name} was left {status.name}")
        # End what is open; a side stream answers 903 and the origin is ended on the next pass.
        for _ in range(3):
            for s, _name in watched:
                err, status = rt.cudaStreamIsCapturing(s)
                if err == OK and status != NOT_CAPTURING:
                    # the graph is not destroyed: a capture into a conditional's body graph
                    # returns that body, which its node owns (destroying it crashed the H200)
                    rt.cudaStreamEndCapture(s)
        rt.cudaGetLastError()
        for ge in self.execs:
            rt.cudaGraphExecDestroy(ge)
        for g in self.graphs:
            rt.cudaGraphDestroy(g)
        for e in self.events:
            rt.cudaEventDestroy(e)
        for p in self.pinned:
            rt.cudaFreeHost(p)
        err = rt.cudaDeviceSynchronize()[0]   # 900 here means some capture is still open
        if err != OK:
            leaks.append(f"cudaDeviceSynchronize after the test returned {err.name}")
        for s in self.streams:
            rt.cudaStreamDestroy(s)
        rt.cudaGetLastError()
        return leaks


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    if report.when == "call":
        item.call_passed = report.passed
    return report


@pytest.fixture
def res(request):
    # defer_cleanup: numba must not free a previous test's arrays (cuMemFree) inside a capture,
    # which would invalidate it on a GPU for reasons that have nothing to do with the test.
    r = Resources()
    rt.cudaGetLastError()
    with cuda.defer_cleanup():
        yield r
        leaks = r.teardown()
    # A test that failed midway leaves its capture open as a matter of course: it is cleaned
    # up above either way, and reported as a leak only when the test itself passed.
    if leaks and getattr(request.node, "call_passed", False):
        pytest.fail("test did not clean up: " + "; ".join(leaks), pytrace=False)


@pytest.fixture(scope="session", autouse=True)
def compiled_kernels():
    # Compile and load the shared kernels outside any capture: on a GPU the first launch JIT-
    # compiles and loads a module, which must not happen for the first time inside a capture.
    import numpy as np
    from kernels import BLOCK, GRID, N, add_one, scale
    scratch = labkit.to_device(np.zeros(N, np.float32))
    add_one[GRID, BLOCK](scratch)
    scale[GRID, BLOCK](scratch)
    assert rt.cudaDeviceSynchronize()[0] == OK
    rt.cudaGetLastError()

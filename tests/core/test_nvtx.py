"""labkit's graph phases carry NVTX ranges (domain "labkit"), cheap when no tool listens."""
import time

import labkit
import numpy as np
import pytest

from labkit import _nvtx
from tests.kernels import BLOCK, GRID, N, add_one, scale


class _Recorder:
    """Stands in for the NVTX domain: records the phase of each push and each pop.

    Without a tool attached, nvtx's domain is a dummy whose attributes are None; the test
    gives each phase its name as its attributes, so a push says which phase it opened."""

    def __init__(self):
        self.calls = []

    def push_range(self, attrs):
        self.calls.append(("push", attrs))

    def pop_range(self):
        self.calls.append(("pop", None))


@pytest.fixture
def ranges(monkeypatch):
    rec = _Recorder()
    monkeypatch.setattr(_nvtx, "_domain", rec)
    monkeypatch.setattr(_nvtx, "_attrs", {name: name for name in _nvtx.PHASES})
    return rec


def _pairs(calls):
    """The phases in order, checking that every push is popped (ranges balance)."""
    depth, out = 0, []
    for what, name in calls:
        if what == "push":
            depth += 1
            out.append(name)
        else:
            depth -= 1
            assert depth >= 0
    assert depth == 0
    return out


def test_capture_instantiate_upload_launch_and_update_each_open_and_close_their_range(ranges):
    s = labkit.Stream()
    x = labkit.to_device(np.zeros(N, np.float32))
    with labkit.capture(s) as cap:
        add_one[GRID, BLOCK, s](x)
    ex = cap.graph.instantiate()
    ex.upload(s)
    ex.launch(s)
    ex.launch(s)
    with labkit.capture(s) as cap2:
        add_one[GRID, BLOCK, s](x)
    assert ex.update(cap2.graph)
    ex.set_kernel_args(0, add_one, GRID, BLOCK, x)
    s.synchronize()
    assert _pairs(ranges.calls) == ["capture", "instantiate", "upload", "launch", "launch",
                                    "capture", "update", "update"]


def test_a_capture_that_fails_still_closes_its_range(ranges):
    s = labkit.Stream()
    with pytest.raises(RuntimeError, match=r"^boom$"):
        with labkit.capture(s):
            raise RuntimeError("boom")
    assert _pairs(ranges.calls) == ["capture"]


def test_every_phase_has_its_own_registered_name_in_the_labkit_domain():
    assert _nvtx.DOMAIN == "labkit"
    assert set(_nvtx.PHASES) == {"capture", "instantiate", "upload", "launch", "update"}


def test_a_range_costs_well_under_a_microsecond_without_a_tool():
    n = 20000
    t0 = time.perf_counter()
    for _ in range(n):
        _nvtx.push("launch")
        _nvtx.pop()
    per_us = (time.perf_counter() - t0) / n * 1e6
    assert per_us < 2.0, f"one NVTX range costs {per_us:.2f} µs here"


def test_ranges_leave_the_simulators_clock_alone():
    if labkit.backend != "sim":
        pytest.skip("the virtual clock is the simulator's")
    s = labkit.Stream()
    x = labkit.to_device(np.zeros(N, np.float32))
    with labkit.capture(s) as cap:
        scale[GRID, BLOCK, s](x)
    ex = cap.graph.instantiate()
    ex.launch(s)
    s.synchronize()
    t0 = labkit.host_us()
    ex.launch(s)
    with_ranges = labkit.host_us() - t0
    saved = _nvtx.push, _nvtx.pop
    try:
        _nvtx.push = _nvtx.pop = lambda *a: None
        s.synchronize()
        t0 = labkit.host_us()
        ex.launch(s)
        without = labkit.host_us() - t0
    finally:
        _nvtx.push, _nvtx.pop = saved
    s.synchronize()
    assert with_ranges == pytest.approx(without, rel=0.05)

"""`labkit calibrate` measures each figure the way the simulator models it.

Calibrating the simulator itself must give back the simulator's own parameters: a figure that
came back different would mean the calibration measures something other than what the model
charges, and a GPU's calibration would then be misread by the simulator.
"""
import pytest

import labkit
from labkit.cli import calibrate

pytestmark = pytest.mark.skipif(labkit.backend != "sim", reason="calibrates the simulator itself")


@pytest.fixture(scope="module")
def calibrated():
    return calibrate.measure(rounds=2, require_gpu=False)


def test_calibrating_the_simulator_gives_back_its_own_parameters(calibrated):
    from labkit.sim.clock import P
    off = {}
    for name, v in calibrated["params"].items():
        got, want = v["median"], P(name)
        # 5 %, or 0.05 µs for the figures that are nearly zero
        if abs(got - want) > max(0.05 * abs(want), 0.05):
            off[name] = (round(got, 3), round(want, 3))
    assert not off, f"calibrated (got, simulator's own): {off}"


def test_the_size_sweeps_give_back_the_measured_points(calibrated):
    from labkit._calibration import load
    own = load()["params"]
    for name in ("graph_launch", "instantiate", "upload", "exec_update"):
        got = calibrated["params"][f"{name}_base_us"]
        assert got["sizes"] == own[f"{name}_base_us"]["sizes"]
        for g, w in zip(got["measured"], own[f"{name}_base_us"]["measured"]):
            assert g == pytest.approx(w, rel=0.05, abs=0.2), (name, got["measured"])
        assert len(got["rounds"]) == 2


def test_the_benchmark_rounds_are_summarized_by_their_median(calibrated):
    b = calibrated["bench"]
    assert b["rounds"] == 2 and b["kernels"] == 200
    for key, vals in b["per_round"].items():
        assert len(vals) == 2
        assert b[key] == pytest.approx(sorted(vals)[0] / 2 + sorted(vals)[1] / 2)


def test_calibrate_refuses_the_simulator_and_bad_rounds():
    with pytest.raises(SystemExit, match="real GPU"):
        calibrate.measure(1)
    with pytest.raises(ValueError, match="at least 1"):
        calibrate.measure(0, require_gpu=False)


def test_a_failing_trace_falls_back_and_says_why(monkeypatch):
    import contextlib

    @contextlib.contextmanager
    def broken(note=""):
        raise RuntimeError("CUPTI went away")
        yield
    monkeypatch.setattr(calibrate.timing, "timeline", broken)
    got = calibrate.measure(rounds=1, require_gpu=False)["params"]["kernel_us"]
    assert "the trace failed: RuntimeError: CUPTI went away" in got["source"]
    assert got["median"] > 0


def test_the_node_update_and_explicit_build_figures_are_calibrated(calibrated):
    from labkit.sim.clock import P
    params = calibrated["params"]
    assert params["node_update_us"]["median"] == pytest.approx(P("node_update_us"), rel=0.05)
    assert params["raw_node_update_us"]["median"] == pytest.approx(P("raw_node_update_us"), rel=0.05)
    assert params["add_kernel_node_us"]["median"] == pytest.approx(P("add_kernel_node_us"), rel=0.05)
    assert calibrated["bench"]["explicit_build_us"] == pytest.approx(200 * P("add_kernel_node_us"),
                                                                      rel=0.05)

"""`labkit calibrate` measures each figure the way the simulator models it.

Calibrating the simulator itself must give back the simulator's own parameters: a figure that
came back different would mean the calibration measures something other than what the model
charges, and a GPU's calibration would then be misread by the simulator.
"""
import pytest

import labkit
from labkit.cli import calibrate as calibrate_cli
from labkit.toolbox import calibrate

pytestmark = [pytest.mark.skipif(labkit.backend != "sim", reason="calibrates the simulator itself"),
              pytest.mark.usefixtures("steady_host_module")]   # its exact figures, to give them back


@pytest.fixture(scope="module")
def calibrated():
    return calibrate.measure(rounds=2, require_gpu=False)


def test_calibrating_the_simulator_gives_back_its_own_parameters(calibrated):
    from labkit.sim.clock import P
    off = {}
    for name, v in calibrated["params"].items():
        got, want = v["value"], P(name)
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
        for g, w in zip(got["per_size"], own[f"{name}_base_us"]["per_size"]):
            assert g == pytest.approx(w, rel=0.05, abs=0.2), (name, got["per_size"])
        assert len(got["per_size_rounds"]) == 2


def test_the_benchmark_rounds_are_summarized_by_their_fastest_round(calibrated):
    b = calibrated["bench"]
    assert b["rounds"] == 2 and b["kernels"] == 200
    for key, vals in b["per_round"].items():
        assert len(vals) == 2
        assert b[key] == pytest.approx(min(v for v in vals if v is not None))


def test_figures_the_benchmark_times_come_from_it_and_sweeps_keep_their_shape():
    P = {name: {"value": 1.0} for name in ("numba_launch_us", "prepared_launch_us", "node_update_us",
                                            "raw_node_update_us", "add_kernel_node_us")}
    P["begin_capture_us"] = {"value": 2.0}
    P["capture_launch_us"] = {"value": 30.0}
    P["end_capture_per_node_us"] = {"value": 0.3}
    for name in ("graph_launch", "instantiate", "exec_update"):
        P[f"{name}_base_us"] = {"value": 1.0, "sizes": [1, 200, 1000], "per_size": [2.0, 40.0, 200.0]}
        P[f"{name}_per_node_us"] = {"value": 0.2}
    bench = {"eager_us_per_kernel": 20.0, "prepared_us_per_kernel": 4.5, "node_update_us": 1.6,
             "raw_node_update_us": 0.8, "capture_us": 3002.0, "explicit_build_us": 400.0,
             "graph_launch_us": 4.0, "instantiate_us": 400.0, "exec_update_us": 20.0}
    got = calibrate.anchor_to_bench(P, bench, k=200)
    assert got["numba_launch_us"]["value"] == 20.0
    assert got["numba_launch_us"]["source"] == "the chain benchmark's eager_us_per_kernel"
    assert got["raw_node_update_us"]["value"] == 0.8
    assert got["capture_launch_us"]["value"] == pytest.approx((3002.0 - 2.0) / 200 - 0.3)
    assert got["add_kernel_node_us"]["value"] == pytest.approx(2.0)
    # the exec-update sweep is halved (20 against 40 at 200 nodes), shape kept, the measured beside
    assert got["exec_update_base_us"]["per_size"] == pytest.approx([1.0, 20.0, 100.0])
    assert got["exec_update_base_us"]["per_size_fastest"] == [2.0, 40.0, 200.0]
    assert got["exec_update_per_node_us"]["value"] == pytest.approx(0.1)
    assert got["instantiate_base_us"]["per_size"] == pytest.approx([20.0, 400.0, 2000.0])
    assert P["exec_update_base_us"]["per_size"] == [2.0, 40.0, 200.0]     # the input is left alone


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
    assert got["value"] > 0


def test_the_node_update_and_explicit_build_figures_are_calibrated(calibrated):
    from labkit.sim.clock import P
    params = calibrated["params"]
    assert params["node_update_us"]["value"] == pytest.approx(P("node_update_us"), rel=0.05)
    assert params["raw_node_update_us"]["value"] == pytest.approx(P("raw_node_update_us"), rel=0.05)
    assert params["add_kernel_node_us"]["value"] == pytest.approx(P("add_kernel_node_us"), rel=0.05)
    assert calibrated["bench"]["explicit_build_us"] == pytest.approx(200 * P("add_kernel_node_us"),
                                                                      rel=0.05)


def test_one_run_writes_a_whole_file_that_matches_the_schema(calibrated, tmp_path, monkeypatch):
    from labkit._calibration import SCHEMA_NAME, validate
    data = {k: v for k, v in calibrated.items() if k != "bench"}
    assert data["schema"] == SCHEMA_NAME
    validate(data)                               # raises, naming the entry, if it does not
    assert not any(".probe" in v["source"] for v in data["params"].values())
    # a steady simulator measures no noise: every call as its neighbours, no warm-up
    noise = data["host_noise"]
    assert noise["call_ratio"]["ratios"] == pytest.approx([1.0] * len(noise["call_ratio"]["ratios"]))
    assert set(noise["warmup_us"].values()) == {0.0}


def test_main_writes_the_calibration_and_the_benchmark_in_one_run(calibrated, tmp_path, monkeypatch):
    import json
    monkeypatch.setattr(calibrate_cli, "measure",
                        lambda rounds: {**calibrated, "bench": calibrated["bench"]})
    out = tmp_path / "gpu.json"
    assert calibrate_cli.main(["--out", str(out), "--rounds", "2"]) == 0
    written = json.loads(out.read_text())
    assert written["params"] == calibrated["params"] and "bench" not in written
    assert json.loads((tmp_path / "gpu-bench.json").read_text())["rounds"] == 2

"""What-if profiles scale the calibration, are labelled, and never pass for measurements."""
import json
import os
import subprocess
import sys

import pytest

from labkit import _calibration


def _params_under(profile: str) -> dict:
    code = ("import json, labkit; from labkit import _calibration as c; "
            "print(json.dumps({'p': c.params(), 'prov': labkit.provenance()}))")
    env = dict(os.environ, LABKIT_BACKEND="sim", LABKIT_SIM_PROFILE=profile)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


@pytest.mark.skipif(os.environ.get("LABKIT_BACKEND") == "cuda", reason="simulator profiles")
def test_slow_gpu_scales_gpu_figures_only_and_says_what_if():
    base = _calibration.params()
    got = _params_under("slow-gpu")
    assert got["p"]["kernel_us"] == pytest.approx(10 * base["kernel_us"])
    assert got["p"]["device_GBps"] == pytest.approx(base["device_GBps"] / 10)
    assert got["p"]["kernel_GBps"] == pytest.approx(base["kernel_GBps"] / 10)
    assert got["p"]["numba_launch_us"] == pytest.approx(base["numba_launch_us"])
    assert "what-if profile 'slow-gpu'" in got["prov"] and "not a measurement" in got["prov"]


@pytest.mark.skipif(os.environ.get("LABKIT_BACKEND") == "cuda", reason="simulator profiles")
def test_slow_host_doubles_host_costs_not_gpu_ones():
    got = _params_under("slow-host")["p"]
    assert got["numba_launch_us"] == pytest.approx(2 * _calibration.params()["numba_launch_us"])
    assert got["kernel_us"] == pytest.approx(_calibration.params()["kernel_us"])


def test_an_unknown_profile_names_the_known_ones(monkeypatch):
    monkeypatch.setenv("LABKIT_SIM_PROFILE", "fast-as-light")
    with pytest.raises(ValueError, match=r"'fast-as-light' is not a what-if profile; use one of \['noisy-host'"):
        _calibration.profile()


def test_noisy_host_is_the_one_host_model_with_its_jitter_and_spikes_seeded(monkeypatch):
    from labkit.sim.clock import HostNoise
    monkeypatch.setenv("LABKIT_SIM_PROFILE", "noisy-host")
    _calibration.load.cache_clear()
    try:
        spec = _calibration.host_noise()
    finally:
        _calibration.load.cache_clear()
    assert spec["spikes"]["per_call"] == 0.005 and spec["call_ratio"]["ratios"][0] < 0.5
    assert "warmup_us" in spec and "speed_ratios" in spec        # the calibration's own, kept
    f, g = HostNoise(spec, seed=7), HostNoise(spec, seed=7)
    xs = [sum(f.call()) for _ in range(4000)]
    assert xs == [sum(g.call()) for _ in range(4000)]               # seeded
    assert len(set(xs)) > 3000 and max(xs) > 200                   # varies, with spikes

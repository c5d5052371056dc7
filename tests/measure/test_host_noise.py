"""`labkit.measure.host_noise` measures the host's noise as the simulator models it: run on the
noisy simulator, it gives back the calibration's own distributions."""
import numpy as np
import pytest

import labkit
from labkit._calibration import host_noise as calibrated
from labkit.course.workloads import add_one
from labkit.measure import host_noise
from labkit.sim import clock

pytestmark = pytest.mark.skipif(labkit.backend != "sim", reason="measures the simulator's own host")


@pytest.fixture(scope="module")
def noisy():
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("LABKIT_SIM_NOISE", "1")
        mp.setenv("LABKIT_SIM_SEED", "5")
        clock.reset_noise()
        s = labkit.Stream()
        x = labkit.to_device(np.zeros(1024, np.float32))
        add_one[4, 256, s](x)
        s.synchronize()
        yield s, x
    clock.reset_noise()


def test_the_call_trace_gives_back_the_jitter_and_the_spikes(noisy):
    got = host_noise.call_trace(noisy[0], blocks=600)
    want = calibrated()
    assert got["call_ratio"]["ratios"] == pytest.approx(want["call_ratio"]["ratios"], rel=0.02)
    assert got["spikes"]["per_call"] == pytest.approx(want["spikes"]["per_call"], rel=0.3)
    assert got["spikes"]["us"][1] == pytest.approx(want["spikes"]["us"][1], rel=0.3)   # the median


def test_the_warm_ups_are_given_back(noisy):
    got = host_noise.warmup(*noisy, add_one, repeat=5)
    for kind, want in calibrated()["warmup_us"].items():
        assert got[kind] == pytest.approx(want, rel=0.35), kind


def test_speed_ratios_are_each_round_over_the_fastest_of_the_host_paced_figures():
    rounds = {"eager_us_per_kernel": [20.0, 16.0, 32.0], "graph_us_per_kernel": [1.0, 2.0, 3.0],
              "capture_us": [3000.0, 3000.0, 3300.0]}
    assert host_noise.speed_ratios(rounds) == pytest.approx([1.0, 1.0, 1.0, 1.1, 1.25, 2.0])

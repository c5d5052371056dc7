"""The simulated host is not perfectly steady: seeded warm-up, stretches of speed and call jitter
(`labkit.sim.clock.HostNoise`), all off with LABKIT_SIM_NOISE=0."""
import numpy as np
import pytest

import labkit
from labkit.course.workloads import add_one
from labkit.sim import clock
from labkit.sim.clock import P

pytestmark = pytest.mark.skipif(labkit.backend != "sim", reason="the simulator's host model")


@pytest.fixture
def host(monkeypatch):
    """``host(noise, seed)``: a fresh simulated host with that setting (reseeded from now)."""
    def make(noise="1", seed=None):
        monkeypatch.setenv("LABKIT_SIM_NOISE", noise)
        if seed is None:
            monkeypatch.delenv("LABKIT_SIM_SEED", raising=False)
        else:
            monkeypatch.setenv("LABKIT_SIM_SEED", str(seed))
        clock.reset_noise()
        return clock.host()
    yield make
    monkeypatch.undo()
    clock.reset_noise()


@pytest.fixture(scope="module")
def arrays():
    s = labkit.Stream()
    x = labkit.to_device(np.zeros(1024, np.float32))
    add_one[4, 256, s](x)                              # compiled before any test times it
    s.synchronize()
    return s, x


def _launch_costs(s, x, n=300):
    out = []
    for _ in range(n):
        t0 = labkit.host_us()
        add_one[4, 256, s](x)
        out.append(labkit.host_us() - t0)
    s.synchronize()
    return np.array(out)


def test_a_steady_host_charges_the_calibrated_launch_exactly(host, arrays):
    assert host("0") is None
    costs = _launch_costs(*arrays, n=20)
    assert costs == pytest.approx(np.full(20, P("numba_launch_us")), rel=1e-9)


def test_a_noisy_host_spreads_each_call_around_the_calibrated_cost(host, arrays):
    host("1")
    costs = _launch_costs(*arrays) / P("numba_launch_us")
    p10, p50, p90 = np.percentile(costs, [10, 50, 90])
    assert p90 / p10 > 1.05, "calls as steady as the model's exact figure"
    assert 1.0 <= p50 < 1.25, "the median call should sit near the calibrated (fastest-round) cost"


def test_the_same_seed_gives_the_same_figures_and_another_seed_others(host, arrays):
    host("1", 7)
    a = _launch_costs(*arrays)
    host("1", 7)
    b = _launch_costs(*arrays)
    host("1", 8)
    c = _launch_costs(*arrays)
    assert a == pytest.approx(b, rel=1e-9)             # up to the clock's rounding
    assert a != pytest.approx(c, rel=1e-3)


def test_the_hosts_speed_is_a_function_of_time_whatever_calls_are_made(host):
    h = host("1", 3)
    ts = np.linspace(0, 30 * h._slow_mean, 3000)        # long enough for several slow stretches
    first = [h.speed_at(h.origin_us + t) for t in ts]
    h2 = host("1", 3)
    for _ in range(50):
        h2.call()                                # calls draw from their own generator
    second = [h2.speed_at(h2.origin_us + t) for t in ts[::7]]
    assert first[::7] == second
    speeds = np.array(first)
    assert first[0] <= 1.25, "the host starts at speed, not in a slow stretch"
    slow_share = np.mean(speeds > 1.25)
    assert 0.02 < slow_share < 0.3, f"slow {slow_share:.0%} of the time; the H200's rounds: 11%"
    assert len(set(first)) > 10, "one speed for thirty slow stretches' worth of time"


def test_a_new_kernel_pays_its_first_launch_once(host, arrays):
    warm = host("1").warmup["kernel_first_launch"]
    s, x = arrays

    @labkit.kernel(reference=lambda grid, block, a: None)
    def fresh(a):
        pass
    t0 = labkit.host_us(); fresh[1, 32, s](x); first = labkit.host_us() - t0
    t0 = labkit.host_us(); fresh[1, 32, s](x); second = labkit.host_us() - t0
    s.synchronize()
    assert first > 0.75 * warm and second < 3 * P("numba_launch_us")


def test_a_steady_host_has_no_warm_up(host, arrays):
    host("0")
    s, x = arrays

    @labkit.kernel(reference=lambda grid, block, a: None)
    def fresh(a):
        pass
    t0 = labkit.host_us(); fresh[1, 32, s](x); first = labkit.host_us() - t0
    assert first == pytest.approx(P("numba_launch_us"))


@pytest.mark.parametrize("name, value, match", [
    ("LABKIT_SIM_NOISE", "loud", r"^LABKIT_SIM_NOISE='loud': use 1 \(the default"),
    ("LABKIT_SIM_SEED", "x1", r"^LABKIT_SIM_SEED='x1': use a whole number, or 'random'"),
])
def test_a_bad_setting_is_refused_with_the_values_it_takes(host, monkeypatch, name, value, match):
    host("1")
    monkeypatch.setenv(name, value)
    clock.reset_noise()
    with pytest.raises(ValueError, match=match):
        clock.host()


def test_a_capture_charges_numbas_dispatch_per_array_as_an_eager_launch_does(host, arrays):
    """numba types and marshals every argument in a capture too."""
    host("0")
    s, x = arrays
    y, z = labkit.to_device(np.zeros(1024, np.float32)), labkit.to_device(np.zeros(1024, np.float32))

    def ref3(grid, block, a, b, c):
        pass

    @labkit.kernel(reference=ref3)
    def three(a, b, c):
        pass
    three[4, 256, s](x, y, z); s.synchronize()
    with labkit.capture(s) as cap:
        t0 = labkit.host_us(); three[4, 256, s](x, y, z); captured = labkit.host_us() - t0
        t0 = labkit.host_us(); add_one[4, 256, s](x); one = labkit.host_us() - t0
    cap.graph.close()
    t0 = labkit.host_us(); three[4, 256, s](x, y, z); eager = labkit.host_us() - t0
    s.synchronize()
    per_array = P("numba_launch_per_array_us")
    assert one == pytest.approx(P("capture_launch_us"))
    assert captured == pytest.approx(P("capture_launch_us") + 2 * per_array)
    assert eager == pytest.approx(P("numba_launch_us") + 2 * per_array)


def test_a_new_stream_and_a_new_event_pay_their_first_use_once(host, arrays):
    warm = host("1").warmup
    _, x = arrays
    s, ev = labkit.Stream(), labkit.Event()

    def timed(fn):
        t0 = labkit.host_us(); fn(); return labkit.host_us() - t0
    launches = [timed(lambda: add_one[4, 256, s](x)) for _ in range(2)]
    records = [timed(lambda: labkit.rt.cudaEventRecord(ev.handle, s.handle)) for _ in range(2)]
    s.synchronize(); ev.close(); s.close()
    assert launches[0] - launches[1] > 0.5 * warm["stream_first_use"]
    assert records[0] - records[1] > 0.5 * warm["event_first_use"]

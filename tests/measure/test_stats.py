"""labkit.measure.stats: summaries agree with numpy on known samples and refuse bad input."""
from __future__ import annotations

import json

import numpy as np
import pytest

from labkit.measure.stats import Stats, throughput


@pytest.fixture
def lognormal_samples() -> np.ndarray:
    # Launch latencies are skewed like this: a tight body and a long right tail.
    return np.random.default_rng(1234).lognormal(mean=1.5, sigma=0.4, size=1000)


def test_summary_numbers_equal_numpys_on_skewed_samples(lognormal_samples):
    st = Stats(lognormal_samples, "launch")
    assert st.n == 1000
    assert st.mean == pytest.approx(np.mean(lognormal_samples), rel=1e-12)
    assert st.median == np.median(lognormal_samples)
    assert st.p50 == np.percentile(lognormal_samples, 50)
    assert st.p95 == np.percentile(lognormal_samples, 95)
    assert st.p99 == np.percentile(lognormal_samples, 99)
    assert st.min == lognormal_samples.min()
    assert st.max == lognormal_samples.max()
    assert st.std == pytest.approx(np.std(lognormal_samples, ddof=1), rel=1e-12)
    assert st.iqr == pytest.approx(np.percentile(lognormal_samples, 75)
                                   - np.percentile(lognormal_samples, 25), rel=1e-12)
    for q in (0, 5, 12.5, 90, 99.9, 100):
        assert st.percentile(q) == np.percentile(lognormal_samples, q)


def test_percentiles_interpolate_linearly_between_samples():
    # Linear interpolation, not nearest-rank: p95 of 1..4 lies between 3 and 4.
    st = Stats([4.0, 1.0, 3.0, 2.0])
    assert st.median == 2.5
    assert st.p95 == pytest.approx(3.85)
    assert st.p99 == pytest.approx(3.97)
    assert st.iqr == pytest.approx(1.5)


def test_repr_names_label_count_and_tail_percentiles_with_unit():
    st = Stats([4.0, 1.0, 3.0, 2.0], "graph launch")
    assert repr(st) == "Stats('graph launch', n=4, median=2.5 µs, p95=3.85 µs, p99=3.97 µs)"
    assert "ms" in repr(Stats([1.0], "sync", unit="ms"))


def test_empty_samples_raise_a_value_error_that_says_to_measure_first():
    with pytest.raises(ValueError, match=r"^Stats\('nothing'\) got no samples; run the measurement"):
        Stats([], "nothing")


def test_nan_sample_is_refused():
    with pytest.raises(ValueError, match=r"^Stats\('x'\) got a NaN or infinite sample"):
        Stats([1.0, float("nan")], "x")


def test_percentile_outside_0_to_100_is_refused():
    with pytest.raises(ValueError, match=r"^percentile q=950 is outside 0\.\.100"):
        Stats([1.0, 2.0]).percentile(950)


def test_single_sample_has_zero_spread():
    st = Stats([7.0], "one")
    assert (st.std, st.iqr, st.median, st.p99) == (0.0, 0.0, 7.0, 7.0)


def test_samples_are_copied_so_later_changes_to_the_input_do_not_leak_in():
    raw = np.array([1.0, 2.0, 3.0])
    st = Stats(raw)
    raw[:] = 100.0
    assert st.max == 3.0
    with pytest.raises(ValueError):
        st.samples[0] = 5.0  # read-only: a summary cannot drift from its samples


def test_to_json_round_trips_through_json_with_samples_and_summary(lognormal_samples):
    st = Stats.from_samples(lognormal_samples[:10], "capture", unit="µs")
    loaded = json.loads(json.dumps(st.to_json()))
    assert loaded["samples"] == lognormal_samples[:10].tolist()
    assert loaded["label"] == "capture" and loaded["unit"] == "µs" and loaded["n"] == 10
    assert loaded["p95"] == np.percentile(lognormal_samples[:10], 95)
    assert set(st.summary()) == {"label", "unit", "n", "mean", "median", "p95", "p99", "min",
                                 "max", "std", "iqr"}
    assert Stats(loaded["samples"]).median == st.median


def test_samples_may_come_from_a_generator():
    assert Stats(float(i) for i in range(5)).median == 2.0


def test_throughput_counts_items_per_second():
    assert throughput(1000, 1e6) == pytest.approx(1000.0)
    assert throughput(200, 50.0) == pytest.approx(4e6)


def test_throughput_needs_positive_time():
    with pytest.raises(ValueError, match=r"^throughput needs a positive total time, got 0 µs"):
        throughput(10, 0)

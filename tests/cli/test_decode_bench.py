"""`python -m labkit bench --decode`: every row is measured, and every decoder's tokens are
numpy's (on the simulator, a short generation of a small model)."""
import math

import pytest

from labkit.course import decoder as dec
from labkit.cli import decode_bench


@pytest.fixture(scope="module")
def res():
    return decode_bench.measure(repeat=1, m=dec.make_model(seed=0), n_tokens=16)


def test_every_decoder_makes_numpys_tokens_and_the_loop_stops_at_eos(res):
    assert res["tokens_match"] and res["device_loop_stopped_at_eos"]
    assert res["tokens"] <= 16


def test_every_row_has_its_tokens_per_s_and_host_cpu_per_token(res):
    for key in ("eager", "graph", "graph_back_to_back", "device_loop"):
        assert res[f"{key}_tokens_per_s"] > 0
        cpu = res[f"{key}_host_cpu_us_per_token"]
        assert math.isfinite(cpu) and cpu > 0, key


def test_the_loops_cpu_is_its_launch_and_its_wait_over_its_tokens(res):
    per_token = (res["device_loop_launch_cpu_us"] + res["device_loop_wait_cpu_us"]) / res["tokens"]
    assert res["device_loop_host_cpu_us_per_token"] == pytest.approx(per_token)


def test_the_ratios_are_the_rows_divided(res):
    assert res["device_loop_vs_back_to_back"] == pytest.approx(
        res["device_loop_tokens_per_s"] / res["graph_back_to_back_tokens_per_s"])
    assert res["device_loop_vs_graph"] == pytest.approx(
        res["device_loop_tokens_per_s"] / res["graph_tokens_per_s"])

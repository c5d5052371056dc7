"""`python -m labkit bench --decode`: every row is measured, and every decoder's tokens are
numpy's (on the simulator, a short generation of a small model). The rows live in
`labkit.course.decode_bench`; the CLI verb only prints them."""
import json
import math

import pytest

from labkit.cli import bench
from labkit.course import decode_bench, decoder as dec


@pytest.fixture(scope="module")
def res():
    return decode_bench.measure(repeat=1, m=dec.make_model(seed=0), n_tokens=16)


def test_every_decoder_makes_numpys_tokens_and_every_loop_stops_at_eos(res):
    assert res["tokens_match"] and res["device_loop_stopped_at_eos"]
    assert res["tokens"] <= 16


def test_every_row_has_its_tokens_per_s_and_host_cpu_per_token(res):
    for key in ("eager", "graph", "graph_back_to_back", "device_loop", "device_loop_streaming",
                "k_per_launch"):
        assert res[f"{key}_tokens_per_s"] > 0
        cpu = res[f"{key}_host_cpu_us_per_token"]
        assert math.isfinite(cpu) and cpu > 0, key


def test_the_streaming_loop_reports_its_first_token_and_inter_token_latencies(res):
    p50 = res["device_loop_streaming_inter_token_us_p50"]
    assert 0 < p50 <= res["device_loop_streaming_inter_token_us_p99"]
    assert 0 < res["device_loop_streaming_ttft_us"]
    # a token arrives about one step apart: the back-to-back limit's time per token
    step = 1e6 / res["graph_back_to_back_tokens_per_s"]
    assert p50 == pytest.approx(step, rel=0.2)


def test_k_steps_per_launch_deliver_tokens_in_bursts(res):
    # the host sees k tokens at once: most gaps are 0, the largest about k steps
    assert res["k_per_launch_inter_token_us_p50"] == 0
    assert res["k_per_launch_inter_token_us_p99"] > 2 * res["device_loop_streaming_inter_token_us_p50"]


def test_the_loops_cpu_is_its_launch_and_its_wait_over_its_tokens(res):
    per_token = (res["device_loop_launch_cpu_us"] + res["device_loop_wait_cpu_us"]) / res["tokens"]
    assert res["device_loop_host_cpu_us_per_token"] == pytest.approx(per_token)


def test_the_ratios_are_the_rows_divided(res):
    assert res["device_loop_vs_back_to_back"] == pytest.approx(
        res["device_loop_tokens_per_s"] / res["graph_back_to_back_tokens_per_s"])
    assert res["device_loop_vs_graph"] == pytest.approx(
        res["device_loop_tokens_per_s"] / res["graph_tokens_per_s"])


def test_the_cli_verb_prints_the_rows_and_their_json(res, monkeypatch, capsys):
    monkeypatch.setattr(decode_bench, "measure", lambda repeat: dict(res))
    assert bench.main(["--decode", "--json"]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    got = json.loads(last)
    for key in ("device_loop_streaming_tokens_per_s", "device_loop_streaming_inter_token_us_p50",
                "device_loop_streaming_inter_token_us_p99"):
        assert got[key] == res[key]


def test_a_step_size_row_of_the_measured_size_is_the_measurements_own(res):
    # the 4-layer model that measure() ran is not measured again: one configuration, one figure
    rows = decode_bench.by_step_size((1, 4), repeat=1, n_tokens=res["tokens"],
                                     max_seq=res["max_seq"], measured=res)
    one, four = rows
    assert four["kernels_per_token"] == res["kernels_per_token"] == 65
    for key in ("graph_tokens_per_s", "graph_back_to_back_tokens_per_s",
                "device_loop_tokens_per_s", "device_loop_vs_graph"):
        assert four[key] == res[key], key
    # the other size is measured, at the same size of generation
    assert one["kernels_per_token"] == 20 and one["tokens"] == res["tokens"]
    assert one["tokens_match"] and one["graph_tokens_per_s"] != res["graph_tokens_per_s"]


def test_a_measurement_of_another_size_is_not_taken_for_a_step_size_row(res):
    rows = decode_bench.by_step_size((4,), repeat=1, n_tokens=res["tokens"] - 1,
                                     max_seq=res["max_seq"], measured=res)
    assert rows[0]["tokens"] == res["tokens"] - 1
    assert rows[0]["graph_tokens_per_s"] != res["graph_tokens_per_s"]

"""The simulator's chain benchmark agrees with the same benchmark measured on the H200 (±25 %)."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

import labkit

ROOT = Path(__file__).resolve().parents[1]
MEASURED = ROOT / "labkit" / "calibration" / "h200-bench.json"
# Within 25 % of the H200's bench run:
KEYS = ["eager_us_per_kernel", "graph_us_per_kernel", "instantiate_us", "first_launch_us",
        "prepared_us_per_kernel"]
# Host costs of a few µs to a few ms that the H200 itself did not repeat to 25 %: the
# calibration and the bench, run one after the other on the same machine, disagreed by up to
# 45 % on them (h200.json against h200-bench.json; across runs, capture went 5467 -> 4028 µs,
# node update 58 -> 43 µs). For these the simulator must be within 60 %.
NOISY = ["graph_launch_us", "capture_us", "exec_update_us", "node_update_us"]


@pytest.mark.skipif(labkit.backend != "sim", reason="checks the simulator against the GPU's figures")
def test_simulated_chain_benchmark_is_within_25_percent_of_the_h200():
    gpu = json.loads(MEASURED.read_text())
    r = subprocess.run([sys.executable, "-m", "labkit", "bench", "--json", "--kernels",
                        str(gpu["kernels"])], capture_output=True, text=True, cwd=ROOT,
                       env={**__import__("os").environ, "LABKIT_BACKEND": "sim"})
    assert r.returncode == 0, r.stderr
    sim = json.loads(r.stdout.strip().splitlines()[-1])
    off = {k: sim[k] / gpu[k] for k in KEYS if not 0.75 <= sim[k] / gpu[k] <= 1.25}
    off.update({k: sim[k] / gpu[k] for k in NOISY if not 0.4 <= sim[k] / gpu[k] <= 1.6})
    assert not off, f"simulated/measured ratios outside 0.75–1.25 (0.4–1.6 for {NOISY}): {off}"

"""The course's claims really are checked: perturb the calibration and a strict claim fails.

Notebook 01 claims that one graph launch costs the host under a tenth of eager launches per
kernel. On the packaged H200 calibration that holds (0.01 µs against 21 µs). With graph
launches made as dear per node as an eager numba launch, the same notebook cells, run in
strict mode, must stop with `labkit.measure.claims.ClaimFailed` naming that claim; in learner mode they go on
with a note. The cells are the notebook's own (read through the build tool), not a copy.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from labkit import _calibration
from tests.notebook_sources import ROOT, build_tool, source_path

CLAIM = "one graph launch costs the host under a tenth of eager launches per kernel"
CALL = "claims.graph_launch_is_cheap_for_the_host("     # the notebook's one-line claim

pytestmark = pytest.mark.skipif(os.environ.get("LABKIT_BACKEND") == "cuda",
                                reason="perturbs the simulator's calibration")


def _cells() -> str:
    """Notebook 01's setup cell and the cell that checks CLAIM, as one script."""
    tool = build_tool()
    code = [c.source for c in tool.cells_for(tool.read_source(source_path("01")), "solution")
            if c.cell_type == "code"]
    claim = [c for c in code if CALL in c]
    assert len(claim) == 1, f"notebook 01 has {len(claim)} cells calling {CALL!r}"
    return code[0] + "\n" + claim[0]


def _run(tmp_path, claims: str, calibration=None) -> subprocess.CompletedProcess:
    script = tmp_path / "cells.py"
    script.write_text(_cells())
    env = dict(os.environ, LABKIT_BACKEND="sim", LABKIT_CLAIMS=claims, MPLBACKEND="Agg",
               PYTHONPATH=str(ROOT))
    env.pop("LABKIT_SIM_PROFILE", None)
    env.pop("LABKIT_CALIBRATION", None)
    if calibration:
        env["LABKIT_CALIBRATION"] = str(calibration)
    return subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True,
                          timeout=120, cwd=tmp_path)


def _graph_launch_as_dear_as_eager(tmp_path):
    """A calibration whose graph launch costs the host one eager numba launch per node."""
    data = json.loads(_calibration.DEFAULT.read_text())
    params = data["params"]
    eager = params["numba_launch_us"]["value"]
    params["graph_launch_per_node_us"]["value"] = eager
    base = params["graph_launch_base_us"]
    if "sizes" in base:   # measured per graph size: the simulator interpolates these points
        base["per_size"] = [m + eager * n for n, m in zip(base["sizes"], base["per_size"])]
    path = tmp_path / "perturbed.json"
    path.write_text(json.dumps(data))
    return path


def test_the_claim_holds_on_the_h200_calibration(tmp_path):
    got = _run(tmp_path, "strict")
    assert got.returncode == 0, got.stderr[-2000:]


def test_graph_launches_as_dear_as_eager_fail_the_claim_in_strict_mode(tmp_path):
    got = _run(tmp_path, "strict", _graph_launch_as_dear_as_eager(tmp_path))
    assert got.returncode != 0
    assert f"labkit.measure.claims.ClaimFailed: expected: {CLAIM}; measured here: graph" \
        in got.stderr, got.stderr[-2000:]


def test_learner_mode_notes_the_same_failure_and_goes_on(tmp_path):
    got = _run(tmp_path, "learner", _graph_launch_as_dear_as_eager(tmp_path))
    assert got.returncode == 0, got.stderr[-2000:]
    assert "nothing is broken" in got.stdout and CLAIM in got.stdout

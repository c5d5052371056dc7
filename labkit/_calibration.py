"""The simulator's cost model: figures measured on a real GPU by ``python -m labkit calibrate``.

The JSON file holds the GPU, driver and versions it was measured with, the date, and each
figure (µs unless named otherwise). `params()` returns the figures as a flat dict of floats.
"""
from __future__ import annotations

import json
import os
from functools import lru_cache
from pathlib import Path

DIR = Path(__file__).with_name("calibration")
DEFAULT = DIR / "h200.json"


@lru_cache(maxsize=None)
def load(path: str | None = None) -> dict:
    """Read a calibration file (``LABKIT_CALIBRATION`` or the packaged H200 one)."""
    p = Path(path or os.environ.get("LABKIT_CALIBRATION") or DEFAULT)
    if not p.exists():
        raise FileNotFoundError(
            f"calibration file {p} is missing: reinstall labkit, or run "
            "`python -m labkit calibrate` on a GPU and point LABKIT_CALIBRATION at its output")
    data = json.loads(p.read_text())
    data["path"] = str(p)
    return data


def params() -> dict[str, float]:
    """The cost model's figures: name -> median value."""
    out = {}
    for name, v in load()["params"].items():
        out[name] = float(v["median"] if isinstance(v, dict) else v)
    return out

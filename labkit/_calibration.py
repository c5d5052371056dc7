"""The simulator's cost model: figures measured on a real GPU by ``python -m labkit calibrate``.

The JSON file holds the GPU, driver and versions it was measured with, the date, and each
figure (µs unless named otherwise). `params()` returns the figures as a flat dict of floats.

``LABKIT_SIM_PROFILE=NAME`` applies one of the what-if profiles in ``calibration/what-if.json``
(a 10x slower GPU, a 2x slower host, a noisy host): they are not measurements, and
`profile()` names the one in use so that plots can say so.
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
    name = profile()
    if name:
        spec = _profiles()[name]
        for key, factor in spec.get("scale", {}).items():
            entry = data["params"].get(key)
            if isinstance(entry, dict) and "measured" in entry:
                entry["measured"] = [v * factor for v in entry["measured"]]
            if isinstance(entry, dict) and "median" in entry:
                entry["median"] *= factor
            elif isinstance(entry, (int, float)):
                data["params"][key] = entry * factor
        data["profile"] = {"name": name, **spec}
    return data


def _profiles() -> dict:
    return json.loads((DIR / "what-if.json").read_text())["profiles"]


def profile() -> str | None:
    """The what-if profile in use (``LABKIT_SIM_PROFILE``), or None for the calibration as measured."""
    name = os.environ.get("LABKIT_SIM_PROFILE", "").strip()
    if not name:
        return None
    if name not in _profiles():
        raise ValueError(f"LABKIT_SIM_PROFILE={name!r} is not a what-if profile; "
                         f"use one of {sorted(_profiles())} or unset it")
    return name


def jitter():
    """A what-if profile's host noise as a function cost_us -> cost_us, or None."""
    spec = load().get("profile", {}).get("jitter")
    if not spec:
        return None
    import numpy as np
    rng = np.random.default_rng(spec["seed"])
    every, spike, sigma = spec["spike_every"], spec["spike_us"], spec["sigma"]

    def noisy(cost_us: float) -> float:
        out = cost_us * float(rng.lognormal(-sigma * sigma / 2, sigma))
        return out + spike if rng.integers(every) == 0 else out
    return noisy


# Figures that later versions of ``labkit calibrate`` measure, and what an older calibration
# (which lacks them) is charged instead: the model as it was before they were measured.
_LATER = {"decode_kernel_us": "kernel_us", "numba_launch_per_array_us": 0.0,
          "blocking_sync_wake_us": 0.0, "blocking_sync_cpu_us": 0.0}


def params() -> dict[str, float]:
    """The cost model's figures: name -> median value."""
    out = {}
    for name, v in load()["params"].items():
        out[name] = float(v["median"] if isinstance(v, dict) else v)
    for name, instead in _LATER.items():
        if name not in out:
            out[name] = out.get(instead, 0.0) if isinstance(instead, str) else instead
    return out

"""The simulator's cost model: figures measured on a real GPU by ``python -m labkit calibrate``.

A calibration file follows the versioned schema ``calibration/calibration.schema.json``
(``"schema": "labkit.calibration/2"``): the GPU, driver and versions it was measured with, the
date, each figure the simulator charges (``params``: name -> ``value``, in the unit its name
ends in, with its ``source`` and the ``spread`` it was taken from) and how the host departs from
steady (``host_noise``). `load` refuses a file that does not match the schema, naming what is
wrong and the command that writes a good one.

``LABKIT_SIM_PROFILE=NAME`` applies one of the what-if profiles in ``calibration/what-if.json``
(a 10x slower GPU, a 2x slower host, a noisy host): they are not measurements, and
`profile()` names the one in use so that plots can say so.
"""
from __future__ import annotations

import json
import os
from functools import lru_cache
from pathlib import Path

import jsonschema

DIR = Path(__file__).with_name("calibration")
DEFAULT = DIR / "h200.json"
SCHEMA = DIR / "calibration.schema.json"
SCHEMA_NAME = "labkit.calibration/2"


class CalibrationError(ValueError):
    """A calibration file that does not match labkit's schema."""


@lru_cache(maxsize=None)
def schema() -> dict:
    return json.loads(SCHEMA.read_text())


def validate(data: dict, where: str = "calibration") -> dict:
    """``data`` if it matches the schema; else a `CalibrationError` saying what is wrong and where."""
    if not isinstance(data, dict) or data.get("schema") != SCHEMA_NAME:
        got = data.get("schema") if isinstance(data, dict) else type(data).__name__
        raise CalibrationError(
            f"{where} is not a {SCHEMA_NAME} file (its \"schema\" is {got!r}): a file from an older "
            "labkit, or not a calibration; run `python -m labkit calibrate` on a GPU to write one")
    errors = sorted(jsonschema.Draft202012Validator(schema()).iter_errors(data),
                    key=lambda e: list(e.absolute_path))
    if errors:
        lines = [f"  at {'/'.join(map(str, e.absolute_path)) or '(top)'}: {e.message}" for e in errors[:8]]
        more = f"\n  ... and {len(errors) - 8} more" if len(errors) > 8 else ""
        raise CalibrationError(
            f"{where} does not match {SCHEMA_NAME} ({SCHEMA.name}):\n" + "\n".join(lines) + more +
            "\nrun `python -m labkit calibrate` on a GPU to write a whole file, or fix these entries")
    return data


@lru_cache(maxsize=None)
def load(path: str | None = None) -> dict:
    """Read and validate a calibration file (``LABKIT_CALIBRATION`` or the packaged H200 one)."""
    p = Path(path or os.environ.get("LABKIT_CALIBRATION") or DEFAULT)
    if not p.exists():
        raise FileNotFoundError(
            f"calibration file {p} is missing: reinstall labkit, or run "
            "`python -m labkit calibrate` on a GPU and point LABKIT_CALIBRATION at its output")
    data = validate(json.loads(p.read_text()), f"calibration file {p}")
    data["path"] = str(p)
    name = profile()
    if name:
        spec = _profiles()[name]
        for key, factor in spec.get("scale", {}).items():
            entry = data["params"][key]
            entry["value"] *= factor
            if "per_size" in entry:
                entry["per_size"] = [v * factor for v in entry["per_size"]]
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


def params() -> dict[str, float]:
    """The cost model's figures: name -> the value the simulator charges."""
    return {name: float(v["value"]) for name, v in load()["params"].items()}


def host_noise() -> dict:
    """The calibration's ``host_noise``: warm-up, stretch speeds and call jitter (see the schema),
    with the what-if profile's ``host_noise`` entries in place of the calibration's (the
    noisy-host profile's call jitter and spikes): one model of a host's noise."""
    data = load()
    return {**data["host_noise"], **data.get("profile", {}).get("host_noise", {})}

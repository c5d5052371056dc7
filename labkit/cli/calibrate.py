"""``python -m labkit calibrate``: measure the simulator's cost model on a real GPU and write it.

The procedure is `labkit.toolbox.calibrate` (its docstring says how each figure is measured);
this module parses the arguments, validates what was measured and writes the two files.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from labkit._calibration import validate
from labkit.toolbox.calibrate import measure


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m labkit calibrate", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="calibration.json", help="where to write the calibration JSON")
    ap.add_argument("--bench-out", default=None,
                    help="where to write the benchmark's medians (default: OUT with -bench added)")
    ap.add_argument("--rounds", type=int, default=7, help="interleaved rounds (default 7)")
    a = ap.parse_args(argv)
    if a.rounds < 1:
        ap.error("--rounds must be at least 1")
    data = measure(a.rounds)
    bench = data.pop("bench")
    out = Path(a.out)
    bench_out = Path(a.bench_out) if a.bench_out else out.with_name(out.stem + "-bench" + out.suffix)
    validate(data, "the calibration just measured")     # the simulator must be able to read it
    out.write_text(json.dumps(data, indent=2) + "\n")
    bench_out.write_text(json.dumps(bench, indent=1) + "\n")
    print(json.dumps({k: v["value"] for k, v in data["params"].items()}, indent=1))
    print("bench medians:", json.dumps({k: v for k, v in bench.items() if k != "per_round"}))
    print(f"wrote {out} and {bench_out}")
    return 0

#!/usr/bin/env bash
# One device call: calibrate, bench (JSON + wrapper), conformance and core tests on the GPU.
export LABKIT_BACKEND=cuda PYTHONUNBUFFERED=1
o=${OUT:-/tmp/out}; mkdir -p "$o"
timeout 150 python3 -W ignore -m labkit calibrate --out "$o/calibration.json" > "$o/calibrate.log" 2>&1; echo "calibrate rc=$?"; tail -3 "$o/calibrate.log"
timeout 150 python3 -W ignore -m labkit bench --json --wrapper > "$o/bench.log" 2>&1; echo "bench rc=$?"; tail -22 "$o/bench.log"
timeout 60 python3 -W ignore tools/gpu_timeline.py "$o/timeline.png" > "$o/timeline.log" 2>&1; echo "timeline rc=$?"; tail -3 "$o/timeline.log"
timeout 200 python3 -m pytest -p no:cacheprovider -o addopts="" tests/conformance tests/test_core.py tests/test_cupti.py -q --no-header -W ignore -rfE > "$o/tests.log" 2>&1; echo "tests rc=$?"; grep -E "passed|failed|FAILED|ERROR" "$o/tests.log" | tail -40

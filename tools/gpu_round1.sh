#!/usr/bin/env bash
# One device call: probe kernel-node parameters, calibrate, bench, CUPTI timeline, conformance.
export LABKIT_BACKEND=cuda PYTHONUNBUFFERED=1
o=${OUT:-/tmp/out}; mkdir -p "$o"
timeout 60 python3 -W ignore tools/probe_params.py > "$o/params.log" 2>&1; echo "params rc=$?"; tail -20 "$o/params.log"
timeout 120 python3 -W ignore -m labkit calibrate --out "$o/calibration.json" > "$o/calibrate.log" 2>&1; echo "calibrate rc=$?"; tail -40 "$o/calibrate.log"
timeout 120 python3 -W ignore -m labkit bench --json --wrapper > "$o/bench.log" 2>&1; echo "bench rc=$?"; tail -20 "$o/bench.log"
timeout 60 python3 -W ignore tools/gpu_timeline.py "$o/timeline.png" > "$o/timeline.log" 2>&1; echo "timeline rc=$?"; tail -5 "$o/timeline.log"
timeout 200 python3 -m pytest -p no:cacheprovider -o addopts="" tests/conformance tests/test_cupti.py -q -x --no-header -W ignore > "$o/conformance.log" 2>&1; echo "conformance rc=$?"; tail -30 "$o/conformance.log"

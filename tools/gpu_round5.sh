#!/usr/bin/env bash
# One device call: calibrate and bench back to back (the simulator's costs and the figures the
# fidelity test compares it with come from the same minutes), then every notebook under nbmake.
export LABKIT_BACKEND=cuda PYTHONUNBUFFERED=1
o=${OUT:-/tmp/out}; mkdir -p "$o"
timeout 120 python3 -W ignore -m labkit calibrate --out "$o/calibration.json" > "$o/calibrate.log" 2>&1; echo "calibrate rc=$?"
timeout 90 python3 -W ignore -m labkit bench --json > "$o/bench.log" 2>&1; echo "bench rc=$?"; tail -1 "$o/bench.log"
timeout 280 python3 -m pytest -p no:cacheprovider -o addopts="--nbmake --nbmake-timeout=200" notebooks -q --no-header -W ignore --durations=16 -rfE > "$o/notebooks.log" 2>&1; echo "nbmake rc=$?"; sed 's/\x1b\[[0-9;]*m//g' "$o/notebooks.log" | grep -E "passed|failed|FAILED|Error:|s call" | tail -24

#!/usr/bin/env bash
# Calibrate and bench back to back, with more repeats for the size sweep (host noise there).
export LABKIT_BACKEND=cuda PYTHONUNBUFFERED=1
o=${OUT:-/tmp/out}; mkdir -p "$o"
timeout 150 python3 -W ignore -m labkit calibrate --out "$o/calibration.json" > "$o/calibrate.log" 2>&1; echo "calibrate rc=$?"
timeout 90 python3 -W ignore -m labkit bench --json > "$o/bench.log" 2>&1; echo "bench rc=$?"; tail -1 "$o/bench.log"

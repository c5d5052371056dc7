#!/usr/bin/env bash
# GPU round 7: conformance on the H200, interleaved calibration (host costs and the chain
# benchmark in alternating rounds), two standalone benches for the host's own repeatability,
# the course built with `labkit run --backend cuda`, and the solution notebooks under nbmake.
export LABKIT_BACKEND=cuda PYTHONUNBUFFERED=1
o=${OUT:-/tmp/out}; mkdir -p "$o"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > "$o/smi.txt" 2>&1
timeout 120 python3 -m pytest -q -p no:cacheprovider -o addopts="" tests/conformance tests/test_core.py \
  tests/test_prepared.py tests/test_cupti.py tests/test_cache.py tests/test_calibrate.py > "$o/tests.log" 2>&1
echo "tests rc=$? $(tail -1 "$o/tests.log")"
timeout 200 python3 -W ignore -m labkit calibrate --rounds 7 --out "$o/h200.json" > "$o/calibrate.log" 2>&1
echo "calibrate rc=$?"; tail -2 "$o/calibrate.log"
for i in 1 2; do
  timeout 60 python3 -W ignore -m labkit bench --json > "$o/bench$i.log" 2>&1; echo "bench$i rc=$?"; tail -1 "$o/bench$i.log"
done
timeout 240 python3 -m labkit run --backend cuda --out "$o/site" > "$o/run.log" 2>&1
echo "run rc=$?"; tail -15 "$o/run.log"
du -sh "$o/site"

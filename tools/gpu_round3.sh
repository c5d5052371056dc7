#!/usr/bin/env bash
# One device call: calibrate, bench (JSON + wrapper), timeline, capstone decode, GPU tests.
export LABKIT_BACKEND=cuda PYTHONUNBUFFERED=1
o=${OUT:-/tmp/out}; mkdir -p "$o"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > "$o/gpu.txt" 2>&1
timeout 170 python3 -W ignore -m labkit calibrate --out "$o/calibration.json" > "$o/calibrate.log" 2>&1; echo "calibrate rc=$?"; tail -3 "$o/calibrate.log"
timeout 120 python3 -W ignore -m labkit bench --json --wrapper > "$o/bench.log" 2>&1; echo "bench rc=$?"; tail -24 "$o/bench.log"
timeout 60 python3 -W ignore tools/gpu_timeline.py "$o/timeline.png" > "$o/timeline.log" 2>&1; echo "timeline rc=$?"; tail -3 "$o/timeline.log"
timeout 90 python3 -W ignore tools/gpu_decode.py 48 > "$o/decode.log" 2>&1; echo "decode rc=$?"; tail -8 "$o/decode.log"
timeout 200 python3 -m pytest -p no:cacheprovider -o addopts="" tests/conformance tests/test_core.py tests/test_prepared.py tests/test_cupti.py tests/test_decoder.py tests/test_cache.py -q --no-header -W ignore -rfE --maxfail=30 > "$o/tests.log" 2>&1; echo "tests rc=$?"; grep -E "passed|failed|FAILED|ERROR" "$o/tests.log" | tail -40

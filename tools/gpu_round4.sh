#!/usr/bin/env bash
# One device call: CUPTI's effect on launch costs, calibrate + bench again, GPU tests, then the
# whole course on the GPU (labkit run over the learner notebooks, nbmake over the solutions).
export LABKIT_BACKEND=cuda PYTHONUNBUFFERED=1
o=${OUT:-/tmp/out}; mkdir -p "$o"
timeout 60 python3 -W ignore tools/gpu_cupti_effect.py > "$o/cupti_effect.log" 2>&1; echo "cupti_effect rc=$?"; cat "$o/cupti_effect.log" | tail -5
timeout 150 python3 -W ignore -m labkit calibrate --out "$o/calibration.json" > "$o/calibrate.log" 2>&1; echo "calibrate rc=$?"
timeout 120 python3 -W ignore -m labkit bench --json --wrapper > "$o/bench.log" 2>&1; echo "bench rc=$?"; tail -18 "$o/bench.log"
timeout 120 python3 -m pytest -p no:cacheprovider -o addopts="" tests/conformance tests/test_core.py tests/test_prepared.py tests/test_cupti.py tests/test_cache.py -q --no-header -W ignore -rfE > "$o/tests.log" 2>&1; echo "tests rc=$?"; grep -E "passed|failed|FAILED|ERROR" "$o/tests.log" | tail -10
timeout 200 python3 -W ignore -m labkit run --backend cuda --out /tmp/build > "$o/run.log" 2>&1; echo "run rc=$?"; grep -v "it/s\|notebook/s\|WARNING" "$o/run.log" | tail -12
tar czf "$o/build.tgz" -C /tmp build 2>/dev/null
timeout 150 python3 -m pytest -p no:cacheprovider -o addopts="--nbmake --nbmake-timeout=300" notebooks/solutions -q --no-header -W ignore --durations=10 -rfE > "$o/nb_solutions.log" 2>&1; echo "nbmake rc=$?"; grep -E "passed|failed|FAILED|Error|s call" "$o/nb_solutions.log" | tail -16

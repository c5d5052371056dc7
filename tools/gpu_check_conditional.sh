#!/usr/bin/env bash
# Issue 19 on a GPU (the H200), from the checkout's root: bash tools/gpu_check_conditional.sh OUT_DIR
# Conformance of conditional nodes, notebook 08's exercise check, notebook 08 (learner and solution,
# built from notebooks/src/08_device_control_flow.py; needs labkit.expect from the lead's branch),
# the conditional costs as calibrate measures them, and the decode bench with and without host load.
set -u
OUT=${1:-/tmp/gpu19}; mkdir -p "$OUT"
PY=${PY:-python}
export LABKIT_BACKEND=cuda PYTHONPATH=$PWD
rc=0
$PY -m pytest -p no:cacheprovider -q tests/conformance/test_conditional.py tests/course/test_exercises_08.py \
    2>&1 | tee "$OUT/conformance.txt" || rc=1
$PY -m pytest -p no:cacheprovider -q --nbmake --nbmake-timeout=300 \
    notebooks/solutions/08_device_control_flow_solution.ipynb notebooks/08_device_control_flow.ipynb \
    --durations=0 2>&1 | tee "$OUT/nb08.txt" || rc=1
$PY -c "import json, labkit; from labkit import conditional_costs as c; s=labkit.Stream(); print(json.dumps(c.measure(s)))" \
    2>&1 | tee "$OUT/conditional_costs.txt" || rc=1
timeout 300 $PY -m labkit bench --decode --json 2>&1 | tee "$OUT/bench_decode.txt" || rc=1
timeout 500 $PY -m labkit bench --decode --json --host-load 2>&1 | tee "$OUT/bench_decode_host_load.txt" || rc=1
echo "gpu_check_conditional: rc=$rc, logs in $OUT"
exit $rc

#!/usr/bin/env bash
# The GPU check: what a maintainer runs on a GPU host before a release or after a change that
# touches what a GPU measures.
#
#   tools/gpu_check.sh LOG_DIR [CALIBRATION_OUT]
#
# Steps, in order, each logged to LOG_DIR/<step>.log with its exit code in LOG_DIR/summary.txt:
#   gpu        nvidia-smi: the GPU, its driver and clocks (for the record; never fails the check)
#   doctor     python -m labkit doctor: backend, GPU, versions, calibration
#   tests      the whole test suite with LABKIT_BACKEND=cuda (tests/, conformance included)
#   bench      python -m labkit bench --wrapper --json (the JSON line also in LOG_DIR/bench.json;
#              `python -m labkit measurements --draft LOG_DIR/bench.json` makes it a run's
#              file for the maintainers' measurements document)
#   calibrate  python -m labkit calibrate --out CALIBRATION_OUT (default LOG_DIR/calibration.json;
#              the benchmark's medians go beside it as *-bench.json). To ship it, copy both to
#              labkit/calibration/h200.json and h200-bench.json, then run
#              tests/core/test_fidelity.py on the simulator.
#   notebooks  every notebook, learner and solution, under nbmake with LABKIT_BACKEND=cuda
#
# Environment: PYTHON (default python3: the one with labkit installed), STEPS (a subset of the
# steps above, in the given order, e.g. STEPS="doctor bench"), CALIBRATE_ARGS (extra arguments
# for calibrate, e.g. "--rounds 3"). Run it from anywhere; it works in the checkout it sits in.
# Exit code: 0 when every step passed, else 1 (summary.txt says which failed).
set -uo pipefail

if [ $# -lt 1 ] || [ "$1" = "-h" ] || [ "$1" = "--help" ]; then
  sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
fi
LOG_DIR=$(mkdir -p "$1" && cd "$1" && pwd)
CAL_OUT=${2:-$LOG_DIR/calibration.json}
case $CAL_OUT in /*) ;; *) CAL_OUT=$PWD/$CAL_OUT ;; esac   # before the cd below
mkdir -p "$(dirname "$CAL_OUT")"   # calibrate writes only at the end, after minutes of work
PYTHON=${PYTHON:-python3}
STEPS=${STEPS:-gpu doctor tests bench calibrate notebooks}
cd "$(dirname "$0")/.."

# cuda, never auto: on a host whose GPU is not usable this must fail, not test the simulator.
export LABKIT_BACKEND=cuda PYTHONUNBUFFERED=1
# addopts="" drops pyproject's --nbmake, so the tests step runs tests/ only.
PYTEST=("$PYTHON" -m pytest -p no:cacheprovider -o addopts="" -q -rfE --no-header)

: > "$LOG_DIR/summary.txt"
failed=0

# step NAME LIMIT_SECONDS COMMAND...: run it with a time limit, log it, record its exit code.
step() {
  local name=$1 limit=$2; shift 2
  local started=$SECONDS rc
  echo "== $name: $*"
  timeout "$limit" "$@" > "$LOG_DIR/$name.log" 2>&1
  rc=$?
  local line="$name rc=$rc $((SECONDS - started))s"
  [ $rc -eq 124 ] && line="$line (timed out after ${limit}s)"
  echo "$line" | tee -a "$LOG_DIR/summary.txt"
  tail -n 3 "$LOG_DIR/$name.log" | sed 's/^/   /'
  return $rc
}

for s in $STEPS; do
  case $s in
    gpu)
      step gpu 30 nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,pstate \
        --format=csv || true ;;
    doctor)
      step doctor 120 "$PYTHON" -m labkit doctor || failed=1 ;;
    tests)
      step tests 1200 "${PYTEST[@]}" tests || failed=1 ;;
    bench)
      if step bench 300 "$PYTHON" -m labkit bench --wrapper --json; then
        tail -n 1 "$LOG_DIR/bench.log" > "$LOG_DIR/bench.json"
      else
        failed=1
      fi ;;
    calibrate)
      # shellcheck disable=SC2086  # CALIBRATE_ARGS is a list of words on purpose
      step calibrate 900 "$PYTHON" -m labkit calibrate --out "$CAL_OUT" ${CALIBRATE_ARGS:-} \
        || failed=1 ;;
    notebooks)
      step notebooks 1800 "${PYTEST[@]}" --nbmake --nbmake-timeout=300 notebooks || failed=1 ;;
    *)
      echo "unknown step $s (steps: gpu doctor tests bench calibrate notebooks)" \
        | tee -a "$LOG_DIR/summary.txt"
      failed=1 ;;
  esac
done

echo "logs in $LOG_DIR; summary:"
cat "$LOG_DIR/summary.txt"
exit $failed

#!/usr/bin/env bash
# Which of the course's timing claims flip on a busy host (issue 18): every solution notebook on
# the GPU, idle and then under tools/host_load.py, each claim logged by labkit.expect.
#
#   tools/claims_under_load.sh LOG_DIR [PASS ...]
#
# Passes, in the order given (default: idle load-learner load-strict), each a few minutes:
#   idle           LABKIT_CLAIMS=learner, no load: the baseline
#   load-learner   LABKIT_CLAIMS=learner under the load: every claim is checked and logged;
#                  no notebook may stop (a stop is a learner's Run All stopping)
#   load-strict    LABKIT_CLAIMS=strict under the load: the notebooks a claim stops, as CI would
# Every pass appends to LOG_DIR/claims.jsonl (tag NOTEBOOK|CONDITION|MODE) and records each
# notebook's exit code in LOG_DIR/summary.txt; LOG_DIR/report.md is the table and the flips
# (tools/claims_report.py), rewritten after each pass.
#
# Environment: PYTHON (default python3), CORES (busy processes, default: all cores but two),
# LOAD_SECONDS (the load's own deadline, default 900: a pass that runs longer ends unloaded),
# BACKEND (default cuda; sim for a dry run), NOTEBOOKS (default notebooks/solutions/*_solution.ipynb).
set -uo pipefail

if [ $# -lt 1 ] || [ "$1" = "-h" ] || [ "$1" = "--help" ]; then
  sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
fi
LOG_DIR=$(mkdir -p "$1" && cd "$1" && pwd); shift
PASSES=${*:-idle load-learner load-strict}
PYTHON=${PYTHON:-python3}
LOAD_SECONDS=${LOAD_SECONDS:-900}
CORES=${CORES:-$(( $(nproc) > 2 ? $(nproc) - 2 : 1 ))}
cd "$(dirname "$0")/.."
NOTEBOOKS=${NOTEBOOKS:-$(ls notebooks/solutions/*_solution.ipynb)}
export LABKIT_BACKEND=${BACKEND:-cuda} PYTHONUNBUFFERED=1 LABKIT_CLAIMS_LOG=$LOG_DIR/claims.jsonl

run_pass() {   # run_pass CONDITION MODE
  local condition=$1 mode=$2 nb tag rc started
  for nb in $NOTEBOOKS; do
    tag="$(basename "$nb" _solution.ipynb)|$condition|$mode"
    started=$SECONDS
    LABKIT_CLAIMS=$mode LABKIT_CLAIMS_TAG=$tag timeout 600 "$PYTHON" -m pytest -p no:cacheprovider \
      -o addopts="" -q --no-header --nbmake "$nb" > "$LOG_DIR/${tag//|/_}.log" 2>&1
    rc=$?
    echo "$tag rc=$rc $((SECONDS - started))s" | tee -a "$LOG_DIR/summary.txt"
  done
}

for pass in $PASSES; do
  case $pass in
    idle) run_pass idle learner ;;
    load-learner|load-strict)
      # its own process group, so that one kill ends the load and its workers; the deadline is
      # the safety net if this script is killed first
      setsid "$PYTHON" tools/host_load.py --cores "$CORES" --seconds "$LOAD_SECONDS" \
        > "$LOG_DIR/host_load.log" 2>&1 &
      load=$!
      sleep 2   # let the workers start
      run_pass load "${pass#load-}"
      kill -TERM -- "-$load" 2>/dev/null; wait "$load" 2>/dev/null ;;
    *) echo "unknown pass $pass: use idle, load-learner or load-strict" >&2; exit 2 ;;
  esac
  "$PYTHON" tools/claims_report.py "$LOG_DIR/claims.jsonl" --baseline "idle|learner" \
    > "$LOG_DIR/report.md" 2>&1 || "$PYTHON" tools/claims_report.py "$LOG_DIR/claims.jsonl" \
    > "$LOG_DIR/report.md" 2>&1
done
cat "$LOG_DIR/report.md"

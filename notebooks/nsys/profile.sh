#!/usr/bin/env bash
# Profile a small CUDA graph with Nsight Systems: notebook 10, section 7.
#
#   bash nsys/profile.sh [node|graph] [REPORT_DIR]        (from the notebooks folder)
#
# Runs graph_step.py (beside this script: capture four kernels, replay the graph 20 times) under
#
#   nsys profile --trace=cuda,nvtx,osrt --cuda-graph-trace=node -o REPORT_DIR/graph_step_node ...
#
#   node   (default) every kernel node of each replay on the stream's row
#   graph  each replay as one span: less tracing cost, no view inside the graph
#
# labkit's NVTX ranges (capture, instantiate, upload, launch) sit on the Python thread's row.
# REPORT_DIR defaults to nsys-reports/ beside this script. PYTHON (default python3) is the
# Python with labkit installed. Needs a GPU and Nsight Systems' nsys on PATH.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
MODE=${1:-node}
REPORT_DIR=${2:-$HERE/nsys-reports}
PYTHON=${PYTHON:-python3}

if [ "$MODE" = "-h" ] || [ "$MODE" = "--help" ]; then
  sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'
  exit 0
fi
case "$MODE" in
  node|graph) ;;
  *) echo "profile.sh: the first argument is node or graph (how --cuda-graph-trace shows a graph), not '$MODE'" >&2
     exit 2 ;;
esac
if ! command -v nsys >/dev/null 2>&1; then
  echo "profile.sh: nsys (Nsight Systems' command line) is not on PATH. It ships with the CUDA" >&2
  echo "toolkit (try: export PATH=/usr/local/cuda/bin:\$PATH) and as its own download from" >&2
  echo "https://developer.nvidia.com/nsight-systems; install it on the GPU machine, then run this again." >&2
  exit 3
fi
if ! "$PYTHON" -c "import labkit" >/dev/null 2>&1; then
  echo "profile.sh: $PYTHON cannot import labkit; set PYTHON to the Python the course's notebooks use" >&2
  echo "(e.g. PYTHON=\$HOME/.venv/bin/python bash nsys/profile.sh)" >&2
  exit 4
fi

mkdir -p "$REPORT_DIR"
REPORT="$REPORT_DIR/graph_step_$MODE"
nsys profile --trace=cuda,nvtx,osrt --cuda-graph-trace="$MODE" --force-overwrite=true \
  -o "$REPORT" "$PYTHON" "$HERE/graph_step.py"

echo
echo "report: $REPORT.nsys-rep"
echo "tables: nsys stats --report cuda_api_sum,cuda_gpu_kern_sum,nvtx_sum $REPORT.nsys-rep"
echo "timeline: open $REPORT.nsys-rep in the Nsight Systems GUI (nsys-ui, or File > Open on your"
echo "  own computer after copying the file there); the labkit NVTX row is on the Python thread"

#!/usr/bin/env bash
# GPU round 9: the final calibration (interleaved rounds); which step flips the graph figure; the course site on the GPU (one tar, so
# every page comes back); the solution notebooks under nbmake.
export LABKIT_BACKEND=cuda PYTHONUNBUFFERED=1 JUPYTER_PATH=/tmp/site/share/jupyter
o=${OUT:-/tmp/out}; mkdir -p "$o"
timeout 150 python3 -W ignore -m labkit calibrate --rounds 7 --out "$o/h200.json" > "$o/calibrate.log" 2>&1
echo "calibrate rc=$?"; tail -2 "$o/calibrate.log"
timeout 90 python3 -W ignore tools/gpu_graph_flip.py > "$o/flip.log" 2>&1; echo "flip rc=$?"; cat "$o/flip.log"
timeout 240 python3 -m labkit run --backend cuda --out /tmp/site_build > "$o/run.log" 2>&1
echo "run rc=$?"; tail -c 300 "$o/run.log"; tar -C /tmp -czf "$o/site.tgz" site_build
timeout 200 python3 -m pytest -q -p no:cacheprovider -o addopts="--nbmake --nbmake-timeout=200" notebooks/solutions > "$o/nbmake.log" 2>&1
echo "nbmake rc=$?"; tail -3 "$o/nbmake.log"

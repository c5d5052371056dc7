#!/usr/bin/env bash
# GPU round 8: where does the graph figure move inside calibrate; is the host's speed a matter
# of which CPU the process runs on (NUMA node of the GPU); the course built on the GPU.
export LABKIT_BACKEND=cuda PYTHONUNBUFFERED=1 JUPYTER_PATH=/tmp/site/share/jupyter
o=${OUT:-/tmp/out}; mkdir -p "$o"
{ nvidia-smi topo -m; lscpu | grep -E "NUMA|Model name|^CPU\(s\)"; } > "$o/topo.txt" 2>&1
timeout 120 python3 -W ignore tools/gpu_graph_drift.py > "$o/drift.log" 2>&1; echo "drift rc=$?"; cat "$o/drift.log" | grep -v Warn
aff=$(nvidia-smi topo -m 2>/dev/null | awk '/^GPU0/{print $(NF-2)}')
echo "GPU0 CPU affinity: $aff"
for i in 1 2 3; do
  for how in free pinned; do
    if [ $how = pinned ] && [ -n "$aff" ]; then pre="taskset -c $aff"; else pre=""; fi
    r=$(timeout 60 $pre python3 -W ignore -m labkit bench --json 2>/dev/null | tail -1)
    echo "$how $i $(echo "$r" | python3 -c 'import json,sys;d=json.loads(sys.stdin.read());print(" ".join(f"{k[:10]}={d[k]:.2f}" for k in ["eager_us_per_kernel","graph_us_per_kernel","graph_launch_us","instantiate_us","exec_update_us","node_update_us"]))')"
  done
done
timeout 240 python3 -m labkit run --backend cuda --out "$o/site" > "$o/run.log" 2>&1
echo "run rc=$?"; tail -12 "$o/run.log"
du -sh "$o/site"

#!/bin/bash
# session 3 GPU call 1: device-loop probe (CLI and Jupyter), trace honesty x6
export LABKIT_BACKEND=cuda
L=$OUT/call1.log
echo "=== probe CLI $(date +%T)" >> $L
python3 .probe/s5_loop.py 7 >> $L 2>&1
echo "=== probe Jupyter $(date +%T)" >> $L
python3 - >> $L 2>&1 <<'PY'
import nbformat, nbclient
nb = nbformat.v4.new_notebook()
nb.cells = [nbformat.v4.new_code_cell("import os; os.environ['LABKIT_BACKEND']='cuda'\n%run .probe/s5_loop.py 7")]
c = nbclient.NotebookClient(nb, timeout=300, kernel_name="python3")
c.execute()
for o in nb.cells[0].outputs:
    print(o.get("text", o.get("evalue", "")))
PY
for i in 1 2 3 4 5 6; do
  echo "=== honesty run $i $(date +%T)" >> $L
  python3 -m pytest -p no:cacheprovider -q -o addopts= -m gpu tests/measure/test_trace_honesty.py 2>&1 | grep -E "Error|passed|failed" >> $L
done
echo "=== done $(date +%T)" >> $L

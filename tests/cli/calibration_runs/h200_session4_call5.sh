#!/bin/bash
# session 4 call: labkit's capture share (s9), nb06 with PNGs, cuda conformance + gpu tests
export LABKIT_BACKEND=cuda
L=$OUT/call5.log
echo "=== s9 $(date +%T)" >> $L
timeout 200 python3 .probe/s9_share.py >> $L 2>&1
echo "=== nb06 $(date +%T)" >> $L
timeout 200 python3 .probe/exec_nb.py notebooks/06_measuring.ipynb $OUT/nb06 16 >> $L 2>&1
echo "=== pytest cuda $(date +%T)" >> $L
timeout 420 python3 -m pytest -p no:cacheprovider -q -o addopts= -x tests 2>&1 | tail -25 >> $L
echo "=== done $(date +%T)" >> $L

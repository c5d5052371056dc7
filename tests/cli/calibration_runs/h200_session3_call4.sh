#!/bin/bash
# session 3 final call: decode bench (one run, every figure), honesty x10, all notebooks strict
export LABKIT_BACKEND=cuda
L=$OUT/call4.log
echo "=== decode bench $(date +%T)" >> $L
python3 -m labkit bench --decode --json --host-load --by-layers 1 2 4 >> $L 2>&1
for i in $(seq 1 10); do
  echo "=== honesty run $i $(date +%T)" >> $L
  python3 -m pytest -p no:cacheprovider -q -o addopts= -m gpu tests/measure/test_trace_honesty.py 2>&1 | grep -E "Error|passed|failed" >> $L
done
echo "=== notebooks strict $(date +%T)" >> $L
CI=true LABKIT_CLAIMS_LOG=$OUT/claims.jsonl timeout 400 python3 -m labkit run --backend cuda --out /tmp/site_out >> $L 2>&1
echo "rc=$?" >> $L
echo "=== done $(date +%T)" >> $L

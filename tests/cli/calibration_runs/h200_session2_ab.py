import os, subprocess, sys
CODE = """
import sys, pytest
from labkit.measure import _trace
F, P, FR = map(int, sys.argv[1:4])
_trace.TraceProbe.FUNCTIONS, _trace.TraceProbe.WARM_PREPARED, _trace.TraceProbe.FRESH = F, bool(P), FR
sys.exit(pytest.main(['-p', 'no:cacheprovider', '-q', '-o', 'addopts=', '-m', 'gpu', '--tb=line', 'tests/measure/test_trace_honesty.py']))
"""
for cfg in [(3, 1, 3), (0, 1, 3), (3, 0, 3), (0, 0, 3), (0, 0, 0)]:
    for rep in range(2):
        r = subprocess.run([sys.executable, "-c", CODE, *map(str, cfg)], capture_output=True, text=True)
        lines = [l for l in r.stdout.splitlines() if "AssertionError" in l or "passed" in l or "failed" in l]
        print(f"F,P,FR={cfg} run {rep}:", *[l[:400] for l in lines], sep="\n   ", flush=True)

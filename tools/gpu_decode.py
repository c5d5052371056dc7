"""Tokens per second of the capstone decoder: numba eager, numba graph, PyTorch eager and graph.

python tools/gpu_decode.py [N_TOKENS]   (prints one line per variant, then a JSON line)
"""
import json
import sys

import numpy as np

import labkit
from labkit import decoder as dec

n = int(sys.argv[1]) if len(sys.argv) > 1 else 48
m = dec.make_model(seed=0)
s = labkit.Stream()
ref = dec.reference_generate(m, 7, n)
rows = {}
for name, fn in [("numba eager", lambda: dec.generate_eager(m, 7, n, s)),
                 ("numba graph", lambda: dec.generate_graph(m, 7, n, s))]:
    fn()                                  # warm: JIT, module load, first capture
    r = fn()
    rows[name] = r
if labkit.backend == "cuda":
    try:
        for g in (False, True):
            dec.torch_generate(m, 7, n, graph=g)
            rows["torch graph" if g else "torch eager"] = dec.torch_generate(m, 7, n, graph=g)
    except ImportError as e:
        print("PyTorch rows skipped:", e)
out = {"backend": labkit.backend, "device": labkit.device_name(), "tokens": n,
       "kernels_per_token": m.cfg.kernels_per_token}
for name, r in rows.items():
    same = bool(np.array_equal(r.tokens, ref))
    lat = np.asarray(r.token_us)
    print(f"{name:12s} {r.tokens_per_s:10.0f} tokens/s  p50 {np.median(lat):8.1f} µs/token  "
          f"p99 {np.percentile(lat, 99):8.1f}  same tokens as numpy: {same}")
    out[name.replace(' ', '_') + "_tokens_per_s"] = r.tokens_per_s
    out[name.replace(' ', '_') + "_same"] = same
out["graph_over_eager"] = out["numba_graph_tokens_per_s"] / out["numba_eager_tokens_per_s"]
print(f"numba graph / numba eager: {out['graph_over_eager']:.2f}x")
print(json.dumps(out))

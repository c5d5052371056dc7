"""Which step of a benchmark makes a later 200-kernel graph replay slower on the GPU?

In one fresh process: build a 200-node chain graph, then after each step print its GPU time
per node (event pair around 30 replays) and that of a freshly instantiated copy.
"""
import numpy as np

import labkit
from labkit import timing
from labkit.bench import GRID, BLOCK, N, _capture_chain, prepared_chain
from labkit.workloads import add_one, chain

s = labkit.Stream()
x = labkit.to_device(np.zeros(N, np.float32)); y = labkit.to_device(np.zeros(N, np.float32))
chain(2, x, s); s.synchronize()
g0 = _capture_chain(200, x, s); ex0 = g0.instantiate(); ex0.launch(s); s.synchronize()


def show(tag, stream=None):
    st = stream or s
    a = timing.gpu_measure(lambda: ex0.launch(st), st, repeat=30, per=200).median
    with g0.instantiate() as ex1:
        ex1.launch(st); st.synchronize()
        b = timing.gpu_measure(lambda: ex1.launch(st), st, repeat=30, per=200).median
    h = timing.measure(lambda: ex0.launch(st), sync=st, per=200, repeat=20).median
    print(f"{tag:34s} ex0 gpu/node {a:.3f}  fresh exec {b:.3f}  launch+sync/k {h:.3f}", flush=True)


show("start")
show("again")
timing.measure(lambda: chain(200, x, s), sync=s, repeat=20); show("after eager chains")
p = labkit.prepare(add_one, GRID, BLOCK, s, x); prepared_chain(p, 200); s.synchronize()
timing.measure(lambda: prepared_chain(p, 200), sync=s, repeat=20); show("after prepared chains")
for _ in range(5):
    _capture_chain(200, x, s).close()
show("after 5 captures")
g2 = _capture_chain(200, y, s)
for i in range(4):
    ex0.update(g2 if i % 2 == 0 else g0)
show("after exec updates")
ex0.set_kernel_args(0, add_one, GRID, BLOCK, y); ex0.set_kernel_args(0, add_one, GRID, BLOCK, x)
show("after set_kernel_args")
s2 = labkit.Stream(); show("on a second new stream", s2)
s2.close(); show("after closing that stream")

"""Does a CUPTI trace make later launches dearer? Host µs of one 200-node cudaGraphLaunch and of
one numba launch: before any trace, after a trace that detaches CUPTI (the default), after one
that leaves it attached, and after detaching by hand.  python tools/gpu_cupti_effect.py"""
import numpy as np

import labkit
from labkit import _cupti, timing
from labkit.bench import _capture_chain, _host
from labkit.workloads import add_one

s = labkit.Stream()
x = labkit.to_device(np.zeros(1024, np.float32))
add_one[4, 256, s](x); s.synchronize()
g = _capture_chain(200, x, s)
ex = g.instantiate()
ex.launch(s); s.synchronize()


def costs(label):
    gl = _host(lambda: ex.launch(s), s, 200).median
    nl = _host(lambda: add_one[4, 256, s](x), s, 200).median
    print(f"{label:34s} graph launch {gl:7.2f} µs   numba launch {nl:7.2f} µs")


def trace():
    with timing.timeline():
        ex.launch(s); s.synchronize()


costs("before any trace")
trace()
costs("after a trace (CUPTI detached)")
_cupti.FINALIZE = False
trace()
costs("after a trace (CUPTI left attached)")
# Detaching by hand now (cuptiFinalize with this trace's state left behind) was tried on the
# H200 and broke the next launch (cudaErrorLaunchFailure): labkit detaches only at a trace's end.

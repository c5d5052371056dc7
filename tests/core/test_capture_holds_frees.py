"""A capture holds numba's lazy frees: an array collected while a capture is open is freed after it.

On the H200 a capture failed with 901 when numba freed (cuMemFree) arrays of earlier work inside
it; `labkit.capture` holds those frees until the capture ends.
"""
import gc
import os
import subprocess
import sys

import numpy as np
import pytest

import labkit
from labkit.course import workloads as w

N = 1024


def test_arrays_collected_inside_a_capture_do_not_break_it():
    s = labkit.Stream()
    x = labkit.to_device(np.zeros(N, np.float32))
    w.chain(1, x, s)
    s.synchronize()
    garbage = [labkit.to_device(np.zeros(N, np.float32)) for _ in range(64)]   # > numba's queue of 10
    with labkit.capture(s) as cap:
        w.add_one[4, 256, s](x)
        del garbage[:]            # collected here: a free now would invalidate the capture
        gc.collect()
        w.add_one[4, 256, s](x)
    with cap.graph.instantiate() as ex:
        ex.launch(s)
        s.synchronize()
    np.testing.assert_array_equal(x.copy_to_host(), np.full(N, 3, np.float32))
    cap.graph.close()
    s.close()


_AFTER_CLOSE = r"""
import gc, sys
import numpy as np
from numba import cuda
import labkit
from labkit.course import workloads as w

def once():
    s = labkit.Stream()
    x = labkit.to_device(np.zeros(1024, np.float32))
    w.chain(1, x, s); s.synchronize()
    garbage = [labkit.to_device(np.zeros(1024, np.float32)) for _ in range(64)]
    with labkit.capture(s) as cap:
        w.add_one[4, 256, s](x)
        del garbage[:]; gc.collect()
        w.add_one[4, 256, s](x)
    with cap.graph.instantiate() as ex:
        ex.launch(s); s.synchronize()
    assert (x.copy_to_host() == 3).all()
    cap.graph.close(); s.close()

once()           # frees_held keeps numba's context from here on
cuda.close()     # ... which numba now releases: the next capture must find the new one
once()
print("ok")
"""


@pytest.mark.gpu
@pytest.mark.skipif(os.environ.get("LABKIT_BACKEND") != "cuda",
                    reason="needs a GPU: run with LABKIT_BACKEND=cuda")
def test_frees_are_still_held_after_numba_released_its_context():
    # in a child process: cuda.close() would pull the context from under the other tests
    r = subprocess.run([sys.executable, "-c", _AFTER_CLOSE], capture_output=True, text=True,
                       timeout=120, env=os.environ.copy())
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), r.stdout + r.stderr

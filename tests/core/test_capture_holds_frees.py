"""A capture holds numba's lazy frees: an array collected while a capture is open is freed after it.

On the H200 a capture failed with 901 when numba freed (cuMemFree) arrays of earlier work inside
it; `labkit.capture` holds those frees until the capture ends.
"""
import gc

import numpy as np

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

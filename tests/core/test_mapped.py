"""labkit.mapped_array: host memory a kernel writes in place, read on the host without a copy."""
import numpy as np

import labkit


@labkit.kernel
def _fill(out, v):
    out[0] = v


def test_a_kernel_writes_mapped_memory_that_the_host_reads_without_a_copy():
    a = labkit.mapped_array(4, np.int32)
    assert a.host.tolist() == [0, 0, 0, 0]
    with labkit.Stream() as s:
        _fill[1, 1, s](a.device, 7)
        s.synchronize()
    assert a.host[0] == 7

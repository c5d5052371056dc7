"""Notebook 02's check accepts a capture with the copy inside and rejects one without it."""
import labkit  # noqa: F401  (before numba.cuda)
import numpy as np
import pytest

from labkit import check, rt
from labkit.course.exercises.nb02 import check_request_graph
from labkit.course.kernels_extra import infer_step, preprocess

N, BLOCK = 1024, 256
GRID = N // BLOCK
D2H = rt.cudaMemcpyKind.cudaMemcpyDeviceToHost


@pytest.fixture
def bufs():
    x = np.linspace(-1, 1, N, dtype=np.float32)
    inp, work, out = labkit.to_device(x), labkit.device_array(N), labkit.device_array(N)
    s = labkit.Stream()
    preprocess[GRID, BLOCK, s](inp, work)     # warm-up, as the notebook does
    infer_step[GRID, BLOCK, s](work, out)
    s.synchronize()
    return x, inp, work, out, s


def _capture(s, inp, work, out, host, with_copy=True, swap=False):
    with labkit.capture(s) as cap:
        if swap:
            infer_step[GRID, BLOCK, s](work, out)
            preprocess[GRID, BLOCK, s](inp, work)
        else:
            preprocess[GRID, BLOCK, s](inp, work)
            infer_step[GRID, BLOCK, s](work, out)
        if with_copy:
            check(rt.cudaMemcpyAsync(host.ctypes.data, out.device_ctypes_pointer.value,
                                     host.nbytes, D2H, s.handle))
    return cap.graph


def test_accepts_the_solutions_capture(bufs):
    x, inp, work, out, s = bufs
    host = labkit.pinned_array(N)
    check_request_graph(_capture(s, inp, work, out, host), x, host, s)


def test_rejects_the_starters_capture_without_the_copy(bufs):
    x, inp, work, out, s = bufs
    host = labkit.pinned_array(N)
    with pytest.raises(AssertionError, match=r"^the graph has nodes \['kernel', 'kernel'\] but no memcpy"):
        check_request_graph(_capture(s, inp, work, out, host, with_copy=False), x, host, s)


def test_rejects_kernels_in_the_wrong_order(bufs):
    x, inp, _, out, s = bufs
    host = labkit.pinned_array(N)
    work = labkit.to_device(np.zeros(N, np.float32))   # infer_step must not find a stale answer
    with pytest.raises(AssertionError, match=r"^the graph ran but out_host does not hold"):
        check_request_graph(_capture(s, inp, work, out, host, swap=True), x, host, s)

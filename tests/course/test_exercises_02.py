"""Notebook 02's check accepts a capture with the copy inside and rejects one without it."""
import labkit  # noqa: F401  (before numba.cuda)
import numpy as np
import pytest

from labkit import check, rt
from labkit.course.exercises.nb02 import check_request_graph
from labkit.course.kernels_extra import infer_step, preprocess
from tests.notebook_sources import run_cell

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


def _notebooks_exercise(role, bufs):
    """The notebook's starter or solution cell, then its check cell, on the notebook's names."""
    x, inp, work, out, s = bufs
    ns = {"labkit": labkit, "np": np, "check": check, "rt": rt, "D2H": D2H,
          "ptr": lambda a: a.device_ctypes_pointer.value, "N": N, "GRID": GRID, "BLOCK": BLOCK,
          "preprocess": preprocess, "infer_step": infer_step,
          "x_host": x, "inp": inp, "work": work, "out": out}
    return run_cell("02", "check", run_cell("02", role, ns))


def test_accepts_the_notebooks_solution(bufs):
    ns = _notebooks_exercise("solution", bufs)
    assert ns["ex_cap"].graph.node_kinds() == ["kernel", "kernel", "memcpy"]


def test_rejects_the_notebooks_starter_without_the_copy(bufs):
    with pytest.raises(AssertionError, match=r"^the graph has nodes \['kernel', 'kernel'\] but no memcpy: put the "
                                             r"cudaMemcpyAsync of the output into the pinned host buffer"):
        _notebooks_exercise("starter", bufs)


def test_rejects_kernels_in_the_wrong_order(bufs):
    x, inp, _, out, s = bufs
    host = labkit.pinned_array(N)
    work = labkit.to_device(np.zeros(N, np.float32))   # infer_step must not find a stale answer
    with labkit.capture(s) as cap:      # the solution with its two kernels swapped
        infer_step[GRID, BLOCK, s](work, out)
        preprocess[GRID, BLOCK, s](inp, work)
        check(rt.cudaMemcpyAsync(host.ctypes.data, out.device_ctypes_pointer.value,
                                 host.nbytes, D2H, s.handle))
    with pytest.raises(AssertionError, match=r"^the graph ran but the pinned host buffer does not hold"):
        check_request_graph(cap.graph, x, host, s)


def _copy_case(bufs, dst=None, src="out", nbytes=None):
    """The solution's capture, with its copy changed; the check runs on ``host``."""
    x, inp, work, out, s = bufs
    host = labkit.pinned_array(N)
    dst = host if dst is None else dst
    source = {"out": out, "work": work}[src]
    with labkit.capture(s) as cap:
        preprocess[GRID, BLOCK, s](inp, work)
        infer_step[GRID, BLOCK, s](work, out)
        check(rt.cudaMemcpyAsync(dst.ctypes.data, source.device_ctypes_pointer.value,
                                 dst.nbytes if nbytes is None else nbytes, D2H, s.handle))
    return cap.graph, x, host, s


def test_rejects_a_copy_into_another_host_buffer(bufs):
    graph, x, host, s = _copy_case(bufs, dst=labkit.pinned_array(N))
    with pytest.raises(AssertionError, match=r"^the graph ran but the pinned host buffer does not hold .* its "
                                             r"destination"):
        check_request_graph(graph, x, host, s)


def test_rejects_a_copy_of_the_intermediate_buffer(bufs):
    graph, x, host, s = _copy_case(bufs, src="work")
    with pytest.raises(AssertionError, match=r"^the graph ran but the pinned host buffer does not hold .* its "
                                             r"source"):
        check_request_graph(graph, x, host, s)


def test_rejects_a_copy_of_half_the_bytes(bufs):
    graph, x, host, s = _copy_case(bufs, nbytes=N * 4 // 2)
    with pytest.raises(AssertionError, match=r"^the graph ran but the pinned host buffer does not hold .* its "
                                             r"size \(the whole buffer, in bytes\)"):
        check_request_graph(graph, x, host, s)


def test_rejects_the_capture_object_instead_of_its_graph(bufs):
    x, inp, work, out, s = bufs
    with labkit.capture(s) as cap:
        preprocess[GRID, BLOCK, s](inp, work)
    with pytest.raises(ValueError, match=r"^pass the captured graph \(cap.graph\), got Capture"):
        check_request_graph(cap, x, labkit.pinned_array(N), s)

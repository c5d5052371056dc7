"""Notebook 02's check: the failing capture's code diagnosed, and a repaired capture that reads
its request from the input buffer at launch; each half-fix a newcomer tries is refused."""
import labkit  # noqa: F401  (before numba.cuda)
import numpy as np
import pytest

from labkit import check, rt
from labkit.course.exercises.nb02 import check_request_capture
from labkit.course.kernels_extra import infer_step, preprocess
from tests.notebook_sources import run_cell

N, BLOCK = 1024, 256
GRID = N // BLOCK
D2H = rt.cudaMemcpyKind.cudaMemcpyDeviceToHost


def ptr(a):
    return a.device_ctypes_pointer.value


@pytest.fixture
def nb():
    """The names the notebook's earlier cells make, warmed up as the notebook does."""
    x = np.linspace(-1, 1, N, dtype=np.float32)
    inp, work, out = labkit.to_device(x), labkit.device_array(N), labkit.device_array(N)
    s = labkit.Stream()
    preprocess[GRID, BLOCK, s](inp, work)
    infer_step[GRID, BLOCK, s](work, out)
    s.synchronize()
    return {"labkit": labkit, "np": np, "check": check, "rt": rt, "D2H": D2H, "ptr": ptr,
            "N": N, "GRID": GRID, "BLOCK": BLOCK, "preprocess": preprocess,
            "infer_step": infer_step, "x_host": x, "inp": inp, "work": work, "out": out,
            "ex_out": labkit.pinned_array(N)}


def _check(nb, capture_request, first_error=900):
    check_request_capture(capture_request, first_error, nb["inp"], nb["ex_out"])


def _capture(nb, *, host_input=False, sync_inside=False, copy=True, device_copy=None):
    """The request's capture with the mistakes named (the starter has the first two)."""
    def capture_request(stream):
        src = nb["x_host"] if host_input else (device_copy if device_copy is not None else nb["inp"])
        with labkit.capture(stream) as cap:
            preprocess[GRID, BLOCK, stream](src, nb["work"])
            infer_step[GRID, BLOCK, stream](nb["work"], nb["out"])
            if copy:
                check(rt.cudaMemcpyAsync(nb["ex_out"].ctypes.data, ptr(nb["out"]),
                                         nb["ex_out"].nbytes, D2H, stream.handle))
            if sync_inside:
                stream.synchronize()
        return cap.graph
    return capture_request


def test_accepts_the_notebooks_solution(nb, capsys):
    ns = run_cell("02", "check", run_cell("02", "solution", nb))
    assert ns["first_error"] == 900
    assert capsys.readouterr().out.startswith("correct: cudaErrorStreamCaptureUnsupported (900)")


def test_accepts_the_diagnosis_by_name(nb):
    _check(nb, _capture(nb), first_error="cudaErrorStreamCaptureUnsupported")


def test_the_starter_fails_with_900_and_its_check_asks_for_the_diagnosis_first(nb, capsys):
    ns = run_cell("02", "starter", nb)
    assert "cudaErrorStreamCaptureUnsupported (900)" in capsys.readouterr().out
    with pytest.raises(AssertionError, match=r"^first_error is not set yet: run the starting code"):
        run_cell("02", "check", ns)


def test_rejects_the_starter_once_diagnosed(nb):
    starter = run_cell("02", "starter", nb)["capture_request"]
    with pytest.raises(AssertionError, match=r"^your capture still fails: cudaErrorStreamCaptureUnsupported "
                                             r"\(900\) from launching preprocess on a host array"):
        _check(nb, starter)


def test_rejects_901_the_error_after_the_first(nb):
    with pytest.raises(AssertionError, match=r"^901 says the capture had already been invalidated"):
        _check(nb, _capture(nb), first_error=901)


def test_rejects_a_code_the_starter_does_not_raise(nb):
    with pytest.raises(AssertionError, match=r"^the starting code does not raise 700"):
        _check(nb, _capture(nb), first_error=700)


def test_rejects_a_name_that_is_no_cuda_error(nb):
    with pytest.raises(ValueError, match=r"^first_error = 'capture unsupported' is not the name"):
        _check(nb, _capture(nb), first_error="capture unsupported")


def test_rejects_the_host_array_fixed_but_the_synchronize_kept(nb):
    with pytest.raises(AssertionError, match=r"^your capture still fails: cudaErrorStreamCaptureUnsupported "
                                             r"\(900\) from synchronizing a stream"):
        _check(nb, _capture(nb, sync_inside=True))


def test_rejects_the_synchronize_removed_but_the_host_array_kept(nb):
    with pytest.raises(AssertionError, match=r"^your capture still fails: .* on a host array"):
        _check(nb, _capture(nb, host_input=True))


def test_rejects_the_copy_dropped_with_the_synchronize(nb):
    with pytest.raises(AssertionError, match=r"^the graph has nodes \['kernel', 'kernel'\] but no copy"):
        _check(nb, _capture(nb, copy=False))


def test_rejects_a_device_copy_of_the_request_made_for_the_capture(nb):
    # the host array "fixed" with a device copy of its own: the graph never reads inp
    private = labkit.to_device(nb["x_host"])
    with pytest.raises(AssertionError, match=r"^a launch returned the answer for the request that was in "
                                             r"the input when you captured"):
        _check(nb, _capture(nb, device_copy=private))


def test_rejects_the_input_copied_in_inside_the_capture(nb):
    def capture_request(stream):
        dev = labkit.device_array(N)
        with labkit.capture(stream) as cap:
            check(rt.cudaMemcpyAsync(ptr(dev), nb["x_host"].ctypes.data, dev.nbytes,
                                     rt.cudaMemcpyKind.cudaMemcpyHostToDevice, stream.handle))
            preprocess[GRID, BLOCK, stream](dev, nb["work"])
            infer_step[GRID, BLOCK, stream](nb["work"], nb["out"])
            check(rt.cudaMemcpyAsync(nb["ex_out"].ctypes.data, ptr(nb["out"]),
                                     nb["ex_out"].nbytes, D2H, stream.handle))
        return cap.graph
    with pytest.raises(AssertionError, match=r"^the graph has nodes \['memcpy', 'kernel', 'kernel', "
                                             r"'memcpy'\]; one request is two kernels and one copy out"):
        _check(nb, capture_request)


def test_rejects_a_copy_of_the_intermediate_buffer(nb):
    def capture_request(stream):
        with labkit.capture(stream) as cap:
            preprocess[GRID, BLOCK, stream](nb["inp"], nb["work"])
            infer_step[GRID, BLOCK, stream](nb["work"], nb["out"])
            check(rt.cudaMemcpyAsync(nb["ex_out"].ctypes.data, ptr(nb["work"]),
                                     nb["ex_out"].nbytes, D2H, stream.handle))
        return cap.graph
    with pytest.raises(AssertionError, match=r"^the graph ran, but the pinned host buffer does not hold"):
        _check(nb, capture_request)


def test_rejects_the_capture_object_instead_of_its_graph(nb):
    def capture_request(stream):
        with labkit.capture(stream) as cap:
            preprocess[GRID, BLOCK, stream](nb["inp"], nb["work"])
        return cap
    with pytest.raises(ValueError, match=r"^capture_request must return the captured graph \(cap.graph\), "
                                         r"got Capture"):
        _check(nb, capture_request)


def test_the_check_leaves_the_notebooks_input_as_it_was(nb):
    before = nb["inp"].copy_to_host()
    _check(nb, _capture(nb))
    assert np.array_equal(nb["inp"].copy_to_host(), before)

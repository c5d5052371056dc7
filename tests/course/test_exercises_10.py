"""Notebook 10's serving check accepts the solution and rejects the plausible wrong answers."""
import labkit  # noqa: F401  (before numba.cuda)
import numpy as np
import pytest

from labkit.course.exercises import nb10
from tests.notebook_sources import run_cell


def _padded(g, r):
    p = np.zeros(g.static_inputs[0].shape[0], np.float32)
    p[:r.size] = r
    return p


def test_accepts_the_notebooks_solution(capsys):
    serve = run_cell("10", "solution", {"np": np})["serve"]
    nb10.check_serve(serve)
    assert capsys.readouterr().out.startswith(
        "correct: 5 requests of sizes [300, 1024, 17, 640, 999] served by 5 replays")


def test_rejects_unpadded_requests_and_says_to_pad_to_the_capture_size():
    with pytest.raises(AssertionError, match=r"^serve called the graphed callable with a request "
                                             r"smaller than the graph's buffer .*pad each request "
                                             r"up to that size"):
        nb10.check_serve(lambda g, reqs: [g(r).copy_to_host() for r in reqs])


def test_rejects_keeping_the_device_arrays_the_calls_return():
    with pytest.raises(AssertionError, match=r"^result 0 is a \w+, not a numpy array: the graphed "
                                             r"callable returns the same device buffer"):
        nb10.check_serve(lambda g, reqs: [g(_padded(g, r)) for r in reqs])


def test_rejects_copying_the_outputs_only_after_all_the_calls():
    def late(g, reqs):
        outs = [g(_padded(g, r)) for r in reqs]
        return [o.copy_to_host()[:r.size] for o, r in zip(outs, reqs)]
    with pytest.raises(AssertionError, match=r"^result 0 holds the last request's answer: it was "
                                             r"read after later calls had overwritten"):
        nb10.check_serve(late)


def test_rejects_one_host_buffer_reused_for_every_result():
    def shared(g, reqs):
        buf = np.empty(nb10.SIZE, np.float32)
        out = []
        for r in reqs:
            g(_padded(g, r)).copy_to_host(buf)
            out.append(buf[:r.size])
        return out
    with pytest.raises(AssertionError, match=r"^results 0 and 1 share memory"):
        nb10.check_serve(shared)


def test_rejects_results_with_the_padding_still_on():
    with pytest.raises(AssertionError, match=r"^result 0 has 1024 values but request 0 had 300; "
                                             r"the padding is still on it"):
        nb10.check_serve(lambda g, reqs: [g(_padded(g, r)).copy_to_host() for r in reqs])


def test_rejects_computing_the_answers_in_numpy_instead_of_replaying():
    with pytest.raises(AssertionError, match=r"^the graph was replayed 0 times for 5 requests"):
        nb10.check_serve(lambda g, reqs: [3 * r + 1 for r in reqs])


def test_rejects_a_missing_or_short_result_list():
    with pytest.raises(AssertionError, match=r"^serve returned NoneType: return a list"):
        nb10.check_serve(lambda g, reqs: None)
    with pytest.raises(AssertionError, match=r"^serve returned 4 results for 5 requests"):
        nb10.check_serve(lambda g, reqs: [g(_padded(g, r)).copy_to_host()[:r.size]
                                          for r in reqs[:4]])


def test_the_notebooks_starter_fails_its_check_cell():
    with pytest.raises(AssertionError, match=r"^serve called the graphed callable with a request "
                                             r"smaller"):
        run_cell("10", "check", run_cell("10", "starter", {"np": np}))


def test_rejects_padding_to_the_right_size_in_the_wrong_dtype():
    def float64_pad(g, reqs):
        out = []
        for r in reqs:
            p = np.zeros(nb10.SIZE)
            p[:r.size] = r
            out.append(g(p).copy_to_host()[:r.size])
        return out
    with pytest.raises(AssertionError, match=r"^serve padded the request to the graph's size but "
                                             r"not in its dtype .*dtype float64"):
        nb10.check_serve(float64_pad)


@pytest.mark.skipif(labkit.backend != "sim", reason="a numba device array takes a slice")
def test_rejects_slicing_the_device_output_on_the_simulator():
    with pytest.raises(AssertionError, match=r"^serve sliced the device array a call returned: "
                                             r"that array is the graph's static output"):
        nb10.check_serve(lambda g, reqs: [g(_padded(g, r))[:r.size] for r in reqs])


def test_rejects_results_converted_to_lists_without_blaming_the_device_buffer():
    with pytest.raises(AssertionError, match=r"^result 0 is a list: return each result as a numpy "
                                             r"array"):
        nb10.check_serve(lambda g, reqs: [g(_padded(g, r)).copy_to_host()[:r.size].tolist()
                                          for r in reqs])

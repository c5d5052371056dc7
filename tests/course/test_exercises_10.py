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


def _pieces(r, size=nb10.SIZE):
    return [r[lo:lo + size] for lo in range(0, max(r.size, 1), size)]


def _keep(take):
    """Every piece served, but each request's result kept as ``take(out, n)`` of its last
    call's device output, not copied to the host."""
    def serve(g, reqs):
        kept = []
        for r in reqs:
            for p in _pieces(r):
                out = take(g(_padded(g, p)), p.size)
            kept.append(out)
        return kept
    return serve


def _serve(take):
    """A right serve, each piece's result taken from its call's output by ``take(out, n)``."""
    def serve(g, reqs):
        return [np.concatenate([take(g(_padded(g, p)), p.size) for p in _pieces(r)])
                for r in reqs]
    return serve


def test_accepts_the_notebooks_solution(capsys):
    serve = run_cell("10", "solution", {"np": np})["serve"]
    nb10.check_serve(serve)
    assert capsys.readouterr().out.startswith(
        "correct: 5 requests of sizes [300, 1024, 17, 2500, 999] served by 7 replays")


def test_rejects_unpadded_requests_and_says_to_pad_to_the_capture_size():
    with pytest.raises(AssertionError, match=r"^serve called the graphed callable with a request "
                                             r"smaller than the graph's buffer .*pad each request "
                                             r"up to that size"):
        nb10.check_serve(lambda g, reqs: [g(r).copy_to_host() for r in reqs])


def test_rejects_keeping_the_device_arrays_the_calls_return():
    with pytest.raises(AssertionError, match=r"^result 0 is a \w+, not a numpy array: the graphed "
                                             r"callable returns the same device buffer"):
        nb10.check_serve(_keep(lambda out, n: out))


def test_rejects_copying_the_outputs_only_after_all_the_calls():
    def late(g, reqs):
        outs = [[g(_padded(g, p)) for p in _pieces(r)] for r in reqs]
        return [np.concatenate([o.copy_to_host()[:p.size] for o, p in zip(os, _pieces(r))])
                for os, r in zip(outs, reqs)]
    with pytest.raises(AssertionError, match=r"^result 0 holds the last request's answer: it was "
                                             r"read after later calls had overwritten"):
        nb10.check_serve(late)


def test_rejects_one_host_buffer_reused_for_every_result():
    def shared(g, reqs):
        buf = np.empty(nb10.SIZE, np.float32)
        out = []
        for r in reqs:
            parts = []
            for p in _pieces(r):
                g(_padded(g, p)).copy_to_host(buf)
                parts.append(buf[:p.size])
            out.append(parts[0] if len(parts) == 1 else np.concatenate(parts))
        return out
    with pytest.raises(AssertionError, match=r"^results 0 and 1 share memory"):
        nb10.check_serve(shared)


def test_rejects_results_with_the_padding_still_on():
    with pytest.raises(AssertionError, match=r"^result 0 has 1024 values but request 0 had 300; "
                                             r"the padding is still on it"):
        nb10.check_serve(_serve(lambda out, n: out.copy_to_host()))


def test_rejects_computing_the_answers_in_numpy_instead_of_replaying():
    with pytest.raises(AssertionError, match=r"^the graph was replayed 0 times for 5 requests"):
        nb10.check_serve(lambda g, reqs: [3 * r + 1 for r in reqs])


def test_rejects_a_missing_or_short_result_list():
    with pytest.raises(AssertionError, match=r"^serve returned NoneType: return a list"):
        nb10.check_serve(lambda g, reqs: None)
    with pytest.raises(AssertionError, match=r"^serve returned 4 results for 5 requests"):
        nb10.check_serve(lambda g, reqs: _serve(lambda out, n: out.copy_to_host()[:n])(g, reqs[:4]))


def test_the_notebooks_starter_fails_its_check_cell():
    with pytest.raises(AssertionError, match=r"^serve called the graphed callable with a request "
                                             r"smaller"):
        run_cell("10", "check", run_cell("10", "starter", {"np": np}))


def test_rejects_padding_to_the_right_size_in_the_wrong_dtype():
    def float64_pad(g, reqs):
        out = []
        for r in reqs:
            p = np.zeros(nb10.SIZE)
            p[:min(r.size, nb10.SIZE)] = r[:nb10.SIZE]
            out.append(g(p).copy_to_host()[:r.size])
        return out
    with pytest.raises(AssertionError, match=r"^serve padded the request to the graph's size but "
                                             r"not in its dtype .*dtype float64"):
        nb10.check_serve(float64_pad)


def test_accepts_a_slice_of_the_device_output_copied_out():
    nb10.check_serve(_serve(lambda out, n: out[:n].copy_to_host()))


def test_rejects_a_slice_of_the_device_output_kept_on_the_device():
    with pytest.raises(AssertionError, match=r"^result 0 is a \w+, not a numpy array"):
        nb10.check_serve(_keep(lambda out, n: out[:n]))


def test_rejects_answers_computed_by_numpy_beside_the_calls():
    def numpy_beside(g, reqs):
        out = []
        for r in reqs:
            for p in _pieces(r):
                g(_padded(g, p))               # the calls are made, their output ignored
            out.append(3 * r + 1)
        return out
    with pytest.raises(AssertionError, match=r"^result 0 is 3r \+ 1, but not what the graph returned "
                                             r"for it: the check added 1"):
        nb10.check_serve(numpy_beside)


def test_rejects_a_request_larger_than_the_graph_silently_truncated():
    def truncating(g, reqs):
        out = []
        for r in reqs:
            n = min(r.size, nb10.SIZE)
            out.append(g(_padded(g, r[:n])).copy_to_host()[:n])
        return out
    with pytest.raises(AssertionError, match=r"^the graph was replayed once per request, but request 3 "
                                             r"has 2500 values and the graph takes 1024"):
        nb10.check_serve(truncating)


def test_rejects_a_request_larger_than_the_graph_padded_as_if_it_fitted():
    def one_call_each(g, reqs):
        return [g(_padded(g, r)).copy_to_host()[:r.size] for r in reqs]
    with pytest.raises(AssertionError, match=r"^serve could not fit request 3 \(2500 values\) into "
                                             r"the graph's 1024"):
        nb10.check_serve(one_call_each)


def test_rejects_results_converted_to_lists_without_blaming_the_device_buffer():
    with pytest.raises(AssertionError, match=r"^result 0 is a list: return each result as a numpy "
                                             r"array"):
        nb10.check_serve(lambda g, reqs: [x.tolist() for x in _serve(
                             lambda out, n: out.copy_to_host()[:n])(g, reqs)])

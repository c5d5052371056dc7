"""Notebook 05's server check accepts the solution and rejects each plausible wrong answer.

Each wrong server below is the solution with one mistake a newcomer makes; the check must
refuse it and name what went wrong.
"""
import re

import labkit  # first: it chooses the backend before numba.cuda is imported
import numpy as np
import pytest

from labkit import rt
from labkit.course.exercises import NotSolvedYet, nb05
from labkit.course.workloads import add_one, saxpy, scale
from tests.notebook_sources import run_cell

G, B = nb05.GRID, nb05.BLOCK


def _namespace():
    return {"ex05": nb05, "labkit": labkit, "saxpy": saxpy, "np": np, "s": labkit.Stream()}


SOLUTION = run_cell("05", "solution", _namespace())["MyServer"]


class Right(SOLUTION):
    """The notebook's solution, as the wrong servers' base."""


def _check(cls):
    nb05.check_server(cls, labkit.Stream())


def test_accepts_the_notebooks_solution_and_prints_the_payoff(capsys):
    _check(SOLUTION)
    out = capsys.readouterr().out
    assert out.startswith("correct: 17 requests, 6 adapter switches and 2 new versions")
    costs = [float(x) for x in re.findall(r"(\d+\.\d)", out.splitlines()[1])]
    switch, update, _, anew = costs
    assert switch < anew and update < anew, "the payoff line should show updates are cheaper"


def test_the_notebooks_solution_passes_its_check_cell(capsys):
    run_cell("05", "check", run_cell("05", "solution", _namespace()))
    assert "correct: " in capsys.readouterr().out


def test_the_notebooks_starter_fails_its_check_cell():
    with pytest.raises(NotSolvedYet, match=r"^answer returned None"):
        run_cell("05", "check", run_cell("05", "starter", _namespace()))


def test_refuses_a_request_put_under_the_old_name_instead_of_into_the_captured_buffer():
    class Rebinds(Right):
        def answer(self, request):
            self.inp = labkit.to_device(request)          # a new buffer; the graph reads the old
            self.ex.launch(self.stream)
            self.stream.synchronize()
            return self.out.copy_to_host()
    with pytest.raises(AssertionError, match=r"^request 0, served with adapter A and version 1, "
                                             r"got a wrong answer: it matches no adapter.*Did the graph "
                                             r"read this request"):
        _check(Rebinds)


def test_refuses_an_answer_read_before_the_replay_finished():
    class NoWait(Right):
        def answer(self, request):
            if not hasattr(self, "h_out"):
                self.h_out = labkit.pinned_array(nb05.N)
            self.inp.copy_to_device(request)
            self.ex.launch(self.stream)
            labkit.check(rt.cudaMemcpyAsync(self.h_out.ctypes.data,
                                            self.out.device_ctypes_pointer.value, self.h_out.nbytes,
                                            rt.cudaMemcpyKind.cudaMemcpyDeviceToHost,
                                            self.stream.handle))
            return self.h_out.copy()                       # no wait: the copy has not landed
    with pytest.raises(AssertionError, match=r"^request 0, .*got a wrong answer: it matches no "
                                             r"adapter .*was the replay finished when you read"):
        _check(NoWait)


def test_refuses_returning_a_host_buffer_the_next_request_overwrites():
    class SharedOut(Right):
        def answer(self, request):
            if not hasattr(self, "h_out"):
                self.h_out = labkit.pinned_array(nb05.N)
            self.inp.copy_to_device(request)
            self.ex.launch(self.stream)
            labkit.check(rt.cudaMemcpyAsync(self.h_out.ctypes.data,
                                            self.out.device_ctypes_pointer.value, self.h_out.nbytes,
                                            rt.cudaMemcpyKind.cudaMemcpyDeviceToHost,
                                            self.stream.handle))
            self.stream.synchronize()
            return self.h_out                              # every answer is this one buffer
    with pytest.raises(AssertionError, match=r"^the answer returned for request 0 was right when "
                                             r"returned, but has changed since.*Return a copy"):
        _check(SharedOut)


def test_refuses_eager_kernels_instead_of_a_replay():
    class Eager(Right):
        def answer(self, request):
            self.inp.copy_to_device(request)
            saxpy[G, B, self.stream](self.out, 1.0, self.inp, self.adapter)
            scale[G, B, self.stream](self.out, nb05.WEIGHTS[1])
            for _ in range(nb05.LAYERS):
                add_one[G, B, self.stream](self.out)
            self.stream.synchronize()
            return self.out.copy_to_host()
    with pytest.raises(AssertionError, match=r"^answer launched self\.ex 0 times for one request"):
        _check(Eager)


def test_refuses_an_adapter_switch_that_only_rebinds_a_name():
    class Rebind(Right):
        def use_adapter(self, adapter):
            self.adapter = adapter
    with pytest.raises(AssertionError, match=r"^request 3, served with adapter B and version 1, got "
                                             r"a wrong answer: it matches adapter A and version 1"):
        _check(Rebind)


def test_refuses_an_adapter_copied_into_the_captured_adapters_buffer():
    class CopiesIn(Right):
        def use_adapter(self, adapter):
            self.adapters["A"].copy_to_device(adapter.copy_to_host())   # A is the graph's buffer
    with pytest.raises(AssertionError, match=r"^after adapter B, adapter A's buffer holds other "
                                             r"values.*Never write into an adapter"):
        _check(CopiesIn)


def test_refuses_an_adapter_switch_done_by_a_whole_executable_update():
    class Recaptures(Right):
        def use_adapter(self, adapter):
            self.adapter = adapter
            with labkit.capture(self.stream) as cap:
                nb05._record(self.version, self.inp, self.out, adapter, self.stream)
            assert self.ex.update(cap.graph).ok

        def new_version(self, graph):
            self.version = 3 if len(graph) > 2 + nb05.LAYERS else 2
            super().new_version(graph)
        version = 1
    with pytest.raises(AssertionError, match=r"^use_adapter\(B\) updated every node of the "
                                             r"executable from a new capture: only node 0 changed"):
        _check(Recaptures)


def test_refuses_a_node_update_of_the_wrong_node():
    class WrongNode(Right):
        def use_adapter(self, adapter):
            self.adapter = adapter
            self.ex.set_kernel_args(1, saxpy, G, B, self.out, 1.0, self.inp, adapter)
    # a GPU's driver may refuse the other kernel in node 1 at once; the simulator runs it
    with pytest.raises((AssertionError, labkit.CudaError)) as err:
        _check(WrongNode)
    if isinstance(err.value, AssertionError):
        assert str(err.value).startswith("request 3, served with adapter B and version 1, got a "
                                         "wrong answer: it matches no adapter and version")
        assert "did you change the node you meant to?" in str(err.value)


def test_refuses_a_new_executable_for_a_version_an_update_serves():
    class AlwaysInstantiates(Right):
        def new_version(self, graph):
            old, self.ex = self.ex, graph.instantiate(upload_stream=self.stream)
            old.close()
            self.use_adapter(self.adapter)
    with pytest.raises(AssertionError, match=r"^new_version\(2\) made a new executable, but version "
                                             r"2 has the same topology"):
        _check(AlwaysInstantiates)


def test_refuses_an_update_whose_910_is_ignored():
    class IgnoresResult(Right):
        def new_version(self, graph):
            self.ex.update(graph)
            self.use_adapter(self.adapter)
    with pytest.raises(AssertionError, match=r"^after new_version\(3\), self\.ex is the executable "
                                             r"of version 2: version 3 has one node more"):
        _check(IgnoresResult)


def test_refuses_a_version_change_that_drops_the_adapter_in_use():
    class ForgetsAdapter(Right):
        def new_version(self, graph):
            if not self.ex.update(graph).ok:
                old, self.ex = self.ex, graph.instantiate(upload_stream=self.stream)
                old.close()
    with pytest.raises(AssertionError, match=r"^request 6, served with adapter B and version 2, got "
                                             r"a wrong answer: it matches adapter A and version 2"):
        _check(ForgetsAdapter)


def test_refuses_leaving_the_replaced_executable_open():
    class Leaks(Right):
        def new_version(self, graph):
            if not self.ex.update(graph).ok:
                self.ex = graph.instantiate(upload_stream=self.stream)
            self.use_adapter(self.adapter)
    with pytest.raises(AssertionError, match=r"^after new_version\(3\), the old executable is still "
                                             r"open"):
        _check(Leaks)


def test_refuses_something_that_is_not_a_server_class():
    with pytest.raises(TypeError, match=r"^pass your class \(a subclass of ex05\.Server\)"):
        _check(SOLUTION(labkit.Stream()))


def test_the_request_stream_of_section_8_is_seeded_and_mostly_small_with_a_long_tail():
    req = nb05.request_stream(1000, seed=7)
    np.testing.assert_array_equal(req, nb05.request_stream(1000, seed=7))
    assert req.min() >= 1 and req.max() <= nb05.MAX_BATCH
    assert np.median(req) <= 4 < 16 < req.max()

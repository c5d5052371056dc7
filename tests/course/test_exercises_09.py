"""Notebook 09's exercise check: the notebook's solution passes; the starter and every
partially fixed decode (one planted bug left) are rejected, each with its own message."""
import numpy as np
import pytest

import labkit
from labkit import check, rt
from labkit.course import decoder as dec
from labkit.course.exercises import nb09
from tests.notebook_sources import code, run_cell


def _namespace():
    """The names the notebook's earlier cells made."""
    return {"labkit": labkit, "dec": dec, "ex09": nb09, "np": np, "check": check, "rt": rt}


def _notebooks(role):
    """The notebook's ``decode`` from its starter or solution cell."""
    return run_cell("09", role, _namespace())


def test_check_accepts_the_notebooks_solution():
    ns = _notebooks("solution")
    tokens = nb09.check_decode(ns["decode"], ns["stream"])
    m = nb09.new_model()
    np.testing.assert_array_equal(tokens, dec.reference_generate(m, nb09.PROMPT, nb09.N_TOKENS))


def test_check_rejects_the_notebooks_starter_at_its_sync_in_the_capture():
    ns = _notebooks("starter")
    with pytest.raises(AssertionError, match=r"^the capture failed with "
                                             r"cudaErrorStreamCaptureUnsupported \(900\)"):
        run_cell("09", "check", ns)


def test_the_module_variant_without_bugs_is_the_solution():
    with labkit.Stream() as s:
        nb09.check_decode(nb09.variant(False, False, False), s)


def test_check_rejects_a_decode_whose_only_bug_left_is_the_stale_input():
    with labkit.Stream() as s:
        with pytest.raises(AssertionError, match=r"^the tokens differ from numpy's from token 0 "
                                                 r"on .*computed from the wrong data"):
            nb09.check_decode(nb09.variant(stale_input=True, freed_buffer=False,
                                           sync_in_capture=False), s)


def test_check_rejects_a_decode_whose_only_bug_left_is_the_freed_buffer():
    with labkit.Stream() as s:
        with pytest.raises(AssertionError, match=r"^a replay failed with cudaErrorIllegalAddress "
                                                 r"\(700\): a kernel of the graph touched memory"):
            nb09.check_decode(nb09.variant(stale_input=False, freed_buffer=True,
                                           sync_in_capture=False), s)


def test_check_rejects_a_decode_whose_only_bug_left_is_the_sync_in_the_capture():
    with labkit.Stream() as s:
        with pytest.raises(AssertionError, match=r"^the capture failed with "
                                                 r"cudaErrorStreamCaptureUnsupported \(900\)"):
            nb09.check_decode(nb09.variant(stale_input=False, freed_buffer=False,
                                           sync_in_capture=True), s)


def test_check_rejects_a_decode_that_returns_too_few_tokens():
    fixed = nb09.variant(False, False, False)
    with labkit.Stream() as s:
        with pytest.raises(AssertionError, match=r"^decode returned 7 tokens; it must return"):
            nb09.check_decode(lambda m, p, n, st: fixed(m, p, n, st)[:-1], s)


def test_the_starter_and_the_module_broken_decode_fail_alike():
    """The starter cell is the module's `broken_decode` written out: both fail at the sync."""
    with labkit.Stream() as s:
        with pytest.raises(AssertionError, match=r"^the capture failed"):
            nb09.check_decode(nb09.broken_decode, s)


def test_check_rejects_a_decode_that_fixes_the_freed_buffer_by_never_freeing_it():
    """Deleting the cudaFree silences the 700 and leaks the buffer at every decode."""
    free_line = '    check(rt.cudaFree(scratch), "cudaFree")'
    solution = code("09", "solution")
    assert free_line in solution
    ns = _namespace()
    exec(solution.replace(free_line, "    pass"), ns)
    with pytest.raises(AssertionError, match=r"^decode returned with the buffer behind "
                                             r"m.state\['logits'\] still allocated: memory you "
                                             r"cudaMalloc is yours to free"):
        nb09.check_decode(ns["decode"], ns["stream"])


def test_check_rejects_a_decode_that_runs_the_step_without_its_graph():
    def decode(m, prompt, n, s):             # right tokens, no graph: the bugs sidestepped
        return dec.generate_eager(m, prompt, n, s).tokens
    with labkit.Stream() as s:
        with pytest.raises(AssertionError, match=r"^the tokens are right, but decode launched a "
                                                 r"graph 0 times for 8 tokens[\s\S]*Keep the "
                                                 r"capture, and replay it once per token$"):
            nb09.check_decode(decode, s)


def test_check_rejects_the_fixed_decode_run_under_the_eager_switch():
    def decode(m, prompt, n, s):
        with labkit.eager():
            return nb09.variant(False, False, False)(m, prompt, n, s)
    with labkit.Stream() as s:
        with pytest.raises(AssertionError, match=r"^the tokens are right, but decode launched a "
                                                 r"graph 0 times"):
            nb09.check_decode(decode, s)


def _solution_with(old, new):
    """The notebook's solution with one line changed: a newcomer's variant of it."""
    solution = code("09", "solution")
    assert old in solution, old
    ns = _namespace()
    exec(solution.replace(old, new), ns)
    return ns["decode"], ns["stream"]


def test_check_rejects_a_decode_that_captures_the_step_again_every_token():
    decode, s = _solution_with(
        "        step(stream)\n",
        "        again = labkit.captured(one_token)\n"
        "        again.capture(stream)\n"
        "        again(stream)\n"
        "        stream.synchronize()\n"
        "        again.close()\n")
    with pytest.raises(AssertionError, match=r"^the tokens are right, but decode captured 9 times "
                                             r"for 8 tokens[\s\S]*Capture before the loop$"):
        nb09.check_decode(decode, s)


def test_check_rejects_a_decode_that_frees_the_scratch_before_waiting_for_the_replays():
    free_line = '    check(rt.cudaFree(scratch), "cudaFree")   # bug 2 fixed: free after the executable is gone\n'
    solution = code("09", "solution")
    assert free_line in solution
    moved = solution.replace(free_line, "").replace(
        "        step(stream)\n    stream.synchronize()\n",
        "        step(stream)\n" + free_line + "    stream.synchronize()\n")
    assert moved != solution.replace(free_line, "")
    ns = _namespace()
    exec(moved, ns)
    with pytest.raises(AssertionError, match=r"^decode freed a buffer while replays that use it were "
                                             r"still queued on the stream"):
        nb09.check_decode(ns["decode"], ns["stream"])


def test_a_decode_that_frees_after_waiting_but_before_closing_the_executable_passes():
    # CUDA's rule is that memory be valid while a launch uses it: waited for, it is free to go
    free_line = '    check(rt.cudaFree(scratch), "cudaFree")   # bug 2 fixed: free after the executable is gone\n'
    solution = code("09", "solution")
    moved = solution.replace(free_line, "").replace(
        "    stream.synchronize()\n    tokens =",
        "    stream.synchronize()\n" + free_line + "    tokens =")
    ns = _namespace()
    exec(moved, ns)
    nb09.check_decode(ns["decode"], ns["stream"])


def test_a_half_fix_that_copies_the_token_but_leaves_the_position_is_told_about_the_position():
    decode, s = _solution_with(
        "    ex09.start(m, prompt_token)               # bug 1 fixed: copy INTO the captured buffers\n",
        "    m.state['tok'].copy_to_device(np.array([prompt_token], np.int32))\n")
    with pytest.raises(AssertionError, match=r"^the tokens differ from numpy's from token \d+ on "
                                             r"[\s\S]*the graph's position buffer holds 9, not 8: the "
                                             r"replays did not start from position 0"):
        nb09.check_decode(decode, s)

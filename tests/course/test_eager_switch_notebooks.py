"""With the eager switch on, notebooks' results are unchanged: the decoders of 07 and 09.

Two notebooks' results, not every notebook run whole: that keeps CI time down, and whole
notebooks also hold timing claims (a graph beats eager launches) and show capture errors on
purpose, which an eager run is meant not to reproduce. What is checked is what the notebooks
compute: the capstone's tokens (07: its decode, graph and eager, and its exercise's several-steps
graph) and notebook 09's exercise decode, each against numpy's tokens.
"""
import numpy as np

import labkit
from labkit import check, rt
from labkit.course import decoder as dec
from labkit.course.exercises import nb07, nb09
from tests.notebook_sources import run_cell


def test_the_capstones_graph_decode_gives_numpys_tokens_with_the_switch_on():
    m = dec.make_model(seed=0, n_layers=2)
    want = dec.reference_generate(m, 1, 6)
    with labkit.Stream() as s, labkit.eager():
        ex = dec.capture_step(m, s)
        assert isinstance(ex, labkit._eager.EagerExec)
        graph = dec.generate_graph(m, 1, 6, s, exec_=ex)
        eager = dec.generate_eager(m, 1, 6, s)
    np.testing.assert_array_equal(graph.tokens, want)
    np.testing.assert_array_equal(eager.tokens, want)


def test_notebook_07s_exercise_solution_passes_its_check_with_the_switch_on():
    with labkit.Stream() as s, labkit.eager():
        ns = run_cell("07", "solution", {"labkit": labkit, "dec": dec, "stream": s})
        out = nb07.check_capstone(ns["build"], ns["decode"], s)
    assert sorted(out) == sorted(nb07.KS)


def test_notebook_09s_exercise_solution_passes_its_check_with_the_switch_on():
    ns = {"labkit": labkit, "dec": dec, "ex09": nb09, "np": np, "check": check, "rt": rt}
    with labkit.eager():
        run_cell("09", "solution", ns)
        tokens = nb09.check_decode(ns["decode"], ns["stream"])
    np.testing.assert_array_equal(
        tokens, dec.reference_generate(nb09.new_model(), nb09.PROMPT, nb09.N_TOKENS))


def test_the_switch_runs_09s_capture_bug_and_its_stale_input_right_eagerly():
    """What the switch is for: a decode whose bug is the capture's (a sync inside it) or the
    graph's (a stale input: eager code reads the rebound name again) gives numpy's tokens
    eagerly, so the comparison points at the graph."""
    with labkit.Stream() as s, labkit.eager():
        for bugs in (dict(sync_in_capture=True), dict(stale_input=True)):
            decode = nb09.variant(**{"stale_input": False, "freed_buffer": False,
                                     "sync_in_capture": False, **bugs})
            nb09.check_decode(decode, s)

"""Notebook 04's check accepts a captured diamond and rejects the plausible wrong graphs."""
import labkit  # noqa: F401  (before numba.cuda)
import numpy as np
import pytest

from labkit.course.exercises.nb04 import check_diamond
from labkit.course.workloads import add_one, saxpy
from tests.notebook_sources import run_cell

N, GRID, BLOCK = 1024, 4, 256
FIVES = np.full(N, 5.0, np.float32)


@pytest.fixture
def streams():
    origin, side = labkit.Stream(), labkit.Stream()
    yield origin, side
    origin.close()
    side.close()


def _launched(graph, origin):
    ex = graph.instantiate()
    ex.launch(origin)
    origin.synchronize()


def _notebooks_exercise(role, origin, side):
    """The notebook's starter or solution cell, its graph launched, then its check cell."""
    ns = run_cell("04", role, {"labkit": labkit, "np": np, "N": N, "GRID": GRID, "BLOCK": BLOCK,
                               "add_one": add_one, "saxpy": saxpy,
                               "origin": origin, "side": side})
    _launched(ns["diamond"], origin)      # what the cell between them does
    return run_cell("04", "check", ns)


def _buffers():
    return [labkit.to_device(np.zeros(N, np.float32)) for _ in range(5)]


def test_accepts_the_notebooks_solution(streams, capsys):
    _notebooks_exercise("solution", *streams)
    assert capsys.readouterr().out.endswith("two branches that can run at the same time, and a join\n")


def test_rejects_the_notebooks_starter_as_a_chain(streams):
    with pytest.raises(AssertionError, match=r"^your graph is a chain: the two middle kernels"):
        _notebooks_exercise("starter", *streams)


def test_rejects_a_fork_whose_last_kernel_does_not_wait_for_the_side_branch(streams):
    origin, side = streams
    x, u, v, w, zeros = _buffers()
    with labkit.capture(origin) as cap:
        add_one[GRID, BLOCK, origin](x)
        with labkit.fork(origin, side):
            saxpy[GRID, BLOCK, origin](u, 2.0, x, zeros)
            saxpy[GRID, BLOCK, side](v, 3.0, x, zeros)
            saxpy[GRID, BLOCK, origin](w, 1.0, u, v)    # inside the fork: before the join
    with pytest.raises(AssertionError, match=r"^your graph ends in 2 nodes, not one"):
        check_diamond(cap.graph)


@pytest.mark.parametrize("u_stream, v_stream", [("side", "side"), ("origin", "origin")],
                         ids=["both-on-the-side-stream", "nothing-on-the-side-stream"])
def test_rejects_a_fork_whose_branches_share_one_stream(streams, u_stream, v_stream):
    origin, side = streams
    on = {"origin": origin, "side": side}
    x, u, v, w, zeros = _buffers()
    with labkit.capture(origin) as cap:
        add_one[GRID, BLOCK, origin](x)
        with labkit.fork(origin, side):
            saxpy[GRID, BLOCK, on[u_stream]](u, 2.0, x, zeros)
            saxpy[GRID, BLOCK, on[v_stream]](v, 3.0, x, zeros)
        saxpy[GRID, BLOCK, origin](w, 1.0, u, v)
    with pytest.raises(AssertionError, match=r"^you forked, but your two middle kernels still run "
                                             r"one after the other: they went on the same stream"):
        check_diamond(cap.graph)


def test_rejects_a_fork_taken_before_the_first_kernel(streams):
    origin, side = streams
    x, u, v, w, zeros = _buffers()
    with labkit.capture(origin) as cap:
        with labkit.fork(origin, side):
            add_one[GRID, BLOCK, origin](x)
            saxpy[GRID, BLOCK, origin](u, 2.0, x, zeros)
            saxpy[GRID, BLOCK, side](v, 3.0, x, zeros)  # no longer waits for x = 1
        saxpy[GRID, BLOCK, origin](w, 1.0, u, v)
    with pytest.raises(AssertionError, match=r"^your graph starts with 2 nodes, not one"):
        check_diamond(cap.graph)


def test_rejects_a_diamond_that_computes_the_wrong_values(streams):
    origin, side = streams
    x, u, v, w, zeros = _buffers()
    with labkit.capture(origin) as cap:
        add_one[GRID, BLOCK, origin](x)
        with labkit.fork(origin, side):
            saxpy[GRID, BLOCK, origin](u, 2.0, x, zeros)
            saxpy[GRID, BLOCK, side](v, 2.0, x, zeros)  # 2x where the exercise asks 3x
        saxpy[GRID, BLOCK, origin](w, 1.0, u, v)
    _launched(cap.graph, origin)
    with pytest.raises(AssertionError, match=r"^the graph has the right shape but computes the wrong"):
        check_diamond(cap.graph, w.copy_to_host(), FIVES)


def test_rejects_something_that_is_not_a_graph():
    with pytest.raises(ValueError, match=r"^pass the labkit.Graph of your capture"):
        check_diamond(object())


# Diamonds of the right shape whose branches race: one writes what the other reads. The race
# report of the simulator names them (on a GPU, where none does, only the values are checked).
sim_only = pytest.mark.skipif(labkit.backend != "sim", reason="the race report is the simulator's")


def _diamond(origin, side, left, right):
    x, u, v, w, zeros = _buffers()
    with labkit.capture(origin) as cap:
        add_one[GRID, BLOCK, origin](x)
        with labkit.fork(origin, side):
            left(origin, x, u, v, zeros)
            right(side, x, u, v, zeros)
        saxpy[GRID, BLOCK, origin](w, 1.0, u, v)
    return cap.graph


@sim_only
def test_rejects_a_branch_that_reads_what_the_other_writes(streams):
    origin, side = streams
    g = _diamond(origin, side,
                 lambda s, x, u, v, z: saxpy[GRID, BLOCK, s](u, 2.0, x, z),
                 lambda s, x, u, v, z: saxpy[GRID, BLOCK, s](v, 1.5, u, z))   # reads u
    with pytest.raises(AssertionError, match=r"^your two branches race: saxpy and saxpy both "
                                             r"use out / x, and one of them writes it"):
        check_diamond(g)


@sim_only
def test_rejects_a_branch_that_writes_in_place_what_the_other_reads(streams):
    origin, side = streams
    g = _diamond(origin, side,
                 lambda s, x, u, v, z: add_one[GRID, BLOCK, s](x),             # x in place
                 lambda s, x, u, v, z: saxpy[GRID, BLOCK, s](v, 3.0, x, z))
    with pytest.raises(AssertionError, match=r"^your two branches race: add_one and saxpy both "
                                             r"use x"):
        check_diamond(g)

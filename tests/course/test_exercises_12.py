"""Notebook 12's exercise check accepts switching the logging kernel off and on in the
executable and rejects each plausible wrong answer (one test per wrong answer)."""
import labkit
import pytest
from labkit import rt

from labkit.course import new_in_13 as nc
from labkit.course.exercises import nb12


def _log_node(graph):
    return next(n for n in nc.nodes_of(graph) if nc.kernel_name(n) == "log_step")


def right(ex, graph, on):
    assert rt.cudaGraphNodeSetEnabled(ex.handle, _log_node(graph), int(on))[0] == 0


def wrong_node(ex, graph, on):                      # the model's first step switched off
    rt.cudaGraphNodeSetEnabled(ex.handle, nc.nodes_of(graph)[0], int(on))


def new_executable(ex, graph, on):                  # a fresh executable, the given one untouched
    other = graph.instantiate()
    rt.cudaGraphNodeSetEnabled(other.handle, _log_node(graph), int(on))
    new_executable.kept.append(other)


new_executable.kept = []


def node_destroyed(ex, graph, on):                  # the graph edited, not the executable
    if not on:
        rt.cudaGraphDestroyNode(_log_node(graph))


def always_off(ex, graph, on):                      # ignores `on`
    rt.cudaGraphNodeSetEnabled(ex.handle, _log_node(graph), 0)


def toggles(ex, graph, on):                         # flips the state it finds
    node = _log_node(graph)
    now = rt.cudaGraphNodeGetEnabled(ex.handle, node)[1]
    rt.cudaGraphNodeSetEnabled(ex.handle, node, 0 if now else 1)


@pytest.fixture
def stream():
    return labkit.Stream()


def test_the_check_accepts_the_logging_node_disabled_and_enabled_in_the_executable(stream):
    out = nb12.check_logging_switch(right, stream)
    assert out["off"] == 0.0 and out["on again"] > 0.0


def test_the_check_rejects_switching_off_a_node_of_the_model(stream):
    with pytest.raises(AssertionError, match=r"^with logging off, a launch added .* not 2"):
        nb12.check_logging_switch(wrong_node, stream)


def test_the_check_rejects_a_new_executable(stream):
    with pytest.raises(AssertionError, match=r"^with logging off, the log still grew"):
        nb12.check_logging_switch(new_executable, stream)


def test_the_check_rejects_destroying_the_node_in_the_graph(stream):
    with pytest.raises(AssertionError, match=r"^the graph lost a node"):
        nb12.check_logging_switch(node_destroyed, stream)


def test_the_check_rejects_ignoring_on(stream):
    with pytest.raises(AssertionError, match=r"^after set_logging\(ex, graph, True\) the log"):
        nb12.check_logging_switch(always_off, stream)


def test_the_check_rejects_a_toggle(stream):
    with pytest.raises(AssertionError, match=r"^switching logging off a second time"):
        nb12.check_logging_switch(toggles, stream)


def test_the_check_refuses_what_is_not_a_function(stream):
    with pytest.raises(TypeError, match=r"^set_logging must be a function"):
        nb12.check_logging_switch(None, stream)

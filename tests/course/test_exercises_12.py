"""Notebook 12's exercise check accepts switching the logging kernel off and on in the
executable and rejects each plausible wrong answer (one test per wrong answer)."""
import labkit
import numpy as np
import pytest
from labkit import check, rt

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


def _other_graphs_log_node():
    """The logging node of another graph made as section 1's was (the notebook's `log_node`)."""
    s = labkit.Stream()
    x, log = labkit.to_device(np.zeros(1024, np.float32)), labkit.to_device(np.zeros(1, np.float32))
    with labkit.capture(s) as cap:
        nc.model_step[4, 256, s](x)
        nc.log_step[1, 32, s](x, log, nc.LOG_ITERS)
        nc.model_step[4, 256, s](x)
    _other_graphs_log_node.kept = (cap.graph, x, log)
    return _log_node(cap.graph)


def notebook_node(ex, graph, on):                   # section 2's log_node, another graph's node
    rt.cudaGraphNodeSetEnabled(ex.handle, notebook_node.node, int(on))


def local_id_unchecked(ex, graph, on):              # the DOT print's ID passed as the node
    row = next(r for r in nc.node_ids(graph) if r["kernel"] == "log_step")
    rt.cudaGraphNodeSetEnabled(ex.handle, row["local_id"], int(on))


def local_id_checked(ex, graph, on):                # the same, its error code checked
    row = next(r for r in nc.node_ids(graph) if r["kernel"] == "log_step")
    check(rt.cudaGraphNodeSetEnabled(ex.handle, row["local_id"], int(on)))


def on_the_graph(ex, graph, on):                    # the graph's handle where the call takes ex
    rt.cudaGraphNodeSetEnabled(graph.handle, _log_node(graph), int(on))


def inverted(ex, graph, on):                        # on=False read as "enabled"
    rt.cudaGraphNodeSetEnabled(ex.handle, _log_node(graph), int(not on))


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


@pytest.mark.parametrize("answer", [local_id_unchecked, on_the_graph, inverted, "notebook_node"])
def test_the_check_says_what_to_look_at_when_the_call_changed_nothing(stream, answer):
    if answer == "notebook_node":
        notebook_node.node = _other_graphs_log_node()
        answer = notebook_node
    with pytest.raises(AssertionError, match=r"^with logging off, the log still grew") as got:
        nb12.check_logging_switch(answer, stream)
    message = str(got.value)
    assert "error code" in message and "handle" in message and "on=False" in message


def test_the_check_turns_a_cuda_error_of_the_answer_into_a_hint(stream):
    with pytest.raises(AssertionError,
                       match=r"^set_logging\(ex, graph, False\) failed: cudaErrorInvalidValue"):
        nb12.check_logging_switch(local_id_checked, stream)

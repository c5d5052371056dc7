"""Check for notebook 12's exercise: a debugging kernel switched off and on in an executable,
without making a new one."""
from __future__ import annotations

import numpy as np

from ..._capture import capture
from ..._errors import CudaError, check
from ..._kernel import to_device
from ...backends import rt
from ..new_in_13 import LOG_ITERS, log_step, model_step, nodes_of

__all__ = ["check_logging_switch", "N"]

N = 1024


def _record(stream, x, log):
    model_step[4, 256, stream](x)
    log_step[1, 32, stream](x, log, LOG_ITERS)
    model_step[4, 256, stream](x)


def _run(ex, stream, x, log):
    """One launch: what it added to x (per element) and to the log."""
    before_x, before_log = x.copy_to_host(), log.copy_to_host()[0]
    ex.launch(stream)
    stream.synchronize()
    return x.copy_to_host() - before_x, float(log.copy_to_host()[0] - before_log)


def _switch(set_logging, ex, graph, on):
    """Call the answer; a CUDA error it raises becomes a hint about what the call was given."""
    try:
        set_logging(ex, graph, on)
    except CudaError as e:
        raise AssertionError(
            f"set_logging(ex, graph, {on}) failed: {e.name}. The call that switches a node "
            "takes the executable, and the node as a handle from the graph the executable was "
            "made from: an ID number from the DOT print, or a node of another graph, is not "
            "one") from None


def check_logging_switch(set_logging, stream) -> dict:
    """Check ``set_logging(ex, graph, on)``: it must switch the logging kernel of executable
    ``ex`` (made from ``graph``: a step, the logging kernel, a step) off (``on=False``) or on
    (``on=True``) for the launches that follow, in ``ex`` itself, leaving the graph and the
    model's two steps as they are. Returns what each launch added to the log."""
    if not callable(set_logging):
        raise TypeError("set_logging must be a function set_logging(ex, graph, on)")
    x = to_device(np.zeros(N, np.float32))
    log = to_device(np.zeros(1, np.float32))
    with capture(stream) as cap:
        _record(stream, x, log)
    graph = cap.graph
    ex = graph.instantiate()
    ex_id = check(rt.cudaGraphExecGetId(ex.handle), "cudaGraphExecGetId")
    count = len(nodes_of(graph))
    out = {}
    try:
        _, out["on at first"] = _run(ex, stream, x, log)
        _switch(set_logging, ex, graph, False)
        if len(nodes_of(graph)) != count:
            raise AssertionError(
                "the graph lost a node. The executable was made from the graph before: what "
                "happens to the graph afterwards does not reach it. What can you change in the "
                "executable itself?")
        if ex.handle is None or check(rt.cudaGraphExecGetId(ex.handle)) != ex_id:
            raise AssertionError("the executable you were given was closed or replaced: switch "
                                 "the kernel off in it, keeping it")
        step, out["off"] = _run(ex, stream, x, log)
        if not np.all(step == 2.0):
            raise AssertionError(
                f"with logging off, a launch added {step.min():g} … {step.max():g} to x, not 2: "
                "a node of the model itself was switched off. Which node runs log_step?")
        if out["off"] != 0.0:
            raise AssertionError(
                "with logging off, the log still grew: the executable you were given still runs "
                "the logging kernel. A CUDA call that fails returns an error code and changes "
                "nothing, so wrap yours in check(...) to see it. Is it given `ex` itself (a new "
                "executable, or the graph, leaves `ex` as it was), the node as a handle of a "
                "node of `graph` (not an ID number, not a node of another graph), and does "
                "on=False mean off?")
        _switch(set_logging, ex, graph, False)
        _, twice = _run(ex, stream, x, log)
        if twice != 0.0:
            raise AssertionError(
                "switching logging off a second time turned it back on: set the state asked "
                "for (on), rather than flipping the one there is")
        _switch(set_logging, ex, graph, True)
        step, out["on again"] = _run(ex, stream, x, log)
        if out["on again"] == 0.0:
            raise AssertionError("after set_logging(ex, graph, True) the log did not grow: "
                                 "`on` must switch the kernel back on")
        if not np.all(step == 2.0):
            raise AssertionError("with logging back on, the model's steps changed x by "
                                 f"{step.min():g} … {step.max():g}, not 2")
    finally:
        if ex.handle is not None:
            ex.close()
        graph.close()
    return out

"""Stream capture in the simulated runtime: beginning and ending it, asking about it, and its
dependencies. Which calls a capture forbids is `labkit.sim._capture_rules`'."""
from __future__ import annotations

from cuda.bindings import runtime as _cr

from . import _capture_rules as _rules
from . import _conditional as _cond
from . import _state as S
from . import clock as _clock

E, P = S.E, S.P
_ACTIVE = S.STATUS.cudaStreamCaptureStatusActive
_NONE = S.STATUS.cudaStreamCaptureStatusNone


def _begin_error(s):
    if s is None:
        return S.fail(E.cudaErrorInvalidResourceHandle)
    if s.handle in (0, S.LEGACY):
        return S.fail(E.cudaErrorStreamCaptureUnsupported)
    if s.capture is not None:
        return S.fail(E.cudaErrorIllegalState)
    return None


def cudaStreamBeginCapture(stream, mode):
    s = S.stream(stream)
    err = _begin_error(s)
    if err is not None:
        return (err,)
    _clock.api("cudaStreamBeginCapture", P("begin_capture_us"))
    s.capture, s.deps = S.Capture(s, S.MODE(int(mode))), []
    return S.OK


def cudaStreamBeginCaptureToGraph(stream, graph, dependencies, dependencyData, numDependencies,
                                  mode):
    s = S.stream(stream)
    err = _begin_error(s)
    if err is not None:
        return (err,)
    g = S.any_graph(graph)
    deps = None if g is None else S.deps_in(g, dependencies)
    if deps is None:
        return (S.fail(E.cudaErrorInvalidValue),)
    _clock.api("cudaStreamBeginCaptureToGraph", P("begin_capture_us"))
    c = S.Capture(s, S.MODE(int(mode)))
    c.graph, c.into_existing = g, True
    s.capture, s.deps = c, deps
    return S.OK


def cudaStreamBeginRecaptureToGraph(stream, mode, graph, callbackData):
    """Capture again into ``graph`` (CUDA 13.3): the capture must make the graph's nodes again,
    in the order they were made, each of the same kind after the same nodes; each takes the
    new parameters and keeps its handle (so an executable's per-node calls still name it). A
    mismatch invalidates the capture at the call that makes it (that call returns
    ``cudaErrorStreamCaptureInvalidated``), and so does ending it before every node is made
    again. Parameter-mismatch callbacks and re-capturing allocation nodes are not simulated."""
    s = S.stream(stream)
    err = _begin_error(s)
    if err is not None:
        return (err,)
    g = S.graph(graph)
    if g is None:
        return (S.fail(E.cudaErrorInvalidValue),)
    if callbackData is not None and S.h(getattr(callbackData, "callbackFunc", 0)):
        raise NotImplementedError("cudaStreamBeginRecaptureToGraph with a mismatch callback is "
                                  "not simulated (backend 'sim'): pass None")
    _clock.api("cudaStreamBeginRecaptureToGraph", P("begin_capture_us"))
    c = S.Capture(s, S.MODE(int(mode)))
    c.graph, c.into_existing = g, True
    c.recapture = list(g.nodes)
    s.capture, s.deps = c, []
    return S.OK


def _ancestors(nodes):
    seen, todo = set(), list(nodes)
    while todo:
        n = todo.pop()
        if n not in seen:
            seen.add(n)
            todo.extend(n.deps)
    return seen


def _end(c):
    for t in c.streams:
        t.capture, t.deps = None, []


def cudaStreamEndCapture(stream):
    s = S.stream(stream)
    if s is None:
        return (S.fail(E.cudaErrorInvalidResourceHandle), None)
    c = s.capture
    if c is None:
        return (S.fail(E.cudaErrorIllegalState), None)
    if c.origin is not s:
        S.invalidate(c)
        return (S.fail(E.cudaErrorStreamCaptureUnmatched), None)
    if not _rules.may_end(c):          # the H200 ends it anyway, without a graph
        _end(c)
        return (S.fail(E.cudaErrorStreamCaptureWrongThread), None)
    tails = {t: list(t.deps) for t in c.streams}   # read before _end clears them
    _end(c)
    if c.status != _ACTIVE:
        _cond.end_capture_failed(c)      # a body captured into is lost with it
        return (S.fail(E.cudaErrorStreamCaptureInvalidated), None)
    if c.recapture is not None and c.matched != len(c.recapture):
        return (S.fail(E.cudaErrorStreamCaptureInvalidated), None)   # nodes left unmade
    joined = _ancestors(tails[s])
    for t in c.streams:
        if t is not s and any(d not in joined for d in tails[t]):
            return (S.fail(E.cudaErrorStreamCaptureUnjoined), None)
    _clock.api("cudaStreamEndCapture", P("end_capture_per_node_us") * len(c.graph.nodes))
    S.graphs[c.graph.handle] = c.graph
    return E.cudaSuccess, _cr.cudaGraph_t(c.graph.handle)


def cudaStreamIsCapturing(stream):
    s = S.stream(stream)
    if s is None:
        return (S.fail(E.cudaErrorInvalidResourceHandle), None)
    return E.cudaSuccess, _NONE if s.capture is None else s.capture.status


def cudaStreamGetCaptureInfo(stream):
    s = S.stream(stream)
    if s is None:
        return (S.fail(E.cudaErrorInvalidResourceHandle), None, None, None, None, None, None)
    c = s.capture
    if c is None:
        return (E.cudaSuccess, _NONE, 0, _cr.cudaGraph_t(0), [], [], 0)
    deps = [_cr.cudaGraphNode_t(n.handle) for n in s.deps]
    edge_data = [_cr.cudaGraphEdgeData() for _ in deps]
    return (E.cudaSuccess, c.status, c.id, _cr.cudaGraph_t(c.graph.handle), deps, edge_data,
            len(deps))


def cudaStreamUpdateCaptureDependencies(stream, dependencies, dependencyData, numDependencies,
                                        flags):
    s = S.stream(stream)
    if s is None:
        return (S.fail(E.cudaErrorInvalidResourceHandle),)
    if s.capture is None:
        return (S.fail(E.cudaErrorIllegalState),)
    deps = S.deps_in(s.capture.graph, dependencies)
    if deps is None or int(flags) not in (0, 1):
        return (S.fail(E.cudaErrorInvalidValue),)
    set_ = int(flags) == int(
        _cr.cudaStreamUpdateCaptureDependenciesFlags.cudaStreamSetCaptureDependencies)
    s.deps = deps if set_ else list(dict.fromkeys(s.deps + deps))
    return S.OK


def cudaThreadExchangeStreamCaptureMode(mode):
    return _rules.exchange_mode(mode)

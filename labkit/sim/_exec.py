"""Executable graphs of the simulated runtime: instantiating, launching, updating them."""
from __future__ import annotations

from cuda.bindings import runtime as _cr

from . import _conditional as _cond
from . import _graphs
from . import _state as S
from . import _work
from . import clock as _clock

E, P, NT = S.E, S.P, S.NT


def cudaGraphInstantiate(graph, flags=0):
    g = S.graph(graph)
    if g is None:
        return (S.fail(E.cudaErrorInvalidValue), None)
    err = S.refuse_unsafe()
    if err is not None:
        return (err, None)
    err = _cond.instantiate_error(g, flags)   # CUDA's rules for bodies and handles
    if err is not None:
        return (S.fail(err), None)
    _clock.api("cudaGraphInstantiate", _clock.C("instantiate", len(g.nodes)))
    x = S.Exec(g, flags)
    _cond.on_instantiate(x, g)
    S.execs[x.handle] = x
    return E.cudaSuccess, _cr.cudaGraphExec_t(x.handle)


cudaGraphInstantiateWithFlags = cudaGraphInstantiate


def cudaGraphExecDestroy(graphExec):
    x = S.exec_(graphExec)
    if x is None:
        return (S.fail(E.cudaErrorInvalidValue),)
    x.destroyed = True
    x.nodes, x.by_source, x.source = [], {}, None   # let go of its copies of the arguments
    return S.OK


def _upload_us(x):
    return _clock.C("upload", len(x.nodes))


def cudaGraphUpload(graphExec, stream):
    x, s = S.exec_(graphExec), S.stream(stream)
    if x is None or s is None:
        return (S.fail(E.cudaErrorInvalidValue),)
    if s.capture is not None:
        return (S.fail(E.cudaErrorStreamCaptureUnsupported),)
    if not x.uploaded:
        _clock.api("cudaGraphUpload", _upload_us(x))
        x.uploaded = True
    return S.OK


def cudaGraphLaunch(graphExec, stream):
    x, s = S.exec_(graphExec), S.stream(stream)
    if x is None:
        return (S.fail(E.cudaErrorInvalidValue),)
    if s is None:
        return (S.fail(E.cudaErrorInvalidResourceHandle),)
    if s.capture is not None:
        S.invalidate(s.capture)
        return (S.fail(E.cudaErrorStreamCaptureUnsupported),)
    host = _clock.C("graph_launch", _cond.count_nodes(x))   # bodies' nodes too
    if not x.uploaded:
        host += _upload_us(x)
        x.uploaded = True
    _cond.begin_launch(x)                # the handles' values for this launch
    try:
        for ntype, payload, _ in x.nodes:
            err = _work.run_node(ntype, payload)
            if err != E.cudaSuccess:
                return (S.fail(err),)
    finally:
        _cond.end_launch(x)
    _clock.api("cudaGraphLaunch", host)
    start = max(s.ready_us, x.ready_us, _clock.host_us() + P("launch_latency_us"))
    ends = []
    lanes = _clock.Lanes()    # independent branches run side by side, as on CUDA's inner streams
    for ntype, payload, deps in x.nodes:
        t0 = max([start] + [ends[d] for d in deps]) + P("graph_node_gap_us")
        ends.append(t0 + _work.node_gpu_us(ntype, payload))
        lane = lanes.place(len(ends) - 1, deps, t0, ends[-1])
        if ntype not in _work.NO_SPAN:
            name = (_cond.span_name(payload) if ntype == NT.cudaGraphNodeTypeConditional
                    else payload.get("name", ""))
            _clock.gpu_span(s.handle, name, t0, ends[-1], _work.kind(ntype), lane)
    s.ready_us = x.ready_us = max(ends + [start])
    return S.OK


def cudaGraphExecUpdate(hGraphExec, hGraph):
    x, g = S.exec_(hGraphExec), S.graph(hGraph)
    if x is None or g is None:
        return (S.fail(E.cudaErrorInvalidValue), None)
    _clock.api("cudaGraphExecUpdate", _clock.C("exec_update", len(g.nodes)))
    err = _cond.update_error(x, g)          # the same shape, conditional bodies included
    if err is not None:
        return (S.fail(err), None)
    index = {n: i for i, n in enumerate(g.nodes)}
    x.nodes = [(n.type, dict(n.payload), [index[d] for d in n.deps]) for n in g.nodes]
    _cond.on_update(x, g)
    info = _cr.cudaGraphExecUpdateResultInfo()
    info.result = _cr.cudaGraphExecUpdateResult.cudaGraphExecUpdateSuccess
    return E.cudaSuccess, info


def cudaGraphExecKernelNodeSetParams(hGraphExec, node, pNodeParams):
    x = S.exec_(hGraphExec)
    if x is None:
        return (S.fail(E.cudaErrorInvalidValue),)
    i = x.by_source.get(S.h(node))
    if i is None or x.nodes[i][0] != NT.cudaGraphNodeTypeKernel:
        return (S.fail(E.cudaErrorInvalidValue),)
    payload = _graphs._payload(pNodeParams)
    if payload is None:
        return (S.fail(E.cudaErrorInvalidDeviceFunction),)
    _clock.api("cudaGraphExecKernelNodeSetParams", P("raw_node_update_us"))
    ntype, _, deps = x.nodes[i]
    x.nodes[i] = (ntype, payload, deps)
    return S.OK

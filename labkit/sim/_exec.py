"""Executable graphs of the simulated runtime: instantiating, launching, updating them."""
from __future__ import annotations

from cuda.bindings import runtime as _cr

from . import _conditional as _cond
from . import _graphmem, _nodes
from . import _engine, _races
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
    if err is None and _graphmem.has_memory_nodes(g):
        live = getattr(g, "mem_exec", None)     # at most one executable of such a graph
        both = _graphmem.AUTO_FREE | int(_cr.cudaGraphInstantiateFlags
                                          .cudaGraphInstantiateFlagDeviceLaunch)
        if (live is not None and not live.destroyed) or int(flags) & both == both:
            err = E.cudaErrorInvalidValue
    if err is not None:
        return (S.fail(err), None)
    _clock.api("cudaGraphInstantiate", _clock.C("instantiate", len(g.nodes)))
    x = S.Exec(g, flags)
    _races.graph_races([_work.static_access(*n) for n in x.nodes])
    if _graphmem.has_memory_nodes(g):
        g.mem_exec = x
    _cond.on_instantiate(x, g)
    S.execs[x.handle] = x
    return E.cudaSuccess, _cr.cudaGraphExec_t(x.handle)


cudaGraphInstantiateWithFlags = cudaGraphInstantiate


def cudaGraphInstantiateWithParams(graph, instantiateParams):
    p = instantiateParams
    err, ge = cudaGraphInstantiate(graph, int(p.flags) if p is not None else 0)
    ok = err == E.cudaSuccess
    if p is not None:
        R = _cr.cudaGraphInstantiateResult
        p.result_out = R.cudaGraphInstantiateSuccess if ok else R.cudaGraphInstantiateError
    if ok and p is not None and int(p.flags) & int(
            _cr.cudaGraphInstantiateFlags.cudaGraphInstantiateFlagUpload):
        upload = cudaGraphUpload(ge, p.uploadStream)[0]
        if upload != E.cudaSuccess:
            return (upload, None)
    return err, ge


def cudaGraphExecGetFlags(graphExec):
    x = S.exec_(graphExec)
    if x is None:
        return (S.fail(E.cudaErrorInvalidValue), None)
    return E.cudaSuccess, x.flags


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
    if any(t in _graphmem.MEMORY_NODES for t, _, _ in x.nodes):
        # its memory is made anew at each launch: the last launch's work has taken effect first
        _engine.advance(max(s.ready_us, x.ready_us))
    err = _graphmem.before_launch(x)     # last launch's allocations must have been freed
    if err is not None:
        return (S.fail(err),)
    host = _clock.C("graph_launch", _cond.count_nodes(x))   # bodies' nodes too
    host += _clock.first_use("stream_first_use", s.handle)
    if not x.uploaded:
        host += _upload_us(x)
        x.uploaded = True
    _clock.api("cudaGraphLaunch", host)
    if _engine.sticky() is not None:       # a lost context takes no more work
        return (S.fail(_engine.sticky()),)
    _cond.begin_launch(x)                # AssignDefault handles take their default now
    _cond.end_launch(x)
    err = _place(x, s, _work.ordered_start(s, _clock.host_us() + P("launch_latency_us")))
    if err != E.cudaSuccess:
        _engine.fault(err)
    return S.OK


_WORK = (NT.cudaGraphNodeTypeKernel, NT.cudaGraphNodeTypeMemcpy, NT.cudaGraphNodeTypeMemset,
         NT.cudaGraphNodeTypeHost)     # nodes whose work is queued for their time


def _place(x, s, earliest):
    """Place a launch of ``x`` on ``s``'s GPU timeline, after the stream's work and after the
    executable's own previous launch (CUDA runs launches of one executable one at a time), and
    queue each node's work for its time. A conditional node is computed here (its duration
    depends on data), once everything before it has taken effect (`labkit.sim._work.record`)."""
    start = max(s.ready_us, x.ready_us, earliest)
    ends = []
    lanes = _clock.Lanes()    # independent branches run side by side, as on CUDA's inner streams
    values = getattr(x, "cond_values", None)
    launch = next(S.ids)
    order = _work.stamp(s, x)   # one piece of work on s, after x's last launch; nodes share it
    err = E.cudaSuccess
    for i, (ntype, payload, deps) in enumerate(x.nodes):
        t0 = max([start] + [ends[d] for d in deps]) + P("graph_node_gap_us")
        e = S.events.get(payload.get("event", -1))
        if ntype == NT.cudaGraphNodeTypeWaitEvent and e is not None and e.time_us is not None:
            t0 = max(t0, e.time_us)
        off = i in x.disabled
        name = payload.get("name", "")
        row = (s.handle, launch, i)
        if off or err != E.cudaSuccess:
            pass
        elif ntype in (NT.cudaGraphNodeTypeConditional, NT.cudaGraphNodeTypeGraph):
            _engine.advance(t0)           # its inputs: everything that starts before it
            out = []
            if ntype == NT.cudaGraphNodeTypeConditional:
                err = _work._record_conditional(payload, t0, out, values)
            else:
                err, payload["_gpu_us"] = _work.record(payload["nodes"], t0, out, values)
            _work.place_recorded(out, row)
        elif ntype in _graphmem.MEMORY_NODES:
            err = _graphmem.run(ntype, payload, t0)
        ends.append(t0 + (0.0 if off else _work.node_gpu_us(ntype, payload)))
        if not off and err == E.cudaSuccess and ntype in _WORK:
            _engine.schedule(_work.op(ntype, payload, row, t0, ends[-1], name, values))
        if ntype == NT.cudaGraphNodeTypeEventRecord and e is not None and not off:
            e.time_us, e.captured, e.vc = ends[-1], None, dict(order[2])
        lane = lanes.place(len(ends) - 1, deps, t0, ends[-1])
        if ntype not in _work.NO_SPAN and not off:
            label = (_cond.span_name(payload) if ntype == NT.cudaGraphNodeTypeConditional
                     else name)
            _clock.gpu_span(s.handle, label, t0, ends[-1], _work.kind(ntype), lane)
    s.ready_us = x.ready_us = max(ends + [start])
    # against other streams, the launch is checked once, by what its nodes' code touches (its
    # own branches were checked when it was instantiated)
    if not hasattr(x, "access"):
        x.access = _races.launch_access(_work.static_accesses(x.nodes))
    _races.check_launch(x.access, (s.handle, launch), order, start)
    return err


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
    x.__dict__.pop("access", None)
    _cond.on_update(x, g)
    info = _cr.cudaGraphExecUpdateResultInfo()
    info.result = _cr.cudaGraphExecUpdateResult.cudaGraphExecUpdateSuccess
    return E.cudaSuccess, info


# ---------------------------------------------------------------- an executable's nodes

def _exec_node(hGraphExec, node, ntype):
    """(executable, index of ``node``'s copy in it) for a node of type ``ntype``, or None."""
    x = S.exec_(hGraphExec)
    i = None if x is None else x.by_source.get(S.h(node))
    if i is None or x.nodes[i][0] != ntype:
        return None
    return x, i


def _exec_setter(ntype, api, cost="api_us"):
    def set_(hGraphExec, node, pNodeParams):
        hit = _exec_node(hGraphExec, node, ntype)
        payload = None if hit is None else _nodes.read_params(ntype, pNodeParams)
        if payload is None:
            bad_func = hit is not None and ntype == NT.cudaGraphNodeTypeKernel
            return (S.fail(E.cudaErrorInvalidDeviceFunction if bad_func
                           else E.cudaErrorInvalidValue),)
        _clock.api(api, P(cost))
        x, i = hit
        x.nodes[i] = (ntype, payload, x.nodes[i][2])
        x.__dict__.pop("access", None)        # what its nodes touch, worked out again
        return S.OK
    return set_


cudaGraphExecKernelNodeSetParams = _exec_setter(
    NT.cudaGraphNodeTypeKernel, "cudaGraphExecKernelNodeSetParams", "raw_node_update_us")
cudaGraphExecMemcpyNodeSetParams = _exec_setter(NT.cudaGraphNodeTypeMemcpy,
                                                "cudaGraphExecMemcpyNodeSetParams")
cudaGraphExecMemsetNodeSetParams = _exec_setter(NT.cudaGraphNodeTypeMemset,
                                                "cudaGraphExecMemsetNodeSetParams")
cudaGraphExecHostNodeSetParams = _exec_setter(NT.cudaGraphNodeTypeHost,
                                              "cudaGraphExecHostNodeSetParams")


def cudaGraphExecChildGraphNodeSetParams(hGraphExec, node, childGraph):
    hit = _exec_node(hGraphExec, node, NT.cudaGraphNodeTypeGraph)
    child = S.graph(childGraph)
    if hit is None or child is None:
        return (S.fail(E.cudaErrorInvalidValue),)
    x, i = hit
    new = _cond.snapshot(child)
    old = x.nodes[i][1]["nodes"]
    if [(t, d) for t, _, d in new] != [(t, d) for t, _, d in old]:
        return (S.fail(E.cudaErrorInvalidValue),)   # CUDA: the same topology only
    x.nodes[i] = (NT.cudaGraphNodeTypeGraph, {"name": "child graph", "nodes": new}, x.nodes[i][2])
    x.__dict__.pop("access", None)
    return S.OK


_TOGGLE = (NT.cudaGraphNodeTypeKernel, NT.cudaGraphNodeTypeMemcpy, NT.cudaGraphNodeTypeMemset)


def cudaGraphNodeSetEnabled(hGraphExec, hNode, isEnabled):
    x = S.exec_(hGraphExec)
    i = None if x is None else x.by_source.get(S.h(hNode))
    if i is None or x.nodes[i][0] not in _TOGGLE:
        return (S.fail(E.cudaErrorInvalidValue),)
    (x.disabled.discard if isEnabled else x.disabled.add)(i)
    return S.OK


def cudaGraphNodeGetEnabled(hGraphExec, hNode):
    x = S.exec_(hGraphExec)
    i = None if x is None else x.by_source.get(S.h(hNode))
    if i is None or x.nodes[i][0] not in _TOGGLE:
        return (S.fail(E.cudaErrorInvalidValue), None)
    return E.cudaSuccess, int(i not in x.disabled)

"""Executable graphs of the simulated runtime: instantiating, launching, updating them."""
from __future__ import annotations

from cuda.bindings import runtime as _cr

from . import _conditional as _cond
from . import _graphmem, _heap, _nodes
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
    if err is None and int(flags) & _DEVICE_LAUNCH:
        err = device_launch_error(g, flags)
    if err is None and _graphmem.has_memory_nodes(g):
        live = getattr(g, "mem_exec", None)     # at most one executable of such a graph
        if live is not None and not live.destroyed:
            err = E.cudaErrorInvalidValue
    if err is not None:
        return (S.fail(err), None)
    _clock.api("cudaGraphInstantiate", _clock.C("instantiate", len(g.nodes)))
    x = S.Exec(g, flags)
    # a programmatic edge orders launches, not memory: a numba kernel cannot wait for its
    # predecessor's writes (cudaGridDependencySynchronize), so it does not count as ordering
    _races.graph_races([_work.static_access(t, p, [d for d in ds if d not in p.get("_ports", ())])
                        for t, p, ds in x.nodes],
                       {(d, j) for j, (_, p, _) in enumerate(x.nodes) for d in p.get("_ports", ())})
    if _graphmem.has_memory_nodes(g):
        g.mem_exec = x
    _cond.on_instantiate(x, g)
    S.execs[x.handle] = x
    return E.cudaSuccess, _cr.cudaGraphExec_t(x.handle)


cudaGraphInstantiateWithFlags = cudaGraphInstantiate

_FLAGS = _cr.cudaGraphInstantiateFlags
_DEVICE_LAUNCH = int(_FLAGS.cudaGraphInstantiateFlagDeviceLaunch)
_USE_PRIORITY = int(_FLAGS.cudaGraphInstantiateFlagUseNodePriority)
_DEVICE_NODES = (NT.cudaGraphNodeTypeKernel, NT.cudaGraphNodeTypeMemcpy,
                 NT.cudaGraphNodeTypeMemset, NT.cudaGraphNodeTypeGraph)


def device_launch_error(g, flags):
    """CUDA's rules for ``cudaGraphInstantiateFlagDeviceLaunch`` (the programming guide's
    "Device Graph Requirements" and ``cudaGraphInstantiate``): not with
    ``cudaGraphInstantiateFlagAutoFreeOnLaunch``; only kernel, memcpy, memset and child graph
    nodes (child graphs by the same rule); copies only between device memory and page-locked,
    mapped host memory. None where the graph may be launched from the device."""
    if int(flags) & _graphmem.AUTO_FREE:
        return E.cudaErrorInvalidValue
    snap = [(n.type, n.payload) for n in g.nodes]
    while snap:
        ntype, payload = snap.pop()
        if ntype not in _DEVICE_NODES:
            return E.cudaErrorInvalidValue
        if ntype == NT.cudaGraphNodeTypeGraph:
            snap += [(t, p) for t, p, _ in payload["nodes"]]
        if ntype == NT.cudaGraphNodeTypeMemcpy:
            pairs = payload.get("rows", [(payload["dst"], payload["src"])])
            if not all(_device_visible(a) for pair in pairs for a in pair):
                return E.cudaErrorInvalidValue
    return None


def _device_visible(addr: int) -> bool:
    """Device memory, or page-locked host memory (mapped: every 64-bit CUDA GPU has unified
    addressing); pageable host memory is not."""
    return _heap.in_sim_range(addr) or _heap.find(addr) is not None


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


def _fills_device(ntype, payload) -> bool:
    """A kernel whose grid has at least one block per SM: it fills the device, so two such
    kernels of one launch cannot run side by side (the model's only contention)."""
    if ntype != NT.cudaGraphNodeTypeKernel:
        return False
    grid = payload["grid"]
    blocks = 1
    for d in (grid if isinstance(grid, (tuple, list)) else (grid,)):
        blocks *= int(d)
    return blocks >= _clock.sm_count()


_PRIORITY_RANGE = (-5, 0)    # cudaDeviceGetStreamPriorityRange on sm_90: greatest, least


def _priority(x, payload) -> int:
    """The node's priority where the executable uses node priorities (lower is sooner, as
    CUDA's stream priorities; clamped to the device's range), else the stream's (all equal)."""
    if not x.flags & _USE_PRIORITY:
        return 0
    lo, hi = _PRIORITY_RANGE
    return min(max(int(payload.get("priority", 0)), lo), hi)


def _release(d, port, starts, ends, gap):
    """When dependency ``d`` lets its dependent start: after its end and the node gap; over a
    programmatic edge (PDL) at its end with no gap (the dependent's launch is already done; its
    port activates once every block has triggered or exited, and a numba kernel never triggers,
    so ``pdl_overlap_us`` is 0 in the calibration); over a launch-completion edge, once it has
    started."""
    if port == int(_cr.cudaGraphKernelNodePortProgrammatic):
        return max(starts[d], ends[d] - P("pdl_overlap_us"))
    if port == int(_cr.cudaGraphKernelNodePortLaunchCompletion):
        return starts[d]
    return ends[d] + gap


def _order(x, ready_at, device_free, cands):
    """The next node to place: among ``cands`` (those whose dependencies are placed), the ones
    ready by the time the device is (its earliest ready time, or when the device-filling kernel
    placed last ends), the highest priority first, then the earliest, then creation order."""
    times = {i: ready_at(i) for i in cands}
    horizon = max(min(times.values()), device_free)
    eligible = [i for i in cands if times[i] <= horizon]
    return min(eligible, key=lambda i: (_priority(x, x.nodes[i][1]), times[i], i))


def _place(x, s, earliest):
    """Place a launch of ``x`` on ``s``'s GPU timeline, after the stream's work and after the
    executable's own previous launch (CUDA runs launches of one executable one at a time), and
    queue each node's work for its time. A conditional node is computed here (its duration
    depends on data), once everything before it has taken effect (`labkit.sim._work.record`).

    Disabled nodes do nothing and take no time. A programmatic edge lets its dependent start
    over its predecessor's tail (`_release`). Where two or more kernels fill the device
    (`_fills_device`), they run one at a time, in the order `_order` picks (node priorities
    under ``cudaGraphInstantiateFlagUseNodePriority``); otherwise nodes go in creation order."""
    start = max(s.ready_us, x.ready_us, earliest)
    n = len(x.nodes)
    ends, starts = [None] * n, [None] * n
    lanes = _clock.Lanes()    # independent branches run side by side, as on CUDA's inner streams
    values = getattr(x, "cond_values", None)
    launch = next(S.ids)
    order = _work.stamp(s, x)   # one piece of work on s, after x's last launch; nodes share it
    err = E.cudaSuccess
    gap = P("graph_node_gap_us")
    fills = {i for i, (t, p, _) in enumerate(x.nodes)
             if i not in x.disabled and _fills_device(t, p)}
    contention = len(fills) >= 2
    device_free = start

    def ready_at(i):
        _t, payload, deps = x.nodes[i]
        ports = payload.get("_ports", {})
        return max([start + gap] + [_release(d, ports.get(d), starts, ends, gap) for d in deps])

    if contention:        # which nodes wait for which, to keep the candidates as nodes are placed
        waiting = [len(set(d)) for _, _, d in x.nodes]
        children: list = [[] for _ in range(n)]
        for j, (_, _, d) in enumerate(x.nodes):
            for p in set(d):
                children[p].append(j)
        cands = {j for j in range(n) if waiting[j] == 0}
    for step in range(n):
        if contention:
            i = _order(x, ready_at, device_free, cands)
            cands.discard(i)
            for j in children[i]:
                waiting[j] -= 1
                if waiting[j] == 0:
                    cands.add(j)
        else:
            i = step
        ntype, payload, deps = x.nodes[i]
        t0 = ready_at(i)
        if i in fills and contention:
            t0 = max(t0, device_free)
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
            err = _work.run_bodies(ntype, payload, t0, values, row)
        elif ntype in _graphmem.MEMORY_NODES:
            err = _graphmem.run(ntype, payload, t0)
        starts[i] = t0
        ends[i] = t0 + (0.0 if off else _work.node_gpu_us(ntype, payload))
        if i in fills:
            device_free = max(device_free, ends[i])
        if not off and err == E.cudaSuccess and ntype in _WORK:
            _engine.schedule(_work.op(ntype, payload, row, t0, ends[i], name, values))
        if ntype == NT.cudaGraphNodeTypeEventRecord and e is not None and not off:
            e.time_us, e.captured, e.vc = ends[i], None, dict(order[2])
        lane = lanes.place(i, deps, t0, ends[i])
        if ntype not in _work.NO_SPAN and not off:
            label = (_cond.span_name(payload) if ntype == NT.cudaGraphNodeTypeConditional
                     else name)
            _clock.gpu_span(s.handle, label, t0, ends[i], _work.kind(ntype), lane)
    s.ready_us = x.ready_us = max([e for e in ends if e is not None] + [start])
    # against other streams, the launch is checked once, by what its nodes' code touches (its
    # own branches were checked when it was instantiated); a disabled node touches nothing
    if not hasattr(x, "access"):
        x.access = _races.launch_access(_work.static_accesses(
            [nd for k, nd in enumerate(x.nodes) if k not in x.disabled]))
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
    x.nodes = S.frozen_nodes(g)
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
    # CUDA: the node of the graph the executable was made from, not since removed from it
    x = S.exec_(hGraphExec)
    i = None if x is None or S.h(hNode) not in S.nodes else x.by_source.get(S.h(hNode))
    if i is None or x.nodes[i][0] not in _TOGGLE:
        return (S.fail(E.cudaErrorInvalidValue),)
    (x.disabled.discard if isEnabled else x.disabled.add)(i)
    x.__dict__.pop("access", None)      # a disabled node touches nothing
    return S.OK


def cudaGraphNodeGetEnabled(hGraphExec, hNode):
    x = S.exec_(hGraphExec)
    i = None if x is None else x.by_source.get(S.h(hNode))
    if i is None or x.nodes[i][0] not in _TOGGLE:
        return (S.fail(E.cudaErrorInvalidValue), None)
    return E.cudaSuccess, int(i not in x.disabled)

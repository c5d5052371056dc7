"""Work on the simulated GPU: submitting it to a stream (recorded as a node while the stream
captures), what a node does to memory, and what it costs on the GPU clock.

Work submitted outside a capture is placed on the GPU's timeline now and takes effect later,
when the virtual clock reaches it (`labkit.sim._engine`): a launch returns before its kernel
runs, as on a GPU. Stream order, as CUDA documents it ("Stream synchronization behavior"): work
on the legacy default stream (handle 0 or ``cudaStreamLegacy``) starts after all earlier work of
every blocking stream, and work on a blocking stream after all earlier work of the legacy
stream; streams made with ``cudaStreamNonBlocking`` are exempt from both. The per-thread default
stream (``cudaStreamPerThread``: each host thread its own, `labkit.sim._state.stream`) is a
blocking stream like any other, as CUDA documents it.

A conditional node's duration depends on data (how many times its WHILE body runs), which the
timeline needs when the launch is placed: its bodies are computed then, after everything that
starts before the node has taken effect, and their writes land at each body node's end (`record`).
"""
from __future__ import annotations

import ctypes

import numpy as np
from cuda.bindings import runtime as _cr

from . import _conditional as _cond
from . import _engine, _graphmem, _heap, _races
from . import _state as S
from . import clock as _clock

E, NT, P = S.E, S.NT, S.P
_D2D = _cr.cudaMemcpyKind.cudaMemcpyDeviceToDevice
NO_SPAN = (NT.cudaGraphNodeTypeEmpty,   # nodes that do no GPU work of their own
           NT.cudaGraphNodeTypeMemAlloc, NT.cudaGraphNodeTypeMemFree)


def kind(ntype):
    return {NT.cudaGraphNodeTypeKernel: "kernel", NT.cudaGraphNodeTypeMemcpy: "memcpy",
            NT.cudaGraphNodeTypeMemset: "memset"}.get(ntype, "kernel")


def ordered_start(s, earliest: float) -> float:
    """The earliest GPU start of new work on ``s``, given the legacy stream's implicit
    synchronization with blocking streams (``earliest``: when the host could have it run)."""
    legacy = S.streams[0]
    if s is legacy:
        return max([earliest] + [t.ready_us for t in S.all_streams()
                                 if t.blocking and not t.destroyed])
    if s.blocking:
        return max(earliest, legacy.ready_us)
    return earliest


def stamp(s, graph_exec=None):
    """What new work on ``s`` is ordered after: ``(key, tick, vc)`` (`labkit.sim._races`); a
    launch of ``graph_exec`` comes after its previous launch too, on whatever stream."""
    legacy = S.streams[0]
    if s is legacy:
        others = [t for t in S.all_streams() if t.blocking and not t.destroyed and t is not s]
    else:
        others = [legacy] if s.blocking else []
    if graph_exec is not None:
        others.append(graph_exec)
    got = _races.on_submit(s, others)
    if graph_exec is not None:
        graph_exec.vc = got[2]
    return got


_PROGRAMMATIC = (int(_cr.cudaGraphKernelNodePortProgrammatic),
                 _cr.cudaGraphDependencyType.cudaGraphDependencyTypeProgrammatic)


def submit(s, ntype, payload, host_cost_us, api_name, programmatic=False):
    """Record the work as a node when capturing, else queue it on the GPU's timeline.

    A kernel captured takes its stream's priority as its node's priority attribute (CUDA's
    ``cudaGraphInstantiate``: priorities "are copied from stream priority during stream
    capture"). ``programmatic``: a kernel launched with programmatic stream serialization
    (PDL, `_programmatic_start`); captured, each edge from a kernel it depends on becomes a
    programmatic edge (the CUDA Programming Guide's "Use in CUDA Graphs" table)."""
    host_cost_us += _clock.first_use("stream_first_use", s.handle)     # a new stream's warm-up
    if s.capture is not None:
        if s.capture.status != S.STATUS.cudaStreamCaptureStatusActive:
            return S.fail(E.cudaErrorStreamCaptureInvalidated)
        _clock.api(api_name, host_cost_us)
        if s.capture.recapture is not None and ntype in _graphmem.MEMORY_NODES:
            raise NotImplementedError("re-capturing allocation or free nodes into a graph is "
                                      "not simulated (backend 'sim'): capture a new graph")
        n = s.capture.add(ntype, payload, s.deps)
        if n is None:                 # a recapture that does not match the graph
            S.invalidate(s.capture)
            return S.fail(E.cudaErrorStreamCaptureInvalidated)
        if ntype == NT.cudaGraphNodeTypeKernel:
            if s.priority:
                n.attrs["priority"] = s.priority
            n.ports = {d: _PROGRAMMATIC for d in n.deps
                       if programmatic and d.type == NT.cudaGraphNodeTypeKernel}
        s.deps = [n]
        return E.cudaSuccess
    if s.handle in (0, S.LEGACY):
        # The legacy stream waits for every blocking stream; a capturing blocking stream
        # would become a dependency of uncaptured work.
        for c in S.active_captures():
            if any(t.blocking for t in c.streams):
                S.invalidate(c)
                return S.fail(E.cudaErrorStreamCaptureImplicit)
    _clock.api(api_name, host_cost_us)
    if _engine.sticky() is not None:       # a lost context takes no more work
        return S.fail(_engine.sticky())
    earliest = ordered_start(s, _clock.host_us() + P("launch_latency_us"))
    primary = _programmatic_primary(s) if programmatic else None
    if primary is None:
        start = max(s.ready_us, earliest)
    else:
        start = max(earliest, primary[0].start, primary[0].end - P("pdl_overlap_us"))
    end = start + node_gpu_us(ntype, payload)
    s.ready_us = max(s.ready_us, end)
    name = payload.get("name", api_name)
    o = op(ntype, payload, s.handle, start, end, name)
    if primary is None:
        o.key, o.tick, o.vc = stamp(s)
    else:       # beside the primary, not after it: nothing orders its writes before this one
        o.key, o.tick, o.vc = _races.beside(s, primary[1])
        o.pdl_primary = primary[0]
    s.last_kernel = ((o, {**o.vc, o.key: o.tick - 1}, s.vc.get(id(s)))
                     if ntype == NT.cudaGraphNodeTypeKernel else None)
    _engine.schedule(o)
    _clock.gpu_span(s.handle, name, start, end, kind(ntype))
    return E.cudaSuccess


def _programmatic_primary(s):
    """``(op, what it was ordered after)`` of the kernel a programmatic launch on ``s`` may
    overlap: the stream's last work, if that is a kernel and nothing came after it on the
    stream (a graph launch, an event waited for); else None, and the launch waits as any.

    The CUDA Programming Guide ("Programmatic Dependent Launch and Synchronization"): the
    secondary may launch once every block of the primary has called
    ``cudaTriggerProgrammaticLaunchCompletion`` or, without the trigger (a numba kernel has
    none), exited; before the primary's writes are flushed. The model starts it
    ``pdl_overlap_us`` before the primary's end (0 in the calibration: numba kernels never
    trigger, so no earlier than their last block's exit), never before the primary's start."""
    last = s.last_kernel
    if last is None or last[0].end != s.ready_us or s.vc.get(id(s)) != last[2]:
        return None
    return last[0], last[1]


def op(ntype, payload, row, start, end, name, cond_values=None):
    """An `labkit.sim._engine.Op` doing node ``payload``'s work from ``start`` to ``end``."""
    o = _engine.Op(name, row, start, end, None)

    def begin():
        got = begin_node(ntype, payload, cond_values)
        if isinstance(got, int):
            return got
        if got[1] is not None:
            o.accesses = got[1]
        return got[0]
    o.begin = begin
    if ntype == NT.cudaGraphNodeTypeKernel:
        fn = S.functions[payload["func"]]
        if fn.access is not None:      # what it reads and may write is known from its code
            known = payload.get("_access")
            if known is None:          # a graph node's payload is launched again and again
                known = payload["_access"] = static_access(ntype, payload, ())[2:]
            o.accesses, o.static_writes = known

            def now():
                return _kernel_in_place(fn, payload, cond_values)
            o.now = now
    return o


def _kernel_in_place(fn, payload, cond_values):
    values = []
    for v in payload["params"]:
        if hasattr(v, "view") and hasattr(v, "addr"):
            v = v.view()
            if v is None:
                return _ILLEGAL
        values.append(v)
    if cond_values is not None:
        _cond.push(cond_values)
    try:
        fn.run(payload["grid"], payload["block"], *values)
    finally:
        if cond_values is not None:
            _cond.pop()
    return 0


# ---------------------------------------------------------------- GPU time

def node_gpu_us(ntype, payload):
    if ntype in (NT.cudaGraphNodeTypeConditional, NT.cudaGraphNodeTypeGraph):
        return payload.get("_gpu_us", 0.0)     # its bodies' time, from its last run
    if ntype == NT.cudaGraphNodeTypeKernel:
        return S.functions[payload["func"]].gpu_us(payload["grid"], payload["block"],
                                                   *payload["params"])
    if ntype == NT.cudaGraphNodeTypeMemcpy:
        on_device = payload["kind"] == _D2D
        bw = P("device_GBps") if on_device else P("memcpy_GBps")
        traffic = payload["count"] * (2 if on_device else 1)   # on the device: read + write
        return P("memcpy_latency_us") * (0.2 if on_device else 1) + traffic / (bw * 1e3)
    if ntype == NT.cudaGraphNodeTypeMemset:
        return P("kernel_us") + payload["count"] / (P("device_GBps") * 1e3)
    return 0.0


# ---------------------------------------------------------------- what a node does

_ILLEGAL = int(E.cudaErrorIllegalAddress)


def _span(addr, nbytes, name):
    return (addr, addr + nbytes, name)


def begin_node(ntype, payload, cond_values=None):
    """Start node ``payload``: read memory now. Returns ``(writes, reads)`` (what lands at its
    end, `labkit.sim._engine`; what it read, for the race report), or a fault's error code."""
    if ntype == NT.cudaGraphNodeTypeKernel:
        return _begin_kernel(payload, cond_values)
    if ntype == NT.cudaGraphNodeTypeMemcpy:
        pairs = (payload["rows"] if "rows" in payload
                 else [(payload["dst"], payload["src"])])
        n = payload["width"] if "rows" in payload else payload["count"]
        views = [(_heap.view(d, n), _heap.view(x, n)) for d, x in pairs]
        if any(d is None or x is None for d, x in views):
            return _ILLEGAL
        staged = payload.get("staged")      # pageable memory, copied at the call
        writes = [(d, slice(0, n), staged if staged is not None else x.copy(), "copy destination",
                   da) for (d, x), (da, _) in zip(views, pairs)]
        return writes, ([] if staged is not None else [_span(xa, n, "copy source")
                                                       for _, xa in pairs])
    if ntype == NT.cudaGraphNodeTypeMemset:
        return _begin_memset(payload)
    if ntype == NT.cudaGraphNodeTypeHost:
        ctypes.CFUNCTYPE(None, ctypes.c_void_p)(payload["fn"])(payload["data"] or None)
        return [], []
    return [], []


_ELEMENT = {1: np.uint8, 2: np.uint16, 4: np.uint32}


def _begin_memset(payload):
    """``height`` rows of ``width`` elements (``elementSize`` bytes) set to ``value``."""
    size = payload.get("elementSize", 1)
    width = payload.get("width", payload["count"])
    starts = memset_rows(payload)
    rows = [_heap.view(a, width * size) for a in starts]
    if any(r is None for r in rows):
        return _ILLEGAL
    value = payload["value"] & (0xFF if size == 1 else (1 << 8 * size) - 1)
    new = np.full(width, value, _ELEMENT[size]).view(np.uint8)
    return [(r, slice(0, width * size), new, "memset destination", a)
            for a, r in zip(starts, rows)], []


def memset_rows(payload) -> list:
    """The first byte of each row a memset sets (``row_addrs``: a 3D memset's rows, whose
    slices need not follow one another)."""
    if "row_addrs" in payload:
        return list(payload["row_addrs"])
    size = payload.get("elementSize", 1)
    pitch = payload.get("pitch", payload.get("width", payload["count"]) * size)
    return [payload["dst"] + r * pitch for r in range(payload.get("height", 1))]


def _begin_kernel(payload, cond_values=None):
    """Run a kernel node on memory as it is now; its changed elements land at its end. A
    parameter in freed memory is an illegal address (found here, when the kernel runs: a fault)."""
    fn = S.functions[payload["func"]]
    values, views, labels, args = [], [], [], []
    for i, v in enumerate(payload["params"]):
        if hasattr(v, "view") and hasattr(v, "addr"):   # an array: its live memory, or none
            arg, v = v, v.view()
            if v is None:
                return _ILLEGAL
            views.append(v)
            args.append(arg)
            labels.append(fn.param_name(i))
        values.append(v)
    addrs = [a.addr for a in args]
    spans = sorted((a.addr, a.addr + a.nbytes) for a in args)
    aliased = any(b[0] < a[1] for a, b in zip(spans, spans[1:]))
    if aliased:          # arguments that share memory: run in place, and put it back after
        work, before = views, [v.copy() for v in views]
    else:                # the usual case: run on private copies, live memory untouched
        work = [v.copy() for v in views]
        it = iter(work)
        values = [next(it) if hasattr(v, "view") and hasattr(v, "addr") else v
                  for v in payload["params"]]
    if cond_values is not None:
        _cond.push(cond_values)
    try:
        fn.run(payload["grid"], payload["block"], *values)
    finally:
        if cond_values is not None:
            _cond.pop()
    reads = ([(a.addr, a.addr + a.nbytes, name) for a, name in zip(args, labels)
              if fn.reads(name)] if fn.access is None else None)
    if aliased:
        return _engine.diff_writes(views, before, labels, addrs), reads
    return _engine.changes(views, work, labels, addrs), reads


def node_effects(ntype, payload, cond_values=None):
    """What a graph node that is not a conditional one does: ``(writes, reads)`` or an error."""
    if ntype in _graphmem.MEMORY_NODES:
        err = _graphmem.run(ntype, payload)
        return err if err != E.cudaSuccess else ([], [])
    return begin_node(ntype, payload, cond_values)


def static_access(ntype, payload, deps):
    """``(name, deps, reads, writes)`` of a graph node, known before it runs (for the race
    report at instantiation): a kernel's arrays as its code uses them, a copy's source and
    destination, a memset's destination. Ranges are simulated addresses."""
    name, reads, writes = payload.get("name", ""), [], []
    if ntype == NT.cudaGraphNodeTypeKernel:
        fn = S.functions.get(payload["func"])
        for i, v in enumerate(payload["params"]):
            if fn is None or not (hasattr(v, "view") and hasattr(v, "addr")):
                continue
            label, span = fn.param_name(i), (v.addr, v.addr + v.nbytes)
            if fn.reads(label):
                reads.append(span + (label,))
            if fn.access is not None and fn.writes(label):
                writes.append(span + (label,))
    elif ntype == NT.cudaGraphNodeTypeMemcpy:
        n = payload["width"] if "rows" in payload else payload["count"]
        for d, x in payload.get("rows", [(payload["dst"], payload["src"])]):
            reads.append((x, x + n, "copy source"))
            writes.append((d, d + n, "copy destination"))
    elif ntype == NT.cudaGraphNodeTypeMemset:
        n = payload.get("width", payload["count"]) * payload.get("elementSize", 1)
        writes += [(a, a + n, "memset destination") for a in memset_rows(payload)]
    return name, list(deps), reads, writes


def static_accesses(snap) -> list:
    """`static_access` of every node of an executable's snapshot, conditional bodies and child
    graphs included: ``[(name, reads, writes)]``."""
    out = []
    for ntype, payload, deps in snap:
        if ntype == NT.cudaGraphNodeTypeConditional:
            for body in payload["bodies"]:
                out += static_accesses(body)
        elif ntype == NT.cudaGraphNodeTypeGraph:
            out += static_accesses(payload["nodes"])
        else:
            name, _, reads, writes = static_access(ntype, payload, deps)
            if reads or writes:
                out.append((name, reads, writes))
    return out


# ---------------------------------------------------------------- bodies, computed at placement

def run_bodies(ntype, payload, t0, cond_values, row):
    """A conditional (or child graph) node of a launch, computed now, at its placement.

    Its bodies run in place, node after node. What lands in device memory is stored when the
    node ends (one write per buffer, against a snapshot taken first); what lands in host-visible
    memory (page-locked, mapped) is stored at each body node's own end, so a host polling it
    sees each step arrive (`record`). Returns the error code."""
    snaps = []
    for lo, hi, label in _device_writes(payload):
        v = _heap.view(lo, hi - lo)
        if v is not None:
            snaps.append((v, v.copy(), label, lo))
    out = []
    if ntype == NT.cudaGraphNodeTypeConditional:
        err = _record_conditional(payload, t0, out, cond_values)
    else:
        err, payload["_gpu_us"] = record(payload["nodes"], t0, out, cond_values)
    place_recorded(out, row)
    writes = []
    for v, before, label, addr in snaps:
        idx = _engine._changed(v, before)
        if idx is not None:
            writes.append((v, idx, v[idx].copy(), label, addr))
            v[idx] = before[idx]
    if writes:
        end = t0 + node_gpu_us(ntype, payload)
        o = _engine.Op(payload.get("name", "conditional"), row, end, end, None)
        o.begin = (lambda w=writes: w)
        _engine.schedule(o)
    return err


def _host_visible(addr: int) -> bool:
    """Whether memory at ``addr`` is the host's to read between calls (page-locked, mapped, or
    plain host memory), not the device's own."""
    hit = _heap.find(addr)
    return hit[0].pinned if hit is not None else not _heap.in_sim_range(addr)


def _device_writes(payload):
    """The device-memory ranges a conditional or child graph node's bodies may write: their
    nodes' writes as their code has them (every array of a kernel whose code is not known)."""
    nodes = []
    for body in payload.get("bodies", [payload.get("nodes", [])]):
        for t, p, _ in body:
            if t in (NT.cudaGraphNodeTypeConditional, NT.cudaGraphNodeTypeGraph):
                nodes += _device_writes(p)
                continue
            _, _, _, writes = static_access(t, p, ())
            if t == NT.cudaGraphNodeTypeKernel and S.functions[p["func"]].access is None:
                writes = [(v.addr, v.addr + v.nbytes, "argument") for v in p["params"]
                          if hasattr(v, "view") and hasattr(v, "addr")]
            nodes += writes
    return list({(lo, hi): (lo, hi, n) for lo, hi, n in nodes
                 if not _host_visible(lo)}.values())


def _kernel_recorded(payload, cond_values):
    """A body's kernel, run in place: ``(writes, undo)`` of its host-visible arrays only (device
    memory is `run_bodies`' snapshot's), or a fault's error code."""
    fn = S.functions[payload["func"]]
    values, seen = [], []
    for i, v in enumerate(payload["params"]):
        if hasattr(v, "view") and hasattr(v, "addr"):
            arg, v = v, v.view()
            if v is None:
                return _ILLEGAL
            if _host_visible(arg.addr):
                seen.append((v, v.copy(), fn.param_name(i), arg.addr))
        values.append(v)
    _cond.push(cond_values)
    try:
        fn.run(payload["grid"], payload["block"], *values)
    finally:
        _cond.pop()
    writes, undo = [], []
    for v, before, label, addr in seen:
        word = _engine._WORDS.get(v.dtype.itemsize, np.uint8)
        raw, old = v.reshape(-1).view(word), before.reshape(-1).view(word)
        idx = _engine._changed(raw, old)
        if idx is not None:
            writes.append((raw, idx, raw[idx].copy(), label, addr))
            undo.append((raw, idx, old[idx].copy()))
    return writes, undo


def record(snap, t_base, out, cond_values):
    """Run a body's nodes in order, in place, from GPU time ``t_base``: each node's writes are
    applied now (so the next node sees them); those to host-visible memory are listed in
    ``out`` with the node's interval. Returns (err, GPU µs along the body's critical path)."""
    ends = []
    for ntype, payload, deps in snap:
        t0 = max([t_base] + [ends[d] for d in deps]) + P("graph_node_gap_us")
        if ntype == NT.cudaGraphNodeTypeConditional:
            err = _record_conditional(payload, t0, out, cond_values)
            got = None
        elif ntype == NT.cudaGraphNodeTypeGraph:
            err, dt = record(payload["nodes"], t0, out, cond_values)
            payload["_gpu_us"] = dt
            got = None
        elif ntype == NT.cudaGraphNodeTypeKernel:
            got = _kernel_recorded(payload, cond_values)      # applied already
            err = got if isinstance(got, int) else E.cudaSuccess
        else:
            got = node_effects(ntype, payload, cond_values)
            err = got if isinstance(got, int) else E.cudaSuccess
            if err == E.cudaSuccess:
                writes = got[0]
                undo = [(w[0], w[1], w[0][w[1]].copy()) for w in writes]
                for w in writes:
                    w[0][w[1]] = w[2]
                got = (writes, undo)
        if err != E.cudaSuccess:
            return err, 0.0
        end = t0 + node_gpu_us(ntype, payload)
        ends.append(end)
        if got is not None and got[0]:
            out.append((payload.get("name", ""), t0, end, got[0], (), got[1]))
    return E.cudaSuccess, max(ends + [t_base]) - t_base


def _record_conditional(payload, t0, out, cond_values):
    bodies = payload["bodies"]
    _cond.push(cond_values)
    try:
        t = t0 + P("conditional_node_us") - P("graph_node_gap_us")
        runs = 0
        if payload["ctype"] == _cond.CT.cudaGraphCondTypeWhile:
            while _cond.value(payload):
                _cond.while_limit(runs, payload)
                err, dt = record(bodies[0], t, out, cond_values)
                if err != E.cudaSuccess:
                    return err
                t += dt + P("while_iteration_us")
                runs += 1
        else:
            pick = _cond.picked_body(payload)
            if pick is not None:
                err, dt = record(bodies[pick], t, out, cond_values)
                if err != E.cudaSuccess:
                    return err
                t += dt
                runs = 1
    finally:
        _cond.pop()
    payload["_gpu_us"], payload["_runs"] = max(t - t0, 0.0), runs
    return E.cudaSuccess


def place_recorded(out, row) -> None:
    """Undo what `record` applied and queue each body node's writes for its own end."""
    for *_, undo in reversed(out):
        for raw, idx, old in reversed(undo):
            raw[idx] = old
    for name, t0, end, writes, reads, _ in out:
        o = _engine.Op(name, row, t0, end, None)
        o.accesses = reads or ()
        o.begin = (lambda w=writes: w)
        _engine.schedule(o)

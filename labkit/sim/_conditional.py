"""Conditional nodes (IF, IF/ELSE, WHILE, SWITCH) for the simulated runtime, and the node kinds
a conditional body is tested with (child graphs, host functions, stream-ordered allocations).

The rules are the H200's, as ``tests/conformance/conditional_probe.py`` measured them on
2026-12-03 (results in ``tests/conformance/conditional_h200/``) and as
``tests/conformance/test_conditional.py`` pins them on both backends:

* a handle belongs to the graph it was made for (``cudaGraphConditionalHandleCreate``, flags 0
  or ``cudaGraphCondAssignDefault``, anything else ``cudaErrorInvalidValue``); one conditional
  node per handle (a second ``cudaGraphAddNode`` with it is ``cudaErrorInvalidValue``); a handle
  no node uses makes ``cudaGraphInstantiate`` fail with ``cudaErrorInvalidValue``;
* sizes: WHILE 1 body, IF 1 or 2 (then, else), SWITCH at least 1; others ``cudaErrorInvalidValue``;
* a body may hold kernels, empty nodes, memsets, copies, child graphs, nested conditionals (16
  deep was measured) and event records (captured records add no node). A host function or a
  memory allocation anywhere in a body makes ``cudaGraphInstantiate`` fail with
  ``cudaErrorInvalidValue``; so do the flags ``Upload`` and ``DeviceLaunch`` on a graph with a
  conditional node;
* with ``cudaGraphCondAssignDefault`` every launch starts from the default value; without it the
  first launch sees 0 (whatever the default) and a value set on the device persists into the
  next launch of the same executable;
* WHILE tests its value before each iteration (0 at the start: no iteration); IF runs its
  then-body on non-zero, its else-body on 0; SWITCH runs body ``value`` if there is one;
* a capture into a body that is invalidated (a synchronize inside it) leaves the body unusable:
  ``cudaGraphGetNodes`` on it is ``cudaErrorInvalidValue`` afterwards;
* ``cudaGraphExecUpdate`` of an executable holding conditional nodes by a graph of the same
  shape succeeds (the H200 on 2026-12-03: a WHILE graph updated by one built the same way with
  another kernel argument and its own handle). Same shape, as CUDA's documentation of the call
  says for conditional nodes: the node's own parameters (type, number of bodies) cannot change
  and each body must be topologically identical, its nodes' parameters updatable as at the top
  level; the handles' flags and default values are taken from the new graph. The executable then
  runs with the new graph's handles, which its kernels (updated too) set. A shape that differs
  is ``cudaErrorGraphExecUpdateFailure``.

What the simulator adds, because it cannot hang: a WHILE that has run `MAX_WHILE_ITERATIONS`
iterations (``LABKIT_SIM_MAX_WHILE``, 10000 by default) raises `WhileIterationLimit`, whose
message names the fix. On a GPU such a loop never ends.

Device code sets a value with `set_value` (what ``labkit.set_condition`` is on this backend):
the kernels run in host program order, so the executable being launched is the one whose
values it sets. Not modelled: mem-alloc nodes outside bodies allocate at capture time (the
address is fixed, as on a GPU, but the memory is never returned to a pool).

GPU time: a conditional node costs the calibrated ``conditional_node_us`` (a false IF, gap
included), each WHILE iteration ``while_iteration_us`` more than its body's nodes, and a body's
nodes what they cost at the top level.
"""
from __future__ import annotations

import ctypes
import os

from cuda.bindings import runtime as _cr

from . import clock as _clock
# labkit.sim.runtime, which imports this module at its end and binds itself here (`bind`):
# an import back would be a cycle.
_rt = None


def bind(runtime) -> None:
    """Called once by labkit.sim.runtime: the runtime whose objects the rules act on."""
    global _rt
    _rt = runtime

E = _cr.cudaError_t
_NT = _cr.cudaGraphNodeType
CT = _cr.cudaGraphConditionalNodeType
cudaGraphConditionalHandle = _cr.cudaGraphConditionalHandle
cudaGraphConditionalNodeType = _cr.cudaGraphConditionalNodeType
cudaGraphConditionalHandleFlags = _cr.cudaGraphConditionalHandleFlags
cudaStreamUpdateCaptureDependenciesFlags = _cr.cudaStreamUpdateCaptureDependenciesFlags
cudaGraphInstantiateFlags = _cr.cudaGraphInstantiateFlags
cudaHostFn_t = _cr.cudaHostFn_t
ASSIGN_DEFAULT = int(cudaGraphConditionalHandleFlags.cudaGraphCondAssignDefault)
MAX_WHILE_ITERATIONS = int(os.environ.get("LABKIT_SIM_MAX_WHILE", "10000"))
_BODY_FORBIDDEN = (_NT.cudaGraphNodeTypeHost, _NT.cudaGraphNodeTypeMemAlloc,
                   _NT.cudaGraphNodeTypeMemFree)
_NAMES = {CT.cudaGraphCondTypeIf: "IF", CT.cudaGraphCondTypeWhile: "WHILE",
          CT.cudaGraphCondTypeSwitch: "SWITCH"}


class WhileIterationLimit(RuntimeError):
    """A simulated WHILE node ran `MAX_WHILE_ITERATIONS` times: on a GPU it would never stop."""


class _Handle:
    def __init__(self, graph, default, flags):
        self.id = next(_rt._ids)
        self.graph, self.default, self.flags = graph, int(default) & 0xFFFFFFFF, int(flags)
        self.node = None


_handles: dict[int, _Handle] = {}
_running: list[dict] = []   # the handle values of the executables being launched, innermost last


# ---------------------------------------------------------------- structs, as cuda.bindings has them

class cudaConditionalNodeParams:
    """The conditional member of `cudaGraphNodeParams`: ``handle``, ``type``, ``size`` in;
    ``phGraph_out`` (the body graphs) out."""

    def __init__(self):
        self.handle = cudaGraphConditionalHandle(0)
        self.type = CT.cudaGraphCondTypeIf
        self.size = 0
        self.phGraph_out = []
        self.ctx = None


class cudaGraphNodeParams:
    """``cudaGraphAddNode``'s tagged union; the simulator takes the types Empty and Conditional."""

    def __init__(self):
        self.type = _NT.cudaGraphNodeTypeEmpty
        self.conditional = cudaConditionalNodeParams()


# ---------------------------------------------------------------- lookups

def _any_graph(handle):
    """A graph by handle: a live one, or the graph a capture is building."""
    g = _rt._graph(handle)
    if g is not None:
        return g
    h = _rt._h(handle)
    for c in _rt._active_captures():
        if c.graph.handle == h:
            return c.graph
    return None


def _deps(graph, pDependencies):
    out = []
    for d in pDependencies or []:
        hit = _rt._nodes.get(_rt._h(d))
        if hit is None or hit[0] is not graph:
            return None
        out.append(hit[1])
    return out


# ---------------------------------------------------------------- handles and nodes

def cudaGraphConditionalHandleCreate(graph, defaultLaunchValue, flags):
    g = _any_graph(graph)
    if g is None or int(flags) not in (0, ASSIGN_DEFAULT):
        return (_rt._fail(E.cudaErrorInvalidValue), None)
    h = _Handle(g, defaultLaunchValue, flags)
    _handles[h.id] = h
    _clock.api("cudaGraphConditionalHandleCreate", _rt.P("api_us"))
    return E.cudaSuccess, cudaGraphConditionalHandle(h.id)


def _size_ok(ctype, size):
    if ctype == CT.cudaGraphCondTypeWhile:
        return size == 1
    if ctype == CT.cudaGraphCondTypeIf:
        return size in (1, 2)
    return size >= 1


def cudaGraphAddNode(graph, pDependencies, dependencyData, numDependencies, nodeParams):
    g = _any_graph(graph)
    deps = None if g is None else _deps(g, pDependencies)
    if deps is None or nodeParams is None:
        return (_rt._fail(E.cudaErrorInvalidValue), None)
    ntype = _NT(int(nodeParams.type))
    if ntype == _NT.cudaGraphNodeTypeEmpty:
        _clock.api("cudaGraphAddNode", _rt.P("api_us"))
        return E.cudaSuccess, _rt.cudaGraphNode_t(g.add(ntype, {"name": "empty"}, deps).handle)
    if ntype != _NT.cudaGraphNodeTypeConditional:
        raise NotImplementedError(
            f"cudaGraphAddNode of a {ntype.name} node is not simulated (backend 'sim'): add it "
            "with its own call (cudaGraphAddEmptyNode, cudaGraphAddMemcpyNode1D, labkit's "
            "add_kernel_node) or capture it")
    p = nodeParams.conditional
    h = _handles.get(_rt._h(p.handle))
    ctype = CT(int(p.type))
    size = int(p.size)
    if h is None or h.node is not None or not _size_ok(ctype, size):
        return (_rt._fail(E.cudaErrorInvalidValue), None)
    bodies = []
    for _ in range(size):
        b = _rt._Graph()
        b.body_of = h
        _rt._graphs[b.handle] = b
        bodies.append(b)
    _clock.api("cudaGraphAddNode", _rt.P("api_us"))
    n = g.add(ntype, {"name": _NAMES[ctype], "handle": h.id, "ctype": ctype, "bodies": bodies},
              deps)
    h.node = n
    p.phGraph_out = [_rt.cudaGraph_t(b.handle) for b in bodies]
    return E.cudaSuccess, _rt.cudaGraphNode_t(n.handle)


def cudaGraphAddChildGraphNode(graph, pDependencies, numDependencies, childGraph):
    g, child = _any_graph(graph), _rt._graph(childGraph)
    deps = None if g is None else _deps(g, pDependencies)
    if deps is None or child is None:
        return (_rt._fail(E.cudaErrorInvalidValue), None)
    _clock.api("cudaGraphAddChildGraphNode", _rt.P("api_us"))
    # CUDA clones the child graph into the node: later edits of the child do not reach it
    n = g.add(_NT.cudaGraphNodeTypeGraph, {"name": "child graph", "nodes": _snapshot(child)}, deps)
    return E.cudaSuccess, _rt.cudaGraphNode_t(n.handle)


# ---------------------------------------------------------------- capture into a graph

def cudaStreamBeginCaptureToGraph(stream, graph, dependencies, dependencyData, numDependencies,
                                  mode):
    s = _rt._stream(stream)
    if s is None:
        return (_rt._fail(E.cudaErrorInvalidResourceHandle),)
    if s.handle in (0, 1):
        return (_rt._fail(E.cudaErrorStreamCaptureUnsupported),)
    if s.capture is not None:
        return (_rt._fail(E.cudaErrorIllegalState),)
    g = _any_graph(graph)
    deps = None if g is None else _deps(g, dependencies)
    if deps is None:
        return (_rt._fail(E.cudaErrorInvalidValue),)
    _clock.api("cudaStreamBeginCaptureToGraph", _rt.P("begin_capture_us"))
    c = _rt._Capture(s, _rt._MODE(int(mode)))
    c.graph, c.into_existing = g, True
    s.capture, s.deps = c, deps
    return _rt._OK


def cudaStreamUpdateCaptureDependencies(stream, dependencies, dependencyData, numDependencies,
                                        flags):
    s = _rt._stream(stream)
    if s is None:
        return (_rt._fail(E.cudaErrorInvalidResourceHandle),)
    if s.capture is None:
        return (_rt._fail(E.cudaErrorIllegalState),)
    deps = _deps(s.capture.graph, dependencies)
    if deps is None or int(flags) not in (0, 1):
        return (_rt._fail(E.cudaErrorInvalidValue),)
    set_ = int(flags) == int(cudaStreamUpdateCaptureDependenciesFlags.cudaStreamSetCaptureDependencies)
    s.deps = deps if set_ else list(dict.fromkeys(s.deps + deps))
    return _rt._OK


# ---------------------------------------------------------------- host functions and allocations

def cudaLaunchHostFunc(stream, fn, userData):
    s = _rt._stream(stream)
    if s is None:
        return (_rt._fail(E.cudaErrorInvalidResourceHandle),)
    return (_rt._submit(s, _NT.cudaGraphNodeTypeHost,
                        {"name": "host function", "fn": int(fn), "data": int(userData or 0)},
                        _rt.P("api_us"), "cudaLaunchHostFunc"),)


def cudaMallocAsync(size, hStream):
    s = _rt._stream(hStream)
    if s is None:
        return (_rt._fail(E.cudaErrorInvalidResourceHandle), None)
    a = _rt._new_alloc(int(size))
    err = _rt._submit(s, _NT.cudaGraphNodeTypeMemAlloc, {"name": "mem alloc", "addr": a.addr},
                      _rt.P("api_us"), "cudaMallocAsync")
    return (err, a.addr if err == E.cudaSuccess else None)


def cudaFreeAsync(devPtr, hStream):
    s = _rt._stream(hStream)
    a = _rt._allocs.get(int(devPtr))
    if s is None:
        return (_rt._fail(E.cudaErrorInvalidResourceHandle),)
    if a is None or a.freed:
        return (_rt._fail(E.cudaErrorInvalidValue),)
    capturing = s.capture is not None
    err = _rt._submit(s, _NT.cudaGraphNodeTypeMemFree, {"name": "mem free", "addr": a.addr},
                      _rt.P("api_us"), "cudaFreeAsync")
    if err == E.cudaSuccess and not capturing:
        a.freed = True               # outside a capture the free happens in stream order: now
    return (err,)


# ---------------------------------------------------------------- hooks called by runtime.py

def end_capture_failed(c):
    """An invalidated capture into an existing graph leaves that graph unusable (measured on
    the H200 for a conditional body)."""
    if getattr(c, "into_existing", False):
        c.graph.destroyed = True


def _tree(g, seen=None):
    """``g`` and every body graph below it."""
    seen = [] if seen is None else seen
    seen.append(g)
    for n in g.nodes:
        if n.type == _NT.cudaGraphNodeTypeConditional:
            for b in n.payload["bodies"]:
                _tree(b, seen)
    return seen


def instantiate_error(g, flags):
    """The error ``cudaGraphInstantiate`` gives for ``g``'s conditional nodes, or None."""
    tree = _tree(g)
    has_cond = any(n.type == _NT.cudaGraphNodeTypeConditional for t in tree for n in t.nodes)
    if not has_cond and not any(h.graph is g for h in _handles.values()):
        return None
    bad_flags = (int(cudaGraphInstantiateFlags.cudaGraphInstantiateFlagUpload)
                 | int(cudaGraphInstantiateFlags.cudaGraphInstantiateFlagDeviceLaunch))
    if has_cond and int(flags) & bad_flags:
        return E.cudaErrorInvalidValue
    for body in tree[1:]:
        if any(_forbidden(n) for n in body.nodes):
            return E.cudaErrorInvalidValue
    ids = {id(t) for t in tree}
    if any(h.node is None and id(h.graph) in ids for h in _handles.values()):
        return E.cudaErrorInvalidValue
    return None


def _forbidden(n):
    if n.type in _BODY_FORBIDDEN:
        return True
    if n.type == _NT.cudaGraphNodeTypeGraph:
        return any(t in _BODY_FORBIDDEN for t, _, _ in _flat(n.payload["nodes"]))
    return False


def _flat(snap):
    for t, p, d in snap:
        yield t, p, d
        if t == _NT.cudaGraphNodeTypeGraph:
            yield from _flat(p["nodes"])


def _snapshot(g):
    """An executable's copy of graph ``g``'s nodes: (type, payload, dependency indices), bodies
    of conditional nodes copied too (they are part of the executable, fixed at instantiate)."""
    index = {n: i for i, n in enumerate(g.nodes)}
    out = []
    for n in g.nodes:
        p = dict(n.payload)
        if n.type == _NT.cudaGraphNodeTypeConditional:
            p["bodies"] = [_snapshot(b) for b in n.payload["bodies"]]
        out.append((n.type, p, [index[d] for d in n.deps]))
    return out


def on_instantiate(x, g):
    """Give executable ``x`` its own copies of the bodies and its own handle values."""
    for i, (ntype, payload, deps) in enumerate(x.nodes):
        if ntype == _NT.cudaGraphNodeTypeConditional:
            payload["bodies"] = [_snapshot(b) for b in payload["bodies"]]
    ids = {id(t) for t in _tree(g)}
    x.cond_handles = [h for h in _handles.values() if id(h.graph) in ids]
    x.cond_values = {h.id: 0 for h in x.cond_handles}   # without AssignDefault: 0 at first


def begin_launch(x):
    """Start a launch of ``x``: AssignDefault handles take their default; ``x`` is running."""
    values = getattr(x, "cond_values", None)
    if values is None:
        values = x.cond_values = {}
    for h in getattr(x, "cond_handles", ()):
        if h.flags & ASSIGN_DEFAULT:
            values[h.id] = h.default
    _running.append(values)


def end_launch(x):
    if _running:
        _running.pop()


def count_nodes(x) -> int:
    """Nodes of ``x`` including those inside bodies (what the host uploads at a launch)."""
    def n(snap):
        return sum(1 + (sum(n(b) for b in p["bodies"]) if t == _NT.cudaGraphNodeTypeConditional
                        else 0) for t, p, _ in snap)
    return n(x.nodes)


def _same_shape(snap, nodes) -> bool:
    """Whether graph nodes ``nodes`` have the shape of executable snapshot ``snap``: the same
    types and edges, conditional nodes of the same type with as many bodies, each body of the
    same shape in turn."""
    if len(snap) != len(nodes):
        return False
    index = {n: i for i, n in enumerate(nodes)}
    for (xtype, xp, xdeps), n in zip(snap, nodes):
        if xtype != n.type or sorted(xdeps) != sorted(index[d] for d in n.deps):
            return False
        if xtype == _NT.cudaGraphNodeTypeConditional:
            if xp["ctype"] != n.payload["ctype"] or len(xp["bodies"]) != len(n.payload["bodies"]):
                return False
            if not all(_same_shape(xb, b.nodes) for xb, b in zip(xp["bodies"], n.payload["bodies"])):
                return False
    return True


def update_error(x, g):
    """``cudaGraphExecUpdate``'s refusal for executable ``x`` and graph ``g``: None when ``g`` has
    ``x``'s shape (bodies of conditional nodes included), else the error code."""
    return None if _same_shape(x.nodes, g.nodes) else E.cudaErrorGraphExecUpdateFailure


def on_update(x, g):
    """After an update of ``x`` from ``g``: ``x`` runs ``g``'s bodies with ``g``'s handles (their
    flags and defaults), as the update's kernels, which set them, expect. A handle keeps its value
    across the update only where it is the same handle."""
    on_old = dict(getattr(x, "cond_values", {}))
    on_instantiate(x, g)
    for hid in x.cond_values:
        if hid in on_old:
            x.cond_values[hid] = on_old[hid]


# ---------------------------------------------------------------- running

def set_value(handle, value):
    """Set a conditional handle's value from device code (``cudaGraphSetConditional``)."""
    h = int(handle)
    values = _running[-1] if _running else None
    if values is None or h not in values:
        where = ("no graph is running: set_condition only works in a kernel launched inside "
                 "the graph that owns the handle (in a conditional body, or before the node)"
                 if values is None else
                 f"the running graph does not own handle {h}: pass the handle of this graph's "
                 "own condition (labkit.condition(graph) / cudaGraphConditionalHandleCreate on it)")
        raise RuntimeError(f"set_condition({h}, {int(value)}): {where}")
    values[h] = int(value) & 0xFFFFFFFF


def _run_snapshot(snap):
    """Run a body's nodes in order; return (err, GPU µs along its critical path)."""
    ends = []
    for ntype, payload, deps in snap:
        err = run_node(ntype, payload)
        if err != E.cudaSuccess:
            return err, 0.0
        t0 = max([0.0] + [ends[d] for d in deps]) + _rt.P("graph_node_gap_us")
        ends.append(t0 + _rt._node_gpu_us(ntype, payload))
    return E.cudaSuccess, max(ends + [0.0])


def run_node(ntype, payload):
    """Run one node of a kind this module adds; the rest goes to runtime's own."""
    if ntype == _NT.cudaGraphNodeTypeConditional:
        return _run_conditional(payload)
    if ntype == _NT.cudaGraphNodeTypeGraph:
        err, payload["_gpu_us"] = _run_snapshot(payload["nodes"])
        return err
    if ntype == _NT.cudaGraphNodeTypeHost:
        ctypes.CFUNCTYPE(None, ctypes.c_void_p)(payload["fn"])(payload["data"] or None)
        return E.cudaSuccess
    if ntype in (_NT.cudaGraphNodeTypeMemAlloc, _NT.cudaGraphNodeTypeMemFree):
        return E.cudaSuccess
    return _rt._run_node(ntype, payload)


def _run_conditional(payload):
    values = _running[-1]
    h, ctype, bodies = payload["handle"], payload["ctype"], payload["bodies"]
    gpu = _rt.P("conditional_node_us") - _rt.P("graph_node_gap_us")
    runs = 0
    if ctype == CT.cudaGraphCondTypeWhile:
        while values.get(h, 0):
            if runs >= MAX_WHILE_ITERATIONS:
                raise WhileIterationLimit(
                    f"a WHILE node ran {runs} iterations and its condition is still "
                    f"{values[h]}: on a GPU this loop would never end. A kernel in the body must "
                    "call set_condition(handle, 0) when the loop should stop (check its test, and "
                    "that it gets this graph's handle); raise LABKIT_SIM_MAX_WHILE if the loop "
                    "really needs more iterations")
            err, t = _run_snapshot(bodies[0])
            if err != E.cudaSuccess:
                return err
            gpu += t + _rt.P("while_iteration_us")
            runs += 1
    else:
        v = values.get(h, 0)
        if ctype == CT.cudaGraphCondTypeIf:
            pick = 0 if v else (1 if len(bodies) == 2 else None)
        else:
            pick = v if v < len(bodies) else None
        if pick is not None:
            err, t = _run_snapshot(bodies[pick])
            if err != E.cudaSuccess:
                return err
            gpu += t
            runs = 1
    payload["_gpu_us"], payload["_runs"] = max(gpu, 0.0), runs
    return E.cudaSuccess


def gpu_us(ntype, payload):
    """GPU µs of the node's last run (its bodies ran when it was run)."""
    return payload.get("_gpu_us", 0.0)


def span_name(payload) -> str:
    runs = payload.get("_runs", 0)
    if payload.get("ctype") == CT.cudaGraphCondTypeWhile:
        return f"WHILE ×{runs}"
    return payload.get("name", "")


def handles_types():
    """The node types this module runs (runtime's _run_node hands them here)."""
    return (_NT.cudaGraphNodeTypeConditional, _NT.cudaGraphNodeTypeGraph, _NT.cudaGraphNodeTypeHost,
            _NT.cudaGraphNodeTypeMemAlloc, _NT.cudaGraphNodeTypeMemFree)

"""Conditional nodes (IF, IF/ELSE, WHILE, SWITCH) for the simulated runtime: their handles,
CUDA's rules for them, and the handle values of the executables being launched. Running a
body is `labkit.sim._work`'s; this module imports only the runtime's state.

The rules are the H200's (measured there by a probe now in git history), as
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
  shape succeeds (seen on an H200: a WHILE graph updated by one built the same way with another
  kernel argument and its own handle). Same shape, as CUDA's documentation of the call
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
values it sets.

GPU time: a conditional node costs the calibrated ``conditional_node_us`` (a false IF, gap
included), each WHILE iteration ``while_iteration_us`` more than its body's nodes, and a body's
nodes what they cost at the top level.
"""
from __future__ import annotations

import os

from cuda.bindings import runtime as _cr

from . import _state as S
from . import clock as _clock

E = _cr.cudaError_t
_NT = _cr.cudaGraphNodeType
CT = _cr.cudaGraphConditionalNodeType
ASSIGN_DEFAULT = int(_cr.cudaGraphConditionalHandleFlags.cudaGraphCondAssignDefault)
MAX_WHILE_ITERATIONS = int(os.environ.get("LABKIT_SIM_MAX_WHILE", "10000"))
_BODY_FORBIDDEN = (_NT.cudaGraphNodeTypeHost, _NT.cudaGraphNodeTypeMemAlloc,
                   _NT.cudaGraphNodeTypeMemFree)
NAMES = {CT.cudaGraphCondTypeIf: "IF", CT.cudaGraphCondTypeWhile: "WHILE",
         CT.cudaGraphCondTypeSwitch: "SWITCH"}


class WhileIterationLimit(RuntimeError):
    """A simulated WHILE node ran `MAX_WHILE_ITERATIONS` times: on a GPU it would never stop."""


class Handle:
    def __init__(self, graph, default, flags):
        self.id = next(S.ids)
        self.graph, self.default, self.flags = graph, int(default) & 0xFFFFFFFF, int(flags)
        self.node = None


handles: dict[int, Handle] = {}
_running: list[dict] = []   # the handle values of the executables being launched, innermost last


def cudaGraphConditionalHandleCreate_v2(graph, ctx, defaultLaunchValue, flags):
    """CUDA 13.1's form: the handle's context named (None: the current one); the simulated
    device has one context, so any other is cudaErrorInvalidValue."""
    if not S.primary_ctx(ctx):
        return (S.fail(E.cudaErrorInvalidValue), None)
    return cudaGraphConditionalHandleCreate(graph, defaultLaunchValue, flags)


def cudaGraphConditionalHandleCreate(graph, defaultLaunchValue, flags):
    g = S.any_graph(graph)
    if g is None or int(flags) not in (0, ASSIGN_DEFAULT):
        return (S.fail(E.cudaErrorInvalidValue), None)
    h = Handle(g, defaultLaunchValue, flags)
    handles[h.id] = h
    _clock.api("cudaGraphConditionalHandleCreate", S.P("api_us"))
    return E.cudaSuccess, _cr.cudaGraphConditionalHandle(h.id)


def size_ok(ctype, size):
    if ctype == CT.cudaGraphCondTypeWhile:
        return size == 1
    if ctype == CT.cudaGraphCondTypeIf:
        return size in (1, 2)
    return size >= 1


def new_node_handle(p):
    """The unused handle a conditional node's parameters name, or None."""
    h = handles.get(S.h(p.handle))
    if h is None or h.node is not None or not size_ok(CT(int(p.type)), int(p.size)):
        return None
    return h


# ---------------------------------------------------------------- graphs and executables

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
    if not has_cond and not any(h.graph is g for h in handles.values()):
        return None
    bad_flags = (int(_cr.cudaGraphInstantiateFlags.cudaGraphInstantiateFlagUpload)
                 | int(_cr.cudaGraphInstantiateFlags.cudaGraphInstantiateFlagDeviceLaunch))
    if has_cond and int(flags) & bad_flags:
        return E.cudaErrorInvalidValue
    for body in tree[1:]:
        if any(_forbidden(n) for n in body.nodes):
            return E.cudaErrorInvalidValue
    ids = {id(t) for t in tree}
    if any(h.node is None and id(h.graph) in ids for h in handles.values()):
        return E.cudaErrorInvalidValue
    return None


def _forbidden(n):
    if n.type in _BODY_FORBIDDEN:
        return True
    if n.type == _NT.cudaGraphNodeTypeGraph:
        return any(t in _BODY_FORBIDDEN for t, _, _ in flat(n.payload["nodes"]))
    return False


def flat(snap):
    """Every (type, payload, deps) of a snapshot, child graphs' nodes included."""
    for t, p, d in snap:
        yield t, p, d
        if t == _NT.cudaGraphNodeTypeGraph:
            yield from flat(p["nodes"])


def snapshot(g):
    """An executable's copy of graph ``g``'s nodes: (type, payload, dependency indices), bodies
    of conditional nodes copied too (they are part of the executable, fixed at instantiate)."""
    index = {n: i for i, n in enumerate(g.nodes)}
    out = []
    for n in g.nodes:
        p = dict(n.payload)
        if n.type == _NT.cudaGraphNodeTypeConditional:
            p["bodies"] = [snapshot(b) for b in n.payload["bodies"]]
        out.append((n.type, p, [index[d] for d in n.deps]))
    return out


def on_instantiate(x, g):
    """Give executable ``x`` its own copies of the bodies and its own handle values."""
    for ntype, payload, _deps in x.nodes:
        if ntype == _NT.cudaGraphNodeTypeConditional:
            payload["bodies"] = [snapshot(b) for b in payload["bodies"]]
    ids = {id(t) for t in _tree(g)}
    x.cond_handles = [h for h in handles.values() if id(h.graph) in ids]
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


def push(values):
    """Make ``values`` (an executable's handles) the running graph's, while its work runs."""
    _running.append(values if values is not None else {})


def pop():
    _running.pop()


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
            pairs = zip(xp["bodies"], n.payload["bodies"])
            if not all(_same_shape(xb, b.nodes) for xb, b in pairs):
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


# ---------------------------------------------------------------- values while running

def set_value(handle, value):
    """Set a conditional handle's value from device code (``cudaGraphSetConditional``)."""
    h = int(handle)
    values = _running[-1] if _running else None
    if values is None or h not in values:
        where = ("no graph is running: set_condition only works in a kernel launched inside "
                 "the graph that owns the handle (in a conditional body, or before the node)"
                 if values is None else
                 f"the running graph does not own handle {h}: pass the handle of this graph's "
                 "own condition (graph.condition() of a labkit.conditional_graph, or "
                 "cudaGraphConditionalHandleCreate on it)")
        raise RuntimeError(f"set_condition({h}, {int(value)}): {where}")
    values[h] = int(value) & 0xFFFFFFFF


def value(payload) -> int:
    """The current value of the handle of the conditional node with ``payload``."""
    return _running[-1].get(payload["handle"], 0)


def picked_body(payload):
    """The body an IF or SWITCH node runs for its handle's value now, or None."""
    v, bodies = value(payload), payload["bodies"]
    if payload["ctype"] == CT.cudaGraphCondTypeIf:
        return 0 if v else (1 if len(bodies) == 2 else None)
    return v if v < len(bodies) else None


def while_limit(runs, payload):
    """Raise `WhileIterationLimit` once a WHILE node has run `MAX_WHILE_ITERATIONS` times."""
    if runs >= MAX_WHILE_ITERATIONS:
        raise WhileIterationLimit(
            f"a WHILE node ran {runs} iterations and its condition is still "
            f"{value(payload)}: on a GPU this loop would never end. A kernel in the body must "
            "call set_condition(handle, 0) when the loop should stop (check its test, and "
            "that it gets this graph's handle); raise LABKIT_SIM_MAX_WHILE if the loop "
            "really needs more iterations")


def span_name(payload) -> str:
    runs = payload.get("_runs", 0)
    if payload.get("ctype") == CT.cudaGraphCondTypeWhile:
        return f"WHILE ×{runs}"
    return payload.get("name", "")

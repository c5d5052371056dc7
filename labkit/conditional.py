"""Conditional nodes: loops and branches that the GPU decides, inside one graph launch.

Since CUDA 12.3 a graph may hold conditional nodes IF and WHILE; since CUDA 12.8 also IF/ELSE
(an IF with a second body) and SWITCH. Each has a
*condition* (a ``cudaGraphConditionalHandle``) whose value a kernel sets on the device with
``cudaGraphSetConditional``; the node then runs one of its *body* graphs, or none, or (WHILE)
runs its body again for as long as the value is not 0. No host round trip is involved.

>>> g = labkit.conditional_graph()
>>> cond = g.condition(default=1)             # 1: the loop starts; a kernel sets 0 to stop it
>>> body = g.while_loop(cond)
>>> with body.capture(stream):                # cudaStreamBeginCaptureToGraph into the body
...     count_to[1, 1, stream](counter, 50, cond.arg)   # calls set_condition(h, 0) at 50
>>> ex = g.instantiate(); ex.launch(stream)   # 50 iterations, one launch

Everything goes through ``labkit.rt`` (``cudaGraphConditionalHandleCreate``, ``cudaGraphAddNode``
with a ``cudaGraphNodeParams`` of type ``cudaGraphNodeTypeConditional``,
``cudaStreamBeginCaptureToGraph``), so the same raw calls run on a GPU and on the simulator.

`set_condition` is the device-side setter, callable from any ``numba.cuda`` kernel or device
function: on a GPU a declared foreign function (``cuda.declare_device``) whose CUDA C source,
``labkit/_set_condition.cu``, numba compiles and links by itself; on the simulator a Python
function that sets the simulated handle (numba's simulator runs kernels as Python).

Rules (CUDA's documentation of ``cudaConditionalNodeParams``, and measured on an H200, pinned by
tests/conformance/test_conditional.py): a body may hold kernels, empty nodes, copies, memsets,
child graphs and conditionals, not host functions or memory allocations (an event recorded
while capturing into a body adds no node to it); each condition drives one node; with ``assign_default=True`` every launch starts
from the default; without it CUDA leaves the value undefined at the start of each launch, and
code must not assume it persists from one launch to the next (the H200 kept it; do not rely on it).
"""
from __future__ import annotations

import contextlib
from pathlib import Path

import numpy as np

from . import _open_captures, _capture
from ._capture import CAPTURE_MODES
from ._errors import CudaError, check
from ._graph import Graph, GraphExec
from ._handles import stream_handle
from .backends import frees_held, make_set_condition, rt

__all__ = ["Condition", "Body", "ConditionalGraph", "conditional_graph", "conditional_in_capture",
           "set_condition", "SET_CONDITION_CU", "BODY_RULE"]

SET_CONDITION_CU = Path(__file__).with_name("_set_condition.cu")
BODY_RULE = ("a conditional body may hold kernels, empty nodes, copies, memsets, child graphs and "
             "conditionals only")

_NT = rt.cudaGraphNodeType
_CT = rt.cudaGraphConditionalNodeType
_KINDS = {"while": _CT.cudaGraphCondTypeWhile, "if": _CT.cudaGraphCondTypeIf,
          "switch": _CT.cudaGraphCondTypeSwitch}


#: ``set_condition(handle, value)``: call it in a kernel to set a condition on the device
#: (``handle`` is `Condition.arg`, a uint64 kernel argument; ``value`` a uint32).
set_condition = make_set_condition(str(SET_CONDITION_CU))


class Condition:
    """A condition of a graph: the value a conditional node tests.

    ``cond.arg`` is the handle as a kernel argument (``np.uint64``): pass it to the kernel that
    calls ``set_condition(h, value)``. ``cond.handle`` is the raw ``cudaGraphConditionalHandle``.
    """

    def __init__(self, handle, default: int, assign_default: bool):
        self.handle, self.default, self.assign_default = handle, int(default), assign_default
        self.node = None

    @property
    def arg(self):
        return np.uint64(int(self.handle))

    def __int__(self):
        return int(self.handle)

    def __repr__(self):
        used = "unused" if self.node is None else "used"
        return f"<labkit.Condition {int(self.handle)} default={self.default} {used}>"


class _Builder:
    """Adding conditional nodes and capturing work: shared by a graph and its bodies."""

    _root: "ConditionalGraph"

    def condition(self, default: int = 0, assign_default: bool = True) -> Condition:
        """A new condition of this graph's root (``cudaGraphConditionalHandleCreate``).

        Parameters
        ----------
        default : int
            The value each launch starts from (with ``assign_default``).
        assign_default : bool
            ``cudaGraphCondAssignDefault``: reset to ``default`` at every launch. Without it
            CUDA leaves the value undefined when a launch starts: a kernel must set it before
            a node reads it, and no launch may count on the value the last one left.
        """
        root = self._root
        flags = int(rt.cudaGraphConditionalHandleFlags.cudaGraphCondAssignDefault) if assign_default else 0
        h = check(rt.cudaGraphConditionalHandleCreate(root.handle, int(default), flags),
                  "cudaGraphConditionalHandleCreate")
        c = Condition(h, default, assign_default)
        root._conditions.append(c)
        return c

    def _add(self, cond: Condition, kind: str, size: int, deps) -> list["Body"]:
        if not isinstance(cond, Condition):
            raise TypeError(f"expected a labkit.Condition (from graph.condition()), got "
                            f"{type(cond).__name__}")
        if cond.node is not None:
            raise ValueError(f"{cond!r} already drives a conditional node: each condition drives "
                             "one node; make another with graph.condition()")
        p = rt.cudaGraphNodeParams()
        p.type = _NT.cudaGraphNodeTypeConditional
        p.conditional.handle = cond.handle
        p.conditional.type = _KINDS[kind]
        p.conditional.size = size
        deps = list(deps or [])
        err, node = rt.cudaGraphAddNode(self.handle, deps or None, None, len(deps), p)
        if int(err):
            raise CudaError(err, f"cudaGraphAddNode ({kind.upper()}, {size} bodies)",
                            hint="the condition must belong to this graph's root and be used by "
                                 "no other node, and the dependencies must be nodes of this graph")
        cond.node = node
        bodies = [Body(b, node, self._root, kind, i)
                  for i, b in enumerate(list(p.conditional.phGraph_out)[:size])]
        self._root._bodies.extend(bodies)
        return bodies

    def while_loop(self, cond: Condition, deps=()) -> "Body":
        """A WHILE node after ``deps``: its body runs for as long as ``cond`` is not 0 (tested
        before every iteration, so a start value of 0 runs it no time)."""
        return self._add(cond, "while", 1, deps)[0]

    def if_then(self, cond: Condition, deps=()) -> "Body":
        """An IF node after ``deps``: its body runs once if ``cond`` is not 0."""
        return self._add(cond, "if", 1, deps)[0]

    def if_else(self, cond: Condition, deps=()) -> tuple["Body", "Body"]:
        """An IF/ELSE node after ``deps``: (then-body, else-body); then runs on non-zero."""
        then, other = self._add(cond, "if", 2, deps)
        return then, other

    def switch(self, cond: Condition, n: int, deps=()) -> list["Body"]:
        """A SWITCH node with ``n`` bodies after ``deps``: body ``value`` runs, none if
        ``value >= n``."""
        if int(n) < 1:
            raise ValueError(f"a SWITCH needs at least 1 body, got n={n}")
        return self._add(cond, "switch", int(n), deps)

    @contextlib.contextmanager
    def capture(self, stream, deps=(), mode: str = "relaxed"):
        """Capture what is submitted to ``stream`` into this graph (after ``deps``).

        ``cudaStreamBeginCaptureToGraph``: the work is appended to this graph instead of a new
        one. The yielded object's ``nodes`` are, after the block, the captured work's last
        nodes (what a following node should depend on). Relaxed by default, because a kernel's
        first launch may compile and load its module inside the capture.
        """
        if mode not in CAPTURE_MODES:
            raise ValueError(f"mode must be one of {sorted(CAPTURE_MODES)}, got {mode!r}")
        h = stream_handle(stream)
        if h in (0, 1):
            raise CudaError(rt.cudaError_t.cudaErrorStreamCaptureUnsupported,
                            "cudaStreamBeginCaptureToGraph on the legacy NULL stream",
                            hint="capture a stream you created (labkit.Stream())")
        deps = list(deps or [])
        with frees_held():     # no cuMemFree of numba's inside the capture (see frees_held)
            rt.cudaGetLastError()
            check(rt.cudaStreamBeginCaptureToGraph(h, self.handle, deps or None, None, len(deps),
                                                   CAPTURE_MODES[mode]), "cudaStreamBeginCaptureToGraph")
            cap = _capture.Capture(stream, mode)
            cap.keepalive = self._root.keepalive
            cap.nodes = []
            stack = _open_captures.push(cap)
            failed = None
            try:
                yield cap
            except BaseException as e:
                failed = e
                raise
            finally:
                _open_captures.pop(stack)
                first = rt.cudaGetLastError()[0]
                info = rt.cudaStreamGetCaptureInfo(h)
                if int(info[0]) == 0 and int(info[1]) == int(
                        rt.cudaStreamCaptureStatus.cudaStreamCaptureStatusActive):
                    cap.nodes = list(info[4])
                err = rt.cudaStreamEndCapture(h)[0]
                if int(err) and failed is None:
                    where = f"; the first failing call returned {CudaError(first).name}" if int(first) else ""
                    raise CudaError(err, f"cudaStreamEndCapture into {self._what()}{where}")

    def _what(self) -> str:
        return "the graph"


class Body(Graph, _Builder):
    """One body graph of a conditional node (owned by the node, not destroyed by ``close``).

    Fill it by `capture` or with labkit.explicit's ``add_*`` calls; nest conditionals in it with
    its own `while_loop` / `if_then` / `if_else` / `switch`.
    """

    def __init__(self, handle, node, root, kind, index):
        super().__init__(handle, keepalive=None, owned=False)
        self.keepalive = root.keepalive       # the executable keeps the body's arguments alive
        self.node, self._root, self.kind, self.index = node, root, kind, index

    def _what(self) -> str:
        return f"{self.kind.upper()} body {self.index}"

    def __repr__(self):
        return f"<labkit.Body {self.kind.upper()}[{self.index}] nodes={len(self)}>"


class ConditionalGraph(Graph, _Builder):
    """A `labkit.Graph` built with conditional nodes; `instantiate` explains CUDA's refusals."""

    made = "built"

    def __init__(self, handle=None):
        super().__init__(handle if handle is not None else
                         check(rt.cudaGraphCreate(0), "cudaGraphCreate"))
        self._root = self
        self._conditions: list[Condition] = []
        self._bodies: list[Body] = []

    def instantiate(self, upload_stream=None, flags: int = 0):
        """Instantiate (``cudaGraphInstantiate``); on failure the error says what to change."""
        err, ex = rt.cudaGraphInstantiate(self.handle, int(flags))
        if int(err):
            rt.cudaGetLastError()
            raise CudaError(err, "cudaGraphInstantiate of a graph with conditional nodes",
                            hint=self._why(int(flags)))
        ex = GraphExec(ex, self)
        if upload_stream is not None:
            ex.upload(upload_stream)
        return ex

    def _why(self, flags: int) -> str:
        bad = {int(_NT.cudaGraphNodeTypeHost): "a host function",
               int(_NT.cudaGraphNodeTypeMemAlloc): "a memory allocation",
               int(_NT.cudaGraphNodeTypeMemFree): "a memory free"}
        for b in self._bodies:
            found = sorted({bad[int(check(rt.cudaGraphNodeGetType(n)))] for n in b.nodes
                            if int(check(rt.cudaGraphNodeGetType(n))) in bad})
            if found:
                return (f"{BODY_RULE}; {b.kind.upper()} body {b.index} holds "
                        f"{' and '.join(found)}. Move host work before or after the conditional "
                        "node (a host decision per iteration is a host round trip), and allocate "
                        "memory before building the graph")
        unused = [c for c in self._conditions if c.node is None]
        if unused:
            return (f"{unused[0]!r} drives no node: every condition must be used by one "
                    "conditional node; drop it or add its node")
        F = rt.cudaGraphInstantiateFlags
        if flags & (int(F.cudaGraphInstantiateFlagUpload) | int(F.cudaGraphInstantiateFlagDeviceLaunch)):
            return ("a graph with conditional nodes refuses the Upload and DeviceLaunch "
                    "instantiate flags: instantiate without them and call GraphExec.upload(stream)")
        return "check the conditions (one node each) and the bodies' node kinds"

    def __repr__(self):
        return (f"<labkit.ConditionalGraph nodes={len(self)} conditions={len(self._conditions)} "
                f"bodies={len(self._bodies)}>")


def conditional_graph() -> ConditionalGraph:
    """An empty graph to build with conditional nodes (see `ConditionalGraph`)."""
    return ConditionalGraph()


class _CaptureRoot:
    """The root of a graph being stream-captured, as far as conditional nodes need one."""

    def __init__(self, graph_handle, keepalive):
        self.handle, self.keepalive = graph_handle, keepalive
        self._root, self._conditions, self._bodies = self, [], []


def conditional_in_capture(stream, kind: str = "while", default: int = 1, n: int | None = None,
                           assign_default: bool = True):
    """Add a conditional node to the graph ``stream`` is capturing, where the stream has got to.

    The stream's later work then depends on the node; fill the bodies by capturing *another*
    stream with ``body.capture(other)``. Returns ``(condition, bodies)``.

    Parameters
    ----------
    stream : labkit.Stream
        A stream inside ``labkit.capture`` (or ``cudaStreamBeginCapture``).
    kind : {"while", "if", "if_else", "switch"}
    default : int
        The condition's default value.
    n : int, optional
        The number of SWITCH bodies.
    """
    h = stream_handle(stream)
    info = check(rt.cudaStreamGetCaptureInfo(h), "cudaStreamGetCaptureInfo")
    status, graph, deps = info[0], info[2], list(info[3])
    if int(status) != int(rt.cudaStreamCaptureStatus.cudaStreamCaptureStatusActive):
        raise ValueError("conditional_in_capture needs a stream that is capturing: call it "
                         "inside labkit.capture(stream)")
    outer = _capture.current_capture()
    root = _CaptureRoot(graph, outer.keepalive if outer is not None else [])
    b = _Builder.__new__(_Builder)
    b._root, b.handle = root, graph
    cond = _Builder.condition(b, default, assign_default)
    if kind == "if_else":
        bodies = _Builder._add(b, cond, "if", 2, deps)
    elif kind == "switch":
        if not n or n < 1:
            raise ValueError("a SWITCH needs n >= 1 bodies")
        bodies = _Builder._add(b, cond, "switch", int(n), deps)
    elif kind in ("while", "if"):
        bodies = _Builder._add(b, cond, kind, 1, deps)
    else:
        raise ValueError(f"kind must be while, if, if_else or switch, got {kind!r}")
    check(rt.cudaStreamUpdateCaptureDependencies(
        h, [cond.node], None, 1,
        int(rt.cudaStreamUpdateCaptureDependenciesFlags.cudaStreamSetCaptureDependencies)),
        "cudaStreamUpdateCaptureDependencies")
    return cond, bodies

"""The eager switch: ``LABKIT_GRAPHS=eager`` runs every labkit graph path without a graph.

The first step of debugging a graph is to run the same code without one (llama.cpp's
``GGML_CUDA_DISABLE_GRAPHS``, SGLang's ``--disable-cuda-graph``). With ``LABKIT_GRAPHS=eager`` in
the environment, or inside ``with labkit.eager():``, no stream is captured and no graph is
launched, and the code that uses labkit's graphs runs unchanged:

* `labkit.captured` calls its function eagerly at every call: names are looked up afresh, as
  eager code does (a function is the form to prefer for an eager comparison);
* ``with labkit.capture(stream) as cap`` runs nothing in its block, as a capture runs nothing: it
  records the launches of labkit kernels made in the block (their kernel, grid, block and
  arguments); ``cap.graph.instantiate()`` gives an executable whose ``launch(stream)`` makes those
  launches one by one on ``stream``, in the order the block made them. `GraphCache`,
  ``update`` and ``set_kernel_args`` work on what was recorded. A block cannot run again, so
  its arguments are those of the block: a name rebound later is not seen (as in a graph);
  raw ``labkit.rt`` calls in the block run at once, not at each launch.

The switch is read when a capture begins and when a `captured` function is called, never in a launch.
"""
from __future__ import annotations

import contextlib
import os

import numpy as np

from ._errors import CudaError
from ._graph import Graph, GraphExec, UpdateResult
from ._handles import stream_handle

__all__ = ["eager", "graphs_are_eager", "captured", "Captured", "EagerGraph", "EagerExec",
           "compare_outputs", "Comparison"]

ENV = "LABKIT_GRAPHS"
_override: list = []     # innermost labkit.eager(...) block's setting


def graphs_are_eager() -> bool:
    """True when labkit's graph paths run eagerly: ``LABKIT_GRAPHS=eager`` or `eager`."""
    if _override:
        return _override[-1]
    return os.environ.get(ENV, "").strip().lower() == "eager"


@contextlib.contextmanager
def eager(on: bool = True):
    """Run labkit's graph paths eagerly in this block (``on=False``: with graphs, whatever
    ``LABKIT_GRAPHS`` says)."""
    _override.append(bool(on))
    try:
        yield
    finally:
        _override.pop()


def _eager_only(what):
    raise NotImplementedError(f"{what} needs a real graph; with the eager switch on "
                              f"({ENV}=eager or labkit.eager()) there is none")


class EagerGraph(Graph):
    """What a capture gives with the eager switch on: the labkit launches its block made."""

    _what = "eager graph"
    made = "eager"

    def __init__(self, launches, keepalive=None, launched=None):
        super().__init__(handle="eager", keepalive=keepalive, launched=launched)
        self.launches = list(launches)      # (kernel, grid, block, args)

    def _destroy(self, handle):
        self.launches = []

    @property
    def nodes(self):
        return list(range(len(self.launches)))

    def node_kinds(self):
        return ["kernel"] * len(self.launches)

    def kernel_nodes(self):
        return self.nodes

    @property
    def edges(self):
        return [(i, i + 1) for i in range(len(self.launches) - 1)]

    def __len__(self):
        return len(self.launches)

    def to_networkx(self):
        _eager_only("to_networkx")

    def to_dot(self):
        _eager_only("to_dot")

    def instantiate(self, upload_stream=None, flags=0) -> "EagerExec":
        self._open()
        return EagerExec(self)

    def set_kernel_args(self, index, kernel, grid=None, block=None, *args):
        _replace(self.launches, index, kernel, grid, block, args)

    def __repr__(self):
        return f"<labkit.EagerGraph launches={len(self.launches)}>"


class EagerExec(GraphExec):
    """An executable with the eager switch on: ``launch`` makes the recorded launches."""

    _what = "eager executable"

    def __init__(self, graph: EagerGraph):
        self.handle, self.graph = "eager", graph
        self.launches = list(graph.launches)
        self.keepalive = list(graph.keepalive)
        self._bound, self._easy = {}, {}

    def _destroy(self, handle):
        self.launches = []

    def launch(self, stream):
        self._open()
        for k, grid, block, args in self.launches:
            k[grid, block, stream](*args)

    def upload(self, stream):
        self._open()

    def update(self, graph) -> UpdateResult:
        new = getattr(graph, "launches", None)
        if new is None or [k for k, *_ in new] != [k for k, *_ in self.launches]:
            return UpdateResult(910, "the new graph's topology or node types differ from the "
                                     "executable's")
        self.graph, self.launches, self.keepalive = graph, list(new), list(graph.keepalive)
        return UpdateResult(0)

    def set_kernel_args(self, index, kernel, grid, block, *args):
        _replace(self.launches, index, kernel, grid, block, args)

    def set_kernel_params(self, index, params):
        _replace(self.launches, index, params.kernel, params.grid, params.block, params.args)

    def kernel_node(self, *a, **kw):
        _eager_only("GraphExec.kernel_node")

    def __repr__(self):
        return f"<labkit.EagerExec launches={len(self.launches)}>"


def _replace(launches, index, kernel, grid, block, args):
    if not 0 <= index < len(launches):
        raise IndexError(f"kernel node {index} does not exist: the graph has {len(launches)}")
    if grid is None:                     # a LaunchParams
        kernel, grid, block, args = kernel.kernel, kernel.grid, kernel.block, kernel.args
    launches[index] = (kernel, grid, block, tuple(args))


class Captured:
    """``fn(stream)`` as a graph: captured at the first call (or by `capture`), replayed at
    every later one.

    With the eager switch on, every call runs ``fn(stream)`` eagerly instead. Made by
    `captured`. ``exec`` is the executable once captured (None before, and when eager).
    """

    def __init__(self, fn):
        self.fn, self.exec, self.graph = fn, None, None
        self._stream = None

    def __call__(self, stream):
        if graphs_are_eager():
            self.fn(stream)
            return
        if self.exec is None or self._stream != stream_handle(stream):
            self.capture(stream)
        self.exec.launch(stream)

    def capture(self, stream):
        """Capture ``fn(stream)`` and instantiate it now, launching nothing (with the eager
        switch on: nothing at all). A later call replays it."""
        if graphs_are_eager():
            return
        self.close()
        from ._capture import capture
        with capture(stream) as cap:
            self.fn(stream)
        self.graph = cap.graph
        self.exec = self.graph.instantiate()
        self._stream = stream_handle(stream)

    def close(self):
        for h in (self.exec, self.graph):
            if h is not None:
                h.close()
        self.exec = self.graph = None

    def __repr__(self):
        return f"<labkit.captured {getattr(self.fn, '__name__', 'fn')}: " \
               f"{'captured' if self.exec is not None else 'not captured yet'}>"


def captured(fn) -> Captured:
    """Make ``fn(stream)`` (which launches work on ``stream``) a graph, captured at its first
    call and replayed at each later call; eager at every call with the eager switch on.

    >>> step = labkit.captured(lambda s: decode_step(model, s))
    >>> step(stream)      # the first call captures, instantiates and launches
    """
    if not callable(fn):
        raise TypeError("captured(fn) needs a function fn(stream) that launches work on stream")
    return Captured(fn)


# ------------------------------------------------------------------ graph against eager

class Comparison:
    """What `compare_outputs` found: one row per output buffer."""

    def __init__(self, rows):
        self.rows = rows     # (name, equal, max_abs_diff, first differing flat index or None)

    @property
    def ok(self) -> bool:
        return all(r[1] for r in self.rows)

    @property
    def mismatched(self) -> list[str]:
        return [r[0] for r in self.rows if not r[1]]

    def __bool__(self):
        return self.ok

    def __str__(self):
        width = max([len(r[0]) for r in self.rows] + [6])
        lines = [f"{'buffer':{width}}  graph == eager   max |diff|   first differing element"]
        for name, equal, diff, first in self.rows:
            lines.append(f"{name:{width}}  {'yes' if equal else 'NO':14}  {diff:10.3g}   "
                         f"{'' if first is None else first}")
        return "\n".join(lines)

    __repr__ = __str__


def compare_outputs(fn, stream, outputs: dict, setup=None, calls: int = 1,
                    rtol: float = 0.0, atol: float = 0.0) -> Comparison:
    """Run ``fn(stream)`` eagerly, then as a graph (`captured`), ``calls`` times each, and
    compare every buffer of ``outputs`` (name -> device array) between the two runs.

    ``setup()`` is called before each run: it puts the inputs and any state back where they
    start (the two runs must start from the same data). The eager run goes first, so every
    kernel is compiled before the capture. Equal means within ``rtol``/``atol`` (exact by
    default: the same kernels on the same data).
    """
    if not outputs:
        raise ValueError("outputs must name at least one device array: {name: array}")
    got = {}
    for mode in ("eager", "graph"):
        if setup is not None:
            setup()
        g = captured(fn)
        with eager(mode == "eager"):
            for _ in range(int(calls)):
                g(stream)
        err, = _sync(stream)
        if int(err):
            g.close()
            raise CudaError(err, f"synchronizing after the {mode} run")
        got[mode] = {name: np.asarray(a.copy_to_host()) for name, a in outputs.items()}
        g.close()
    rows = []
    for name in outputs:
        a, b = got["eager"][name], got["graph"][name]
        close = np.isclose(b, a, rtol=rtol, atol=atol, equal_nan=True)
        diff = float(np.max(np.abs(b.astype(np.float64) - a.astype(np.float64)))) if a.size else 0.0
        bad = np.flatnonzero(~close.reshape(-1))
        rows.append((name, bool(close.all()), diff, int(bad[0]) if bad.size else None))
    return Comparison(rows)


def _sync(stream):
    from .backend import rt
    return rt.cudaStreamSynchronize(stream_handle(stream))

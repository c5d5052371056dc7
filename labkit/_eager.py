"""The eager switch: ``LABKIT_GRAPHS=eager`` runs every labkit graph path without a graph.

The first step of debugging a graph is to run the same code without one (llama.cpp's
``GGML_CUDA_DISABLE_GRAPHS``, SGLang's ``--disable-cuda-graph``). With ``LABKIT_GRAPHS=eager`` in
the environment, or inside ``with labkit.eager():``, no stream is captured and no graph is
launched, and the code that uses labkit's graphs runs unchanged:

* `labkit.captured` calls its function eagerly at every call: names are looked up afresh, as
  eager code does (a function is the form to prefer for an eager comparison); a
  `labkit.graphed` callable calls its ``fn`` on its static inputs instead of replaying;
* ``with labkit.capture(stream) as cap`` runs nothing in its block, as a capture runs nothing: it
  records the launches of labkit kernels made in the block (their kernel, grid, block and
  arguments); ``cap.graph.instantiate()`` gives an executable whose ``launch(stream)`` makes those
  launches one by one on ``stream``, in the order the block made them. `GraphCache`,
  ``update`` and ``set_kernel_args`` work on what was recorded. A block cannot run again, so
  its arguments are those of the block: a name rebound later is not seen (as in a graph);
  raw ``labkit.rt`` calls in the block run at once, not at each launch.

The switch is read when a capture begins and when a `captured` or `graphed` function is called,
never in a launch.
"""
from __future__ import annotations

import contextlib
import os

from ._graph import Graph, GraphExec, UpdateResult

__all__ = ["eager", "graphs_are_eager", "EagerGraph", "EagerExec"]

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

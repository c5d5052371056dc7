"""Graphs for inputs whose shape varies: `GraphCache`, and `UpdatingGraph` (update, else re-instantiate).

A graph bakes its shapes in. A server whose batch size changes from request to request either
captures one graph per shape (`GraphCache` without buckets), or pads each request up to the next
of a few captured sizes, as vLLM's capture sizes do (`GraphCache` with ``buckets``). A step whose
graph changes now and then is kept current with `UpdatingGraph`, by llama.cpp's rule: replay
while the step is unchanged; run a changed step eagerly, and capture it once it repeats, updating
the executable (``cudaGraphExecUpdate``), or instantiating where the update fails. llama.cpp's
first rule (capture every change, turn graphs off for good after several in a row) is kept as
``max_changed``.
"""
from __future__ import annotations

import bisect
import math
from collections import OrderedDict

from ._capture import capture
from ._graph import Graph, GraphExec
from ._streams import Stream

__all__ = ["GraphCache", "UpdatingGraph"]


def _elements(shape) -> int:
    return shape if isinstance(shape, int) else math.prod(shape)


class GraphCache:
    """Executable graphs keyed by shape, optionally bucketed, bounded with LRU eviction.

    Parameters
    ----------
    build : callable
        ``build(size, stream) -> labkit.Graph``: capture the work for ``size`` (an int batch
        size, or a tuple shape whose first entry is the batch) on ``stream`` and return the graph.
    buckets : sequence of int, optional
        Captured batch sizes. A request is padded up to the smallest bucket that holds it.
        None: every distinct shape gets its own graph (no padding).
    max_entries : int, optional
        At most this many executables are kept; the least recently used one is closed (its
        executable and its graph destroyed) to make room. None: unbounded.
    stream : labkit.Stream, optional
        The stream graphs are captured on; the cache makes its own when None.

    Examples
    --------
    >>> cache = labkit.GraphCache(build=fn, buckets=[1, 2, 4, 8], max_entries=8)
    >>> ex, padded = cache.get(3)        # captures the size-4 graph on the first call
    >>> padded = cache.run(3, stream)    # launches it
    """

    def __init__(self, build, buckets=None, max_entries: int | None = None, stream=None):
        if not callable(build):
            raise TypeError("build must be a function build(size, stream) -> labkit.Graph")
        if buckets is not None:
            buckets = sorted(set(int(b) for b in buckets))
            if not buckets or buckets[0] < 1:
                raise ValueError(f"buckets must be positive batch sizes, got {buckets!r}")
        if max_entries is not None and int(max_entries) < 1:
            raise ValueError(f"max_entries must be at least 1 (or None for no bound), got {max_entries!r}")
        self.build, self.buckets = build, buckets
        self.max_entries = None if max_entries is None else int(max_entries)
        self._stream = stream
        self._own_stream = None
        self._entries: OrderedDict = OrderedDict()   # key -> (GraphExec, Graph), LRU first
        self.hits = self.misses = self.evictions = 0
        self.requested_elements = self.padded_elements = 0

    # ------------------------------------------------------------------ keys
    def key_for(self, shape):
        """The shape whose graph serves a request of ``shape`` (the bucket, or ``shape`` itself)."""
        batch, rest = self._split(shape)
        if self.buckets is None:
            return shape
        i = bisect.bisect_left(self.buckets, batch)
        if i == len(self.buckets):
            raise ValueError(
                f"batch size {batch} is larger than the largest captured bucket "
                f"({self.buckets[-1]}): add a bucket of at least {batch} to buckets=, split the "
                f"request into batches of at most {self.buckets[-1]}, or run it eagerly")
        b = self.buckets[i]
        return b if rest is None else (b,) + rest

    def _split(self, shape):
        if isinstance(shape, bool) or not isinstance(shape, (int, tuple)):
            raise TypeError(f"a shape is a positive int (the batch size) or a tuple of them, "
                            f"got {type(shape).__name__} {shape!r}")
        dims = (shape,) if isinstance(shape, int) else shape
        if not dims or any(isinstance(d, bool) or not isinstance(d, int) or d < 1 for d in dims):
            raise ValueError(f"cannot serve shape {shape!r}: every dimension must be a positive "
                             "int (an empty batch needs no graph: skip the launch)")
        return dims[0], (None if isinstance(shape, int) else tuple(dims[1:]))

    # ------------------------------------------------------------------ use
    def get(self, shape, stream=None) -> tuple[GraphExec, object]:
        """``(executable, padded shape)`` for a request of ``shape``, capturing it on a miss.

        ``stream``: where a missing graph is captured (the cache's own stream when None).
        """
        key = self.key_for(shape)
        self.requested_elements += _elements(shape)
        self.padded_elements += _elements(key) - _elements(shape)
        hit = self._entries.get(key)
        if hit is not None:
            self.hits += 1
            self._entries.move_to_end(key)
            return hit[0], key
        self.misses += 1
        graph = self.build(key, self._capture_stream(stream))
        if not isinstance(graph, Graph):
            raise TypeError(f"build({key!r}, stream) returned {type(graph).__name__}; it must "
                            "return the labkit.Graph of a capture (cap.graph)")
        ex = graph.instantiate()
        while self.max_entries is not None and len(self._entries) >= self.max_entries:
            self._evict()
        self._entries[key] = (ex, graph)
        return ex, key

    def run(self, shape, stream):
        """Launch the graph for ``shape`` on ``stream``; returns the padded shape it ran."""
        ex, key = self.get(shape, stream)
        ex.launch(stream)
        return key

    def _capture_stream(self, stream):
        if stream is not None:
            return stream
        if self._stream is None:
            self._own_stream = self._stream = Stream()
        return self._stream

    def _evict(self):
        _, (ex, graph) = self._entries.popitem(last=False)
        ex.close()
        graph.close()
        self.evictions += 1

    # ------------------------------------------------------------------ report
    @property
    def hit_rate(self) -> float:
        """Hits over lookups (0.0 before the first lookup)."""
        n = self.hits + self.misses
        return self.hits / n if n else 0.0

    def stats(self) -> dict:
        """Counts so far: hits, misses, evictions, entries, hit_rate, requested/padded elements
        and ``padding_fraction`` (padded elements over all elements computed)."""
        computed = self.requested_elements + self.padded_elements
        return dict(hits=self.hits, misses=self.misses, evictions=self.evictions,
                    entries=len(self._entries), hit_rate=self.hit_rate,
                    requested_elements=self.requested_elements,
                    padded_elements=self.padded_elements,
                    padding_fraction=self.padded_elements / computed if computed else 0.0)

    def keys(self) -> list:
        """Cached shapes, least recently used first."""
        return list(self._entries)

    def __len__(self):
        return len(self._entries)

    def __contains__(self, shape):
        return shape in self._entries

    def close(self):
        """Destroy every cached executable and graph (and the cache's own stream)."""
        while self._entries:
            _, (ex, graph) = self._entries.popitem(last=False)
            ex.close()
            graph.close()
        if self._own_stream is not None:
            self._own_stream.close()
            self._own_stream = self._stream = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        s = self.stats()
        return (f"<labkit.GraphCache entries={s['entries']} hits={s['hits']} misses={s['misses']} "
                f"evictions={s['evictions']} hit_rate={s['hit_rate']:.2f}>")


class UpdatingGraph:
    """One step's graph kept current, with llama.cpp's rule for a step whose graph changes.

    Each step calls ``run(record, key, stream)``. ``record(stream)`` submits the step's work, the
    same code eagerly and inside a capture; ``key`` (hashable) says what the step's graph depends
    on, its shapes and buffers, as llama.cpp compares the properties of its nodes before deciding:
    equal keys promise equal graphs, so a step whose key did not change is replayed without
    capturing anything.

    Capturing from Python costs about what launching the same kernels eagerly costs, so a graph
    that changes at every step is dearer than no graph at all. Two rules decide when to capture:

    * ``max_changed=None`` (the default), llama.cpp's current rule, a *warm-up*: a step is
      captured only once it repeats, that is when its key equals the previous step's. A step whose
      key changed (and the very first step) runs eagerly and captures nothing; the next step with
      the same key captures it, and the executable is updated from the new graph
      (``cudaGraphExecUpdate``), or the graph instantiated where the update fails (another
      topology). From then on the step is replayed until its key changes again.
    * ``max_changed=N``, llama.cpp's first rule, kept as history: every changed step is captured
      and the executable updated; after ``N`` changed steps in a row graphs are turned off for
      good, and every later step runs eagerly.

    Parameters
    ----------
    max_changed : int or None
        None: the warm-up rule. An int: consecutive changed steps still captured before graphs
        are turned off for good.

    Attributes
    ----------
    replays, updates, failed_updates, instantiations, eager_steps : int
        How each step was served so far (a failed update is followed by an instantiation).
    consecutive_changed : int
        Steps in a row, up to the last one, whose key differed from the step before.
    using_graphs : bool
        Whether the last step ran as a graph.
    warmed_up : bool
        Warm-up rule: whether the last step repeated its predecessor's key.
    disabled : bool
        First rule: whether graphs are off for good.
    """

    def __init__(self, max_changed: int | None = None):
        if max_changed is not None and (isinstance(max_changed, bool) or int(max_changed) < 1):
            raise ValueError(f"max_changed must be at least 1 (or None for the warm-up rule), "
                             f"got {max_changed!r}")
        self.max_changed = None if max_changed is None else int(max_changed)
        self.exec: GraphExec | None = None
        self._graphs: list[Graph] = []     # the graph instantiated from, then the latest update
        self._exec_key = self._last_key = _NO_KEY
        self.replays = self.updates = self.failed_updates = self.instantiations = 0
        self.eager_steps = 0
        self.consecutive_changed = 0
        self.using_graphs = False
        self.warmed_up = False
        self.disabled = False

    @property
    def rule(self) -> str:
        """The rule in words: "warm-up" or "off after N changes"."""
        return "warm-up" if self.max_changed is None else f"off after {self.max_changed} changes"

    def run(self, record, key, stream) -> str:
        """Serve one step; returns how: "replayed", "updated", "instantiated", "reinstantiated"
        (an update failed, so the new graph was instantiated) or "eager"."""
        if not callable(record):
            raise TypeError("record must be a function record(stream) that submits the step's work")
        hash(key)                                   # a key must be hashable, as a dict key is
        first = self._last_key is _NO_KEY
        changed = not first and key != self._last_key
        self.consecutive_changed = self.consecutive_changed + 1 if changed else 0
        self._last_key = key
        if self.max_changed is None:                # warm-up: graph a step once it repeats
            self.warmed_up = not (first or changed)
            self.using_graphs = self.warmed_up
        else:                                       # first rule: off for good after N changes
            self.using_graphs = not self.disabled
            if self.consecutive_changed >= self.max_changed:
                self.disabled = True                # this change is still captured; none after
        if not self.using_graphs:
            record(stream)
            self.eager_steps += 1
            return "eager"
        if self.exec is not None and key == self._exec_key:
            self.exec.launch(stream)
            self.replays += 1
            return "replayed"
        with capture(stream) as cap:
            record(stream)
        outcome = self.refresh(cap.graph)
        self._exec_key = key
        self.exec.launch(stream)
        return outcome

    def refresh(self, graph: Graph) -> str:
        """Make the executable match ``graph`` (which it owns from then on): update it, or
        instantiate ``graph`` where the update fails. Returns "instantiated" (the first graph),
        "updated" or "reinstantiated"."""
        if not isinstance(graph, Graph):
            raise TypeError(f"refresh needs a labkit.Graph (cap.graph), got {type(graph).__name__}")
        self._exec_key = _NO_KEY
        if self.exec is None:
            self._instantiate(graph)
            return "instantiated"
        if self.exec.update(graph).ok:
            self.updates += 1
            if len(self._graphs) == 2:    # keep the graph whose nodes name the executable's
                self._graphs.pop().close()
            self._graphs.append(graph)
            return "updated"
        self.failed_updates += 1
        self._instantiate(graph)
        return "reinstantiated"

    def _instantiate(self, graph):
        self.close()
        self.exec = graph.instantiate()
        self._graphs = [graph]
        self.instantiations += 1

    def launch(self, stream):
        """Launch the executable as it stands (after `refresh`)."""
        if self.exec is None:
            raise RuntimeError("nothing to launch yet: call run(record, key, stream) or "
                               "refresh(graph) with a captured graph first")
        self.exec.launch(stream)

    def stats(self) -> dict:
        """How the steps were served so far, and the state of the rule."""
        return dict(replays=self.replays, updates=self.updates, failed_updates=self.failed_updates,
                    instantiations=self.instantiations, eager_steps=self.eager_steps,
                    consecutive_changed=self.consecutive_changed, using_graphs=self.using_graphs,
                    warmed_up=self.warmed_up, disabled=self.disabled)

    def close(self):
        """Destroy the executable and the graphs kept for it."""
        if self.exec is not None:
            self.exec.close()
            self.exec = None
        for g in self._graphs:
            g.close()
        self._graphs = []
        self._exec_key = _NO_KEY

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


_NO_KEY = object()     # no step seen yet / no executable for any key

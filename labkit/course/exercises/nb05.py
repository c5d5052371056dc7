"""Notebook 05's request streams, and the check for its exercise: a model server that keeps one
executable for its whole life.

The server (`Server`, which a learner subclasses) holds a model captured once on static buffers:
node 0 adds the customer's *adapter* (``saxpy(out, 1.0, inp, adapter)``), node 1 scales by the
version's weight (``scale(out, w)``), then `LAYERS` ``add_one`` nodes. The learner writes three
methods: ``answer(request)`` (copy in, replay, copy out), ``use_adapter(adapter)`` (a node
update) and ``new_version(graph)`` (an executable update, and the recovery from 910 when the new
version's topology differs). `check_server` serves a scripted day (requests, adapter switches,
new versions, one with a node more) and checks every answer against numpy, that the adapters'
buffers were never written, that each change was made the narrowest way, and that no old
executable is left open; then it times each change against capturing and instantiating anew.

`request_stream` and `MAX_BATCH` serve section 8's demo of varying batch sizes.
"""
from __future__ import annotations

import numpy as np

from ..._capture import capture
from ..._graph import Graph, GraphExec
from ..._kernel import device_array, to_device
from ...backends import host_us
from ..workloads import add_one, saxpy, scale

__all__ = ["request_stream", "MAX_BATCH", "Server", "N", "GRID", "BLOCK", "LAYERS", "WEIGHTS",
           "adapters", "version_graph", "reference", "day", "check_server"]

MAX_BATCH = 64        # the largest batch a request may have (section 8)

N, GRID, BLOCK = 1024, 4, 256
LAYERS = 30           # add_one nodes after the two the exercise changes: a graph of some size
WEIGHTS = {1: 2.0, 2: 3.0, 3: 0.5}   # each version's weight (node 1)
EXTRA_NODE = {3}      # versions with one add_one node more: another topology
_SEED = 2005


def request_stream(n: int, seed: int, max_batch: int = MAX_BATCH) -> np.ndarray:
    """``n`` batch sizes from a seeded generator: mostly small, with a long tail up to ``max_batch``.

    Log-normal (median about 3, one request in a hundred above about 20), rounded up and clipped
    to ``1..max_batch``, as the batch sizes a decode server sees often are.
    """
    rng = np.random.default_rng(seed)
    return np.clip(np.ceil(rng.lognormal(1.0, 0.9, int(n))), 1, max_batch).astype(np.int64)


def _adapter_values() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(_SEED)
    return {name: rng.standard_normal(N).astype(np.float32) for name in "ABC"}


def adapters() -> dict:
    """Three customers' adapters, ``{"A": device array, "B": ..., "C": ...}`` (seeded values).
    They belong to their customers: a server reads them and never writes them."""
    return {name: to_device(v) for name, v in _adapter_values().items()}


def _record(version: int, inp, out, adapter, stream) -> None:
    """Version ``version`` of the model, launched on ``stream`` (eagerly or inside a capture)."""
    saxpy[GRID, BLOCK, stream](out, 1.0, inp, adapter)       # node 0: out = inp + adapter
    scale[GRID, BLOCK, stream](out, WEIGHTS[version])         # node 1: out *= w
    for _ in range(LAYERS + (1 if version in EXTRA_NODE else 0)):
        add_one[GRID, BLOCK, stream](out)                     # nodes 2...: out += 1


def version_graph(server: "Server", version: int) -> Graph:
    """Version ``version`` captured on ``server``'s static buffers, with adapter A (the default:
    a version is built before anyone knows which customer comes next)."""
    with capture(server.stream) as cap:
        _record(version, server.inp, server.out, server.adapters["A"], server.stream)
    return cap.graph


def reference(request, adapter_values, version: int) -> np.ndarray:
    """What version ``version`` answers for ``request`` with an adapter of these values (numpy)."""
    out = (np.asarray(request, np.float32) + adapter_values) * np.float32(WEIGHTS[version])
    return out + np.float32(LAYERS + (1 if version in EXTRA_NODE else 0))


class Server:
    """The exercise's model server, with version 1 captured once and instantiated.

    Attributes: ``stream`` (a `labkit.Stream`), ``inp`` and ``out`` (the static device buffers
    of `N` floats the graph reads and writes), ``adapters`` (the customers' adapters, device
    arrays the server must never write), ``adapter`` (the one in use, A at first), and ``ex``
    (the executable that serves requests). Node 0 of the graph was launched as
    ``saxpy[GRID, BLOCK, stream](out, 1.0, inp, adapter)``; node 1 as
    ``scale[GRID, BLOCK, stream](out, w)``; then come `LAYERS` ``add_one`` nodes.

    Subclass it and write ``answer``, ``use_adapter`` and ``new_version``.
    """

    def __init__(self, stream, adapters_: dict | None = None):
        self.stream = stream
        self.inp, self.out = device_array(N), device_array(N)
        self.adapters = adapters_ if adapters_ is not None else adapters()
        self.adapter = self.adapters["A"]
        _record(1, self.inp, self.out, self.adapter, stream)  # warm-up: every kernel compiled
        stream.synchronize()
        self.graph = version_graph(self, 1)
        self.ex = self.graph.instantiate(upload_stream=stream)

    def answer(self, request: np.ndarray) -> np.ndarray:
        """Serve one request (`N` floats) with ``self.ex``; return the answer as a numpy array."""
        raise NotImplementedError("write answer(self, request): copy in, replay, copy out")

    def use_adapter(self, adapter) -> None:
        """From the next request on, answer with ``adapter`` (one of ``self.adapters``)."""
        raise NotImplementedError("write use_adapter(self, adapter)")

    def new_version(self, graph: Graph) -> None:
        """From the next request on, answer with ``graph``, a new version of the model."""
        raise NotImplementedError("write new_version(self, graph)")


def day() -> list[tuple]:
    """The scripted day `check_server` serves: ("request", k), ("adapter", name) and
    ("version", v) events, in order (requests are drawn from a seeded generator)."""
    ev = [("request", i) for i in range(3)]
    ev += [("adapter", "B")] + [("request", i) for i in range(3, 6)]
    ev += [("version", 2)] + [("request", i) for i in range(6, 9)]
    ev += [("adapter", "C"), ("request", 9), ("adapter", "A"), ("request", 10)]
    ev += [("adapter", "B"), ("request", 11)]
    ev += [("version", 3)] + [("request", i) for i in range(12, 15)]
    ev += [("adapter", "C"), ("request", 15), ("adapter", "A"), ("request", 16)]
    return ev


def _counted(ex) -> None:
    """Count the launches of executable ``ex`` (an instance attribute over the method)."""
    if not isinstance(ex, GraphExec) or getattr(ex, "_launches", None) is not None:
        return
    ex._launches = 0
    launch = ex.launch

    def counting(stream):
        ex._launches += 1
        return launch(stream)
    ex.launch = counting


def _who(values: dict, got: np.ndarray, request, version: int) -> str:
    """Which adapter and version ``got`` was computed with, in words, where one fits."""
    for v in WEIGHTS:
        for name, a in values.items():
            if np.allclose(got, reference(request, a, v), rtol=1e-5, atol=1e-4):
                return f"adapter {name} and version {v}"
    return ""


def check_server(server_class, stream) -> None:
    """Serve the scripted `day` with ``server_class(stream)`` (a `Server` subclass) and check
    it; raise AssertionError saying what went wrong, or print what each change cost."""
    if not (isinstance(server_class, type) and issubclass(server_class, Server)):
        raise TypeError(f"pass your class (a subclass of ex05.Server), got {server_class!r}")
    values = _adapter_values()
    srv = server_class(stream)
    if not isinstance(getattr(srv, "ex", None), GraphExec):
        raise AssertionError("the server has no executable in self.ex: if you wrote __init__, "
                             "call super().__init__(stream) first")
    rng = np.random.default_rng(_SEED + 1)
    requests = [rng.standard_normal(N).astype(np.float32) for _ in range(17)]
    answers: list[tuple[int, np.ndarray, np.ndarray]] = []
    adapter, version = "A", 1
    took: dict[str, list[float]] = {"adapter": [], "update": [], "instantiate": []}
    opened: list = []
    _counted(srv.ex)
    for event, arg in day():
        before_ex, before_graph = srv.ex, srv.ex.graph
        if event == "request":
            req = requests[arg]
            sent = req.copy()
            before = srv.ex._launches
            got = srv.answer(req)
            if got is None:
                raise AssertionError("answer returned None: return the answer, a numpy array of "
                                     f"{N} floats")
            if srv.ex._launches != before + 1:
                raise AssertionError(
                    f"answer launched self.ex {srv.ex._launches - before} times for one request: "
                    "serve each request with one replay of the executable (no eager kernels, "
                    "no capture per request)")
            got = np.asarray(got)
            want = reference(sent, values[adapter], version)
            if got.shape != want.shape or not np.allclose(got, want, rtol=1e-5, atol=1e-4):
                seen = _who(values, got, sent, version) if got.shape == want.shape else ""
                if not seen and len(answers) and got.shape == want.shape and np.allclose(
                        got, answers[-1][2], rtol=1e-5, atol=1e-4):
                    seen = "the previous request's data"
                how = (f"it matches {seen}" if seen else
                       "it matches no adapter and version for this request's data. Did the graph "
                       "read this request, was the replay finished when you read the answer, and "
                       "did you change the node you meant to?")
                raise AssertionError(
                    f"request {arg}, served with adapter {adapter} and version {version}, got a "
                    f"wrong answer: {how}")
            answers.append((arg, got, want))
        elif event == "adapter":
            t0 = host_us()
            srv.use_adapter(srv.adapters[arg])
            took["adapter"].append(host_us() - t0)
            adapter = arg
            if srv.ex is not before_ex:
                raise AssertionError(
                    f"use_adapter({arg}) replaced the executable: one node's argument changed, "
                    "so change that node in the executable you have")
            if srv.ex.graph is not before_graph:
                raise AssertionError(
                    f"use_adapter({arg}) updated every node of the executable from a new capture: "
                    "only node 0 changed; update that one node (a capture costs about an eager run)")
        else:
            graph = version_graph(srv, arg)
            opened.append(graph)
            t0 = host_us()
            srv.new_version(graph)
            dt = host_us() - t0
            version = arg
            same_topology = arg not in EXTRA_NODE
            if same_topology:
                took["update"].append(dt)
                if srv.ex is not before_ex:
                    raise AssertionError(
                        f"new_version({arg}) made a new executable, but version {arg} has the "
                        "same topology as the one running: update the executable in place "
                        "(instantiating costs more, and grows with the graph)")
                if srv.ex.graph is not graph:
                    raise AssertionError(
                        f"after new_version({arg}), self.ex still runs the old version's "
                        "parameters: the new graph never reached the executable")
            else:
                took["instantiate"].append(dt)
                if srv.ex is before_ex:
                    raise AssertionError(
                        f"after new_version({arg}), self.ex is the executable of version "
                        f"{arg - 1}: version {arg} has one node more, so updating it fails "
                        "(what did the update return?); the server must then run the new graph "
                        "another way")
                if not isinstance(srv.ex, GraphExec):
                    raise AssertionError(f"after new_version({arg}), self.ex is {srv.ex!r}, "
                                         "not an executable graph")
                if before_ex.handle is not None:
                    raise AssertionError(
                        f"after new_version({arg}), the old executable is still open: nothing "
                        "launches it any more, and each executable holds device memory. Close "
                        "what you replace")
            _counted(srv.ex)
        for name, v in values.items():
            if not np.array_equal(srv.adapters[name].copy_to_host(), v):
                raise AssertionError(
                    f"after {event} {arg}, adapter {name}'s buffer holds other values: it belongs "
                    "to its customer and other servers read it. Never write into an adapter; "
                    "point the graph at the one you need")
    for i, got, want in answers:
        if not np.allclose(got, want, rtol=1e-5, atol=1e-4):
            raise AssertionError(
                f"the answer returned for request {i} was right when returned, but has changed "
                "since: answer returned a buffer that later requests overwrite. Return a copy")
    srv.ex.close()
    for g in opened + [srv.graph]:
        g.close()
    base = []
    for v in (2, 3):                     # what the same change costs without updates
        t0 = host_us()
        g = version_graph(srv, v)
        e = g.instantiate(upload_stream=stream)
        base.append(host_us() - t0)
        e.close()
        g.close()
    print(f"correct: {len(answers)} requests, {len(took['adapter'])} adapter switches and "
          f"{len(took['update']) + len(took['instantiate'])} new versions, all answers equal to "
          "numpy; every change made in place where it could be")
    print(f"what each change cost your server (host, µs): adapter switch "
          f"{np.median(took['adapter']):.1f}, new version by update {np.median(took['update']):.1f}, "
          f"new version with a node more {np.median(took['instantiate']):.1f}; capturing and "
          f"instantiating anew: {np.median(base):.1f}")

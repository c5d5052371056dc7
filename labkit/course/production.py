"""Notebook 11's helpers: what goes wrong with CUDA graphs in production, each as a small demo.

* Many captured sizes: `capture_sizes` (vLLM's default list of batch sizes) and `capture_all`,
  which captures one graph per size three ways, each size with its own workspace, or from one
  shared pool filled smallest or largest size first, and measures the device memory and the
  start-up time each costs (`Pool` is the shared pool).
* Random numbers in a graph: a counter-based generator (`uniform_reference`, a hash of
  ``seed`` and the number's index), drawn with the seed and offset as kernel arguments
  (`uniform_at`: frozen at capture) or read from device memory (`uniform_from_state`) that a
  kernel advances (`advance_state`), as PyTorch's graph-safe generator keeps its offset.
* Stale addresses: `AddressCheck` records the addresses a capture baked in and refuses a replay
  when the buffers the caller now uses are elsewhere, as ``check_input_liveness`` does.
* Debugging on the simulator: `dot_text`, the DOT description of a graph by
  ``cudaGraphDebugDotPrint``.
"""
from __future__ import annotations

import os
import tempfile

import numpy as np
from numba import cuda

from .._capture import capture
from .._errors import check
from .._kernel import device_array, kernel, to_device
from ..backend import host_us, rt

__all__ = ["capture_sizes", "add_rows", "Pool", "STRATEGIES", "capture_all",
           "uniform_reference", "uniform_at", "uniform_from_state", "advance_state",
           "AddressCheck", "dot_text"]

TPB = 256


def _blocks(n: int) -> int:
    return (n + TPB - 1) // TPB


# ------------------------------------------------------------------ many captured sizes

def capture_sizes(max_num_seqs: int = 256, max_size: int | None = None) -> list[int]:
    """vLLM's default CUDA-graph capture sizes: 1, 2, 4, then every 8 below 256, then every 16
    up to ``max_size``, which defaults to ``min(2 * max_num_seqs, 512)`` (vllm/config/
    compilation.py, ``max_cudagraph_capture_size``)."""
    top = min(2 * int(max_num_seqs), 512) if max_size is None else int(max_size)
    sizes = [1, 2, 4] + list(range(8, 256, 8)) + list(range(256, top + 1, 16))
    return [s for s in sizes if s <= top]


def _add_rows_ref(grid, block, x, n):
    x.reshape(-1)[:int(n)] += x.dtype.type(1)


@kernel(reference=_add_rows_ref)
def add_rows(x, n):
    """x[i] += 1 for the first ``n`` elements: one layer of a model step on a batch's rows."""
    i = cuda.grid(1)
    if i < n:
        x[i] += 1.0


class Pool:
    """A memory pool as a framework's graphs share one: segments of device memory, each handed
    to one capture at a time and taken back when that capture ends (replays run one at a time,
    so graphs may share memory). A request no free segment can hold gets a new segment."""

    def __init__(self):
        self.segments: list = []
        self._free: list = []

    def take(self, nbytes: int):
        fits = [s for s in self._free if s.nbytes >= nbytes]
        if fits:
            seg = min(fits, key=lambda s: s.nbytes)
            self._free.remove(seg)
            return seg
        seg = device_array(nbytes // 4, np.float32)
        self.segments.append(seg)
        return seg

    def give_back(self, seg) -> None:
        self._free.append(seg)

    @property
    def nbytes(self) -> int:
        return sum(s.nbytes for s in self.segments)


STRATEGIES = ("a buffer per graph", "one pool, smallest first", "one pool, largest first")


def _free_bytes() -> int:
    return int(check(rt.cudaMemGetInfo(), "cudaMemGetInfo")[0])


def capture_all(sizes, strategy: str, stream, width: int = 1024, layers: int = 8):
    """Capture one graph per batch size in ``sizes`` (each ``layers`` kernels over
    ``size * width`` floats), as ``strategy`` (one of `STRATEGIES`) provides their memory.

    Returns ``(graphs, memory_bytes, startup_us)``: ``graphs`` maps a size to its executable and
    its buffer; the memory is what the device's free memory fell by (``cudaMemGetInfo``), the
    start-up time what capturing and instantiating every graph took on the clock.
    """
    if strategy not in STRATEGIES:
        raise ValueError(f"strategy must be one of {STRATEGIES}, got {strategy!r}")
    order = sorted(sizes, reverse=strategy.endswith("largest first"))
    warm = device_array(width, np.float32)
    add_rows[_blocks(width), TPB, stream](warm, width)     # compiled and loaded before capture
    stream.synchronize()
    pool = Pool() if strategy.startswith("one pool") else None
    keep, graphs = [], {}
    free0, t0 = _free_bytes(), host_us()
    for size in order:
        n = size * width
        buf = pool.take(4 * n) if pool else device_array(n, np.float32)
        with capture(stream) as cap:
            for _ in range(layers):
                add_rows[_blocks(n), TPB, stream](buf, n)
        ex = cap.graph.instantiate()
        cap.graph.close()
        graphs[size] = (ex, buf)
        if pool:
            pool.give_back(buf)
        else:
            keep.append(buf)
    stream.synchronize()
    startup = host_us() - t0
    return graphs, free0 - _free_bytes(), startup


# ------------------------------------------------------------------ random numbers in a graph

_M32 = np.uint64(0xFFFFFFFF)
_K1, _K2, _GOLD = np.uint64(0x7FEB352D), np.uint64(0x846CA68B), np.uint64(0x9E3779B9)


def _hash_np(v):
    v = v & _M32
    v = v ^ (v >> np.uint64(16))
    v = (v * _K1) & _M32
    v = v ^ (v >> np.uint64(15))
    v = (v * _K2) & _M32
    return v ^ (v >> np.uint64(16))


def uniform_reference(seed: int, offset: int, n: int) -> np.ndarray:
    """Numbers ``offset`` … ``offset + n - 1`` of the stream of ``seed``: uniform in [0, 1),
    float32, each a hash of its seed and index (a counter-based generator, as Philox is)."""
    idx = np.arange(int(offset), int(offset) + int(n), dtype=np.uint64)
    h = _hash_np(_hash_np(np.uint64(seed) * _GOLD) ^ idx)
    return (h.astype(np.float64) / 4294967296.0).astype(np.float32)


@cuda.jit(device=True)
def _hash_dev(v):
    v = v & np.uint64(0xFFFFFFFF)
    v = v ^ (v >> np.uint64(16))
    v = (v * np.uint64(0x7FEB352D)) & np.uint64(0xFFFFFFFF)
    v = v ^ (v >> np.uint64(15))
    v = (v * np.uint64(0x846CA68B)) & np.uint64(0xFFFFFFFF)
    return v ^ (v >> np.uint64(16))


def _grid_n(grid, block, out):
    return min(out.size, grid[0] * grid[1] * grid[2] * block[0] * block[1] * block[2])


def _uniform_at_ref(grid, block, out, seed, offset):
    n = _grid_n(grid, block, out)
    out.reshape(-1)[:n] = uniform_reference(int(seed), int(offset), n)


@kernel(reference=_uniform_at_ref)
def uniform_at(out, seed, offset):
    """out[i] = number ``offset + i`` of ``seed``'s stream; seed and offset are arguments, so a
    capture freezes them."""
    i = cuda.grid(1)
    if i < out.size:
        k = _hash_dev(np.uint64(seed) * np.uint64(0x9E3779B9))
        h = _hash_dev(k ^ (np.uint64(offset) + np.uint64(i)))
        out[i] = np.float32(h / 4294967296.0)


def _uniform_from_state_ref(grid, block, out, state):
    n = _grid_n(grid, block, out)
    out.reshape(-1)[:n] = uniform_reference(int(state[0]), int(state[1]), n)


@kernel(reference=_uniform_from_state_ref)
def uniform_from_state(out, state):
    """out[i] = number ``state[1] + i`` of seed ``state[0]``'s stream: seed and offset are read
    from device memory at each run, so a replay draws from wherever the offset is now."""
    i = cuda.grid(1)
    if i < out.size:
        k = _hash_dev(state[0] * np.uint64(0x9E3779B9))
        h = _hash_dev(k ^ (state[1] + np.uint64(i)))
        out[i] = np.float32(h / 4294967296.0)


def _advance_state_ref(grid, block, state, n):
    state[1] += np.uint64(n)


@kernel(reference=_advance_state_ref)
def advance_state(state, n):
    """state[1] += n (one thread): the generator's offset moves on, on the device."""
    if cuda.grid(1) == 0:
        state[1] += np.uint64(n)


# ------------------------------------------------------------------ stale addresses

def _address(a) -> int:
    return int(a.device_ctypes_pointer.value)


class AddressCheck:
    """The addresses a capture baked in, checked before each replay.

    ``AddressCheck(x=x, w=w)`` records where the named device arrays are at capture time;
    ``check(x=x_now, ...)`` raises ``RuntimeError`` naming every input that is now elsewhere:
    the graph would read the old memory, not the new data. The course's version of PyTorch's
    ``check_input_liveness`` (which refuses a replay whose captured inputs were freed) and of
    the address check vLLM's piecewise graphs can run in debug mode.
    """

    def __init__(self, **arrays):
        if not arrays:
            raise ValueError("name the device arrays the capture uses, e.g. AddressCheck(x=x)")
        self.captured = {k: _address(a) for k, a in arrays.items()}
        self.checks = 0

    def check(self, **arrays) -> None:
        unknown = set(arrays) - set(self.captured)
        if unknown:
            raise ValueError(f"not captured: {sorted(unknown)}; captured: {sorted(self.captured)}")
        self.checks += 1
        moved = [f"{k} (captured at {self.captured[k]:#x}, now at {_address(a):#x})"
                 for k, a in arrays.items() if _address(a) != self.captured[k]]
        if moved:
            raise RuntimeError("the graph would read stale memory: input " + ", ".join(moved)
                               + " moved since capture. Copy new data into the captured "
                                 "buffer (static inputs), or capture again")


# ------------------------------------------------------------------ debugging

def dot_text(graph) -> str:
    """``cudaGraphDebugDotPrint``'s DOT description of a labkit graph, as text."""
    fd, path = tempfile.mkstemp(suffix=".dot")
    os.close(fd)
    try:
        check(rt.cudaGraphDebugDotPrint(graph.handle, path.encode(), 0),
              "cudaGraphDebugDotPrint")
        with open(path, encoding="utf-8") as f:
            return f.read()
    finally:
        os.remove(path)


# ------------------------------------------------------------------ two ranks in one process

def ranks_capture(mode: str, warm_up: bool, n: int = 1024) -> dict:
    """Two "ranks", each a thread with its own stream, capture their step at the same time,
    while a third thread (a data loader) allocates memory. Returns how each ended.

    Each rank's "communicator" needs a buffer, allocated on first use as a collective library
    does: before the capture when ``warm_up``, else inside the rank's own capture. Every capture
    is in ``mode`` ("global", "thread_local" or "relaxed"). The result maps "rank 0", "rank 1" and
    "loader" to "ok" or the error a call or the capture ended with.
    """
    import threading

    from .._errors import CudaError
    from .._streams import Stream

    streams = [Stream(), Stream()]
    xs = [device_array(n, np.float32) for _ in range(2)]
    for s, x in zip(streams, xs):                      # kernels compiled and loaded
        add_rows[_blocks(n), TPB, s](x, n)
        s.synchronize()
    ready, open_, done = threading.Barrier(2), threading.Barrier(3), threading.Barrier(3)
    out, bufs = {}, []

    def malloc(who):
        err, p = rt.cudaMalloc(4096)
        if int(err):
            return err.name
        bufs.append(p)
        return "ok"

    def rank(r):
        comm = malloc(f"rank {r}") if warm_up else None      # set-up before any capture
        ready.wait()                                          # both ranks set up (or not)
        try:
            with capture(streams[r], mode=mode) as cap:
                add_rows[_blocks(n), TPB, streams[r]](xs[r], n)
                if comm is None:
                    comm = malloc(f"rank {r}")                # set-up on first use: in capture
                open_.wait()                                  # both captures are open now
                done.wait()                                   # the loader has allocated
            cap.graph.close()
            out[f"rank {r}"] = "ok" if comm == "ok" else f"set-up refused: {comm}"
        except CudaError as exc:
            out[f"rank {r}"] = f"capture lost: {exc.name}"
            for b in (open_, done):
                b.abort() if b.n_waiting else None
        finally:
            rt.cudaGetLastError()

    def loader():
        try:
            open_.wait()
            out["loader"] = malloc("loader")
            done.wait()
        except threading.BrokenBarrierError:
            out.setdefault("loader", "ok")

    threads = [threading.Thread(target=rank, args=(r,)) for r in (0, 1)]
    threads.append(threading.Thread(target=loader))
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    for p in bufs:
        rt.cudaFree(p)
    rt.cudaGetLastError()
    return out

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
* Speculative decoding: `Speculative` runs the course's decoder with a draft (`guesses`, a
  table of the target's own greedy tokens, some made wrong) three ways (`SPEC_VARIANTS`): a
  graph per draft length, one graph padded to the longest draft, or one graph whose WHILE node
  loops over steps and whose SWITCH node runs the branch the draft's length chose, the accepted
  count never leaving the device (kernels `propose`, `feed`, `accept`).
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
from ..backends import host_us, rt
from ..conditional import conditional_graph, set_condition

__all__ = ["capture_sizes", "add_rows", "Pool", "STRATEGIES", "capture_all",
           "uniform_reference", "uniform_at", "uniform_from_state", "advance_state",
           "AddressCheck", "dot_text", "SPEC_VARIANTS", "guesses", "propose", "feed", "accept",
           "Speculative"]

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


# ------------------------------------------------------------------ speculative decoding

# A round of speculative decoding on the course's decoder (`labkit.course.decoder`), whose
# state is all on the device: ``pos`` (the next position), ``tok`` (the last accepted token)
# and ``history`` (each position's token). A round is
#
#   propose   the draft writes k guesses for positions pos .. pos+k-1 (k read from ``spec[0]``)
#   verify    k + 1 decode steps: step 0 from the last accepted token, step j from guess j-1;
#             each writes the target's own pick for its position into ``history``
#   accept    the guesses agreeing with the target's picks, from the first on, are accepted;
#             with the target's next pick that is n + 1 new tokens; pos moves on by n + 1 and
#             the next round's draft length is min(K, n + 1) (it grows while guesses land)
#
# The toy decoder takes one position per step, so the verify pass is k + 1 steps in a row; a
# real model takes the k + 1 positions in one batched pass, whose shape depends on k the same.
# The draft is a lookup table (`guesses`): the target's own greedy token, made wrong at a
# seeded share of positions. Nothing here assumes the guesses are right: the accept rule
# compares them with what the target computed.

SPEC_VARIANTS = ("a graph per draft length", "padded to the longest draft",
                 "count on the device, one loop")


def guesses(m, prompt_token: int, wrong: float = 0.3, seed: int = 0) -> np.ndarray:
    """The draft model, as a table: for each position, the target's greedy token (numpy's
    `reference_generate`), replaced by another token at a share ``wrong`` of the positions,
    picked by numpy's generator seeded with ``seed``."""
    from .decoder import reference_generate
    ref = reference_generate(m, prompt_token, m.cfg.max_seq)
    miss = np.random.default_rng(seed).random(ref.size) < wrong
    return np.where(miss, (ref + 1) % m.cfg.vocab, ref).astype(np.int32)


def _propose_ref(grid, block, table, pos, spec, start, draft, h):
    k, p = int(spec[0]), int(pos[0])
    start[0] = p
    for j in range(draft.size):
        draft[j] = table[p + j] if j < k and p + j < table.size else -1
    if int(h):
        set_condition(h, k - 1)


@kernel(reference=_propose_ref)
def propose(table, pos, spec, start, draft, h):
    """The draft: ``draft[j] = table[pos + j]`` for the ``k = spec[0]`` guesses, -1 (padding,
    never accepted) after them; remembers where the round starts (``start[0] = pos[0]``); when
    ``h`` is a condition's handle (not 0) sets it to ``k - 1``, the SWITCH body to run."""
    if cuda.grid(1) == 0:
        k = spec[0]
        p = pos[0]
        start[0] = p
        for j in range(draft.size):
            if j < k and p + j < table.size:
                draft[j] = table[p + j]
            else:
                draft[j] = -1
        if h != 0:
            set_condition(h, k - 1)


def _feed_ref(grid, block, draft, j, start, pos, tok):
    pos[0] = start[0] + j
    if int(draft[j - 1]) >= 0:
        tok[0] = draft[j - 1]


@kernel(reference=_feed_ref)
def feed(draft, j, start, pos, tok):
    """Before verify step ``j`` (1 … K): position ``start + j``, input token guess ``j - 1``
    (padding keeps the target's own pick: its result is thrown away)."""
    if cuda.grid(1) == 0:
        pos[0] = start[0] + j
        if draft[j - 1] >= 0:
            tok[0] = draft[j - 1]


def _accept_ref(grid, block, draft, start, history, pos, tok, spec, stats, ran, h):
    p, K = int(start[0]), draft.size
    n = 0
    while n < K and int(draft[n]) >= 0 and int(draft[n]) == int(history[p + n]):
        n += 1
    pos[0] = p + n + 1
    tok[0] = history[p + n]
    stats[0] += 1
    stats[1] += int(ran) if int(ran) > 0 else int(spec[0]) + 1
    spec[0] = min(K, n + 1)
    if int(h) and int(pos[0]) >= int(spec[1]):
        set_condition(h, 0)


@kernel(reference=_accept_ref)
def accept(draft, start, history, pos, tok, spec, stats, ran, h):
    """End of a round: ``n`` guesses accepted (they agree with the target's picks, from the
    first); position ``start + n + 1`` and the target's pick there as the next input; counts
    the round and its verify steps (``ran``, or ``k + 1`` when ``ran`` is 0) in ``stats``; the
    next draft length ``min(K, n + 1)`` goes to ``spec[0]``; when ``h`` is a condition's
    handle, sets it to 0 once the position reaches ``spec[1]`` (the token limit)."""
    if cuda.grid(1) == 0:
        p = start[0]
        K = draft.size
        n = 0
        while n < K and draft[n] >= 0 and draft[n] == history[p + n]:
            n += 1
        pos[0] = p + n + 1
        tok[0] = history[p + n]
        stats[0] += 1
        if ran > 0:
            stats[1] += ran
        else:
            stats[1] += spec[0] + 1
        spec[0] = min(K, n + 1)
        if h != 0 and pos[0] >= spec[1]:
            set_condition(h, 0)


class Speculative:
    """Greedy speculative decoding with the course's decoder, three ways (`SPEC_VARIANTS`):

    * ``"a graph per draft length"``: one graph per k = 1 … K (k + 1 verify steps each); after
      each round the host waits, reads the next k and launches that graph;
    * ``"padded to the longest draft"``: one graph of K + 1 verify steps; a shorter draft is
      padded, and the padding's steps run for nothing; the host waits and reads after each round;
    * ``"count on the device, one loop"``: one graph, a WHILE node over rounds, whose body's
      SWITCH node runs the k-step branch the draft chose: the accepted count never leaves the
      device, and a generation is one launch and one wait.

    ``run(variant, n_tokens)`` returns ``(tokens, rounds, verify_steps)``.
    """

    def __init__(self, m, stream, table, k_max: int = 4, prompt_token: int = 1):
        from .decoder.generate import _warm
        self.m, self.stream, self.k_max, self.prompt = m, stream, int(k_max), int(prompt_token)
        self.table = to_device(np.asarray(table, np.int32))
        self.draft = device_array(self.k_max, np.int32)
        self.start = to_device(np.zeros(1, np.int32))
        self.spec = to_device(np.array([1, m.cfg.max_seq], np.int32))   # [k, token limit]
        self.stats = to_device(np.zeros(2, np.int32))                     # [rounds, steps]
        s = m.state
        _warm(m, stream)
        args = (self.table, s["pos"], self.spec, self.start, self.draft)
        tail = (self.draft, self.start, s["history"], s["pos"], s["tok"], self.spec, self.stats)
        self._reset(self.m.cfg.max_seq)
        propose[1, 1, stream](*args, np.uint64(0))          # compiled and loaded before capture
        feed[1, 1, stream](self.draft, 1, self.start, s["pos"], s["tok"])
        accept[1, 1, stream](*tail, 0, np.uint64(0))
        stream.synchronize()
        self.per_length = {}
        for k in range(1, self.k_max + 1):                  # (a) k + 1 verify steps each
            with capture(stream) as cap:
                propose[1, 1, stream](*args, np.uint64(0))
                for j in range(k + 1):
                    self._verify(j)
                accept[1, 1, stream](*tail, k + 1, np.uint64(0))
            self.per_length[k] = cap.graph.instantiate()
            cap.graph.close()
        with capture(stream) as cap:                         # (b) K + 1 verify steps
            propose[1, 1, stream](*args, np.uint64(0))
            for j in range(self.k_max + 1):
                self._verify(j)
            accept[1, 1, stream](*tail, self.k_max + 1, np.uint64(0))
        self.padded = cap.graph.instantiate()
        cap.graph.close()
        g = conditional_graph()                              # (c) WHILE over rounds
        more = g.condition(default=1)
        body = g.while_loop(more)
        branch = g.condition(default=0)
        with body.capture(stream) as head:
            propose[1, 1, stream](*args, branch.arg)
            self._verify(0)
        for i, b in enumerate(body.switch(branch, self.k_max, deps=head.nodes)):
            with b.capture(stream):                          # branch i: draft of i + 1 guesses
                for j in range(1, i + 2):
                    self._verify(j)
        with body.capture(stream, deps=[branch.node]):
            accept[1, 1, stream](*tail, 0, more.arg)
        self.loop_graph = g
        self.loop = g.instantiate()

    def _verify(self, j: int):
        """Verify step ``j``: from guess ``j - 1`` (step 0: from the last accepted token)."""
        from .decoder import step_to_token
        s = self.m.state
        if j:
            feed[1, 1, self.stream](self.draft, j, self.start, s["pos"], s["tok"])
        step_to_token(self.m, self.stream)

    def _reset(self, limit: int):
        from .decoder.generate import reset
        reset(self.m, self.prompt, self.stream)
        self.spec.copy_to_device(np.array([1, limit], np.int32))
        self.stats.copy_to_device(np.zeros(2, np.int32))

    def run(self, variant: str, n_tokens: int):
        """Generate ``n_tokens`` tokens after the prompt; returns ``(tokens, rounds,
        verify_steps)``. The last round may make a few tokens more; they are cut off."""
        if variant not in SPEC_VARIANTS:
            raise ValueError(f"variant must be one of {SPEC_VARIANTS}, got {variant!r}")
        if not 1 <= n_tokens <= self.m.cfg.max_seq - self.k_max - 1:
            raise ValueError(f"n_tokens must be 1..{self.m.cfg.max_seq - self.k_max - 1} (the "
                             f"model's {self.m.cfg.max_seq} positions less a round's "
                             f"{self.k_max + 1} steps), got {n_tokens}")
        self._reset(n_tokens)
        st, s = self.stream, self.m.state
        if variant == SPEC_VARIANTS[2]:
            self.loop.launch(st)
        else:
            pos_k = np.zeros(2, np.int32)
            k = 1
            while True:
                ex = self.per_length[k] if variant == SPEC_VARIANTS[0] else self.padded
                ex.launch(st)
                st.synchronize()                            # the host waits for the count
                pos_k[0] = s["pos"].copy_to_host()[0]
                if pos_k[0] >= n_tokens:
                    break
                k = int(self.spec.copy_to_host()[0])
        st.synchronize()
        toks = s["history"].copy_to_host()[:n_tokens].copy()
        rounds, steps = (int(v) for v in self.stats.copy_to_host())
        return toks, rounds, steps

    def close(self):
        for ex in self.per_length.values():
            ex.close()
        self.padded.close()
        self.loop.close()
        self.loop_graph.close()

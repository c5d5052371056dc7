"""The simulated GPU runs asynchronously: work takes effect when the virtual clock reaches it.

A launch, a copy or a memset returns as soon as the host has paid for the call; the work is an
`Op` placed on the GPU's timeline (``start``, ``end``, from the cost model and CUDA's ordering
rules, `labkit.sim._work`) and queued here. Its effects follow the clock:

* an op **reads at its start and writes at its end**: a kernel runs on memory as it is at its
  start, and only the bytes it changed are stored at its end (a copy reads its source at the
  start and writes its destination at the end);
* the queue is worked off, in time order, whenever the host's clock moves (every runtime call,
  `labkit.sim.clock.api`): so whatever observes memory (a copy, a synchronize, the host reading
  pinned or mapped memory between calls, another stream's kernel) sees only what has taken
  effect by then;
* ops that tie in time, with nothing ordering them, go in an order drawn from
  ``LABKIT_SIM_SEED`` (the same seed, the same order);
* a fault (a kernel touching freed memory) is found when its op starts, not at the launch call,
  and is *sticky*: from then on every call returns it (`fault`), as on a GPU, whose context is
  lost until the process restarts; `clear_fault` is the simulator's way back, which a GPU has not.

Unordered ops that overlap in time and touch one buffer, one of them writing it, are a data race:
`labkit.sim._races` names them.
"""
from __future__ import annotations

import heapq
import itertools
import os
import random

import numpy as np

from . import _races

_END, _START = 0, 1          # at one instant, writes land before new work reads
_queue: list = []            # (time, phase, tie, seq, op)
_seq = itertools.count()
_state = {"now": 0.0, "busy": False, "fault": None, "fault_at": None}
_rng: list = []


def _tie() -> float:
    """A seeded tie-breaker: unordered ops at one instant go in an order the seed fixes."""
    if not _rng:
        raw = os.environ.get("LABKIT_SIM_SEED", "").strip().lower()
        seed = None if raw == "random" else (int(raw) if raw.lstrip("-").isdigit() else 2024)
        _rng.append(random.Random(seed).random)
    return _rng[0]()


class Op:
    """One piece of GPU work on the timeline.

    ``begin()`` is called at ``start``: it reads memory and returns the writes to store at
    ``end`` as a list of ``(elements, index, new, name, address)`` (address: the simulated one
    of ``elements[0]``), and sets ``accesses``, what it reads:
    ``(first byte, end byte, name)``; an int return is a fault's error code.
    ``row``: the stream's handle (or ``(stream, graph)`` for a graph's node), for race reports.
    """

    __slots__ = ("name", "row", "start", "end", "begin", "writes", "accesses", "ended", "key",
                 "tick", "vc", "now", "static_writes", "pdl_primary")

    def __init__(self, name, row, start, end, begin, order=None):
        self.name, self.row, self.start, self.end, self.begin = name, row, start, end, begin
        self.writes, self.accesses, self.ended = None, (), False
        self.now = None             # the same work done in place, when nothing can see between
        self.static_writes = None   # what it may write, for the race report (None: what it did)
        self.key, self.tick, self.vc = None, 0, None    # what orders it (`labkit.sim._races`)
        self.pdl_primary = None     # the kernel a programmatic launch may overlap


def schedule(op: Op) -> Op:
    """Queue ``op``; its effects happen when the clock reaches them."""
    heapq.heappush(_queue, (op.start, _START, _tie(), next(_seq), op))
    return op


def at(t: float, fn, name: str = "") -> None:
    """Run ``fn()`` when the clock reaches ``t`` (after any writes that land at ``t``)."""
    schedule(Op(name, None, t, t, lambda: (fn(), [])[1]))


def advance(t: float) -> None:
    """Let everything queued up to time ``t`` take effect, in time order."""
    if _state["busy"]:
        return                      # an op's own host function calling back in
    _state["busy"] = True
    try:
        while _queue and _queue[0][0] <= t:
            when, phase, _, _, op = heapq.heappop(_queue)
            _state["now"] = max(_state["now"], when)
            if phase == _START:
                _begin(op, t)
            else:
                _finish(op)
    finally:
        _state["busy"] = False


def _begin(op: Op, upto: float) -> None:
    if _state["fault"] is not None and op.row is not None:
        return                      # the context is lost: queued work never runs
    if op.now is not None and op.end <= upto and (not _queue or _queue[0][0] >= op.end):
        # nothing else starts or lands before it ends, and the host is past its end: doing it
        # in place now is the same as reading at its start and writing at its end
        err = op.now()
        if err:
            fault(err, op)
            return
        op.writes, op.ended = (), True
        _races.started(op)
        return
    got = op.begin()
    if isinstance(got, int):
        fault(got, op)
        return
    op.writes = got or []
    _races.started(op)
    heapq.heappush(_queue, (op.end, _END, _tie(), next(_seq), op))


def _finish(op: Op) -> None:
    for w in op.writes:
        w[0][w[1]] = w[2]
    op.writes, op.ended = None, True
    _races.ended(op)


def next_time():
    """When the next queued effect happens, or None."""
    return _queue[0][0] if _queue else None


def pending() -> bool:
    return bool(_queue)


def last_end() -> float:
    """When the last queued op ends (now, when none is queued)."""
    return max([e[4].end for e in _queue] + [_state["now"]])


# ---------------------------------------------------------------- faults

def fault(code: int, op=None) -> None:
    """A sticky fault: the first one stays; from now on every call returns it."""
    if _state["fault"] is None:
        _state["fault"], _state["fault_at"] = int(code), getattr(op, "name", None)


def sticky():
    """The sticky error code, or None."""
    return _state["fault"]


def clear_fault() -> None:
    """The simulator only: forget a sticky fault and drop queued work. A GPU has no such call:
    after a sticky error its process must restart (in Jupyter: restart the kernel)."""
    _state["fault"] = _state["fault_at"] = None
    _queue.clear()


# ---------------------------------------------------------------- what an op changed

def diff_writes(views, before, labels, addrs) -> list:
    """The writes of ops that ran in place on ``views``: the elements they changed, with their
    new values, and the buffer's name (``labels``). The elements go back to their old values
    here; `advance` stores the new ones at the op's end. Compared element by element (as
    unsigned integers of the element's size, so NaN and -0.0 compare by their bits); a run of
    changed elements is one slice."""
    out = []
    for v, b, label, addr in zip(views, before, labels, addrs):
        word = _WORDS.get(v.dtype.itemsize, np.uint8)
        raw, old = v.reshape(-1).view(word), b.reshape(-1).view(word)
        idx = _changed(raw, old)
        if idx is None:
            continue
        out.append((raw, idx, raw[idx].copy(), old[idx].copy(), label, addr))
    for raw, idx, _new, old, _label, _addr in reversed(out):   # all found first: views may alias
        raw[idx] = old
    return [(raw, idx, new, label, addr) for raw, idx, new, _old, label, addr in out]


def changes(views, work, labels, addrs) -> list:
    """The writes of ops that ran on private copies ``work`` of ``views``: what differs."""
    out = []
    for v, w, label, addr in zip(views, work, labels, addrs):
        word = _WORDS.get(v.dtype.itemsize, np.uint8)
        raw, new = v.reshape(-1).view(word), w.reshape(-1).view(word)
        idx = _changed(raw, new)
        if idx is not None:
            out.append((raw, idx, new[idx], label, addr))
    return out


def _changed(a, b):
    """Where ``a`` and ``b`` differ: a slice for one run, else indices; None where nowhere."""
    neq = a != b
    n = int(np.count_nonzero(neq))
    if n == 0:
        return None
    if n == len(neq):            # the usual kernel: every element written
        return slice(0, n)
    lo = int(neq.argmax())
    if not neq[lo]:
        return None
    hi = len(neq) - int(neq[::-1].argmax())
    return slice(lo, hi) if neq[lo:hi].all() else np.flatnonzero(neq)


_WORDS = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}

"""Data races on the simulated GPU: two operations with nothing ordering them, one writing a
buffer the other reads or writes.

No tool in CUDA's ecosystem reports these: compute-sanitizer's racecheck looks at shared memory
inside one kernel. Here the simulator knows every op's interval on the GPU timeline and what it
touched, so it can name both ops, their streams and the buffer:

* **between streams** (`started`): when an op touches memory that an earlier op touched, one
  of them writing, and nothing orders the earlier one before it: not its stream, not an event
  it waited for, not the legacy stream's implicit synchronization, not a synchronize or a
  finished copy the host saw before submitting it (happens-before, as vector clocks:
  `on_submit`, `host_saw`). So a race is named even when the timing happened to hide it, as it
  often does on a GPU until the day it does not;
* **inside a graph** (`graph_races`): two nodes with no path between them that conflict are
  reported when the graph is instantiated, whatever their timing.

What an op touches: a copy reads its source and writes its destination; a memset writes its
destination; a kernel reads the array arguments its code reads, and writes the bytes it changed
(compared before and after it ran). For graphs, before anything runs, a kernel node writes the
arguments its code stores into (`kernel_access`, read from the kernel's Python source: subscript
stores, augmented assignments and ``cuda.atomic`` calls; an array handed to another function
counts as read and written). A write of the value already there is not seen at run time.

Each race is a `Race`, kept for a program to ask for (`found`, `clear`), and warned about once
per pair of ops and buffer (`RaceWarning`).
"""
from __future__ import annotations

import ast
import inspect
import os
import sys
import textwrap
import warnings
from typing import NamedTuple

from . import _heap


class RaceWarning(UserWarning):
    """Two unordered GPU operations touch one buffer, at least one of them writing it."""


def _format_warning(message, category, filename, lineno, line=None):
    """A RaceWarning as a learner reads it: "RaceWarning (line 9): ...", without the notebook
    kernel's temporary file name and the source line; other warnings as Python formats them."""
    if not issubclass(category, RaceWarning):
        return _python_format(message, category, filename, lineno, line)
    cell = "ipykernel_" in filename or filename.startswith("<")
    where = f"line {lineno}" if cell else f"{os.path.basename(filename)}, line {lineno}"
    return f"RaceWarning ({where}): {message}\n"


# the formatter Python had before labkit's (kept across a reload of this module)
_python_format = getattr(warnings.formatwarning, "python_format", warnings.formatwarning)
_format_warning.python_format = _python_format
warnings.formatwarning = _format_warning


class Race(NamedTuple):
    """A data race: ``first`` and ``second`` (op names) on ``first_row`` and ``second_row``
    (e.g. ``stream 0x1003``, ``graph node 2``), on ``buffer`` (an argument's name and address);
    ``kind``: 'write/read', 'read/write' or 'write/write' (first's access / second's);
    ``where``: 'streams' (unordered ops at run time), 'graph' (unordered nodes) or
    'programmatic' (nodes joined by a programmatic edge only, or a kernel launched with
    programmatic stream serialization and the kernel before it: either orders no memory)."""
    first: str
    second: str
    first_row: str
    second_row: str
    buffer: str
    kind: str
    where: str
    time_us: float | None
    address: int | None = None     # where the buffer's bytes start (the first overlapping one)

    def __str__(self):
        when = (f" at {self.time_us:.1f} µs (simulated)" if self.time_us is not None else "")
        fix = {"streams": "record an event after one and make the other's stream wait for it "
                          "(cudaEventRecord + cudaStreamWaitEvent), or put both on one stream",
               "programmatic": (
                   ("their programmatic edge lets the second start before the first's writes "
                    "land" if self.first_row.startswith("graph") else
                    "the second was launched with programmatic stream serialization (PDL), so "
                    "it may start before the first's writes land") +
                   " (a numba kernel cannot wait for them with cudaGridDependencySynchronize): "
                   + ("make it a plain edge" if self.first_row.startswith("graph") else
                      "launch it without the attribute"))}.get(
            self.where, "add an edge between them (join one branch into the other before it), "
                        "or give each branch its own buffer")
        a, b = self.kind.split("/")
        what = (self.buffer if self.buffer.startswith(("copy ", "memset "))
                else f"the array passed as {self.buffer}")
        return (f"data race on {what}: {self.first} ({self.first_row}) {a}s it and "
                f"{self.second} ({self.second_row}) {b}s it{when}, with nothing ordering them; "
                f"{fix}")


_found: list[Race] = []
_seen: set = set()
_active: list = []         # ops that started and have not ended


def found() -> list[Race]:
    """Every race reported since the process started (or since `clear`)."""
    return list(_found)


def clear() -> None:
    _found.clear()
    _seen.clear()


def _report(r: Race) -> None:
    """Keep every race (the latest 10,000); warn once per pair of ops on one buffer."""
    _found.append(r)
    if len(_found) > 10_000:
        del _found[:len(_found) - 10_000]
    key = (r.first, r.second, r.buffer, r.where)
    if key in _seen:
        return
    _seen.add(key)
    warnings.warn(str(r), RaceWarning, stacklevel=_callers_level())


_LABKIT = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def _callers_level() -> int:
    """The stack level of the first frame outside labkit: the warning points at the learner's
    line that made the call, not at the simulator."""
    level, f = 1, sys._getframe(1)
    while f is not None and f.f_code.co_filename.startswith(_LABKIT):
        f, level = f.f_back, level + 1
    return level


def _row(op) -> str:
    row = op.row
    if isinstance(row, tuple) and len(row) == 2:
        return f"stream {row[0]:#x}, graph" if row[0] else "legacy stream, graph"
    if isinstance(row, tuple):
        return f"stream {row[0]:#x}, graph branch" if row[0] else "legacy stream, graph branch"
    return f"stream {row:#x}" if row else "legacy stream"


def _ranges(op):
    """(reads, writes): lists of (lo, hi, name)."""
    if isinstance(op, _Access):
        return op.accesses, op.writes
    if op.static_writes is not None:
        return op.accesses, op.static_writes
    return list(op.accesses), [write_range(w) for w in op.writes or ()]


def write_range(w):
    """(lo, hi, name) of a write ``(elements, index, new, name, address)``, in simulated
    addresses; index: a slice or indices."""
    raw, idx, _new, name, a = w
    size = raw.itemsize
    if isinstance(idx, slice):
        return (a + size * (idx.start or 0),
                a + size * (len(raw) if idx.stop is None else idx.stop), name)
    return a + size * int(idx[0]), a + size * (int(idx[-1]) + 1), name


def _conflict(a_reads, a_writes, b_reads, b_writes):
    """``(buffer name, kind)`` of the first conflict between two ops' accesses, or None. The
    name is the argument's name in each op (``"out / x"`` where they differ)."""
    for mine, theirs, kind in ((a_writes, b_writes, "write/write"), (a_writes, b_reads, "write/read"),
                               (a_reads, b_writes, "read/write")):
        for lo, hi, name in mine:
            for lo2, hi2, name2 in theirs:
                if lo < hi2 and lo2 < hi:
                    return (name if name == name2 else f"{name} / {name2}"), kind
    return None


# ---------------------------------------------------------------- what orders what

# Happens-before, as vector clocks: each stream (and the host) counts its ops; an op carries
# what it is ordered after (`vc`): its stream's earlier work, what the host had seen finish when
# it submitted the op, events waited for, and the legacy stream's implicit synchronization.
_host: dict = {}


def join(a: dict, b: dict) -> dict:
    c = dict(a)
    for k, v in b.items():
        if c.get(k, 0) < v:
            c[k] = v
    return c


def on_submit(s, others=()) -> tuple:
    """A new op on stream ``s`` (after ``others``' work too: the legacy stream's rule):
    ``(key, tick, vc)``, and ``s``'s clock moves on."""
    vc = join(s.vc, _host)
    for t in others:
        vc = join(vc, t.vc)
    key = id(s)
    vc[key] = vc.get(key, 0) + 1
    s.vc = vc
    return key, vc[key], vc


_beside = iter(range(1, 1 << 62))


def beside(s, before: dict) -> tuple:
    """A new op on stream ``s`` that the stream's last op does not order: a kernel launched with
    programmatic stream serialization (PDL) beside its primary. It is ordered after what the
    primary was ordered after (``before``) and what the host has seen, under a key of its own;
    ``s``'s later work is ordered after both. ``(key, tick, vc)``."""
    key = ("programmatic", next(_beside))
    vc = join(before, _host)
    vc[key] = 1
    s.vc = join(s.vc, vc)
    return key, 1, vc


def host_saw(vc: dict) -> None:
    """The host waited for (or saw finished) the work ``vc`` covers."""
    _host.update(join(_host, vc))


def _ordered(a, b) -> bool:
    """Whether op ``a`` happens before op ``b``."""
    return a.vc is None or b.vc is None or b.vc.get(a.key, 0) >= a.tick


_history: dict = {}     # allocation -> [(op, lo, hi, writes?)]


def started(op) -> None:
    """``op`` starts now: check what it reads and writes against earlier accesses to the same
    memory that nothing orders before it."""
    if op.row is None or getattr(op, "vc", None) is None:
        return
    reads, writes = _ranges(op)
    vc = op.vc
    who = getattr(op, "who", None)       # a graph launch: which node touched each range
    for lo, hi, name, w in [(a, b, n, False) for a, b, n in reads] + \
                           [(a, b, n, True) for a, b, n in writes]:
        me = who[(lo, hi, name)] if who else op.name
        past = _history.setdefault(_base(lo), [])
        for a, alo, ahi, aw, aname, them in past:
            # checked in submission order for graph launches, in time order for the rest:
            # either may come first, so ordered means ordered either way
            if (alo < hi and lo < ahi and (aw or w) and a.vc is not vc and a is not op
                    and not _ordered(a, op) and not _ordered(op, a)):
                kind = f"{'write' if aw else 'read'}/{'write' if w else 'read'}"
                label = aname if name.startswith(("copy ", "memset ")) else name
                where = ("programmatic" if a is getattr(op, "pdl_primary", None) else
                         "streams")
                _report(Race(them, me, _row(a), _row(op), label, kind, where,
                             op.start, max(lo, alo)))
        past[:] = [e for e in past if not (e[1] >= lo and e[2] <= hi and _ordered(e[0], op)
                                           and (w or not e[3]))]
        past.append((op, lo, hi, w, name, me))
        if len(past) > 64:        # bounded: the oldest accesses are long ordered in practice
            del past[:len(past) - 64]


class _Access:
    """A graph launch's accesses, as `started` sees an op: each range once (a range written is
    not listed as read too), and ``who``: the node that touched it first."""
    __slots__ = ("name", "row", "key", "tick", "vc", "start", "accesses", "writes", "who")


def launch_access(nodes) -> _Access:
    """The accesses of an executable's nodes (``(name, reads, writes)``), merged once."""
    a, who, writes, reads = _Access(), {}, {}, {}
    for name, rs, ws in nodes:
        for r in ws:
            writes.setdefault(r[:2], r)
            who.setdefault(writes[r[:2]], name)
        for r in rs:
            reads.setdefault(r[:2], r)
            who.setdefault(reads[r[:2]], name)
    a.writes = list(writes.values())
    a.accesses = [r for k, r in reads.items() if k not in writes]
    a.who, a.name = who, "graph"
    return a


def check_launch(access: _Access, row, order, start) -> None:
    """A graph launch against other work (`launch_access`), ordered as the launch
    (``order``: key, tick, vc)."""
    a = _Access()
    a.accesses, a.writes, a.who, a.name = access.accesses, access.writes, access.who, access.name
    a.row, a.start = row, start
    a.key, a.tick, a.vc = order
    started(a)


def _base(addr: int) -> int:
    """The allocation an address lies in (its own address for plain host memory)."""
    if addr in _heap.allocs:
        return addr
    hit = _heap.find(addr)
    return hit[0].addr if hit is not None else addr


def ended(op) -> None:
    pass


def _buffer(name, *ops) -> str:
    return name


# ---------------------------------------------------------------- inside a graph

def graph_races(nodes, programmatic=()) -> list[Race]:
    """Races between a graph's unordered nodes. ``nodes``: ``(name, deps, reads, writes)`` in
    topological order (deps: indices; reads, writes: lists of (lo, hi, buffer name)), the
    dependencies that order memory only; ``programmatic``: (from, to) pairs joined by a
    programmatic edge, which a race between them is said to come from."""
    ancestors: list[set] = []
    for _, deps, _, _ in nodes:
        anc = set(deps)
        for d in deps:
            anc |= ancestors[d]
        ancestors.append(anc)
    out = []
    for j, (name_j, _, reads_j, writes_j) in enumerate(nodes):
        for i in range(j):
            if i in ancestors[j]:
                continue
            name_i, _, reads_i, writes_i = nodes[i]
            hit = _conflict(reads_i, writes_i, reads_j, writes_j)
            if hit is not None:
                where = next((lo for lo, _, n in writes_i + reads_i
                              if n == hit[0].split(" / ")[0]), None)
                r = Race(name_i, name_j, f"graph node {i}", f"graph node {j}", hit[0], hit[1],
                         "programmatic" if (i, j) in programmatic else "graph", None, where)
                _report(r)
                out.append(r)
    return out


# ---------------------------------------------------------------- a kernel's accesses

def kernel_access(py_func):
    """``(reads, writes)``: the parameter names a kernel's Python code reads and writes, or None
    where its source cannot be read."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(py_func)))
    except (OSError, TypeError, SyntaxError):
        return None
    fn = next((n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef,))), None)
    if fn is None:
        return None
    params = {a.arg for a in fn.args.args}
    reads, writes = set(), set()

    def base(node):          # x[i], x[i][j]: x's data (x.shape[0] is not)
        while isinstance(node, ast.Subscript):
            node = node.value
        return node.id if isinstance(node, ast.Name) and node.id in params else None

    for node in ast.walk(fn):
        if isinstance(node, ast.Subscript):
            name = base(node)
            if name is None:
                continue
            (writes if isinstance(node.ctx, ast.Store) else reads).add(name)
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Subscript):
            name = base(node.target)
            if name is not None:
                reads.add(name)
        elif isinstance(node, ast.Call):
            for arg in node.args:
                if isinstance(arg, ast.Name) and arg.id in params:
                    reads.add(arg.id)
                    if not (isinstance(node.func, ast.Name) and node.func.id in ("len", "range")):
                        writes.add(arg.id)
    return reads, writes

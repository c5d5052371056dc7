"""The simulator's memory: device allocations (simulated addresses, never reused, so a stale use
is seen), page-locked host memory, and the bytes behind any address a call is given.

A device address lies in the simulated range and is backed by a numpy buffer. Page-locked
memory (``cudaMallocHost``, ``cudaHostAlloc``) is real host memory, page-aligned, which numpy
can view at its address; registered memory (``cudaHostRegister``) is the caller's own. Any
other address is real host memory too (a numpy array's, a ctypes object's), read and written in
place. Freed page-locked memory is kept, unreachable, so its address is not reused while the
process runs: a later use of it is seen, as a use of freed device memory is.

Pointers are taken as cuda-bindings takes them (`ptr`): an int (or anything with ``__int__``),
None (0), or an object with the buffer protocol (its buffer's address).
"""
from __future__ import annotations

import ctypes
import operator

import numpy as np

BASE = 0x2000_0000_0000


PAGE = 4096


def ptr(p) -> int:
    """A pointer argument as cuda-bindings reads it: an int, None, or a buffer's address."""
    if p is None:
        return 0
    if isinstance(p, np.ndarray):
        return int(p.ctypes.data)
    if hasattr(p, "__index__"):
        return operator.index(p)
    if isinstance(p, (ctypes._SimpleCData, ctypes.Structure, ctypes.Array, ctypes.Union)):
        return ctypes.addressof(p)
    if hasattr(p, "__int__"):
        return int(p)
    try:
        view = memoryview(p)
    except TypeError:
        raise TypeError(f"Provided argument is of type {type(p)} but expected Type None, int "
                        "or object with Buffer Protocol") from None
    return int(np.frombuffer(view.cast("B"), np.uint8).ctypes.data) if view.nbytes else 0


class Alloc:
    """An allocation. ``pinned``: page-locked host memory (``flags``: cudaHostAlloc's), whose
    ``buf`` is the real memory at ``addr``; ``registered``: the caller's memory, registered."""

    def __init__(self, addr, nbytes, pinned=False, buf=None, flags=0, registered=False):
        self.addr, self.nbytes, self.pinned, self.freed = addr, nbytes, pinned, False
        self.flags, self.registered = int(flags), registered
        self.buf = np.zeros(max(nbytes, 1), dtype=np.uint8) if buf is None else buf


allocs: dict[int, Alloc] = {}
_freed_host: list[Alloc] = []   # freed page-locked memory, kept so its address is not reused
_next_addr = [BASE]


def new_alloc(nbytes, pinned=False, flags=0) -> Alloc:
    """Device memory at a new simulated address, or page-locked host memory (``pinned``)."""
    nbytes = int(nbytes)
    if pinned:
        raw = np.zeros(max(nbytes, 1) + PAGE, dtype=np.uint8)
        off = -raw.ctypes.data % PAGE
        buf = raw[off:off + max(nbytes, 1)]
        a = Alloc(int(buf.ctypes.data), nbytes, True, buf, flags)
    else:
        addr = _next_addr[0]
        _next_addr[0] += (nbytes + 0xFFFF) & ~0xFFF | 0x10000  # never reused: stale use is seen
        a = Alloc(addr, nbytes)
    allocs[a.addr] = a
    return a


reserved: dict[int, int] = {}    # graph allocations' addresses -> size, backed or not


def reserve(nbytes) -> int:
    """A new simulated device address for ``nbytes``, with no memory behind it yet (a graph
    allocation's, fixed when its node is made; `map_at` backs it)."""
    addr = _next_addr[0]
    _next_addr[0] += (int(nbytes) + 0xFFFF) & ~0xFFF | 0x10000
    reserved[addr] = int(nbytes)
    return addr


def in_graph_allocation(addr: int, nbytes: int) -> bool:
    """Whether [addr, addr+nbytes) lies in a graph allocation, backed now or not (what a
    captured copy may name: the memory is there when the graph runs)."""
    return any(a <= addr and addr + nbytes <= a + n for a, n in reserved.items())


def map_at(addr: int, nbytes: int) -> Alloc:
    """Back reserved address ``addr`` with fresh memory."""
    a = Alloc(addr, int(nbytes))
    allocs[addr] = a
    return a


def register(addr: int, nbytes: int, flags: int) -> Alloc:
    """Register the caller's host memory [addr, addr+nbytes) (its bytes stay where they are)."""
    buf = np.ctypeslib.as_array((ctypes.c_uint8 * nbytes).from_address(addr))
    a = Alloc(addr, nbytes, True, buf, flags, registered=True)
    allocs[addr] = a
    return a


def overlaps_pinned(addr: int, nbytes: int) -> bool:
    return any(a.pinned and a.addr < addr + nbytes and addr < a.addr + a.nbytes
               for a in allocs.values())


on_release: list = []     # called with each allocation freed (a memory pool's count)


def release(a: Alloc) -> None:
    """Free ``a``: device memory's address is never handed out again; page-locked memory is
    kept aside, so that its address is not reused either; registered memory is the caller's."""
    for hook in on_release:
        hook(a)
    if allocs.get(a.addr) is a:      # a graph allocation's address may be backed anew by now
        allocs.pop(a.addr)
    a.freed = True
    if a.pinned and not a.registered:
        _freed_host.append(a)
    elif not a.pinned:
        a.buf = np.zeros(1, np.uint8)


def find(addr: int, nbytes: int = 1):
    """The live allocation holding [addr, addr+nbytes), its offset; None where there is none."""
    a = allocs.get(addr)     # the usual case: an array's own address
    if a is not None and nbytes <= max(a.nbytes, 1):
        return a, 0
    for a in allocs.values():
        if a.addr <= addr and addr + nbytes <= a.addr + max(a.nbytes, 1) and not a.freed:
            return a, addr - a.addr
    return None


def in_sim_range(addr: int) -> bool:
    return BASE <= addr < _next_addr[0]


def view(addr: int, nbytes: int):
    """Bytes at a simulated device/pinned address, or at a real host address; None where the
    address is simulated but not (or no longer) allocated."""
    hit = find(addr, nbytes)
    if hit is not None:
        a, off = hit
        return a.buf[off:off + nbytes]
    if in_sim_range(addr) or any(a.addr <= addr < a.addr + max(a.nbytes, 1)
                                 for a in _freed_host):
        return None  # freed or never allocated
    return np.ctypeslib.as_array((ctypes.c_uint8 * nbytes).from_address(addr))


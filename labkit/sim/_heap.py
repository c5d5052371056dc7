"""The simulator's memory: device allocations (simulated addresses, never reused, so a stale use
is seen) and the bytes behind any address a call is given.

A device address lies in the simulated range and is backed by a numpy buffer; any other
address is real host memory (a numpy array's, a ctypes object's, pinned memory's), read and
written in place.
"""
from __future__ import annotations

import ctypes

import numpy as np

BASE = 0x2000_0000_0000


class Alloc:
    def __init__(self, addr, nbytes, pinned=False):
        self.addr, self.nbytes, self.pinned, self.freed = addr, nbytes, pinned, False
        self.buf = np.zeros(max(nbytes, 1), dtype=np.uint8)


allocs: dict[int, Alloc] = {}
_next_addr = [BASE]


def new_alloc(nbytes, pinned=False) -> Alloc:
    addr = _next_addr[0]
    _next_addr[0] += (int(nbytes) + 0xFFFF) & ~0xFFF | 0x10000  # never reused, so stale use is seen
    a = Alloc(addr, int(nbytes), pinned)
    allocs[addr] = a
    return a


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
    if in_sim_range(addr):
        return None  # freed or never allocated
    return np.ctypeslib.as_array((ctypes.c_uint8 * nbytes).from_address(addr))

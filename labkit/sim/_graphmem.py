"""Graph memory: the addresses that allocation nodes hand out, and CUDA's rules for them.

From CUDA's documentation (the GPU issue confirms them on the H200):

* an allocation node's address is fixed when the node is made (``cudaGraphAddMemAllocNode``
  writes it into ``dptr``; a captured ``cudaMallocAsync`` returns it); memory is behind it only
  from the node's run in a launch until it is freed: by a free node of the same or another
  graph, by ``cudaFreeAsync`` or by ``cudaFree``. Each launch allocates anew;
* a free node may only free an address an allocation node returned, once per graph;
* relaunching an executable whose allocation from the last launch is still unfreed fails
  ``cudaErrorInvalidValue``, unless it was instantiated with
  ``cudaGraphInstantiateFlagAutoFreeOnLaunch``, which frees it first;
* a graph with allocation or free nodes has at most one executable at a time, cannot be
  cloned, and its nodes and edges cannot be removed;
* ``cudaDeviceGetGraphMemAttribute``: memory in use by graph allocations now and at most
  (``UsedMem``), and held for them (``ReservedMem``, given back by ``cudaDeviceGraphMemTrim``).

The simulator counts bytes exactly; CUDA reserves memory in larger pieces, so on a GPU the
figures are at least these.
"""
from __future__ import annotations

from cuda.bindings import driver as _drv
from cuda.bindings import runtime as _cr

from . import _engine, _heap
from . import _state as S

E, NT = S.E, S.NT
MEMORY_NODES = (NT.cudaGraphNodeTypeMemAlloc, NT.cudaGraphNodeTypeMemFree)
_A = _cr.cudaGraphMemAttributeType
AUTO_FREE = int(_cr.cudaGraphInstantiateFlags.cudaGraphInstantiateFlagAutoFreeOnLaunch)

sizes = _heap.reserved              # address an allocation node handed out -> its size
_mem = {"used": 0, "used_high": 0, "reserved": 0, "reserved_high": 0}


def alloc_payload(nbytes: int):
    """A new allocation node's payload (its address reserved now), or None for size 0."""
    nbytes = int(nbytes)
    if nbytes <= 0:
        return None
    addr = _heap.reserve(nbytes)
    return {"dst": addr, "bytesize": nbytes, "name": "mem alloc"}


def free_error(g, addr: int):
    """Why a free node of ``addr`` cannot be added to graph ``g`` (an error), or None."""
    if addr not in sizes:
        return E.cudaErrorInvalidValue        # not an address an allocation node returned
    if any(n.type == NT.cudaGraphNodeTypeMemFree and n.payload["dst"] == addr for n in g.nodes):
        return E.cudaErrorInvalidValue        # freed twice in one graph
    return None


def has_memory_nodes(g) -> bool:
    return any(n.type in MEMORY_NODES for n in g.nodes)


_live: set = set()     # allocations made and not yet freed, in stream order (what CUDA's rules see)


def is_live(addr: int) -> bool:
    return addr in _live


def _map(addr):
    _heap.map_at(addr, sizes[addr])
    _live.add(addr)
    _mem["used"] += sizes[addr]
    _mem["used_high"] = max(_mem["used_high"], _mem["used"])
    _mem["reserved"] = max(_mem["reserved"], _mem["used"])
    _mem["reserved_high"] = max(_mem["reserved_high"], _mem["reserved"])


def free(addr: int, at_us: float | None = None):
    """Free graph allocation ``addr`` (a free node, cudaFree, cudaFreeAsync); an error if it
    has no memory behind it now."""
    a = _heap.allocs.get(addr)
    if addr not in sizes or a is None or addr not in _live:
        return E.cudaErrorInvalidValue
    _live.discard(addr)
    _mem["used"] -= sizes[addr]
    if at_us is None:
        _heap.release(a)
    else:                     # a free node: the memory goes when the clock reaches the node
        _engine.at(at_us, lambda: _heap.release(a), "mem free")
    return E.cudaSuccess


def before_launch(x):
    """The check at a launch of ``x``: its allocations from the last launch must be freed
    (or are freed now, with AutoFreeOnLaunch). Returns an error, or None."""
    live = [p["dst"] for t, p, _ in x.nodes
            if t == NT.cudaGraphNodeTypeMemAlloc and is_live(p["dst"])]
    if live and not x.flags & AUTO_FREE:
        return E.cudaErrorInvalidValue
    for addr in live:
        free(addr)
    return None


def run(ntype, payload, at_us: float | None = None):
    """Run a memory node in a launch placed now: allocate (anew, from now) or free (its memory
    released when the clock reaches ``at_us``, the node's time)."""
    if ntype == NT.cudaGraphNodeTypeMemAlloc:
        _map(payload["dst"])
        return E.cudaSuccess
    return free(payload["dst"], at_us)


# ---------------------------------------------------------------- the footprint

_ATTRS = {_A.cudaGraphMemAttrUsedMemCurrent: "used", _A.cudaGraphMemAttrUsedMemHigh: "used_high",
          _A.cudaGraphMemAttrReservedMemCurrent: "reserved",
          _A.cudaGraphMemAttrReservedMemHigh: "reserved_high"}


def cudaDeviceGetGraphMemAttribute(device, attr):
    key = _ATTRS.get(_A(int(attr))) if int(device) == 0 else None
    if key is None:
        return (S.fail(E.cudaErrorInvalidDevice if int(device) else E.cudaErrorInvalidValue),
                None)
    return E.cudaSuccess, _drv.cuuint64_t(_mem[key])


def cudaDeviceSetGraphMemAttribute(device, attr, value):
    # only the high watermarks can be set, and only to 0 (CUDA: "can only be reset to zero")
    key = _ATTRS.get(_A(int(attr)))
    if int(device) != 0 or key not in ("used_high", "reserved_high") or int(value) != 0:
        return (S.fail(E.cudaErrorInvalidValue),)
    _mem[key] = 0
    return S.OK


def cudaDeviceGraphMemTrim(device):
    if int(device) != 0:
        return (S.fail(E.cudaErrorInvalidDevice),)
    _mem["reserved"] = _mem["used"]
    return S.OK

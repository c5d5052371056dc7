"""Memory pools of the simulated runtime: ``cudaMemPoolCreate`` / ``cudaMemPoolDestroy``,
``cudaMallocFromPoolAsync``, a pool's attributes, and the device's default pool (which
``cudaMallocAsync`` allocates from).

What a pool counts, as CUDA documents it (``cudaMemPoolSetAttribute``):

* *used* memory: bytes allocated from the pool and not yet freed; *reserved* memory: the bytes
  the pool holds, used or kept after a free for the next allocation. A free returns its bytes
  to the pool (used goes down, reserved stays); an allocation takes kept bytes first.
* ``cudaMemPoolAttrReleaseThreshold`` (default 0): when the pool holds more than that, it gives
  the kept bytes back at the next stream, event or device synchronize.
* the high watermarks (``...ReservedMemHigh``, ``...UsedMemHigh``) may only be set to 0 (a
  reset); the current figures cannot be set. The three reuse switches are ints, default 1.

The model keeps bytes exactly: a GPU reserves in larger chunks, so there reserved memory is at
least what is counted here (the conformance suite asserts only what holds on both). Addresses are
never reused (`labkit.sim._heap`), whatever the pool kept: a stale pointer still faults.
Not simulated (``NotImplementedError``): pools of host memory, IPC handle types, and the pool
calls the course does not use (access, export, import).
"""
from __future__ import annotations

from cuda.bindings import driver as _drv
from cuda.bindings import runtime as _cr

from . import _heap
from . import _state as S
from . import clock as _clock

E, P = S.E, S.P
A = _cr.cudaMemPoolAttr
_INT_ATTRS = (A.cudaMemPoolReuseFollowEventDependencies, A.cudaMemPoolReuseAllowOpportunistic,
              A.cudaMemPoolReuseAllowInternalDependencies)


class Pool:
    def __init__(self, max_size=0, default=False):
        self.handle = next(S.ids)
        self.default, self.max_size, self.destroyed = default, int(max_size), False
        self.reuse = {a: 1 for a in _INT_ATTRS}
        self.threshold = 0
        self.used = self.kept = self.used_high = self.reserved_high = 0

    @property
    def reserved(self) -> int:
        return self.used + self.kept

    def take(self, nbytes: int) -> bool:
        """Count an allocation of ``nbytes``; False where it would pass the pool's maximum."""
        fresh = max(nbytes - self.kept, 0)
        if self.max_size and self.reserved + fresh > self.max_size:
            return False
        self.kept -= nbytes - fresh
        self.used += nbytes
        self.used_high = max(self.used_high, self.used)
        self.reserved_high = max(self.reserved_high, self.reserved)
        return True

    def give_back(self, nbytes: int) -> None:
        self.used -= nbytes
        self.kept += nbytes


pools: dict[int, Pool] = {}
_default = Pool(default=True)
pools[_default.handle] = _default
_owner: dict[int, tuple] = {}       # address -> (pool, bytes) of a live pool allocation


def _released(a) -> None:
    hit = _owner.pop(a.addr, None)
    if hit is not None:
        hit[0].give_back(hit[1])


_heap.on_release.append(_released)


def pool(handle):
    p = pools.get(S.h(handle))
    return None if p is None or p.destroyed else p


def allocate(p: Pool, size: int):
    """Device memory for ``size`` bytes from pool ``p``: its address, or an error code."""
    if not p.take(int(size)):
        return E.cudaErrorMemoryAllocation
    a = _heap.new_alloc(int(size))
    _owner[a.addr] = (p, int(size))
    return a.addr


def on_sync() -> None:
    """A stream, event or device synchronize: each pool holding more than its release
    threshold gives its kept bytes back (down to the threshold)."""
    for p in pools.values():
        if p.reserved > p.threshold:
            p.kept = max(0, min(p.kept, p.threshold - p.used))


def cudaDeviceGetDefaultMemPool(device):
    if int(device) != 0:
        return (S.fail(E.cudaErrorInvalidDevice), None)
    return E.cudaSuccess, _cr.cudaMemPool_t(_default.handle)


def cudaDeviceGetMemPool(device):
    return cudaDeviceGetDefaultMemPool(device)


def cudaMemPoolCreate(poolProps):
    p = poolProps
    if p is None or int(p.allocType) != int(_cr.cudaMemAllocationType.cudaMemAllocationTypePinned):
        return (S.fail(E.cudaErrorInvalidValue), None)
    where = _cr.cudaMemLocationType(int(p.location.type))
    if where != _cr.cudaMemLocationType.cudaMemLocationTypeDevice:
        if where in (_cr.cudaMemLocationType.cudaMemLocationTypeInvalid,
                     _cr.cudaMemLocationType.cudaMemLocationTypeHostNumaCurrent):
            return (S.fail(E.cudaErrorInvalidValue), None)
        raise NotImplementedError(f"cudaMemPoolCreate of a {where.name} pool is not simulated "
                                  "(backend 'sim'): device pools only")
    if int(p.location.id) != 0:
        return (S.fail(E.cudaErrorInvalidValue), None)
    if int(p.handleTypes) != 0:
        raise NotImplementedError("cudaMemPoolCreate with IPC handle types is not simulated "
                                  "(backend 'sim'): one process, no sharing")
    _clock.api("cudaMemPoolCreate", P("api_us"))
    new = Pool(max_size=int(p.maxSize))
    pools[new.handle] = new
    return E.cudaSuccess, _cr.cudaMemPool_t(new.handle)


def cudaMemPoolDestroy(memPool):
    p = pool(memPool)
    if p is None or p.default:         # CUDA: a device's default pool cannot be destroyed
        return (S.fail(E.cudaErrorInvalidValue),)
    # allocations still live stay usable; the pool goes once they are freed (CUDA's rule)
    p.destroyed = True
    return S.OK


def cudaMemPoolGetAttribute(memPool, attr):
    p = pool(memPool)
    if p is None:
        return (S.fail(E.cudaErrorInvalidValue), None)
    a = A(int(attr))
    if a in _INT_ATTRS:
        return E.cudaSuccess, p.reuse[a]
    figures = {A.cudaMemPoolAttrReleaseThreshold: p.threshold,
               A.cudaMemPoolAttrReservedMemCurrent: p.reserved,
               A.cudaMemPoolAttrReservedMemHigh: p.reserved_high,
               A.cudaMemPoolAttrUsedMemCurrent: p.used,
               A.cudaMemPoolAttrUsedMemHigh: p.used_high,
               A.cudaMemPoolAttrMaxPoolSize: p.max_size}
    if a not in figures:
        raise NotImplementedError(f"cudaMemPoolGetAttribute({a.name}) is not simulated "
                                  "(backend 'sim')")
    return E.cudaSuccess, _drv.cuuint64_t(figures[a])


def cudaMemPoolSetAttribute(memPool, attr, value):
    p = pool(memPool)
    if p is None:
        return (S.fail(E.cudaErrorInvalidValue),)
    a, v = A(int(attr)), int(value)
    if a in _INT_ATTRS:
        p.reuse[a] = int(bool(v))
    elif a == A.cudaMemPoolAttrReleaseThreshold:
        p.threshold = v
    elif a in (A.cudaMemPoolAttrReservedMemHigh, A.cudaMemPoolAttrUsedMemHigh):
        if v != 0:                       # only a reset is allowed
            return (S.fail(E.cudaErrorInvalidValue),)
        if a == A.cudaMemPoolAttrReservedMemHigh:
            p.reserved_high = p.reserved
        else:
            p.used_high = p.used
    else:                                # the current figures and the pool's properties
        return (S.fail(E.cudaErrorInvalidValue),)
    return S.OK


def cudaMemPoolTrimTo(memPool, minBytesToKeep):
    p = pool(memPool)
    if p is None:
        return (S.fail(E.cudaErrorInvalidValue),)
    p.kept = max(0, min(p.kept, int(minBytesToKeep) - p.used))
    return S.OK

"""Checks for notebook 06's exercise: remove the needless synchronizations from a loop."""
from __future__ import annotations

import functools
import sys
from collections import Counter

import numpy as np

from ..._kernel import pinned_array
from ..._streams import Stream
from ...backends import races, rt
from ..._errors import check
from ..._handles import stream_handle
from ..._kernel import to_device
from ...timing import measure
from ..workloads import add_one

__all__ = ["slow_update", "check_fewer_syncs", "waits_in_one_call", "N_KERNELS", "MAX_RATIO",
           "MAX_SYNCS"]

N_KERNELS = 20
MAX_RATIO = 0.85   # the rewrite must take at most this fraction of the original's time
MAX_SYNCS = 2      # waits allowed in one call (the one the caller needs, and a spare)


def slow_update(x, stream):
    """The exercise's starting point: N_KERNELS add_one launches, each followed by a readback
    "to watch progress" -- a copy to the host, which waits for the GPU every time."""
    for _ in range(N_KERNELS):
        add_one[4, 256, stream](x)
        check(rt.cudaStreamSynchronize(stream_handle(stream)), "synchronize")
        x.copy_to_host()


def check_fewer_syncs(fn, stream, repeat: int = 15) -> dict:
    """Check that ``fn(x, stream)`` computes what `slow_update` does, without its waits, faster.

    In order:

    1. the result must equal the original's (every element +N_KERNELS);
    2. one call may wait for the GPU at most ``MAX_SYNCS`` times in all (the wait the caller
       needs, and a spare), and at least once: like the original, it returns with ``x`` done. A wait is a synchronization through labkit (``Stream.synchronize``,
       ``Event.synchronize``, ``labkit.synchronize``) or through the raw runtime
       (``rt.cudaStreamSynchronize``, ``rt.cudaDeviceSynchronize``, ``rt.cudaEventSynchronize``),
       numba's ``cuda.synchronize``, or a copy to the host (``copy_to_host``, which returns once
       the data has arrived, or ``rt.cudaMemcpy``). Each of the plausible half-fixes is faster than the original and
       still wrong: the copy dropped but a synchronize kept after every kernel (about 0.74 of the
       original's time on the H200 and on the simulator), the same through a raw
       ``rt.cudaStreamSynchronize``, or the synchronize dropped but the copy kept;
    3. its time until done (median over three rounds in alternating order, synchronized) must
       be at most ``MAX_RATIO`` of the original's.

    Returns the two timings (µs), their ratio, and the synchronizations and copies to the host
    counted in one call.
    """
    start = np.arange(1024, dtype=np.float32)
    x = to_device(start)
    fn(x, stream)
    check(rt.cudaStreamSynchronize(stream_handle(stream)), "synchronize")
    got = x.copy_to_host()
    want = start + N_KERNELS
    if not np.array_equal(got, want):
        bad = int(np.count_nonzero(got != want))
        raise AssertionError(
            f"your function changed the result: {bad} of {got.size} elements differ from the "
            f"original's (x + {N_KERNELS}); e.g. element 0 is {got[0]}, expected {want[0]}. "
            "Keep every kernel launch; remove only the waits")
    waits = waits_in_one_call(fn, to_device(start), stream)
    syncs, copies = waits["sync"], waits["copy"]
    if syncs + copies > MAX_SYNCS:
        raise AssertionError(_too_many_waits(syncs, copies))
    if syncs + copies == 0:
        raise AssertionError(
            "your function never waits for the GPU: it returns while the kernels may still be "
            "running, where the original returned with x done. A caller that reads x right after "
            "it (from the host, or from a stream that does not follow yours) could see old "
            "values. How many waits does the caller of your function need, and where?")
    _refuse_returning_early(fn, stream, start)
    xs, xf = to_device(start), to_device(start)
    # three rounds in alternating order, so the host's drift cannot favour either side
    runs = {"slow": (lambda: slow_update(xs, stream)), "fast": (lambda: fn(xf, stream))}
    got_us = {"slow": [], "fast": []}
    for r in range(3):
        for name in (("slow", "fast") if r % 2 == 0 else ("fast", "slow")):
            got_us[name].extend(measure(runs[name], warmup=2, repeat=repeat, sync=stream).samples)
    slow, fast = float(np.median(got_us["slow"])), float(np.median(got_us["fast"]))
    ratio = fast / slow
    if ratio > MAX_RATIO:
        raise AssertionError(
            f"your function takes {fast:.1f} µs against the original's {slow:.1f} µs "
            f"(ratio {ratio:.2f}, need ≤ {MAX_RATIO}): it waits only {syncs + copies} time(s), "
            "so the time goes elsewhere. Look at what else it does for every kernel that the "
            "original did not")
    return {"original_us": slow, "yours_us": fast, "ratio": ratio, "syncs": syncs, "copies": copies}


def _refuse_returning_early(fn, stream, start) -> None:
    """"Done when it returns": right after ``fn(x, stream)`` returns, with no wait in between,
    read ``x`` from a stream that knows nothing of ``fn``'s (a copy into page-locked memory on a
    new non-blocking stream). Its kernels must all have taken effect: on the simulator the race
    report says whether anything orders them before that read (on a GPU, where no tool says it,
    the values read are checked, and a late kernel is caught only when it is still running)."""
    x = to_device(start)
    check(rt.cudaDeviceSynchronize(), "synchronize")
    lo = int(x.device_ctypes_pointer.value)
    fn(x, stream)
    with Stream() as probe:
        seen = pinned_array(x.shape, x.dtype)
        check(rt.cudaMemcpyAsync(seen.ctypes.data, lo, x.nbytes,
                                 rt.cudaMemcpyKind.cudaMemcpyDeviceToHost, probe.handle), "copy")
        check(rt.cudaStreamSynchronize(probe.handle), "synchronize")
        seen = np.array(seen)
    check(rt.cudaDeviceSynchronize(), "synchronize")
    racing = [r for r in races() if r.address is not None and lo <= r.address < lo + x.nbytes]
    if racing or not np.array_equal(seen, start + N_KERNELS):
        raise AssertionError(
            "your function returns before its kernels are done: read right after it returns, "
            f"from another stream, x is not yet x + {N_KERNELS}"
            + (f" ({racing[0].first} on {racing[0].first_row} is not ordered before the read)"
               if racing else "")
            + ". The original returned with x done. Which work does your one wait cover, and "
            "is all of it on the stream you were given, and after the last kernel?")


def _too_many_waits(syncs: int, copies: int) -> str:
    what = []
    if syncs:
        what.append(f"{syncs} synchronization{'s' * (syncs != 1)}")
    if copies:
        what.append(f"{copies} cop{'ies' if copies != 1 else 'y'} to the host")
    lead = (f"your function still waits for the GPU over and over: {' and '.join(what)} for "
            f"{N_KERNELS} kernels (at most {MAX_SYNCS} waits allowed). ")
    why = []
    if syncs > 1:
        why.append("A synchronize, through labkit or the raw runtime alike, holds the CPU until "
                   "the GPU has finished, and the GPU then idles until the CPU's next launch, so "
                   "neither runs ahead.")
    if copies > 1:
        why.append("A copy to the host is a wait too: `copy_to_host()` returns only once the data "
                   "has arrived (into pageable memory even when given a stream), and nothing "
                   "reads these copies.")
    return lead + " ".join(why) + " How many waits does the caller of your function need, and where?"


_RUNTIME_WAITS = {"cudaStreamSynchronize": "sync", "cudaDeviceSynchronize": "sync",
                  "cudaEventSynchronize": "sync", "cudaMemcpy": "copy"}
_MISSING = object()


def waits_in_one_call(fn, x, stream) -> Counter:
    """How many times ``fn(x, stream)`` waits for the GPU: ``{"sync": n, "copy": m}``.

    Counted where the waits are made, the same on both backends: the runtime's synchronize
    calls and its blocking ``cudaMemcpy`` (labkit's own ``Stream.synchronize`` goes through them),
    numba's ``cuda.synchronize``, and the device array's ``copy_to_host``. A call made inside
    another counted call (the simulator's ``copy_to_host`` is a ``cudaMemcpy``) counts once,
    as the outer one.
    """
    counts: Counter = Counter({"sync": 0, "copy": 0})
    depth = [0]

    def counted(original, kind):
        @functools.wraps(original)
        def wrapper(*args, **kwargs):
            if depth[0] == 0:
                counts[kind] += 1
            depth[0] += 1
            try:
                return original(*args, **kwargs)
            finally:
                depth[0] -= 1
        return wrapper

    targets = [(rt, name, kind) for name, kind in _RUNTIME_WAITS.items()]
    targets.append((type(x), "copy_to_host", "copy"))
    numba_cuda = sys.modules.get("numba.cuda")
    if numba_cuda is not None and hasattr(numba_cuda, "synchronize"):
        targets.append((numba_cuda, "synchronize", "sync"))
    saved = []
    try:
        for owner, name, kind in targets:
            saved.append((owner, name, vars(owner).get(name, _MISSING)))
            setattr(owner, name, counted(getattr(owner, name), kind))
        fn(x, stream)
    finally:
        for owner, name, old in reversed(saved):
            if old is _MISSING:
                delattr(owner, name)
            else:
                setattr(owner, name, old)
    check(rt.cudaStreamSynchronize(stream_handle(stream)), "synchronize")
    return counts

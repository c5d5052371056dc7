"""Notebook 10's exercise: serve requests of several sizes through one graphed callable.

The graphed callable computes ``3x + 1`` elementwise over `SIZE` float32 values, one value per
row of a batch, as a serving engine's step computes one row per request. The learner writes
``serve(g, requests)`` returning one numpy array per request, each ``3r + 1`` for request ``r``.
It must pad each request up to the graph's size (the graph was captured for that shape),
replay once per request (a request larger than the graph: once per piece of at most its size),
cut the padding off the result, and copy each result out before the next call overwrites the
static output. A slice of the device output, copied out, is as right as a slice of a host copy.

The check makes sure each result comes from the graph: it adds 1 to the graph's output of the
first call, on purpose, so a result computed in numpy beside the calls does not match.
"""
from __future__ import annotations

import numpy as np

from ... import device_array
from ..._errors import check
from ..._graphed import graphed
from ..._handles import stream_handle
from ...backends import rt
from ..workloads import add_one, saxpy

__all__ = ["SIZE", "exercise_requests", "make_graphed", "check_serve", "DeviceOutput"]

SIZE = 1024
_GRID, _BLOCK = 4, 256


def _triple_plus_one(stream, x):
    y = device_array(x.shape, x.dtype)
    saxpy[_GRID, _BLOCK, stream](y, 2.0, x, x)
    add_one[_GRID, _BLOCK, stream](y)
    return y


class DeviceOutput:
    """The static output as a call returns it, where the backend's device arrays take no slice
    (the simulator's): ``out[a:b]`` is a view of it, and ``copy_to_host()`` copies what it
    covers, as a numba device array and its slices do on a GPU."""

    def __init__(self, base, start: int = 0, stop: int | None = None):
        self._base, self._start = base, int(start)
        self._stop = int(base.shape[0] if stop is None else stop)
        self.dtype = np.dtype(base.dtype)
        self.shape = (self._stop - self._start,)
        self.size = self.shape[0]
        self.nbytes = self.size * self.dtype.itemsize

    def __len__(self):
        return self.size

    def __getitem__(self, key):
        if not isinstance(key, slice) or key.step not in (None, 1):
            raise TypeError("the graph's output takes a contiguous slice (out[a:b]) only")
        a, b, _ = key.indices(self.size)
        return DeviceOutput(self._base, self._start + a, self._start + max(a, b))

    def copy_to_host(self, ary=None):
        out = np.empty(self.shape, self.dtype) if ary is None else ary
        if out.nbytes < self.nbytes:
            raise ValueError(f"copy_to_host: {out.nbytes} bytes cannot hold {self.nbytes}")
        if self.nbytes:
            src = self._base.device_ctypes_pointer.value + self._start * self.dtype.itemsize
            check(rt.cudaMemcpy(out.ctypes.data, src, self.nbytes,
                                rt.cudaMemcpyKind.cudaMemcpyDeviceToHost), "copy_to_host")
        return out

    def __repr__(self):
        return f"<device output [{self._start}:{self._stop}] of {self._base.shape[0]} {self.dtype}>"


class _Served:
    """The graphed callable as the exercise hands it out: calls return a sliceable output;
    with ``mark`` (the check's), the first call's output gets 1 added after the replay."""

    def __init__(self, g, mark: bool = False):
        self._g, self._mark = g, mark

    def __call__(self, *args):
        out = self._g(*args)
        if self._mark and self._g.calls == 1:
            add_one[_GRID, _BLOCK, self._g.stream](out)
            check(rt.cudaStreamSynchronize(stream_handle(self._g.stream)), "synchronize")
        sliceable = hasattr(type(out), "__getitem__")
        return out if sliceable else DeviceOutput(out)

    def __getattr__(self, name):
        return getattr(self._g, name)

    def __repr__(self):
        return repr(self._g)


def make_graphed(stream=None, _mark: bool = False):
    """The exercise's graphed callable: ``g(x)`` is ``3x + 1`` for ``SIZE`` float32 values."""
    return _Served(graphed(_triple_plus_one, np.zeros(SIZE, np.float32), stream=stream), _mark)


#: the requests' sizes: one larger than the graph, which one call cannot serve
SIZES = (300, 1024, 17, 2500, 999)


def exercise_requests() -> list[np.ndarray]:
    """Five requests of different sizes, from a seeded generator (the same for everyone)."""
    rng = np.random.default_rng(2010)
    return [rng.standard_normal(n).astype(np.float32) for n in SIZES]


def _calls_for(n: int) -> int:
    return max(1, -(-n // SIZE))


def check_serve(serve, stream=None) -> None:
    """Pass if ``serve(g, requests)`` returns ``3r + 1`` for each request, from one replay each;
    raise AssertionError saying what to change otherwise."""
    g = make_graphed(stream, _mark=True)
    reqs = exercise_requests()
    big = [(i, r.size) for i, r in enumerate(reqs) if r.size > SIZE]
    try:
        results = serve(g, [r.copy() for r in reqs])
    except ValueError as exc:
        if "could not broadcast" in str(exc) and big:
            i, n = big[0]
            raise AssertionError(
                f"serve could not fit request {i} ({n} values) into the graph's {SIZE}: a "
                "request larger than the graph needs more than one call. Which parts of it "
                "can one call take?") from None
        if "captured for shape" in str(exc) and f"has shape ({SIZE},)" in str(exc):
            raise AssertionError(
                "serve padded the request to the graph's size but not in its dtype "
                f"({exc.args[0].split(':')[0]}): a graph's buffers are frozen at capture, "
                "dtype included. Pad into an array of the dtype the graph was captured "
                "with") from None
        if "captured for shape" in str(exc):
            raise AssertionError(
                "serve called the graphed callable with a request smaller than the graph's "
                f"buffer ({exc.args[0].split(':')[0]}). The graph was captured for "
                f"{SIZE} values: pad each request up to that size first, as an engine pads a "
                "batch up to its capture size") from None
        raise
    if results is None or not hasattr(results, "__len__"):
        raise AssertionError(f"serve returned {type(results).__name__}: return a list with one "
                             "result per request")
    results = list(results)
    if len(results) != len(reqs):
        raise AssertionError(f"serve returned {len(results)} results for {len(reqs)} requests: "
                             "one result per request, in order")
    want_calls = sum(_calls_for(r.size) for r in reqs)
    if g.calls != want_calls:
        if g.calls == len(reqs) and big:
            i, n = big[0]
            raise AssertionError(
                f"the graph was replayed once per request, but request {i} has {n} values and "
                f"the graph takes {SIZE}: one call served only part of it. A request larger "
                "than the graph takes one call per piece of at most the graph's size")
        raise AssertionError(
            f"the graph was replayed {g.calls} times for {len(reqs)} requests: compute each "
            "result with the graphed callable (g(padded_request)), one call per request (per "
            "piece of a request larger than the graph), not in numpy and not twice")
    for i, r in enumerate(results):
        if not isinstance(r, np.ndarray) and not hasattr(r, "copy_to_host"):
            raise AssertionError(
                f"result {i} is a {type(r).__name__}: return each result as a numpy array (the "
                "host copy of the graph's output, without its padding), not converted to "
                "another type")
        if not isinstance(r, np.ndarray):
            raise AssertionError(
                f"result {i} is a {type(r).__name__}, not a numpy array: the graphed callable "
                "returns the same device buffer on every call, so each call overwrites the "
                "result before. Copy each result to the host before the next call")
    for i in range(len(results)):
        for j in range(i):
            if np.shares_memory(results[i], results[j]):
                raise AssertionError(
                    f"results {j} and {i} share memory: each call's output must be a copy of "
                    "its own, or the next call overwrites it")
    want = [3 * r + 1 for r in reqs]
    plain0 = want[0]
    want[0] = want[0] + 1                      # the check's mark on the first call's output
    last = np.zeros(SIZE, np.float32)          # what the static output holds after the last call
    last[:reqs[-1].size] = reqs[-1]
    last = 3 * last + 1
    for i, (got, w) in enumerate(zip(results, want)):
        if got.shape != w.shape:
            extra = (f"; the padding is still on it: keep the first {w.size} values"
                     if got.size == SIZE and w.size < SIZE else
                     f"; everything past the graph's {SIZE} values was dropped"
                     if got.size == SIZE and w.size > SIZE else "")
            raise AssertionError(f"result {i} has {got.size} values but request {i} had "
                                 f"{w.size}{extra}")
        if not np.allclose(got, w, rtol=1e-5, atol=1e-5):
            if i == 0 and np.allclose(got, plain0, rtol=1e-5, atol=1e-5):
                raise AssertionError(
                    "result 0 is 3r + 1, but not what the graph returned for it: the check "
                    "added 1 to the graph's output of that call, on purpose, and your result "
                    "does not show it. Take each result from its own call's output")
            if i != len(reqs) - 1 and np.allclose(got, last[:got.size], rtol=1e-5, atol=1e-5):
                raise AssertionError(
                    f"result {i} holds the last request's answer: it was read after later "
                    "calls had overwritten the static output. Copy each result to the host "
                    "right after its own call")
            k = int(np.argmax(~np.isclose(got, w, rtol=1e-5, atol=1e-5)))
            raise AssertionError(f"result {i} differs from 3r + 1 at index {k}: got {got[k]:.4f}, "
                                 f"expected {w[k]:.4f}")
    print(f"correct: {len(reqs)} requests of sizes {[r.size for r in reqs]} served by "
          f"{g.calls} replays of one graph captured for {SIZE} values")

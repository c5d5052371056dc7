"""Notebook 10's exercise: serve requests of several sizes through one graphed callable.

The graphed callable computes ``3x + 1`` elementwise over `SIZE` float32 values, one value per
row of a batch, as a serving engine's step computes one row per request. The learner writes
``serve(g, requests)`` returning one numpy array per request, each ``3r + 1`` for request ``r``.
It must pad each request up to the graph's size (the graph was captured for that shape),
replay once per request, cut the padding off the result, and copy each result out before the
next call overwrites the static output.
"""
from __future__ import annotations

import numpy as np

from ... import device_array
from ..._graphed import graphed
from ..workloads import add_one, saxpy

__all__ = ["SIZE", "exercise_requests", "make_graphed", "check_serve"]

SIZE = 1024
_GRID, _BLOCK = 4, 256


def _triple_plus_one(stream, x):
    y = device_array(x.shape, x.dtype)
    saxpy[_GRID, _BLOCK, stream](y, 2.0, x, x)
    add_one[_GRID, _BLOCK, stream](y)
    return y


def make_graphed(stream=None):
    """The exercise's graphed callable: ``g(x)`` is ``3x + 1`` for ``SIZE`` float32 values."""
    return graphed(_triple_plus_one, np.zeros(SIZE, np.float32), stream=stream)


def exercise_requests() -> list[np.ndarray]:
    """Five requests of different sizes, from a seeded generator (the same for everyone)."""
    rng = np.random.default_rng(2010)
    return [rng.standard_normal(n).astype(np.float32) for n in (300, 1024, 17, 640, 999)]


def check_serve(serve, stream=None) -> None:
    """Pass if ``serve(g, requests)`` returns ``3r + 1`` for each request, from one replay each;
    raise AssertionError saying what to change otherwise."""
    g = make_graphed(stream)
    reqs = exercise_requests()
    try:
        results = serve(g, [r.copy() for r in reqs])
    except TypeError as exc:
        if "DeviceArray" in str(exc) and "subscriptable" in str(exc):   # sim: no slices
            raise AssertionError(
                "serve sliced the device array a call returned: that array is the graph's "
                "static output, which the next call overwrites. Cut the padding off a host "
                "copy of it instead") from None
        raise
    except ValueError as exc:
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
    if g.calls != len(reqs):
        raise AssertionError(
            f"the graph was replayed {g.calls} times for {len(reqs)} requests: compute each "
            "result with one call of the graphed callable (g(padded_request)), not in numpy "
            "and not twice")
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
    last = np.zeros(SIZE, np.float32)          # what the static output holds after the last call
    last[:reqs[-1].size] = reqs[-1]
    last = 3 * last + 1
    for i, (got, w) in enumerate(zip(results, want)):
        if got.shape != w.shape:
            extra = (f"; the padding is still on it: keep the first {w.size} values"
                     if got.size == SIZE and w.size < SIZE else "")
            raise AssertionError(f"result {i} has {got.size} values but request {i} had "
                                 f"{w.size}{extra}")
        if not np.allclose(got, w, rtol=1e-5, atol=1e-5):
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

"""Check for notebook 05's exercise: choose capture sizes (buckets) for a request stream."""
from __future__ import annotations

import bisect

import numpy as np

__all__ = ["check_buckets", "padding_fraction"]


def padding_fraction(buckets, requests) -> float:
    """Padded elements over all computed elements when each request is padded to its bucket."""
    b = sorted(int(x) for x in buckets)
    req = [int(r) for r in requests]
    padded = [b[bisect.bisect_left(b, r)] for r in req]
    return (sum(padded) - sum(req)) / sum(padded)


def check_buckets(buckets, requests, max_buckets: int = 6, max_padding: float = 0.15) -> None:
    """Pass if ``buckets`` serve every request with at most ``max_buckets`` graphs and at most
    ``max_padding`` of the computed batch rows being padding."""
    try:
        b = sorted(int(x) for x in buckets)
    except (TypeError, ValueError):
        raise ValueError(f"buckets must be a list of positive ints, got {buckets!r}") from None
    if not b or b[0] < 1:
        raise ValueError(f"buckets must be a non-empty list of positive ints, got {buckets!r}")
    if len(set(b)) != len(b):
        raise AssertionError(f"buckets {b} repeat a size: each repeat is a wasted slot")
    largest = int(np.max(requests))
    if b[-1] < largest:
        raise AssertionError(f"the largest bucket is {b[-1]} but requests go up to {largest}: "
                             f"those requests cannot be served; include a bucket of at least {largest}")
    if len(b) > max_buckets:
        raise AssertionError(f"{len(b)} buckets is more than the {max_buckets} graphs you may keep: "
                             "merge neighbouring sizes")
    frac = padding_fraction(b, requests)
    if frac > max_padding:
        raise AssertionError(f"{frac:.1%} of the computed rows are padding (limit {max_padding:.0%}): "
                             "put buckets where the requests are dense (most requests are small)")
    print(f"correct: {len(b)} buckets serve every request with {frac:.1%} padding")

"""Notebook 05's request streams and the check for its exercise: choose capture sizes (buckets).

A server that keeps one graph per bucket pads each request up to the smallest bucket that holds
it. Few buckets mean few graphs (captures, instantiations, memory); buckets far apart mean much
padding (GPU work on rows nobody asked for). The exercise asks for at most `MAX_BUCKETS` graphs
and at most `MAX_PADDING` of the computed rows being padding, for `exercise_requests()`, and for
a bucket set that serves every batch the service accepts (up to `MAX_BATCH` rows), not only the
sizes that happen to be in the sample.
"""
from __future__ import annotations

import bisect
from collections import Counter

import numpy as np

__all__ = ["request_stream", "exercise_requests", "padding_fraction", "padding_table",
           "check_buckets", "MAX_BUCKETS", "MAX_PADDING", "MAX_BATCH"]

MAX_BATCH = 64        # the largest batch a request may have
MAX_BUCKETS = 6       # graphs the exercise's server may keep
MAX_PADDING = 0.24    # at most this share of the computed rows may be padding (one power of two
                      # dropped from 1..64 pads 24.4 % or more; the best six buckets ending at 64, 21.6 %)
EXERCISE_SEED, EXERCISE_REQUESTS = 2005, 1000


def request_stream(n: int, seed: int, max_batch: int = MAX_BATCH) -> np.ndarray:
    """``n`` batch sizes from a seeded generator: mostly small, with a long tail up to ``max_batch``.

    Log-normal (median about 3, one request in a hundred above about 20), rounded up and clipped
    to ``1..max_batch``, as the batch sizes a decode server sees often are.
    """
    rng = np.random.default_rng(seed)
    return np.clip(np.ceil(rng.lognormal(1.0, 0.9, int(n))), 1, max_batch).astype(np.int64)


def exercise_requests() -> np.ndarray:
    """The exercise's request stream (the same for every learner and on every backend)."""
    return request_stream(EXERCISE_REQUESTS, EXERCISE_SEED)


def _as_sizes(values, what: str) -> list[int]:
    try:
        given = list(values)
        out = [int(v) for v in given if not isinstance(v, (bool, str)) and float(v) == int(v)]
        if len(out) != len(given):
            raise ValueError
    except (TypeError, ValueError, OverflowError):
        raise ValueError(f"{what} must be a list of positive whole numbers, got {values!r}") from None
    if not out or min(out) < 1:
        raise ValueError(f"{what} must be a non-empty list of positive whole numbers, got {values!r}")
    return out


def _bucket_of(b: list[int], requests: list[int]) -> list[int]:
    largest = max(requests)
    if b[-1] < largest:
        raise ValueError(f"the largest bucket is {b[-1]} but a request has {largest} rows: it cannot "
                         f"be served; include a bucket of at least {largest}")
    return [b[bisect.bisect_left(b, r)] for r in requests]


def padding_fraction(buckets, requests) -> float:
    """Padded rows over all computed rows when each request is padded up to its bucket."""
    b = sorted(set(_as_sizes(buckets, "buckets")))
    req = _as_sizes(requests, "requests")
    padded = _bucket_of(b, req)
    return (sum(padded) - sum(req)) / sum(padded)


def padding_table(buckets, requests) -> str:
    """A table, one line per bucket: the requests it serves and the padding they cost.

    The bucket whose line has the largest share of the padding is where a new bucket (just below
    it, where its requests are dense) helps most.
    """
    b = sorted(set(_as_sizes(buckets, "buckets")))
    req = _as_sizes(requests, "requests")
    padded = _bucket_of(b, req)
    served: dict[int, list[int]] = {k: [] for k in b}
    for r, p in zip(req, padded):
        served[p].append(r)
    total_pad = sum(padded) - sum(req)
    computed = sum(padded)
    lines = [f"{'bucket':>6} {'requests':>9} {'sizes':>9} {'padded rows':>12} {'share of padding':>17}"]
    for k in b:
        rs = served[k]
        pad = sum(k - r for r in rs)
        sizes = f"{min(rs)}-{max(rs)}" if rs else "-"
        share = pad / total_pad if total_pad else 0.0
        lines.append(f"{k:6d} {len(rs):9d} {sizes:>9} {pad:12d} {share:16.0%}")
    lines.append(f"{len(b)} buckets; padding: {total_pad} of {computed} computed rows "
                 f"= {total_pad / computed:.1%}")
    return "\n".join(lines)


def check_buckets(buckets, requests, max_buckets: int = MAX_BUCKETS,
                  max_padding: float = MAX_PADDING, max_batch: int = MAX_BATCH) -> None:
    """Pass if ``buckets`` serve every batch the service accepts (1 to ``max_batch`` rows) with at
    most ``max_buckets`` graphs, and at most ``max_padding`` of the rows computed for
    ``requests`` are padding; raise AssertionError saying what to change otherwise."""
    raw = _as_sizes(buckets, "buckets")
    req = _as_sizes(requests, "requests")
    b = sorted(raw)
    if len(set(b)) != len(b):
        repeated = sorted(k for k, n in Counter(b).items() if n > 1)
        raise AssertionError(f"buckets {b} repeat {repeated}: each repeat is a wasted slot; "
                             "list each size once")
    largest = max(req)
    if b[-1] < max_batch:
        if b[-1] < largest:
            head = (f"the largest bucket is {b[-1]} but requests go up to {largest}: those requests "
                    f"cannot be served, and the service accepts batches of up to {max_batch} rows")
        else:
            head = (f"the largest bucket is {b[-1]}, which covers this sample (its largest request "
                    f"has {largest} rows), but the service accepts batches of up to {max_batch} rows")
        raise AssertionError(
            f"{head}: a request of {b[-1] + 1} to {max_batch} rows would find no graph to run. Size "
            "the buckets for every batch the service accepts, not for the batches one sample holds")
    if b[-1] > max_batch:
        raise AssertionError(f"the largest bucket is {b[-1]}, but no batch has more than {max_batch} "
                             f"rows: every row of that graph past {max_batch} would be padding")
    if len(b) > max_buckets:
        raise AssertionError(f"{len(b)} buckets is more than the {max_buckets} graphs you may keep: "
                             "merge neighbouring sizes where few requests fall (the large ones)")
    frac = padding_fraction(b, req)
    if frac > max_padding:
        padded = _bucket_of(b, req)
        waste = Counter()
        for r, p in zip(req, padded):
            waste[p] += p - r
        worst, rows = waste.most_common(1)[0]
        below = [k for k in b if k < worst]
        lo = below[-1] + 1 if below else 1
        raise AssertionError(
            f"{frac:.1%} of the computed rows are padding (limit {max_padding:.0%}): most of it "
            f"({rows} rows) comes from requests of {lo}-{worst} rows padded up to {worst}. Put "
            "buckets where requests are dense (most are small), and few where they are rare")
    print(f"correct: {len(b)} buckets serve every batch up to {max_batch} rows, with {frac:.1%} "
          "padding on this stream")

"""Checks for notebook 07: the capstone's capture and replay loop, and several tokens per launch."""
from __future__ import annotations

import numpy as np

from .. import decoder as dec
from ..._errors import check
from ..._handles import stream_handle
from ...backend import rt

__all__ = ["check_capstone", "check_multi_step", "KS", "PROMPT"]

KS = (1, 3, 5)                   # several k: a build that ignores its k is right for one at most
PROMPT = (7, 3, 11, 2)           # the capstone check's prompt (prefilled eagerly by the check)


def _is_exec(x) -> bool:
    return hasattr(x, "launch") and hasattr(x, "graph")


class _CountingExec:
    """The learner's executable, counting its launches (what a replay loop must do once per
    token); everything else is the executable's own."""

    def __init__(self, ex):
        self._ex, self.launches = ex, 0

    def launch(self, *args, **kwargs):
        self.launches += 1
        return self._ex.launch(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self._ex, name)


def check_capstone(capture_step, decode, stream, n_tokens: int = 12, seed: int = 5) -> dict:
    """Check the capstone's two functions: ``capture_step(model, stream)`` returns an
    instantiated graph of one decode step, and ``decode(exec_, n_tokens, stream)`` replays it
    once per token and returns each token's latency (µs).

    A fresh model is made and a prompt prefilled eagerly (`labkit.course.decoder.prefill`); the
    learner's graph then decodes ``n_tokens`` more, and the whole generation must equal numpy's.
    Returns the tokens and the latencies.
    """
    m = dec.make_model(seed=seed)
    ex = capture_step(m, stream)
    if not _is_exec(ex):
        raise AssertionError(f"capture_step(...) must return an executable graph (what "
                             f"graph.instantiate() returns), got {type(ex).__name__}")
    nodes = len(ex.graph.kernel_nodes())
    per = m.cfg.kernels_per_token
    if nodes != per:
        raise AssertionError(
            f"your graph holds {nodes} kernel nodes; one decode step launches {per}. Capture "
            "what one call of dec.step launches, nothing more and nothing less")
    first = dec.prefill(m, PROMPT, stream)
    counted = _CountingExec(ex)
    lat = decode(counted, n_tokens, stream)
    check(rt.cudaStreamSynchronize(stream_handle(stream)), "synchronize")
    if counted.launches != n_tokens:
        raise AssertionError(
            f"decode launched the graph {counted.launches} times for {n_tokens} tokens: one "
            "replay of the step makes one token")
    if lat is None or len(lat) != n_tokens:
        raise AssertionError(f"decode must return one latency per token ({n_tokens}), got "
                             f"{'nothing' if lat is None else len(lat)}")
    lat = np.asarray(lat, float)
    if not np.all(lat > 0):
        raise AssertionError("every latency must be positive (µs from before the launch to "
                             "after the wait)")
    got = dec.generated(m, PROMPT, 1 + n_tokens)
    want = dec.reference_generate(m, PROMPT, 1 + n_tokens)
    if not np.array_equal(got, want):
        i = int(np.argmax(got != want))
        raise AssertionError(
            f"the tokens differ from numpy's from generated token {i} on (got {got[i]}, "
            f"expected {want[i]}); the prefill made token 0 ({first}). Does every replay wait "
            "for the previous one, and does nothing reset the position between replays?")
    return {"tokens": got, "token_us": lat}


def check_multi_step(build, stream, ks=KS, launches: int = 3, seed: int = 11) -> dict:
    """Check ``build(model, stream, k)``: it must return a `labkit.GraphExec` that decodes
    ``k`` tokens per launch, for every ``k`` in ``ks``.

    For each ``k`` a fresh model is made; the graph must hold ``k`` steps' kernels, and
    launched ``launches`` times it must make numpy's ``k * launches`` tokens. Returns
    ``{k: {"tokens", "kernel_nodes"}}``.
    """
    out = {}
    for k in ks:
        m = dec.make_model(seed=seed)
        ex = build(m, stream, k)
        if not _is_exec(ex):
            raise AssertionError(f"build(...) must return an executable graph (what "
                                 f"graph.instantiate() returns), got {type(ex).__name__}")
        per = m.cfg.kernels_per_token
        got_nodes = len(ex.graph.kernel_nodes())
        if got_nodes != k * per:
            raise AssertionError(
                f"for k = {k} your graph holds {got_nodes} kernel nodes, "
                f"{got_nodes / per:g} decode steps' worth ({per} kernels per step): it should "
                f"make {k} tokens per launch. Does what you capture depend on k?")
        dec._reset(m, 7, stream)
        for _ in range(launches):
            ex.launch(stream)
        check(rt.cudaStreamSynchronize(stream_handle(stream)), "synchronize")
        n = k * launches
        got = m.state["history"].copy_to_host()[:n]
        want = dec.reference_generate(m, 7, n)
        if not np.array_equal(got, want):
            first = int(np.argmax(got != want))
            raise AssertionError(
                f"for k = {k} the tokens differ from numpy's from token {first} on (got "
                f"{got[first]}, expected {want[first]}): does each captured step read the "
                "position and token from device memory, so that the replays continue where "
                "the last one stopped?")
        out[k] = {"tokens": got, "kernel_nodes": got_nodes}
        ex.close()
    return out

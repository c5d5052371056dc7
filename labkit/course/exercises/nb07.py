"""Check for notebook 07's exercise: the capstone's capture (k steps per graph) and replay loop."""
from __future__ import annotations

import numpy as np

from .. import decoder as dec
from ..._errors import check
from ..._handles import stream_handle
from ...backend import host_us, rt

__all__ = ["check_capstone", "KS", "PROMPT"]

KS = (1, 3, 5)                   # several k: a build that ignores its k is right for one at most
PROMPT = (7, 3, 11, 2)           # the capstone check's prompt (prefilled eagerly by the check)


def _is_exec(x) -> bool:
    return hasattr(x, "launch") and hasattr(x, "graph")


class _CountingExec:
    """The learner's executable, counting its launches (what a replay loop must do once per
    token); everything else is the executable's own."""

    def __init__(self, ex):
        self._ex, self.launches, self.at_us = ex, 0, []

    def launch(self, *args, **kwargs):
        self.launches += 1
        self.at_us.append(host_us())
        return self._ex.launch(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self._ex, name)


def check_capstone(build, decode, stream, ks=KS, launches: int = 3, seed: int = 5) -> dict:
    """Check the capstone's two functions, for every ``k`` in ``ks``:

    * ``build(model, stream, k)`` returns an executable graph of ``k`` decode steps;
    * ``decode(exec_, launches, stream)`` replays it ``launches`` times, one after another (each
      waited for before the next is launched), and returns each replay's latency (µs, from before the launch until its tokens are ready).

    For each ``k`` a fresh model is made and a prompt prefilled eagerly
    (`labkit.course.decoder.prefill`); the ``k * launches`` tokens the learner's loop makes
    must equal numpy's. Returns ``{k: "what was checked"}``.
    """
    out = {}
    for k in ks:
        m = dec.make_model(seed=seed)
        ex = build(m, stream, k)
        if not _is_exec(ex):
            raise AssertionError(f"build(...) must return an executable graph (what "
                                 f"graph.instantiate() returns), got {type(ex).__name__}")
        per = m.cfg.kernels_per_token
        nodes = len(ex.graph.kernel_nodes())
        if nodes != k * per:
            raise AssertionError(
                f"for k = {k} your graph holds {nodes} kernel nodes, {nodes / per:g} decode "
                f"steps' worth ({per} kernels per step), so one launch makes {nodes / per:g} "
                f"tokens, not {k}. Does what you capture depend on k?")
        dec.prefill(m, PROMPT, stream)
        counted = _CountingExec(ex)
        lat = decode(counted, launches, stream)
        check(rt.cudaStreamSynchronize(stream_handle(stream)), "synchronize")
        if counted.launches != launches:
            raise AssertionError(
                f"decode(exec_, {launches}, stream) launched the graph {counted.launches} "
                f"times: each of the {launches} replays is one launch of exec_")
        if lat is None or len(lat) != launches:
            raise AssertionError(f"decode must return one latency per replay ({launches}), got "
                                 f"{'nothing' if lat is None else len(lat)}")
        n = k * launches
        got = dec.generated(m, PROMPT, n)
        want = dec.reference_generate(m, PROMPT, n)
        if not np.array_equal(got, want):
            i = int(np.argmax(got != want))
            raise AssertionError(
                f"for k = {k} the tokens differ from numpy's from token {i} on (got {got[i]}, "
                f"expected {want[i]}). Does each replay continue from the position the last "
                "one left in device memory?")
        # what one replay takes when it is waited for: the learner's latencies must cover it
        t0 = host_us()
        ex.launch(stream)
        check(rt.cudaStreamSynchronize(stream_handle(stream)), "synchronize")
        full = host_us() - t0
        lat = np.asarray(lat, float)
        if not np.median(lat) > 0.5 * full:
            raise AssertionError(
                f"for k = {k} your replays' median latency is {np.median(lat):.1f} µs, but a "
                f"replay takes about {full:.0f} µs until its tokens are ready: what does your "
                "timer measure, the launch call alone? (and in µs?)")
        if np.median(lat) > 100 * full:
            raise AssertionError(
                f"for k = {k} your replays' median latency is {np.median(lat):,.0f}, but a "
                f"replay takes about {full:.0f} µs until its tokens are ready: your figures are "
                "a thousand times too large. In what unit does your clock count?")
        gaps = np.diff(counted.at_us)
        if len(gaps) and np.median(gaps) < 0.5 * full:
            raise AssertionError(
                f"for k = {k} your loop launched each replay about {np.median(gaps):.1f} µs after "
                f"the one before, but a replay takes about {full:.0f} µs until its tokens are "
                "ready: the replays overlapped, so no latency you return is one replay's. What "
                "must happen between one replay's launch and the next one's?")
        if len(lat) > 2 and np.all(np.diff(lat) > 0) and lat[-1] > 2.5 * lat[0]:
            raise AssertionError(
                f"for k = {k} your latencies grow with every replay "
                f"({', '.join(f'{v:.0f}' for v in lat)} µs), as if each counted the replays before it: where does each one's clock "
                "start?")
        out[k] = (f"{n} tokens equal numpy's; {1e6 * n / lat.sum():,.0f} tokens/s, "
                  f"{np.median(lat) / k:.1f} µs per token")
        ex.close()
    return out
